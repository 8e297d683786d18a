//! kernels.md's sections after the kernel table: the NVTX ranges, the roofline with its
//! context, and the ranks of a multi-process run.

use super::*;

pub(super) fn ranges_section(a: &Decided, f: &Findings, s: &mut String) {
    if a.tables.ranges.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n## Per NVTX range (`{}`)\n\nGPU work counts the kernels, memcpys and memsets launched inside the range (push/pop: on its thread), kernels of CUDA graphs included when nsys traced them per node; it is measured on the GPU's timeline: the projection runs from the first start to the last end of that work (as `nsys stats --report nvtx_gpu_proj_sum`). GPU busy is the union of its kernels' execution intervals, over the projection and over the range time (the longer of CPU wall and GPU projection). Times in ms. Verdict ({}).\n",
        a.facts.sqlite_file,
        rules::RANGE_VERDICT.text
    );
    let _ = writeln!(s, "| range | style | instances | CPU wall | GPU projection | kernel time | GPU busy of projection | GPU busy of range time | kernels | from graphs | graph launches | per instance: wall min / median / max | projection median | kernels median | verdict |");
    let _ = writeln!(
        s,
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|"
    );
    // Each range's verdict, looked up by name: one scan of the findings, not one per range
    // (73k distinct names made that scan quadratic).
    let mut verdicts = std::collections::HashMap::new();
    for x in f.made() {
        if let (Claim::RangeVerdict { verdict }, Some(range)) = (&x.claim, x.scope.range.as_deref())
        {
            verdicts.entry(range).or_insert(*verdict);
        }
    }
    let (rows, left) = a
        .listed
        .split(a.tables.ranges, |r| &r.name, |r| r.wall_ns.max(r.proj_ns));
    for r in rows {
        let w = &r.wall_spread;
        // Worded only for the rows listed (a verdict's words are a new string).
        let verdict = verdicts
            .get(r.name.as_str())
            .map_or_else(|| "–".to_string(), ToString::to_string);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} / {} | {} | {} | {} |",
            md(&r.name),
            r.style,
            r.instances,
            ms(r.wall_ns as f64),
            ms(r.proj_ns as f64),
            ms(r.kernel_ns as f64),
            pct(r.gpu_busy_pct),
            pct(r.busy_of_range_pct()),
            r.launches,
            r.graph_kernels,
            a.tables.graphs.get(&r.name).map_or(0, |g| g.launches),
            ms(w.min),
            ms(w.median),
            ms(w.max),
            ms(r.proj_spread.median),
            r.launches_spread.median,
            md(&verdict)
        );
    }
    if let Some(l) = left {
        let _ = writeln!(s, "\n{}", phrase::ranges_left_out(&l, "range time"));
    }
    for r in a
        .tables
        .ranges
        .iter()
        .filter(|r| r.nested_in_own_name > 0 && a.listed.has(&r.name))
    {
        let _ = writeln!(
            s,
            "\n{} nests in itself: {} of its {} instances are inside another {}. A launch there counts in every instance that holds it, in kernel time and in kernels alike, as `nsys stats` counts its Total Time (`nvtx_kern_sum`) and Total GPU Ops (`nvtx_gpu_proj_sum`); `nvtx_kern_sum`'s Kern Inst counts such a launch once, so its instance counts are lower than the kernels here.",
            code(&r.name),
            r.nested_in_own_name,
            r.instances,
            code(&r.name)
        );
    }
    crate::report::sampled::step_bytes(a, s);
    for x in f.made().filter(|x| x.claim.of_instances()) {
        let _ = writeln!(s, "\n{}", phrase::sentence(x));
    }
}

/// The tensor source types whose operations ncu counted (`sm__ops_path_tensor_src_<type>`):
/// tensor work of any other type is not in the achieved FLOP/s.
fn tensor_sources(a: &Decided) -> String {
    match a.tensor_sources.is_empty() {
        true => "none".into(),
        false => a.tensor_sources.join(", "),
    }
}

/// Which clocks the peaks are at: ncu's peaks per second follow the clock each kernel ran at,
/// and the peaks are the highest over the kernels (" at the highest SM and DRAM clocks among the
/// 18 kernels it measured (SM 1.98 GHz, DRAM 3.19 GHz)"); nothing where the clocks are unknown.
fn peak_clocks(p: &crate::findings::document::Peaks) -> String {
    match (p.kernels, p.sm_hz > 0.0 && p.dram_hz > 0.0) {
        (0, _) | (_, false) => String::new(),
        (1, true) => format!(
            " at the clocks of the one kernel it measured (SM {:.2} GHz, DRAM {:.2} GHz)",
            p.sm_hz / 1e9,
            p.dram_hz / 1e9
        ),
        (n, true) => format!(
            " at the highest SM and DRAM clocks among the {n} kernels it measured (SM {:.2} GHz, DRAM {:.2} GHz)",
            p.sm_hz / 1e9,
            p.dram_hz / 1e9
        ),
    }
}

