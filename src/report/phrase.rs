//! Findings phrased: one sentence per finding, its figures printed as the finding carries
//! them (the same text summary.json holds), its scope named, its rule and sources cited.
//! Nothing here decides: which findings exist is the findings layer's business.

use super::fmt::md;
use crate::findings::{
    BytesOf, Claim, CpuVerdict, Finding, GpuUse, Pass, PastWall, Quantity as Q, Scope, TensorUse,
};

/// A range as the reports name it: "`decode`", or "the cudaProfilerStart/Stop windows" for
/// the windows the export reads as a range.
pub(crate) fn range_name(r: &str) -> String {
    match r == crate::config::PROFILER_WINDOW {
        true => "the cudaProfilerStart/Stop windows".to_string(),
        false => format!("`{}`", md(r)),
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
    match label.starts_with("the other ") {
        true => format!("{label} instances (the warm-up left out)"),
        false => format!("its instances {label}"),
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

/// Which launches a finding's sampled figures are over: this run's, or an earlier run's whose
/// figures this run reused (their source says so).
fn sampled_over(f: &Finding) -> &'static str {
    match f
        .sources()
        .contains(&crate::findings::document::REUSED_FIGURES)
    {
        true => "over every launch of an earlier run of the same command, reused here",
        false => "over every launch",
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

/// The fix for graph launches traced as whole graphs, for stage2's runs and hand-made ones.
pub(crate) const GRAPH_FIX: &str = "profile with `nsys.cuda_graph_trace=node` (a capture made by hand: `nsys profile --cuda-graph-trace=node`) to see the kernels inside the graphs";

/// A verdict, caveat or piece of advice as one sentence (facts are laid out by the
/// renderers' own sentences and tables, see [`fact`]).
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
        Claim::GpuIdle {
            verdict,
            story,
            python_function,
            python_in_model,
            from_graphs,
        } => idle(
            f,
            &w,
            *verdict,
            story.as_deref(),
            python_function.as_deref().map(|p| (p, *python_in_model)),
            *from_graphs,
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
        Claim::SampledBound { memory, compute } => {
            let figs = [
                (Q::SampledDramPct, "DRAM"),
                (Q::SampledComputePct, "SM issue or tensor"),
                (Q::SampledCoveragePct, "coverage"),
            ];
            let class = match (memory.len(), compute.len()) {
                (_, 0) => "memory-bound",
                (0, _) => "compute-bound",
                _ => "memory- or compute-bound",
            };
            format!(
                "{} of the top kernels {w} that ncu did not measure {} {class} by the GPU metrics nsys sampled {} ({}){}.",
                memory.len() + compute.len(),
                are(memory.len() + compute.len()),
                sampled_over(f),
                per_kernel(f, &figs),
                cite(f)
            )
        }
        Claim::GraphsRerecorded => format!(
            "CUDA graphs are recorded again after the warm-up {w}: {} instantiated there, each a capture paid again; a graph is meant to be recorded once and replayed, so look for what changes between steps (a tensor shape, a batch size: pad to a few fixed sizes) and, under torch.compile, for recompiles (`TORCH_LOGS=recompiles`){}.",
            f.text(Q::GroupGraphsInstantiated),
            cite(f)
        ),
        Claim::SampledDisagrees { kernel, grid } => format!(
            "The two tools disagree on `{}` with grid {} {w}: DRAM {} sampled {} (coverage {}), {} in ncu's replay of one: the replayed launch is not how it ran in the workload, or the launches of this configuration differ among themselves{}.",
            md(kernel),
            md(grid),
            f.text(Q::SampledDramPct),
            sampled_over(f),
            f.text(Q::SampledCoveragePct),
            f.text(Q::DramThroughputPct),
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
                "ncu's replay of `{}` {w} took {} a launch against {} in the workload ({:.1}x, over the launch configurations that hold {} of its time): ncu's rates for it (% of peak, its bound class) are over the replayed duration, not over how it ran{}.",
                md(kernel),
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
        Claim::NoNcuMetrics => "No ncu metrics in this run: run the ncu pass (ncu.enable=true) to learn why the top kernels are slow.".to_string(),
        Claim::PassIncomplete { pass, reason } => {
            format!("The {pass} pass did not complete: {}", md(reason))
        }
        Claim::NothingStandsOut => {
            "No rule fired on this run's figures (the rules are listed in kernels.md); compare against a previous run with `stage2 diff`.".to_string()
        }
        Claim::KernelTotals
        | Claim::LaunchCalls
        | Claim::NcuCoverage { .. }
        | Claim::MeasurementCost { .. }
        | Claim::ShapeCoverage
        | Claim::NcclTime
        | Claim::NvidiaSummaries { .. }
        | Claim::NvidiaNcuSummary { .. }
        | Claim::Straggler { .. } => fact(f),
        // Laid out by the renderers' own headline and tables, never as a lone sentence.
        Claim::TopKernel { .. }
        | Claim::CapturedRange
        | Claim::PhaseTime
        | Claim::PerToken
        | Claim::RangeVerdict { .. } => String::new(),
    }
}

/// "gemm (SM 86.7%, 310.2 FLOP/byte), copy (SM 64.1%, ...)": each kernel's figures of the
/// finding, in the order it holds them.
fn per_kernel(f: &Finding, quantities: &[(Q, &str)]) -> String {
    let mut kernels: Vec<&str> = Vec::new();
    for e in &f.evidence {
        if let Some(k) = e.scope.kernel.as_deref().filter(|k| !kernels.contains(k)) {
            kernels.push(k);
        }
    }
    let labels = crate::model::labels(kernels.iter().copied(), 40);
    kernels
        .iter()
        .zip(labels)
        .map(|(k, label)| {
            let figs: Vec<String> = quantities
                .iter()
                .filter_map(|(q, name)| {
                    let e = f
                        .evidence
                        .iter()
                        .find(|e| e.quantity == *q && e.scope.kernel.as_deref() == Some(k))?;
                    Some(match name.is_empty() {
                        true => e.text.clone(),
                        false => format!("{name} {}", e.text),
                    })
                })
                .collect();
            format!("{} ({})", md(&label), figs.join(", "))
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

/// The GPU-idle verdict and what to do, from the ledger's verdict and the Python samples.
fn idle(
    f: &Finding,
    w: &str,
    verdict: Option<CpuVerdict>,
    story: Option<&str>,
    python: Option<(&str, bool)>,
    from_graphs: bool,
) -> String {
    let busy = match f.figure(Q::GpuWorkingOfRangePct) {
        Some(wk) => format!("{}, not counting NCCL waiting", wk.text),
        None => format!("{} of the range time", f.text(Q::GpuBusyOfRangePct)),
    };
    let next = match (verdict, python) {
        (Some(CpuVerdict::Sync), _) => "remove synchronisations from the loop (`.item()`, `.cpu()`, `.tolist()`, blocking copies) or move them off the critical path".to_string(),
        (Some(CpuVerdict::Launch), _) if from_graphs => "the kernels already run from CUDA graphs: fewer, larger graphs or fused ops cut the launches that remain".to_string(),
        (Some(CpuVerdict::Launch), _) => "capture the loop in CUDA graphs (torch.compile mode=\"reduce-overhead\"), fuse small ops, or raise the batch size so each launch does more work".to_string(),
        (Some(CpuVerdict::CudaCall), _) => "find the CUDA calls that are neither launches nor synchronisations (allocation, attribute queries, module loads: nsys's `cuda_api_sum`) and move them out of the loop (warm-up, caching allocator)".to_string(),
        (Some(CpuVerdict::Cpu), Some((func, true))) => format!("look at `{}`, where the Python samples put the thread's own work: it is the model's own code, run every step, so compile it (torch.compile fuses its small ops and drops their Python overhead), capture the step in a CUDA graph, or do more work per step (larger batch)", md(func)),
        (Some(CpuVerdict::Cpu), Some((func, false))) => format!("look at `{}`, where the Python samples put the thread's own work: move it out of the step, compile it, or do more work per step (larger batch)", md(func)),
        (Some(CpuVerdict::Cpu), None) => "profile that Python/framework code (`--python-sampling HZ`, or a CPU sampler such as py-spy), then move it out of the step, compile it, or do more work per step (larger batch)".to_string(),
        (None, _) => String::new(),
    };
    let next = match next.is_empty() {
        true => " What the CPU does meanwhile is not known from this run: the wall-time ledger covers push/pop ranges whose thread's CUDA calls nsys traced, and this range has none".to_string(),
        false => format!(" Next: {next}"),
    };
    let what = match (verdict, story) {
        (Some(v), Some(s)) => format!(
            " and the range is {} (kernels.md, \"Where the wall time goes\"): {}",
            v.label(),
            md(s)
        ),
        _ => String::new(),
    };
    // Two or three unlike instances: the verdict is mostly the slowest one's.
    let few = match (f.figure(Q::FastestInstanceMs), f.figure(Q::SlowestInstanceMs)) {
        (Some(lo), Some(hi)) => format!(
            " Its {} instances took {} to {}: the slowest decides this verdict, and the instances are too few to group.",
            f.scope.instances.unwrap_or(0),
            lo.text,
            hi.text
        ),
        _ => String::new(),
    };
    format!(
        "The GPU is idle most of the time {w} (busy {busy}){what}.{few}{next}{}.",
        cite(f)
    )
}

/// "`decode` (30 instances) is not one kind of step (...): 1 at a median of 573.57 ms (the
/// first (warm-up), #1), 15 at 13.72 ms (inside `generate` #1, #16-#30); ..."
fn groups_sentence(
    f: &Finding,
    w: &str,
    groups: &[crate::findings::document::Group],
    differs_in: Option<&str>,
    verdicts: &[crate::findings::GroupUse],
    python: &[Option<String>],
) -> String {
    let fig = |label: &str, q: Q| f.in_group(q, label);
    let parts: Vec<String> = groups
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let at = group_wall(f, g, "a median of ");
            let tps = fig(&g.label, Q::TokensPerS)
                .map(|e| format!(", {}", e.text))
                .unwrap_or_default();
            let contiguous = g.last - g.first + 1 == g.instances;
            let which = match (g.first == g.last, contiguous) {
                (true, _) => format!("#{}", g.first),
                (false, true) => format!("#{}-#{}", g.first, g.last),
                (false, false) => format!(
                    "between #{} and #{}, interleaved with the others",
                    g.first, g.last
                ),
            };
            let verdict = match (fig(&g.label, Q::GpuBusyOfRangePct), verdicts.get(i)) {
                (Some(b), Some(v)) => {
                    format!("; GPU busy {} of their time: {}", b.text, v.label())
                }
                (Some(b), None) => format!("; GPU busy {} of their time", b.text),
                _ => String::new(),
            };
            let sampled = match (
                python.get(i).and_then(Option::as_deref),
                fig(&g.label, Q::PythonSamplePct),
                fig(&g.label, Q::PythonSamples),
            ) {
                (Some(func), Some(share), Some(n)) => format!(
                    "; Python samples: `{}` in {} of {}",
                    md(func),
                    share.text,
                    n.text
                ),
                _ => String::new(),
            };
            let work = first_call_work(f, &g.label)
                .map(|w| format!("; their CUDA calls: {w}"))
                .unwrap_or_default();
            format!(
                "{} at {at}{tps} ({}, {which}{work}{verdict}{sampled})",
                g.instances,
                md(&g.label)
            )
        })
        .collect();
    let mut s = format!("The instances {w} are not one kind: {}", parts.join("; "));
    if let Some(part) = differs_in {
        let per: Vec<String> = groups
            .iter()
            .filter_map(|g| fig(&g.label, Q::GroupLedgerPartNs).map(|e| e.text.clone()))
            .collect();
        s.push_str(&format!(
            ". What differs most between them on the CPU thread (wall-time ledger, median per instance): {part}, {}",
            per.join(" / ")
        ));
    }
    format!(
        "{s}. Figures over all its instances (per instance, per token, the range's verdict) mix these kinds{}.",
        cite(f)
    )
}

/// "2 CUDA graphs instantiated (recorded), 41 modules of GPU code loaded (...)": what a group's
/// instances do that makes a first call slow, from their CUDA calls (cudaGraphInstantiate,
/// cuModuleLoad* / cuLibraryLoad*); None when they do neither. Loading is not compiling: an
/// eager PyTorch run loads its own libraries' code lazily too.
pub(crate) fn first_call_work(f: &Finding, group: &str) -> Option<String> {
    let graphs = f
        .in_group(Q::GroupGraphsInstantiated, group)
        .map(|e| e.value);
    let modules = f.in_group(Q::GroupModulesLoaded, group).map(|e| e.value);
    let parts: Vec<String> = [
        graphs.map(|n| {
            crate::model::counted(
                n as u64,
                "CUDA graph instantiated (recorded)",
                "CUDA graphs instantiated (recorded)",
            )
        }),
        modules.map(|n| {
            crate::model::counted(
                n as u64,
                "module of GPU code loaded (cuModuleLoad/cuLibraryLoad, for its kernels' first use)",
                "modules of GPU code loaded (cuModuleLoad/cuLibraryLoad, for their kernels' first use)",
            )
        }),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// A group's wall time per instance as a sentence says it: its one instance's ("74.69 ms"),
/// both of two in start order ("172.23 ms and 0.95 ms": the median of two says neither), else
/// its median after `median` ("a median of 0.85 ms"; the headline's short form passes "").
pub(crate) fn group_wall(
    f: &Finding,
    g: &crate::findings::document::Group,
    median: &str,
) -> String {
    let text = |ns: f64| Q::GroupMedianWallNs.text(ns);
    match g.instances {
        1 => text(g.median_wall_ns),
        2 => match g.walls_of_two.as_slice() {
            [a, b] => format!("{} and {}", text(*a), text(*b)),
            _ => format!("{} and {}", text(g.min_wall_ns), text(g.max_wall_ns)),
        },
        _ => format!(
            "{median}{}",
            f.in_group(Q::GroupMedianWallNs, &g.label)
                .map_or_else(|| text(g.median_wall_ns), |e| e.text.clone())
        ),
    }
}

/// A fact as one sentence.
/// The line under a range table that lists only the ranges with the most time: `time` names
/// the table's time, `key` where summary.json has every range's row.
pub(crate) fn ranges_left_out(
    l: &crate::findings::document::LeftOut,
    time: &str,
    key: &str,
) -> String {
    let n = l.rows;
    format!(
        "{n} more {} left out of this table, the longest with {} ms of {time} (it lists the {} ranges with the most range time: `report.max_ranges`, 0 lists every range); summary.json's `{key}` has every range.",
        if n == 1 { "range is" } else { "ranges are" },
        super::fmt::ms(l.longest_ns as f64),
        l.max,
    )
}

/// Where ncu was stopped at its time budget: the budget, and what a re-run does about the rest.
fn budget_words(b: &crate::findings::BudgetStop) -> String {
    format!(
        "; ncu was stopped at its time budget of {:.0} s ({}; status.json){}",
        b.s,
        md(&b.from),
        match b.cached {
            true =>
                ": the metrics cache keeps what it measured, so a re-run profiles only the rest",
            false => "",
        }
    )
}

pub(crate) fn fact(f: &Finding) -> String {
    let w = scope(&f.scope);
    match &f.claim {
        Claim::KernelTotals => format!(
            "GPU kernel time {w}: {} in {} launches of {} kernels{}",
            f.text(Q::KernelTimeNs),
            f.text(Q::KernelLaunches),
            f.text(Q::DistinctKernels),
            cite(f)
        ),
        Claim::LaunchCalls => format!(
            "Kernel launch API calls {w} (nsys's cuda_api_sum counts every call it recorded, not one range's, and graph kernels need none): {}, {} of CPU time{}",
            f.text(Q::LaunchApiCalls),
            f.text(Q::LaunchApiNs),
            cite(f)
        ),
        Claim::NcuCoverage {
            nccl_left_out,
            budget_stop,
        } => format!(
            "Hardware counters (ncu) measured for {} kernels {w}: {} of the kernel time{}, {} left out{}{}",
            f.text(Q::NcuKernelsMeasured),
            f.text(Q::NcuCoveragePct),
            if *nccl_left_out {
                " outside NCCL (ncu leaves NCCL kernels out)"
            } else {
                ""
            },
            f.text(Q::NcuLeftOutPct),
            budget_stop.as_ref().map(budget_words).unwrap_or_default(),
            cite(f)
        ),
        Claim::MeasurementCost {
            compared,
            timed,
            from_start,
        } => {
            let added = f.figure(Q::MeasurementAddedPct).map_or(0.0, |e| e.value);
            format!(
                "Measurement cost {w}: under nsys {} per instance; without a profiler (the baseline pass, {}) {}; the measurement added {}{}{}",
                f.text(Q::NsysMsPerInstance),
                match (compared == timed, from_start) {
                    (true, _) => format!("{compared} instances"),
                    (false, true) => format!("the first {compared} of the {timed} instances it timed, as nsys held"),
                    (false, false) => format!("the last {compared} of the {timed} instances it timed, as many as nsys held"),
                },
                f.text(Q::BaselineMsPerInstance),
                if added >= 0.0 { "+" } else { "" },
                f.text(Q::MeasurementAddedPct),
                cite(f)
            )
        }
        Claim::ShapeCoverage => {
            let weighed = f.figure(Q::KernelsWeighedByShape).map_or(0.0, |e| e.value);
            format!(
                "Launch configurations {w}: the grids and blocks ncu measured hold {} of the measured kernels' time (nsys, per launch configuration){}{}",
                f.text(Q::ShapeMeasuredPct),
                match weighed > 0.0 {
                    true => format!(
                        "; {} measured in several {} their figures weighed by each one's time",
                        count(f.text(Q::KernelsWeighedByShape), weighed, "kernel"),
                        if weighed == 1.0 { "has" } else { "have" }
                    ),
                    false => String::new(),
                },
                cite(f)
            )
        }
        Claim::NcclTime => {
            let mut s = format!(
                "NCCL kernels take {} of the ranks' GPU time",
                f.text(Q::NcclSharePct)
            );
            if let Some(r) = f.figure(Q::NcclWaitNs).and_then(|e| e.scope.rank) {
                s.push_str(&format!(
                    "; rank {r}, which waits longest, spends {} of its {} of kernel time in them, {} of it waiting for a late peer, so its transfers take about {} (fastest rank per collective)",
                    rank_text(f, r, Q::NcclTimeNs),
                    rank_text(f, r, Q::KernelTimeNs),
                    rank_text(f, r, Q::NcclWaitNs),
                    rank_text(f, r, Q::NcclTransferNs)
                ));
            }
            s + &cite(f)
        }
        Claim::NvidiaSummaries { differ, self_nested } => {
            let mut s = format!(
                "NVIDIA's `nsys stats` of the same export (nvtx_gpu_proj_sum, nvtx_kern_sum) beside these reports' range figures: {}, {} figures compared (per range its instances, wall time, GPU projection, GPU operations, kernel time and launches), {} differ",
                count(
                    f.text(Q::NvidiaRanges),
                    f.get(Q::NvidiaRanges).unwrap_or(0.0),
                    "range"
                ),
                f.text(Q::NvidiaFiguresCompared),
                f.text(Q::NvidiaFiguresDiffer)
            );
            s.push_str(&differing(
                differ
                    .iter()
                    .map(|d| (md(&d.range), d.column, d.ours, d.theirs)),
            ));
            if !self_nested.is_empty() {
                let names: Vec<String> = self_nested.iter().map(|n| format!("`{}`", md(n))).collect();
                s.push_str(&format!(
                    "; the launches of {} are not compared: instances nested in their own name, whose launches these reports count in each instance that holds them and nvtx_kern_sum's Kern Inst once",
                    names.join(", ")
                ));
            }
            s + &cite(f)
        }
        Claim::NvidiaNcuSummary { differ, ambiguous } => {
            let mut s = format!(
                "NVIDIA's `ncu --print-summary per-kernel` of the same report beside these reports' ncu figures {w}: {}, {} values compared (every metric the summary holds of each kernel and launch configuration), {} differ",
                count(
                    f.text(Q::NvidiaKernels),
                    f.get(Q::NvidiaKernels).unwrap_or(0.0),
                    "kernel"
                ),
                f.text(Q::NvidiaFiguresCompared),
                f.text(Q::NvidiaFiguresDiffer)
            );
            s.push_str(&differing(
                differ
                    .iter()
                    .map(|d| (md(&d.kernel), d.metric.as_str(), d.ours, d.theirs)),
            ));
            if *ambiguous > 0 {
                s.push_str(&format!("; {ambiguous} summary rows not compared: their kernel name, block and grid stand for several kernels of the report"));
            }
            s + &cite(f)
        }
        Claim::Straggler { slowest } => format!(
            "Slowest rank {w}: rank {slowest}, {} vs a median of {}; a range that holds collectives ends about together on every rank, so NCCL waiting is what shows who is late{}",
            f.text(Q::SlowestRankWallNs),
            f.text(Q::MedianRankWallNs),
            cite(f)
        ),
        // Not facts: phrased by [`sentence`], or laid out by the renderers' own headline and
        // tables.
        Claim::TopKernel { .. }
        | Claim::CapturedRange
        | Claim::PhaseTime
        | Claim::PerToken
        | Claim::RangeVerdict { .. }
        | Claim::InstanceGroups { .. }
        | Claim::GraphLevelTrace
        | Claim::GpuIdle { .. }
        | Claim::GpuWaitsInNccl
        | Claim::NcclWaiting
        | Claim::RanksOutOfStep { .. }
        | Claim::KernelsExceedWall { .. }
        | Claim::TinyKernels { .. }
        | Claim::MemoryBound { .. }
        | Claim::ComputeBound { .. }
        | Claim::TensorCoresIdle
        | Claim::SampledBound { .. }
        | Claim::SampledDisagrees { .. }
        | Claim::ReplayDiffers { .. }
        | Claim::GraphsRerecorded
        | Claim::NoNcuMetrics
        | Claim::PassIncomplete { .. }
        | Claim::NothingStandsOut => String::new(),
    }
}

/// ": `what` column 1 here, 2 in NVIDIA's; ..." for the figures that differ from NVIDIA's
/// summary (the first 5, then how many more; summary.json holds them all); empty when none.
fn differing<'a>(figures: impl ExactSizeIterator<Item = (String, &'a str, f64, f64)>) -> String {
    const LISTED: usize = 5;
    let n = figures.len();
    let listed: Vec<String> = figures
        .take(LISTED)
        .map(|(what, column, ours, theirs)| {
            format!("`{what}` {column} {ours} here, {theirs} in NVIDIA's")
        })
        .collect();
    match (listed.is_empty(), n > LISTED) {
        (true, _) => String::new(),
        (false, false) => format!(": {}", listed.join("; ")),
        (false, true) => format!(": {} and {} more", listed.join("; "), n - LISTED),
    }
}

/// "1 kernel", "3 kernels": a count as printed, with its noun.
fn count(text: String, n: f64, noun: &str) -> String {
    match n == 1.0 {
        true => format!("{text} {noun}"),
        false => format!("{text} {noun}s"),
    }
}
