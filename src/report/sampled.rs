//! kernels.md's sampled section: nsys's GPU-metrics samples over every launch of the range,
//! per kernel and launch configuration, beside ncu's figures where ncu measured the same one.

use std::fmt::Write;

use super::fmt::{md, opt1, pct, us};
use crate::findings::document::{Agreement, BytesSource, Decided, GpuMetrics, Reused};
use crate::findings::Findings;
use crate::model::{Bound, KernelRecord, SampledFigures};

/// Launch configurations listed per kernel; the rest are in summary.json.
const CONFIGS_SHOWN: usize = 4;

pub(crate) fn section(a: &Decided, f: &Findings, s: &mut String, width: usize) {
    let Some(gm) = &a.summary.gpu_metrics else {
        return;
    };
    let scope = match a
        .facts
        .focus
        .range()
        .filter(|_| a.capture_range_missing().is_none())
    {
        Some(r) => format!("every launch in {}", crate::text::code(r)),
        None => "every launch of the capture".to_string(),
    };
    let _ = writeln!(s, "\n## Sampled GPU metrics ({scope})\n");
    if let Some(why) = &gm.not_sampled {
        let _ = writeln!(s, "The nsys pass took no GPU-metrics samples: {why}.");
        return;
    }
    if let Some(note) = &gm.note {
        let _ = writeln!(s, "The nsys pass sampled GPU metrics, but {}.", md(note));
        return;
    }
    let Some(all) = gm.all_kernels else { return };
    if let Some(r) = &gm.reused {
        reused(r, gm, &all, s);
        window(f, s);
        table(a, gm, s, width, all.time_ns);
        agreement(gm, f, s);
        return;
    }
    let period_us = 1e6 / gm.frequency_hz;
    let _ = writeln!(
        s,
        "Sampled by nsys during its pass at {:.0} Hz (`{}`, table GPU_METRICS): {} launches, {} ms of kernel time, {} of it inside sample windows that saw the GPU working; DRAM {}, SM issue {}, tensor {} of peak over them all. Sampled figures are window averages over each window's GR Active share, weighed by each launch's time in it: kernels much shorter than a {:.1} us window share it with their neighbours. Rule: {}.\n",
        gm.frequency_hz,
        md(&gm.source),
        all.launches,
        super::fmt::ms(all.time_ns),
        pct(all.coverage_pct),
        opt_pct(all.dram_pct),
        opt_pct(all.sm_issue_pct),
        opt_pct(all.tensor_pct),
        period_us,
        Bound::SAMPLED_RULE
    );
    if let Some(p) = &gm.picked {
        let _ = writeln!(s, "{}.\n", md(p));
    }
    if !gm.dropped.is_empty() {
        let _ = writeln!(
            s,
            "The export lacks {} of the metrics the pass asked for, left out by nsys without a word (a counter this GPU cannot sample): {}.\n",
            gm.dropped.len(),
            gm.dropped.iter().map(|m| md(m)).collect::<Vec<_>>().join(", ")
        );
    }
    if let Some(why) = &gm.bytes_note {
        let _ = writeln!(s, "Bytes per step: {}.\n", md(why));
    }
    if let Some(r) = gm.rank {
        let _ = writeln!(s, "Rank {r}'s launches alone: under a launcher only rank 0's nsys samples, as nsys refuses a second sampler of a GPU; the figures below are of its launches.\n");
    }
    instances(a, gm, s);
    window(f, s);
    table(a, gm, s, width, all.time_ns);
    agreement(gm, f, s);
}

/// The kernels given no sampled class for the window, said before the table that marks them.
fn window(f: &Findings, s: &mut String) {
    for d in f
        .made()
        .filter(|d| matches!(d.claim, crate::findings::Claim::SampledWindow { .. }))
    {
        let _ = writeln!(s, "{}\n", super::phrase::sentence(d));
    }
}

