//! Every rule and threshold the analysis and the findings decide by, with its words: the one
//! place the reports' verdicts are decided. The reports print a rule's text beside the finding
//! it made; `stage2 explain` lists them. Imports nothing of the crate, so every layer reads it.

use serde::Serialize;

mod levers;
mod sampled;
mod sure;
pub(crate) use levers::*;
pub(crate) use sampled::*;
pub(crate) use sure::*;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Rule {
    pub(crate) id: &'static str,
    pub(crate) text: &'static str,
    pub(crate) threshold: f64,
}

/// GPU busy under half of a range's time: the GPU mostly waits.
pub(crate) const GPU_IDLE: Rule = Rule {
    id: "gpu_idle",
    text: "GPU busy (union of kernel intervals, NCCL waiting left out) under 50% of the range time (the longer of CPU wall and GPU projection)",
    threshold: 50.0,
};

/// Busy, but not working: NCCL kernels wait for late ranks most of the range.
pub(crate) const NCCL_BOUND: Rule = Rule {
    id: "nccl_waiting",
    text: "GPU busy >= 50% of the range time but under 50% once NCCL waiting is left out",
    threshold: 50.0,
};

/// NCCL waiting worth calling out in a range's figures.
pub(crate) const NCCL_WAIT_SHARE: Rule = Rule {
    id: "nccl_wait_share",
    text: "NCCL waiting over 10% of the range's kernel time",
    threshold: 10.0,
};

/// A rank that waits in NCCL kernels for a large part of its kernel time: its peers are late.
pub(crate) const RANKS_OUT_OF_STEP: Rule = Rule {
    id: "ranks_out_of_step",
    text: "a rank waits in NCCL kernels for over 10% of its kernel time",
    threshold: 10.0,
};

/// Kernels so short that launch overhead, not their speed, sets the pace.
pub(crate) const TINY_KERNELS: Rule = Rule {
    id: "tiny_kernels",
    text: "mean kernel duration under 10 us",
    threshold: 10_000.0,
};

/// Launches too small to fill the GPU: a thread block runs on one SM, so a launch of B blocks
/// keeps at most B SMs working, however fast each block is.
pub(crate) const SMALL_GRIDS: Rule = Rule {
    id: "small_grids",
    text: "launches of at most half as many thread blocks (grid x * y * z) as the GPU has SMs hold >= 25% of the range's kernel time: a block runs on one SM, so at most half the SMs work on each of them",
    threshold: 25.0,
};

/// How many of a finding's kernels are named in its sentence.
pub(crate) const SMALL_GRIDS_NAMED: usize = 3;

/// The most thread blocks a launch of [`SMALL_GRIDS`] has on a GPU of `sms` SMs: half of them.
pub(crate) fn small_grid_blocks(sms: u32) -> i64 {
    i64::from(sms / 2)
}

pub(crate) const MEMORY_BOUND: Rule = Rule {
    id: "memory_bound",
    text: "a top kernel's DRAM throughput >= 60% of peak and above its SM throughput; one that issues tensor-core operations is a matrix product (its bytes mostly weights), one that issues none element-wise (its bytes activations)",
    threshold: 60.0,
};

pub(crate) const COMPUTE_BOUND: Rule = Rule {
    id: "compute_bound",
    text: "a top kernel's SM throughput >= 60% of peak and above DRAM, with FLOP/byte at or above the FP32 ridge; the tensor cores are busy when each such kernel's tensor pipe is >= 50% active",
    threshold: 60.0,
};

/// A finding's rule in summary.json: its id (the words are in the document's `rules`).
pub(crate) fn serialize_id<S: serde::Serializer>(
    rule: &Option<Rule>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match rule {
        Some(r) => s.serialize_str(r.id),
        None => s.serialize_none(),
    }
}

/// A rule's words and threshold, under its id in summary.json's `rules`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Words {
    pub(crate) text: &'static str,
    pub(crate) threshold: f64,
}

