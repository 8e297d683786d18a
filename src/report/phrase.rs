//! Findings phrased: one sentence per finding, its figures printed as the finding carries
//! them (the same text summary.json holds), its scope named, its rule and sources cited.
//! Nothing here decides: which findings exist is the findings layer's business.

mod fact;
mod groups;
mod levers;
mod sampled;
mod structure;
mod sure;

pub(crate) use groups::{group_wall, ranges_left_out};
use groups::{groups_sentence, idle};
pub(crate) use levers::{band_plain, lever_clause, lever_name};
pub(crate) use sampled::short_launches;
pub(crate) use structure::{step_of, tensor_peak_clause};

use super::fmt::md;
use crate::findings::{
    span, BytesOf, Claim, CpuVerdict, Finding, GpuUse, LoopPart, Pass, PastWall, Quantity as Q,
    Scope, StepBasis, TensorUse,
};
use crate::text::code;

/// A range as the reports name it: "`decode`", or "the cudaProfilerStart/Stop windows" for
/// the windows the export reads as a range.
pub(crate) fn range_name(r: &str) -> String {
    match r == crate::config::PROFILER_WINDOW {
        true => "the cudaProfilerStart/Stop windows".to_string(),
        false => code(r),
    }
}

/// Which launches the kernel table's rows sum: "every launch in the capture", or those of
/// the captured range's instances (saying when the capture held only the first).
pub(crate) fn kernel_scope(d: &crate::findings::document::Decided) -> String {
    match (d.kernel_table_in_range(), d.facts.focus.range()) {
        (true, Some(r)) => format!("every launch in {}, {}", code(r), instances_captured(d)),
        _ => "every launch in the capture".to_string(),
    }
}

/// What the nsys capture holds: "the whole run", "NVTX range `decode`, 15 instances
/// captured" (the run facts' words, and the scope of every table over the whole capture).
pub(crate) fn capture_held(d: &crate::findings::document::Decided) -> String {
    match d.facts.focus.range() {
        Some(_) => format!("{}, {}", d.facts.capture.describe(), instances_captured(d)),
        None => d.facts.capture.describe(),
    }
}

/// How many instances of the captured range the report holds, and whether that is all:
/// "15 instances captured" or "first instance only (...)". Empty without a range.
pub(crate) fn instances_captured(d: &crate::findings::document::Decided) -> String {
    match d.captured_instances() {
        None => String::new(),
        Some((_, 0)) => "no instance in the SQLite export".to_string(),
        Some((_, 1)) if d.facts.focus.first_only => "first instance only (the capture stopped when it closed; nsys.capture_range_end=none captures every instance)".to_string(),
        Some((_, 1)) => "1 instance captured".to_string(),
        Some((_, n)) => format!("{n} instances captured"),
    }
}

/// "in `decode` (15 instances)", "in the whole capture".
pub(crate) fn scope(s: &Scope) -> String {
    let mut out = match &s.range {
        Some(r) => format!("in {}", range_name(r)),
        None => "in the whole capture".to_string(),
    };
    match (&s.group, s.instances) {
        // One group of the range's instances, e.g. "the other 61" after a warm-up.
        (Some(g), _) => out.push_str(&format!(", {}", md_group(g))),
        (None, Some(n)) if n > 1 => out.push_str(&format!(" ({n} instances)")),
        _ => {}
    }
    out
}

/// A group label as a scope: "the other 61" reads "the other 61 instances".
pub(crate) fn md_group(label: &str) -> String {
    if label.starts_with("the other ") {
        format!("{label} instances after the warm-up")
    } else if label.starts_with("the ") && label.ends_with(" steady") {
        format!("{label} instances (no compiling, no graph recording)")
    } else {
        format!("its instances {label}")
    }
}

/// "is" for one, "are" for more: "1 of the top kernels is".
fn are(n: usize) -> &'static str {
    match n {
        1 => "is",
        _ => "are",
    }
}