/// The words of figures reused from an earlier run: whose, over what, and what they left out.
fn reused(r: &Reused, gm: &GpuMetrics, all: &SampledFigures, s: &mut String) {
    let _ = writeln!(
        s,
        "Sampled by nsys in run {} at {:.0} Hz and reused here: this run's nsys pass did not sample (`nsys.gpu_metrics.reuse`; that run's figures per launch configuration are in {}). This run's {} launches, {} ms of kernel time, take them where that run saw the same kernel and launch configuration with a mean duration within {:.0}% of this run's ({}): {} of the time is inside that run's working sample windows; DRAM {}, SM issue {}, tensor {} of peak over them all.",
        crate::text::code(&r.run),
        gm.frequency_hz,
        crate::text::code(&r.source),
        all.launches,
        super::fmt::ms(all.time_ns),
        r.rule.threshold,
        r.rule.id,
        pct(all.coverage_pct),
        opt_pct(all.dram_pct),
        opt_pct(all.sm_issue_pct),
        opt_pct(all.tensor_pct),
    );
    let mut left = Vec::new();
    if r.unseen.configs > 0 {
        left.push(format!(
            "{} launch configurations ({} ms) that run did not see",
            r.unseen.configs,
            super::fmt::ms(r.unseen.time_ns)
        ));
    }
    if r.moved.configs > 0 {
        left.push(format!(
            "{} whose mean duration moved by more than {:.0}% ({} ms)",
            r.moved.configs,
            r.rule.threshold,
            super::fmt::ms(r.moved.time_ns)
        ));
    }
    if !left.is_empty() {
        let next = match r.resample(all.time_ns) {
            true => "the next run of this command samples again".to_string(),
            false => format!(
                "they hold {} of the kernel time, under {:.0}%, so the next run of this command reuses these figures too (`nsys.gpu_metrics.reuse=false` samples)",
                pct(r.gap_pct(all.time_ns)),
                crate::rules::SAMPLED_REUSE_GAP_PCT
            ),
        };
        let _ = write!(
            s,
            " Not reused: {}; they have no sampled figures here, and {next}.",
            left.join(", and ")
        );
    }
    let _ = writeln!(s, "\n");
}

/// The spread over the range's instances, when it has several: a warm-up or a longer
/// context shows here before it shows in any one kernel.
fn instances(a: &Decided, gm: &GpuMetrics, s: &mut String) {
    if gm.instances.len() < 2 {
        return;
    }
    let spread = |get: &dyn Fn(&SampledFigures) -> Option<f64>| {
        let v: Vec<f64> = gm
            .instances
            .iter()
            .filter_map(|i| get(&i.figures))
            .collect();
        let lo = v.iter().copied().reduce(f64::min);
        let hi = v.iter().copied().reduce(f64::max);
        match (lo, hi) {
            (Some(lo), Some(hi)) => format!("{lo:.1}–{hi:.1}%"),
            _ => "–".to_string(),
        }
    };
    // Instances whose launches fell in no sample window have no figures: the ranges above are
    // over the others only, and how many had none is said (nsys can stop sampling early in a
    // long capture: seen on a torch.compile loop, samples only in its first, compiling
    // instance).
    let unsampled: Vec<usize> = (0..gm.instances.len())
        .filter(|&i| gm.instances[i].figures.samples == 0)
        .collect();
    let none = match unsampled.as_slice() {
        [] => String::new(),
        [only] => format!(
            " Instance #{} of {} has no samples (its launches fell in no sample window): the figures are the other instances'.",
            only + 1,
            gm.instances.len()
        ),
        all => format!(
            " {} of the {} instances have no samples (between #{} and #{}; their launches fell in no sample window): the figures are the other {}'s, so they do not describe those instances.",
            all.len(),
            gm.instances.len(),
            all[0] + 1,
            all[all.len() - 1] + 1,
            gm.instances.len() - all.len()
        ),
    };
    let _ = writeln!(
        s,
        "Per instance of {} ({} instances, each over the launches made in it; summary.json `gpu_metrics.instances`): DRAM {}, SM issue {}, tensor {}, coverage {}.{none}\n",
        crate::text::code(a.facts.focus.range().unwrap_or("")),
        gm.instances.len(),
        spread(&|f| f.dram_pct),
        spread(&|f| f.sm_issue_pct),
        spread(&|f| f.tensor_pct),
        spread(&|f| Some(f.coverage_pct)),
    );
}