/// The rules `cited`, each once by id, in id order.
pub(crate) fn table<'a>(
    cited: impl Iterator<Item = &'a Rule>,
) -> std::collections::BTreeMap<&'static str, Words> {
    cited
        .map(|r| {
            let words = Words {
                text: r.text,
                threshold: r.threshold,
            };
            (r.id, words)
        })
        .collect()
}

/// Every rule a finding cites, for `stage2 explain`.
pub(crate) const ALL: &[Rule] = &[
    GPU_IDLE,
    NCCL_BOUND,
    NCCL_WAIT_SHARE,
    RANKS_OUT_OF_STEP,
    TINY_KERNELS,
    SMALL_GRIDS,
    MEMORY_BOUND,
    COMPUTE_BOUND,
    TENSOR_IDLE,
    KERNELS_EXCEED_WALL,
    GRAPH_LEVEL,
    KERNELS_BESIDE_GRAPHS,
    RANGE_VERDICT,
    LOOP_SHARE,
    KERNEL_ADVICE,
    LEVER,
    CALL,
    FUSE,
    SMALL_BATCH,
    WEIGHT_COPY,
    SAMPLED_BOUND,
    SAMPLED_WINDOW,
    SAMPLED_DISAGREES,
    SAMPLED_REUSE,
    EARLY_START_BESIDE,
    GRAPH_NODE_TRACE,
    BOUND_OVER_VALUE,
    REPLAY_DIFFERS,
    NVIDIA_SUMMARIES,
    NVIDIA_NCU_SUMMARY,
    GRAPHS_RERECORDED,
    INSTANCE_TREND,
    BOUND,
    WARMUP.rule(),
    ENCLOSING.rule(),
    CLUSTERS.rule(),
    SKIP.rule(),
    COMPILING.rule(),
    FP8_AROUND,
    TENSOR_PEAK,
    WORK_KINDS,
    SPECULATION_SLOWER,
    CENSUS,
];

/// The work an FP8 layer does around its matrix products (casting activations to FP8,
/// computing the scale's absolute maximum) costs kernels of its own; where that is a large
/// part of the products' own time, the saving FP8 buys in the products is spent beside them.
pub(crate) const FP8_AROUND: Rule = Rule {
    id: "fp8_around",
    text: "in a range whose kernels include FP8 matrix products, known by ncu's tensor operations of an FP8 source type in them or by an FP8 type in their name, the casts to FP8, copy kernels writing float8, and the abs and max reductions, element-wise Abs kernels and reduce kernels with a Max functor, and the scaling, every launch between an amax and the next cast to FP8 on its stream in one steady step of the captured range, at most 12 launches and no matrix product, each kernel counted by its share of its launches there, take at least 50% of the FP8 matrix products' kernel time; fusing that work saves at most its kernel time per step, a share of the GPU's work per step where the GPU waits on the host most of the step",
    threshold: 50.0,
};

/// A GPU-bound step said against the tensor peak: how far the step's tensor work is from
/// what the GPU's tensor cores can do.
pub(crate) const TENSOR_PEAK: Rule = Rule {
    id: "tensor_peak",
    text: "where the captured range's steady instances, those after a warm-up or compiling ones set apart or else every instance, keep the GPU busy at least 50% of their time and launch as many kernels each, their tensor-core rate is the tensor operations of the kernels ncu measured, ncu's rates times nsys's durations per instance, over the step's time, the steady instances' median wall time or else the mean of the longer of wall time and GPU projection, as a share of the dense BF16 tensor peak, operations of an FP8 source counted against the dense FP8 peak, twice that by NVIDIA's datasheets; it is compute-bound there when the kernels ncu classed compute-bound hold more of the kernel time than those of any other class",
    threshold: 50.0,
};

