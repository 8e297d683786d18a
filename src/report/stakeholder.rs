//! stakeholder_summary.md: what a manager reads in a minute. Every number says its file.

use std::fmt::Write;

use super::fmt::{cut, md, ms, pct, us};
use super::second_gpu_note;
use super::Artifacts;
use crate::model::{display_name, Bound};

pub(crate) fn summary_md(a: &Artifacts) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Where the GPU time goes: run {}\n", md(&a.run_id));
    let _ = writeln!(s, "{}\n", headline(a));
    run_facts(a, &mut s);
    numbers(a, &mut s);
    operators(a, &mut s);
    top_kernels(a, &mut s);
    let _ = writeln!(s, "## What to look at next\n");
    for r in recommendations(a) {
        let _ = writeln!(s, "- {r}");
    }
    s
}

fn headline(a: &Artifacts) -> String {
    let (total, launches) = a.kernel_totals();
    let Some(top) = a.records.first() else {
        return "**No kernel data was captured.** See the passes below and status.json for why."
            .to_string();
    };
    // A multi-rank run's kernel table sums the ranks; its range figures are the first rank's.
    let ranks = a.rank_data.len();
    let (who, summed, whose) = match a.rank_data.first() {
        Some(r) if ranks > 1 => (
            format!("the {ranks} GPUs"),
            format!(" (summed over {ranks} ranks)"),
            format!("rank {}'s ", r.rank),
        ),
        _ => ("the GPU".to_string(), String::new(), "the ".to_string()),
    };
    let mut h = format!(
        "**Headline:** {who} ran {} ms of kernels in {} launches{summed}; the top kernel, {}, takes {}",
        ms(total),
        launches,
        md(&cut(&display_name(&top.name), 60)),
        top.gpu_time_pct.map(pct).unwrap_or_else(|| "an unknown share".into())
    );
    if let Some(note) = a.hidden_graphs_note() {
        let _ = write!(h, ". {note}");
    } else if let Some(c) = a.captured() {
        let _ = write!(
            h,
            ". In {whose}captured `{}` range ({} ms of CPU wall time{}) the GPU ran kernels for {} ms in {} launches{}, busy {} of the time",
            md(&c.name),
            ms(c.wall_ns),
            c.proj_ns
                .map(|p| format!(", its GPU work spanning {} ms", ms(p)))
                .unwrap_or_default(),
            ms(c.kernel_ns),
            c.launches,
            graphs(&c),
            pct(c.busy_pct())
        );
        if waits_much(&c) {
            let _ = write!(
                h,
                ", but {} ms of those kernels are NCCL waiting for a late rank, so it does work {} of the time",
                ms(c.nccl_wait_ns),
                pct(c.working_pct())
            );
        }
        if c.working_pct() < 50.0 && c.busy_pct() >= 50.0 {
            // Busy, but in NCCL kernels that wait: the wait is on the other ranks.
            h.push_str(": it mostly waits for the other ranks inside NCCL kernels");
        } else if c.working_pct() < 50.0 {
            // What the CPU does meanwhile comes from the wall-time ledger, when there is one.
            match crate::analysis::ledger::cpu_story(
                &a.ledger_by_name(),
                &c.name,
                a.python.as_ref(),
            ) {
                Some((label, story)) => {
                    let _ = write!(
                        h,
                        ": the GPU mostly waits on the CPU, and {} ({label}; kernels.md, \"Where the wall time goes\")",
                        md(&story)
                    );
                }
                None => h.push_str(": the GPU mostly waits on the CPU (busy under half the time)"),
            }
        }
        if c.source == a.kern_sum_file {
            let _ = write!(h, " ({})", c.source);
        } else {
            let _ = write!(h, " ({}, {})", c.source, a.kern_sum_file);
        }
    }
    h.push('.');
    if let (Some(p), Some(d)) = (phase(a, "prefill"), phase(a, "decode")) {
        let _ = write!(
            h,
            " Prefill took {} ms ({} ms of kernels), decode {} ms ({} ms of kernels).",
            ms(p.wall_ns as f64),
            ms(p.kernel_ns as f64),
            ms(d.wall_ns as f64),
            ms(d.kernel_ns as f64)
        );
    }
    if let Some(t) = super::tokens::headline(a) {
        h.push(' ');
        h.push_str(&t);
    }
    h
}

/// Waiting in NCCL worth calling out: over 10% of the range's kernel time.
/// ", 2280 of them from CUDA graphs", or nothing.
fn graphs(c: &crate::analysis::Captured) -> String {
    if c.graph_kernels > 0 {
        format!(", {} of them from CUDA graphs", c.graph_kernels)
    } else {
        String::new()
    }
}

