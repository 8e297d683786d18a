//! The ncu pass's plan: what it profiles (the chosen kernels, their launch configurations,
//! what the metrics cache already holds), how (the command lines, attached to a held copy or
//! launched) and what it should cost, read from the nsys pass's export before ncu starts.

use std::path::PathBuf;

use super::{
    cost, early, metrics_to_collect, rank_env, reuse, step, with_env, Bound, Collect, KernelFilter,
    Launches, NcuPass, ShapePlan,
};
use crate::config::Config;
use crate::error::Error;
use crate::passes::launcher::Launcher;
use crate::passes::Ctx;

mod budget;
mod dry;
mod export;
use budget::{finish_step, predict, time_bound, which_launches};
#[cfg(test)]
pub(super) use export::{first_start_s, range_began_s};
use export::{nsys_basis, read_export};

/// What the ncu pass runs.
pub(crate) struct NcuPlan {
    /// The NVTX include expression (None: not gated) and the files' base name.
    pub(crate) include: Option<String>,
    /// The range `include` names, as the export names it (None: no one range).
    pub(crate) ncu_range: Option<String>,
    /// nsys captured that range (or either side is ungated).
    pub(crate) same: bool,
    pub(crate) base: String,
    pub(crate) filter: Option<KernelFilter>,
    /// The profile command line with the top-kernel filter, and without it (the retry when
    /// the filter matched nothing), program first.
    pub(crate) profile: Vec<String>,
    pub(crate) unfiltered: Vec<String>,
    /// Variables the pass adds for every rank.
    pub(crate) env: Vec<(String, String)>,
    /// The report ncu writes (the first profiled rank's under a launcher).
    pub(crate) report: PathBuf,
    pub(crate) multi: bool,
    pub(crate) collect: Collect,
    /// The metrics cache's part (None: not used).
    pub(crate) reuse: Option<reuse::Reuse>,
    /// Every chosen kernel is in the cache: ncu does not run.
    pub(crate) nothing_left: bool,
    pub(crate) stop_early: bool,
    /// The predicted cost (None: the number of kernels is not known before ncu runs).
    pub(crate) cost: Option<cost::Plan>,
    /// Which launch configurations ncu measures, and why (None: not known before it runs).
    pub(crate) shapes: Option<ShapePlan>,
    /// Measuring every configuration: when the pass is stopped (None: ncu ends it itself).
    pub(crate) bound: Option<Bound>,
    /// One instance measured whole where the range launches CUDA graphs.
    pub(crate) step: Option<step::StepPlan>,
    /// With a held workload: the line that started it and the attach that profiles it, in
    /// place of `profile` (program first).
    pub(crate) attach: Option<(Vec<String>, Vec<String>)>,
    /// Why a held workload is not attached to but started again as usual (None: it is, or
    /// there is none).
    pub(crate) not_attached: Option<String>,
    /// A dry run: what its lines leave to a real run to fill in (empty for a real run).
    pub(crate) pending: Vec<String>,
}

impl ShapePlan {
    fn describe(&self) -> String {
        let how = match self.every_shape {
            true => format!(
                "ncu measures one launch of each of the {} launch configurations",
                self.launch_configs
            ),
            false => format!(
                "ncu measures each kernel's first launch ({} launch configurations in all)",
                self.launch_configs
            ),
        };
        format!(
            "{how} of the {} chosen kernels: their first launches' configurations hold {:.1}% of their time in nsys",
            self.kernels, self.first_shapes_pct
        )
    }
}

/// [`NcuPass::kernels`]'s answer: the cache's part, the kernels left for ncu and which
/// launches of them, how many (None: not known before ncu runs), and the pass's bound.
struct Kernels {
    reuse: Option<reuse::Reuse>,
    filter: Option<KernelFilter>,
    shapes: Option<ShapePlan>,
    launches: Launches,
    profiles: Option<usize>,
    bound: Option<Bound>,
}

impl Kernels {
    fn hits(&self) -> usize {
        self.reuse.as_ref().map_or(0, |r| r.hits.len())
    }

