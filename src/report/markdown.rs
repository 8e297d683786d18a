//! kernels.md: the engineer's table of kernels by GPU time, with ncu metrics where measured.

use std::fmt::Write;

use super::fmt::{capitalise, md, ms, opt1, pct, us};
use super::phrase;
use super::second_gpu_note;
use crate::findings::document::Decided;
use crate::findings::{rules, Claim, Finding, Findings, Quantity as Q};
use crate::model::{Bound, KernelRecord, TimeSource};
use crate::rundir::KERN_SUM;
use crate::text::code;

mod roles;
mod sections;
use roles::{roles_section, speculation_section};
use sections::{ranges_section, ranks_section, roofline_section};

pub(crate) fn kernels_md(a: &Decided, f: &Findings) -> String {
    let mut s = String::new();
    let width = a.layout.name_width;
    let _ = writeln!(s, "# Kernels of run {}\n", md(a.facts.run_id));
    if let Some(note) = super::replay_note(a) {
        let _ = writeln!(s, "{note}");
    }
    let (total, launches) = a.kernel_totals();
    let basis = match a.tables.kernels.first().map(|r| r.time_source) {
        Some(TimeSource::Nsys) => {
            format!(
                "nsys totals over {} (`{}`)",
                super::phrase::kernel_scope(a),
                a.facts.kern_sum_file
            )
        }
        Some(TimeSource::Ncu) => {
            "ncu's profiled launches only (no nsys data): shares are of the profiled time"
                .to_string()
        }
        None => String::new(),
    };
    if a.tables.kernels.is_empty() {
        let _ = writeln!(s, "No kernel data in this run directory: neither `{KERN_SUM}` nor an ncu raw CSV was found. See status.json for what each pass did.");
        return s;
    }
    let _ = writeln!(
        s,
        "{} kernels, {} launches, {} ms of GPU kernel time. Time basis: {basis}.",
        a.tables
            .kernels
            .iter()
            .filter(|r| r.gpu_time_pct.is_some())
            .count(),
        launches,
        ms(total)
    );
    if let Some((g, share)) = a.small_grids().and_then(|g| Some((g, g.share_pct?))) {
        let _ = writeln!(
            s,
            "Launches of at most {} thread blocks (half the GPU's {} SMs; a block runs on one SM): {} ms, {} of this kernel time (`{}`, grid x * y * z).",
            g.blocks,
            g.sms,
            ms(g.ns as f64),
            pct(share),
            a.facts.sqlite_file
        );
    }
    for g in f.made().filter(|x| {
        matches!(
            x.claim,
            Claim::GraphLevelTrace | Claim::CaptureRangeMissing { .. }
        )
    }) {
        let _ = writeln!(s, "Note: {}", phrase::sentence(g));
    }
    if let Some(e) = &a.facts.ncu_problem {
        let _ = writeln!(
            s,
            "ncu metrics missing: the export could not be read ({}).",
            md(&e.to_string())
        );
    }
    let coverage = f.find(|x| matches!(x.claim, Claim::NcuCoverage { .. }));
    if let Some(c) = coverage {
        let _ = writeln!(s, "{}.", phrase::fact(c));
    }
    if let Some(c) = f.find(|x| matches!(x.claim, Claim::ShapeCoverage)) {
        let _ = writeln!(s, "{}.", phrase::fact(c));
    }
    // These figures held against NVIDIA's own summaries of the same files, agreeing or not.
    for c in f.made().filter(|x| {
        matches!(
            x.claim,
            Claim::NvidiaSummaries { .. } | Claim::NvidiaNcuSummary { .. }
        )
    }) {
        let _ = writeln!(s, "{}.", phrase::fact(c));
    }
    cached_note(a, &mut s);
    if let Some(note) = second_gpu_note(a) {
        let _ = writeln!(s, "Note: {note}.");
    }
    s.push('\n');
    table(&mut s, a, a.tables.kernels, a.layout.top_kernels, width);
    let rest = a.tables.kernels.len().saturating_sub(a.layout.top_kernels);
    if rest > 0 {
        let _ = writeln!(s, "\n{rest} more kernels in kernels.csv.");
    }
    let _ = writeln!(
        s,
        "\nBound class (from ncu SM and DRAM throughput): {}.",
        Bound::RULE
    );
    if let Some(note) = one_pass_note(a.tables.kernels) {
        let _ = writeln!(s, "{note}");
    }
    roles_section(f, &mut s);
    super::sampled::section(a, f, &mut s, width);
    ranks_section(a, &mut s, width);
    ranges_section(a, f, &mut s);
    super::tokens::section(a, f, &mut s);
    speculation_section(f, &mut s);
    measurement_cost(f, &mut s);
    super::ledger::section(a, &mut s);
    if !a.tables.operators.is_empty() {
        s.push_str("\n## PyTorch operators\n\n");
        super::ops::table(a, &mut s, 30);
    }
    roofline_section(a, f, &mut s, width);
    // The kernels left out are listed where the coverage is of the kernel table's range.
    if let Some(c) = coverage.filter(|_| a.tables.ncu_kernels.is_empty()) {
        left_out(a, c, &mut s, width);
    }
    let ncu_only: Vec<_> = a
        .tables
        .kernels
        .iter()
        .filter(|r| r.time_source == TimeSource::Ncu && a.tables.kernel_sums.is_some())
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
    if !a.tables.ncu_kernels.is_empty() {
        let range = a.tables.ncu_kernels[0]
            .nvtx_range
            .as_deref()
            .unwrap_or("its range");
        let _ = writeln!(
            s,
            "\n## Kernels ncu measured in {}\n\nnsys captured another range, so these are ranked by ncu's own time of the launches it profiled ({}), and their share is of that time; their durations are ncu's replays of one launch at a time, which differ from the running workload's (a kernel in both tables has both figures).\n",
            code(range),
            a.ncu_include().map(crate::text::code).unwrap_or_default()
        );
        table(&mut s, a, a.tables.ncu_kernels, a.layout.top_kernels, width);
    }
    let _ = writeln!(s, "\n## Full names\n");
    for r in a
        .tables
        .kernels
        .iter()
        .take(a.layout.top_kernels)
        .chain(a.tables.ncu_kernels.iter().take(a.layout.top_kernels))
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

/// The kernels ncu did not measure, headed by the same share the coverage line completes; NCCL
/// kernels that ncu leaves out are marked, outside that basis.
fn left_out(a: &Decided, c: &Finding, s: &mut String, width: usize) {
    let left: Vec<_> = a
        .tables
        .kernels
        .iter()
        .filter(|r| r.ncu_instances == 0)
        .collect();
    if left.is_empty() {
        return;
    }
    let nccl_out = matches!(
        c.claim,
        Claim::NcuCoverage {
            nccl_left_out: true,
            ..
        }
    );
    let basis = if nccl_out { " outside NCCL" } else { "" };
    let _ = writeln!(
        s,
        "\n## Left out of the ncu pass ({} kernels; {} of the kernel time{basis})\n",
        left.len(),
        c.text(Q::NcuLeftOutPct)
    );
    // Labelled as the kernel table labels them: two kernels of one display name keep their tags.
    let labels = super::run_labels(a, left.iter().map(|r| r.name.as_str()), width);
    for (r, label) in left.iter().zip(labels) {
        let nccl = nccl_out && crate::model::is_nccl(&r.name);
        let _ = writeln!(
            s,
            "- #{} {} ({} of all kernel time{})",
            r.rank,
            md(&label),
            r.gpu_time_pct.map(pct).unwrap_or_default(),
            if nccl {
                "; NCCL, outside the basis: ncu.include_nccl=true profiles it"
            } else {
                ""
            }
        );
    }
}

/// Which kernels' ncu figures this run took from the metrics cache, and from which runs.
fn cached_note(a: &Decided, s: &mut String) {
    let cached: Vec<&KernelRecord> = a
        .tables
        .kernels
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
        runs.iter().map(|r| code(r)).collect::<Vec<_>>().join(", ")
    );
}