fn rule(f: &Finding) -> String {
    match &f.rule {
        Some(r) => format!("rule: {}", r.text),
        None => String::new(),
    }
}

/// "(rule: ...; nsys/run.sqlite)" or "(nsys/run.sqlite)".
pub(crate) fn cite(f: &Finding) -> String {
    let mut parts = Vec::new();
    let r = rule(f);
    if !r.is_empty() {
        parts.push(r);
    }
    let src = f.sources().join(", ");
    if !src.is_empty() {
        parts.push(src);
    }
    match parts.is_empty() {
        true => String::new(),
        false => format!(" ({})", parts.join("; ")),
    }
}

/// The loop around a range: its cadence and share, the loop's verdict where it decides, and
/// what the time between instances holds (no sources, no full stop).
pub(crate) fn loop_clause(
    f: &Finding,
    decides: bool,
    gpu_bound: bool,
    between: &[(LoopPart, f64)],
) -> String {
    let name = range_name(f.scope.range.as_deref().unwrap_or(""));
    let whose = match &f.scope.group {
        Some(g) => format!(" ({})", md_group(g)),
        None => String::new(),
    };
    let parts: Vec<String> = between
        .iter()
        .map(|(p, ms)| format!("{ms:.2} ms {}", loop_part(p)))
        .collect();
    let gap = match parts.is_empty() {
        true => String::new(),
        false => format!(
            "; between instances the thread spends, per cycle, {}",
            parts.join(", ")
        ),
    };
    let head = format!(
        "{name} starts every {} (median over {} cycles{whose}) and holds {} of that time; the kernels launched in it and between its instances keep the GPU busy {} of the loop",
        f.text(Q::CycleMs),
        f.text(Q::Cycles),
        f.text(Q::RangeShareOfCyclePct),
        f.text(Q::GpuBusyOfCyclePct),
    );
    match decides {
        true => format!(
            "{head}, so the loop, not the range alone, is {}{gap}",
            match gpu_bound {
                true => "GPU-bound",
                false => "bound by the CPU thread between instances",
            },
        ),
        false => format!("{head}{gap}"),
    }
}

/// A step's time and the GPU's share of it (no sources).
pub(crate) fn step_clause(
    f: &Finding,
    basis: StepBasis,
    gpu_bound: Option<bool>,
    call_of: Option<&str>,
) -> String {
    let how = match basis {
        StepBasis::Loop => "the median time from one instance's start to the next",
        StepBasis::Steady => "the median of the steady instances",
        StepBasis::Median => "the median instance",
        StepBasis::Mean if f.scope.instances == Some(1) => "its one instance",
        StepBasis::Mean => "the mean instance",
    };
    let verdict = match gpu_bound {
        Some(true) => ": GPU-bound",
        Some(false) => ": the GPU waits on the CPU the rest",
        None => "",
    };
    let work = f.figure(Q::GpuWorkOfStepPct).map_or(String::new(), |b| {
        format!(", the GPU working {} of it{verdict}", b.text)
    });
    let name = range_name(f.scope.range.as_deref().unwrap_or(""));
    match call_of {
        Some(child) => format!(
            "A call of {name} takes {} ({how}{}; {} runs {} times {}: it is a call of many steps, not one step){work}",
            f.text(Q::StepMs),
            set_apart(f),
            range_name(child),
            f.text(Q::StepsPerCall),
            match f.scope.instances {
                Some(1) => "inside it",
                _ => "inside each on average",
            }
        ),
        None => format!(
            "A step of {name} takes {} ({how}{}){work}",
            f.text(Q::StepMs),
            set_apart(f)
        ),
    }
}

