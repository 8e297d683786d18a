//! What a finding claims: its kind and parameters (one variant per kind), its role, and the
//! typed verdicts and words the claims carry (range classes, kinds of use, what bytes are of).

/// The comparisons with NVIDIA's summaries a claim carries, for the renderers to phrase.
pub(crate) use crate::analysis::nvidia::{Differ, Grids, NcuDiffer};
use serde::Serialize;

pub(crate) use crate::analysis::roles::{Attention, Fp8Role};

/// What a finding is for in a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Role {
    /// A measured figure stated (headline clauses).
    Fact,
    /// A verdict on a range or kernel, from a rule.
    Verdict,
    /// Why a figure may mislead, or what it leaves out.
    Caveat,
    /// What to do next.
    Advice,
}

/// How the CPU thread spends a range that leaves the GPU idle: decided by the wall-time
/// ledger, typed from there on.
pub(crate) use crate::analysis::ledger::CpuVerdict;

/// A range's verdict by rules::RANGE_VERDICT, as summary.json and kernels.md's range table
/// word it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RangeClass {
    /// GPU busy at least the rule's threshold of the range time.
    GpuBound,
    /// Busy under it; the CPU thread's ledger says on what.
    Waits(CpuVerdict),
    /// Busy under it, with no ledger of the thread to say why.
    MostlyIdle,
    /// The range launches CUDA graphs whose kernels the export does not hold.
    GraphsUntraced,
}

impl RangeClass {
    pub(crate) fn label(self) -> &'static str {
        match self {
            RangeClass::GpuBound => "GPU-bound",
            RangeClass::Waits(v) => v.label(),
            RangeClass::MostlyIdle => "GPU mostly idle",
            RangeClass::GraphsUntraced => "no verdict: graph kernels not traced",
        }
    }
}

/// A range's verdict: its class, and over how many kinds of instance when they differ (the
/// verdict is then of their sum). Serialized as kernels.md words it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RangeVerdict {
    pub(crate) class: RangeClass,
    pub(crate) over_kinds: Option<usize>,
}

impl std::fmt::Display for RangeVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.class.label())?;
        match self.over_kinds {
            Some(n) => write!(f, ", over {n} kinds of instance"),
            None => Ok(()),
        }
    }
}

impl Serialize for RangeVerdict {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What a step's time is: the loop's median cycle (the range is a fraction of it), the steady
/// instances' median (a warm-up or compiling instances set apart), or the mean instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StepBasis {
    Loop,
    Steady,
    /// The median instance, where the mean is pulled away from it (rules::MEDIAN_STEP).
    Median,
    Mean,
}

/// What a lever changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "what")]
pub(crate) enum LeverKind {
    /// Stop compiling and loading GPU code in the step (fixed or bucketed shapes, warmed
    /// shapes, another backend): in every step, or again and again in the steps set apart
    /// from the steady ones. A warm-up's one-off compiling is no lever: the step names it.
    Compile,
    /// Move the host work the GPU waits for off the step; the ledger's verdict says which.
    HostWork {
        verdict: Option<CpuVerdict>,
        from_graphs: bool,
    },
    /// Memory-bound kernels nearer the bandwidth peak (fusion, fewer bytes).
    Bandwidth,
    /// A GPU-bound step's framework element-wise and reduction kernels fused into their
    /// neighbours (analysis::roles::unfused): at most their time.
    Fuse,
    /// Bring the late rank in step.
    LateRank,
    /// Run more sequences per forward pass, sized per token (analysis::batching): `batch`
    /// sequences a pass now in `forwards` passes a step, one pass of `to` then (twice the
    /// batch, or every pass of the step at once where it runs several of one sequence each).
    Batch { batch: u64, forwards: u64, to: u64 },
    /// Stop copying weight-sized data by index in the step (analysis::copies); `after_host`:
    /// the GPU waits on the host most of the step, so this saves GPU work that moves the wall
    /// time once the host work is off the step.
    WeightCopy { after_host: bool },
    /// Fuse the work around FP8 matrix products (amax, scale, division, cast) or scale from an
    /// amax history (analysis::precision); `after_host` as for WeightCopy.
    Fp8Scaling { after_host: bool },
    /// Decode without the draft model, sized per token: speculation's draft and verify passes
    /// cost more a token than the target's plain decode step (rules::SPECULATION_SLOWER).
    PlainDecode,
}