/// Steps of a loop that do different work (a step that also runs a prefill) are told apart by
/// it, not averaged together.
pub(crate) const WORK_KINDS: Rule = Rule {
    id: "work_kinds",
    text: "the captured range's instances, its steady ones where a warm-up or compiling ones are set apart, are kinds of work by the names of the ranges directly inside them, PyTorch's operator ranges and a library's own left out, and by their kernel launches; by the child ranges alone where that gives more than 6 kinds, and none where those do too; at least 4 instances and 2 kinds",
    threshold: 6.0,
};

/// Fewer instances than this are not told apart by their work.
pub(crate) const WORK_KINDS_MIN_INSTANCES: usize = 4;

/// Speculative decoding pays where its tokens come cheaper than the target's own decode steps.
pub(crate) const SPECULATION_SLOWER: Rule = Rule {
    id: "speculation_slower",
    text: "the wall time of the draft model's passes, `draft`, and the target's verify passes, `verify`, per token they yield, the accepted draft tokens and one of the target's own per verify step as stage2's `stage2:spec` marks count them, is at least 100% of the median wall time of the target's plain decode step, `decode`, of one token per sequence",
    threshold: 100.0,
};

/// A step reads what its model needs where the DRAM bytes it read are within this share of
/// its census: a ~1.2B Llama's eager decode on an H200 read 2.082 GB a step against 2.077 GB
/// of weights (docs/measured.md).
pub(crate) const CENSUS: Rule = Rule {
    id: "census",
    text: "a step's DRAM bytes read (the nsys pass's samples, the median over its steady instances) within 10% of what the model's own numbers say it must read (stage2's hook: its weights without the input embedding table, each sequence's KV cache so far, expert weights expected were tokens routed uniformly; the median pass) read what the model needs; more than 10% above, the step moves bytes beyond them (activations, weights read again or copied); more than 10% below, it reads less than its weights (served from the L2 cache, or layers skipped); the step's bytes written within 10% of the KV cache the census counts rewrite about the whole cache every step; above it in a model with experts, the kernels that copy by index (gather, index) holding at least 5% of the GPU time each are named",
    threshold: 10.0,
};

/// Compute-bound kernels whose tensor pipe is at least this active keep the tensor cores busy
/// (COMPUTE_BOUND's words).
pub(crate) const TENSOR_BUSY_PCT: f64 = 50.0;

pub(crate) const TENSOR_IDLE: Rule = Rule {
    id: "tensor_cores_idle",
    text: "tensor pipe (ncu's sm__pipe_tensor_cycles_active) under 10% active in every top kernel that issues tensor-core operations",
    threshold: 10.0,
};

/// Kernel time above the range's CPU wall time needs a reason beside it.
pub(crate) const KERNELS_EXCEED_WALL: Rule = Rule {
    id: "kernels_exceed_wall",
    text: "a range's kernel time is above its CPU wall time",
    threshold: 100.0,
};

/// Graph launches whose kernels the export does not hold.
pub(crate) const GRAPH_LEVEL: Rule = Rule {
    id: "graph_level_trace",
    text: "CUDA graph launches in the range with none of their kernels in the export (nsys traced whole graphs)",
    threshold: 0.0,
};

/// Kernels launched one by one in a range that runs CUDA graphs: each is a launch call of its
/// own on the CPU, the cost a graph replaces with one call.
pub(crate) const KERNELS_BESIDE_GRAPHS: Rule = Rule {
    id: "kernels_beside_graphs",
    text: "a range that launches CUDA graphs runs >= 10% of its kernel launches outside them (its instances after the warm-up, where the instance groups split one off; nsys traced the graphs' kernels per node): each of those is a launch call of its own on the CPU",
    threshold: 10.0,
};