fn opt_pct(v: Option<f64>) -> String {
    v.map(pct).unwrap_or_else(|| "–".into())
}

fn table(a: &Decided, gm: &GpuMetrics, s: &mut String, width: usize, total_ns: f64) {
    let _ = writeln!(
        s,
        "| # | kernel | grid | block | share | launches | avg (us) | coverage | samples | DRAM % | SM issue % | tensor % | bound (sampled) | ncu DRAM % | ncu bound |"
    );
    let _ = writeln!(
        s,
        "|--:|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|---|"
    );
    let top = a.layout.top_kernels;
    let shown: Vec<&KernelRecord> = a
        .tables
        .kernels
        .iter()
        .filter(|r| r.sampled.is_some())
        .take(top)
        .collect();
    let labels = super::run_labels(a, shown.iter().map(|r| r.name.as_str()), width);
    for (r, label) in shown.iter().zip(labels) {
        let Some(k) = &r.sampled else { continue };
        for c in k.configs.iter().take(CONFIGS_SHOWN) {
            let ncu = gm
                .beside_ncu
                .iter()
                .find(|x| x.kernel == r.name && x.grid == c.grid && x.block == c.block);
            row(
                s,
                r.rank,
                &md(&label),
                &c.grid,
                &c.block,
                &c.figures,
                total_ns,
                ncu,
            );
        }
        if k.configs.len() > CONFIGS_SHOWN {
            let _ = writeln!(
                s,
                "| {} | {} | {} more | | | | | | | | | | | | |",
                r.rank,
                md(&label),
                k.configs.len() - CONFIGS_SHOWN
            );
        }
    }
    let more = a
        .tables
        .kernels
        .iter()
        .filter(|r| r.sampled.is_some())
        .count()
        .saturating_sub(top);
    if more > 0 {
        let _ = writeln!(s, "\n{more} more kernels' sampled figures in summary.json.");
    }
}

#[allow(clippy::too_many_arguments)]
fn row(
    s: &mut String,
    rank: usize,
    label: &str,
    grid: &str,
    block: &str,
    f: &SampledFigures,
    total_ns: f64,
    ncu: Option<&Agreement>,
) {
    let share = if total_ns > 0.0 {
        100.0 * f.time_ns / total_ns
    } else {
        0.0
    };
    // Launches shorter than the window: the window's figures are not the kernel's, and the
    // class cell says why there is none.
    let own = |v: Option<f64>| opt1(v.filter(|_| f.short.is_none()));
    let class = match (f.short, f.bound) {
        (Some(short), _) => format!("not classed: {}", super::phrase::short_launches(&short)),
        (None, b) => b.map(Bound::label).unwrap_or("–").to_string(),
    };
    let _ = writeln!(
        s,
        "| {rank} | {label} | {grid} | {block} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        pct(share),
        f.launches,
        us(f.time_ns / f.launches.max(1) as f64),
        pct(f.coverage_pct),
        f.samples,
        own(f.dram_pct),
        own(f.sm_issue_pct),
        own(f.tensor_pct),
        class,
        opt1(ncu.map(|n| n.ncu_dram_pct)),
        ncu.map(|n| n.ncu_bound.label()).unwrap_or("–"),
    );
}

