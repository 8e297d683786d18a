//! The loop around the captured range (analysis::cadence): how often it recurs, its share of
//! the loop, and, where it holds less than rules::LOOP_SHARE of it, the loop's verdict.

use super::super::{Claim, Figure, Findings, LoopPart, Quantity, Scope};
use crate::analysis::cadence::LoopFigures;
use crate::analysis::Artifacts;
use crate::rules;

/// Parts of the time between instances named: at most this many, each at least
/// [`PART_MIN_PCT`] of that time.
const PARTS_NAMED: usize = 4;
const PART_MIN_PCT: f64 = 5.0;

/// The loop's figures, over the steady instances' cycles where a warm-up or compiling
/// instances are set apart, with that group.
fn figures(a: &Artifacts) -> Option<(LoopFigures, Option<&crate::analysis::instances::Group>)> {
    let lp = a.cycle.as_ref()?;
    let steady = a.steady_group(&lp.range);
    Some((lp.figures(steady.map(|g| g.members.as_slice()))?, steady))
}

/// The loop of `range` where it decides the range's verdict (rules::LOOP_SHARE): the
/// per-instance and per-token figures are then the loop's too.
pub(super) fn deciding(a: &Artifacts, range: &str) -> Option<LoopFigures> {
    a.cycle.as_ref().filter(|l| l.range == range)?;
    figures(a)
        .map(|(f, _)| f)
        .filter(|f| f.range_share_pct < rules::LOOP_SHARE.threshold)
}

/// Where the loop decides `range`'s verdict: the GPU's busy share of the loop, and what the
/// thread spends the largest part of the time between instances on (None: another range).
pub(super) fn loop_verdict(
    a: &Artifacts,
    range: &str,
) -> Option<(f64, Option<crate::findings::CpuVerdict>)> {
    use crate::findings::CpuVerdict;
    let f = deciding(a, range)?;
    let why = between(&f).first().and_then(|(p, _)| match p {
        LoopPart::Sync => Some(CpuVerdict::Sync),
        LoopPart::Launch => Some(CpuVerdict::Launch),
        LoopPart::OtherApi => Some(CpuVerdict::CudaCall),
        LoopPart::Compile => Some(CpuVerdict::Compile),
        LoopPart::Own => Some(CpuVerdict::Cpu),
        LoopPart::Range(_) => None,
    });
    Some((f.busy_pct, why))
}

pub(super) fn cycle(a: &Artifacts, out: &mut Findings) {
    let Some(lp) = &a.cycle else { return };
    let Some((f, steady)) = figures(a) else {
        return;
    };
    let mut scope = Scope::range(&lp.range);
    if let Some(g) = steady {
        scope = scope.group(&g.label);
    }
    let fig = |q, v| Figure::new(q, v, &a.sqlite_file, &scope);
    let evidence = vec![
        fig(Quantity::CycleMs, f.median_cadence_ns / 1e6),
        fig(Quantity::Cycles, f.cycles as f64),
        fig(Quantity::RangeShareOfCyclePct, f.range_share_pct),
        fig(Quantity::GpuBusyOfCyclePct, f.busy_pct),
    ];
    let decides = f.range_share_pct < rules::LOOP_SHARE.threshold;
    out.push(
        Claim::Loop {
            decides,
            gpu_bound: f.busy_pct >= rules::GPU_IDLE.threshold,
            between: between(&f),
        },
        scope.clone(),
        // A fact where the range holds most of its loop: no rule decided anything.
        decides.then_some(rules::LOOP_SHARE),
        evidence,
    );
}

/// The largest parts of the time between instances, in ms per cycle, largest first.
fn between(f: &LoopFigures) -> Vec<(LoopPart, f64)> {
    let b = &f.between;
    let mut parts: Vec<(LoopPart, i64)> = vec![
        (LoopPart::Sync, b.sync_ns),
        (LoopPart::Launch, b.launch_ns),
        (LoopPart::OtherApi, b.other_api_ns),
        (LoopPart::Compile, b.compile_ns),
        (LoopPart::Own, b.rest_ns),
    ];
    parts.extend(
        f.between_children
            .iter()
            .map(|(n, ns)| (LoopPart::Range(n.clone()), *ns)),
    );
    let gap = b.wall_ns.max(1) as f64;
    parts.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    let n = f.cycles.max(1) as f64;
    parts
        .into_iter()
        .filter(|(_, ns)| 100.0 * *ns as f64 / gap >= PART_MIN_PCT)
        .take(PARTS_NAMED)
        .map(|(what, ns)| (what, ns as f64 / n / 1e6))
        .collect()
}
