//! The rules applied to a run's figures: one function per subject, each adding the findings
//! its figures support (and the ones it abstains from) in the order the reports read them.

mod batching;
mod census;
mod copies;
mod coverage;
mod cycle;
mod groups;
mod kernels;
mod levers;
mod missing;
mod ranges;
mod roles;
mod run;
mod sampled;
mod scaling;
mod sized;
mod spec;
mod steps;
mod sure;

use super::{Claim, Finding, Findings, Quantity, Role, Scope};
use crate::analysis::Artifacts;

/// Every finding; range verdicts for the ranges `listed` (the tables' rows: a run with 73k
/// range names would otherwise carry 73k verdicts nobody reads).
pub(super) fn all(a: &Artifacts, listed: &super::listed::Listed) -> Findings {
    let mut out = Findings::default();
    kernels::totals(a, &mut out);
    ranges::captured(a, &mut out);
    ranges::phases(a, &mut out);
    ranges::per_token(a, &mut out);
    steps::tensor_peak(a, &mut out);
    census::census(a, &mut out);
    spec::speculation(a, &mut out);
    cycle::cycle(a, &mut out);
    groups::instances(a, &mut out);
    steps::work_kinds(a, &mut out);
    ranges::verdicts(a, listed, &mut out);
    run::ranks(a, &mut out);
    kernels::launch_calls(a, &mut out);
    coverage::coverage(a, &mut out);
    coverage::shapes(a, &mut out);
    ranges::measurement_cost(a, &mut out);
    sure::early_start(a, &mut out);
    sure::graph_nodes(a, &mut out);
    sure::bound_over_value(a, &mut out);
    kernels::launch_size(a, &mut out);
    kernels::bounds(a, &mut out);
    roles::attention(a, &mut out);
    roles::fp8(a, &mut out);
    withhold_kernel_advice(a, &mut out);
    missing::capture_missing(a, &mut out);
    levers::levers(a, &mut out);
    run::passes(a, &mut out);
    run::nvidia(a, &mut out);
    run::nvidia_ncu(a, &mut out);
    let decided = out.made().any(|f| {
        matches!(f.role, Role::Verdict | Role::Advice | Role::Caveat)
            && !matches!(f.claim, Claim::RangeVerdict { .. })
    });
    if !decided {
        out.push(
            Claim::NothingStandsOut,
            super::Scope::capture(),
            None,
            vec![],
        );
    }
    tag_kernels(a, &mut out);
    out
}

/// Mark each figure's kernel that the tables tag, so that a sentence naming it tags it too.
fn tag_kernels(a: &Artifacts, out: &mut Findings) {
    for f in &mut out.0 {
        for e in &mut f.evidence {
            if let Some(k) = &e.scope.kernel {
                e.scope.tagged = a.kernel_tagged(k);
            }
        }
    }
}

/// Kernel advice where faster kernels cannot move the wall time (rules::KERNEL_ADVICE): each
/// such finding is withheld, with the busy share that says why.
fn withhold_kernel_advice(a: &Artifacts, out: &mut Findings) {
    let Some((busy, over)) = gpu_busy(a) else {
        return;
    };
    if busy >= crate::rules::KERNEL_ADVICE.threshold {
        return;
    }
    let range = over.range.clone();
    for f in out.0.iter_mut().filter(|f| f.abstain.is_none()) {
        let kernel_advice = matches!(
            f.claim,
            Claim::TinyKernels { .. }
                | Claim::SmallGrids
                | Claim::MemoryBound { .. }
                | Claim::ComputeBound { .. }
                | Claim::TensorCoresIdle
                | Claim::SampledBound { .. }
                | Claim::ReplayDiffers { .. }
                | Claim::Fp8Overhead
        ) && !launch_heavy(f);
        if kernel_advice && (f.scope.range == range || f.scope.range.is_none()) {
            f.abstain = Some(format!(
                "the GPU is busy {busy:.1}% of the time of `{}`{} (rule {}): faster kernels move its wall time by at most that share",
                over.range.as_deref().unwrap_or(""),
                over.group
                    .as_deref()
                    .map_or(String::new(), |g| format!(", {g}")),
                crate::rules::KERNEL_ADVICE.id
            ));
        }
    }
}

/// The captured range's GPU busy that kernel advice is weighed by: its loop's where the loop
/// decides, else its steady instances', else all of its instances' (NCCL waiting left out).
pub(super) fn gpu_busy(a: &Artifacts) -> Option<(f64, Scope)> {
    let name = a.focus.range()?;
    if let Some(l) = cycle::deciding(a, name) {
        return Some((l.busy_pct, Scope::range(name).group("over its loop")));
    }
    if let Some(g) = a.steady_group(name) {
        return Some((g.gpu_busy_of_range_pct?, Scope::range(name).group(&g.label)));
    }
    // Busy less NCCL's waiting for late ranks: a GPU that waits inside NCCL kernels does no work.
    let c = a.captured().filter(|c| c.name == name)?;
    Some((c.working_pct(), Scope::range(name)))
}

/// FP8 scaling that holds most of a step's launches: fusing it cuts the host's launch work
/// too, so a mostly idle GPU does not make it kernel-only advice.
fn launch_heavy(f: &Finding) -> bool {
    match (
        f.get(Quantity::ScaleChainLaunches),
        f.get(Quantity::StepLaunchesRead),
    ) {
        (Some(c), Some(all)) => matches!(f.claim, Claim::Fp8Overhead) && 2.0 * c >= all,
        _ => false,
    }
}
