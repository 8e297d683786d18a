//! The baseline pass (`run.baseline`, opt-in): the workload once more with no profiler
//! attached, stage2's Python hook timing the NVTX ranges it opens into `baseline/`. Beside the
//! nsys pass's range times, what the measurement itself added to each range.

use std::path::Path;

use super::driver::Pass;
use super::progress::Progress;
use super::{stopped, Ctx};
use crate::error::Error;
use crate::passes::launcher::Launcher;
use crate::passes::process;
use crate::rundir::status::{Cause, PassState, PassStatus};

/// The variable that turns the hook's range timing on (see the hook's sitecustomize.py).
pub(crate) const RANGE_TIMES: &str = "STAGE2_RANGE_TIMES";

pub(crate) struct BaselinePass {
    /// The workload already failed under nsys: it is not run again.
    pub(crate) workload_failed: bool,
}

impl Pass for BaselinePass {
    type Plan = Vec<String>;

    fn name(&self) -> &'static str {
        "baseline"
    }

    fn skip(&self, ctx: &Ctx) -> Option<PassStatus> {
        if !ctx.cfg.run.baseline {
            return Some(PassStatus::skipped("not asked for (--baseline)"));
        }
        if ctx.cfg.workload.launcher != Launcher::None {
            return Some(PassStatus::skipped(
                "not run under a launcher: the baseline times one process's ranges",
            ));
        }
        if self.workload_failed {
            return Some(PassStatus::skipped(
                "not run: the workload failed under nsys (nsys/nsys.log)",
            ));
        }
        None
    }

    fn plan(&self, ctx: &Ctx) -> Result<Vec<String>, Error> {
        Ok(ctx.workload.argv.clone())
    }

    fn commands(&self, plan: &Vec<String>) -> Vec<Vec<String>> {
        vec![plan.clone()]
    }

    fn env(&self, ctx: &Ctx) -> Vec<(String, String)> {
        let dir = ctx.run.path.join("baseline");
        vec![(RANGE_TIMES.to_string(), dir.display().to_string())]
    }

    fn execute(
        &self,
        ctx: &Ctx,
        plan: &Vec<String>,
        progress: &Progress,
    ) -> Result<PassStatus, Error> {
        let dir = ctx.run.path.join("baseline");
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("create", &dir, e))?;
        // Under a profiler the workload is the profiler's child; here stage2 would start it as
        // the leader of its own process group, where `os.setsid()` fails. A shell leads the
        // group instead (and gets the group's signals) and runs the workload as its child.
        let mut args = vec![
            "-c".to_string(),
            "\"$@\"; exit $?".to_string(),
            "stage2-baseline".to_string(),
        ];
        args.extend(plan.iter().cloned());
        let mut spec = ctx.spec(Path::new("/bin/sh"), args, dir.join("workload.log"));
        spec.env.extend(self.env(ctx));
        // As long as the nsys pass may take: the same workload, with less around it.
        spec.timeout = ctx.cfg.nsys_timeout();
        progress.stage("running the workload without a profiler");
        let out = process::run(&spec).map_err(|e| Error::start(&plan[0], e))?;
        redact_range_files(&dir);
        let mut st = match stopped(&out, "the workload") {
            Some(st) => st,
            None if out.success() => match timed_files(&dir) {
                // The profile itself is whole: a baseline with nothing to compare is said,
                // and does not make the run one without data.
                0 => {
                    let mut st = PassStatus::new(PassState::Ok, None);
                    st.warnings.push("the workload ran without a profiler but opened no NVTX range the hook could time (torch.cuda.nvtx, the nvtx package, --auto-nvtx; ranges opened from C/C++, or by a Python started with -S or -I, are not seen): the reports have no measurement-cost figures".into());
                    st
                }
                _ => PassStatus::new(PassState::Ok, None),
            },
            None => PassStatus::failed(
                Cause::Workload,
                Some(format!(
                    "the workload without a profiler ended with {}; its ranges closed until then are kept. Last output:\n{}",
                    out.describe(),
                    out.tail_lines(8)
                )),
            ),
        };
        st.duration_s = Some(out.duration.as_secs_f64());
        Ok(st)
    }
}

/// How many range files with at least one range the hook wrote.
fn timed_files(dir: &Path) -> usize {
    crate::parse::baseline::files(dir)
        .iter()
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() > 0))
        .count()
}

/// The hook's range files through the one redaction step: range names can carry what a log
/// can, and the hook writes them itself, not through stage2. One that cannot be rewritten (a
/// full disk) is removed rather than kept with a secret.
fn redact_range_files(dir: &Path) {
    for p in crate::parse::baseline::files(dir) {
        // One that cannot be read as text is said by its reader.
        let Ok(text) = crate::files::read_capped(&p, 1 << 30) else {
            continue;
        };
        if let std::borrow::Cow::Borrowed(_) = crate::secrets::scrub_cow(&text) {
            continue;
        }
        if let Err(e) = crate::rundir::status::write_atomic(&p, text.as_bytes()) {
            let removed = match std::fs::remove_file(&p) {
                Ok(()) => "removed it rather than keep a secret on disk".to_string(),
                Err(e2) => format!("and cannot remove it ({e2})"),
            };
            tracing::warn!("cannot redact {} ({e}): {removed}", p.display());
        }
    }
}
