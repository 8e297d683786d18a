//! Nsight Compute pass: `ncu` gated by an NVTX range and scoped to the nsys pass's top
//! kernels, each profiled once (once per launch configuration when `ncu.shapes` asks); then the
//! raw metrics imported to CSV.

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
    /// The workload started beside the nsys pass and held at its first CUDA call
    /// (`ncu.early_start`): the pass attaches to it instead of starting it.
    pub(crate) early: std::sync::Mutex<Option<early::Held>>,
    /// The run whose kernels the metrics cache was expected to answer (the workload was not
    /// started early for that reason; `warm`).
    pub(crate) warm: Option<String>,
}

/// What the ncu pass runs.
pub(crate) struct NcuPlan {
    /// The NVTX include expression (None: not gated) and the files' base name.
    pub(crate) include: Option<String>,
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

/// The chosen kernels' shapes in ncu's range (None: the export cannot be read for them).
fn read_shapes(ctx: &Ctx, range: Option<&str>) -> Option<crate::analysis::shapes::Shapes> {
    let path = ctx.run.single_or_rank0_sqlite();
    crate::files::present(&path).ok().filter(|&p| p)?;
    let db = crate::parse::sqlite::NsysDb::open(&path).ok()?;
    // The ranges are read only to find the launches made inside one.
    let ranges = match range {
        Some(_) => db.ranges(),
        None => Ok(Vec::new()),
    };
    match ranges.and_then(|r| crate::analysis::shapes::Shapes::read(&db, &r, range, None)) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::info!("kernel launch configurations not read from the nsys export: {e}");
            None
        }
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
        profiled.splice(1..1, window_args(ctx.cfg));
        if !multi {
            return profiled;
        }
        let stage2 = std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "stage2".to_string());
        // Everything the ranks get set, for launchers that forward variables by name.
        let rank_vars: Vec<(String, String)> = ctx
            .workload
            .env
            .iter()
            .chain(&rank_env(ctx.cfg))
            .cloned()
            .collect();
        let per_rank = crate::passes::launcher::rank_exec_args(
            &stage2,
            launcher,
            &ranks,
            ctx.workload.argv.len(),
            profiled,
        );
        launcher.wrap(&ctx.cfg.workload, per_rank, &rank_vars)
    }

    /// `f` of the held workload, if there is one.
    fn held<T>(&self, f: impl FnOnce(&early::Held) -> T) -> Option<T> {
        let held = self.early.lock().unwrap_or_else(|p| p.into_inner());
        held.as_ref().map(f)
    }

    /// The planned profile: attached to the held workload when there is one and ncu holds
    /// it, else started as usual: where the plan launches (`not_attached`), or the attach did
    /// not profile the copy (its line then added to cmd.txt). A copy not attached to is
    /// stopped before ncu starts the workload again.
    fn first_profile(
        &self,
        ctx: &Ctx,
        plan: &NcuPlan,
        watch: &Watch,
        warnings: &mut Vec<String>,
    ) -> Result<(Outcome, Option<EarlyStart>), Error> {
        let held = self.early.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(held) = held else {
            return Ok((self.profile(ctx, plan, &plan.profile, watch)?, None));
        };
        let (why, held_after_s) = match (&plan.not_attached, &plan.attach) {
            (Some(why), _) => {
                let at = held.busy_until_s();
                drop(held);
                (why.clone(), at)
            }
            (None, Some((_, attach))) => {
                // ncu says it listens as soon as it starts: a launch silent this long will not.
                let limit = ctx.cfg.ncu_timeout().unwrap_or(early::LISTEN_LIMIT);
                let (attached, at) =
                    held.attach(limit, attach, |a| self.profile(ctx, plan, a, watch))?;
                let why = match attached {
                    Ok(out) => {
                        let rec = EarlyStart {
                            held_after_s: Some(at),
                            attached: true,
                        };
                        return Ok((out, Some(rec)));
                    }
                    Err(early::NotAttached::Refused(line)) => {
                        format!("ncu would not attach with these options ({line})")
                    }
                    Err(early::NotAttached::Stopped(why)) => {
                        format!("the workload held for it was {why}")
                    }
                    Err(early::NotAttached::Ended) => {
                        "the workload held for it ended before ncu attached (see ncu/workload.log)"
                            .to_string()
                    }
                };
                if crate::passes::signals::interrupted() {
                    return Err(Error::Interrupted(
                        "before ncu attached to the held workload".into(),
                    ));
                }
                let _ = append_cmd_txt(
                    &ctx.workload.env,
                    &ctx.run.ncu("cmd.txt"),
                    &with_env(&plan.env, plan.profile.clone()),
                );
                (why, at)
            }
            // The plan launches for its own reasons (a bound, a launcher): no word needed.
            (None, None) => {
                drop(held);
                return Ok((self.profile(ctx, plan, &plan.profile, watch)?, None));
            }
        };
        let why = format!("ncu pass: {why}; starting the workload under ncu as usual");
        tracing::warn!("{why}");
        warnings.push(why);
        let rec = EarlyStart {
            held_after_s: Some(held_after_s),
            attached: false,
        };
        Ok((self.profile(ctx, plan, &plan.profile, watch)?, Some(rec)))
    }

    /// Run ncu once with `argv`.
    fn profile(
        &self,
        ctx: &Ctx,
        plan: &NcuPlan,
        argv: &[String],
        watch: &Watch,
    ) -> Result<Outcome, Error> {
        let mut spec = ctx.spec(
            Path::new(&argv[0]),
            argv[1..].to_vec(),
            ctx.run.ncu("ncu.log"),
        );
        spec.env.extend(plan.env.iter().cloned());
        spec.timeout = ctx.cfg.ncu_timeout();
        spec.on_line = Some(watch.hook.clone());
        spec.soft_stop = plan.bound.as_ref().map(|b| process::SoftStop {
            flag: watch.stop.clone(),
            after: b.budget,
        });
        process::run(&spec).map_err(|e| Error::start(&argv[0], e))
    }

    /// The three independent reads of one report (raw CSV, mangled names, sections), side by
    /// side; a failed raw import fails the pass, the others warn.
    fn imports(&self, ctx: &Ctx, plan: &NcuPlan, st: &mut PassStatus) {
        let rep = &plan.report;
        let step = |args: Vec<String>, stdout: PathBuf| {
            let mut s = ctx.spec(&self.program(), args, ctx.run.ncu("ncu.log"));
            s.echo = false;
            s.stdout_file = Some(stdout);
            s.timeout = Some(crate::passes::nsys::post_step_timeout(
                ctx.cfg.ncu.timeout_s,
            ));
            run_step(&s)
        };
        let (raw, mangled, sections) = std::thread::scope(|scope| {
            let raw = scope.spawn(|| step(import_args(rep), ctx.run.ncu_raw(&plan.base)));
            let mangled = scope.spawn(|| {
                step(
                    import_mangled_args(rep),
                    ctx.run.ncu_raw_mangled(&plan.base),
                )
            });
            let sections =
                scope.spawn(|| step(vec!["--list-sections".into()], ctx.run.ncu("sections.txt")));
            let join = |h: std::thread::ScopedJoinHandle<'_, Result<Outcome, String>>| {
                h.join()
                    .unwrap_or_else(|_| Err("import thread panicked".to_string()))
            };
            (join(raw), join(mangled), join(sections))
        });
        if let Err(why) = raw {
            if st.state == PassState::Ok {
                let (duration, warnings) = (st.duration_s, std::mem::take(&mut st.warnings));
                // A Ctrl-C during the import is the user's stop, not a tool failure.
                *st = match crate::passes::signals::interrupted() {
                    true => PassStatus::new(
                        PassState::Interrupted,
                        Some(format!(
                            "interrupted while importing the report ({}); the report is kept",
                            plan.report.display()
                        )),
                    ),
                    false => PassStatus::failed(Cause::Tool, Some(why.clone())),
                };
                if st.state == PassState::Interrupted {
                    st.warnings.push(why);
                }
                st.duration_s = duration;
                st.warnings = warnings;
            } else {
                st.warnings.push(why);
            }
        }
        st.warnings.extend(mangled.err());
        st.warnings.extend(sections.err());
    }
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
        held: false,
    }
}

