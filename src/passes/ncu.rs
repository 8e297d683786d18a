//! Nsight Compute pass: `ncu` gated by an NVTX range and scoped to the nsys pass's top
//! kernels, each profiled once (once per launch configuration when `ncu.shapes` asks); then the
//! raw metrics imported to CSV.
//!
//! By concern, each handing the next a value: the plan ([`plan`], an [`NcuPlan`]), the launch
//! (`launch`, attached to the held copy or started as usual: a `Launched`), the bound that may
//! stop it (`watch`, a `Stop`), the imports and the metrics cache (`after`, `reuse`), then the
//! graph step (`step`), whose record joins the pass's.

use std::path::{Path, PathBuf};

use super::driver::Pass;
use super::progress::Progress;
use super::{append_cmd_txt, diagnose, run_step, stopped, Ctx};
pub(crate) use crate::analysis::select::KernelFilter;
use crate::config::Config;
use crate::error::Error;
use crate::passes::launcher::Launcher;
use crate::passes::process::{self, Outcome};
use crate::rundir::status::{
    Cause, EarlyStart, GraphStepState, NcuCacheUse, NcuRecord, NcuShapePlan as ShapePlan,
    PassState, PassStatus,
};

pub(crate) const NO_KERNELS: &str = "No kernels were profiled";

/// Environment the ncu pass adds for every rank (see `ncu.nccl_p2p_disable` in conf/).
pub(crate) fn rank_env(cfg: &Config) -> Vec<(String, String)> {
    const P2P: &str = "NCCL_P2P_DISABLE";
    if cfg.workload.launcher == Launcher::None
        || !cfg.ncu.nccl_p2p_disable
        || cfg.workload.env.contains_key(P2P)
    {
        return Vec::new();
    }
    vec![(P2P.to_string(), "1".to_string())]
}

/// `argv` as cmd.txt shows it: behind `env NAME=VALUE ...` when the pass adds variables, so
/// that pasting the line runs the same thing.
fn with_env(env: &[(String, String)], argv: Vec<String>) -> Vec<String> {
    if env.is_empty() {
        return argv;
    }
    std::iter::once("env".to_string())
        .chain(env.iter().map(|(k, v)| format!("{k}={v}")))
        .chain(argv)
        .collect()
}

/// The ncu pass: its program (None: not found or disabled), why a pre-check refused it, and
/// nsys's program for the diagnosis of an empty pass.
pub(crate) struct NcuPass {
    pub(crate) tool: Option<PathBuf>,
    pub(crate) refused: Option<Error>,
    pub(crate) nsys: Option<PathBuf>,
    /// The reports' metrics this GPU knows (None: ncu could not be asked).
    pub(crate) known_metrics: Option<Vec<String>>,
    /// The GPU and ncu, for the metrics cache's keys (None: not known; no cache).
    pub(crate) device: Option<cache::Device>,
    /// Run on a second GPU beside the nsys pass (None: after it, on the workload's GPU).
    pub(crate) second_gpu: Option<crate::rundir::status::SecondGpu>,
    /// How its workload starts: held since the nsys pass began (`ncu.early_start`; the pass
    /// attaches to it, taking it from here), or as usual.
    pub(crate) start: std::sync::Mutex<early::Start>,
}

impl NcuPass {
    fn program(&self) -> PathBuf {
        self.tool.clone().unwrap_or_else(|| PathBuf::from("ncu"))
    }
    fn with_prog(&self, a: Vec<String>) -> Vec<String> {
        super::with_program(&self.program(), a)
    }