    /// Every chosen kernel is in the cache: ncu does not run.
    fn nothing_left(&self) -> bool {
        self.hits() > 0 && self.filter.as_ref().map(KernelFilter::len) == Some(0)
    }
}

/// [`NcuPass::timing`]'s answer: whether the pass attaches to the held workload (and why not
/// where that needs a word), what the predictions read, and the predicted cost.
struct Timing {
    attach: bool,
    not_attached: Option<String>,
    basis: cost::Basis,
    learned: Option<cost::Model>,
    cost: Option<cost::Plan>,
}

/// Where ncu profiles: its NVTX include (None: not gated) and its files' base name, the range
/// whose launches in the nsys export name its kernels, whether nsys captured that range, and
/// the report ncu writes.
pub(super) struct Target {
    include: Option<String>,
    base: String,
    range: Option<String>,
    same: bool,
    multi: bool,
    report: PathBuf,
}

fn target(ctx: &Ctx) -> Target {
    use crate::analysis::nvtx::{include_and_base, style_for};
    let target = ctx.ncu;
    let (include, base, warning) = include_and_base(target, style_for(ctx.cfg, target, ctx.run));
    if let Some(w) = warning {
        tracing::warn!("{w}");
    }
    // The range: nsys's own, or ncu's when the capture ran on into it.
    let same = target.same_as_capture;
    let range = match same {
        true => target.nsys_range.clone(),
        false => crate::analysis::select::range_in_export(target, ctx.run),
    };
    Target {
        report: kernel_report(ctx, &base),
        include,
        base,
        range,
        same,
        multi: ctx.cfg.workload.launcher != Launcher::None,
    }
}

/// `ncu.shapes` applied to the chosen kernels: all of their shapes (`all`, or `auto` when the
/// first launches' shapes hold less than `ncu.shape_coverage` of their time) or the first.
fn shape_plan(
    cfg: &Config,
    shapes: Option<&crate::analysis::shapes::Shapes>,
    chosen: Option<&KernelFilter>,
) -> Option<ShapePlan> {
    let (Some(shapes), Some(KernelFilter::Mangled(names))) = (shapes, chosen) else {
        return None;
    };
    let (first_shapes_pct, launch_configs) = shapes.first_shape_share(names)?;
    let every_shape = match cfg.ncu.shapes {
        crate::config::Shapes::All => true,
        crate::config::Shapes::First => false,
        crate::config::Shapes::Auto => first_shapes_pct < cfg.ncu.shape_coverage * 100.0,
    };
    Some(ShapePlan {
        every_shape: every_shape && launch_configs > names.len(),
        launch_configs,
        first_shapes_pct,
        kernels: names.len(),
    })
}

/// The ranks ncu profiles (rank 0 unless `ncu.ranks` names others).
pub(super) fn profiled_ranks(cfg: &Config) -> Vec<u32> {
    if cfg.ncu.ranks.is_empty() {
        vec![0]
    } else {
        cfg.ncu.ranks.clone()
    }
}

/// The cost model of this workload on this GPU with these settings, in the cache folder.
pub(super) fn cost_model_path(ctx: &Ctx, r: &reuse::Reuse) -> PathBuf {
    let identity = format!(
        "{:?}|{}|{}",
        r.device,
        r.settings,
        ctx.workload.argv.join("\u{1f}")
    );
    cost::model_path(&r.cache.dir, &identity)
}

/// The report the kernel pass writes for `base` (the first profiled rank's where a launcher's
/// ranks get one each).
pub(crate) fn kernel_report(ctx: &Ctx, base: &str) -> std::path::PathBuf {
    let ranks = profiled_ranks(ctx.cfg);
    match ctx.cfg.workload.launcher != Launcher::None && ranks.len() > 1 {
        true => ctx.run.ncu(&format!("{base}.rank{}.ncu-rep", ranks[0])),
        false => ctx.run.ncu_report(base),
    }
}

