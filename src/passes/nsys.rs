//! Nsight Systems pass: `nsys profile` gated by an NVTX range, then `nsys stats` (CSV) and
//! `nsys export` (SQLite).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::driver::Pass;
use super::process::LineHook;
use super::progress::Progress;
use super::{append_cmd_txt, diagnose, run_step, without_flags, Ctx};
use crate::error::Error;
use crate::passes::launcher::Launcher;
use crate::passes::process::{self, Outcome};
use crate::rundir::record::{CudaTrace, NsysRecord, NsysTiming, SamplingRecord, TraceRecord};
use crate::rundir::status::{Cause, PassState, PassStatus};

mod args;
mod outcome;
pub(crate) use args::*;
pub(crate) use outcome::*;

/// The nsys pass: its program, found before the run.
pub(crate) struct NsysPass {
    pub(crate) tool: Option<PathBuf>,
    /// Told once `nsys profile` has ended (the GPU's counters are free again), before the
    /// export: the metric query waiting on it then runs beside the post steps.
    pub(crate) profiled: Option<std::sync::mpsc::Sender<()>>,
    /// The last sampled run's figures, reused instead of sampling (see [`reuse`]).
    pub(crate) reuse: Option<crate::analysis::sampled::reuse::Stored>,
    /// The metric set made for this run (see [`metric_set`]).
    pub(crate) metric_set: Option<metric_set::Derived>,
}

/// What the nsys pass runs: `nsys profile` (under the launcher for several ranks), then per
/// report `nsys stats` and `nsys export`.
pub(crate) struct NsysPlan {
    /// The whole profile command line, program first.
    pub(crate) profile: Vec<String>,
    /// The post steps of a single-process run (a multi-rank run's are known once the ranks'
    /// reports exist, and are appended to cmd.txt then).
    pub(crate) post: Vec<Vec<String>>,
    pub(crate) multi: bool,
    /// What status.json records: the capture, decided here once, and its sampling.
    pub(crate) record: NsysRecord,
}

/// What nsys refused: sampling at all, and the set cut for this run.
type Refusals = (Outcome, Option<String>, Option<String>);

/// The reports a refused try left (the other ranks', under a launcher): kept, out of the next
/// try's way, as nsys does not write over a report.
fn set_aside(dir: &Path) {
    for (_, p) in reports(dir) {
        if let Some(name) = p.file_name() {
            let _ = std::fs::rename(
                &p,
                dir.join(format!("refused-try.{}", name.to_string_lossy())),
            );
        }
    }
}

impl NsysPass {
    /// nsys refused to sample (another sampler, no counter access, a set it cannot use): the
    /// pass runs again with nsys's default set when the set was cut for this run, then without
    /// sampling, as the timeline is worth more than the samples. Each try's log is kept.
    fn after_refusal(
        &self,
        ctx: &Ctx,
        plan: &NsysPlan,
        spec: &mut process::Spec,
        mut out: Outcome,
        log: &Path,
    ) -> Result<Refusals, Error> {
        let dir = ctx.run.path.join("nsys");
        // Under a launcher rank 0 alone samples: the other ranks' reports say nothing of it.
        let sampler = plan.multi.then_some(0);
        let sampled_report = || reports(&dir).iter().any(|(rank, _)| *rank == sampler);
        let Some(mut why) = sampling_refused(&out, sampled_report()) else {
            return Ok((out, None, None));
        };
        let program = spec.program.clone();
        let mut again = |argv: &[String], kept: &str| -> Result<Outcome, Error> {
            let _ = std::fs::rename(log, ctx.run.nsys(kept));
            set_aside(&dir);
            let _ = append_cmd_txt(&ctx.workload.env, &ctx.run.nsys("cmd.txt"), argv);
            spec.args = argv[1..].to_vec();
            process::run(spec).map_err(|e| Error::start(program.display(), e))
        };
        let mut argv = plan.profile.clone();
        let mut set_refused = None;
        let derived = argv
            .iter()
            .any(|a| a.starts_with("--gpu-metrics-set=file:"));
        // Only a refusal of the set itself: one of the GPU (held by another sampler, say)
        // would be the same with any set.
        let of_set = why.contains("--gpu-metrics-set") || why.contains("metric config");
        if derived && of_set && self.metric_set.is_some() {
            tracing::warn!("nsys refused the metric set cut for this run ({why}); running the nsys pass again with nsys's default set");
            argv = without_flags(&argv, "--gpu-metrics-set=");
            out = again(&argv, "nsys.set-refused.log")?;
            set_refused = Some(why);
            match sampling_refused(&out, sampled_report()) {
                None => return Ok((out, None, set_refused)),
                Some(w) => why = w,
            }
        }
        tracing::warn!(
            "nsys refused GPU-metrics sampling ({why}); running the nsys pass again without it"
        );
        let argv = without_flags(&argv, "--gpu-metrics-");
        out = again(&argv, "nsys.sampling-refused.log")?;
        Ok((out, Some(why), set_refused))
    }