    /// The full argv: ncu on the workload, or, under a launcher, `stage2 __rank-exec` per rank
    /// that runs ncu on the chosen ranks and the bare workload on the others.
    fn argv(
        &self,
        ctx: &Ctx,
        include: Option<&str>,
        filter: Option<&KernelFilter>,
        base: &str,
        collect: &Collect,
        launches: Launches,
    ) -> Vec<String> {
        let launcher = ctx.cfg.workload.launcher;
        let multi = launcher != Launcher::None;
        let ranks = profiled_ranks(ctx.cfg);
        // One profiled rank keeps the plain name; several get a report each.
        let out_base = if multi && ranks.len() > 1 {
            ctx.run
                .ncu(&format!("{base}.rank{}", launcher.rank_macro()))
        } else {
            ctx.run.ncu(base)
        };
        let scope = Scope {
            include,
            filter,
            out_base: &out_base,
            workload: &ctx.workload.argv,
            exclude_nccl: multi && !ctx.cfg.ncu.include_nccl,
            launches,
            collect,
        };
        let mut profiled = self.with_prog(profile_args(&ctx.cfg.ncu, &scope));
        profiled.splice(1..1, window_args(ctx.ncu));
        if !multi {
            return profiled;
        }
        // Everything the ranks get set, for launchers that forward variables by name.
        let rank_vars: Vec<(String, String)> = ctx
            .workload
            .env
            .iter()
            .chain(&rank_env(ctx.cfg))
            .cloned()
            .collect();
        use crate::passes::launcher::{rank_exec_args, stage2_exe, Others};
        let others = Others::Workload(ctx.workload.argv.len());
        let per_rank = rank_exec_args(&stage2_exe(), launcher, &ranks, &others, profiled);
        launcher.wrap(&ctx.cfg.workload, per_rank, &rank_vars)
    }

    /// `f` of the held workload, if there is one.
    fn held<T>(&self, f: impl FnOnce(&early::Held) -> T) -> Option<T> {
        match &*self.start.lock().unwrap_or_else(|p| p.into_inner()) {
            early::Start::Held(h) => Some(f(h)),
            _ => None,
        }
    }

    /// The held workload, taken for the profile (None: there is none, or it was taken).
    fn take_held(&self) -> Option<early::Held> {
        let mut start = self.start.lock().unwrap_or_else(|p| p.into_inner());
        match std::mem::replace(&mut *start, early::Start::Usual) {
            early::Start::Held(h) => Some(h),
            other => {
                *start = other;
                None
            }
        }
    }

    /// A dry run's facts of how a real run would start (None: a real run).
    fn dry(&self) -> Option<early::Dry> {
        match &*self.start.lock().unwrap_or_else(|p| p.into_inner()) {
            early::Start::Dry(d) => Some(d.clone()),
            _ => None,
        }
    }

    /// The run whose kernels the metrics cache was expected to answer (the workload was not
    /// started early for that reason; `warm`).
    fn warm(&self) -> Option<String> {
        match &*self.start.lock().unwrap_or_else(|p| p.into_inner()) {
            early::Start::Warm(run) => Some(run.clone()),
            _ => None,
        }
    }
}

impl Pass for NcuPass {
    type Plan = NcuPlan;

