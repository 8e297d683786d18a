//! Per-token costs (kernels.md table, the stakeholder headline's sentence).

use std::fmt::Write;

use super::fmt::md;
use crate::findings::document::{Decided, PhaseCost};
use crate::findings::{Claim, Finding, Findings, Quantity as Q};

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("–".into(), |v| format!("{v:.digits$}"))
}

/// The section's name: "Per token" where a phase has token marks, else "Per instance" (a
/// heading promises what is under it).
pub(crate) fn heading(a: &Decided) -> &'static str {
    match a.tables.per_token.iter().any(|p| p.ms_per_token.is_some()) {
        true => "Per token",
        false => "Per instance",
    }
}

/// Whether a phase's time per token is over a batch of several sequences.
fn batched(a: &Decided) -> bool {
    a.tables
        .per_token
        .iter()
        .any(|p| p.ms_per_token.is_some() && p.batch.is_some_and(|b| b > 1))
}

/// kernels.md's table; nothing without phases.
pub(crate) fn section(a: &Decided, f_all: &Findings, s: &mut String) {
    if a.tables.per_token.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n## {}\n\nTokens come from the `stage2:tokens batch=B new=N` NVTX marks inside each phase's instances (`{}`; `--auto-nvtx` puts them there); time is the phases' CPU wall time{}. The floors of the captured range: the DRAM bytes and FLOPs of its kernels (ncu's rates times nsys's durations, per instance) at the GPU's peak DRAM bandwidth and dense BF16 tensor rate (ncu's peaks); \"floor / measured\" is the floor's time over the measured time per instance (the longer of the CPU wall time and the GPU projection), so 100% would be running at the floor.\n",
        heading(a),
        a.facts.sqlite_file,
        match batched(a) {
            true => "; a time per token divides an instance by the tokens of every sequence in its batch (batch × new tokens), so each sequence waits batch times as long for one of its own",
            false => "",
        }
    );
    let _ = writeln!(
        s,
        "| phase | instances | batch | tokens | ms per instance | ms per token{} | tokens/s | DRAM MB per instance | memory floor (ms) | memory floor / measured | GFLOP per instance | compute floor (ms) | compute floor / measured | kernel time measured by ncu |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
        if batched(a) { ", over the batch" } else { "" }
    );
    for p in a.tables.per_token {
        let f = p.floor.as_ref();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.3} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            md(&p.phase),
            p.instances,
            p.batch.map_or("–".into(), |b| b.to_string()),
            p.tokens.map_or("–".into(), |t| t.to_string()),
            p.ms_per_instance,
            opt(p.ms_per_token, 3),
            opt(p.tokens_per_s, 0),
            opt(f.map(|f| f.dram_bytes / 1e6), 1),
            opt(f.map(|f| f.memory_floor_ms), 4),
            opt(f.map(|f| f.pct_of_memory_floor), 1),
            opt(f.map(|f| f.flops / 1e9), 2),
            opt(f.and_then(|f| f.compute_floor_ms), 4),
            opt(f.and_then(|f| f.pct_of_compute_floor), 1),
            f.map_or("–".into(), |f| format!("{:.1}%", f.measured_pct)),
        );
        group_rows(f_all, &p.phase, s);
        baseline_row(f_all, p, s);
    }
    whole_note(a, s);
}

/// Where ncu measured one instance whole, what its DRAM MB are and what the kernels' replays
/// summed to, side by side.
fn whole_note(a: &Decided, s: &mut String) {
    for p in a.tables.per_token {
        let Some((f, w)) = p.floor.as_ref().and_then(|f| Some((f, f.whole.as_ref()?))) else {
            continue;
        };
        let file = a.tables.graph_step.map_or("", |(_, file)| file.as_str());
        let _ = writeln!(
            s,
            "\n{}'s DRAM MB per instance is instance {} measured whole by ncu (`--graph-profiling graph`: {}; {} results, {:.3} ms of GPU time under ncu; {}): {:.1} MB. Its kernels replayed one by one (those holding {:.1}% of its kernel time) sum to {:.1} MB per instance.",
            crate::text::code(&p.phase),
            w.choice.instance,
            w.choice.work.describe(),
            w.results,
            w.gpu_ns / 1e6,
            crate::text::code(file),
            w.dram_bytes / 1e6,
            f.measured_pct,
            f.replay_dram_bytes.unwrap_or(0.0) / 1e6,
        );
    }
}

