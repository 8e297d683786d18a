//! Findings about NVTX ranges: the captured range's figures and verdict, graph launches whose
//! kernels are not traced, kernel time past the wall time, phases and per-token costs.

use super::super::{
    Claim, Figure, Finding, Findings, PastWall, Quantity, RangeClass, RangeVerdict, Scope,
};
use crate::analysis::{Artifacts, Captured};
use crate::findings::listed::Listed;
use crate::rules;

fn instances(a: &Artifacts, name: &str) -> Option<u64> {
    a.range_stats
        .iter()
        .find(|r| r.name == name)
        .map(|r| r.instances)
}

pub(super) fn scope_of(a: &Artifacts, name: &str) -> Scope {
    let s = Scope::range(name);
    match instances(a, name) {
        Some(n) => s.instances(n),
        None => s,
    }
}

/// The captured range's figures, then what they say: graph launches not traced, the GPU
/// waiting, NCCL waiting, kernel time past the wall time.
pub(super) fn captured(a: &Artifacts, out: &mut Findings) {
    let Some(c) = a.captured() else { return };
    let scope = scope_of(a, &c.name);
    let fig = |q, v| Figure::new(q, v, &c.source, &scope);
    let mut ev = vec![
        fig(Quantity::WallNs, c.wall_ns),
        fig(Quantity::KernelTimeNs, c.kernel_ns),
        fig(Quantity::KernelLaunches, c.launches as f64),
        fig(Quantity::GraphKernels, c.graph_kernels as f64),
        fig(Quantity::GpuBusyOfRangePct, c.busy_pct()),
    ];
    if let Some(p) = c.proj_ns {
        ev.push(fig(Quantity::GpuProjectionNs, p));
    }
    if c.nccl_wait_ns > 0.0 {
        ev.push(fig(Quantity::NcclWaitNs, c.nccl_wait_ns));
        ev.push(fig(Quantity::GpuWorkingOfRangePct, c.working_pct()));
    }
    out.push(Claim::CapturedRange, scope.clone(), None, ev);
    if graph_level(a, &c.name, &scope, out) {
        return;
    }
    busy_verdict(a, &c, &scope, out);
    past_wall(&c, &scope, out);
    beside_graphs(a, &c, &scope, out);
}

/// A range that runs CUDA graphs yet launches many kernels one by one: the graph launches,
/// the kernel launches and how many of them ran from the graphs; of the instances after a
/// warm-up where the instance groups split one off (a warm-up runs eagerly what later steps
/// replay). Only where nsys traced the graphs per node (a graph-level trace holds none of their
/// kernels, said above).
fn beside_graphs(a: &Artifacts, c: &Captured, scope: &Scope, out: &mut Findings) {
    let Some(g) = a.graphs.get(&c.name).filter(|g| g.launches > 0) else {
        return;
    };
    if g.graph_level > 0 || c.graph_kernels == 0 {
        return;
    }
    let (launches, in_graphs, scope) = match a.steady_group(&c.name) {
        Some(s) => (s.launches, s.graph_kernels, scope.clone().group(&s.label)),
        None => (c.launches, c.graph_kernels, scope.clone()),
    };
    let outside = launches.saturating_sub(in_graphs);
    let pct = 100.0 * outside as f64 / launches.max(1) as f64;
    if in_graphs == 0 || pct < rules::KERNELS_BESIDE_GRAPHS.threshold {
        return;
    }
    let fig = |q, v: u64| Figure::new(q, v as f64, &a.sqlite_file, &scope);
    let mut ev = vec![
        fig(Quantity::KernelLaunches, launches),
        fig(Quantity::GraphKernels, in_graphs),
    ];
    // Graph launches are counted per range name, not per group.
    if scope.group.is_none() {
        ev.insert(0, fig(Quantity::GraphLaunches, g.launches));
    }
    out.push(
        Claim::KernelsBesideGraphs,
        scope.clone(),
        Some(rules::KERNELS_BESIDE_GRAPHS),
        ev,
    );
}

