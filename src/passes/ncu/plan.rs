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

/// What the nsys export says of ncu's range: each kernel's launch configurations in it (None:
/// the export cannot be read for them), when its first instance began, in seconds on the
/// nsys pass's clock (what a launched ncu must reach again before its first kernel), and,
/// where it is also the range the kernel table lists (`kernels`), that table's rows from the
/// same read of the export.
fn read_export(ctx: &Ctx, range: Option<&str>, kernels: bool) -> FromExport {
    let none = (None, None, None);
    let path = ctx.run.single_or_rank0_sqlite();
    if !crate::files::present(&path).unwrap_or(false) {
        return none;
    }
    let Ok(db) = crate::parse::sqlite::NsysDb::open(&path) else {
        return none;
    };
    // The ranges are read only to find the launches made inside one.
    let ranges = match range {
        Some(_) => db.ranges(),
        None => Ok(Vec::new()),
    };
    let began = ranges
        .as_ref()
        .ok()
        .zip(range)
        .and_then(|(r, name)| range_began_s(&db, r, name));
    let read = ranges.and_then(|r| match (range, kernels) {
        (Some(name), true) => crate::analysis::kernels::with_shapes(&db, &r, name)
            .map(|(rows, shapes)| (shapes, Some(rows).filter(|l| !l.rows.is_empty()))),
        _ => crate::analysis::shapes::Shapes::read(&db, &r, range).map(|s| (s, None)),
    });
    match read {
        Ok((shapes, rows)) => (Some(shapes), began, rows),
        Err(e) => {
            tracing::info!("kernel launch configurations not read from the nsys export: {e}");
            (None, began, None)
        }
    }
}

/// [`read_export`]'s answer: shapes, the range's start, the kernel table's rows.
type FromExport = (
    Option<crate::analysis::shapes::Shapes>,
    Option<f64>,
    Option<crate::analysis::kernels::Loaded>,
);

/// When the first instance of `name` began, in seconds from the launch of `nsys profile`.
/// Event times in the export count from the trace's start (ANALYSIS_DETAILS.startTime, on that
/// clock): a capture that began 20 s in has its first range a few ms after it.
pub(super) fn range_began_s(
    db: &crate::parse::sqlite::NsysDb,
    ranges: &[crate::parse::sqlite::NvtxRange],
    name: &str,
) -> Option<f64> {
    let (trace_start, _) = db.capture_window().ok()??;
    Some(trace_start as f64 / 1e9 + first_start_s(ranges, name)?)
}