/// The ranks ncu profiles (rank 0 unless `ncu.ranks` names others).
fn profiled_ranks(cfg: &Config) -> Vec<u32> {
    if cfg.ncu.ranks.is_empty() {
        vec![0]
    } else {
        cfg.ncu.ranks.clone()
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
        crate::analysis::select::range_never_ran(ctx.cfg, ctx.run).map(|why| {
            tracing::warn!("{why}");
            PassStatus::skipped(&format!("not run: {why}"))
        })
    }

    fn plan(&self, ctx: &Ctx) -> Result<NcuPlan, Error> {
        use crate::analysis::nvtx::{include_and_base, style_for};
        let (include, base, warning) = include_and_base(ctx.cfg, style_for(ctx.cfg, ctx.run));
        if let Some(w) = warning {
            tracing::warn!("{w}");
        }
        let launcher = ctx.cfg.workload.launcher;
        let multi = launcher != Launcher::None;
        let ranks = profiled_ranks(ctx.cfg);
        let report = if multi && ranks.len() > 1 {
            ctx.run.ncu(&format!("{base}.rank{}.ncu-rep", ranks[0]))
        } else {
            ctx.run.ncu_report(&base)
        };
        let collect = metrics_to_collect(&ctx.cfg.ncu, self.known_metrics.as_deref());
        // The range whose launches in the nsys export name ncu's kernels: nsys's own, or ncu's
        // when the capture ran on into it.
        let range = match crate::analysis::same_range(ctx.cfg) {
            true => crate::rundir::status::NsysRecord::from_config(&ctx.cfg.nsys).range,
            false => crate::analysis::select::range_in_export(ctx.cfg, ctx.run),
        };
        // Each kernel's launch configurations in that range (the whole capture when nsys's
        // range is ncu's and no range is named), for the shapes ncu measures and the cache.
        let shapes = (crate::analysis::same_range(ctx.cfg) || range.is_some())
            .then(|| read_shapes(ctx, range.as_deref()))
            .flatten();
        let step = step::plan(
            ctx,
            &self.program(),
            (include.as_deref(), range.as_deref()),
            &base,
            self.device.as_ref(),
        );
        // The cache is looked up before the selection, which then prefers what it holds.
        // Without a kernel list of ncu's range in the export there is nothing to look up.
        let lookup = match (
            reuse::unusable(ctx, self.device.as_ref()),
            &self.device,
            &shapes,
        ) {
            (None, Some(device), Some(shapes)) => {
                reuse::Lookup::new(ctx, &collect, device.clone(), shapes.clone())
            }
            (None, _, _) => None,
            (Some(why), _, _) => {
                tracing::info!("ncu metrics cache {why}");
                None
            }
        };
        let holds = lookup.as_ref().map(|l| move |m: &str| l.holds(m));
        let chosen = crate::analysis::select::kernel_filter(
            ctx.cfg,
            ctx.run,
            holds.as_ref().map(|f| f as &dyn Fn(&str) -> bool),
        );
        let shape_plan = shape_plan(ctx.cfg, shapes.as_ref(), chosen.as_ref());
        let per_shape = shape_plan.as_ref().is_some_and(|p| p.every_shape);
        let (reuse, filter) = match lookup {
            Some(l) => l.split(chosen, per_shape),
            None => (None, chosen),
        };
        let hits = reuse.as_ref().map_or(0, |r| r.hits.len());
        let to_profile = filter.as_ref().map(KernelFilter::len);
        let nothing_left = hits > 0 && to_profile == Some(0);
        // Per shape, ncu cannot tell when the last one has come: the workload runs to its end.
        let launches = match per_shape {
            true => Launches::EveryShape,
            false if !multi && ctx.cfg.ncu.stop_when_done && to_profile.is_some() => {
                Launches::FirstThenStop
            }
            false => Launches::First,
        };
        let stop_early = launches == Launches::FirstThenStop;
        // Launches ncu profiles: one per kernel, or one per shape of each kernel.
        let profiles = to_profile.map(|n| match (per_shape, &filter, &shapes) {
            (true, Some(KernelFilter::Mangled(names)), Some(s)) => {
                names.iter().map(|m| s.of(m).len().max(1)).sum()
            }
            _ => n,
        });
        if let Some(p) = &shape_plan {
            tracing::info!("{}", p.describe());
        }
        let bound = (launches == Launches::EveryShape).then(|| {
            let per_kernel = ctx.cfg.ncu.instances_per_kernel.max(1) as usize;
            Bound::new(&ctx.cfg.ncu, profiles.map(|p| p * per_kernel), multi)
        });
        // A bounded pass profiles at most its bound.
        let profiles = profiles.map(|n| bound.as_ref().map_or(n, |b| n.min(b.launches)));
        // A held workload is attached to unless the pass must launch ncu itself: a launcher's
        // ranks, nothing to profile, a bound it stops as a Ctrl-C would (known of a launched
        // ncu only), or kernels in more than one process.
        let attachable = self.held(|_| ()).is_some() && !(multi || nothing_left || bound.is_some());
        let not_attached = match attachable {
            true => early::one_process(ctx).err(),
            false => None,
        };
        let attachable = attachable && not_attached.is_none();
        // What the nsys pass measured of the workload, read once for both predictions.
        let basis = cost::Basis {
            held: attachable,
            ..nsys_basis(ctx)
        };
        let cost = profiles.map(|n| {
            let learned = reuse
                .as_ref()
                .and_then(|r| cost::load(&cost_model_path(ctx, r)));
            cost::plan(
                learned.as_ref(),
                n,
                hits,
                collect.set.as_deref(),
                basis,
                stop_early || bound.as_ref().is_some_and(|b| b.all_known),
            )
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
            let learned = reuse
                .as_ref()
                .and_then(|r| cost::load(&cost_model_path(ctx, r)));
            s.eta_s = Some(cost::step_s(
                learned.as_ref(),
                basis,
                s.choice.work.workloads(),
                s.early.is_some(),
            ));
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
        let mut warnings = Vec::new();
        if let Some(r) = &plan.reuse {
            if let Err(e) = reuse::record_hits(ctx, r) {
                warnings.push(e);
            }
        }
        match &plan.cost {
            Some(c) if c.kernels == 0 => tracing::info!(
                "ncu plan: no kernel to profile ({} from the metrics cache)",
                c.cached
            ),
            Some(c) => tracing::info!(
                "ncu plan: {} kernels to profile ({} from the metrics cache), {} passes each, about {:.0} s ({})",
                c.kernels, c.cached, c.passes_per_kernel, c.predicted_s, c.basis
            ),
            None => {}
        }
        if plan.nothing_left {
            let mut st = PassStatus::new(
                PassState::Ok,
                Some(format!(
                    "ncu not run: all {} chosen kernels are in the metrics cache",
                    plan.reuse.as_ref().map_or(0, |r| r.hits.len())
                )),
            );
            st.duration_s = Some(0.0);
            st.warnings = warnings;
            st.ncu = Some(self.outcome_record(plan, None, 0));
            self.remember(ctx, plan, true, false);
            graph_step(ctx, plan, progress, &mut st, None);
            return Ok(st);
        }
        let watch = Watch::new(progress, plan);
        let stopping = early::Stopping;
        let step_held = plan.step.as_ref().and_then(|s| step::hold(ctx, s));
        let (mut out, early_start) = self.first_profile(ctx, plan, &watch, &mut warnings)?;
        let mut duration = out.duration;
        let filtered = plan.filter.as_ref().is_some_and(|f| !f.is_empty());
        // A workload that failed is not run again without the filter: it would fail again.
        if filtered
            && out.tail.contains(NO_KERNELS)
            && app_error_code(&out.tail).is_none()
            && !process::nonempty(&plan.report)
            && stopped(&out, "ncu").is_none()
        {
            let why =
                "ncu profiled no kernel with the top-kernel filter; profiling again without it";
            tracing::warn!("{why}");
            warnings.push(why.to_string());
            let _ = append_cmd_txt(
                &ctx.workload.env,
                &ctx.run.ncu("cmd.txt"),
                &with_env(&plan.env, plan.unfiltered.clone()),
            );
            out = self.profile(ctx, plan, &plan.unfiltered, &watch)?;
            duration += out.duration;
        }
        let have_report = process::nonempty(&plan.report);
        let mut st = classify(&out, have_report, filtered);
        let bounded = match (&plan.bound, out.soft_stopped && have_report) {
            (Some(b), true) if !out.interrupted && !out.timed_out => {
                Some(b.reason(watch.done().len(), out.duration))
            }
            _ => None,
        };
        if let Some(why) = &bounded {
            tracing::info!("{why}");
            st = PassStatus::new(PassState::Ok, Some(why.clone()));
        }
        st.duration_s = Some(duration.as_secs_f64());
        st.warnings.extend(warnings);
        let actual = plan.cost.as_ref().map(|c| {
            let held = early_start.as_ref().is_some_and(|e| e.attached);
            let (actual, model) =
                cost::measure(c, &watch.done(), out.duration, &ctx.run.id(), held);
            if let (Some(m), Some(r)) = (model, &plan.reuse) {
                let _ = cost::save(&cost_model_path(ctx, r), &m);
            }
            actual
        });
        if let Some(a) = &actual {
            tracing::info!(
                "ncu profiled {} kernels in {:.0} s{}",
                a.kernels,
                a.s,
                a.prediction_error_pct
                    .map(|e| format!(" (predicted {:+.0}% off)", e))
                    .unwrap_or_default()
            );
        }
        let mut stored = 0;
        if have_report {
            progress.stage("importing the report");
            self.imports(ctx, plan, &mut st);
            if let (Some(r), PassState::Ok) = (&plan.reuse, st.state) {
                stored = reuse::store(
                    ctx,
                    r,
                    &ctx.run.ncu_raw(&plan.base),
                    &ctx.run.ncu_raw_mangled(&plan.base),
                );
            }
        }
        let stored_all = st.state == PassState::Ok && bounded.is_none() && stored > 0;
        st.ncu = Some(self.outcome_record(plan, actual, stored));
        if let Some(r) = st.ncu.as_mut() {
            r.stopped_early = plan.stop_early && out.tail.contains(STOPPED_EARLY);
            r.bounded = bounded;
            r.early_start = early_start;
        }
        self.remember(ctx, plan, false, stored_all);
        stopping.join();
        graph_step(ctx, plan, progress, &mut st, step_held);
        Ok(st)
    }

    fn diagnose(&self, ctx: &Ctx, _st: &PassStatus) -> Option<String> {
        let wanted = ctx.cfg.ncu.nvtx_include.clone().unwrap_or_default();
        let ranges = diagnose::ranges_for(ctx, self.nsys.as_deref(), &wanted)?;
        Some(diagnose::describe(&ranges, &wanted))
    }

    fn record(&self, plan: &NcuPlan, st: &mut PassStatus) {
        // execute() records the outcome (cost, cache); a pass that did not run gets the plan's.
        if st.ncu.is_none() {
            st.ncu = Some(self.outcome_record(plan, None, 0));
        }
    }
}

/// The planned graph step, after a pass that went well (a failed or interrupted one would
/// fail or stop it the same way); its record joins the pass's.
/// `held`: its copy of the workload, held since the kernel pass began (dropped, so stopped,
/// where the step does not run).
fn graph_step(
    ctx: &Ctx,
    plan: &NcuPlan,
    progress: &Progress,
    st: &mut PassStatus,
    held: Option<early::Held>,
) {
    let Some(s) = &plan.step else { return };
    if st.state != PassState::Ok || crate::passes::signals::interrupted() {
        return;
    }
    let rec = step::run(ctx, s, progress, held);
    if let Some(d) = rec.duration_s {
        st.duration_s = Some(st.duration_s.unwrap_or(0.0) + d);
    }
    if rec.state == GraphStepState::NotMeasured {
        st.warnings.extend(
            rec.note
                .as_ref()
                .map(|n| format!("graph step not measured: {n}")),
        );
    }
    if let Some(r) = st.ncu.as_mut() {
        r.graph_step = Some(rec);
    }
}

/// ncu's line when it ends the workload after the last requested kernel (`--kill on`).
const STOPPED_EARLY: &str = "==PROF== Trying to shutdown target application";

/// The cost model of this workload on this GPU with these settings, in the cache folder.
fn cost_model_path(ctx: &Ctx, r: &reuse::Reuse) -> PathBuf {
    let identity = format!(
        "{:?}|{}|{}",
        r.device,
        r.settings,
        ctx.workload.argv.join("\u{1f}")
    );
    cost::model_path(&r.cache.dir, &identity)
}

impl NcuPass {
    /// Tell the next run of this workload whether the metrics cache should answer it (see
    /// `warm`); only where the cache is used.
    fn remember(&self, ctx: &Ctx, plan: &NcuPlan, nothing_left: bool, stored_all: bool) {
        if plan.reuse.is_none() {
            return;
        }
        if let Some(path) = warm::path(ctx.cfg) {
            let last = warm::Last {
                cache_answers: warm::next(nothing_left, stored_all, self.warm.is_some()),
                run: ctx.run.id(),
            };
            warm::remember(&path, &last);
        }
    }

    /// What status.json keeps of a pass beyond its state.
    fn outcome_record(
        &self,
        plan: &NcuPlan,
        actual: Option<cost::Actual>,
        stored: usize,
    ) -> NcuRecord {
        NcuRecord {
            include: plan.include.clone(),
            base: plan.base.clone(),
            set: plan.collect.set.clone(),
            metrics: plan.collect.metrics.len(),
            stopped_early: false,
            bounded: None,
            cost: plan.cost.clone(),
            actual,
            cache: plan.reuse.as_ref().map(|r| NcuCacheUse {
                dir: r.cache.dir.display().to_string(),
                hits: r.hits.len(),
                stale: r.stale,
                stored,
            }),
            shapes: plan.shapes.clone(),
            graph_step: None,
            second_gpu: self.second_gpu.clone(),
            early_start: None,
            warm_expected: self.warm.clone(),
        }
    }
}

#[cfg(test)]
mod tests;

mod args;
pub(crate) mod cache;
pub(crate) mod cost;
pub(crate) mod early;
mod outcome;
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