/// A range of graph launches whose kernels nsys did not trace: said with the launch count, and
/// no kernel-time verdict. Returns whether it was.
fn graph_level(a: &Artifacts, name: &str, scope: &Scope, out: &mut Findings) -> bool {
    let Some(g) = a.graph_level(name) else {
        return false;
    };
    let source = match a.range_stats.is_empty() {
        true => a.api_sum_file.clone(),
        false => a.sqlite_file.clone(),
    };
    // Without the export, the API summary's count is the whole capture's.
    let scope = match a.range_stats.is_empty() {
        true => Scope::capture(),
        false => scope.clone(),
    };
    let mut ev = vec![Figure::new(
        Quantity::GraphLaunches,
        g.launches as f64,
        &source,
        &scope,
    )];
    if g.graph_level_gpu_ns > 0 {
        ev.push(Figure::new(
            Quantity::GraphGpuNs,
            g.graph_level_gpu_ns as f64,
            &source,
            &scope,
        ));
    }
    out.push(
        Claim::GraphLevelTrace,
        scope.clone(),
        Some(rules::GRAPH_LEVEL),
        ev,
    );
    let why = format!(
        "the range's {} CUDA graph launches ran kernels the export does not hold (graph-level trace), so its kernel time and GPU busy leave them out",
        g.launches
    );
    out.0.push(Finding::abstain(
        Claim::GpuIdle {
            verdict: None,
            story: None,
            python_function: None,
            python_in_model: false,
            from_graphs: true,
            compiled_for: Vec::new(),
        },
        scope,
        why,
    ));
    true
}

/// GPU busy under half the range: on what the CPU thread spends it, or NCCL waiting.
fn busy_verdict(a: &Artifacts, c: &Captured, scope: &Scope, out: &mut Findings) {
    let fig = |q, v| Figure::new(q, v, &c.source, scope);
    let (busy, working) = (c.busy_pct(), c.working_pct());
    if working < rules::GPU_IDLE.threshold && busy >= rules::NCCL_BOUND.threshold {
        out.push(
            Claim::GpuWaitsInNccl,
            scope.clone(),
            Some(rules::NCCL_BOUND),
            vec![
                fig(Quantity::GpuBusyOfRangePct, busy),
                fig(Quantity::GpuWorkingOfRangePct, working),
            ],
        );
    } else if let Some(steady) = a.steady_group(&c.name).filter(|_| c.nccl_wait_ns == 0.0) {
        steady_verdict(a, c, scope, steady, out);
    } else if working < rules::GPU_IDLE.threshold {
        let story = crate::analysis::ledger::cpu_story_with(
            &a.ledger_by_name(),
            &c.name,
            a.python.as_ref(),
        );
        let mut ev = vec![fig(Quantity::GpuBusyOfRangePct, busy)];
        if c.nccl_wait_ns > 0.0 {
            ev.push(fig(Quantity::GpuWorkingOfRangePct, working));
        }
        // Compile-bound: what compiling costs the range, the most its lever can save.
        let compiling = a
            .ledger_by_name()
            .get(&c.name)
            .map(|l| l.total.compile_within_ns)
            .filter(|_| {
                story
                    .as_ref()
                    .is_some_and(|s| s.label == crate::analysis::ledger::CpuVerdict::Compile)
            });
        if let Some(ns) = compiling {
            ev.push(fig(Quantity::CompileNs, ns as f64));
            ev.push(fig(Quantity::WallNs, c.wall_ns));
        }
        let python = story.as_ref().and_then(|s| s.python.clone());
        if let Some((range, _, share, n)) = python.as_ref().filter(|p| p.0 == c.name) {
            let s = Scope::range(range);
            ev.push(Figure::new(
                Quantity::PythonSamplePct,
                *share,
                crate::analysis::pysamples::SOURCE,
                &s,
            ));
            ev.push(Figure::new(
                Quantity::PythonSamples,
                *n as f64,
                crate::analysis::pysamples::SOURCE,
                &s,
            ));
        }
        // Two or three unlike instances (too few to group): the slowest decides the verdict.
        if let Some(w) = unlike_few(a, &c.name) {
            ev.push(fig(Quantity::FastestInstanceMs, w.min / 1e6));
            ev.push(fig(Quantity::SlowestInstanceMs, w.max / 1e6));
        }
        let claim = Claim::GpuIdle {
            verdict: story.as_ref().map(|s| s.label),
            story: story.as_ref().map(|s| s.story.clone()),
            python_in_model: python.as_ref().is_some_and(|p| rules::is_model_code(&p.1)),
            python_function: python.map(|p| p.1),
            from_graphs: c.graph_kernels > 0,
            compiled_for: story.map(|s| s.compiled_for).unwrap_or_default(),
        };
        out.push(claim, scope.clone(), Some(rules::GPU_IDLE), ev);
    }
    if c.nccl_wait_ns > rules::NCCL_WAIT_SHARE.threshold / 100.0 * c.kernel_ns {
        out.push(
            Claim::NcclWaiting,
            scope.clone(),
            Some(rules::NCCL_WAIT_SHARE),
            vec![
                fig(Quantity::NcclWaitNs, c.nccl_wait_ns),
                fig(Quantity::KernelTimeNs, c.kernel_ns),
                fig(Quantity::GpuWorkingOfRangePct, working),
            ],
        );
    }
}

