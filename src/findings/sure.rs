//! Which findings say how sure the run's figures are: what the profiling did to them, where
//! two readings of the same thing disagree, and figures whose bound is as large as themselves.
//! The summary gathers them in one list, apart from what to look at next.

use super::Claim;

impl Claim {
    /// Whether the claim bears on how far this run's figures can be trusted, rather than on
    /// the workload. Exhaustive, so a new kind says which it is.
    pub(crate) fn how_sure(&self) -> bool {
        use Claim::*;
        match self {
            EarlyStartBeside
            | GraphNodeTrace
            | BoundOverValue
            | SampledWindow { .. }
            | SampledDisagrees { .. }
            | ReplayDiffers { .. } => true,
            // Agreeing with NVIDIA's summaries is a fact of the run; differing, a doubt.
            NvidiaSummaries { differ, .. } => !differ.is_empty(),
            NvidiaNcuSummary { differ, .. } => !differ.is_empty(),
            // The profiler's own cost is a headline number, said in the opening's words.
            MeasurementCost { .. }
            | KernelTotals
            | TopKernel { .. }
            | CapturedRange
            | PhaseTime
            | PerToken
            | LaunchCalls
            | NcuCoverage { .. }
            | ShapeCoverage
            | NcclTime
            | Straggler { .. }
            | InstanceGroups { .. }
            | GraphLevelTrace
            | KernelsBesideGraphs
            | GpuIdle { .. }
            | GpuWaitsInNccl
            | NcclWaiting
            | RanksOutOfStep { .. }
            | KernelsExceedWall { .. }
            | TinyKernels { .. }
            | SmallGrids
            | MemoryBound { .. }
            | ComputeBound { .. }
            | TensorCoresIdle
            | SampledBound { .. }
            | GraphsRerecorded
            | InstanceTrend { .. }
            | Loop { .. }
            | Step { .. }
            | Lever { .. }
            | RangeVerdict { .. }
            | NoNcuMetrics { .. }
            | PassIncomplete { .. }
            | CaptureRangeMissing { .. }
            | AttentionKernels { .. }
            | Fp8Work { .. }
            | Fp8Overhead
            | TensorPeak { .. }
            | StepWork { .. }
            | Census { .. }
            | Speculation
            | SpeculationSlower
            | NothingStandsOut => false,
        }
    }
}