/// The instances set apart from the steady ones, with their median: "; the 20 compiling GPU
/// code take a median of 42.49 ms each".
pub(crate) fn set_apart(f: &Finding) -> String {
    if let (Some(mean), Some(lo), Some(hi)) = (
        f.figure(Q::MeanStepMs),
        f.figure(Q::FastestInstanceMs),
        f.figure(Q::SlowestInstanceMs),
    ) {
        return format!(
            "; the mean, {}, is pulled away from it by instances from {} to {}",
            mean.text, lo.text, hi.text
        );
    }
    let Some(x) = f.figure(Q::SetApartMedianMs) else {
        return String::new();
    };
    let group = x.scope.group.as_deref().unwrap_or("the others");
    // "the first, a warm-up" is an apposition: it closes with a comma too.
    let label = match group.contains(", ") {
        true => format!("{group},"),
        false => group.to_string(),
    };
    if let [first, second] = set_apart_two(f).as_slice() {
        return format!("; {label} took {first} and {second}");
    }
    match x.scope.instances {
        Some(1) => format!("; {label} took {}", x.text),
        _ => format!("; {label} took a median of {} each", x.text),
    }
}

/// Each of two instances set apart, as printed, in start order (empty for other counts).
pub(crate) fn set_apart_two(f: &Finding) -> Vec<&str> {
    f.evidence
        .iter()
        .filter(|e| matches!(e.quantity, Q::SetApartFirstMs | Q::SetApartSecondMs))
        .map(|e| e.text.as_str())
        .collect()
}

/// A part of the time between instances, as the loop sentence names it.
fn loop_part(p: &LoopPart) -> String {
    match p {
        LoopPart::Sync => "in CUDA calls waiting for the GPU (sync)".to_string(),
        LoopPart::Launch => "in kernel launch calls".to_string(),
        LoopPart::OtherApi => "in other CUDA calls".to_string(),
        LoopPart::Compile => "compiling and loading GPU code".to_string(),
        LoopPart::Own => "on its own work outside CUDA calls (Python, framework)".to_string(),
        LoopPart::Range(n) => format!("in {}", range_name(n)),
    }
}

/// The fix for graph launches traced as whole graphs, for stage2's runs and hand-made ones.
pub(crate) const GRAPH_FIX: &str = "profile with `nsys.cuda_graph_trace=node` (a capture made by hand: `nsys profile --cuda-graph-trace=node`) to see the kernels inside the graphs";

/// A fact as the renderers print it on a line of its own (no closing full stop): the same
/// words as [`sentence`], which phrases every kind in one match.
pub(crate) fn fact(f: &Finding) -> String {
    sentence(f)
}