/// The FP8 tensor roof, where a kernel's work runs against it: ncu has no FP8 peak metric.
fn fp8_roof(a: &Decided, p: &crate::findings::document::Peaks) -> String {
    let fp8 = a
        .tables
        .kernels
        .iter()
        .chain(a.tables.ncu_kernels)
        .filter_map(|r| a.point(r))
        .any(|pt| p.roof_for(&pt).0 == "FP8 tensor");
    match (fp8, p.fp8_tensor_flops()) {
        (true, Some(t)) => format!(
            " (FP8 tensor {:.0} TFLOP/s: twice it, as NVIDIA's datasheets give dense FP8)",
            t / 1e12
        ),
        _ => String::new(),
    }
}

pub(super) fn roofline_section(a: &Decided, f: &Findings, s: &mut String, width: usize) {
    let Some(p) = a.tables.peaks else {
        return;
    };
    let _ = writeln!(
        s,
        "\n## Roofline\n\nDevice peaks from ncu's own peak metrics{}: FP32 {:.1} TFLOP/s, FP16 (non-tensor) {:.1} TFLOP/s, FP64 {:.1} TFLOP/s, BF16 tensor {} TFLOP/s{}, DRAM {:.2} TB/s; the FP32 ridge is at {:.1} FLOP/byte. Achieved FLOP/s add the FP64/FP32/FP16 instruction counters (sm__sass_thread_inst_executed_op_*, FMA counted twice) and the tensor-core operations of the source types ncu measured ({}). \"% of DRAM peak\" is the kernel's DRAM bytes over its duration at the DRAM peak above; the kernel table's DRAM % is ncu's own percentage-of-peak metric over elapsed cycles: two measurements of the same launch, which need not agree exactly. Chart: roofline.svg.\n",
        peak_clocks(p),
        p.fp32_flops / 1e12,
        p.fp16_flops / 1e12,
        p.fp64_flops / 1e12,
        p.tensor_flops.map(|t| format!("{:.0}", t / 1e12)).unwrap_or_else(|| "–".into()),
        fp8_roof(a, p),
        p.dram_bytes_per_s / 1e12,
        p.ridge_fp32(),
        tensor_sources(a)
    );
    let _ = writeln!(s, "| # | kernel | GFLOP/s | of which tensor | % of peak (its roof) | DRAM GB/s | % of DRAM peak | FLOP/byte | tensor pipe % |");
    let _ = writeln!(s, "|--:|---|--:|--:|--:|--:|--:|--:|--:|");
    let measured: Vec<_> = a
        .tables
        .kernels
        .iter()
        .chain(a.tables.ncu_kernels)
        .filter(|r| r.ncu_instances > 0)
        .collect();
    let labels = crate::report::run_labels(
        a,
        measured
            .iter()
            .take(a.layout.top_kernels)
            .map(|r| r.name.as_str()),
        width,
    );
    for (r, label) in measured.into_iter().zip(labels).take(a.layout.top_kernels) {
        let Some(pt) = a.point(r) else { continue };
        let _ = writeln!(
            s,
            "| {} | {} | {:.2} | {:.2} | {:.3}% ({}) | {:.2} | {:.2}% | {} | {} |",
            r.rank,
            md(&label),
            pt.flops() / 1e9,
            pt.tensor_flops / 1e9,
            100.0 * pt.flops() / p.roof_for(&pt).1,
            p.roof_for(&pt).0,
            pt.dram_bytes_per_s / 1e9,
            100.0 * pt.dram_bytes_per_s / p.dram_bytes_per_s,
            pt.intensity()
                .map(|i| format!("{i:.2}"))
                .unwrap_or_else(|| "–".into()),
            opt1(pt.tensor_pipe_pct)
        );
    }
    roofline_context(a, f, s);
}