/// When the first instance of `name` began, in seconds on the export's clock (from the trace's
/// start).
pub(super) fn first_start_s(ranges: &[crate::parse::sqlite::NvtxRange], name: &str) -> Option<f64> {
    ranges
        .iter()
        .filter(|r| *r.name == *name)
        .map(|r| r.start)
        .min()
        .map(|ns| ns as f64 / 1e9)
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

/// What the nsys pass of this run measured of the workload (nothing without one).
fn nsys_basis(ctx: &Ctx) -> cost::Basis {
    let status = crate::rundir::status::Status::read(&ctx.run.path);
    let Some(nsys) = status.as_ref().and_then(|s| s.passes.get("nsys")) else {
        return cost::Basis::default();
    };
    let timing = nsys.nsys.as_ref().and_then(|r| r.timing.clone());
    cost::Basis {
        pass_s: nsys.duration_s,
        capture_start_s: timing.as_ref().and_then(|t| t.capture_start_s),
        capture_end_s: timing.and_then(|t| t.capture_end_s),
        range_start_s: None,
        held: false,
    }
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

/// Which launches ncu profiles (each chosen kernel's first, stopped after the last where it
/// can be; or one of each launch configuration, within a bound), how many (None: not known
/// before ncu runs), and the bound.
fn which_launches(
    cfg: &Config,
    multi: bool,
    per_shape: bool,
    filter: Option<&KernelFilter>,
    shapes: Option<&crate::analysis::shapes::Shapes>,
) -> (Launches, Option<usize>, Option<Bound>) {
    let to_profile = filter.map(KernelFilter::len);
    // Per shape, ncu cannot tell when the last one has come: the workload runs to its end.
    let launches = match per_shape {
        true => Launches::EveryShape,
        false if !multi && cfg.ncu.stop_when_done && to_profile.is_some() => {
            Launches::FirstThenStop
        }
        false => Launches::First,
    };
    // Launches ncu profiles: one per kernel, or one per shape of each kernel.
    let profiles = to_profile.map(|n| match (per_shape, filter, shapes) {
        (true, Some(KernelFilter::Mangled(names)), Some(s)) => {
            names.iter().map(|m| s.of(m).len().max(1)).sum()
        }
        _ => n,
    });
    let bound = (launches == Launches::EveryShape).then(|| {
        let per_kernel = cfg.ncu.instances_per_kernel.max(1) as usize;
        Bound::new(&cfg.ncu, profiles.map(|p| p * per_kernel), multi)
    });
    // A bounded pass profiles at most its bound.
    let profiles = profiles.map(|n| {
        bound
            .as_ref()
            .and_then(|b| b.launches)
            .map_or(n, |b| n.min(b))
    });
    (launches, profiles, bound)
}

/// Where the pace an earlier run measured (`learned`) says the chosen kernels overrun the
/// budget, ncu gets the largest that fit (the filter is in rank order) and the rest wait for
/// the next run: ncu reaches kernels in the order the workload launches them, so a budget stop
/// would leave out whichever come last, large or small. Returns how many were deferred.
fn defer_past_budget(
    launches: Launches,
    filter: Option<&mut KernelFilter>,
    learned: Option<&cost::Model>,
    held: bool,
    budget: Option<std::time::Duration>,
) -> Option<usize> {
    let f = filter.filter(|_| matches!(launches, Launches::First | Launches::FirstThenStop))?;
    let n = cost::affordable(learned, held, f.len(), budget)?;
    let left = f.len() - n;
    f.truncate(n);
    Some(left)
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
    pub(super) fn make_plan(&self, ctx: &Ctx) -> Result<NcuPlan, Error> {
        use crate::analysis::nvtx::{include_and_base, style_for};
        let target = &ctx.scope.ncu;
        let (include, base, warning) =
            include_and_base(target, style_for(ctx.cfg, target, ctx.run));
        if let Some(w) = warning {
            tracing::warn!("{w}");
        }
        let multi = ctx.cfg.workload.launcher != Launcher::None;
        let report = kernel_report(ctx, &base);
        let collect = metrics_to_collect(&ctx.cfg.ncu, self.known_metrics.as_deref());
        // The range whose launches in the nsys export name ncu's kernels: nsys's own, or ncu's
        // when the capture ran on into it.
        let same = target.same_as_capture;
        let range = match same {
            true => ctx.scope.capture.range().map(str::to_string),
            false => crate::analysis::select::range_in_export(target, ctx.run),
        };
        // Each kernel's launch configurations in that range (the whole capture when nsys's
        // range is ncu's and no range is named), for the shapes ncu measures and the cache.
        // The kernel table's rows come from the single export (rank 0's CSV under a launcher).
        let table = same && ctx.run.nsys_sqlite(None).is_file();
        let (shapes, range_began_s, rows) = match same || range.is_some() {
            true => read_export(ctx, range.as_deref(), table),
            false => (None, None, None),
        };
        let step = step::plan(
            ctx,
            &self.program(),
            (include.as_deref(), range.as_deref()),
            &base,
            self.device.as_ref(),
        );
        let (reuse, mut filter, shape_plan) = self.choose(ctx, &collect, shapes.as_ref(), rows);
        let per_shape = shape_plan.as_ref().is_some_and(|p| p.every_shape);
        let hits = reuse.as_ref().map_or(0, |r| r.hits.len());
        let to_profile = filter.as_ref().map(KernelFilter::len);
        let nothing_left = hits > 0 && to_profile == Some(0);
        if let Some(p) = &shape_plan {
            tracing::info!("{}", p.describe());
        }
        let (launches, mut profiles, bound) =
            which_launches(ctx.cfg, multi, per_shape, filter.as_ref(), shapes.as_ref());
        let stop_early = launches == Launches::FirstThenStop;
        // A held workload is attached to unless the pass must launch ncu itself: a launcher's
        // ranks, nothing to profile, a pass over every launch configuration (its launch count
        // was measured with a launched ncu only), or kernels in more than one process.
        let attachable = self.held(|_| ()).is_some() && !(multi || nothing_left || bound.is_some());
        let not_attached = match attachable {
            true => early::one_process(ctx).err(),
            false => None,
        };
        let attachable = attachable && not_attached.is_none();
        // What the nsys pass measured of the workload, read once for both predictions.
        let basis = cost::Basis {
            held: attachable,
            range_start_s: range_began_s,
            ..nsys_basis(ctx)
        };
        // Any other pass is bounded in time (`ncu.budget_s`): launched, ncu starts the workload
        // again and must reach its range, which the nsys pass reached at its first instance (at
        // the capture's start when nsys's range is ncu's; later when nsys captured the whole run).
        let restart = (!attachable).then(|| basis.range_reached_s()).flatten();
        let bound = bound.or_else(|| Bound::time(&ctx.cfg.ncu, basis.pass_s, restart, multi));
        let budget = bound.as_ref().and_then(|b| b.budget);
        // What earlier runs of this workload measured, for both predictions.
        let learned = reuse
            .as_ref()
            .and_then(|r| cost::load(&cost_model_path(ctx, r)));
        let deferred = defer_past_budget(
            launches,
            filter.as_mut(),
            learned.as_ref(),
            basis.held,
            budget,
        );
        if let Some(f) = filter.as_ref().filter(|_| deferred.is_some()) {
            profiles = Some(f.len());
        }
        let cost = profiles
            .map(|n| {
                cost::plan(
                    learned.as_ref(),
                    n,
                    hits,
                    collect.set.as_deref(),
                    basis,
                    stop_early || bound.as_ref().is_some_and(|b| b.all_known),
                )
            })
            .map(|c| cost::within(c, budget))
            .map(|mut c| {
                if let Some(left) = deferred {
                    c.deferred = left;
                    c.basis = format!(
                        "{}; its time budget affords the {} largest of the {} kernels at that pace, {left} left for the next run",
                        c.basis,
                        c.kernels,
                        c.kernels + left
                    );
                }
                c
            });
        let profile = self.argv(
            ctx,
            include.as_deref(),
            filter.as_ref(),
            &base,
            &collect,
            launches,
        );
        let attach = match attachable {
            false => None,
            true => self
                .held(|h| {
                    let launch = with_env(&h.env, h.argv.clone());
                    Some((launch, early::attach_argv(&profile, h.port)?))
                })
                .flatten(),
        };
        let mut step = step;
        if let Some(s) = step.as_mut().filter(|s| s.hit.is_none()) {
            // Where the kernel pass attaches, the step's own copy is held from its start.
            if attach.is_some() {
                s.early = step::hold_plan(&s.argv, &ctx.workload.argv, &ctx.workload.env);
            }
            s.eta_s = Some(cost::step_s(
                learned.as_ref(),
                basis,
                s.choice.work.workloads(),
                s.early.is_some(),
            ));
            // The step is bounded as the kernel pass is (seen on an H100: a torch.compile
            // loop's step never reached its instance and ran the workload to its end under
            // ncu, 310 s); launched, it gets its time to ncu's range on top.
            let restart = s.early.is_none().then(|| basis.range_reached_s()).flatten();
            s.budget = Bound::time(&ctx.cfg.ncu, basis.pass_s, restart, multi)
                .and_then(|b| Some((b.budget?, b.budget_from)));
        }
        Ok(NcuPlan {
            profile,
            attach,
            unfiltered: self.argv(
                ctx,
                include.as_deref(),
                None,
                &base,
                &collect,
                Launches::First,
            ),
            shapes: shape_plan,
            env: rank_env(ctx.cfg),
            // The one place ncu's expression is read for its range; the record keeps it.
            ncu_range: include.as_deref().and_then(crate::config::range_of),
            same,
            include,
            base,
            filter,
            report,
            multi,
            collect,
            reuse,
            nothing_left,
            stop_early,
            cost,
            bound,
            step,
            not_attached,
        })
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
            (ctx.cfg, ctx.scope),
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
