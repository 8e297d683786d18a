//! Levers: what to change first and what it can buy, each sized per step from this run's
//! figures and ranked by that saving. A step is the captured range's instance, or its loop's
//! cycle where the loop decides (rules::LOOP_SHARE); the steady instances' where a warm-up or
//! compiling instances are set apart. What cannot move the wall time is no lever.

use super::super::{
    Claim, CpuVerdict, Figure, Findings, LeverKind, LoopPart, Quantity, Scope, StepBasis,
};
use crate::analysis::Artifacts;
use crate::model::Bound;
use crate::rules;

/// A step's time and what it is.
struct Step {
    ms: f64,
    scope: Scope,
    instances: f64,
    basis: StepBasis,
}

/// The time per step the levers are sized against.
fn step(a: &Artifacts, name: &str) -> Option<Step> {
    let c = a.captured().filter(|c| c.name == name)?;
    let n = a
        .range_stats
        .iter()
        .find(|r| r.name == name)
        .map_or(1, |r| r.instances.max(1)) as f64;
    let range = Scope::range(name);
    if let Some(l) = super::cycle::deciding(a, name) {
        return Some(Step {
            ms: l.median_cadence_ns / 1e6,
            scope: range.group("over its loop").instances(l.cycles),
            instances: n,
            basis: StepBasis::Loop,
        });
    }
    if let Some(g) = a.steady_group(name) {
        return Some(Step {
            ms: g.median_wall_ns / 1e6,
            scope: range.group(&g.label).instances(g.instances),
            instances: n,
            basis: StepBasis::Steady,
        });
    }
    Some(Step {
        ms: c.wall_ns.max(c.proj_ns.unwrap_or(0.0)) / n / 1e6,
        scope: range.instances(n as u64),
        instances: n,
        basis: StepBasis::Mean,
    })
}

pub(super) fn levers(a: &Artifacts, out: &mut Findings) {
    let Some(name) = a.capture().range().map(str::to_string) else {
        return;
    };
    let Some(step) = step(a, &name).filter(|s| s.ms > 0.0) else {
        return;
    };
    let busy = super::gpu_busy(a).map(|(b, _)| b);
    let mut ev = vec![Figure::new(
        Quantity::StepMs,
        step.ms,
        &a.sqlite_file,
        &step.scope,
    )];
    if let Some(b) = busy {
        ev.push(Figure::new(
            Quantity::GpuWorkOfStepPct,
            b,
            &a.sqlite_file,
            &step.scope,
        ));
    }
    out.push(
        Claim::Step { basis: step.basis },
        step.scope.clone(),
        None,
        ev,
    );
    let mut found: Vec<(LeverKind, f64)> = Vec::new();
    // Compiling: its measured cost, per step over every instance (the compiling ones are
    // what it costs; the steady ones would not pay it).
    let compile_ms = a.ledger_by_name().get(&name).map_or(0.0, |l| {
        l.total.compile_within_ns as f64 / step.instances / 1e6
    });
    found.push((LeverKind::Compile, compile_ms));
    if let Some(b) = busy.filter(|b| *b < rules::GPU_IDLE.threshold) {
        // The GPU waits the rest of the step: the most that moving host work off it buys
        // (its compiling counted once, above).
        let wait = step.ms * (1.0 - b / 100.0);
        let (verdict, from_graphs) = idle_verdict(a, out, &name);
        found.push((
            LeverKind::HostWork {
                verdict,
                from_graphs,
            },
            (wait - compile_ms).max(0.0),
        ));
    }
    if busy.is_some_and(|b| b >= rules::GPU_IDLE.threshold) {
        found.push((LeverKind::Bandwidth, bandwidth_ms(a, step.instances)));
    }
    if let Some(c) = a.captured().filter(|c| c.nccl_wait_ns > 0.0) {
        found.push((LeverKind::LateRank, c.nccl_wait_ns / step.instances / 1e6));
    }
    found.retain(|(_, ms)| 100.0 * ms / step.ms >= rules::LEVER_MIN_PCT);
    found.sort_by(|x, y| y.1.total_cmp(&x.1));
    for (rank, (kind, ms)) in found.into_iter().enumerate() {
        let fig = |q, v| Figure::new(q, v, &a.sqlite_file, &step.scope);
        out.push(
            Claim::Lever {
                lever: kind,
                rank: rank as u32 + 1,
            },
            step.scope.clone(),
            Some(rules::LEVER),
            vec![
                fig(Quantity::StepMs, step.ms),
                fig(Quantity::SavingMsPerStep, ms),
                fig(Quantity::SavingOfStepPct, 100.0 * ms / step.ms),
            ],
        );
    }
}

/// What the GPU waits for: the largest part of the time between instances where the loop
/// decides, else the ledger's verdict on the range; and whether its kernels already run from
/// CUDA graphs.
fn idle_verdict(a: &Artifacts, out: &Findings, name: &str) -> (Option<CpuVerdict>, bool) {
    let graphs = a.captured().is_some_and(|c| c.graph_kernels > 0);
    let of_range = |f: &&crate::findings::Finding| f.scope.range.as_deref() == Some(name);
    let verdict = out.made().filter(of_range).find_map(|f| match &f.claim {
        Claim::Loop {
            decides: true,
            between,
            ..
        } => Some(between.first().and_then(|(p, _)| match p {
            LoopPart::Sync => Some(CpuVerdict::Sync),
            LoopPart::Launch => Some(CpuVerdict::Launch),
            LoopPart::OtherApi => Some(CpuVerdict::CudaCall),
            LoopPart::Compile => Some(CpuVerdict::Compile),
            LoopPart::Own => Some(CpuVerdict::Cpu),
            LoopPart::Range(_) => None,
        })),
        Claim::GpuIdle { verdict, .. } => Some(*verdict),
        _ => None,
    });
    (verdict.flatten(), graphs)
}

/// Per step, the time memory-bound kernels spend beyond what their bandwidth use needs: a
/// kernel at X% of the DRAM peak saves at most (1 - X) of its time.
fn bandwidth_ms(a: &Artifacts, instances: f64) -> f64 {
    a.records
        .iter()
        .filter(|r| r.bound == Some(Bound::Memory))
        .filter_map(|r| {
            let dram = r.dram_throughput_pct?;
            Some(r.total_time_ns * (1.0 - dram / 100.0).max(0.0))
        })
        .sum::<f64>()
        / instances
        / 1e6
}