    fn name(&self) -> &'static str {
        "ncu"
    }

    fn skip(&self, ctx: &Ctx) -> Option<PassStatus> {
        if let (Some(_), Some(e)) = (&self.tool, &self.refused) {
            // The workload already failed (under nsys): the run's exit says so once.
            if Cause::of(e) == Cause::Workload {
                return Some(PassStatus::skipped(
                    "not run: the workload failed under nsys (nsys/nsys.log), and ncu would run it again",
                ));
            }
            return Some(PassStatus::failed(
                Cause::of(e),
                Some(format!("not run: {e}")),
            ));
        }
        if self.tool.is_none() || !ctx.cfg.ncu.enable {
            return Some(PassStatus::skipped(
                "disabled by ncu.enable=false or --no-ncu",
            ));
        }
        crate::analysis::select::range_never_ran(ctx.ncu, ctx.run)
            .or_else(|| never_opened(ctx))
            .map(|why| {
                tracing::warn!("{why}");
                PassStatus::skipped(&format!("not run: {why}"))
            })
    }

    fn plan(&self, ctx: &Ctx) -> Result<NcuPlan, Error> {
        self.make_plan(ctx)
    }

    fn commands(&self, plan: &NcuPlan) -> Vec<Vec<String>> {
        let mut lines = Vec::new();
        if !plan.nothing_left {
            match &plan.attach {
                Some((launch, attach)) => {
                    lines.extend([with_env(&plan.env, launch.clone()), attach.clone()])
                }
                None => lines.push(with_env(&plan.env, plan.profile.clone())),
            }
            lines.extend([
                self.with_prog(import_args(&plan.report)),
                self.with_prog(import_mangled_args(&plan.report)),
                self.with_prog(vec!["--list-sections".into()]),
            ]);
        }
        if let Some(s) = plan.step.as_ref().filter(|s| s.hit.is_none()) {
            match &s.early {
                Some(e) => lines.extend([with_env(&e.env, e.launch.clone()), e.attach.clone()]),
                None => lines.push(s.argv.clone()),
            }
            lines.push(s.import.clone());
        }
        lines
    }

    fn execute(&self, ctx: &Ctx, plan: &NcuPlan, progress: &Progress) -> Result<PassStatus, Error> {
        if plan.multi {
            crate::passes::launcher::find(ctx.cfg.workload.launcher)?;
        }
        let hits_said = plan
            .reuse
            .as_ref()
            .and_then(|r| reuse::record_hits(ctx, r).err());
        log_plan(plan);
        if plan.nothing_left {
            return Ok(self.all_cached(ctx, plan, progress, hits_said));
        }
        let watch = Watch::new(progress, plan);
        let stopping = early::Stopping;
        let step_held = plan.step.as_ref().and_then(|s| step::hold(ctx, s));
        let mut launched = self.launch(ctx, plan, &watch)?;
        launched.warnings.splice(0..0, hits_said);
        let (mut st, stop) = settle(ctx, plan, &launched, &watch);
        let actual = measure_cost(ctx, plan, &watch, &launched.out, launched.attached());
        let stored = self.keep(ctx, plan, &mut st, progress);
        let bounded = stop.bounded.is_some();
        let mut rec = self.outcome_record(plan, actual, stored.entries);
        rec.stopped_early = plan.stop_early && launched.out.tail.contains(STOPPED_EARLY);
        rec.bounded = stop.bounded;
        rec.budget = stop.budget;
        rec.early_start = launched.early_start;
        st.ncu = Some(rec);
        stopping.join();
        graph_step(ctx, plan, progress, &mut st, step_held);
        // The next run may expect the cache to answer it where this pass, its graph step
        // included, went well and stored every kernel ncu was given. Kernels the budget left
        // for the next run (deferred) mean that run needs ncu: it holds its copy early.
        let given = plan.filter.as_ref().map_or(0, KernelFilter::len);
        let deferred = plan.cost.as_ref().is_some_and(|c| c.deferred > 0);
        let stored_all = st.state == PassState::Ok
            && !bounded
            && stored.kernels > 0
            && stored.kernels >= given
            && !deferred;
        self.remember(ctx, plan, false, stored_all);
        Ok(st)
    }

    fn diagnose(&self, ctx: &Ctx, _plan: &NcuPlan, _st: &PassStatus) -> Option<String> {
        let wanted = ctx.ncu.name.clone();
        let ranges = diagnose::ranges_for(ctx, self.nsys.as_deref(), &wanted)?;
        Some(diagnose::describe(
            &ranges,
            &wanted,
            ctx.ncu.domain.as_deref(),
        ))
    }

    fn pending(&self, plan: &NcuPlan) -> Vec<String> {
        plan.pending.clone()
    }

    fn record(&self, plan: &NcuPlan, st: &mut PassStatus) {
        // execute() records the outcome (cost, cache); a pass that did not run gets the plan's.
        if st.ncu.is_none() {
            st.ncu = Some(self.outcome_record(plan, None, 0));
        }
    }
}

impl NcuPass {
    /// Every chosen kernel is in the metrics cache: ncu does not run (the graph step may).
    fn all_cached(
        &self,
        ctx: &Ctx,
        plan: &NcuPlan,
        progress: &Progress,
        warning: Option<String>,
    ) -> PassStatus {
        let hits = plan.reuse.as_ref().map_or(0, |r| r.hits.len());
        let mut st = PassStatus::new(
            PassState::Ok,
            Some(format!(
                "no kernel profiled: all {hits} chosen kernels are in the metrics cache"
            )),
        );
        st.duration_s = Some(0.0);
        st.warnings.extend(warning);
        st.ncu = Some(self.outcome_record(plan, None, 0));
        graph_step(ctx, plan, progress, &mut st, None);
        self.remember(ctx, plan, st.state == PassState::Ok, false);
        st
    }
}