    fn program(&self) -> PathBuf {
        self.tool.clone().unwrap_or_else(|| PathBuf::from("nsys"))
    }
    fn with_prog(&self, a: Vec<String>) -> Vec<String> {
        super::with_program(&self.program(), a)
    }
}

impl Pass for NsysPass {
    type Plan = NsysPlan;

    fn name(&self) -> &'static str {
        "nsys"
    }

    fn skip(&self, ctx: &Ctx) -> Option<PassStatus> {
        (self.tool.is_none() || !ctx.cfg.nsys.enable)
            .then(|| PassStatus::skipped("disabled by nsys.enable=false or --no-nsys"))
    }

    fn plan(&self, ctx: &Ctx) -> Result<NsysPlan, Error> {
        let launcher = ctx.cfg.workload.launcher;
        let multi = launcher != Launcher::None;
        let rank_macro = multi.then(|| launcher.rank_macro());
        let base = ctx.run.nsys_report_base(rank_macro.as_deref());
        let argv = profile_args(
            &ctx.cfg.nsys,
            ctx.cfg.nvtx.domain.as_deref(),
            &base,
            &ctx.workload.argv,
        )?;
        let mut argv = self.with_prog(argv);
        let sampling = crate::passes::hook::nsys_env(ctx.cfg, &ctx.run.path.join("nsys"));
        crate::passes::hook::add_nsys_env(&mut argv, &sampling)?;
        let gm = &ctx.cfg.nsys.gpu_metrics;
        let devices = sampled_devices(ctx.cfg);
        let reused_from = self.reuse.as_ref().map(|r| r.run.clone());
        let derived = self
            .metric_set
            .as_ref()
            .filter(|_| configured_set(gm).is_none());
        if let (Some(d), None) = (&devices, &reused_from) {
            add_sampling(&mut argv, gm, d, derived.map(|d| d.path.as_path()));
        }
        let set = match (configured_set(gm), derived) {
            (Some(s), _) => Some(s.to_string()),
            (None, Some(d)) => Some(format!("{}: {}", metric_set::FILE, d.from)),
            (None, None) => None,
        };
        let record = NsysRecord {
            capture: crate::config::Capture::of(ctx.cfg),
            sampling: devices.map(|devices| SamplingRecord {
                frequency_hz: gm.frequency_hz,
                devices,
                refused: None,
                reused_from: reused_from.clone(),
                set: set.filter(|_| reused_from.is_none()),
                asked: derived
                    .filter(|_| reused_from.is_none())
                    .map(|d| d.asked.clone())
                    .unwrap_or_default(),
            }),
            sampling_off: ctx
                .cfg
                .sampling_off()
                .filter(|_| gm.enable)
                .map(str::to_string),
            trace: Some(TraceRecord {
                apis: ctx.cfg.nsys.trace.clone(),
                cuda_graphs: ctx.cfg.nsys.cuda_graph_trace.as_str().to_string(),
                cuda: Some(CudaTrace::asked(&ctx.cfg.nsys.trace)),
                cuda_seen: None,
            }),
            timing: None,
            // Set once the pass is done, where a copy was started beside it.
            held_beside: None,
        };
        if multi && record.sampling.is_some() && reused_from.is_none() {
            // nsys refuses a second sampler of a GPU, and every rank's would sample the same.
            use crate::passes::launcher::{rank_exec_args, stage2_exe, Others};
            let others = Others::Drop("--gpu-metrics-".into());
            argv = rank_exec_args(&stage2_exe(), launcher, &[0], &others, argv);
        }
        // Under a launcher, nsys runs inside it, once per rank.
        let profile = launcher.wrap(&ctx.cfg.workload, argv, &ctx.workload.env);
        let mut post = Vec::new();
        if !multi {
            let rep = ctx.run.nsys_report(None);
            let sqlite = ctx.run.nsys_sqlite(None);
            post.push(self.with_prog(export_args(&rep, &sqlite)));
            post.push(self.with_prog(stats_args(&sqlite, &ctx.run.nsys_stats_base(None))));
        }
        Ok(NsysPlan {
            profile,
            post,
            multi,
            record,
        })
    }

    fn commands(&self, plan: &NsysPlan) -> Vec<Vec<String>> {
        [vec![plan.profile.clone()], plan.post.clone()].concat()
    }

    fn execute(
        &self,
        ctx: &Ctx,
        plan: &NsysPlan,
        progress: &Progress,
    ) -> Result<PassStatus, Error> {
        let program = match crate::passes::launcher::find(ctx.cfg.workload.launcher)? {
            Some(p) => p,
            None => self.program(),
        };
        if let (Some(stored), Some(_)) = (&self.reuse, &plan.record.sampling) {
            // The reports read the figures from the run folder: a run re-rendered later, or
            // elsewhere, needs no cache.
            let path = ctx.run.path.join(crate::analysis::sampled::reuse::FILE);
            reuse::copy_into_run(&ctx.run.path, stored).map_err(|e| Error::io("write", path, e))?;
        }
        let log = ctx.run.nsys("nsys.log");
        let mut spec = ctx.spec(&program, plan.profile[1..].to_vec(), log.clone());
        spec.timeout = ctx.cfg.nsys_timeout();
        spec.on_line = Some(stage_hook(progress));
        let mut out = process::run(&spec).map_err(|e| Error::start(program.display(), e))?;
        let dir = ctx.run.path.join("nsys");
        let sampled = plan.record.sampling.as_ref();
        let (mut refused, mut set_refused) = (None, None);
        if sampled.is_some_and(|s| s.reused_from.is_none())
            && !crate::passes::signals::interrupted()
        {
            (out, refused, set_refused) = self.after_refusal(ctx, plan, &mut spec, out, &log)?;
        }
        if let Some(tx) = &self.profiled {
            // Nobody waiting is fine: the query may already have been answered.
            let _ = tx.send(());
        }
        let reports = reports(&dir);
        let qdstrm = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "qdstrm"));
        let first = reports.first().map(|(_, p)| p.clone());
        let mut st = classify(
            &out,
            first.as_deref(),
            qdstrm,
            (&ctx.cfg.nsys, &plan.record.capture),
        );
        st.duration_s = Some(out.duration.as_secs_f64());
        if let Some(why) = &set_refused {
            st.warnings.push(format!(
                "nsys refused the GPU-metrics set cut for this run ({}), so the pass ran again with nsys's default set: {why}",
                metric_set::FILE
            ));
        }
        if refused.is_some() || set_refused.is_some() {
            let mut rec = plan.record.clone();
            if let Some(s) = rec.sampling.as_mut() {
                s.refused = refused.clone();
                if set_refused.is_some() {
                    s.set = None;
                    s.asked.clear();
                }
            }
            st.nsys = Some(rec);
        }
        if let Some(why) = refused {
            st.warnings.push(format!(
                "nsys refused GPU-metrics sampling, so the pass ran again without it and the reports have no sampled figures (`stage2 doctor` checks it; nsys.gpu_metrics.enable=false skips it): {why}"
            ));
        }
        if plan.multi && !reports.is_empty() {
            let w = &ctx.cfg.workload;
            let expected = w.nproc_per_node.max(1) * w.nnodes.max(1);
            if reports.len() < expected as usize {
                st.warnings.push(format!(
                    "{} of {expected} ranks left an nsys report",
                    reports.len()
                ));
            }
        }
        // A report is processed even when the workload failed or the user interrupted: that
        // is data the user already paid for.
        let post_began = std::time::Instant::now();
        for (rank, report) in &reports {
            if let Err(why) = self.post_steps(ctx, plan, *rank, report, progress) {
                if crate::passes::signals::interrupted() {
                    // A Ctrl-C during stats/export is the user's stop, not a tool failure.
                    if st.state != PassState::Interrupted {
                        st = PassStatus::new(
                            PassState::Interrupted,
                            Some(format!(
                                "interrupted while processing the report ({}); what exists is kept",
                                report.display()
                            )),
                        );
                        st.duration_s = Some(out.duration.as_secs_f64());
                    }
                    st.warnings.push(why);
                } else if st.state == PassState::Ok {
                    st = PassStatus::failed(Cause::Tool, Some(why));
                    st.duration_s = Some(out.duration.as_secs_f64());
                } else {
                    st.warnings.push(why);
                }
            }
        }
        if let Some((rank, _)) = reports.first() {
            check_trace(&ctx.run.nsys_sqlite(*rank), plan, &mut st);
        }
        let kern_sum = ctx.run.kern_sum(reports.first().and_then(|r| r.0));
        if st.state == PassState::Ok && !reports.is_empty() && !kern_sum.exists() {
            let nsys = st.nsys.take();
            st = PassStatus::new(PassState::NoData, Some("the captured range holds no CUDA kernels (nsys stats wrote no cuda_gpu_kern_sum); is the range around GPU work?".to_string()),
            );
            st.duration_s = Some(out.duration.as_secs_f64());
            st.nsys = nsys;
        }
        let window = reports
            .first()
            .and_then(|(rank, _)| capture_window(&ctx.run.nsys_sqlite(*rank)));
        let timing = NsysTiming {
            capture_start_s: window.map(|w| w.0),
            capture_end_s: window.map(|w| w.1),
            post_steps_s: (!reports.is_empty()).then(|| post_began.elapsed().as_secs_f64()),
        };
        st.nsys.get_or_insert_with(|| plan.record.clone()).timing = Some(timing);
        Ok(st)
    }

    fn warnings(&self, ctx: &Ctx, plan: &NsysPlan) -> Vec<String> {
        osrt_warning(&ctx.cfg.nsys, &plan.record.capture)
            .into_iter()
            .collect()
    }

    fn diagnose(&self, ctx: &Ctx, plan: &NsysPlan, st: &PassStatus) -> Option<String> {
        let capture = &plan.record.capture;
        // NVTX names say nothing about a cudaProfilerStart never called.
        let windows = matches!(capture, crate::config::Capture::ProfilerApi { .. });
        let empty = !windows && st.reason.as_deref().is_some_and(|r| r.contains(NO_REPORTS));
        let nsys = self
            .tool
            .as_deref()
            .filter(|_| empty && ctx.cfg.nsys.diagnose)?;
        let ranges = diagnose::ungated(ctx, nsys)?;
        Some(diagnose::describe(
            &ranges,
            capture.nvtx_name(),
            capture.domain(),
        ))
    }

    fn pending(&self, plan: &NsysPlan) -> Vec<String> {
        let mut out = Vec::new();
        if self.metric_set.as_ref().is_some_and(|d| !d.path.exists()) {
            out.push(metric_set::DRY_NOTE.to_string());
        }
        if plan.multi {
            out.push("a real run adds each rank's `nsys export` and `nsys stats` lines here once its report exists".to_string());
        }
        out
    }

    fn record(&self, plan: &NsysPlan, st: &mut PassStatus) {
        // A refusal seen while the pass ran is kept.
        if st.nsys.is_none() {
            st.nsys = Some(plan.record.clone());
        }
    }
}

