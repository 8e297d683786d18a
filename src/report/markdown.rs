//! kernels.md: the engineer's table of kernels by GPU time, with ncu metrics where measured.

use std::fmt::Write;

use super::fmt::{cut, md, ms, opt1, pct, us};
use super::second_gpu_note;
use crate::analysis::ranges::RangeStats;
use crate::analysis::Artifacts;
use crate::model::{display_name, Bound, KernelRecord, TimeSource};
use crate::rundir::KERN_SUM;

pub(crate) fn kernels_md(a: &Artifacts) -> String {
    let mut s = String::new();
    let width = a.config.report.name_width;
    let _ = writeln!(s, "# Kernels of run {}\n", md(&a.run_id));
    let (total, launches) = a.kernel_totals();
    let basis = match a.records.first().map(|r| r.time_source) {
        Some(TimeSource::Nsys) => {
            format!(
                "nsys totals over {} (`{}`)",
                a.kernel_scope(),
                a.kern_sum_file
            )
        }
        Some(TimeSource::Ncu) => {
            "ncu's profiled launches only (no nsys data): shares are of the profiled time"
                .to_string()
        }
        None => String::new(),
    };
    if a.records.is_empty() {
        let _ = writeln!(s, "No kernel data in this run directory: neither `{KERN_SUM}` nor an ncu raw CSV was found. See status.json for what each pass did.");
        return s;
    }
    let _ = writeln!(
        s,
        "{} kernels, {} launches, {} ms of GPU kernel time. Time basis: {basis}.",
        a.records
            .iter()
            .filter(|r| r.gpu_time_pct.is_some())
            .count(),
        launches,
        ms(total)
    );
    if let Some(note) = a.hidden_graphs_note() {
        let _ = writeln!(s, "Note: {note}.");
    }
    if let Some(e) = &a.ncu_problem {
        let _ = writeln!(
            s,
            "ncu metrics missing: the export could not be read ({}).",
            md(&e.to_string())
        );
    }
    if let Some(cov) = a.ncu_coverage_pct() {
        let measured = a.records.iter().filter(|r| r.ncu_instances > 0).count();
        let _ = writeln!(
            s,
            "ncu measured {measured} of them, covering {} {} (`{}`).",
            pct(cov),
            a.coverage_scope(),
            a.ncu_csv_file
        );
    }
    cached_note(a, &mut s);
    if let Some(note) = second_gpu_note(a) {
        let _ = writeln!(s, "Note: {note}.");
    }
    s.push('\n');
    table(&mut s, &a.records, a.config.report.top_kernels, width);
    let rest = a.records.len().saturating_sub(a.config.report.top_kernels);
    if rest > 0 {
        let _ = writeln!(s, "\n{rest} more kernels in kernels.csv.");
    }
    let _ = writeln!(
        s,
        "\nBound class (from ncu SM and DRAM throughput): {}.",
        Bound::RULE
    );
    ranks_section(a, &mut s, width);
    ranges_section(a, &mut s);
    super::tokens::section(a, &mut s);
    super::ledger::section(a, &mut s);
    if !a.operators.is_empty() {
        s.push_str("\n## PyTorch operators\n\n");
        super::ops::table(a, &mut s, 30);
    }
    roofline_section(a, &mut s, width);
    if a.ncu_coverage_pct().is_some() {
        let left: Vec<_> = a.records.iter().filter(|r| r.ncu_instances == 0).collect();
        if !left.is_empty() {
            let share: f64 = left.iter().filter_map(|r| r.gpu_time_pct).sum();
            let _ = writeln!(
                s,
                "\n## Left out of the ncu pass ({} kernels, {} of kernel time)\n",
                left.len(),
                pct(share)
            );
            for r in left {
                let _ = writeln!(
                    s,
                    "- #{} {} ({})",
                    r.rank,
                    md(&cut(&display_name(&r.name), width)),
                    r.gpu_time_pct.map(pct).unwrap_or_default()
                );
            }
        }
    }
    let ncu_only: Vec<_> = a
        .records
        .iter()
        .filter(|r| r.time_source == TimeSource::Ncu && a.kernels_nsys.is_some())
        .collect();
    if !ncu_only.is_empty() {
        let _ = writeln!(
            s,
            "\n## Measured by ncu but not matched to an nsys kernel\n"
        );
        for r in ncu_only {
            let _ = writeln!(
                s,
                "- {} ({} launches profiled)",
                md(&r.name),
                r.ncu_instances
            );
        }
    }
    if !a.ncu_records.is_empty() {
        let range = a.ncu_records[0]
            .nvtx_range
            .as_deref()
            .unwrap_or("its range");
        let _ = writeln!(
            s,
            "\n## Kernels ncu measured in `{}`\n\nnsys captured another range, so these are ranked by ncu's own time of the launches it profiled (`{}`), and their share is of that time.\n",
            md(range),
            a.ncu_include.as_deref().map(md).unwrap_or_default()
        );
        table(&mut s, &a.ncu_records, a.config.report.top_kernels, width);
    }
    let _ = writeln!(s, "\n## Full names\n");
    for r in a
        .records
        .iter()
        .take(a.config.report.top_kernels)
        .chain(a.ncu_records.iter().take(a.config.report.top_kernels))
    {
        let _ = writeln!(s, "{}. {}", r.rank, md(&r.name));
        if let Some(n) = r.ncu_name.as_ref().filter(|n| **n != r.name) {
            let _ = writeln!(s, "   (ncu: {})", md(n));
        }
        if let (Some(g), Some(b)) = (&r.grid, &r.block) {
            let _ = writeln!(s, "   grid {g}, block {b}");
        }
    }
    s
}