fn waits_much(c: &crate::analysis::Captured) -> bool {
    c.nccl_wait_ns > 0.1 * c.kernel_ns
}

fn phase<'a>(a: &'a Artifacts, name: &str) -> Option<&'a crate::analysis::ranges::RangeStats> {
    a.range_stats.iter().find(|r| r.name == name)
}

fn run_facts(a: &Artifacts, s: &mut String) {
    let _ = writeln!(s, "## Run facts\n\n| | |\n|---|---|");
    let gpu = a
        .env_str(&["gpus", "0", "name"])
        .unwrap_or_else(|| "unknown (no nvidia-smi)".into());
    let driver = a
        .env_str(&["gpus", "0", "driver"])
        .map(|d| format!(", driver {d}"))
        .unwrap_or_default();
    let cuda = a
        .env_str(&["cuda_version"])
        .map(|c| format!(", CUDA {c}"))
        .unwrap_or_default();
    let _ = writeln!(s, "| GPU | {}{driver}{cuda} |", md(&gpu));
    let tool = |t: &str| {
        a.env_str(&["tools", t, "version"])
            .map(|v| format!("{t} {v}"))
            .unwrap_or_else(|| format!("{t} –"))
    };
    let _ = writeln!(s, "| Tools | {}, {} |", tool("nsys"), tool("ncu"));
    let workload = crate::secrets::redact_url(&crate::files::shell_line(&a.config.workload.argv));
    let workload = if workload.is_empty() {
        a.config
            .workload
            .module
            .clone()
            .map(|m| format!("python -m {m}"))
            .unwrap_or_else(|| "–".into())
    } else {
        workload
    };
    let _ = writeln!(s, "| Workload | {} |", md(&cut(&workload, 120)));
    let n = &a.config.nsys;
    let nsys = if n.gating_nvtx && n.capture_range == crate::config::CaptureRange::Nvtx {
        format!(
            "NVTX range `{}`, {}",
            md(n.nvtx_capture.as_deref().unwrap_or("")),
            a.instances_captured()
        )
    } else {
        "whole run".to_string()
    };
    let inc = a.ncu_include.clone();
    let record = a
        .status
        .as_ref()
        .and_then(|s| s.passes.get("ncu")?.ncu.clone())
        .filter(|r| r.metrics > 0);
    let collected = match record {
        Some(r) => match r.set {
            Some(set) => format!("set {}", md(&set)),
            None => format!("the reports' {} metrics", r.metrics),
        },
        None if a.config.ncu.set == "report" => "the reports' metrics".to_string(),
        None => format!("set {}", md(&a.config.ncu.set)),
    };
    let ncu = match &a.ncu {
        Some(r) => format!(
            "{}, {collected}, {} kernels profiled",
            inc.map(|i| format!("NVTX `{}`", md(&i)))
                .unwrap_or_else(|| "whole run".into()),
            r.kernels.len()
        ),
        None => "no data".to_string(),
    };
    let _ = writeln!(s, "| Capture | nsys: {nsys}; ncu: {ncu} |");
    if let Some(st) = &a.status {
        let passes: Vec<String> = st
            .passes
            .iter()
            .map(|(name, p)| {
                let d = p
                    .duration_s
                    .map(|d| format!(", {d:.1} s"))
                    .unwrap_or_default();
                format!(
                    "{name} {}{d}",
                    serde_json::to_value(p.state)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default()
                )
            })
            .collect();
        let beside = second_gpu_note(a)
            .map(|n| format!("; {n}"))
            .unwrap_or_default();
        let _ = writeln!(s, "| Passes | {}{beside} |", passes.join("; "));
    }
    s.push('\n');
}