impl NcuPass {
    /// The plan, concern by concern: where ncu profiles, what the nsys export says of it, which
    /// kernels (the cache's part split off), which launches and within what bound, attached to
    /// the held workload or launched, what it should cost, then the command lines.
    pub(super) fn make_plan(&self, ctx: &Ctx) -> Result<NcuPlan, Error> {
        let t = target(ctx);
        let collect = metrics_to_collect(&ctx.cfg.ncu, self.known_metrics.as_deref());
        let mut export = read_export(ctx, &t);
        let (include, range) = (t.include.as_deref(), t.range.as_deref());
        let step = step::plan(
            ctx,
            &self.program(),
            (include, range),
            &t.base,
            self.device.as_ref(),
        );
        let rows = export.rows.take();
        // A dry run shows the kernels the nsys export would choose as placeholders.
        let dry = self.dry();
        let mut k = match dry.as_ref().is_some_and(|d| d.after_nsys) {
            true => dry::after_nsys(ctx.cfg, t.multi),
            false => self.kernels(ctx, t.multi, &collect, export.shapes.as_ref(), rows),
        };
        let time = self.timing(ctx, t.multi, export.began_s, &collect, &mut k);
        let mut profile = self.argv(
            ctx,
            include,
            k.filter.as_ref(),
            &t.base,
            &collect,
            k.launches,
        );
        let attach = match &dry {
            Some(d) if d.held && !t.multi && k.bound.is_none() => self.dry_attach(ctx, &profile),
            Some(_) => None,
            None => time.attach.then(|| self.attach_lines(&profile)).flatten(),
        };
        let unfiltered = self.argv(ctx, include, None, &t.base, &collect, Launches::First);
        let pending = match &dry {
            Some(d) => {
                profile = dry::fill(profile, d.after_nsys);
                let lines: Vec<&[String]> = match &attach {
                    Some((launch, attach)) => vec![launch, attach],
                    None => vec![&profile],
                };
                dry::notes(ctx.cfg, d, &lines, &unfiltered)
            }
            None => Vec::new(),
        };
        let pace = (time.basis, time.learned.as_ref());
        let step = step.map(|s| finish_step(ctx, s, attach.is_some(), pace, t.multi));
        Ok(NcuPlan {
            unfiltered,
            profile,
            attach,
            env: rank_env(ctx.cfg),
            // The one place ncu's expression is read for its range; the record keeps it.
            ncu_range: include.and_then(crate::config::range_of),
            same: t.same,
            include: t.include,
            base: t.base,
            report: t.report,
            multi: t.multi,
            collect,
            nothing_left: k.nothing_left(),
            stop_early: k.launches == Launches::FirstThenStop,
            shapes: k.shapes,
            filter: k.filter,
            reuse: k.reuse,
            bound: k.bound,
            cost: time.cost,
            step,
            not_attached: time.not_attached,
            pending,
        })
    }

    /// Which kernels ncu profiles (the cache's part split off) and which of their launches,
    /// with the bound over every launch configuration.
    fn kernels(
        &self,
        ctx: &Ctx,
        multi: bool,
        collect: &Collect,
        shapes: Option<&crate::analysis::shapes::Shapes>,
        rows: Option<crate::analysis::kernels::Loaded>,
    ) -> Kernels {
        let (reuse, filter, shape_plan) = self.choose(ctx, collect, shapes, rows);
        if let Some(p) = &shape_plan {
            tracing::info!("{}", p.describe());
        }
        let per_shape = shape_plan.as_ref().is_some_and(|p| p.every_shape);
        let (launches, profiles, bound) =
            which_launches(ctx.cfg, multi, per_shape, filter.as_ref(), shapes);
        Kernels {
            reuse,
            filter,
            shapes: shape_plan,
            launches,
            profiles,
            bound,
        }
    }