/// A finding as one sentence: a verdict, caveat or piece of advice with its full stop, a
/// fact without one. Kinds laid out by the renderers' own headline and tables give none. The
/// match is exhaustive, so a new kind does not compile until it is phrased here.
pub(crate) fn sentence(f: &Finding) -> String {
    let w = scope(&f.scope);
    match &f.claim {
        Claim::GraphLevelTrace => {
            let gpu = f
                .figure(Q::GraphGpuNs)
                .map(|g| format!(", which ran {} on the GPU as whole graphs", g.text))
                .unwrap_or_default();
            format!(
                "CUDA graphs traced as whole graphs {w}: {} graph launches{gpu}, none of their kernels in the export, so its kernel time, launches and GPU busy leave them out and no verdict is given on them; {GRAPH_FIX}{}.",
                f.text(Q::GraphLaunches),
                cite(f)
            )
        }
        Claim::KernelsBesideGraphs => format!(
            "Kernels are launched one by one beside the CUDA graphs {w}: of the {} kernel launches, {} ran from {}, and each of the others is a launch call of its own on the CPU, the cost a graph replaces with one call; what runs between the graph launches is what a graph could hold too{}.",
            f.text(Q::KernelLaunches),
            f.text(Q::GraphKernels),
            f.figure(Q::GraphLaunches)
                .map_or("CUDA graph launches".to_string(), |g| format!("{} graph launches", g.text)),
            cite(f)
        ),
        Claim::GpuIdle {
            verdict,
            story,
            python_function,
            python_in_model,
            from_graphs,
            compiled_for,
        } => idle(
            f,
            &w,
            (*verdict, story.as_deref()),
            python_function.as_deref().map(|p| (p, *python_in_model)),
            *from_graphs,
            compiled_for,
        ),
        Claim::Loop {
            decides,
            gpu_bound,
            between,
        } => format!(
            "{}{}.",
            loop_clause(f, *decides, *gpu_bound, between),
            cite(f)
        ),
        Claim::Step {
            basis,
            gpu_bound,
            call_of,
        } => format!(
            "{}{}",
            step_clause(f, *basis, *gpu_bound, call_of.as_deref()),
            cite(f)
        ),
        Claim::Lever {
            lever,
            band,
            compiled_for,
            per_call,
            ..
        } => format!(
            "{}{}{}.",
            lever_clause(f, *lever, *band, *per_call),
            groups::loads_preceded(compiled_for),
            cite(f)
        ),
        Claim::GpuWaitsInNccl => format!(
            "The GPU is busy {} of the range time {w} but working only {} of it: it mostly waits for the other ranks inside NCCL kernels{}.",
            f.text(Q::GpuBusyOfRangePct),
            f.text(Q::GpuWorkingOfRangePct),
            cite(f)
        ),
        Claim::NcclWaiting => format!(
            "NCCL kernels wait for a late rank {} of the {} of kernel time {w}, so the GPU does work {} of the range time{}.",
            f.text(Q::NcclWaitNs),
            f.text(Q::KernelTimeNs),
            f.text(Q::GpuWorkingOfRangePct),
            cite(f)
        ),
        Claim::RanksOutOfStep { waiter, late } => format!(
            "Ranks are out of step: rank {waiter} waits {} in NCCL kernels, of {} of NCCL time in its {} of kernel time (its transfers take about {}), while rank {late} waits least ({}): rank {late} arrives late. Compare the per-rank NVTX table in kernels.md to find the range it is slow in (host work, launch overhead, or uneven shards); NCCL's share of GPU time overstates communication until the ranks are in step{}.",
            rank_text(f, *waiter, Q::NcclWaitNs),
            rank_text(f, *waiter, Q::NcclTimeNs),
            rank_text(f, *waiter, Q::KernelTimeNs),
            rank_text(f, *waiter, Q::NcclTransferNs),
            rank_text(f, *late, Q::NcclWaitNs),
            cite(f)
        ),
        Claim::KernelsExceedWall { cause } => {
            let why = match cause {
                PastWall::RunsPastEnd => format!(
                    "work launched in the range runs on after it closes (its GPU projection is {})",
                    f.text(Q::GpuProjectionNs)
                ),
                PastWall::Overlap => format!(
                    "kernels overlap on concurrent streams (their sum is above the GPU projection, {})",
                    f.text(Q::GpuProjectionNs)
                ),
            };
            format!(
                "Kernel time {w} ({}) is above its CPU wall time ({}): {why}{}.",
                f.text(Q::KernelTimeNs),
                f.text(Q::WallNs),
                cite(f)
            )
        }
        Claim::TinyKernels { gpu } => {
            let what = match gpu {
                GpuUse::Waits => format!(
                    " and the GPU is busy {} of the range time: making them faster moves little",
                    f.text(Q::GpuBusyOfRangePct)
                ),
                GpuUse::Busy => format!(
                    " while the GPU is busy {} of the range time: at that size each kernel's fixed start and tail are a large part of its time",
                    f.text(Q::GpuBusyOfRangePct)
                ),
                GpuUse::Unknown => String::new(),
            };
            format!(
                "Kernels {w} are tiny (mean {}){what}; fewer, larger kernels (fusion, larger batches) do more work per launch{}.",
                f.text(Q::MeanKernelNs),
                cite(f)
            )
        }
        Claim::SmallGrids => format!(
            "Launches too small to fill the GPU hold {} of the kernel time {w}: each has at most half as many thread blocks as the GPU's {} SMs, and a block runs on one SM, so at most half the SMs work on it; the most time in them: {}{}.",
            f.text(Q::SmallGridSharePct),
            f.text(Q::GpuSms),
            per_kernel(f, &[(Q::KernelTimeNs, ""), (Q::ThreadBlocks, "most in launches of")]),
            cite(f)
        ),
        Claim::MemoryBound { kernels, bytes_of } => {
            let what = match bytes_of {
                BytesOf::MatrixProducts => "batch more requests per step (each weight byte read serves more tokens) or quantise weights to cut bytes moved",
                BytesOf::Elementwise => "they move activations, not weights: fuse them with their neighbours (torch.compile, fused kernels) so each tensor makes fewer trips to DRAM",
                BytesOf::Both => "for the matrix products, batch more requests per step or quantise weights; for the element-wise kernels, fuse them with their neighbours (torch.compile, fused kernels)",
            };
            format!(
                "{} of the top kernels {w} {} memory-bound ({}): {what}{}.",
                kernels.len(),
                are(kernels.len()),
                per_kernel(f, &[(Q::DramThroughputPct, "DRAM")]),
                cite(f)
            )
        }
        Claim::ComputeBound { kernels, tensor } => {
            let what = match tensor {
                TensorUse::Busy => "they already keep the tensor cores busy: fewer FLOPs (a lower precision such as FP8, a smaller model) or more GPUs is what moves them",
                TensorUse::Low | TensorUse::Unmeasured => "check they use tensor cores (bf16/fp8 dtypes, aligned shapes)",
            };
            format!(
                "{} of the top kernels {w} {} compute-bound ({}; each does more arithmetic per byte it moves than {}, past which this GPU's arithmetic, not its memory, sets the pace): {what}{}.",
                kernels.len(),
                are(kernels.len()),
                per_kernel(
                    f,
                    &[
                        (Q::SmThroughputPct, "SM"),
                        (Q::FlopPerByte, ""),
                        (Q::TensorPipePct, "tensor pipe")
                    ]
                ),
                f.text(Q::RidgeFlopPerByte),
                cite(f)
            )
        }
        Claim::TensorCoresIdle => format!(
            "Tensor cores are barely used by the matrix products {w} (tensor pipe active: {}): more rows per product (more tokens or requests per step) is what fills them{}.",
            per_kernel(f, &[(Q::TensorPipePct, "")]),
            cite(f)
        ),
        Claim::SampledBound { memory, compute } => sampled::bound(f, &w, memory, compute),
        Claim::SampledDisagrees { kernel, grid, short } => {
            sampled::disagrees(f, &w, kernel, grid, *short)
        }
        Claim::SampledWindow { .. } => sampled::window(f, &w),
        Claim::EarlyStartBeside => sure::early_start(f),
        Claim::GraphNodeTrace => sure::graph_nodes(f, &w),
        Claim::BoundOverValue => sure::bound_over_value(f, &w),
        Claim::InstanceTrend {
            early,
            late,
            steady,
            settled_at,
        } => trend(f, [*early, *late], *steady, *settled_at),
        Claim::GraphsRerecorded => format!(
            "CUDA graphs are recorded again after the warm-up {w}: {} instantiated there, each a capture paid again; a graph is meant to be recorded once and replayed, so look for what changes between steps (a tensor shape, a batch size: pad to a few fixed sizes) and, under torch.compile, for recompiles (`TORCH_LOGS=recompiles`){}.",
            f.text(Q::GroupGraphsInstantiated),
            cite(f)
        ),
        Claim::ReplayDiffers { kernel } => {
            let of = |pass| {
                f.evidence
                    .iter()
                    .find(|e| e.quantity == Q::MeanKernelNs && e.scope.pass == pass)
            };
            let (replay, ran) = (of(Pass::Ncu), of(Pass::Nsys));
            format!(
                "ncu's replay of {} {w} took {} a launch against {} in the workload ({:.1}x, over the launch configurations that hold {} of its time): ncu's rates for it (% of peak, its bound class) are over the replayed duration, not over how it ran{}.",
                code(kernel),
                replay.map_or_else(String::new, |e| e.text.clone()),
                ran.map_or_else(String::new, |e| e.text.clone()),
                replay.zip(ran).map_or(0.0, |(r, n)| r.value / n.value),
                f.text(Q::ShapeMeasuredPct),
                cite(f)
            )
        }
        Claim::InstanceGroups {
            groups,
            differs_in,
            verdicts,
            python_functions,
            ..
        } => groups_sentence(f, &w, groups, differs_in.as_deref(), verdicts, python_functions),
        Claim::NoNcuMetrics { why: None } => "No ncu metrics in this run: run the ncu pass (ncu.enable=true) to learn why the top kernels are slow.".to_string(),
        Claim::NoNcuMetrics { why: Some(why) } => format!(
            "No ncu metrics in this run, though the ncu pass was asked for ({}; status.json `passes.ncu`).",
            md(why)
        ),
        Claim::PassIncomplete { pass, reason } => {
            // The output a reason quotes, line by line, as it was.
            let mut lines = reason.lines();
            let first = md(lines.next().unwrap_or(""));
            let quoted: Vec<String> = lines.map(code).collect();
            match quoted.is_empty() {
                true => format!("The {pass} pass did not complete: {first}"),
                false => format!("The {pass} pass did not complete: {first} {}", quoted.join(" / ")),
            }
        }
        Claim::CaptureRangeMissing { range, close, near } => {
            let names: Vec<String> = close.iter().map(|n| range_name(n)).collect();
            let listed = match (near, names.is_empty()) {
                (_, true) => "it holds no NVTX range".to_string(),
                (true, false) => format!("its range names nearest to it: {}", names.join(", ")),
                (false, false) => format!(
                    "none of its {} range names is near it ({}{})",
                    f.text(Q::RangeNames),
                    names.join(", "),
                    if names.len() as f64 > f.get(Q::RangeNames).unwrap_or(0.0) - 0.5 {
                        ""
                    } else {
                        ", ..."
                    }
                ),
            };
            format!(
                "The capture names NVTX range {} and the export holds no instance of it{}: no figure here is that range's, and no advice is given on this capture; {listed}. {}",
                range_name(range),
                cite(f),
                match close.as_slice() {
                    [one] => format!(
                        "Capture it by its exact name ({}).",
                        code(&crate::files::shell_line(&["--nvtx-capture".into(), one.clone()]))
                    ),
                    [] => "Mark the work to capture with an NVTX range first.".to_string(),
                    _ => "Capture one of them by its exact name (`--nvtx-capture NAME`).".to_string(),
                }
            )
        }
        Claim::NothingStandsOut => {
            "No rule fired on this run's figures (the rules are listed in kernels.md); compare against a previous run with `stage2 diff`.".to_string()
        }
        // Facts: the figures a run measured, said as they are.
        Claim::KernelTotals => fact::kernel_totals(f, &w),
        Claim::LaunchCalls => fact::launch_calls(f, &w),
        Claim::NcuCoverage {
            nccl_left_out,
            measured_in,
            budget_stop,
            budget_plan,
        } => fact::ncu_coverage(
            f,
            &w,
            (*nccl_left_out, measured_in.as_deref()),
            budget_stop.as_ref(),
            budget_plan.as_ref(),
        ),
        Claim::MeasurementCost {
            compared,
            timed,
            from_start,
        } => fact::measurement_cost(f, &w, *compared, *timed, *from_start),
        Claim::ShapeCoverage => fact::shape_coverage(f, &w),
        Claim::NcclTime => fact::nccl_time(f),
        Claim::NvidiaSummaries {
            differ,
            self_nested,
            grids,
        } => fact::nvidia_summaries(f, differ, self_nested, grids.as_ref()),
        Claim::NvidiaNcuSummary { differ, ambiguous } => {
            fact::nvidia_ncu_summary(f, &w, differ, *ambiguous)
        }
        Claim::Straggler { slowest } => fact::straggler(f, &w, *slowest),
        Claim::AttentionKernels { kernels } => structure::attention(f, kernels),
        Claim::Fp8Work { kernels } => structure::fp8_work(f, &w, kernels),
        Claim::Fp8Overhead => structure::fp8_overhead(f, &w),
        Claim::TensorPeak { compute_bound } => structure::tensor_peak(f, *compute_bound),
        Claim::StepWork { kinds, steady } => structure::step_work(f, kinds, steady.as_deref()),
        Claim::Speculation => structure::speculation(f, &w),
        Claim::SpeculationSlower => structure::speculation_slower(f, &w),
        Claim::Census { above } => structure::census(f, *above),
        // Laid out by the renderers' own headline and tables, never as a lone sentence.
        Claim::TopKernel { .. }
        | Claim::CapturedRange
        | Claim::PhaseTime
        | Claim::PerToken
        | Claim::RangeVerdict { .. } => String::new(),
    }
}