fn numbers(a: &Artifacts, s: &mut String) {
    let _ = writeln!(s, "## Headline numbers\n");
    let (total, launches) = a.kernel_totals();
    if a.kernels_nsys.is_some() {
        let _ = writeln!(
            s,
            "- GPU kernel time: {} ms in {} launches of {} kernels ({})",
            ms(total),
            launches,
            a.kernels_nsys.as_ref().map(Vec::len).unwrap_or(0),
            a.kern_sum_file
        );
    }
    if let Some(note) = a.hidden_graphs_note() {
        let _ = writeln!(s, "- {note}");
    } else if let Some(c) = a.captured() {
        let _ = writeln!(
            s,
            "- Captured range `{}`{}: {} ms CPU wall{}, {} ms of kernels in {} launches{}, GPU busy {} of the range{} ({})",
            md(&c.name),
            a.rank_data
                .first()
                .filter(|_| a.rank_data.len() > 1)
                .map(|r| format!(" (rank {})", r.rank))
                .unwrap_or_default(),
            ms(c.wall_ns),
            c.proj_ns
                .map(|p| format!(", {} ms GPU projection", ms(p)))
                .unwrap_or_default(),
            ms(c.kernel_ns),
            c.launches,
            graphs(&c),
            pct(c.busy_pct()),
            if c.nccl_wait_ns > 0.0 {
                format!(
                    ", {} not counting NCCL waiting",
                    pct(c.working_pct())
                )
            } else {
                String::new()
            },
            c.source
        );
    }
    if !a.rank_data.is_empty() {
        let nccl: f64 = a.rank_data.iter().map(|r| r.nccl_time_ns).sum();
        let total: f64 = a.rank_data.iter().map(|r| r.kernel_time_ns).sum();
        let _ = writeln!(
            s,
            "- {} ranks; NCCL kernels take {} of their GPU time (nsys/summary.rank<N>_cuda_gpu_kern_sum.csv)",
            a.rank_data.len(),
            pct(100.0 * nccl / total.max(1.0))
        );
        let waits: Option<f64> = a.rank_data.iter().map(|r| r.nccl_wait_ns).sum();
        if let Some(wait) = waits.filter(|_| nccl > 0.0) {
            let _ = writeln!(
                s,
                "- Of the NCCL time, {} is ranks waiting for a late peer; the transfers take about {} ms (nsys/run.rank<N>.sqlite, fastest rank per collective)",
                pct(100.0 * wait / nccl),
                ms(nccl - wait)
            );
        }
        let range = a.captured().map(|c| c.name);
        if let Some((median, rank, slow)) = range
            .as_deref()
            .and_then(|r| crate::analysis::ranks::straggler(&a.rank_data, r))
        {
            let _ = writeln!(
                s,
                "- Slowest rank in `{}`: rank {rank}, {} ms vs a median of {} ms ({:.2}x) (nsys/summary.rank<N>_nvtx_sum.csv){}",
                md(range.as_deref().unwrap_or("")),
                ms(slow),
                ms(median),
                slow / median.max(1.0),
                if waits.is_some() {
                    "; a range that holds collectives ends about together on every rank, so NCCL waiting, above, is what shows who is late"
                } else {
                    ""
                }
            );
        }
    }
    let step = &a.config.report.step_range;
    if let Some(st) = a.range_stats.iter().find(|r| &r.name == step) {
        let _ = writeln!(
            s,
            "- Per `{}` ({} of them; one generated token per sequence each): {} ms wall, {} us of kernels, {:.0} launches ({})",
            md(step),
            st.instances,
            ms(st.avg_wall_ns),
            us(st.avg_kernel_ns),
            st.avg_launches,
            a.sqlite_file
        );
    }
    if let Some(api) = &a.api {
        let launches: Vec<_> = api
            .iter()
            .filter(|c| c.name.contains("LaunchKernel"))
            .collect();
        if !launches.is_empty() {
            let calls: u64 = launches.iter().map(|c| c.calls).sum();
            let t: f64 = launches.iter().map(|c| c.total_ns).sum();
            let _ = writeln!(
                s,
                "- Kernel launch API calls: {calls}, {} ms of CPU time, {} us each on average ({})",
                ms(t),
                us(t / calls.max(1) as f64),
                a.api_sum_file
            );
        }
    }
    if let Some(cov) = a.ncu_coverage_pct() {
        let _ = writeln!(
            s,
            "- Hardware counters (ncu) measured for {} kernels covering {} {} ({})",
            a.records.iter().filter(|r| r.ncu_instances > 0).count(),
            pct(cov),
            a.coverage_scope(),
            a.ncu_csv_file
        );
    }
    s.push('\n');
}

fn operators(a: &Artifacts, s: &mut String) {
    let _ = writeln!(s, "## Operators\n");
    super::ops::table(a, s, 15);
    match &a.ranges {
        Some(ranges) if !ranges.is_empty() => {
            let _ = writeln!(s, "NVTX ranges ({}):\n", a.nvtx_sum_file);
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
            let _ = writeln!(s, "No NVTX range summary ({} is missing).", a.nvtx_sum_file);
        }
    }
    if let Some(p) = &a.stage1_ops {
        let _ = writeln!(s, "\nStage-1 operator table (`{}`):\n", p.display());
        s.push_str(&csv_as_table(p, 15));
    }
    s.push('\n');
}

