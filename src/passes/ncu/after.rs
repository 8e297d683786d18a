//! What the ncu pass does around its profile: the plan line, the report's imports (raw CSV,
//! mangled names, sections), the cost measured against the prediction and remembered, and
//! what status.json and the next run keep of it.

use super::*;

impl NcuPass {
    /// The three independent reads of one report (raw CSV, mangled names, sections), side by
    /// side; a failed raw import fails the pass, the others warn.
    pub(super) fn imports(&self, ctx: &Ctx, plan: &NcuPlan, st: &mut PassStatus) {
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

    /// The report's imports, and what ncu measured stored in the metrics cache where the pass
    /// went well.
    pub(super) fn keep(
        &self,
        ctx: &Ctx,
        plan: &NcuPlan,
        st: &mut PassStatus,
        progress: &Progress,
    ) -> reuse::Stored {
        if !process::nonempty(&plan.report) {
            return reuse::Stored::default();
        }
        progress.stage("importing the report");
        self.imports(ctx, plan, st);
        match (&plan.reuse, st.state) {
            (Some(r), PassState::Ok) => reuse::store(
                ctx,
                r,
                &ctx.run.ncu_raw(&plan.base),
                &ctx.run.ncu_raw_mangled(&plan.base),
            ),
            _ => reuse::Stored::default(),
        }
    }

    /// Tell the next run of this workload whether the metrics cache should answer it (see
    /// `warm`); only where the cache is used.
    pub(super) fn remember(&self, ctx: &Ctx, plan: &NcuPlan, nothing_left: bool, stored_all: bool) {
        if plan.reuse.is_none() {
            return;
        }
        if let Some(path) = warm::path(ctx.cfg) {
            let last = warm::Last {
                cache_answers: warm::next(nothing_left, stored_all, self.warm().is_some()),
                run: ctx.run.id(),
            };
            warm::remember(&path, &last);
        }
    }

    /// What status.json keeps of a pass beyond its state.
    pub(super) fn outcome_record(
        &self,
        plan: &NcuPlan,
        actual: Option<cost::Actual>,
        stored: usize,
    ) -> NcuRecord {
        NcuRecord {
            include: plan.include.clone(),
            range: plan.ncu_range.clone(),
            same_as_capture: Some(plan.same),
            base: plan.base.clone(),
            set: plan.collect.set.clone(),
            metrics: plan.collect.metrics.len(),
            stopped_early: false,
            bounded: None,
            budget: None,
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
            warm_expected: self.warm(),
        }
    }
}

/// The plan line: what ncu will profile and what it should cost.
pub(super) fn log_plan(plan: &NcuPlan) {
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
}

/// What the pass cost against its prediction, said once and remembered for the next one.
pub(super) fn measure_cost(
    ctx: &Ctx,
    plan: &NcuPlan,
    watch: &Watch,
    out: &Outcome,
    held: bool,
) -> Option<cost::Actual> {
    let c = plan.cost.as_ref()?;
    let (actual, model) = cost::measure(c, &watch.done(), out.duration, &ctx.run.id(), held);
    if let (Some(m), Some(r)) = (model, &plan.reuse) {
        let _ = cost::save(&cost_model_path(ctx, r), &m);
    }
    tracing::info!(
        "ncu profiled {} kernels in {:.0} s{}",
        actual.kernels,
        actual.s,
        actual
            .prediction_error_pct
            .map(|e| format!(" (predicted {:+.0}% off)", e))
            .unwrap_or_default()
    );
    Some(actual)
}
