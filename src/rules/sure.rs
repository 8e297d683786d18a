//! The rules of how sure a run's figures are: what the profiling itself did to them (the ncu
//! pass's copy of the workload started beside the capture, CUDA graphs traced per node) and a
//! figure whose bound is as large as itself. The summary gathers their findings under "How
//! sure", beside the disagreements with NVIDIA's summaries and with ncu.

use super::Rule;

/// The ncu pass's copy of the workload started beside the nsys pass (`ncu.early_start`) does
/// its imports and model build on the same machine's CPUs while nsys profiles, at idle
/// priority but not for free. Below this many seconds of the capture the pass does not warn
/// of it (the scheduler's own noise).
pub(crate) const EARLY_START_BESIDE: Rule = Rule {
    id: "early_start_beside",
    text: "where the ncu pass's copy of the workload was started beside the nsys pass and held at its first CUDA call, ncu.early_start, and its start-up still used the CPU during at least 0.05 s of the nsys capture, or during a part of the pass the run did not time, the capture's figures were taken with that second process busy on the same machine: their CPU-side times may be longer than the workload's alone",
    threshold: 0.05,
};

/// nsys's `--cuda-graph-trace=node` records every kernel of every graph launch; NVIDIA's CUDA
/// graph guide says node granularity "may cause significant runtime overhead" where whole
/// graphs are traced "with minimal overhead" (docs.nvidia.com/dl-cuda-graph, Performance
/// Issues), and CUPTI's graph-level record exists "to reduce overheads in tracing each node".
pub(crate) const GRAPH_NODE_TRACE: Rule = Rule {
    id: "graph_node_trace",
    text: "where the captured range runs kernels from CUDA graphs and the export holds those kernels, nsys traced each graph node, nsys.cuda_graph_trace=node, which NVIDIA documents as costing more at each graph launch than tracing whole graphs: the steps that launch graphs are timed slower than they run untraced",
    threshold: 0.0,
};

/// A figure given within plus or minus a bound says no more than its order of magnitude once
/// the bound is as large as the figure: the step's DRAM bytes read from whole-per-cent shares
/// of a GPU at about 1% of its bandwidth (tests/data/hf/gpu-metrics: 547.9 MB within 875.8 MB).
pub(crate) const BOUND_OVER_VALUE: Rule = Rule {
    id: "bound_over_value",
    text: "a figure given within plus or minus a bound, the step's DRAM bytes from the sampled bandwidth shares that the export keeps as whole per cents, whose bound is at least 100% of the figure itself: it gives no more than the figure's order of magnitude",
    threshold: 100.0,
};