impl LeverKind {
    /// What its saving is counted in.
    pub(crate) fn per(self) -> LeverUnit {
        match self {
            LeverKind::Batch { .. } | LeverKind::PlainDecode => LeverUnit::Token,
            LeverKind::WeightCopy { after_host: true }
            | LeverKind::Fp8Scaling { after_host: true } => LeverUnit::GpuWork,
            _ => LeverUnit::Step,
        }
    }
}

/// What a lever's saving is counted in, and so where it ranks: per step and per token first
/// (a share of the step is a share of each of its tokens), by that share; then a saving of the
/// GPU's work that moves the wall time only after another lever.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum LeverUnit {
    Step,
    Token,
    GpuWork,
}

/// A part of the time between a range's instances on its thread (analysis::ledger's parts).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum LoopPart {
    Sync,
    Launch,
    OtherApi,
    Compile,
    /// The thread's own work outside CUDA calls (Python, the framework).
    Own,
    /// Another range between the instances.
    Range(String),
}

/// One group of a range's instances by the gpu_idle rule on its own busy share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) enum GroupUse {
    #[serde(rename = "GPU-bound")]
    GpuBound,
    #[serde(rename = "mostly idle")]
    MostlyIdle,
}

impl GroupUse {
    pub(crate) fn label(self) -> &'static str {
        match self {
            GroupUse::GpuBound => "GPU-bound",
            GroupUse::MostlyIdle => "mostly idle",
        }
    }
}

/// Why a range's kernel time exceeds its CPU wall time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum PastWall {
    /// Work launched in the range runs on after it closes (asynchronous launches, graphs).
    RunsPastEnd,
    /// Kernels overlap on concurrent streams: their sum is above the projection too.
    Overlap,
}

/// Which kernels a memory-bound list holds: those that issue tensor-core operations (matrix
/// products, whose bytes are mostly weights), those that issue none (element-wise kernels,
/// reductions and copies, whose bytes are activations), or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum BytesOf {
    MatrixProducts,
    Elementwise,
    Both,
}

/// How busy the GPU is over a range, against rules::RANGE_VERDICT's threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum GpuUse {
    /// Busy at least the threshold of the range time.
    Busy,
    /// Idle most of it: it waits on the CPU (or on other ranks).
    Waits,
    /// Not known for this scope (the whole capture).
    Unknown,
}

/// Compute-bound kernels' tensor-pipe use, from ncu (rules::TENSOR_BUSY).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TensorUse {
    /// Every one issues tensor-core operations with the pipe at least that busy.
    Busy,
    /// Some issue none, or keep the pipe under that.
    Low,
    /// ncu did not measure the tensor pipe.
    Unmeasured,
}

/// The ncu pass stopped at its time budget (status.json): the budget, where it came from,
/// whether the metrics cache kept what ncu measured (a re-run then profiles only the rest), and
/// and the kernel with the most time that ncu did not measure, chosen or not (its share is the
/// finding's `kernel_share_pct`): ncu reaches the chosen kernels in the order the workload
/// launches them, so a budget need not leave out the smallest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct BudgetStop {
    pub(crate) s: f64,
    pub(crate) from: String,
    pub(crate) cached: bool,
    pub(crate) largest_left_out: Option<String>,
}

/// The ncu pass planned within its time budget (status.json): at the pace an earlier run of
/// the workload measured, the budget afforded ncu the `given` largest of the chosen kernels
/// the metrics cache lacked, and `deferred` more are left for the next run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct BudgetPlan {
    pub(crate) s: f64,
    pub(crate) from: String,
    pub(crate) given: usize,
    pub(crate) deferred: usize,
}