fn agreement(gm: &GpuMetrics, findings: &Findings, s: &mut String) {
    let Some(a) = &gm.agreement else {
        return;
    };
    let classes = match (a.same_class_pct, a.unclassed) {
        (Some(same), 0) => format!("the bound classes agree for {} of that time", pct(same)),
        (Some(same), n) => format!(
            "the bound classes agree for {} of the time of those with a sampled class ({n} without one: their launches are shorter than the sample window)",
            pct(same)
        ),
        (None, _) => "none has a sampled class to hold against ncu's: their launches are shorter than the sample window".to_string(),
    };
    let _ = writeln!(
        s,
        "\nWhere ncu measured the same launch configuration ({} of at least {:.0}% of the range's kernel time, sampled at {:.0}% coverage or more): the sampled DRAM figure is {:.1} points from ncu's on average (weighed by time), {:.1} at worst; {classes}. ncu replays one launch with its caches flushed; the samples are of every launch as it ran.",
        a.compared,
        a.min_share_pct,
        a.min_coverage_pct,
        a.dram_mean_diff_points,
        a.dram_worst_diff_points,
    );
    for d in findings
        .made()
        .filter(|d| matches!(d.claim, crate::findings::Claim::SampledDisagrees { .. }))
    {
        let _ = writeln!(s, "\n{}", super::phrase::sentence(d));
    }
}

/// kernels.md's line of the captured range's DRAM traffic per step, in the ranges section:
/// the figure, its source, its coverage, and the floor and use against a labelled ceiling.
pub(crate) fn step_bytes(a: &Decided, s: &mut String) {
    let Some(b) = a.summary_steps() else { return };
    let mb = |v: f64| format!("{:.2} MB", v / 1e6);
    let over = match &b.group {
        Some(g) => format!(
            "median of the {} of its most numerous group, {}",
            b.instances,
            md(g)
        ),
        None => format!("median of its {} instances", b.instances),
    };
    let how = match (b.source, b.shares_of) {
        (BytesSource::Counters, _) => "counted by the sampled DRAM byte counters".to_string(),
        (BytesSource::Shares, Some(p)) => format!(
            "from the sampled DRAM bandwidth shares of {} {:.2} TB/s",
            p.source.label(),
            p.bytes_per_s / 1e12
        ),
        (BytesSource::Shares, None) => "from the sampled DRAM bandwidth shares".to_string(),
    };
    let within = b.bytes_within.map_or(String::new(), |w| {
        format!(
            "; the export keeps each share as a whole per cent, so within ±{}",
            mb(w)
        )
    });
    let _ = write!(
        s,
        "\nDRAM traffic per step of `{}` (the nsys pass's samples, {over}; summary.json `dram_per_step`): {} ({} read, {} written), all the GPU's DRAM traffic over each step's GPU span, {how}, {} covered{within}.",
        md(&b.range),
        mb(b.dram_bytes),
        mb(b.dram_read_bytes),
        mb(b.dram_write_bytes),
        pct(b.coverage_pct),
    );
    if let (Some(c), Some(floor), Some(used)) = (b.ceiling, b.memory_floor_ms, b.bandwidth_use_pct)
    {
        let _ = write!(
            s,
            " Memory floor {floor:.4} ms a step at {} {:.2} TB/s (no copy bandwidth measured); bandwidth use {} over the {:.2} ms step.",
            c.source.label(),
            c.bytes_per_s / 1e12,
            pct(used),
            b.step_ms
        );
    }
    for c in a
        .findings
        .made()
        .filter(|c| matches!(c.claim, crate::findings::Claim::Census { .. }))
    {
        let _ = write!(s, " {}.", super::phrase::sentence(c));
    }
    // A bound as large as the bytes: said where the bytes are.
    for c in a
        .findings
        .made()
        .filter(|c| matches!(c.claim, crate::findings::Claim::BoundOverValue))
    {
        let _ = write!(s, " {}", super::phrase::sentence(c));
    }
    let _ = writeln!(s);
}
