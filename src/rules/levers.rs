//! The levers' rules, and the band each lever's saving held in when the change was made for
//! real on a GPU (`bench/run.sh levers`): the reports print a lever's band beside its saving,
//! and a lever with none says that its saving was never checked against a real change.

use serde::Serialize;

use super::Rule;

/// Levers: each sized per step from this run's figures, ranked by that saving.
pub(crate) const LEVER: Rule = Rule {
    id: "lever",
    text: "a lever is sized per step (the loop's cycle where the loop decides, else the steady instances' median, else the mean instance): compiling and loading GPU code, its measured time per instance, or where the instances that compile are set apart and are no warm-up, its median per compiling instance and its sum over the captured instances, ranked by that sum's share of their time, the other levers then by their saving times the instances over that time; host work where the GPU works under 50% of the step, the step's time the GPU waits beyond that compiling (an upper bound: the kernels stay), with the KV cache preallocated first where the step writes the whole cache within 10% of the census's, and the wait for the GPU between a loop's steps named where it is at least 10% of the step; compiling turned off at cuDNN's SDPA backend first where at least half the loads named came just before its kernels; memory-bound kernels where the GPU is busy, (1 - DRAM throughput) of their time (an upper bound at the peak bandwidth); NCCL waiting for late ranks, its time per step; levers are ranked by their saving's share of the step (a per-token lever's of the time per token), those that move the wall time only after another lever last; levers under 5% of the step are not given",
    threshold: 5.0,
};

/// A captured range whose instances each run a child range several times is a whole call of
/// steps (a `generate()` holding its decode steps), not one step: its levers are per call, and
/// a band measured on steps is not theirs.
pub(crate) const CALL: Rule = Rule {
    id: "call",
    text: "the captured range is a call of steps, not a step, where its instances hold at least 2 forward passes (the median count of stage2:tokens marks in an instance holding any) and a range directly inside it has at least 2 instances per instance of it on average; the one with the most names the steps; levers are then sized per call, and host work carries no band, as its band was measured on decode steps",
    threshold: 2.0,
};

/// The mean instance is no step where it is this far (a share of the median) from the median
/// instance: one slow instance (a first step that allocates, say) pulls it away from the rest,
/// and the median instance is the step.
pub(crate) const MEDIAN_STEP: f64 = 0.05;

/// Fusing a GPU-bound step's unfused element-wise and reduction kernels into their neighbours.
pub(crate) const FUSE: Rule = Rule {
    id: "fuse",
    text: "where the GPU works at least 50% of the step, the framework's own element-wise, reduction and concatenation kernels (PyTorch's elementwise_kernel, vectorized_elementwise_kernel, unrolled_elementwise_kernel, reduce_kernel, CatArrayBatchedCopy; a compiler's generated kernels are fused already) each make one pass over memory; fusing them into their neighbours saves at most their time per step, an upper bound as fused work still reads its inputs and writes its outputs once",
    threshold: 5.0,
};

/// The share of a loop's step, in %, spent between instances in calls waiting for the GPU
/// above which the host-work lever names it: a value read back to the host every step.
pub(crate) const SYNC_BETWEEN: f64 = 10.0;

/// A lever that saves under this share of the step is no lever.
pub(crate) const LEVER_MIN_PCT: f64 = 5.0;

/// More sequences per forward pass where a decode step's cost is mostly fixed per step: the
/// host work the GPU waits for is the same for one sequence or several, and so is reading the
/// weights.
pub(crate) const SMALL_BATCH: Rule = Rule {
    id: "small_batch",
    text: "where every tokens mark (stage2:tokens batch=B new=N) in the captured range's steps is of one new token per sequence, and the step's unchanging part is at least 50% of it: the step's compiling stays once a step; the rest of the time the GPU waits stays once a forward pass, and so does, where the samples give the step's DRAM bytes, reading them at the ceiling bandwidth (at most the GPU's work), only the weights of them where the model's census gives those, the rest growing with the sequences; the rest of the GPU's work grows by B'/B (an upper bound on how that work grows); the time per token at B' sequences is that step over B' tokens, against the step over its tokens now; B' is 2B, or where the steps (4 or more) run several passes of one sequence each, one pass of all of them, said to hold only where they are separate requests",
    threshold: 50.0,
};

/// Copies by index of weight-sized data: a mixture-of-experts layer's eager path gathers the
/// chosen experts' weights every step before its matrix products read them.
pub(crate) const WEIGHT_COPY: Rule = Rule {
    id: "weight_copy",
    text: "kernels that copy by index (gather or index in their name) moving per call, ncu's DRAM rate times the launches' mean nsys duration, at least 50% of what the captured range's largest matrix product (a kernel issuing tensor-core operations) moves per call: their kernel time per step is the saving; where the GPU works under 50% of the step it moves the wall time only once the host work is off the step, and is sized against the GPU's work per step",
    threshold: 50.0,
};

/// How a lever's predicted saving held when the change was made for real: the measured saving
/// over the predicted one, lowest and highest, over the changes named, on one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Band {
    pub(crate) lo: f64,
    pub(crate) hi: f64,
    pub(crate) gpu: &'static str,
    pub(crate) changes: &'static [&'static str],
    pub(crate) source: &'static str,
}

/// The run of `bench/run.sh levers` the bands come from.
const LEVERS_RUN: &str = "bench/runs/2026-11-28-h200-levers.md";

/// Host work of a CPU-bound eager decode (the GPU waiting on Python and launches), removed by
/// recording the step in CUDA graphs (0.86, 0.88) or compiling it (0.94, 0.98), two runs.
pub(crate) const HOST_WORK_BAND: Band = Band {
    lo: 0.86,
    hi: 0.98,
    gpu: "H200",
    changes: &[
        "eager -> static cache with CUDA graphs",
        "eager -> torch.compile",
    ],
    source: LEVERS_RUN,
};

/// Compiling inside the step (cuDNN's SDPA built for each new KV length), removed by turning
/// cuDNN's SDPA off (1.001, 1.01), two runs.
pub(crate) const COMPILE_BAND: Band = Band {
    lo: 1.0,
    hi: 1.01,
    gpu: "H200",
    changes: &["cuDNN SDPA -> SDPA without cuDNN"],
    source: LEVERS_RUN,
};

/// More sequences per pass of a CPU-bound eager decode: the per-token saving the lever's split
/// of the batch-1 step gives at 8 sequences against the measured batch-8 step (1.05), one run.
pub(crate) const BATCH_BAND: Band = Band {
    lo: 1.05,
    hi: 1.05,
    gpu: "H200",
    changes: &["eager batch 1 -> 8 (the lever's split carried to 8 sequences)"],
    source: LEVERS_RUN,
};
