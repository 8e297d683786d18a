//! Phrases of a range's time: a range that leaves the GPU idle, and a repeated range's
//! instances told apart into groups (with what their first calls did).

use super::*;

/// The GPU-idle verdict and what to do, from the ledger's verdict and the Python samples.
pub(super) fn idle(
    f: &Finding,
    w: &str,
    (verdict, story): (Option<CpuVerdict>, Option<&str>),
    python: Option<(&str, bool)>,
    from_graphs: bool,
    compiled_for: &[(String, u32)],
) -> String {
    let busy = match f.figure(Q::GpuWorkingOfRangePct) {
        Some(wk) => format!("{}, not counting NCCL waiting", wk.text),
        None => format!("{} of the range time", f.text(Q::GpuBusyOfRangePct)),
    };
    let next = match (verdict, python) {
        (Some(CpuVerdict::Sync), _) => "remove synchronisations from the loop (`.item()`, `.cpu()`, `.tolist()`, blocking copies) or move them off the critical path".to_string(),
        (Some(CpuVerdict::Launch), _) if from_graphs => "the kernels already run from CUDA graphs: fewer, larger graphs or fused ops cut the launches that remain".to_string(),
        (Some(CpuVerdict::Launch), _) => "capture the loop in CUDA graphs (torch.compile mode=\"reduce-overhead\"), fuse small ops, or raise the batch size so each launch does more work".to_string(),
        (Some(CpuVerdict::Compile), _) => compile_next(f, compiled_for),
        (Some(CpuVerdict::CudaCall), _) => "find the CUDA calls that are neither launches nor synchronisations (allocation, attribute queries, module loads: nsys's `cuda_api_sum`) and move them out of the loop (warm-up, caching allocator)".to_string(),
        // Already in CUDA graphs: what is left is host work around the graph launches.
        (Some(CpuVerdict::Cpu), Some((func, _))) if from_graphs => format!("the kernels already run from CUDA graphs, so the time is host work around the graph launches; look at {}, where the Python samples put it, and move it out of the step or overlap it with the graph's run (do more work per step: a larger batch)", code(func)),
        (Some(CpuVerdict::Cpu), None) if from_graphs => "the kernels already run from CUDA graphs, so the time is host work around the graph launches: profile it (`--python-sampling HZ`), then move it out of the step or overlap it with the graph's run (do more work per step: a larger batch)".to_string(),
        (Some(CpuVerdict::Cpu), Some((func, true))) => format!("look at {}, where the Python samples put the thread's own work: it is the model's own code, run every step, so compile it (torch.compile fuses its small ops and drops their Python overhead), capture the step in a CUDA graph, or do more work per step (larger batch)", code(func)),
        (Some(CpuVerdict::Cpu), Some((func, false))) => format!("look at {}, where the Python samples put the thread's own work: move it out of the step, compile it, or do more work per step (larger batch)", code(func)),
        (Some(CpuVerdict::Cpu), None) => "profile that Python/framework code (`--python-sampling HZ`, or a CPU sampler such as py-spy), then move it out of the step, compile it, or do more work per step (larger batch)".to_string(),
        (None, _) => String::new(),
    };
    let next = match next.is_empty() {
        true => " What the CPU does meanwhile is not known from this run: the wall-time ledger covers push/pop ranges whose thread's CUDA calls nsys traced, and this range has none".to_string(),
        false => format!(" Next: {next}"),
    };
    let what = match (verdict, story) {
        (Some(v), Some(s)) => format!(
            " and the range is {} (kernels.md, \"Where the wall time goes\"): {}{}",
            v.label(),
            md(s),
            loads_preceded(compiled_for)
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

/// What to do about host work the GPU waits for, by the ledger's verdict, without the Python
/// samples or the kernels compiled (a lever's short form).
pub(crate) fn host_next(verdict: Option<CpuVerdict>, from_graphs: bool) -> String {
    match (verdict, from_graphs) {
        (Some(CpuVerdict::Sync), _) => "remove synchronisations from the loop (`.item()`, `.cpu()`, `.tolist()`, blocking copies)".to_string(),
        (Some(CpuVerdict::Launch), true) => "fewer, larger CUDA graphs or fused ops cut the launches that remain".to_string(),
        (Some(CpuVerdict::Launch), false) => "capture the step in CUDA graphs (torch.compile mode=\"reduce-overhead\") or fuse small ops".to_string(),
        (Some(CpuVerdict::CudaCall), _) => "move the CUDA calls that are neither launches nor synchronisations out of the loop".to_string(),
        (_, true) => "the kernels already run from CUDA graphs; the host work around the graph launches (sampling, stopping checks, bookkeeping) is what is left: move it into the graph or overlap it with the graph's run".to_string(),
        _ => "compile the step (torch.compile) and capture it in CUDA graphs".to_string(),
    }
}

/// "; the loads came before the first launch of `a` (9 loads), `b` (2)": what was compiled.
pub(super) fn loads_preceded(compiled_for: &[(String, u32)]) -> String {
    if compiled_for.is_empty() {
        return String::new();
    }
    let shown: Vec<String> = compiled_for
        .iter()
        .take(3)
        .map(|(k, n)| format!("{} ({n} load{})", code(k), if *n == 1 { "" } else { "s" }))
        .collect();
    let more = compiled_for.len().saturating_sub(3);
    format!(
        "; each load came before a launch of {}{}",
        shown.join(", "),
        if more > 0 {
            format!(" and {more} more kernels")
        } else {
            String::new()
        }
    )
}

/// What to do about a range that compiles: by what the loads were for, and what it can save.
fn compile_next(f: &Finding, compiled_for: &[(String, u32)]) -> String {
    let lever = compile_lever(compiled_for);
    match (f.figure(Q::CompileNs), f.figure(Q::WallNs)) {
        (Some(c), Some(w)) => format!(
            "{lever}. Compiling and loading took {} of the range's {} CPU wall time, which is the most this saves",
            c.text, w.text
        ),
        _ => lever,
    }
}

/// The lever for a range that compiles, by what the loads were for.
fn compile_lever(compiled_for: &[(String, u32)]) -> String {
    let is = |p: fn(&str) -> bool| compiled_for.iter().any(|(k, _)| p(k));
    if is(|k| k.starts_with("cudnn") && k.contains("sdpa")) {
        "cuDNN builds a new attention (SDPA) kernel for each new shape, such as a KV length that grows every step: give attention a few fixed shapes (pad the KV cache or the sequence to buckets, or a static cache), run each shape once before the measured loop, or let PyTorch pick an SDPA backend that does not compile per shape (`torch.backends.cuda.enable_cudnn_sdp(False)`)".to_string()
    } else if is(|k| k.starts_with("triton") || k.contains("triton_")) {
        "Triton kernels are compiled for new shapes inside the range (torch.compile or a Triton op): mark the changing dimension dynamic (`torch._dynamo.mark_dynamic`) or bucket the shapes, and run each shape once before the measured loop".to_string()
    } else {
        "GPU code is loaded for kernels' first use inside the range: run each shape once before the measured loop (a warm-up), or give the changing shapes a few fixed sizes so the code is built once".to_string()
    }
}

/// "`decode` (30 instances) is not one kind of step (...): 1 at a median of 573.57 ms (the
/// first, a warm-up, #1), 15 at 13.72 ms (inside `generate` #1, #16-#30); ..."
pub(super) fn groups_sentence(
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
                    "; Python samples: {} in {} of {}",
                    code(func),
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
fn first_call_work(f: &Finding, group: &str) -> Option<String> {
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

/// The line under a range table that lists only the ranges with the most time: `time` names
/// the table's time.
pub(crate) fn ranges_left_out(l: &crate::findings::document::LeftOut, time: &str) -> String {
    let n = l.rows;
    format!(
        "{n} more {} left out of this table and of summary.json, the longest with {} ms of {time} (it lists the {} ranges with the most range time and those the passes captured: `report.max_ranges`, 0 lists every range); {} has every range.",
        if n == 1 { "range is" } else { "ranges are" },
        crate::report::fmt::ms(l.longest_ns as f64),
        l.max,
        crate::findings::document::RANGES_CSV,
    )
}