/// Which kernels' ncu figures this run took from the metrics cache, and from which runs.
fn cached_note(a: &Artifacts, s: &mut String) {
    let cached: Vec<&KernelRecord> = a
        .records
        .iter()
        .filter(|r| r.ncu_cached_from.is_some())
        .collect();
    if cached.is_empty() {
        return;
    }
    let mut runs: Vec<&str> = cached
        .iter()
        .filter_map(|r| r.ncu_cached_from.as_deref())
        .collect();
    runs.sort_unstable();
    runs.dedup();
    let ranks: Vec<String> = cached.iter().map(|r| format!("#{}", r.rank)).collect();
    let _ = writeln!(
        s,
        "ncu figures of {} kernels ({}) come from the metrics cache (`ncu/cached.json`), measured by run {} on the same GPU, driver, ncu version and settings.",
        cached.len(),
        ranks.join(", "),
        runs.iter().map(|r| format!("`{}`", md(r))).collect::<Vec<_>>().join(", ")
    );
}

fn table(s: &mut String, records: &[KernelRecord], top: usize, width: usize) {
    let _ = writeln!(
        s,
        "| # | kernel | instances | total (us) | avg (us) | share | SM % | DRAM % | bound |"
    );
    let _ = writeln!(s, "|--:|---|--:|--:|--:|--:|--:|--:|---|");
    for r in records.iter().take(top) {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.rank,
            md(&cut(&display_name(&r.name), width)),
            r.instances,
            us(r.total_time_ns),
            us(r.avg_time_ns),
            r.gpu_time_pct.map(pct).unwrap_or_else(|| "–".into()),
            opt1(r.sm_throughput_pct),
            opt1(r.dram_throughput_pct),
            r.bound.map(Bound::label).unwrap_or("–"),
        );
    }
}

fn ranges_section(a: &Artifacts, s: &mut String) {
    if a.range_stats.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n## Per NVTX range (`{}`)\n\nGPU work counts the kernels, memcpys and memsets launched inside the range (push/pop: on its thread), kernels of CUDA graphs included; it is measured on the GPU's timeline: the projection runs from the first start to the last end of that work (as `nsys stats --report nvtx_gpu_proj_sum`), GPU busy is the union of its kernels' execution intervals over the projection. Times in ms. Verdict: GPU-bound unless {} (GPU mostly idle); then {}.\n",
        a.sqlite_file,
        RangeStats::LAUNCH_BOUND_RULE,
        crate::analysis::ledger::VERDICT_RULE
    );
    let _ = writeln!(s, "| range | style | instances | CPU wall | GPU projection | kernel time | GPU busy of projection | kernels | from graphs | per instance: wall min / median / max | projection median | kernels median | verdict |");
    let _ = writeln!(s, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|");
    let ledger = crate::analysis::ledger::ByName::new(&a.ledger);
    for r in &a.range_stats {
        let w = &r.wall_spread;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} / {} | {} | {} | {} |",
            md(&r.name),
            r.style,
            r.instances,
            ms(r.wall_ns as f64),
            ms(r.proj_ns as f64),
            ms(r.kernel_ns as f64),
            pct(r.gpu_busy_pct),
            r.launches,
            r.graph_kernels,
            ms(w.min),
            ms(w.median),
            ms(w.max),
            ms(r.proj_spread.median),
            r.launches_spread.median,
            if r.launch_bound() {
                crate::analysis::ledger::cpu_story(&ledger, &r.name, a.python.as_ref())
                    .map_or("GPU mostly idle", |(label, _)| label)
            } else {
                "GPU-bound"
            }
        );
    }
}

