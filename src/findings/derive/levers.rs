//! Levers: what to change first and what it can buy, each sized per step from this run's
//! figures and ranked by that saving. A step is the captured range's instance, or its loop's
//! cycle where the loop decides (rules::LOOP_SHARE); the steady instances' where a warm-up or
//! compiling instances are set apart. What cannot move the wall time is no lever.

use super::super::{Claim, CpuVerdict, Figure, Findings, LeverKind, Quantity, Scope, StepBasis};
use crate::analysis::Artifacts;
use crate::model::Bound;
use crate::rules;

/// A step's time and what it is.
pub(super) struct Step {
    pub(super) ms: f64,
    pub(super) scope: Scope,
    pub(super) instances: f64,
    pub(super) basis: StepBasis,
}

/// The time per step the levers are sized against.
pub(super) fn step(a: &Artifacts, name: &str) -> Option<Step> {
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
    if let Some(g) = warmed_up(a, name) {
        return Some(Step {
            // The longer of CPU wall and GPU projection: a prefill's kernels outlast its range.
            ms: g.median_wall_ns.max(g.median_time_ns) / 1e6,
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

/// The steady group of `name` where the instances set apart from it are a warm-up: they all
/// come first, and are at most rules::WARMUP_MAX_INSTANCES. Others recur (a new shape compiled
/// every few steps, or for every new KV length a serving loop meets), and the step is the
/// mean of them all.
fn warmed_up<'a>(a: &'a Artifacts, name: &str) -> Option<&'a crate::analysis::instances::Group> {
    let steady = a.steady_group(name)?;
    let groups = &a.instance_groups.iter().find(|g| g.name == name)?.groups;
    groups
        .iter()
        .filter(|g| g.label != steady.label)
        .all(|g| g.last < steady.first && g.instances as usize <= rules::WARMUP_MAX_INSTANCES)
        .then_some(steady)
}

/// Compiling and loading GPU code: per step where it recurs; once, in the instances before
/// the steady ones, where they are a warm-up (the steady step does not pay it).
fn compile_cost(a: &Artifacts, name: &str, step: &Step) -> (f64, bool) {
    let by = a.ledger_by_name();
    let Some(l) = by.get(name) else {
        return (0.0, false);
    };
    match (step.basis, warmed_up(a, name)) {
        (StepBasis::Steady, Some(steady)) => {
            // Each instance's own parts hold its compiling, its child ranges' included.
            let before = steady.members.first().copied().unwrap_or(0);
            let ns: i64 = l
                .per_instance
                .iter()
                .take(before)
                .map(|p| p.compile_within_ns)
                .sum();
            (ns as f64 / 1e6, true)
        }
        _ => (
            l.total.compile_within_ns as f64 / step.instances / 1e6,
            false,
        ),
    }
}

pub(super) fn levers(a: &Artifacts, out: &mut Findings) {
    let Some(name) = a.focus.range().map(str::to_string) else {
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
        Claim::Step {
            basis: step.basis,
            gpu_bound: busy.map(|b| b >= rules::GPU_IDLE.threshold),
        },
        step.scope.clone(),
        None,
        ev,
    );
    let mut found: Vec<(LeverKind, f64)> = Vec::new();
    let (compile_ms, once) = compile_cost(a, &name, &step);
    found.push((LeverKind::Compile { once }, compile_ms));
    // A one-off cost is not part of the steady step the other levers share.
    let compile_ms = if once { 0.0 } else { compile_ms };
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
    // Savings per step first, most first; a one-off saving after them.
    let once = |k: &LeverKind| matches!(k, LeverKind::Compile { once: true });
    found.sort_by(|x, y| once(&x.0).cmp(&once(&y.0)).then(y.1.total_cmp(&x.1)));
    for (rank, (kind, ms)) in found.into_iter().enumerate() {
        let fig = |q, v| Figure::new(q, v, &a.sqlite_file, &step.scope);
        let saving = match once(&kind) {
            true => vec![fig(Quantity::SavingMsOnce, ms)],
            false => vec![
                fig(Quantity::SavingMsPerStep, ms),
                fig(Quantity::SavingOfStepPct, (100.0 * ms / step.ms).min(100.0)),
            ],
        };
        let mut ev = vec![fig(Quantity::StepMs, step.ms)];
        ev.extend(saving);
        out.push(
            Claim::Lever {
                lever: kind,
                rank: rank as u32 + 1,
            },
            step.scope.clone(),
            Some(rules::LEVER),
            ev,
        );
    }
}

/// What the GPU waits for: the ledger's verdict on the range where it has one, else the
/// largest part of the time between instances where the loop decides; and whether its kernels
/// already run from CUDA graphs.
fn idle_verdict(a: &Artifacts, out: &Findings, name: &str) -> (Option<CpuVerdict>, bool) {
    let graphs = a.captured().is_some_and(|c| c.graph_kernels > 0);
    let of_range = |f: &&crate::findings::Finding| f.scope.range.as_deref() == Some(name);
    let idle = out.made().filter(of_range).find_map(|f| match &f.claim {
        Claim::GpuIdle { verdict, .. } => Some(*verdict),
        _ => None,
    });
    let verdict = idle.unwrap_or_else(|| super::cycle::loop_verdict(a, name).and_then(|(_, v)| v));
    (verdict, graphs)
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