/// The first rows of a CSV as a Markdown table; a broken file is mentioned, not fatal.
fn csv_as_table(path: &std::path::Path, rows: usize) -> String {
    let Ok(mut r) = csv::ReaderBuilder::new().flexible(true).from_path(path) else {
        return "(unreadable)\n".into();
    };
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

fn top_kernels(a: &Artifacts, s: &mut String) {
    let _ = writeln!(
        s,
        "## Top kernels\n\nShares from {}; bound classes from ncu's SM and DRAM throughput ({}).\n",
        a.kern_sum_file,
        if a.ncu_problem.is_some() {
            "ncu export unreadable, see kernels.md"
        } else if a.ncu_csv_file.is_empty() {
            "no ncu data"
        } else {
            &a.ncu_csv_file
        }
    );
    if a.records.is_empty() {
        let _ = writeln!(s, "No kernels.\n");
        return;
    }
    top_table(s, &a.records);
    if let Some(first) = a.ncu_records.first() {
        let _ = writeln!(
            s,
            "\nIn `{}`, which ncu profiled (ranked by ncu's time of the profiled launches):\n",
            md(&a
                .ncu_include
                .as_deref()
                .map(crate::analysis::nvtx::base_name)
                .or_else(|| first.nvtx_range.clone())
                .unwrap_or_else(|| "the ncu range".into()))
        );
        top_table(s, &a.ncu_records);
    }
    let _ = writeln!(
        s,
        "\nFull tables: kernels.md. Bound rule: {}.\n",
        Bound::RULE
    );
}

fn top_table(s: &mut String, records: &[crate::model::KernelRecord]) {
    let _ = writeln!(
        s,
        "| # | kernel | share of GPU time | avg (us) | bound |\n|--:|---|--:|--:|---|"
    );
    for r in records.iter().take(5) {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            r.rank,
            md(&cut(&display_name(&r.name), 60)),
            r.gpu_time_pct.map(pct).unwrap_or_else(|| "–".into()),
            us(r.avg_time_ns),
            r.bound.map(Bound::label).unwrap_or("–")
        );
    }
}

/// The rank that waits longest in NCCL kernels, when that is over 10% of its kernel time: its
/// peers arrive late at the collectives.
fn nccl_imbalance(a: &Artifacts) -> Option<String> {
    let (waiter, wait) = a
        .rank_data
        .iter()
        .filter_map(|r| Some((r, r.nccl_wait_ns?)))
        .max_by(|x, y| x.1.total_cmp(&y.1))?;
    let (late, late_wait) = a
        .rank_data
        .iter()
        .filter_map(|r| Some((r.rank, r.nccl_wait_ns?)))
        .min_by(|x, y| x.1.total_cmp(&y.1))?;
    if wait <= 0.1 * waiter.kernel_time_ns {
        return None;
    }
    let transfer = waiter.nccl_time_ns - wait;
    Some(format!(
        "Ranks are out of step (rule: a rank waits in NCCL kernels for over 10% of its kernel time; here rank {} waits {} ms, {} of its kernel time, while the collectives themselves take about {} ms): rank {late} {}. Compare the per-rank NVTX table in kernels.md to find the range it is slow in (host work, launch overhead, or uneven shards); NCCL's share of GPU time overstates communication until the ranks are in step.",
        waiter.rank,
        ms(wait),
        pct(100.0 * wait / waiter.kernel_time_ns.max(1.0)),
        ms(transfer.max(0.0)),
        if late_wait > 0.0 {
            format!("is late most (it waits least, {} ms)", ms(late_wait))
        } else {
            "arrives last at every collective".to_string()
        }
    ))
}

/// Advice for a range that leaves the GPU idle, from what its wall-time ledger says the CPU
/// thread does (the rule and the chain of ranges stated).
fn ledger_advice(label: &str, story: &str, busy: f64) -> String {
    let what = match label {
        "sync-bound" => "remove synchronisations from the loop (`.item()`, `.cpu()`, `.tolist()`, blocking copies) or move them off the critical path",
        "launch-bound" => "capture the loop in CUDA graphs (torch.compile mode=\"reduce-overhead\"), fuse small ops, or raise the batch size so each launch does more work",
        "CUDA-call-bound" => "find the CUDA calls that are neither launches nor synchronisations (allocation, attribute queries, module loads: nsys's `cuda_api_sum`) and move them out of the loop (warm-up, caching allocator)",
        _ => "profile that Python/framework code (a CPU sampler such as py-spy, or nsys CPU sampling), then move it out of the step, compile it, or do more work per step (larger batch)",
    };
    format!(
        "The GPU is idle most of the captured range (rule: GPU busy < 50%; here {}) and the range is {label} (kernels.md states the rule): {}. Next: {what}.",
        pct(busy),
        md(story)
    )
}