/// What the roofline does not show: how much of the captured range the kernels fill, and
/// where the rest of its wall time goes, so a kernel at its roof is not read as the range
/// being at its floor. Phrased from the captured range's findings.
fn roofline_context(a: &Decided, f: &Findings, s: &mut String) {
    let Some(c) = f.find(|x| matches!(x.claim, Claim::CapturedRange)) else {
        return;
    };
    let _ = writeln!(
        s,
        "\nThese rates are per kernel while it runs. {}: {} of kernels in {} of CPU wall time, GPU busy {} of the range time.",
        capitalise(&phrase::scope(&c.scope)),
        c.text(Q::KernelTimeNs),
        c.text(Q::WallNs),
        c.text(Q::GpuBusyOfRangePct)
    );
    let here = |x: &&Finding| x.scope.range == c.scope.range;
    for x in f.made().filter(here) {
        match &x.claim {
            Claim::KernelsExceedWall { .. } | Claim::GpuIdle { .. } => {
                let _ = writeln!(s, "{}", phrase::sentence(x));
            }
            Claim::PerToken => {
                if let Some(m) = x.figure(Q::MemoryFloorOfMeasuredPct) {
                    // The instances' kind ncu measured one of whole, where they are of several.
                    let kind = x
                        .evidence
                        .iter()
                        .filter(|e| e.quantity == Q::MemoryFloorOfMeasuredPct)
                        .find_map(|e| Some((e.scope.group.as_deref()?, &e.text)))
                        .map_or(String::new(), |(g, t)| {
                            format!(", {t} of the median wall time of {} (the kind of instance ncu measured whole)", md(g))
                        });
                    // Over the kernels ncu measured, where those hold part of the time.
                    let part = x.figure(Q::NcuCoveragePct).map_or(String::new(), |c| {
                        format!(
                            " (a lower bound: its kernels ncu measured hold {} of the kernel time)",
                            c.text
                        )
                    });
                    let _ = writeln!(
                        s,
                        "Per instance, its memory-bandwidth floor is {} of the measured time{part}{kind} ({}).",
                        m.text,
                        crate::report::tokens::heading(a)
                    );
                }
            }
            Claim::TensorPeak { .. } => {
                let _ = writeln!(s, "{}.", phrase::sentence(x));
            }
            _ => {}
        }
    }
    let _ = a;
}

pub(super) fn ranks_section(a: &Decided, s: &mut String, width: usize) {
    let ranks = a.tables.ranks;
    if ranks.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n## Per rank ({} ranks, `nsys/summary.rank<N>_*.csv`)\n\nThe table above sums all ranks. NCCL share: kernel time of kernels named `nccl*`.\n",
        ranks.len()
    );
    let head: Vec<String> = ranks
        .iter()
        .map(|r| format!("rank {} (us)", r.rank))
        .collect();
    let _ = writeln!(s, "| kernel | {} | total (us) |", head.join(" | "));
    let _ = writeln!(s, "|---|{}--:|", "--:|".repeat(ranks.len()));
    let shown: Vec<&crate::parse::nsys::KernelSum> = a
        .tables
        .kernel_sums
        .into_iter()
        .flatten()
        .take(a.layout.top_kernels)
        .collect();
    let labels = crate::report::run_labels(a, shown.iter().map(|k| k.name.as_str()), width);
    for (k, label) in shown.iter().zip(labels) {
        let cells: Vec<String> = ranks
            .iter()
            .map(|r| {
                r.kernels
                    .iter()
                    .find(|x| x.name == k.name)
                    .map(|x| us(x.total_ns))
                    .unwrap_or_else(|| "–".into())
            })
            .collect();
        let _ = writeln!(
            s,
            "| {} | {} | {} |",
            md(&label),
            cells.join(" | "),
            us(k.total_ns)
        );
    }
    let _ = writeln!(s, "\n| rank | kernel time (ms) | launches | NCCL time (ms) | NCCL share | NCCL waiting (ms) |\n|--:|--:|--:|--:|--:|--:|");
    for r in ranks {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            r.rank,
            ms(r.kernel_time_ns),
            r.launches,
            ms(r.nccl_time_ns),
            pct(r.nccl_pct),
            r.nccl_wait_ns.map(ms).unwrap_or_else(|| "–".into())
        );
    }
    let _ = writeln!(s, "\nNCCL waiting: per collective, the time beyond the fastest rank's (the last to arrive waits least), from `nsys/run.rank<N>.sqlite`; a rank that waits long is early, its peers are late.");
    let names: std::collections::BTreeSet<&String> =
        ranks.iter().flat_map(|r| r.ranges.keys()).collect();
    if !names.is_empty() {
        let _ = writeln!(
            s,
            "\nNVTX range wall time per rank (stragglers: slowest vs median rank; ranges holding collectives end about together on every rank, so NCCL waiting above is the better sign of a late rank):\n"
        );
        let head: Vec<String> = ranks
            .iter()
            .map(|r| format!("rank {} (ms)", r.rank))
            .collect();
        let _ = writeln!(
            s,
            "| range | {} | median (ms) | slowest | slowest / median |",
            head.join(" | ")
        );
        let _ = writeln!(s, "|---|{}--:|---|--:|", "--:|".repeat(ranks.len()));
        for name in names {
            let cells: Vec<String> = ranks
                .iter()
                .map(|r| {
                    r.ranges
                        .get(name)
                        .map(|w| ms(*w))
                        .unwrap_or_else(|| "–".into())
                })
                .collect();
            if let Some(&(median, rank, slow)) = a.stragglers.get(name.as_str()) {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | rank {rank} | {:.2}x |",
                    md(name),
                    cells.join(" | "),
                    ms(median),
                    slow / median.max(1.0)
                );
            }
        }
    }
}