    /// How the pass runs against time: attached to the held workload or launched, its bound
    /// (`ncu.budget_s` where none is set over every launch configuration), and its predicted
    /// cost, the kernels its budget cannot afford cut from `k` for the next run.
    fn timing(
        &self,
        ctx: &Ctx,
        multi: bool,
        began_s: Option<f64>,
        collect: &Collect,
        k: &mut Kernels,
    ) -> Timing {
        let launched = multi || k.nothing_left() || k.bound.is_some();
        let (attach, not_attached) = self.attachable(ctx, launched);
        // What the nsys pass measured of the workload, read once for both predictions, and
        // what earlier runs of this workload measured.
        let basis = cost::Basis {
            held: attach,
            range_start_s: began_s,
            ..nsys_basis(ctx)
        };
        let learned = (k.reuse.as_ref()).and_then(|r| cost::load(&cost_model_path(ctx, r)));
        if k.bound.is_none() {
            k.bound = time_bound(&ctx.cfg.ncu, basis, !attach, multi);
        }
        let hits = k.hits();
        let launches = (k.launches, k.profiles, k.bound.as_ref());
        let pace = (basis, learned.as_ref());
        let cost = predict(pace, launches, k.filter.as_mut(), hits, collect);
        Timing {
            attach,
            not_attached,
            basis,
            learned,
            cost,
        }
    }

    /// Whether the pass attaches to the held workload, and why not where there is one it does
    /// not attach to for a reason worth a word. Where the pass must launch ncu itself
    /// (`launched`: a launcher's ranks, nothing to profile, a pass over every launch
    /// configuration, whose launch count was measured with a launched ncu only), no word is
    /// needed; kernels in more than one process get one.
    fn attachable(&self, ctx: &Ctx, launched: bool) -> (bool, Option<String>) {
        if launched || self.held(|_| ()).is_none() {
            return (false, None);
        }
        match early::one_process(ctx) {
            Ok(()) => (true, None),
            Err(why) => (false, Some(why)),
        }
    }

    /// The held workload's launch line and the attach that profiles it as `profile` would.
    fn attach_lines(&self, profile: &[String]) -> Option<(Vec<String>, Vec<String>)> {
        self.held(|h| {
            let launch = with_env(&h.env, h.argv.clone());
            Some((launch, early::attach_argv(profile, h.port)?))
        })
        .flatten()
    }

    /// The kernels ncu profiles: the selection, which prefers what the metrics cache holds
    /// (looked up first: without a kernel list of ncu's range in the export there is nothing
    /// to look up), split into the cache's part and ncu's; and which launch configurations.
    fn choose(
        &self,
        ctx: &Ctx,
        collect: &Collect,
        shapes: Option<&crate::analysis::shapes::Shapes>,
        rows: Option<crate::analysis::kernels::Loaded>,
    ) -> (
        Option<reuse::Reuse>,
        Option<KernelFilter>,
        Option<ShapePlan>,
    ) {
        let lookup = match (
            reuse::unusable(ctx, self.device.as_ref()),
            &self.device,
            shapes,
        ) {
            (None, Some(device), Some(shapes)) => {
                reuse::Lookup::new(ctx, collect, device.clone(), shapes.clone())
            }
            (None, _, _) => None,
            (Some(why), _, _) => {
                tracing::info!("ncu metrics cache {why}");
                None
            }
        };
        // The selection prefers what the split will serve. Under `ncu.shapes=auto` that is one
        // launch per kernel unless the chosen kernels' first launches hold too little of their
        // time (decided only once they are chosen): a kernel measured at its first launch only
        // counts as cached, so a re-run whose margin reorders two kernels keeps the cached one
        // (an H100 re-run started ncu for one such kernel: 18 s).
        let every_shape = ctx.cfg.ncu.shapes == crate::config::Shapes::All;
        let holds = lookup
            .as_ref()
            .map(|l| move |m: &str| l.holds(m, every_shape));
        let chosen = crate::analysis::select::kernel_filter(
            (ctx.cfg, ctx.ncu),
            ctx.run,
            holds.as_ref().map(|f| f as &dyn Fn(&str) -> bool),
            rows,
        );
        let shape_plan = shape_plan(ctx.cfg, shapes, chosen.as_ref());
        let per_shape = shape_plan.as_ref().is_some_and(|p| p.every_shape);
        let (reuse, filter) = match lookup {
            Some(l) => l.split(chosen, per_shape),
            None => (None, chosen),
        };
        (reuse, filter, shape_plan)
    }
}