/// One verdict per range (kernels.md's table): GPU-bound unless the GPU is mostly idle.
pub(crate) const RANGE_VERDICT: Rule = Rule {
    id: "range_verdict",
    text: "GPU-bound unless GPU busy is under 50% of the range time (where the range holds under 80% of its loop, the loop's busy share and the largest part of the time between its instances decide instead: rule loop_share); then the largest part of the range's wall time on its CPU thread decides: synchronize calls (sync-bound), launch calls (launch-bound), other CUDA calls (CUDA-call-bound), code compiled and loaded (a CPU gap ending in a module or library load, and the load: compile-bound) or the thread's own work (CPU-bound), followed into the child range that holds most of it",
    threshold: 50.0,
};

/// A repeated range that holds under this share of its loop (one instance's start to the
/// next's): the loop's figures decide the verdict, not the range's (a static-cache decode
/// range holds a third of generate()'s step; the host work between is the rest).
pub(crate) const LOOP_SHARE: Rule = Rule {
    id: "loop_share",
    text: "a repeated range that holds under 80% of the time from one instance's start to the next's (summed over its cycles, the steady instances' where a warm-up or compiling instances are set apart) is judged over that loop: GPU-bound when the kernels launched in the range and between instances keep the GPU busy 50% or more of it, otherwise by the largest part of the time between instances",
    threshold: 80.0,
};

/// Advice about kernels (their size, grids, bound class, tensor cores, replay) moves the wall
/// time only as far as the GPU is busy: below this share of the captured range's time (its
/// steady instances', or its loop's where the loop decides), such advice is withheld and the
/// kernels' classes stay facts in kernels.md's tables.
pub(crate) const KERNEL_ADVICE: Rule = Rule {
    id: "kernel_advice",
    text: "advice about the captured range's kernels (tiny kernels, small grids, memory- or compute-bound, tensor cores, replay) is given only where the GPU is busy at least 50% of the range time (its steady instances', or its loop's where the loop decides): below that, faster kernels move the wall time by at most the busy share",
    threshold: 50.0,
};

/// The busier unit at >= this % of its peak decides a kernel's bound class (ncu's SM and DRAM
/// throughput, or the sampled SM issue, tensor activity and DRAM bandwidth).
pub(crate) const BOUND_PCT: f64 = 60.0;

/// A kernel's bound class from ncu's counters (kernels.md prints it beside the classes).
pub(crate) const BOUND: Rule = Rule {
    id: "bound",
    text: "compute-bound when SM throughput >= 60% of peak and above DRAM throughput, and the kernel's FLOP/byte is at or above the FP32 ridge (or unmeasured); instruction-bound when the SM is that busy but its FLOP/byte is below the ridge (loads, stores, copies: not arithmetic); memory-bound when DRAM throughput >= 60% and above SM; otherwise latency-bound (neither unit near its peak)",
    threshold: BOUND_PCT,
};

/// How many child ranges deep RANGE_VERDICT follows the part of the wall time that holds most.
pub(crate) const RANGE_VERDICT_DEPTH: usize = 3;

/// ncu replays a launch on its own (by its defaults caches flushed before each pass and clocks
/// locked to base, `ncu.clock_control`), so its duration can differ from the same launches in
/// the running workload, and every rate ncu gives (% of peak) with it. On the committed samples
/// (H100 and H200) the top kernels' replays took 0.92x to 2.29x the workload's mean; 1.0x to
/// 1.5x for the matrix multiplies, about 2x for element-wise kernels of 1-2 us (and one of 36 us).
pub(crate) const REPLAY_DIFFERS: Rule = Rule {
    id: "replay_differs",
    text: "a top kernel's mean duration in ncu's replay (gpu__time_duration.sum) differs by more than 50% from the mean of its launches in the range (nsys), where the launch configurations ncu measured hold at least 99% of its time",
    threshold: 50.0,
};