/// What a finding claims, with its parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Claim {
    /// The kernel table's totals.
    KernelTotals,
    /// The kernel that holds most of the kernel time.
    TopKernel {
        name: String,
    },
    /// The captured range's figures.
    CapturedRange,
    /// A phase's wall and kernel time (prefill, decode).
    PhaseTime,
    /// A phase's cost per instance and per token, and its floors.
    PerToken,
    /// Kernel-launch API calls over the whole capture.
    LaunchCalls,
    /// How much of the kernel time ncu measured, on one basis; and where ncu was stopped at
    /// its time budget, that budget.
    NcuCoverage {
        nccl_left_out: bool,
        /// The range ncu measured in, where it is not the scope of the kernel time the
        /// coverage is a share of (a whole-run capture, ncu on `decode`).
        #[serde(skip_serializing_if = "Option::is_none")]
        measured_in: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        budget_stop: Option<BudgetStop>,
        #[serde(skip_serializing_if = "Option::is_none")]
        budget_plan: Option<BudgetPlan>,
    },
    /// The share of the measured kernels' time in launch configurations ncu measured.
    ShapeCoverage,
    /// A range's time per instance under nsys and without a profiler (the baseline pass).
    MeasurementCost {
        /// Baseline instances compared, of how many it timed.
        compared: u64,
        timed: u64,
        /// The compared instances are the baseline's first (the capture held the first only).
        from_start: bool,
    },
    /// NCCL's share of the ranks' GPU time, and its waiting.
    NcclTime,
    /// The slowest rank in a range.
    Straggler {
        slowest: u32,
    },
    /// A repeated range's instances fall into groups that differ (see analysis::instances):
    /// each group's median, and the wall-time ledger's part that differs most between them.
    InstanceGroups {
        /// Which rule of analysis::instances split them.
        grouped_by: String,
        groups: Vec<crate::analysis::instances::Group>,
        #[serde(skip_serializing_if = "Option::is_none")]
        differs_in: Option<String>,
        /// Each group's verdict by the gpu_idle rule on its own busy share ("GPU-bound",
        /// "mostly idle"); empty when the busy shares are not known.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        verdicts: Vec<GroupUse>,
        /// Each group's Python function most samples were in (None: too few samples); empty
        /// without samples.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        python_functions: Vec<Option<String>>,
    },
    /// Graph launches whose kernels are not in the export: no kernel-time verdict for it.
    GraphLevelTrace,
    /// A range that runs CUDA graphs launches many of its kernels outside them.
    KernelsBesideGraphs,
    /// The GPU mostly waits; the CPU thread's ledger says on what.
    GpuIdle {
        #[serde(skip_serializing_if = "Option::is_none")]
        verdict: Option<CpuVerdict>,
        /// The ledger's chain of ranges ("81.4% of step is inside attn, ...").
        #[serde(skip_serializing_if = "Option::is_none")]
        story: Option<String>,
        /// The Python function most samples were in, when samples were taken.
        #[serde(skip_serializing_if = "Option::is_none")]
        python_function: Option<String>,
        /// That function is the model's own code (a module's forward, a model package): it
        /// runs every step, so it cannot be moved out of the step (rules::MODEL_CODE).
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        python_in_model: bool,
        /// The range's kernels already run from CUDA graphs.
        from_graphs: bool,
        /// Compile-bound: the kernels whose first launch followed each load of GPU code, by
        /// short name, with how many loads each followed (the export's launches).
        #[serde(skip_serializing_if = "Vec::is_empty", default)]
        compiled_for: Vec<(String, u32)>,
    },
    /// Busy in NCCL kernels that wait for the other ranks.
    GpuWaitsInNccl,
    /// NCCL waiting is a large part of the range's kernel time.
    NcclWaiting,
    /// A rank waits for its peers: they are out of step.
    RanksOutOfStep {
        waiter: u32,
        late: u32,
    },
    /// Kernel time above CPU wall time, and why.
    KernelsExceedWall {
        cause: PastWall,
    },
    /// Mean kernel under the rule's threshold, and whether the GPU waits between them.
    TinyKernels {
        gpu: GpuUse,
    },
    /// Launches of the kernel table too small to fill the GPU hold much of its time.
    SmallGrids,
    MemoryBound {
        kernels: Vec<String>,
        /// What the bytes are: matrix products' (weights) or element-wise kernels'
        /// (activations), which decides what cuts them.
        bytes_of: BytesOf,
    },
    ComputeBound {
        kernels: Vec<String>,
        /// Whether they already keep the tensor cores busy.
        tensor: TensorUse,
    },
    TensorCoresIdle,
    /// Top kernels ncu did not classify, classed by nsys's sampled GPU metrics.
    SampledBound {
        memory: Vec<String>,
        compute: Vec<String>,
    },
    /// A launch configuration whose sampled DRAM figure and ncu's differ beyond the band;
    /// `short`: its launches are shorter than the sample window, so the sampled figure is its
    /// window's (rules::SAMPLED_WINDOW), not a measure of how ncu's replay differs.
    SampledDisagrees {
        kernel: String,
        grid: String,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        short: bool,
    },
    /// Sampled kernels given no class, their launches shorter than the sample window (rules::
    /// SAMPLED_WINDOW); `kernels`: the largest of them, named.
    SampledWindow {
        kernels: Vec<String>,
    },
    /// The ncu pass's copy of the workload used the CPU beside the nsys capture (rules::
    /// EARLY_START_BESIDE): the capture's figures were taken with it busy.
    EarlyStartBeside,
    /// nsys traced the captured range's CUDA graphs per node (rules::GRAPH_NODE_TRACE): the
    /// steps that launch graphs are timed slower than they run untraced.
    GraphNodeTrace,
    /// A figure whose bound is at least itself (rules::BOUND_OVER_VALUE): the step's DRAM
    /// bytes from whole-per-cent shares.
    BoundOverValue,
    /// stage2's range figures beside NVIDIA's `nsys stats` of the same export: a fact when
    /// every one compared is equal, a caveat naming those that are not.
    NvidiaSummaries {
        differ: Vec<Differ>,
        /// Ranges whose launches are not compared (nested in their own name).
        self_nested: Vec<String>,
        /// The captured range's small-grid time beside cuda_gpu_kern_gb_sum's, where read.
        #[serde(skip_serializing_if = "Option::is_none")]
        grids: Option<Grids>,
    },
    /// ncu's figures beside NVIDIA's `ncu --print-summary per-kernel` of the same report: a
    /// fact when every value compared is equal within its rounding, a caveat naming the others.
    NvidiaNcuSummary {
        differ: Vec<NcuDiffer>,
        /// Summary rows whose name, block and grid stand for several kernels: not compared.
        ambiguous: usize,
    },
    /// A top kernel whose duration in ncu's replay differs from its launches in the workload.
    ReplayDiffers {
        kernel: String,
    },
    /// CUDA graphs instantiated in the instances after a range's warm-up: recorded again.
    GraphsRerecorded,
    /// A repeated range's later instances take another time than its first (rules::
    /// INSTANCE_TREND): each end's median, as the groups `early` and `late` (1-based
    /// ordinals, first and last) of the `steady` instances after any warm-up.
    InstanceTrend {
        early: [u64; 2],
        late: [u64; 2],
        steady: u64,
        /// Where the later instances take less: the 1-based ordinal from which every one is
        /// within the rule's threshold of the last third's median.
        #[serde(skip_serializing_if = "Option::is_none")]
        settled_at: Option<u64>,
    },
    /// The loop around the captured range: how often it recurs, its share of the loop, the
    /// GPU busy over the loop and what the time between instances holds. `decides`: the range
    /// holds under rules::LOOP_SHARE of the loop, so the loop's verdict is the one given.
    Loop {
        decides: bool,
        gpu_bound: bool,
        /// The largest parts of the time between instances, ms per cycle, largest first.
        between: Vec<(LoopPart, f64)>,
    },
    /// The captured range's time per step and the GPU's working share of it: what the levers
    /// are sized against.
    Step {
        basis: StepBasis,
        /// Whether the GPU works at least rules::GPU_IDLE's share of the step (None: unknown).
        #[serde(skip_serializing_if = "Option::is_none")]
        gpu_bound: Option<bool>,
        /// The child range that repeats inside each instance (rules::CALL): the instance is a
        /// whole call of many steps (a `generate()`), not one step.
        #[serde(skip_serializing_if = "Option::is_none")]
        call_of: Option<String>,
    },
    /// What to change first, sized per step (findings::derive::levers); `rank` 1 saves most.
    Lever {
        lever: LeverKind,
        rank: u32,
        /// How such a saving held when the change was made for real (rules' bands); None:
        /// never checked.
        #[serde(skip_serializing_if = "Option::is_none")]
        band: Option<crate::rules::Band>,
        /// A compile lever's kernels: those whose launch each load in the range came before,
        /// with the loads (the ledger's), most first.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        compiled_for: Vec<(String, u32)>,
        /// Sized per call: the step is a whole call of many steps (Claim::Step's `call_of`).
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        per_call: bool,
    },
    /// One range's verdict for kernels.md's table.
    RangeVerdict {
        verdict: RangeVerdict,
    },
    /// No ncu figures, where no failed pass says why: ncu was not asked for (`why` None), or
    /// it was and measured nothing (its own reason).
    NoNcuMetrics {
        #[serde(skip_serializing_if = "Option::is_none")]
        why: Option<String>,
    },
    PassIncomplete {
        pass: String,
        reason: String,
    },
    /// The capture names an NVTX range of which the export holds no instance (a typo such as
    /// `decod`): no figure is that range's, and no advice is given on the capture. `close`:
    /// the export's range names nearest to it (`near`), or its first few where none is.
    CaptureRangeMissing {
        range: String,
        close: Vec<String>,
        near: bool,
    },
    /// The attention kernels a phase ran (analysis::attention), each by name and kind with its
    /// share of the phase's kernel time; its softmax kernels where it ran no attention kernel.
    AttentionKernels {
        kernels: Vec<Named<Attention>>,
    },
    /// A range with FP8 matrix products: their time beside the casts to FP8 and the abs and
    /// max reductions around them (analysis::precision), by kernel.
    Fp8Work {
        kernels: Vec<Named<Fp8Role>>,
    },
    /// The casts and abs/max reductions take at least rules::FP8_AROUND of the FP8 matrix
    /// products' time.
    Fp8Overhead,
    /// A GPU-bound step's tensor-core rate against the dense BF16 tensor peak (rules::
    /// TENSOR_PEAK); `compute_bound`: its kernels ncu classed compute-bound hold more of its
    /// kernel time than those of any other class.
    TensorPeak {
        compute_bound: bool,
    },
    /// The captured range's instances by the work they do (analysis::work, rules::
    /// WORK_KINDS): each kind's child ranges and launches, with its median wall time.
    StepWork {
        kinds: Vec<crate::analysis::work::WorkKind>,
        /// Over the instances after a warm-up or compiling ones (the steady group's label),
        /// or over every instance (None).
        #[serde(skip_serializing_if = "Option::is_none")]
        steady: Option<String>,
    },
    /// Speculative decoding (analysis::spec): the draft tokens proposed and accepted, the
    /// draft's share of the two models' time, and the time per token against plain decode.
    /// A step's DRAM bytes read against its census (rules::CENSUS): None within the band, else
    /// whether it reads more.
    Census {
        above: Option<bool>,
    },
    Speculation,
    /// Speculation yields tokens slower than the target's plain decode step
    /// (rules::SPECULATION_SLOWER).
    SpeculationSlower,
    NothingStandsOut,
}

