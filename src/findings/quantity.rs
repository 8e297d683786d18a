//! The quantities findings rest on: one name, one unit and one definition each, so a figure
//! reads the same in kernels.md, stakeholder_summary.md and summary.json.

use serde::Serialize;

/// How a figure's value is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Unit {
    Ns,
    Pct,
    Count,
    FlopPerByte,
    Ms,
    TokensPerS,
    Mb,
    /// A coefficient without a unit, -1 to 1.
    Coefficient,
    /// Tera floating-point operations per second.
    TflopPerS,
    /// Tokens per step of a loop (a mean: not a whole number).
    TokensPerStep,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Quantity {
    /// Sum of kernel execution times.
    KernelTimeNs,
    /// Kernel launches (each kernel execution once, graph kernels included).
    KernelLaunches,
    DistinctKernels,
    /// A kernel's share of the kernel time of its table.
    KernelSharePct,
    /// Mean duration of one kernel execution.
    MeanKernelNs,
    /// The share of the kernel time in launches of at most half as many thread blocks as
    /// the GPU has SMs; the GPU's SMs; a kernel's thread blocks (grid x * y * z) in the
    /// launches that hold most of its time among those.
    SmallGridSharePct,
    GpuSms,
    ThreadBlocks,
    /// CPU wall time of a range, summed over its instances.
    WallNs,
    /// First start to last end of the GPU work launched in a range, summed over instances.
    GpuProjectionNs,
    /// Union of kernel intervals over the longer of CPU wall and GPU projection.
    GpuBusyOfRangePct,
    /// Union of kernel intervals over the GPU projection.
    GpuBusyOfProjectionPct,
    /// GPU busy of range time, less the time NCCL kernels waited for late peers.
    GpuWorkingOfRangePct,
    /// Kernels of CUDA graphs traced per node.
    GraphKernels,
    /// cudaGraphLaunch/cuGraphLaunch calls made in a range.
    GraphLaunches,
    /// GPU time of whole-graph items (graph-level trace).
    GraphGpuNs,
    /// Kernel-launch API calls (cudaLaunchKernel and kin) and their CPU time.
    LaunchApiCalls,
    LaunchApiNs,
    /// Python samples whose innermost function is the one named, as a share of the range's.
    PythonSamplePct,
    PythonSamples,
    /// Kernel time of kernels ncu measured, over the kernel time ncu could measure.
    NcuCoveragePct,
    /// The rest of that basis: kernel time of kernels ncu did not measure.
    NcuLeftOutPct,
    NcuKernelsMeasured,
    /// nsys time of the measured kernels in the launch configurations (shapes) ncu measured,
    /// over their nsys time in every shape.
    ShapeMeasuredPct,
    /// Kernels measured in more than one shape (their figures weighed by each shape's time).
    KernelsWeighedByShape,
    /// A range's mean CPU wall time per instance under nsys, and in the baseline pass (no
    /// profiler attached), and how much more the first is, in %.
    NsysMsPerInstance,
    BaselineMsPerInstance,
    MeasurementAddedPct,
    SmThroughputPct,
    DramThroughputPct,
    /// nsys's sampled GPU metrics over every launch of a kernel: DRAM read + write bandwidth,
    /// the larger of SM issue and tensor activity (each % of peak), and the share of the
    /// launches' time the samples covered.
    SampledDramPct,
    SampledComputePct,
    SampledCoveragePct,
    /// FLOP per DRAM byte of one kernel, and the FP32 ridge point of the GPU.
    FlopPerByte,
    RidgeFlopPerByte,
    TensorPipePct,
    /// NCCL kernels' time, the part of it spent waiting for a late peer, and the rest.
    NcclTimeNs,
    NcclSharePct,
    NcclWaitNs,
    NcclTransferNs,
    /// A range's wall time on its slowest rank and the median rank.
    SlowestRankWallNs,
    MedianRankWallNs,
    /// One group of a range's instances: its median wall time, and the median of the ledger
    /// part that differs most between the groups.
    GroupMedianWallNs,
    GroupLedgerPartNs,
    /// Code compiled and loaded inside a range (its child ranges' included).
    CompileNs,
    /// Spearman's rank correlation of a range's instances' wall times with their order:
    /// near 1 when each later instance takes longer, near -1 when less.
    RankCorrelation,
    /// One group of a range's instances: CUDA graphs its instances instantiated (recorded)
    /// and modules of GPU code they loaded (for their kernels' first use), summed.
    GroupGraphsInstantiated,
    GroupModulesLoaded,
    /// The loop around a repeated range: the median time from one instance's start to the
    /// next's, the cycles counted, the range's share of their time, and the GPU busy of it
    /// (the kernels launched in the range and between instances).
    CycleMs,
    Cycles,
    RangeShareOfCyclePct,
    GpuBusyOfCyclePct,
    /// A lever: the step's time it is sized against, what it saves per step at most, and
    /// that as a share of the step.
    StepMs,
    /// The GPU's working share of the step (busy, NCCL waiting left out).
    GpuWorkOfStepPct,
    SavingMsPerStep,
    SavingOfStepPct,
    /// Compiling that recurs in steps set apart from the steady ones: its median per such
    /// step, how many steps, all of it over the captured instances, their time, and its share.
    SavingMsPerCompilingStep,
    CompileMinMs,
    CompileMaxMs,
    CompilingSteps,
    SavingMsInCapture,
    CapturedMs,
    SavingOfCapturePct,
    /// The instances set apart from the steady step (its scope's group): their median time.
    SetApartMedianMs,
    /// Loads of GPU code that came before an attention kernel's first launch, a cuDNN SDPA
    /// kernel's, and any kernel's the ledger named.
    AttentionLoads,
    /// Between a loop's instances, per cycle: calls waiting for the GPU.
    SyncMsPerStep,
    /// The kinds of unfused element-wise and reduction kernels a fusion lever counts.
    UnfusedKernels,
    CudnnSdpaLoads,
    LoadsNamed,
    /// The mean instance (the longer of wall and projection), beside a median step.
    MeanStepMs,
    /// A phase whose GPU work outlasts its CPU range: that work per instance (its projection),
    /// per token, and the tokens a second over it.
    GpuMsPerInstance,
    GpuMsPerToken,
    GpuTokensPerS,
    /// Each of two instances set apart, in start order (their CPU wall).
    SetApartFirstMs,
    SetApartSecondMs,
    /// The KV cache the model holds at the lever's sequences: the census's, scaled by them.
    KvMbThen,
    /// A call's instances of the child range that repeats inside it (rules::CALL), on average.
    StepsPerCall,
    /// A per-token lever (more sequences per pass): the time per token now (the step over its
    /// tokens) and then, what that saves and its share of the time per token now; the step
    /// then; its part fixed per pass (the time the GPU waits, and the step's DRAM bytes at the
    /// ceiling bandwidth) and its part taken to grow with the sequences; the sequences per
    /// pass then, and the passes a step runs now.
    TokenMsNow,
    TokenMsThen,
    SavingMsPerToken,
    SavingOfTokenPct,
    StepMsThen,
    FixedMsPerStep,
    GrowingMsPerStep,
    /// The compiling in a step, which stays once a step when its passes are merged.
    CompileMsPerStep,
    BatchThen,
    PassesPerStep,
    /// The step's DRAM bytes from the nsys pass's samples (median over its steady instances)
    /// and their time at the ceiling bandwidth.
    StepSampledDramMb,
    StepDramFloorMs,
    /// A lever on the GPU's work where the GPU waits on the host most of the step: the GPU's
    /// work per step (busy) and the saving's share of it.
    GpuWorkMsPerStep,
    SavingOfGpuWorkPct,
    /// Copies by index of weight-sized data: MB a call (ncu's DRAM rate times the mean nsys
    /// duration) of each, its calls per step, all of them per step; the largest matrix
    /// product's MB a call they are measured against.
    CopyMbPerCall,
    CopyCallsPerStep,
    CopyMbPerStep,
    MatrixMbPerCall,
    /// The loop's median cycle per token (the range's tokens per instance).
    LoopMsPerToken,
    /// Per instance of a phase.
    MsPerInstance,
    /// A phase of too few instances to group whose fastest and slowest differ by more than
    /// the warm-up ratio: both, so its mean is not read as any instance's.
    FastestInstanceMs,
    SlowestInstanceMs,
    MsPerToken,
    TokensPerS,
    /// Instances of a range in the export (the capture's range, where it holds none).
    RangeInstances,
    /// Range names in the export.
    RangeNames,
    /// Sequences per instance (the marks' `batch=B`), where more than one: a per-token time
    /// divides an instance by all of their tokens.
    BatchSequences,
    /// A floor's time as a share of the measured time per instance (100%: at the floor).
    MemoryFloorOfMeasuredPct,
    ComputeFloorOfMeasuredPct,
    /// That measured time per instance: the longer of CPU wall and GPU projection.
    FloorBasisMsPerInstance,
    /// One instance measured whole by ncu (`ncu.graph_step`): its DRAM bytes, which instance,
    /// and the graph launches and kernels outside graphs ncu measured in it.
    StepDramMb,
    StepInstance,
    StepGraphLaunches,
    StepKernelsOutsideGraphs,
    /// NVIDIA's `nsys stats` of the same export beside stage2's range figures: the ranges it
    /// holds, the figures compared and how many differ.
    NvidiaRanges,
    NvidiaFiguresCompared,
    NvidiaFiguresDiffer,
    /// Kernels matched in NVIDIA's `ncu --print-summary per-kernel` of the same report.
    NvidiaKernels,
    /// A range with FP8 matrix products: their share of its kernel time, that of the casts to
    /// FP8 and of the abs and max reductions (an FP8 scale's amax), and the last two together
    /// as a share of the matrix products' time (analysis::precision).
    Fp8GemmSharePct,
    Fp8CastSharePct,
    AbsMaxSharePct,
    Fp8ScaleSharePct,
    /// One steady step's launches, and those from an amax to its cast (scaling chains).
    ScaleChainLaunches,
    StepLaunchesRead,
    Fp8AroundOfGemmPct,
    /// A step's tensor-core rate: its kernels' tensor operations (ncu's rates times nsys's
    /// durations, per instance) over the step's time; the GPU's dense BF16 tensor peak; the
    /// first as a share of the second; and the share of the kernel time in kernels ncu classed
    /// compute-bound.
    TensorTflopPerS,
    TensorPeakTflopPerS,
    TensorPeakPct,
    ComputeBoundSharePct,
    /// Speculative decoding: the target's verify steps, the draft tokens proposed and accepted
    /// over them, the acceptance rate, and the tokens each step yields (accepted + one).
    VerifySteps,
    DraftTokensProposed,
    DraftTokensAccepted,
    AcceptancePct,
    TokensPerVerify,
    /// The draft model's share of the time of its passes and the target's verify passes, on
    /// the CPU (wall) and on the GPU (kernel time).
    DraftShareOfWallPct,
    DraftShareOfKernelPct,
    /// The draft's and the verify passes' wall time per token they yield, and the target's
    /// plain decode step (its median wall: one token per sequence), and the first as a share
    /// of the second.
    SpeculativeMsPerToken,
    DecodeMsPerToken,
    SpeculativeOfDecodePct,
    /// The target's plain decode steps that median is over.
    DecodeSteps,
    /// The target's `verify` passes (a step whose candidates the prompt's pass checked has none).
    VerifyPasses,
    /// A step's DRAM bytes read (the nsys pass's samples, the steady instances' median) beside
    /// what the model's own numbers say it must read (analysis::census): the sum, its parts
    /// (weights outside expert layers, the KV cache, expert weights expected under uniform
    /// routing), the tokens per sequence already cached, and the first as a share of the sum.
    StepReadMb,
    CensusReadMb,
    CensusWeightsMb,
    CensusKvMb,
    CensusExpertsMb,
    CachedTokens,
    ReadOfCensusPct,
    /// The same steps' DRAM bytes written, and those as a share of the KV cache the census
    /// counts (a cache grown by concatenation is rewritten whole every step).
    StepWriteMb,
    WriteOfKvPct,
    /// nsys's sample window (the median spacing of its samples); the kernels given no sampled
    /// class because their launches are shorter on average (rules::SAMPLED_WINDOW), the
    /// kernels sampled, and the first's share of the sampled kernels' time.
    SampleWindowNs,
    UnclassedKernels,
    SampledKernels,
    UnclassedSharePct,
    /// The ncu pass's copy of the workload, started beside the nsys pass (`ncu.early_start`):
    /// how long it used the CPU from its start, and during how much of the nsys capture; the
    /// capture's length.
    CopyBusyNs,
    CopyBusyInCaptureNs,
    CaptureNs,
    /// How far the step's DRAM bytes from whole-per-cent shares may be from the traffic: a
    /// point of each share over the covered time.
    StepDramWithinMb,
}