/// The phase without a profiler (the baseline pass), per instance and per token at the same
/// tokens per instance.
fn baseline_row(f: &Findings, p: &PhaseCost, s: &mut String) {
    let Some(m) = f.find(|x| {
        matches!(x.claim, Claim::MeasurementCost { .. })
            && x.scope.range.as_deref() == Some(p.phase.as_str())
    }) else {
        return;
    };
    let Some(ms) = m.figure(Q::BaselineMsPerInstance).map(|e| e.value) else {
        return;
    };
    // Instances of no length under nsys have no rate to scale: those cells stay empty.
    let scale = Some(ms / p.ms_per_instance).filter(|s| s.is_finite());
    let _ = writeln!(
        s,
        "| {} — without a profiler (baseline pass) | {} | | | {ms:.3} | {} | {} | | | | | | | |",
        md(&p.phase),
        p.instances,
        opt(p.ms_per_token.zip(scale).map(|(t, k)| t * k), 3),
        opt(p.tokens_per_s.zip(scale).map(|(t, k)| t / k), 0),
    );
}

/// Under a phase of several kinds of instance, one row per group: its count and median per
/// instance, and tokens/s where the phase has token marks (the row above mixes them).
fn group_rows(f: &Findings, phase: &str, s: &mut String) {
    let Some(g) = f.find(|x| {
        matches!(x.claim, Claim::InstanceGroups { .. }) && x.scope.range.as_deref() == Some(phase)
    }) else {
        return;
    };
    let Claim::InstanceGroups { groups, .. } = &g.claim else {
        return;
    };
    // The group of the instance ncu measured whole: its floor over the group's median.
    let per_token =
        f.find(|x| matches!(x.claim, Claim::PerToken) && x.scope.range.as_deref() == Some(phase));
    for grp in groups {
        let of = |q: Q| {
            g.in_group(q, &grp.label)
                .map_or("–".to_string(), |e| e.text.clone())
        };
        let floor = per_token
            .and_then(|p| p.in_group(Q::MemoryFloorOfMeasuredPct, &grp.label))
            .map_or(String::new(), |e| format!("{:.1}", e.value));
        let _ = writeln!(
            s,
            "| {} — {} (median) | {} | | | {} | | {} | | | {floor} | | | | |",
            md(phase),
            md(&grp.label),
            grp.instances,
            of(Q::GroupMedianWallNs),
            of(Q::TokensPerS),
        );
    }
}

/// One sentence per phase for a manager, from the per-token findings: step time, per token,
/// tokens/s, and how near the floors it runs. With a baseline pass, a phase it timed leads
/// with the figures without a profiler, the ones under nsys beside them.
pub(crate) fn headline(a: &Decided, f: &Findings) -> Option<String> {
    let parts: Vec<String> = f
        .made()
        .filter(|x| matches!(x.claim, Claim::PerToken))
        .map(|p| {
            let name = super::phrase::range_name(p.scope.range.as_deref().unwrap_or(""));
            let takes = match groups_of(f, p) {
                Some(g) => grouped(p, g),
                None => sentence(p),
            };
            match baseline_of(f, p) {
                Some(m) => format!("{name} {}", bare_first(p, m, takes)),
                None => format!("{name} {takes}"),
            }
        })
        .collect();
    // Without token marks there is no per-token figure: the sentence is per instance.
    let per = heading(a);
    (!parts.is_empty()).then(|| {
        // Every time here was measured with nsys tracing the run, which adds its own cost:
        // said once, or per phase where the baseline pass timed it without a profiler.
        let lead = match (a.tables.observed.is_empty(), &a.facts.baseline_file) {
            (true, _) => format!(
                "{per}, timed under nsys ({}, kernels.md \"{per}\"; `--baseline` times the same ranges without a profiler)",
                a.facts.sqlite_file
            ),
            (false, b) => format!(
                "{per} ({}, {b}, kernels.md \"{per}\")",
                a.facts.sqlite_file
            ),
        };
        format!("{lead}: {}.", parts.join("; "))
    })
}

/// The baseline pass's finding for the phase a per-token finding speaks of.
fn baseline_of<'a>(f: &'a Findings, p: &Finding) -> Option<&'a Finding> {
    f.find(|x| matches!(x.claim, Claim::MeasurementCost { .. }) && x.scope.range == p.scope.range)
}

