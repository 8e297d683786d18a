//! The cross-check pass (`run.crosscheck`, opt-in): NVIDIA's own summaries of this run's
//! captures into `nvidia/`, read beside stage2's figures of the same files. `nsys stats` of each
//! nsys export (nvtx_kern_sum, nvtx_gpu_proj_sum, cuda_gpu_kern_sum, nvtx_sum,
//! cuda_gpu_kern_gb_sum:nvtx-name) and `ncu --import --print-summary per-kernel` of each ncu
//! report. The workload does not run.

use std::path::{Path, PathBuf};

use super::driver::Pass;
use super::progress::Progress;
use super::{process, stopped, Ctx};
use crate::error::Error;
use crate::rundir::status::{PassState, PassStatus};

/// NVIDIA's reports asked of each nsys export: per range (kernels, GPU projection), per
/// kernel, the ranges themselves, and per kernel and grid with each launch named by its
/// innermost range (the small grids' time).
const NSYS_REPORTS: [&str; 5] = [
    "nvtx_kern_sum",
    "nvtx_gpu_proj_sum",
    "cuda_gpu_kern_sum",
    "nvtx_sum",
    "cuda_gpu_kern_gb_sum:nvtx-name",
];

pub(crate) struct CrosscheckPass {
    pub(crate) nsys: Option<PathBuf>,
    pub(crate) ncu: Option<PathBuf>,
    /// A dry run: the earlier passes wrote nothing, so the lines name the files they would.
    pub(crate) dry_run: bool,
}

impl CrosscheckPass {
    /// The run's nsys exports and ncu reports; in a dry run, the export and the kernel report
    /// the earlier passes would write (rank 0's under a launcher).
    fn inputs(&self, ctx: &Ctx) -> (Vec<PathBuf>, Vec<PathBuf>) {
        if !self.dry_run {
            return (
                ctx.run.files_ending("nsys", ".sqlite"),
                ctx.run.files_ending("ncu", ".ncu-rep"),
            );
        }
        let launcher = ctx.cfg.workload.launcher != crate::config::Launcher::None;
        let nsys = ctx
            .cfg
            .nsys
            .enable
            .then(|| ctx.run.nsys_sqlite(launcher.then_some(0)));
        let ncu = ctx.cfg.ncu.enable.then(|| {
            let target = ctx.ncu;
            let style = crate::analysis::nvtx::style_for(ctx.cfg, target, ctx.run);
            let (_, base, _) = crate::analysis::nvtx::include_and_base(target, style);
            super::ncu::kernel_report(ctx, &base)
        });
        (nsys.into_iter().collect(), ncu.into_iter().collect())
    }
}

/// One summary to ask for: the tool's command line (program first) and its log.
pub(crate) struct Ask {
    argv: Vec<String>,
    log: PathBuf,
}

impl Pass for CrosscheckPass {
    type Plan = Vec<Ask>;

    /// Its folder, `nvidia/`, holds NVIDIA's summaries beside the command lines.
    fn name(&self) -> &'static str {
        "nvidia"
    }

    fn skip(&self, ctx: &Ctx) -> Option<PassStatus> {
        if !ctx.cfg.run.crosscheck {
            return Some(PassStatus::skipped("not asked for (run.crosscheck=true)"));
        }
        None
    }

    fn plan(&self, ctx: &Ctx) -> Result<Vec<Ask>, Error> {
        let out = ctx.run.path.join("nvidia");
        let mut asks = Vec::new();
        let (exports, reports) = self.inputs(ctx);
        if let Some(nsys) = &self.nsys {
            for db in exports {
                let base = stem(&db, ".sqlite");
                let mut argv = vec![nsys.display().to_string(), "stats".to_string()];
                for r in NSYS_REPORTS {
                    argv.extend(["--report".to_string(), r.to_string()]);
                }
                // The export as it is: nsys reads a SQLite file without exporting again.
                argv.extend(["--format", "csv", "-o"].map(str::to_string));
                argv.push(out.join(&base).display().to_string());
                argv.push(db.display().to_string());
                asks.push(Ask {
                    argv,
                    log: out.join(format!("{base}.stats.log")),
                });
            }
        }
        if let Some(ncu) = &self.ncu {
            for rep in reports {
                let base = stem(&rep, ".ncu-rep");
                let argv = [
                    ncu.display().to_string(),
                    "--import".to_string(),
                    rep.display().to_string(),
                    "--print-summary".to_string(),
                    "per-kernel".to_string(),
                    "--csv".to_string(),
                    "--log-file".to_string(),
                    out.join(format!("{base}_print_summary.csv"))
                        .display()
                        .to_string(),
                ];
                asks.push(Ask {
                    argv: argv.to_vec(),
                    log: out.join(format!("{base}.ncu.log")),
                });
            }
        }
        Ok(asks)
    }

    fn commands(&self, plan: &Vec<Ask>) -> Vec<Vec<String>> {
        plan.iter().map(|a| a.argv.clone()).collect()
    }

    fn execute(
        &self,
        ctx: &Ctx,
        plan: &Vec<Ask>,
        progress: &Progress,
    ) -> Result<PassStatus, Error> {
        if plan.is_empty() {
            return Ok(PassStatus::skipped(
                "nothing to check: no nsys export or ncu report in this run (or no tool to read them)",
            ));
        }
        let dir = ctx.run.path.join("nvidia");
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("create", &dir, e))?;
        let mut st = PassStatus::new(PassState::Ok, None);
        let t0 = std::time::Instant::now();
        for ask in plan {
            progress.stage(&format!("NVIDIA's summary of {}", summarised(&ask.argv)));
            let (program, args) = (Path::new(&ask.argv[0]), ask.argv[1..].to_vec());
            let mut spec = ctx.spec(program, args, ask.log.clone());
            spec.timeout = ctx.cfg.nsys_timeout();
            let out = process::run(&spec).map_err(|e| Error::start(&ask.argv[0], e))?;
            if let Some(stop) = stopped(&out, "the summary") {
                return Ok(stop);
            }
            if !out.success() {
                // One summary that fails costs only itself: the others are still asked.
                st.warnings.push(format!(
                    "`{}` ended with {} ({}): {}",
                    ask.argv[..2].join(" "),
                    out.describe(),
                    ctx.run.relative(&ask.log),
                    out.tail_lines(2)
                ));
            }
        }
        st.duration_s = Some(t0.elapsed().as_secs_f64());
        st.reason = Some(format!(
            "NVIDIA's summaries of {} file(s) in nvidia/",
            plan.len()
        ));
        Ok(st)
    }
}

fn stem(path: &Path, suffix: &str) -> String {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    name.strip_suffix(suffix).unwrap_or(&name).to_string()
}

/// The capture a summary's command line reads (`run`, `decode`), for the progress line.
fn summarised(argv: &[String]) -> String {
    argv.iter()
        .rev()
        .find(|a| a.contains(".sqlite") || a.contains(".ncu-rep"))
        .map(|a| stem(Path::new(a), ""))
        .unwrap_or_default()
}