/// stage2's range figures against NVIDIA's reading of the same export: equal, or said.
pub(crate) const NVIDIA_SUMMARIES: Rule = Rule {
    id: "nvidia_summaries",
    text: "each range's instances, wall time, GPU projection and GPU operations equal nvtx_gpu_proj_sum's and its kernel time and launches nvtx_kern_sum's, both nsys stats of the same export in nvidia/; any that differs is listed; launches are not compared for a range nested in its own name, whose inner launches nvtx_kern_sum counts once; the captured range's kernel time in launches of at most half as many thread blocks as the GPU has SMs, in all and per kernel, equals that of cuda_gpu_kern_gb_sum:nvtx-name's rows named by the range, compared where those rows hold all of its kernel time, as nsys names a launch by its innermost range",
    threshold: 0.0,
};

/// ncu's values against NVIDIA's summary of the same report: equal within its rounding, or said.
pub(crate) const NVIDIA_NCU_SUMMARY: Rule = Rule {
    id: "nvidia_ncu_summary",
    text: "each metric value stage2 read from ncu's raw page equals the Average of ncu --print-summary per-kernel of the same report for that kernel, block and grid, in the raw page's unit, within 0.6% of the value or 0.006 below 1: the summary prints two decimals in its own unit; rows whose kernel name, block and grid stand for several kernels are not compared",
    threshold: 0.6,
};

/// REPLAY_DIFFERS compares durations only for kernels whose launch configurations ncu
/// measured hold at least this share of their time (%): the first launch's configuration
/// alone has no like-for-like mean.
pub(crate) const REPLAY_MEASURED_PCT: f64 = 99.0;

/// A phase's floors (bytes and FLOPs of the kernels ncu measured) name the share of its kernel
/// time ncu measured where that is under this (%): below it the floor is that part's, a
/// lower bound, not the phase's.
pub(crate) const FLOOR_WHOLE_PCT: f64 = 99.0;

/// A phase whose GPU work (its projection) outlasts its CPU wall time by more than this factor
/// gives its tokens' rate over that work too: a long prefill the CPU queues and leaves.
pub(crate) const PAST_WALL_PER_TOKEN: f64 = 1.1;

/// CUDA graphs made again after a range's warm-up: a graph is recorded and instantiated once
/// and replayed; one instantiated in the steady instances was recorded again (a shape that
/// changed, a graph cache that missed), and costs a capture each time.
pub(crate) const GRAPHS_RERECORDED: Rule = Rule {
    id: "graphs_rerecorded",
    text: "the instances after a range's warm-up instantiate CUDA graphs (cudaGraphInstantiate calls on their thread)",
    threshold: 0.0,
};

/// A repeated range whose later instances take another time than its first: the median wall
/// time of the last third of its steady instances (after a warm-up group, where one was split
/// off) against that of the first third, in % (either way), where the instances' rank
/// correlation with their order says the same at least as strongly as TREND_MIN_CORRELATION
/// (a jitter in the middle is not a trend). Its per-instance and per-token figures are then
/// means over this run's length, not a constant of the workload.
pub(crate) const INSTANCE_TREND: Rule = Rule {
    id: "instance_trend",
    text: "the median wall time of a repeated push/pop phase's (or captured range's) last third of instances after its warm-up differs from that of its first third by at least the threshold (%), and Spearman's rank correlation of their wall times with their order is at least 0.6 the same way, over at least 9 instances that no other rule split into groups",
    threshold: 20.0,
};

/// The rank correlation a trend needs (either sign): about the 2% two-sided significance of
/// Spearman's coefficient over 14 instances.
pub(crate) const TREND_MIN_CORRELATION: f64 = 0.6;

/// Fewer steady instances than this get no trend (a third of them is each end's median).
pub(crate) const TREND_MIN_INSTANCES: usize = 9;

/// A rule that split a range's instances into groups: its name, its words (the reports cite
/// them) and its threshold.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Split {
    pub(crate) name: &'static str,
    #[serde(skip)]
    pub(crate) id: &'static str,
    pub(crate) text: &'static str,
    pub(crate) threshold: f64,
}