/// The idle-GPU verdict over a range's steady instances only, when its first ones are a
/// warm-up (compiling, graph recording, first-call allocation): over all of them the warm-up's
/// seconds would decide it. No verdict when the steady instances keep the GPU busy.
fn steady_verdict(
    a: &Artifacts,
    c: &Captured,
    scope: &Scope,
    steady: &crate::analysis::instances::Group,
    out: &mut Findings,
) {
    let Some(busy) = steady.gpu_busy_of_range_pct else {
        return;
    };
    if busy >= rules::GPU_IDLE.threshold {
        return;
    }
    let scope = scope
        .clone()
        .group(&steady.label)
        .instances(steady.instances);
    // The steady instances' own ledger, and their child ranges' over the instances inside them.
    let by = a.ledger_by_name();
    let depth = rules::RANGE_VERDICT_DEPTH;
    let sub = crate::analysis::ledger::over_members(&by, &c.name, &steady.members, depth);
    let story = (!sub.is_empty()).then(|| {
        let by = sub.iter().fold(a.ledger_by_name(), |by, l| by.with(l));
        crate::analysis::ledger::cpu_story_with(&by, &c.name, None)
    });
    let story = story.flatten();
    let claim = Claim::GpuIdle {
        verdict: story.as_ref().map(|s| s.label),
        compiled_for: story
            .as_ref()
            .map(|s| s.compiled_for.clone())
            .unwrap_or_default(),
        story: story.map(|s| s.story),
        python_function: None,
        python_in_model: false,
        from_graphs: c.graph_kernels > 0,
    };
    out.push(
        claim,
        scope.clone(),
        Some(rules::GPU_IDLE),
        vec![Figure::new(
            Quantity::GpuBusyOfRangePct,
            busy,
            &c.source,
            &scope,
        )],
    );
}

/// Kernel time above the CPU wall time, with the reason the figures show: the projection
/// holds it (work runs past the range's end), or not even that (kernels overlap).
fn past_wall(c: &Captured, scope: &Scope, out: &mut Findings) {
    if c.kernel_ns <= c.wall_ns {
        return;
    }
    let fig = |q, v| Figure::new(q, v, &c.source, scope);
    let mut ev = vec![
        fig(Quantity::KernelTimeNs, c.kernel_ns),
        fig(Quantity::WallNs, c.wall_ns),
    ];
    let cause = match c.proj_ns {
        Some(p) => {
            ev.push(fig(Quantity::GpuProjectionNs, p));
            match c.kernel_ns > p {
                true => PastWall::Overlap,
                false => PastWall::RunsPastEnd,
            }
        }
        None => PastWall::RunsPastEnd,
    };
    out.push(
        Claim::KernelsExceedWall { cause },
        scope.clone(),
        Some(rules::KERNELS_EXCEED_WALL),
        ev,
    );
}

/// The automatic phases' wall and kernel time, when the export has them: prefill and decode,
/// and under speculative decoding the target's verify passes and the assistant's draft passes.
pub(super) fn phases(a: &Artifacts, out: &mut Findings) {
    for &name in crate::analysis::ranges::PHASES {
        let Some(r) = a.range_stats.iter().find(|r| r.name == name) else {
            continue;
        };
        let scope = Scope::range(name).instances(r.instances);
        let fig = |q, v| Figure::new(q, v, &a.sqlite_file, &scope);
        let mut ev = vec![
            fig(Quantity::WallNs, r.wall_ns as f64),
            fig(Quantity::KernelTimeNs, r.kernel_ns as f64),
        ];
        if let Some(g) = a.graph_level(name) {
            ev.push(fig(Quantity::GraphLaunches, g.launches as f64));
        }
        out.push(Claim::PhaseTime, scope.clone(), None, ev);
    }
}

/// The wall-time spread of a range of two or three instances (too few to group, see
/// analysis::instances) whose slowest took over the warm-up ratio times its fastest.
fn unlike_few<'a>(a: &'a Artifacts, range: &str) -> Option<&'a crate::analysis::ranges::Spread> {
    a.range_stats
        .iter()
        .find(|r| r.name == range)
        .filter(|r| (2..rules::GROUPS_MIN_INSTANCES as u64).contains(&r.instances))
        .map(|r| &r.wall_spread)
        .filter(|w| w.max > rules::WARMUP.threshold * w.min.max(1.0))
}

