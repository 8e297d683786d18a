//! The ncu pass's launch: the planned profile attached to the held workload, or ncu starting
//! the workload as usual (the held copy stopped first, with a word where that needs one), and
//! the retry without the kernel filter where the filter matched nothing.

use std::time::Duration;

use super::*;

/// What the launch hands on: ncu's outcome (the retry's, where there was one), how long the
/// profiles took in all, how the held workload was used, and what to warn of.
pub(super) struct Launched {
    pub(super) out: Outcome,
    pub(super) duration: Duration,
    pub(super) early_start: Option<EarlyStart>,
    pub(super) warnings: Vec<String>,
}

impl Launched {
    /// The pass profiled the held workload (its cost is an attach's).
    pub(super) fn attached(&self) -> bool {
        self.early_start.as_ref().is_some_and(|e| e.attached)
    }
}

/// What became of the held workload.
enum Attach {
    /// The attach profiled it: the outcome, and when it was held (s from its start).
    Done(Outcome, f64),
    /// Not profiled: why, and when it was held.
    Fallback(String, f64),
    /// The plan launches for its own reasons (a bound, a launcher): no word needed.
    Unplanned,
}

impl NcuPass {
    /// The planned profile, then the retry without the filter where it matched nothing.
    pub(super) fn launch(
        &self,
        ctx: &Ctx,
        plan: &NcuPlan,
        watch: &Watch,
    ) -> Result<Launched, Error> {
        let mut warnings = Vec::new();
        let attach = match self.take_held() {
            Some(held) => self.attach(ctx, plan, watch, held)?,
            None => Attach::Unplanned,
        };
        let early_start = |at, attached| {
            Some(EarlyStart {
                held_after_s: Some(at),
                attached,
            })
        };
        let (mut out, early_start) = match attach {
            Attach::Done(out, at) => (out, early_start(at, true)),
            Attach::Unplanned => (self.profile(ctx, plan, &plan.profile, watch)?, None),
            Attach::Fallback(why, at) => {
                let why = format!("ncu pass: {why}; starting the workload under ncu as usual");
                tracing::warn!("{why}");
                warnings.push(why);
                let out = self.profile(ctx, plan, &plan.profile, watch)?;
                (out, early_start(at, false))
            }
        };
        let mut duration = out.duration;
        if retry_unfiltered(plan, &out) {
            let why =
                "ncu profiled no kernel with the top-kernel filter; profiling again without it";
            tracing::warn!("{why}");
            warnings.push(why.to_string());
            self.add_to_cmd_txt(ctx, plan, &plan.unfiltered);
            out = self.profile(ctx, plan, &plan.unfiltered, watch)?;
            duration += out.duration;
        }
        Ok(Launched {
            out,
            duration,
            early_start,
            warnings,
        })
    }

    /// The held workload attached to where the plan says so and ncu holds it; a copy not
    /// attached to is stopped (dropped) before ncu starts the workload again, and the usual
    /// line that will run is added to cmd.txt where the attach did not profile it.
    fn attach(
        &self,
        ctx: &Ctx,
        plan: &NcuPlan,
        watch: &Watch,
        held: early::Held,
    ) -> Result<Attach, Error> {
        let Some((_, attach)) = plan.attach.as_ref().filter(|_| plan.not_attached.is_none()) else {
            let at = held.busy_until_s();
            return Ok(match &plan.not_attached {
                Some(why) => Attach::Fallback(why.clone(), at),
                None => Attach::Unplanned,
            });
        };
        // ncu says it listens as soon as it starts: a launch silent this long will not.
        let limit = ctx.cfg.ncu_timeout().unwrap_or(early::LISTEN_LIMIT);
        let (attached, at) = held.attach(limit, attach, |a| self.profile(ctx, plan, a, watch))?;
        let why = match attached {
            Ok(out) => return Ok(Attach::Done(out, at)),
            Err(not) => not.said("ncu/workload.log"),
        };
        if crate::passes::signals::interrupted() {
            return Err(Error::Interrupted(
                "before ncu attached to the held workload".into(),
            ));
        }
        self.add_to_cmd_txt(ctx, plan, &plan.profile);
        Ok(Attach::Fallback(why, at))
    }

    /// One more line of the pass in cmd.txt (a failure to write it is no failure of the pass).
    fn add_to_cmd_txt(&self, ctx: &Ctx, plan: &NcuPlan, argv: &[String]) {
        let _ = append_cmd_txt(
            &ctx.workload.env,
            &ctx.run.ncu("cmd.txt"),
            &with_env(&plan.env, argv.to_vec()),
        );
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
}

/// ncu profiled nothing with the top-kernel filter: the pass profiles again without it. Not
/// where the workload failed (it would fail again), ncu was stopped, or it wrote a report.
fn retry_unfiltered(plan: &NcuPlan, out: &Outcome) -> bool {
    plan.filter.as_ref().is_some_and(|f| !f.is_empty())
        && out.tail.contains(NO_KERNELS)
        && app_error_code(&out.tail).is_none()
        && !process::nonempty(&plan.report)
        && stopped(out, "ncu").is_none()
        && !out.soft_stopped
}