impl Split {
    /// The split as `stage2 explain` lists it.
    pub(crate) const fn rule(self) -> Rule {
        Rule {
            id: self.id,
            text: self.text,
            threshold: self.threshold,
        }
    }
}

/// Fewer instances than this are not split into groups.
pub(crate) const GROUPS_MIN_INSTANCES: usize = 4;

/// At most this many leading instances are one warm-up (torch.compile's first call compiles,
/// its second records a CUDA graph).
pub(crate) const WARMUP_MAX_INSTANCES: usize = 4;

pub(crate) const WARMUP: Split = Split {
    name: "warm-up",
    id: "instance_groups_warm_up",
    text: "the first instances (up to 4), each over 3x the median of the rest of its enclosing instance, are a warm-up",
    threshold: 3.0,
};
pub(crate) const ENCLOSING: Split = Split {
    name: "enclosing",
    id: "instance_groups_enclosing",
    text: "instances in different enclosing instances whose medians differ by over 1.5x",
    threshold: 1.5,
};
pub(crate) const CLUSTERS: Split = Split {
    name: "clusters",
    id: "instance_groups_clusters",
    text: "the sorted wall times split at their largest jump, over 2x",
    threshold: 2.0,
};
pub(crate) const COMPILING: Split = Split {
    name: "compiling",
    id: "instance_groups_compiling",
    text: "instances that spend over half their wall time compiling and loading GPU code (a CPU gap ending in a module or library load, and the load), or that record (instantiate) CUDA graphs, are set apart from the rest, whatever their place or number",
    threshold: 50.0,
};
pub(crate) const SKIP: Split = Split {
    name: "skip",
    id: "instance_groups_skip",
    text: "report.instances=skip=N: the first N instances are a warm-up group",
    threshold: 0.0,
};

/// Python samples a range needs before a verdict names its top function (fewer say too little).
pub(crate) const PYTHON_MIN_SAMPLES: u64 = 20;

/// How many of the top kernels the per-kernel advice looks at (compute-bound, memory-bound,
/// tensor cores idle).
pub(crate) const ADVICE_TOP_KERNELS: usize = 5;

/// A sampled Python function is the model's own code when it is a module's `forward` or lives in
/// a model package: such code runs every step (it can be compiled or batched, not moved out).
pub(crate) fn is_model_code(function: &str) -> bool {
    let (name, file) = match function.split_once(" (") {
        Some((n, f)) => (n, f),
        None => (function, ""),
    };
    name.ends_with(".forward")
        || [
            "/transformers/models/",
            "/torch/nn/modules/",
            "/torch/nn/functional",
        ]
        .iter()
        .any(|p| file.contains(p))
}

#[cfg(test)]
mod tests {
    #[test]
    fn model_code_is_a_modules_forward_or_a_model_package() {
        use super::is_model_code;
        assert!(is_model_code(
            "Qwen2RMSNorm.forward (/x/site-packages/transformers/models/qwen2/modeling_qwen2.py:247)"
        ));
        assert!(is_model_code(
            "apply_rotary_pos_emb (/x/site-packages/transformers/models/llama/modeling_llama.py:9)"
        ));
        assert!(is_model_code("Linear.forward"));
        assert!(!is_model_code("Sampler.sample (/srv/app/engine.py:12)"));
        assert!(!is_model_code("tokenize (/srv/app/tok.py:3)"));
    }

    /// summary.json names a finding's rule by id alone: no two rules share one.
    #[test]
    fn every_rule_has_an_id_of_its_own() {
        use super::{table, ALL, RANGE_VERDICT};
        let mut ids: Vec<&str> = ALL.iter().map(|r| r.id).collect();
        ids.sort();
        let n = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), n, "{ids:?}");
        let words = table(ALL.iter());
        assert_eq!(words.len(), n);
        assert_eq!(words["range_verdict"].text, RANGE_VERDICT.text);
    }
}
