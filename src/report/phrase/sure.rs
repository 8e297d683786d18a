//! The findings on how sure the run's figures are phrased: what the profiling did to them,
//! and a figure whose bound is as large as itself.

use super::*;

/// The ncu pass's copy of the workload beside the capture, for how long where the run timed
/// the capture.
pub(super) fn early_start(f: &Finding) -> String {
    let when = match (f.figure(Q::CopyBusyInCaptureNs), f.figure(Q::CaptureNs)) {
        (Some(during), Some(capture)) => format!(
            "still used the CPU for {} of the {} capture ({} from its start)",
            during.text,
            capture.text,
            f.text(Q::CopyBusyNs)
        ),
        _ => format!(
            "used the CPU for its first {}, and the run did not time the capture to say how much of it that was",
            f.text(Q::CopyBusyNs)
        ),
    };
    format!(
        "The ncu pass's copy of the workload, started beside the nsys pass to run its imports and set-up early (`ncu.early_start`), {when}: the capture's figures were taken with that second process busy on the same machine, so their CPU-side times may be longer than the workload's alone; `ncu.early_start=false` runs the passes one after the other{}.",
        cite(f)
    )
}

/// The captured range's CUDA graphs traced per node.
pub(super) fn graph_nodes(f: &Finding, w: &str) -> String {
    let from = f
        .figure(Q::GraphLaunches)
        .map_or("CUDA graphs".to_string(), |g| {
            format!("{} CUDA graph launches", g.text)
        });
    format!(
        "nsys traced each node of the CUDA graphs {w}, as `nsys.cuda_graph_trace=node` asks: {} of its {} kernel launches ran from {from}, and tracing every node adds a cost to each graph launch that tracing whole graphs does not, so the steps that launch graphs are timed slower than they run untraced; `--baseline` times them without a profiler{}.",
        f.text(Q::GraphKernels),
        f.text(Q::KernelLaunches),
        cite(f)
    )
}

/// The step's DRAM bytes within a bound as large as themselves.
pub(super) fn bound_over_value(f: &Finding, w: &str) -> String {
    format!(
        "The DRAM traffic of a step {w}, {} by the sampled bandwidth shares, is within ±{}: the export keeps each share as a whole per cent, and at this traffic that bound is as large as the figure or larger, so it gives no more than its order of magnitude{}.",
        f.text(Q::StepSampledDramMb),
        f.text(Q::StepDramWithinMb),
        cite(f)
    )
}