/// "gemm (SM 86.7%, 310.2 FLOP/byte), copy (SM 64.1%, ...)": each kernel of the finding's
/// figures that has any of `quantities`, in the order it holds them, each figure after its
/// name ("SM 86.7%") or in its place ("{} a call").
fn per_kernel(f: &Finding, quantities: &[(Q, &str)]) -> String {
    let mut kernels: Vec<&str> = Vec::new();
    for e in &f.evidence {
        if let Some(k) = e.scope.kernel.as_deref().filter(|k| !kernels.contains(k)) {
            kernels.push(k);
        }
    }
    // Tagged where the run's tables tag it, and where two of these would read the same.
    let tagged = |k: &str| {
        f.evidence
            .iter()
            .any(|e| e.scope.tagged && e.scope.kernel.as_deref() == Some(k))
    };
    let labels = crate::model::labels(kernels.iter().copied(), 40);
    kernels
        .iter()
        .zip(labels)
        .map(|(k, label)| match tagged(k) {
            true => (k, crate::model::tagged(k, 40)),
            false => (k, label),
        })
        .filter_map(|(k, label)| {
            let figs: Vec<String> = quantities
                .iter()
                .filter_map(|(q, name)| {
                    let e = f
                        .evidence
                        .iter()
                        .find(|e| e.quantity == *q && e.scope.kernel.as_deref() == Some(k))?;
                    Some(match *name {
                        "" => e.text.clone(),
                        n if n.contains("{}") => n.replace("{}", &e.text),
                        n => format!("{n} {}", e.text),
                    })
                })
                .collect();
            (!figs.is_empty()).then(|| format!("{} ({})", md(&label), figs.join(", ")))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// One rank's figure of a finding that carries several ranks'.
fn rank_text(f: &Finding, rank: u32, q: Q) -> String {
    f.evidence
        .iter()
        .find(|e| e.quantity == q && e.scope.rank == Some(rank))
        .map_or("–".to_string(), |e| e.text.clone())
}

/// An instance trend: each end's median, the change, and what it means for the means.
fn trend(f: &Finding, [early, late]: [[u64; 2]; 2], steady: u64, settled: Option<u64>) -> String {
    let Some((e, l)) = f.trend_ends() else {
        return String::new();
    };
    let change = (l.value / e.value - 1.0) * 100.0;
    let then = match settled {
        // Settling: the early instances weigh on the means.
        Some(n) => format!(
            "its figures per instance and per token include the slower instances before #{n}, from which every instance is within {}% of the last third's median; `report.instances=skip={}` gives #{n}-#{} a median of their own",
            f.rule.map_or(0.0, |r| r.threshold),
            n - 1,
            late[1]
        ),
        None => "its figures per instance and per token are means over this run's length, and a run of another length gives others".to_string(),
    };
    let range = f.scope.range.as_deref().map(range_name).unwrap_or_default();
    format!(
        "The instances of {range} change time over the run: of the {steady} after any warm-up, the first third ({}) took a median of {} and the last third ({}) {} ({change:+.0}%; rank correlation with their order {}); {then}{}.",
        span(early),
        e.text,
        span(late),
        l.text,
        f.text(Q::RankCorrelation),
        cite(f)
    )
}
