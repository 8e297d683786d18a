//! Findings on how sure the run's figures are, from what the profiling itself did: the ncu
//! pass's copy of the workload starting beside the nsys capture, CUDA graphs traced per node;
//! and a figure whose bound is as large as itself. Each is said only where this run did it.

use super::super::{Claim, Figure, Findings, Quantity, Scope};
use crate::analysis::Artifacts;
use crate::rules;

/// Where the run's record reads it: status.json.
const STATUS: &str = "status.json";

/// The ncu pass's copy of the workload used the CPU during the nsys capture, by the record
/// (rules::EARLY_START_BESIDE): for at least the rule's seconds of it, or for a part of the
/// pass the run did not time. A copy held before the capture began is not said.
pub(super) fn early_start(a: &Artifacts, out: &mut Findings) {
    let Some(b) = a.record.nsys.held_beside else {
        return;
    };
    let during = b.in_capture_s.zip(b.capture_s);
    if during.is_some_and(|(s, _)| s < rules::EARLY_START_BESIDE.threshold) {
        return;
    }
    let scope = Scope::of(a.focus.range());
    let fig = |q, s: f64| Figure::new(q, s * 1e9, STATUS, &scope);
    let mut evidence = vec![fig(Quantity::CopyBusyNs, b.busy_s)];
    if let Some((s, capture)) = during {
        evidence.push(fig(Quantity::CopyBusyInCaptureNs, s));
        evidence.push(fig(Quantity::CaptureNs, capture));
    }
    out.push(
        Claim::EarlyStartBeside,
        scope,
        Some(rules::EARLY_START_BESIDE),
        evidence,
    );
}

/// The captured range ran kernels from CUDA graphs and the export holds them, so nsys traced
/// each node (rules::GRAPH_NODE_TRACE): its graph launches and the kernels they ran.
pub(super) fn graph_nodes(a: &Artifacts, out: &mut Findings) {
    let Some(c) = a.captured().filter(|c| c.graph_kernels > 0) else {
        return;
    };
    let scope = super::ranges::scope_of(a, &c.name);
    let fig = |q, v: u64| Figure::new(q, v as f64, &c.source, &scope);
    let mut evidence = vec![
        fig(Quantity::GraphKernels, c.graph_kernels),
        fig(Quantity::KernelLaunches, c.launches),
    ];
    if let Some(g) = a.graphs.get(&c.name).filter(|g| g.launches > 0) {
        evidence.push(fig(Quantity::GraphLaunches, g.launches));
    }
    out.push(
        Claim::GraphNodeTrace,
        scope,
        Some(rules::GRAPH_NODE_TRACE),
        evidence,
    );
}

/// The step's DRAM bytes from whole-per-cent shares, where their bound is at least the rule's
/// share of them (rules::BOUND_OVER_VALUE).
pub(super) fn bound_over_value(a: &Artifacts, out: &mut Findings) {
    let Some(b) = a.steps() else { return };
    let Some(within) = b.bytes_within else { return };
    if b.dram_bytes > 0.0 && 100.0 * within / b.dram_bytes < rules::BOUND_OVER_VALUE.threshold {
        return;
    }
    let mut scope = Scope::range(&b.range).instances(b.instances as u64);
    if let Some(g) = &b.group {
        scope = scope.group(g);
    }
    let fig = |q, v: f64| Figure::new(q, v / 1e6, a.sampled_source(), &scope);
    out.push(
        Claim::BoundOverValue,
        scope.clone(),
        Some(rules::BOUND_OVER_VALUE),
        vec![
            fig(Quantity::StepSampledDramMb, b.dram_bytes),
            fig(Quantity::StepDramWithinMb, within),
        ],
    );
}
