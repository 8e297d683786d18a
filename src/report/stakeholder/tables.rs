//! The stakeholder summary's tables: the NVTX ranges (or PyTorch operators) and the kernels
//! that hold the GPU time, with ncu's bound class where it measured them.

use super::*;

pub(super) fn operators(a: &Decided, s: &mut String) {
    match a.tables.operators.is_empty() {
        true => s.push_str("## NVTX ranges\n\n"),
        false => {
            s.push_str("## Operators\n\n");
            crate::report::ops::table(a, s, 15);
        }
    }
    match a.tables.nvtx_sum {
        Some(ranges) if !ranges.is_empty() => {
            let _ = writeln!(s, "As nsys summarised them ({}):\n", a.facts.nvtx_sum_file);
            let _ = writeln!(
                s,
                "| range | style | instances | total (ms) | avg (ms) |\n|---|---|--:|--:|--:|"
            );
            for r in ranges {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} |",
                    md(r.name()),
                    r.style.as_deref().unwrap_or("–"),
                    r.instances,
                    ms(r.total_ns),
                    ms(r.avg_ns)
                );
            }
        }
        _ => {
            let _ = writeln!(
                s,
                "No NVTX range summary ({} is missing).",
                a.facts.nvtx_sum_file
            );
        }
    }
    if let Some(p) = &a.facts.stage1_ops {
        let _ = writeln!(s, "\nStage-1 operator table (`{}`):\n", p.display());
        s.push_str(&csv_as_table(p, 15));
    }
    s.push('\n');
}

/// The first rows of a CSV as a Markdown table; a broken file is mentioned, not fatal. The
/// workload's own file: read only if regular (a FIFO would block, a device never end), and no
/// further than a run's file goes.
fn csv_as_table(path: &std::path::Path, rows: usize) -> String {
    let Ok(file) = crate::files::open_regular(path) else {
        return "(unreadable)\n".into();
    };
    let file = std::io::Read::take(file, crate::files::RUN_FILE_CAP);
    let mut r = csv::ReaderBuilder::new().flexible(true).from_reader(file);
    let Ok(h) = r.headers().cloned() else {
        return "(unreadable)\n".into();
    };
    let mut out = format!(
        "| {} |\n|{}\n",
        h.iter().map(md).collect::<Vec<_>>().join(" | "),
        "---|".repeat(h.len())
    );
    for rec in r.records().take(rows).flatten() {
        out.push_str(&format!(
            "| {} |\n",
            rec.iter().map(md).collect::<Vec<_>>().join(" | ")
        ));
    }
    out
}

pub(super) fn top_kernels(a: &Decided, s: &mut String) {
    let _ = writeln!(
        s,
        "## Top kernels\n\nShares of GPU time as nsys measured them ({}); bound classes from ncu's SM and DRAM throughput{}.\n",
        a.facts.kern_sum_file,
        ncu_source(a)
    );
    if a.tables
        .kernels
        .iter()
        .take(5)
        .any(|r| r.bound.is_none() && r.sampled.is_some())
    {
        let reused = match a.tables.sampled.and_then(|s| s.reused.as_ref()) {
            Some(r) => format!(
                " in run {} and reused by this run, whose nsys pass did not sample",
                code(&r.run)
            ),
            None => String::new(),
        };
        let _ = writeln!(
            s,
            "Where ncu gave no class, the class sampled by nsys over every launch{reused}, marked \"sampled\" with the share of its time the samples covered (kernels.md, \"Sampled GPU metrics\"; rule: {}).\n",
            Bound::SAMPLED_RULE
        );
    }
    if a.tables.kernels.is_empty() {
        let _ = writeln!(s, "No kernels.\n");
        return;
    }
    top_table(s, a, a.tables.kernels);
    if let Some(first) = a.tables.ncu_kernels.first() {
        let _ = writeln!(
            s,
            "\nIn {}, which ncu profiled (ranked by ncu's time of the launches it profiled, replayed one at a time: its durations differ from the running workload's above):\n",
            code(&a
                .ncu_range()
                .or_else(|| first.nvtx_range.clone())
                .unwrap_or_else(|| "the ncu range".into()))
        );
        top_table_with(s, a, a.tables.ncu_kernels, NCU_COLUMNS);
    }
    let _ = writeln!(
        s,
        "\nFull tables: kernels.md. Bound: memory-bound when the kernel keeps DRAM bandwidth near its peak, compute-bound when it keeps the SMs near theirs doing arithmetic, instruction-bound when the SMs are that busy moving data (loads, stores, copies), latency-bound when neither is near its peak (rules `memory_bound`, `compute_bound`: `stage2 explain` gives their thresholds).\n"
    );
}

/// Where the bound classes' ncu figures come from: ncu's export in this run, the metrics
/// cache (the runs that measured them, ncu/cached.json listing what it served), or neither.
fn ncu_source(a: &Decided) -> String {
    if a.facts.ncu_problem.is_some() {
        return " (ncu export unreadable, see kernels.md)".into();
    }
    // One kernel may be in both tables: counted once.
    let cached: std::collections::BTreeMap<&str, &str> = a
        .tables
        .kernels
        .iter()
        .chain(a.tables.ncu_kernels)
        .filter_map(|r| Some((r.name.as_str(), r.ncu_cached_from.as_deref()?)))
        .collect();
    let mut runs: Vec<String> = cached.values().map(|r| code(r)).collect();
    runs.sort_unstable();
    runs.dedup();
    let from = format!(
        "measured by {} {} and served from the metrics cache (ncu/cached.json)",
        if runs.len() == 1 { "run" } else { "runs" },
        runs.join(", ")
    );
    let file = a.facts.ncu_csv_file;
    match (cached.is_empty(), file) {
        (true, "") => " (no ncu data)".into(),
        (true, f) => format!(" ({f})"),
        // ncu did not run: every figure is an earlier run's.
        (false, f) if f.is_empty() || f.ends_with("cached.json") => format!(", {from}"),
        (false, f) => format!(
            " ({f}); the figures of {} of these kernels were {from}",
            cached.len()
        ),
    }
}

/// The columns of a table of nsys's times, and of one of ncu's replayed launches.
const NSYS_COLUMNS: &str = "| # | kernel | share of GPU time | avg (us) | bound |";
const NCU_COLUMNS: &str =
    "| # | kernel | share of ncu's profiled time | avg under ncu replay (us) | bound |";

fn top_table(s: &mut String, a: &Decided, records: &[crate::model::KernelRecord]) {
    top_table_with(s, a, records, NSYS_COLUMNS)
}

fn top_table_with(
    s: &mut String,
    a: &Decided,
    records: &[crate::model::KernelRecord],
    columns: &str,
) {
    let _ = writeln!(s, "{columns}\n|--:|---|--:|--:|---|");
    let labels = crate::report::run_labels(a, records.iter().take(5).map(|r| r.name.as_str()), 60);
    for (r, label) in records.iter().zip(labels).take(5) {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            r.rank,
            md(&label),
            r.gpu_time_pct.map(pct).unwrap_or_else(|| "–".into()),
            us(r.avg_time_ns),
            crate::report::fmt::bound_cell(r)
        );
    }
}