/// A phase the baseline pass timed: its time per instance without a profiler first (per token
/// and tokens/s at the same tokens per instance), then `under_nsys`, what the profiled figures
/// say it takes ("takes ...", the phase's name left to the caller, as in every part here).
fn bare_first(p: &Finding, m: &Finding, under_nsys: String) -> String {
    let (Some(bare), Some(nsys)) = (
        m.figure(Q::BaselineMsPerInstance).map(|e| e.value),
        p.figure(Q::MsPerInstance).map(|e| e.value),
    ) else {
        return under_nsys;
    };
    let scale = bare / nsys;
    let mut t = format!("takes {bare:.2} ms per instance without a profiler (the baseline pass)");
    // Instances of no length under nsys have no rate to scale.
    if let (Some(ms), Some(tps), true) = (
        p.figure(Q::MsPerToken).map(|e| e.value),
        p.figure(Q::TokensPerS).map(|e| e.value),
        scale.is_finite() && scale > 0.0,
    ) {
        let _ = write!(
            t,
            ", {:.3} ms per token{} ({:.0} tokens/s)",
            ms * scale,
            over_batch(p),
            tps / scale
        );
    }
    format!("{t}; under nsys it {under_nsys}")
}

/// The instance groups of the phase a per-token finding speaks of, when it has several kinds.
fn groups_of<'a>(f: &'a Findings, p: &Finding) -> Option<&'a Finding> {
    f.find(|x| matches!(x.claim, Claim::InstanceGroups { .. }) && x.scope.range == p.scope.range)
}

/// A phase of several kinds of instance: each group's time per instance (see
/// [`super::phrase::group_wall`]) and tokens/s, never one mean ("takes per instance ...", the
/// name the caller's).
fn grouped(p: &Finding, g: &Finding) -> String {
    let Claim::InstanceGroups { groups, .. } = &g.claim else {
        return sentence(p);
    };
    let per: Vec<String> = groups
        .iter()
        .map(|grp| {
            let of = |q: Q| g.in_group(q, &grp.label).map(|e| e.text.clone());
            let tps = of(Q::TokensPerS)
                .map(|t| format!(", {t}"))
                .unwrap_or_default();
            let floor = p
                .in_group(Q::MemoryFloorOfMeasuredPct, &grp.label)
                .map(|m| {
                    format!(
                        "; its memory-bandwidth floor, the {} of DRAM traffic ncu measured running instance {} whole at peak bandwidth, is {} of that",
                        p.text(Q::StepDramMb),
                        p.text(Q::StepInstance),
                        m.text
                    )
                })
                .unwrap_or_default();
            format!(
                "{} ({}{tps}{floor})",
                super::phrase::group_wall(g, grp, "a median of "),
                md(&grp.label)
            )
        })
        .collect();
    format!("takes per instance {}", per.join(", "))
}

/// ", over a batch of 8": a per-token time divides an instance by the tokens of every sequence
/// in it, so a sequence waits that many times as long for each of its tokens. Empty for one
/// sequence.
fn over_batch(p: &Finding) -> String {
    p.figure(Q::BatchSequences)
        .map_or(String::new(), |b| format!(", over a batch of {}", b.text))
}