impl Quantity {
    pub(crate) fn unit(self) -> Unit {
        use Quantity::*;
        match self {
            KernelTimeNs | MeanKernelNs | WallNs | GpuProjectionNs | GraphGpuNs | LaunchApiNs
            | NcclTimeNs | NcclWaitNs | NcclTransferNs | SlowestRankWallNs | MedianRankWallNs
            | GroupMedianWallNs | GroupLedgerPartNs | CompileNs | SampleWindowNs | CopyBusyNs
            | CopyBusyInCaptureNs | CaptureNs => Unit::Ns,
            KernelLaunches
            | DistinctKernels
            | GraphKernels
            | GraphLaunches
            | LaunchApiCalls
            | PythonSamples
            | NcuKernelsMeasured
            | KernelsWeighedByShape
            | StepInstance
            | StepGraphLaunches
            | StepKernelsOutsideGraphs
            | GroupGraphsInstantiated
            | GroupModulesLoaded
            | NvidiaRanges
            | NvidiaFiguresCompared
            | NvidiaFiguresDiffer
            | NvidiaKernels
            | GpuSms
            | Cycles
            | BatchThen
            | PassesPerStep
            | CopyCallsPerStep
            | CompilingSteps
            | StepsPerCall
            | AttentionLoads
            | UnfusedKernels
            | CudnnSdpaLoads
            | LoadsNamed
            | ScaleChainLaunches
            | StepLaunchesRead
            | BatchSequences
            | RangeInstances
            | RangeNames
            | ThreadBlocks
            | VerifySteps
            | DraftTokensProposed
            | DraftTokensAccepted
            | DecodeSteps
            | VerifyPasses
            | CachedTokens
            | UnclassedKernels
            | SampledKernels => Unit::Count,
            TensorTflopPerS | TensorPeakTflopPerS => Unit::TflopPerS,
            TokensPerVerify => Unit::TokensPerStep,
            StepDramMb | StepSampledDramMb | CopyMbPerCall | CopyMbPerStep | MatrixMbPerCall
            | StepReadMb | StepWriteMb | CensusReadMb | CensusWeightsMb | CensusKvMb
            | CensusExpertsMb | KvMbThen | StepDramWithinMb => Unit::Mb,
            MeanStepMs | SyncMsPerStep | SetApartFirstMs | SetApartSecondMs | GpuMsPerInstance
            | GpuMsPerToken => Unit::Ms,
            GpuTokensPerS => Unit::TokensPerS,
            FlopPerByte | RidgeFlopPerByte => Unit::FlopPerByte,
            MsPerInstance
            | CycleMs
            | StepMs
            | SavingMsPerStep
            | SavingMsPerCompilingStep
            | CompileMinMs
            | CompileMaxMs
            | SavingMsInCapture
            | CapturedMs
            | SetApartMedianMs
            | TokenMsNow
            | TokenMsThen
            | SavingMsPerToken
            | StepMsThen
            | FixedMsPerStep
            | GrowingMsPerStep
            | CompileMsPerStep
            | StepDramFloorMs
            | GpuWorkMsPerStep
            | FastestInstanceMs
            | SlowestInstanceMs
            | MsPerToken
            | LoopMsPerToken
            | NsysMsPerInstance
            | BaselineMsPerInstance
            | FloorBasisMsPerInstance
            | SpeculativeMsPerToken
            | DecodeMsPerToken => Unit::Ms,
            TokensPerS => Unit::TokensPerS,
            RankCorrelation => Unit::Coefficient,
            _ => Unit::Pct,
        }
    }
}

