//! Which launches the ncu pass profiles, within what bound and at what predicted cost: a
//! budget its learned pace overruns leaves kernels for the next run, and the graph step gets
//! its own prediction and bound.

use super::{cost, step, Bound, Collect, Ctx, KernelFilter, Launches};
use crate::config::{Config, Ncu};

/// Which launches ncu profiles (each chosen kernel's first, stopped after the last where it
/// can be; or one of each launch configuration, within a bound), how many (None: not known
/// before ncu runs), and the bound.
pub(super) fn which_launches(
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
/// would leave out whichever come last, large or small. Returns how many were deferred, and
/// how many ncu is given.
fn defer_past_budget(
    launches: Launches,
    filter: Option<&mut KernelFilter>,
    learned: Option<&cost::Model>,
    held: bool,
    budget: Option<std::time::Duration>,
) -> Option<(usize, usize)> {
    let f = filter.filter(|_| matches!(launches, Launches::First | Launches::FirstThenStop))?;
    let n = cost::affordable(learned, held, f.len(), budget)?;
    let left = f.len() - n;
    f.truncate(n);
    Some((left, n))
}

/// `ncu.budget_s` (see [`Bound::time`]) for a pass that starts the workload again
/// (`launched`): ncu must reach its range, which the nsys pass reached at its first instance
/// (at the capture's start when nsys's range is ncu's; later when nsys captured the whole run).
pub(super) fn time_bound(
    cfg: &Ncu,
    basis: cost::Basis,
    launched: bool,
    multi: bool,
) -> Option<Bound> {
    let restart = launched.then(|| basis.range_reached_s()).flatten();
    Bound::time(cfg, basis.pass_s, restart, multi)
}

/// The predicted cost of the pass (None: the number of launches is not known before ncu
/// runs) at the pace an earlier run measured (`pace`), within its budget; where that pace
/// overruns the budget, the kernels left for the next run are cut from `filter` and said.
pub(super) fn predict(
    (basis, learned): (cost::Basis, Option<&cost::Model>),
    (launches, profiles, bound): (Launches, Option<usize>, Option<&Bound>),
    filter: Option<&mut KernelFilter>,
    hits: usize,
    collect: &Collect,
) -> Option<cost::Plan> {
    let budget = bound.and_then(|b| b.budget);
    let all_known = launches == Launches::FirstThenStop || bound.is_some_and(|b| b.all_known);
    let (profiles, deferred) =
        match defer_past_budget(launches, filter, learned, basis.held, budget) {
            Some((left, given)) => (Some(given), Some(left)),
            None => (profiles, None),
        };
    let set = collect.set.as_deref();
    let mut c = cost::within(
        cost::plan(learned, profiles?, hits, set, basis, all_known),
        budget,
    );
    if let Some(left) = deferred {
        c.deferred = left;
        c.basis = format!(
            "{}; its time budget affords the {} largest of the {} kernels at that pace, {left} left for the next run",
            c.basis,
            c.kernels,
            c.kernels + left
        );
    }
    Some(c)
}

/// The graph step's last decisions, once the kernel pass's are made: its own copy held from
/// the kernel pass's start where that pass attaches to one (`attached`), its predicted time,
/// and its bound.
pub(super) fn finish_step(
    ctx: &Ctx,
    mut s: step::StepPlan,
    attached: bool,
    (basis, learned): (cost::Basis, Option<&cost::Model>),
    multi: bool,
) -> step::StepPlan {
    if s.hit.is_some() {
        return s;
    }
    if attached {
        s.early = step::hold_plan(&s.argv, &ctx.workload.argv, &ctx.workload.env);
    }
    let held = s.early.is_some();
    s.eta_s = Some(cost::step_s(
        learned,
        basis,
        s.choice.work.workloads(),
        held,
    ));
    // Bounded as the kernel pass is (seen on an H100: a torch.compile loop's step never
    // reached its instance and ran the workload to its end under ncu, 310 s); launched, it
    // gets its time to ncu's range on top.
    s.budget = time_bound(&ctx.cfg.ncu, basis, !held, multi)
        .and_then(|b| Some((b.budget?, b.budget_from)));
    s
}