fn table(s: &mut String, a: &Decided, records: &[KernelRecord], top: usize, width: usize) {
    let _ = writeln!(
        s,
        "| # | kernel | instances | total (us) | avg (us) | share | SM % | DRAM % | bound |"
    );
    let _ = writeln!(s, "|--:|---|--:|--:|--:|--:|--:|--:|---|");
    let labels = super::run_labels(a, records.iter().take(top).map(|r| r.name.as_str()), width);
    for (r, label) in records.iter().zip(labels).take(top) {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.rank,
            md(&label),
            r.instances,
            us(r.total_time_ns),
            us(r.avg_time_ns),
            r.gpu_time_pct.map(pct).unwrap_or_else(|| "–".into()),
            opt1(r.sm_throughput_pct),
            opt1(r.dram_throughput_pct),
            super::fmt::bound_cell(r),
        );
    }
}

/// `kernels.md`.
pub(crate) struct KernelsMd;

impl super::Output for KernelsMd {
    fn file(&self) -> &'static str {
        "kernels.md"
    }
    fn render(&self, a: &Decided) -> Option<String> {
        Some(kernels_md(a, &a.findings))
    }
}

/// Each range's time under nsys beside the baseline pass's (no profiler): what measuring cost;
/// and what else the profiling did to the figures where this run did it (the ncu pass's copy
/// of the workload starting beside the capture, CUDA graphs traced per node).
fn measurement_cost(f: &Findings, s: &mut String) {
    let lines: Vec<String> = f
        .made()
        .filter(|x| {
            matches!(
                x.claim,
                Claim::MeasurementCost { .. } | Claim::EarlyStartBeside | Claim::GraphNodeTrace
            )
        })
        .map(phrase::fact)
        .collect();
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## What the measurement added\n");
    for l in lines {
        let _ = writeln!(s, "- {l}");
    }
}

/// Where ncu measured the reports' own metric list (no sm__throughput / dram__throughput
/// breakdowns), what SM % and DRAM % are instead.
fn one_pass_note(records: &[KernelRecord]) -> Option<String> {
    use crate::parse::ncu::{DRAM_BYTES_PCT, SM_ISSUE_PCT, SM_PCT};
    let fallback = records
        .iter()
        .any(|r| r.metrics.contains_key(SM_ISSUE_PCT) && !r.metrics.contains_key(SM_PCT));
    fallback.then(|| format!(
        "SM % is the larger of SM issue and tensor-pipe activity (`{SM_ISSUE_PCT}`, `sm__pipe_tensor_cycles_active`) and DRAM % is `{DRAM_BYTES_PCT}`: ncu measured the reports' own metric list, without the sm__throughput and dram__throughput breakdowns that take more replay passes per kernel (`ncu.metrics` adds them back)."
    ))
}