/// Recommendations, each from a stated rule on the data.
pub(crate) fn recommendations(a: &Artifacts) -> Vec<String> {
    let mut out = Vec::new();
    let (total, launches) = a.kernel_totals();
    if let Some(note) = a.hidden_graphs_note() {
        out.push(format!("Graph kernels are invisible: {note}."));
    } else if let Some(c) = a.captured() {
        let busy = c.working_pct();
        let story =
            crate::analysis::ledger::cpu_story(&a.ledger_by_name(), &c.name, a.python.as_ref());
        if busy < 50.0 && c.busy_pct() >= 50.0 {
            // NCCL waiting, not launching: nccl_imbalance below says which rank is late.
        } else if let (true, Some((label, story))) = (busy < 50.0, story) {
            out.push(ledger_advice(label, &story, busy));
        } else if busy < 50.0 && c.graph_kernels == 0 {
            out.push(format!(
                "Launch overhead dominates (rule: GPU busy < 50% of the captured range{}; here {}): capture the loop in CUDA graphs (torch.compile mode=\"reduce-overhead\"), fuse small ops, or raise the batch size so each launch does more work.",
                if c.nccl_wait_ns > 0.0 { ", not counting NCCL waiting" } else { "" },
                pct(busy)
            ));
        } else if busy < 50.0 {
            out.push(format!(
                "The GPU is idle most of the captured range (rule: GPU busy < 50%; here {}) although {} of its {} kernels already run from CUDA graphs: the time goes to CPU work between graph launches (Python, sampling, cache updates), not to kernel launches.",
                pct(busy),
                c.graph_kernels,
                c.launches
            ));
        }
    }
    if let Some(r) = nccl_imbalance(a) {
        out.push(r);
    }
    if launches > 0 {
        let avg = total / launches as f64;
        if avg < 10_000.0 {
            out.push(format!(
                "Kernels are tiny (rule: mean kernel < 10 us; here {} us): making them faster moves little; fewer, larger kernels (fusion, larger batches) do more work per launch.",
                us(avg)
            ));
        }
    }
    let top: Vec<_> = a
        .records
        .iter()
        .take(5)
        .chain(a.ncu_records.iter().take(5))
        .collect();
    let mem = top
        .iter()
        .filter(|r| r.bound == Some(Bound::Memory))
        .count();
    if mem > 0 {
        out.push(format!(
            "{mem} of the top kernels are memory-bound (rule: DRAM >= 60% of peak): batch more requests per step or quantise weights to cut bytes moved."
        ));
    }
    let comp = top
        .iter()
        .filter(|r| r.bound == Some(Bound::Compute))
        .count();
    if comp > 0 {
        out.push(format!(
            "{comp} of the top kernels are compute-bound (rule: SM >= 60% of peak): check they use tensor cores (bf16/fp8 dtypes, aligned shapes)."
        ));
    }
    let gemms: Vec<(f64, f64)> = top
        .iter()
        .filter_map(|r| a.point(r))
        .filter(|p| p.tensor_flops > 0.0)
        .filter_map(|p| Some((p.tensor_pipe_pct?, p.tensor_flops)))
        .collect();
    if let Some(max_pipe) = gemms
        .iter()
        .map(|g| g.0)
        .reduce(f64::max)
        .filter(|m| *m < 10.0)
    {
        out.push(format!(
            "Tensor cores are barely used (rule: tensor pipe < 10% in the top kernels that use them; here at most {max_pipe:.1}%, ncu's sm__pipe_tensor_cycles_active): these matrix products leave the tensor cores idle most of the time; more rows per product (more tokens or requests per step) is what fills them."
        ));
    }
    if a.ncu.is_none() {
        out.push("No ncu metrics in this run: run the ncu pass (ncu.enable=true) to learn why the top kernels are slow.".into());
    }
    if let Some(st) = &a.status {
        for (name, p) in &st.passes {
            if let Some(reason) = p.reason.as_ref().filter(|_| p.exit_code != 0) {
                out.push(format!(
                    "The {name} pass did not complete: {}",
                    md(reason.lines().next().unwrap_or(""))
                ));
            }
        }
    }
    if out.is_empty() {
        out.push("Nothing stands out by the rules above; compare against a previous run.".into());
    }
    out
}

/// `stakeholder_summary.md`.
pub(crate) struct StakeholderMd;

impl super::Output for StakeholderMd {
    fn file(&self) -> &'static str {
        "stakeholder_summary.md"
    }
    fn render(&self, a: &crate::analysis::Artifacts) -> Option<String> {
        Some(summary_md(a))
    }
}