/// A kernel by its full name, with what it is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Named<T> {
    pub(crate) name: String,
    pub(crate) kind: T,
}

/// The group label of instances `first..=last` (1-based): "#1-#5", as an instance_trend
/// finding's figures are scoped and every report names them.
pub(crate) fn span([first, last]: [u64; 2]) -> String {
    format!("#{first}-#{last}")
}

impl Claim {
    pub(crate) fn role(&self) -> Role {
        use Claim::*;
        match self {
            KernelTotals
            | TopKernel { .. }
            | CapturedRange
            | PhaseTime
            | PerToken
            | LaunchCalls
            | NcuCoverage { .. }
            | ShapeCoverage
            | MeasurementCost { .. }
            | NcclTime
            | Straggler { .. }
            | AttentionKernels { .. }
            | Fp8Work { .. }
            | TensorPeak { .. }
            | StepWork { .. }
            | Speculation
            | Census { above: None } => Role::Fact,
            Census { .. } => Role::Verdict,
            Fp8Overhead | SpeculationSlower => Role::Verdict,
            NvidiaSummaries { differ, .. } if differ.is_empty() => Role::Fact,
            NvidiaSummaries { .. } => Role::Caveat,
            NvidiaNcuSummary { differ, .. } if differ.is_empty() => Role::Fact,
            NvidiaNcuSummary { .. } => Role::Caveat,
            GraphLevelTrace
            | KernelsExceedWall { .. }
            | PassIncomplete { .. }
            | SampledDisagrees { .. }
            | SampledWindow { .. }
            | EarlyStartBeside
            | GraphNodeTrace
            | BoundOverValue
            | ReplayDiffers { .. }
            | InstanceTrend { .. }
            | CaptureRangeMissing { .. }
            | InstanceGroups { .. } => Role::Caveat,
            NoNcuMetrics { .. } | NothingStandsOut => Role::Advice,
            Loop { decides: true, .. } => Role::Verdict,
            Lever { .. } => Role::Advice,
            Step { .. } => Role::Fact,
            Loop { .. } => Role::Fact,
            GpuIdle { .. }
            | GpuWaitsInNccl
            | NcclWaiting
            | RanksOutOfStep { .. }
            | TinyKernels { .. }
            | SmallGrids
            | KernelsBesideGraphs
            | MemoryBound { .. }
            | ComputeBound { .. }
            | TensorCoresIdle
            | SampledBound { .. }
            | GraphsRerecorded
            | RangeVerdict { .. } => Role::Verdict,
        }
    }