/// What the launch's outcome means for the pass: ncu's own words, or the bound that stopped
/// it; with how long it took and what to warn of.
fn settle(
    ctx: &Ctx,
    plan: &NcuPlan,
    launched: &Launched,
    watch: &Watch,
) -> (PassStatus, watch::Stop) {
    let out = &launched.out;
    let report = process::nonempty(&plan.report);
    let filtered = plan.filter.as_ref().is_some_and(|f| !f.is_empty());
    let mut st = classify(out, report, filtered);
    let stop = (plan.bound.as_ref())
        .map(|b| b.stop(out, report, watch.done().len()))
        .unwrap_or_default();
    let sqlite = ctx.run.single_or_rank0_sqlite();
    if let Some(why) = stop.status(|| watch::graph_launches(&sqlite)) {
        st = why;
    }
    st.duration_s = Some(launched.duration.as_secs_f64());
    st.warnings.extend(launched.warnings.iter().cloned());
    (st, stop)
}

/// The planned graph step, after a pass that went well (a failed or interrupted one would
/// fail or stop it the same way); its record joins the pass's. A signal before or during it
/// leaves the pass interrupted, what the kernel pass measured kept.
/// `held`: its copy of the workload, held since the kernel pass began (dropped, so stopped,
/// where the step does not run).
fn graph_step(
    ctx: &Ctx,
    plan: &NcuPlan,
    progress: &Progress,
    st: &mut PassStatus,
    held: Option<early::Held>,
) {
    let Some(s) = plan.step.as_ref().filter(|_| st.state == PassState::Ok) else {
        return;
    };
    if !crate::passes::signals::interrupted() {
        let rec = step::run(ctx, s, progress, held);
        if let Some(d) = rec.duration_s {
            st.duration_s = Some(st.duration_s.unwrap_or(0.0) + d);
        }
        if rec.state == GraphStepState::NotMeasured {
            let note = rec.note.as_ref();
            st.warnings
                .extend(note.map(|n| format!("graph step not measured: {n}")));
        }
        if let Some(r) = st.ncu.as_mut() {
            r.graph_step = Some(rec);
        }
    }
    if crate::passes::signals::interrupted() {
        let why =
            "interrupted before its graph step was measured; what the kernel pass measured is kept";
        let mut now = PassStatus::new(PassState::Interrupted, Some(why.into()));
        now.duration_s = st.duration_s;
        now.warnings = std::mem::take(&mut st.warnings);
        now.ncu = st.ncu.take();
        *st = now;
    }
}

/// ncu's line when it ends the workload after the last requested kernel (`--kill on`).
const STOPPED_EARLY: &str = "==PROF== Trying to shutdown target application";

#[cfg(test)]
mod tests;

mod after;
use after::{log_plan, measure_cost};
mod launch;
use launch::Launched;
mod args;
pub(crate) mod cache;
pub(crate) mod cost;
pub(crate) mod early;

/// Why ncu would profile nothing: nsys's diagnosis ran the whole workload and none of the
/// ranges it emits is ncu's (a gated capture of the same name that never opened). None where
/// there was no diagnosis, or ncu's range is a raw expression.
fn never_opened(ctx: &Ctx) -> Option<String> {
    let range = ctx.ncu.range()?;
    let ranges = diagnose::diagnosed_without(ctx, &range)?;
    Some(format!(
        "ncu's range `{range}` never opened in a whole run of the workload under nsys ({}): ncu would run it again and profile nothing, so it is not run",
        diagnose::describe(&ranges, &range, ctx.ncu.domain.as_deref())
    ))
}
mod outcome;
mod plan;
use plan::{cost_model_path, profiled_ranks};
pub(crate) use plan::{kernel_report, NcuPlan};
pub(crate) mod query;
mod reuse;
mod step;
pub(crate) use args::*;
use outcome::app_error_code;
pub(crate) use outcome::classify;
pub(crate) mod warm;
mod watch;
pub(crate) use watch::Bound;
use watch::Watch;