impl NsysPass {
    /// `nsys export` then `nsys stats` of the export (of the report when the export failed),
    /// quietly, into the pass log.
    fn post_steps(
        &self,
        ctx: &Ctx,
        plan: &NsysPlan,
        rank: Option<u32>,
        report: &Path,
        progress: &Progress,
    ) -> Result<(), String> {
        let (summary, sqlite) = (ctx.run.nsys_stats_base(rank), ctx.run.nsys_sqlite(rank));
        // Every step runs even when one fails (or was interrupted): the stats are read from
        // the report when the export failed, and a report the user paid for is kept in every
        // form it can be.
        let mut failed = Vec::new();
        let mut stats_done = false;
        for what in ["SQLite", "statistics", "statistics from the report"] {
            let args = match what {
                "SQLite" => export_args(report, &sqlite),
                "statistics" if failed.is_empty() => stats_args(&sqlite, &summary),
                // The export failed, or nsys could not read its own export: the report.
                "statistics from the report"
                    if !stats_done && !crate::passes::signals::interrupted() =>
                {
                    stats_args(report, &summary)
                }
                _ => continue,
            };
            if plan.multi || report.extension().is_some_and(|x| x == "qdrep") || !failed.is_empty()
            {
                // Per-rank (or legacy .qdrep) lines: cmd.txt names the files that exist.
                let _ = append_cmd_txt(
                    &ctx.workload.env,
                    &ctx.run.nsys("cmd.txt"),
                    &self.with_prog(args.clone()),
                );
            }
            progress.stage(&format!("exporting {what}"));
            let mut s = ctx.spec(&self.program(), args, ctx.run.nsys("nsys.log"));
            s.echo = false;
            s.timeout = Some(post_step_timeout(ctx.cfg.nsys.timeout_s));
            match run_step(&s) {
                // nsys could not read its own export: the report is tried before this counts.
                Err(_) if what == "statistics" && !crate::passes::signals::interrupted() => {}
                Err(e) => failed.push(e),
                // An export that says it worked and wrote nothing did not work.
                Ok(_) if what == "SQLite" && !process::nonempty(&sqlite) => failed.push(format!(
                    "nsys export exited 0 but wrote no {}",
                    sqlite.display()
                )),
                Ok(_) => stats_done |= what != "SQLite",
            }
        }
        match failed.is_empty() {
            true => Ok(()),
            false => Err(failed.join("\n")),
        }
    }
}