    /// Whether the claim speaks of a repeated range's instances, so kernels.md says it where
    /// it describes the ranges.
    pub(crate) fn of_instances(&self) -> bool {
        use Claim::*;
        match self {
            InstanceGroups { .. }
            | GraphsRerecorded
            | InstanceTrend { .. }
            | Loop { .. }
            | StepWork { .. } => true,
            KernelTotals
            | TopKernel { .. }
            | CapturedRange
            | PhaseTime
            | PerToken
            | LaunchCalls
            | NcuCoverage { .. }
            | ShapeCoverage
            | MeasurementCost { .. }
            | NcclTime
            | Straggler { .. }
            | GraphLevelTrace
            | KernelsExceedWall { .. }
            | PassIncomplete { .. }
            | CaptureRangeMissing { .. }
            | SampledDisagrees { .. }
            | SampledWindow { .. }
            | EarlyStartBeside
            | GraphNodeTrace
            | BoundOverValue
            | ReplayDiffers { .. }
            | NvidiaSummaries { .. }
            | NvidiaNcuSummary { .. }
            | NoNcuMetrics { .. }
            | NothingStandsOut
            | Step { .. }
            | Lever { .. }
            | GpuIdle { .. }
            | GpuWaitsInNccl
            | NcclWaiting
            | RanksOutOfStep { .. }
            | TinyKernels { .. }
            | SmallGrids
            | KernelsBesideGraphs
            | MemoryBound { .. }
            | ComputeBound { .. }
            | TensorCoresIdle
            | SampledBound { .. }
            | RangeVerdict { .. }
            | AttentionKernels { .. }
            | Fp8Work { .. }
            | Fp8Overhead
            | TensorPeak { .. }
            | Speculation
            | SpeculationSlower
            | Census { .. } => false,
        }
    }
}