fn roofline_section(a: &Artifacts, s: &mut String, width: usize) {
    let Some(p) = a.peaks else {
        return;
    };
    let _ = writeln!(
        s,
        "\n## Roofline\n\nDevice peaks from ncu's own peak metrics: FP32 {:.1} TFLOP/s, FP16 (non-tensor) {:.1} TFLOP/s, FP64 {:.1} TFLOP/s, BF16 tensor {} TFLOP/s, DRAM {:.2} TB/s; the FP32 ridge is at {:.1} FLOP/byte. Achieved FLOP/s add the FP64/FP32/FP16 instruction counters (sm__sass_thread_inst_executed_op_*, FMA counted twice) and the tensor-core operations (sm__ops_path_tensor_src_*). Chart: roofline.svg.\n",
        p.fp32_flops / 1e12,
        p.fp16_flops / 1e12,
        p.fp64_flops / 1e12,
        p.tensor_flops.map(|t| format!("{:.0}", t / 1e12)).unwrap_or_else(|| "–".into()),
        p.dram_bytes_per_s / 1e12,
        p.ridge_fp32()
    );
    let _ = writeln!(s, "| # | kernel | GFLOP/s | of which tensor | % of peak (its roof) | DRAM GB/s | % of DRAM peak | FLOP/byte | tensor pipe % |");
    let _ = writeln!(s, "|--:|---|--:|--:|--:|--:|--:|--:|--:|");
    let measured = a
        .records
        .iter()
        .chain(&a.ncu_records)
        .filter(|r| r.ncu_instances > 0);
    for r in measured.take(a.config.report.top_kernels) {
        let Some(pt) = a.point(r) else { continue };
        let _ = writeln!(
            s,
            "| {} | {} | {:.2} | {:.2} | {:.3}% ({}) | {:.2} | {:.2}% | {} | {} |",
            r.rank,
            md(&cut(&display_name(&r.name), width)),
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
    roofline_context(a, s);
}

/// What the roofline does not show: how much of the captured range the kernels fill, and
/// where the rest of its wall time goes (the ledger), so a kernel at its roof is not read as
/// the range being at its floor.
fn roofline_context(a: &Artifacts, s: &mut String) {
    let Some(c) = a.captured() else { return };
    let mut line = format!(
        "\nThese rates are per kernel while it runs. The captured `{}` range's kernels run {} ms of its {} ms CPU wall time",
        md(&c.name),
        ms(c.kernel_ns),
        ms(c.wall_ns)
    );
    if let Some((label, story)) =
        crate::analysis::ledger::cpu_story(&a.ledger_by_name(), &c.name, a.python.as_ref())
            .filter(|_| c.busy_pct() < 50.0)
    {
        let _ = write!(
            line,
            "; the rest is {label} by the wall-time ledger: {}",
            md(&story)
        );
    }
    if let Some(f) = a
        .per_token
        .iter()
        .find(|p| p.phase == c.name)
        .and_then(|p| p.floor.as_ref())
    {
        let _ = write!(
            line,
            "; per instance the range runs at {:.1}% of its memory-bandwidth floor (Per token)",
            f.pct_of_memory_floor
        );
    }
    let _ = writeln!(s, "{line}.");
}

fn ranks_section(a: &Artifacts, s: &mut String, width: usize) {
    let ranks = &a.rank_data;
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
    for k in a
        .kernels_nsys
        .iter()
        .flatten()
        .take(a.config.report.top_kernels)
    {
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
            md(&cut(&display_name(&k.name), width)),
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
            if let Some((median, rank, slow)) = crate::analysis::ranks::straggler(ranks, name) {
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

/// `kernels.md`.
pub(crate) struct KernelsMd;

impl super::Output for KernelsMd {
    fn file(&self) -> &'static str {
        "kernels.md"
    }
    fn render(&self, a: &crate::analysis::Artifacts) -> Option<String> {
        Some(kernels_md(a))
    }
}