/// Follow nsys's own messages: collecting while the workload runs, finalizing once it ended
/// and nsys writes the report. (Its stdout is a pipe here, so nsys may hold these lines until
/// it exits: they name a stage, never a time.)
fn stage_hook(progress: &Progress) -> LineHook {
    let state = progress.handle();
    LineHook(std::sync::Arc::new(move |line: &str| {
        let stage = if line.starts_with("Generating '") || line.starts_with("Processing events") {
            "finalizing the report"
        } else if line.starts_with("Collecting data") {
            "collecting"
        } else {
            return;
        };
        state.stage(stage);
    }))
}

/// The export's word on how CUDA was traced, into the record; an export with kernel launch
/// calls and no kernel makes the pass no-data with the fix (`analysis::kernels::untraced`).
fn check_trace(sqlite: &Path, plan: &NsysPlan, st: &mut PassStatus) {
    let Ok(seen) = crate::parse::sqlite::NsysDb::open(sqlite).and_then(|db| db.cuda_trace()) else {
        return;
    };
    let rec = st.nsys.get_or_insert_with(|| plan.record.clone());
    if let Some(t) = rec.trace.as_mut() {
        t.cuda_seen = CudaTrace::seen(&seen);
    }
    if let (PassState::Ok, Err(e)) = (st.state, crate::analysis::kernels::untraced(&seen, sqlite)) {
        let mut refused = PassStatus::new(PassState::NoData, Some(e.to_string()));
        refused.duration_s = st.duration_s;
        refused.warnings = std::mem::take(&mut st.warnings);
        refused.nsys = st.nsys.take();
        *st = refused;
    }
}

/// The capture window in `sqlite` (seconds from the launch of `nsys profile`).
fn capture_window(sqlite: &Path) -> Option<(f64, f64)> {
    let db = crate::parse::sqlite::NsysDb::open(sqlite).ok()?;
    let (a, b) = db.capture_window().ok()??;
    Some((a as f64 / 1e9, b as f64 / 1e9))
}

/// A post step (stats, export) gets the pass's own limit when one is set, else an hour: long
/// enough for any report, short enough that a hung exporter does not hold the run forever.
pub(crate) fn post_step_timeout(limit_s: Option<u64>) -> Duration {
    Duration::from_secs(limit_s.unwrap_or(3600).max(60))
}

pub(crate) mod metric_set;
pub(crate) mod reuse;

#[cfg(test)]
mod tests;