/// Each phase's cost per instance and per token, and its floors where ncu measured it.
pub(super) fn per_token(a: &Artifacts, out: &mut Findings) {
    for p in &a.per_token {
        let scope = Scope::range(&p.phase).instances(p.instances);
        let fig = |q, v| Figure::new(q, v, &a.sqlite_file, &scope);
        let mut ev = vec![fig(Quantity::MsPerInstance, p.ms_per_instance)];
        // Too few instances to group (analysis::instances), yet unlike: their walls beside the
        // mean (a warm-up and one steady instance average to neither).
        if let Some(w) = unlike_few(a, &p.phase) {
            ev.push(fig(Quantity::FastestInstanceMs, w.min / 1e6));
            ev.push(fig(Quantity::SlowestInstanceMs, w.max / 1e6));
        }
        if let (Some(ms), Some(tps)) = (p.ms_per_token, p.tokens_per_s) {
            ev.push(fig(Quantity::MsPerToken, ms));
            ev.push(fig(Quantity::TokensPerS, tps));
            // A phase whose GPU work outlasts its CPU range (a long prefill the CPU queues
            // and leaves): its tokens come out at the rate of that work, not of the range.
            let proj = a
                .range_stats
                .iter()
                .find(|r| r.name == p.phase)
                .map(|r| r.proj_ns as f64);
            if let Some(proj) = proj.filter(|&g| g > rules::PAST_WALL_PER_TOKEN * p.wall_ns as f64)
            {
                let tokens = p.tokens.unwrap_or(0) as f64;
                ev.push(fig(
                    Quantity::GpuMsPerInstance,
                    proj / 1e6 / p.instances as f64,
                ));
                ev.push(fig(Quantity::GpuMsPerToken, proj / 1e6 / tokens.max(1.0)));
                ev.push(fig(Quantity::GpuTokensPerS, tokens / (proj / 1e9)));
            }
            // The time per token divides an instance by every sequence's tokens: said with it.
            if let Some(b) = p.batch.filter(|b| *b > 1) {
                ev.push(fig(Quantity::BatchSequences, b as f64));
            }
        }
        // A range that is a fraction of its loop: the step's time is the loop's.
        if let Some(l) = super::cycle::deciding(a, &p.phase) {
            let cycle_ms = l.median_cadence_ns / 1e6;
            ev.push(fig(Quantity::CycleMs, cycle_ms));
            if let Some(ms) = p.ms_per_token.filter(|_| p.ms_per_instance > 0.0) {
                ev.push(fig(
                    Quantity::LoopMsPerToken,
                    cycle_ms * ms / p.ms_per_instance,
                ));
            }
        }
        if let Some(f) = &p.floor {
            let ncu = Figure::new(
                Quantity::MemoryFloorOfMeasuredPct,
                f.pct_of_memory_floor,
                &a.ncu_csv_file,
                &scope.clone().ncu(),
            );
            ev.push(ncu);
            // The floors count the bytes and FLOPs of the kernels ncu measured: where those
            // hold less than the phase's kernel time, the floor is that part's (a lower bound).
            if f.whole.is_none() && f.measured_pct < rules::FLOOR_WHOLE_PCT {
                ev.push(Figure::new(
                    Quantity::NcuCoveragePct,
                    f.measured_pct,
                    &a.ncu_csv_file,
                    &scope.clone().ncu(),
                ));
            }
            // Stated only where it is not the wall time the finding already gives.
            if f.over_projection {
                ev.push(fig(Quantity::FloorBasisMsPerInstance, f.measured_ms));
            }
            if let (Some(w), Some((_, file))) = (&f.whole, &a.graph_step) {
                let step = |q, v| Figure::new(q, v, file, &scope.clone().ncu());
                ev.push(step(Quantity::StepDramMb, w.dram_bytes / 1e6));
                ev.push(step(Quantity::StepInstance, w.choice.instance as f64));
                ev.push(step(
                    Quantity::StepGraphLaunches,
                    w.choice.work.graphs as f64,
                ));
                ev.push(step(
                    Quantity::StepKernelsOutsideGraphs,
                    w.choice.work.kernels as f64,
                ));
                // Where the instances are of several kinds (a compiling warm-up beside steady
                // steps), the mean the floor is over describes none: the instance ncu measured
                // is one of its group, whose median wall its floor is also set against.
                if let Some(g) = group_of(a, &p.phase, w.choice.instance) {
                    let pct = 100.0 * f.memory_floor_ms / (g.median_wall_ns / 1e6);
                    let in_group = scope.clone().group(&g.label).ncu();
                    ev.push(Figure::new(
                        Quantity::MemoryFloorOfMeasuredPct,
                        pct,
                        file,
                        &in_group,
                    ));
                }
            }
            if let Some(c) = f.pct_of_compute_floor {
                ev.push(Figure::new(
                    Quantity::ComputeFloorOfMeasuredPct,
                    c,
                    &a.ncu_csv_file,
                    &scope.clone().ncu(),
                ));
            }
        }
        out.push(Claim::PerToken, scope.clone(), None, ev);
    }
}