/// "takes X per instance, ..." of one phase (its name is the caller's).
fn sentence(p: &Finding) -> String {
    let mut t = match (p.figure(Q::FastestInstanceMs), p.figure(Q::SlowestInstanceMs)) {
        (Some(lo), Some(hi)) => format!(
            "takes {} per instance on average over {} instances from {} to {}, too few to group and too unlike for that mean to describe one",
            p.text(Q::MsPerInstance),
            p.scope.instances.unwrap_or(0),
            lo.text,
            hi.text
        ),
        // A mean over several: the step the levers are sized on may be their median.
        _ if p.scope.instances.is_some_and(|n| n > 1) => {
            format!("takes {} per instance on average", p.text(Q::MsPerInstance))
        }
        _ => format!("takes {} per instance", p.text(Q::MsPerInstance)),
    };
    if let (Some(ms), Some(tps)) = (p.figure(Q::MsPerToken), p.figure(Q::TokensPerS)) {
        let _ = write!(t, ", {} per token{} ({})", ms.text, over_batch(p), tps.text);
        if let Some(g) = p.figure(Q::GpuMsPerInstance) {
            let _ = write!(
                t,
                " of CPU wall time, but its GPU work spans {} per instance, {} per token ({}): the rate its tokens come out at",
                g.text,
                p.text(Q::GpuMsPerToken),
                p.text(Q::GpuTokensPerS)
            );
        }
    }
    // The range is a fraction of its loop: the step's time is the loop's (rules::LOOP_SHARE).
    if let Some(c) = p.figure(Q::CycleMs) {
        let _ = write!(t, ", in a loop that starts one every {}", c.text);
        if let Some(m) = p.figure(Q::LoopMsPerToken) {
            let _ = write!(t, " ({} per token{} over the loop)", m.text, over_batch(p));
        }
        t.push_str(", the time per step that counts");
    }
    if let Some(m) = p.figure(Q::MemoryFloorOfMeasuredPct) {
        // The floors are over the range's time per instance; where its GPU work outlasts the
        // CPU range (CUDA graphs), that is not the wall time just stated: name it.
        let of = match p.figure(Q::FloorBasisMsPerInstance) {
            Some(b) => format!(
                "of its {} per instance of GPU work (its projection, which outlasts the CPU range)",
                b.text
            ),
            None => "of that time".to_string(),
        };
        // The share of the kernel time the floors count, where ncu measured part of it.
        let part = p.figure(Q::NcuCoveragePct);
        let bytes = match p.figure(Q::StepDramMb) {
            Some(mb) => format!(
                "the {} of DRAM traffic ncu measured running instance {} whole{} at peak bandwidth",
                mb.text,
                p.text(Q::StepInstance),
                step_parts(p)
            ),
            None => match part {
                Some(c) => format!(
                    "the DRAM bytes of the kernels ncu measured, {} of its kernel time, at peak bandwidth",
                    c.text
                ),
                None => "its kernels' DRAM bytes at peak bandwidth".to_string(),
            },
        };
        let compute = p.figure(Q::ComputeFloorOfMeasuredPct);
        let _ = write!(
            t,
            "; its memory-bandwidth floor ({bytes}) is {} {of}{}",
            m.text,
            compute.map_or(String::new(), |c| format!(", its compute floor {}", c.text))
        );
        // Floors over part of the kernel time are that part's: lower bounds of the phase's
        // (a phase measured whole by the graph step has no such share).
        if part.is_some() {
            t.push_str(match compute {
                Some(_) => ", both lower bounds",
                None => ", a lower bound",
            });
        }
    }
    t
}