/// A positive percentage under 0.05 with two significant digits ("0.036%").
fn small_pct(v: f64) -> String {
    let decimals = (-v.log10()).ceil() as usize + 1;
    format!("{v:.decimals$}%")
}

/// Sums of no floats are -0.0 in Rust; a report never shows "-0.0".
fn z(x: f64) -> f64 {
    if x == 0.0 {
        0.0
    } else {
        x
    }
}

impl Quantity {
    /// The value as every report prints it, with its unit: "12.34 ms" ("4.17 us" for a mean
    /// kernel), "74.0%", "5280",
    /// "0.03 FLOP/byte", "3.360 ms" (per token), "298 tokens/s", "8 blocks".
    pub(crate) fn text(self, v: f64) -> String {
        match (self, self.unit()) {
            (Quantity::MeanKernelNs, _) => format!("{:.2} us", z(v / 1e3)),
            (Quantity::SampleWindowNs, _) => format!("{:.1} us", z(v / 1e3)),
            // Seconds of a pass's run, not of the workload's GPU work.
            (Quantity::CopyBusyNs | Quantity::CopyBusyInCaptureNs | Quantity::CaptureNs, _) => {
                format!("{:.1} s", z(v / 1e9))
            }
            (Quantity::ThreadBlocks, _) => format!("{} blocks", v.round() as i64),
            (_, Unit::Ns) => format!("{:.2} ms", z(v / 1e6)),
            // A floor far below its measured time is still a fact: two significant digits,
            // never a "0.0%" that reads as none.
            (Quantity::MemoryFloorOfMeasuredPct | Quantity::ComputeFloorOfMeasuredPct, _)
                if v > 0.0 && v < 0.05 =>
            {
                small_pct(v)
            }
            (_, Unit::Pct) => format!("{:.1}%", z(v)),
            (_, Unit::Count) => format!("{}", v.round() as i64),
            (_, Unit::FlopPerByte) => format!("{:.2} FLOP/byte", z(v)),
            (
                Quantity::MsPerToken
                | Quantity::GpuMsPerToken
                | Quantity::LoopMsPerToken
                | Quantity::SpeculativeMsPerToken
                | Quantity::DecodeMsPerToken
                | Quantity::TokenMsNow
                | Quantity::TokenMsThen
                | Quantity::SavingMsPerToken,
                _,
            ) => format!("{:.3} ms", z(v)),
            (_, Unit::Ms) => format!("{:.2} ms", z(v)),
            (_, Unit::TokensPerS) => format!("{:.0} tokens/s", z(v)),
            (_, Unit::Mb) => format!("{:.1} MB", z(v)),
            (_, Unit::Coefficient) => format!("{:.2}", z(v)),
            (_, Unit::TflopPerS) => format!("{:.1} TFLOP/s", z(v)),
            (_, Unit::TokensPerStep) => format!("{:.2} tokens", z(v)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Quantity::*;
    use super::Unit;

    /// Every unit a figure can have is one summary.schema.json allows (a unit added here and
    /// not there makes every summary.json that carries it invalid).
    #[test]
    fn every_unit_is_in_the_schema() {
        // A match, so a new unit does not compile until it is listed here.
        let all = |u: Unit| match u {
            Unit::Ns
            | Unit::Pct
            | Unit::Count
            | Unit::FlopPerByte
            | Unit::Ms
            | Unit::TokensPerS
            | Unit::Mb
            | Unit::Coefficient
            | Unit::TflopPerS
            | Unit::TokensPerStep => u,
        };
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("summary.schema.json")).unwrap();
        let allowed = &schema["$defs"]["figure"]["properties"]["unit"]["enum"];
        for u in [
            Unit::Ns,
            Unit::Pct,
            Unit::Count,
            Unit::FlopPerByte,
            Unit::Ms,
            Unit::TokensPerS,
            Unit::Mb,
            Unit::Coefficient,
            Unit::TflopPerS,
            Unit::TokensPerStep,
        ] {
            let name = serde_json::to_value(all(u)).unwrap();
            assert!(
                allowed.as_array().is_some_and(|a| a.contains(&name)),
                "{name} not in the schema's units: {allowed}"
            );
        }
    }

    #[test]
    fn a_floor_far_under_its_time_keeps_two_significant_digits() {
        assert_eq!(MemoryFloorOfMeasuredPct.text(0.0364), "0.036%");
        assert_eq!(ComputeFloorOfMeasuredPct.text(0.00091), "0.00091%");
        assert_eq!(MemoryFloorOfMeasuredPct.text(0.0), "0.0%");
        assert_eq!(MemoryFloorOfMeasuredPct.text(51.04), "51.0%");
        // Other shares keep one decimal.
        assert_eq!(KernelSharePct.text(0.0364), "0.0%");
    }
}