/// The most numerous group of `range`'s instances (the kind the graph step measures one of,
/// see analysis::graphs::choose_step), where its instances fall into several and instance
/// `instance` (from 1) is one of it; None for a measured warm-up, whose group's median (a
/// recording call beside a quick one) no floor is set against.
fn group_of<'a>(
    a: &'a Artifacts,
    range: &str,
    instance: usize,
) -> Option<&'a crate::analysis::instances::Group> {
    let ordinal = instance.checked_sub(1)?;
    a.instance_groups
        .iter()
        .find(|g| g.name == range)?
        .typical()
        .filter(|g| g.median_wall_ns > 0.0 && g.members.contains(&ordinal))
}

/// One verdict per range for kernels.md's table.
pub(super) fn verdicts(a: &Artifacts, listed: &Listed, out: &mut Findings) {
    let ledger = a.ledger_by_name();
    for r in a.range_stats.iter().filter(|r| listed.has(&r.name)) {
        let scope = Scope::range(&r.name).instances(r.instances);
        let busy = Figure::new(
            Quantity::GpuBusyOfRangePct,
            r.busy_of_range_pct(),
            &a.sqlite_file,
            &scope,
        );
        let of_proj = Figure::new(
            Quantity::GpuBusyOfProjectionPct,
            r.gpu_busy_pct,
            &a.sqlite_file,
            &scope,
        );
        let looped = super::cycle::loop_verdict(a, &r.name);
        let mut evidence = vec![busy, of_proj];
        if let Some((b, _)) = looped {
            // A range that is a fraction of its loop is judged over the loop (rules::LOOP_SHARE).
            evidence.push(Figure::new(
                Quantity::GpuBusyOfCyclePct,
                b,
                &a.sqlite_file,
                &scope,
            ));
        }
        let class = if a.graph_level(&r.name).is_some() {
            RangeClass::GraphsUntraced
        } else if let Some((b, why)) = looped {
            match (b >= rules::RANGE_VERDICT.threshold, why) {
                (true, _) => RangeClass::GpuBound,
                (false, Some(v)) => RangeClass::Waits(v),
                (false, None) => RangeClass::MostlyIdle,
            }
        } else if r.busy_of_range_pct() < rules::RANGE_VERDICT.threshold {
            crate::analysis::ledger::cpu_story(&ledger, &r.name, a.python.as_ref())
                .map_or(RangeClass::MostlyIdle, |(label, _)| {
                    RangeClass::Waits(label)
                })
        } else {
            RangeClass::GpuBound
        };
        // Over instances of several kinds the verdict is of their sum: said beside it.
        let verdict = RangeVerdict {
            class,
            over_kinds: a
                .instance_groups
                .iter()
                .find(|g| g.name == r.name)
                .map(|g| g.groups.len()),
        };
        out.push(
            Claim::RangeVerdict { verdict },
            scope,
            Some(rules::RANGE_VERDICT),
            evidence,
        );
    }
}

/// What the measurement added to each range: its wall time per instance under nsys beside the
/// baseline pass's (no profiler), over as many instances from the same end of the run.
pub(super) fn measurement_cost(a: &Artifacts, out: &mut Findings) {
    for o in &a.observed {
        let scope = Scope::range(&o.range);
        out.push(
            Claim::MeasurementCost {
                compared: o.baseline_instances,
                timed: o.baseline_timed,
                from_start: a.focus.first_only,
            },
            scope.clone(),
            None,
            vec![
                Figure::new(
                    Quantity::NsysMsPerInstance,
                    o.nsys_ms_per_instance,
                    &a.sqlite_file,
                    &scope.clone().instances(o.nsys_instances),
                ),
                Figure::new(
                    Quantity::BaselineMsPerInstance,
                    o.baseline_ms_per_instance,
                    &a.baseline_file,
                    &scope,
                ),
                Figure::new(
                    Quantity::MeasurementAddedPct,
                    o.added_pct,
                    &a.baseline_file,
                    &scope,
                ),
            ],
        );
    }
}