/// ": N CUDA graph launches and M kernels outside graphs" of an instance measured whole, the
/// counts that are not zero.
fn step_parts(p: &Finding) -> String {
    use crate::model::{graph_launches, kernels_outside};
    let count = |q| p.figure(q).map(|f| f.value as u64).filter(|&n| n > 0);
    let parts: Vec<String> = [
        count(Q::StepGraphLaunches).map(graph_launches),
        count(Q::StepKernelsOutsideGraphs).map(kernels_outside),
    ]
    .into_iter()
    .flatten()
    .collect();
    match parts.is_empty() {
        true => String::new(),
        false => format!(": {}", parts.join(" and ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::{Figure, Scope};

    /// With a baseline, a phase's sentence leads with the time without a profiler, per token
    /// and tokens/s at the same tokens per instance, and keeps the profiled figures after it.
    #[test]
    fn the_bare_time_leads_and_the_profiled_one_follows() {
        let scope = Scope::range("decode").instances(15);
        let fig = |q, v, src: &str| Figure::new(q, v, src, &scope);
        let mut f = Findings::default();
        f.push(
            Claim::PerToken,
            scope.clone(),
            None,
            vec![
                fig(Q::MsPerInstance, 10.0, "nsys/run.sqlite"),
                fig(Q::MsPerToken, 2.5, "nsys/run.sqlite"),
                fig(Q::TokensPerS, 400.0, "nsys/run.sqlite"),
            ],
        );
        f.push(
            Claim::MeasurementCost {
                compared: 15,
                timed: 15,
                from_start: false,
            },
            Scope::range("decode"),
            None,
            vec![Figure::new(
                Q::BaselineMsPerInstance,
                4.0,
                "baseline/ranges.1.txt",
                &Scope::range("decode"),
            )],
        );
        let p = f
            .made()
            .find(|x| matches!(x.claim, Claim::PerToken))
            .unwrap();
        let m = baseline_of(&f, p).unwrap();
        let text = format!(
            "{} {}",
            super::super::phrase::range_name("decode"),
            bare_first(p, m, sentence(p))
        );
        assert!(
            text.starts_with("`decode` takes 4.00 ms per instance without a profiler (the baseline pass), 1.000 ms per token (1000 tokens/s); under nsys it takes "),
            "{text}"
        );
        assert!(text.contains("per token (400 tokens/s)"), "{text}");
    }

    /// Hand-made: a phase whose instances under nsys have no length (pushed and popped at
    /// once) beside a baseline that timed them: the per-token figures are not scaled by an
    /// infinite ratio, so no cell or sentence reads `NaN` or `inf`.
    #[test]
    fn instances_of_no_length_scale_no_per_token_figure() {
        let scope = Scope::range("decode").instances(15);
        let fig = |q, v| Figure::new(q, v, "nsys/run.sqlite", &scope);
        let mut f = Findings::default();
        let per_instance = vec![
            fig(Q::MsPerInstance, 0.0),
            fig(Q::MsPerToken, 0.0),
            fig(Q::TokensPerS, 0.0),
        ];
        f.push(Claim::PerToken, scope.clone(), None, per_instance);
        let cost = Claim::MeasurementCost {
            compared: 15,
            timed: 15,
            from_start: false,
        };
        let bare = Figure::new(
            Q::BaselineMsPerInstance,
            4.0,
            "baseline/ranges.1.txt",
            &Scope::range("decode"),
        );
        f.push(cost, Scope::range("decode"), None, vec![bare]);
        let p = f
            .made()
            .find(|x| matches!(x.claim, Claim::PerToken))
            .unwrap();
        let text = bare_first(p, baseline_of(&f, p).unwrap(), sentence(p));
        let phase = PhaseCost {
            phase: "decode".into(),
            instances: 15,
            tokens: Some(15),
            ms_per_token: Some(0.0),
            tokens_per_s: Some(0.0),
            ..PhaseCost::default()
        };
        let mut row = String::new();
        baseline_row(&f, &phase, &mut row);
        assert!(row.starts_with("| decode — without a profiler"), "{row}");
        for t in [&text, &row] {
            let words: Vec<&str> = t.split(|c: char| !c.is_ascii_alphanumeric()).collect();
            assert!(!words.contains(&"NaN") && !words.contains(&"inf"), "{t}");
        }
    }

    /// Two instances, one a warm-up (as assisted generation's two `decode` forwards on an
    /// H200: 9.71 and 439.07 ms): their mean is stated as a mean, with both beside it.
    #[test]
    fn a_mean_of_unlike_instances_says_what_it_averages() {
        let scope = Scope::range("decode").instances(2);
        let fig = |q, v| Figure::new(q, v, "nsys/run.sqlite", &scope);
        let mut f = Findings::default();
        f.push(
            Claim::PerToken,
            scope.clone(),
            None,
            vec![
                fig(Q::MsPerInstance, 224.39),
                fig(Q::FastestInstanceMs, 9.71),
                fig(Q::SlowestInstanceMs, 439.07),
                fig(Q::MsPerToken, 224.39),
                fig(Q::TokensPerS, 4.0),
            ],
        );
        let p = f.made().next().unwrap();
        assert_eq!(
            sentence(p),
            "takes 224.39 ms per instance on average over 2 instances from 9.71 ms to 439.07 ms, too few to group and too unlike for that mean to describe one, 224.390 ms per token (4 tokens/s)"
        );
    }
    /// Floors over the kernels ncu measured, where those hold part of the phase's kernel time
    /// (the two-GPU sample: 1.8%, NCCL left out), name that part and are lower bounds.
    #[test]
    fn floors_over_part_of_the_kernel_time_say_so() {
        let scope = Scope::range("decode").instances(1);
        let ncu = scope.clone().ncu();
        let fig = |q, v, s: &Scope| Figure::new(q, v, "ncu/x_raw.csv", s);
        let mut f = Findings::default();
        f.push(
            Claim::PerToken,
            scope.clone(),
            None,
            vec![
                fig(Q::MsPerInstance, 375.99, &scope),
                fig(Q::MemoryFloorOfMeasuredPct, 0.0172, &ncu),
                fig(Q::NcuCoveragePct, 1.8, &ncu),
                fig(Q::ComputeFloorOfMeasuredPct, 0.0043, &ncu),
            ],
        );
        let p = f.made().next().unwrap();
        assert_eq!(
            sentence(p),
            "takes 375.99 ms per instance; its memory-bandwidth floor (the DRAM bytes of the kernels ncu measured, 1.8% of its kernel time, at peak bandwidth) is 0.017% of that time, its compute floor 0.0043%, both lower bounds"
        );
    }
}
