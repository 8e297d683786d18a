//! stakeholder_summary.md: what a manager reads in a minute. Every number says its file.

use std::fmt::Write;

use super::fmt::{capitalise, cut, dur, md, ms, pct, us};
use super::phrase;
use super::second_gpu_note;
use crate::config::PROFILER_WINDOW;
use crate::findings::document::Decided;
use crate::findings::{Claim, Finding, Findings, Quantity as Q, Role};
use crate::model::Bound;
use crate::text::code;

mod brief;
mod sure;
mod tables;
use tables::{operators, top_kernels};

pub(crate) fn summary_md(a: &Decided, f: &Findings) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Where the GPU time goes: run {}\n", md(a.facts.run_id));
    if let Some(note) = super::replay_note(a) {
        let _ = writeln!(s, "{note}");
    }
    if let Some(b) = brief::in_short(f) {
        let _ = writeln!(s, "{b}");
    }
    let _ = writeln!(s, "{}\n", headline(a, f));
    levers(f, &mut s);
    sure::section(f, &mut s);
    run_facts(a, &mut s);
    numbers(a, f, &mut s);
    operators(a, &mut s);
    top_kernels(a, &mut s);
    let _ = writeln!(s, "## What to look at next\n");
    for r in recommendations(f) {
        let _ = writeln!(s, "- {r}");
    }
    let mut notes = super::footnotes::Footnotes::default();
    let mut s = notes.cite_in(&s);
    let sources = notes.render();
    if !sources.is_empty() {
        let _ = write!(s, "\n{sources}");
    }
    s
}

fn is(f: &Finding, claim: fn(&Claim) -> bool) -> bool {
    claim(&f.claim)
}

/// How the headline names the captured range: "captured `decode` range", "captured
/// cudaProfilerStart/Stop windows".
fn captured_name(a: &Decided) -> String {
    match a.facts.focus.range() {
        Some(PROFILER_WINDOW) => "captured cudaProfilerStart/Stop windows".to_string(),
        r => format!("captured {} range", code(r.unwrap_or(""))),
    }
}

/// Who ran one process's kernels: "the GPU", or "the 2 GPUs" where they ran on several devices.
fn gpus(a: &Decided) -> String {
    match a.facts.kernel_devices {
        n if n > 1 => format!("the {n} GPUs"),
        _ => "the GPU".to_string(),
    }
}

fn headline(a: &Decided, f: &Findings) -> String {
    let Some(totals) = f.find(|x| is(x, |c| matches!(c, Claim::KernelTotals))) else {
        return "**No kernel data was captured.** See the passes below and status.json for why."
            .to_string();
    };
    // A multi-rank run's kernel table sums the ranks; its range figures are the first rank's.
    let ranks = a.tables.ranks.len();
    let (who, summed, whose) = match a.tables.ranks.first() {
        Some(r) if ranks > 1 => (
            format!("the {ranks} GPUs"),
            format!(" (summed over {ranks} ranks)"),
            format!("rank {}'s ", r.rank),
        ),
        _ => (gpus(a), String::new(), "the ".to_string()),
    };
    let top = f
        .find(|x| is(x, |c| matches!(c, Claim::TopKernel { .. })))
        .and_then(|top| match &top.claim {
            Claim::TopKernel { name } => Some(format!(
                "the top kernel, {}, takes {}",
                md(&cut(name, 60)),
                top.text(Q::KernelSharePct)
            )),
            _ => None,
        });
    let captured = f.find(|x| is(x, |c| matches!(c, Claim::CapturedRange)));
    // Where the kernel totals are the captured range's own (one process), its sentence says
    // them once; otherwise the totals' scope leads and the captured range follows.
    let same = captured.is_some_and(|c| c.scope.range == totals.scope.range) && ranks <= 1;
    // A capture whose range the export never holds: said first, as everything after is not
    // that range's.
    let lead = match f.find(|x| is(x, |c| matches!(c, Claim::CaptureRangeMissing { .. }))) {
        Some(m) => format!("**Headline:** {} ", phrase::sentence(m)),
        None => format!("**Headline:** {}", step_lead(f)),
    };
    let mut h = match same {
        true => lead,
        false => {
            let mut h = format!(
                "{lead}{}, {who} ran {} of kernels in {} launches{summed}",
                capitalise(&phrase::scope(&totals.scope)),
                totals.text(Q::KernelTimeNs),
                totals.text(Q::KernelLaunches)
            );
            if let Some(t) = &top {
                let _ = write!(h, "; {t}");
            }
            h.push_str(". ");
            h
        }
    };
    if let Some(c) = captured {
        // One process's kernels on several GPUs: busy is the union of every device's kernels.
        let several = ranks <= 1 && a.facts.kernel_devices > 1;
        let _ = write!(
            h,
            "In {whose}{} ({} of CPU wall time under nsys{}) {} ran {} of kernels in {} launches{}, {} {} of the range time",
            captured_name(a),
            c.text(Q::WallNs),
            c.figure(Q::GpuProjectionNs)
                .map(|p| format!(", its GPU work spanning {}", p.text))
                .unwrap_or_default(),
            match several {
                true => gpus(a),
                false => "the GPU".to_string(),
            },
            c.text(Q::KernelTimeNs),
            c.text(Q::KernelLaunches),
            graphs(c),
            match several {
                true => "one or more of them busy",
                false => "busy",
            },
            c.text(Q::GpuBusyOfRangePct),
        );
        captured_verdict(f, &c.scope, several, &mut h);
        h.push_str(&phrase::cite(c));
        h.push('.');
        // Where the range is a fraction of its loop, the loop's verdict follows at once.
        let decides = |x: &Finding| {
            matches!(x.claim, Claim::Loop { decides: true, .. }) && x.scope.range == c.scope.range
        };
        if let Some(l) = f.find(decides) {
            if let Claim::Loop {
                gpu_bound, between, ..
            } = &l.claim
            {
                let _ = write!(
                    h,
                    " But {} ({}).",
                    phrase::loop_clause(l, true, *gpu_bound, between),
                    l.sources().join(", ")
                );
            }
        }
        if let (true, Some(t)) = (same, &top) {
            let _ = write!(h, " {}.", capitalise(t));
        }
        // A GPU-bound step against the tensor peak (its sentence in the numbers below).
        let peak = |x: &Finding| {
            matches!(x.claim, Claim::TensorPeak { .. }) && x.scope.range == c.scope.range
        };
        if let Some(x) = f.find(peak) {
            if let Claim::TensorPeak { compute_bound } = x.claim {
                let _ = write!(
                    h,
                    " {} is {} ({}).",
                    capitalise(&phrase::step_of(x)),
                    phrase::tensor_peak_clause(x, compute_bound),
                    x.sources().join(", ")
                );
            }
        }
    }
    let mut h = h.trim_end().to_string();
    // Each phase's time, but the captured range's: its sentence above has it.
    let stated = captured.and_then(|c| c.scope.range.clone());
    let phases: Vec<String> = f
        .made()
        .filter(|x| matches!(x.claim, Claim::PhaseTime))
        .filter(|x| stated.is_none() || x.scope.range != stated)
        .map(phase)
        .collect();
    if !phases.is_empty() {
        let _ = write!(h, " {}.", capitalise(&phases.join(", ")));
    }
    if let Some(t) = super::tokens::headline(a, f) {
        h.push(' ');
        h.push_str(&t);
    }
    for x in f.made() {
        if let Claim::InstanceGroups { groups, .. } = &x.claim {
            let kinds: Vec<String> = groups
                .iter()
                .map(|g| {
                    let at = phrase::group_wall(x, g, "");
                    // The headline's short form, of the graphs only (the finding's sentence
                    // names every call): a count over the group, not a claim about each.
                    let work = match x.in_group(Q::GroupGraphsInstantiated, &g.label) {
                        Some(n) => {
                            let graphs = match n.value as u64 {
                                1 => "a CUDA graph".to_string(),
                                k => format!("{k} CUDA graphs"),
                            };
                            match g.instances {
                                1 => format!(" (recording {graphs})"),
                                _ => format!(" ({graphs} recorded among them)"),
                            }
                        }
                        None => String::new(),
                    };
                    format!("{} at {at}{work}", g.instances)
                })
                .collect();
            let _ = write!(
                h,
                " {}'s instances are of {} kinds ({}; \"What to look at next\"), so one mean over them describes none.",
                phrase::range_name(x.scope.range.as_deref().unwrap_or("")),
                groups.len(),
                kinds.join(", ")
            );
        }
    }
    h
}

/// The step's time, the GPU's share of it and the top lever with what it buys, first: "Each
/// step of `decode` takes 1.35 ms (the loop's median), the GPU working 38.4% of it; the top
/// lever saves up to 0.83 ms a step (61.6%): it is listed under Levers. " Empty without a step.
fn step_lead(f: &Findings) -> String {
    let Some((step, basis, gpu_bound, call_of)) = f.made().find_map(|x| match x.claim {
        Claim::Step {
            basis,
            gpu_bound,
            ref call_of,
        } => Some((x, basis, gpu_bound, call_of.as_deref())),
        _ => None,
    }) else {
        return String::new();
    };
    // Its source is cited once, where the range's figures follow.
    let lead = phrase::step_clause(step, basis, gpu_bound, call_of);
    let unit = match call_of {
        Some(_) => "call",
        None => "step",
    };
    let top = f.find(|x| matches!(x.claim, Claim::Lever { rank: 1, .. }));
    let Some((l, name)) = top.and_then(|l| match l.claim {
        Claim::Lever { lever, .. } => Some((l, phrase::lever_name(lever))),
        _ => None,
    }) else {
        return format!("{lead}. ");
    };
    let first = format!("{lead}; {name} (the first lever, \"Levers\" below)");
    let fig = |q| l.figure(q).map(|x| x.text.as_str());
    match (fig(Q::SavingMsPerStep), fig(Q::SavingOfStepPct)) {
        (Some(ms), Some(pct)) => format!("{first} saves up to {ms} a {unit} ({pct}). "),
        _ => match (
            fig(Q::SavingMsPerToken),
            fig(Q::SavingOfTokenPct),
            fig(Q::SavingMsPerCompilingStep),
        ) {
            (Some(ms), Some(pct), _) => {
                format!("{first} would save about {ms} a token ({pct}). ")
            }
            (_, _, Some(per)) => format!(
                "{first} saves a median of {per} in each of the {} instances that compile, {} of the captured time. ",
                fig(Q::CompilingSteps).unwrap_or("?"),
                fig(Q::SavingOfCapturePct).unwrap_or("?")
            ),
            _ => format!("{lead}. "),
        },
    }
}

/// ", 2280 of them from CUDA graphs", or nothing.
fn graphs(c: &Finding) -> String {
    match c.get(Q::GraphKernels) {
        Some(n) if n > 0.0 => format!(", {} of them from CUDA graphs", c.text(Q::GraphKernels)),
        _ => String::new(),
    }
}

/// The captured range's verdict as a clause of the headline.
/// `several`: one process's kernels ran on several GPUs, busy meaning one or more of them.
fn captured_verdict(f: &Findings, scope: &crate::findings::Scope, several: bool, h: &mut String) {
    let (gpus, they, wait, busy) = match several {
        true => (
            "the GPUs",
            "they",
            "wait",
            "one or more of the GPUs is busy",
        ),
        false => ("the GPU", "it", "waits", "the GPU is busy"),
    };
    // The range's own findings, and those over one group of its instances (a verdict over the
    // instances after a warm-up).
    let here = |x: &&Finding| {
        &x.scope == scope
            || (x.scope.group.is_some()
                && x.scope.range == scope.range
                && x.scope.rank == scope.rank
                && x.scope.kernel.is_none()
                && matches!(x.claim, Claim::GpuIdle { .. }))
    };
    for x in f.made().filter(here) {
        match &x.claim {
            Claim::GraphLevelTrace => {
                let _ = write!(
                    h,
                    "; but its {} CUDA graph launches ran kernels nsys traced only as whole graphs, which these figures leave out (kernels.md says how to see them)",
                    x.text(Q::GraphLaunches)
                );
            }
            Claim::NcclWaiting => {
                let _ = write!(
                    h,
                    ", but {} of those kernels are NCCL waiting for a late rank, so it does work {} of the range time",
                    x.text(Q::NcclWaitNs),
                    x.text(Q::GpuWorkingOfRangePct)
                );
            }
            Claim::GpuWaitsInNccl => {
                h.push_str(": it mostly waits for the other ranks inside NCCL kernels");
            }
            Claim::GpuIdle { verdict, story, .. } if x.scope.group.is_some() => {
                let _ = write!(
                    h,
                    "; {}, {busy} {} of their time: {they} mostly {wait} on the CPU",
                    super::phrase::scope(&x.scope),
                    x.text(Q::GpuBusyOfRangePct)
                );
                if let (Some(v), Some(story)) = (verdict, story) {
                    let _ = write!(
                        h,
                        ", and {} ({}; kernels.md, \"Where the wall time goes\")",
                        md(story),
                        v.label()
                    );
                }
            }
            Claim::GpuIdle { verdict, story, .. } => match (verdict, story) {
                (Some(v), Some(story)) => {
                    let _ = write!(
                        h,
                        ": {gpus} mostly {wait} on the CPU, and {} ({}; kernels.md, \"Where the wall time goes\")",
                        md(story),
                        v.label()
                    );
                }
                _ => {
                    let _ = write!(
                        h,
                        ": {gpus} mostly {wait} on the CPU (busy under half the range time)"
                    );
                }
            },
            _ => {}
        }
    }
}

/// "prefill took 12.34 ms (10.00 ms of kernels)", or its graph launches when their kernels
/// are not in the export.
fn phase(x: &Finding) -> String {
    let name = x.scope.range.as_deref().unwrap_or("");
    let kernels = match x.figure(Q::GraphLaunches) {
        Some(g) => format!(
            "{} of traced kernels; {} CUDA graph launches whose kernels were not traced",
            x.text(Q::KernelTimeNs),
            g.text
        ),
        None => format!("{} of kernels", x.text(Q::KernelTimeNs)),
    };
    format!(
        "{} took {} ({kernels})",
        phrase::range_name(name),
        x.text(Q::WallNs)
    )
}

fn run_facts(a: &Decided, s: &mut String) {
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
    let replayed = a.replayed_tools();
    let tool = |t: &str| {
        let double = match replayed.contains(&t) {
            true => " (test double: a recorded capture replayed)",
            false => "",
        };
        a.env_str(&["tools", t, "version"])
            .map(|v| format!("{t} {v}{double}"))
            .unwrap_or_else(|| format!("{t} –"))
    };
    let _ = writeln!(s, "| Tools | {}, {} |", tool("nsys"), tool("ncu"));
    if let Some(python) = a.env_str(&["python", "python"]) {
        let packages: Vec<String> = a
            .facts
            .env
            .and_then(|e| e["python"]["packages"].as_object())
            .into_iter()
            .flatten()
            .filter_map(|(name, v)| Some(format!("{name} {}", v.as_str()?)))
            .collect();
        let _ = writeln!(
            s,
            "| Python | {}{} (packages/versions.json) |",
            md(&python),
            md(&match packages.is_empty() {
                true => String::new(),
                false => format!(": {}", packages.join(", ")),
            })
        );
    }
    let workload = crate::secrets::redact_url(&crate::files::shell_line(a.facts.workload_argv));
    let workload = if workload.is_empty() {
        a.facts
            .workload_module
            .map(|m| format!("python -m {m}"))
            .unwrap_or_else(|| "–".into())
    } else {
        workload
    };
    let _ = writeln!(s, "| Workload | {} |", md(&cut(&workload, 120)));
    let nsys = super::phrase::capture_held(a);
    let inc = a.ncu_include().map(str::to_string);
    let record = a
        .facts
        .status
        .and_then(|s| s.passes.get("ncu")?.ncu.clone())
        .filter(|r| r.metrics > 0);
    let collected = match record {
        Some(r) => match r.set {
            Some(set) => format!("set {}", md(&set)),
            None => format!("the reports' {} metrics", r.metrics),
        },
        None if a.facts.ncu_set == "report" => "the reports' metrics".to_string(),
        None => format!("set {}", md(a.facts.ncu_set)),
    };
    // Figures served by the metrics cache were measured in an earlier run, not this one.
    let cached = a
        .tables
        .kernels
        .iter()
        .chain(a.tables.ncu_kernels)
        .filter(|r| r.ncu_cached_from.is_some())
        .count();
    let ncu = match &a.tables.ncu {
        Some(r) => {
            let n = r.kernels.len();
            let counted = match cached.min(n) {
                0 => format!("{n} kernels profiled"),
                c if c == n => format!(
                    "{n} kernels' figures from the metrics cache (none profiled in this run)"
                ),
                c => format!(
                    "{n} kernels ({} profiled in this run, {c} from the metrics cache)",
                    n - c
                ),
            };
            format!(
                "{}, {collected}, {counted}",
                inc.map(|i| format!("NVTX {}", code(&i).replace('|', "\\|")))
                    .unwrap_or_else(|| "whole run".into()),
            )
        }
        None => "no data".to_string(),
    };
    // A name's `|` would split the cell, inside a code span too.
    let nsys = nsys.replace('|', "\\|");
    let _ = writeln!(s, "| Capture | nsys: {nsys}; ncu: {ncu} |");
    if let Some(st) = &a.facts.status {
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

fn numbers(a: &Decided, f: &Findings, s: &mut String) {
    let _ = writeln!(s, "## Headline numbers\n");
    for x in f.made() {
        let line = match &x.claim {
            Claim::CapturedRange => captured_line(a, x),
            // Laid out by the headline and the tables below.
            Claim::TopKernel { .. } | Claim::PhaseTime | Claim::PerToken => continue,
            // kernels.md's, by phase: a table's detail, not a headline number.
            Claim::AttentionKernels { .. } => continue,
            // Every other fact, as phrase::fact words it (a new fact kind needs no line here).
            c if c.role() == Role::Fact => phrase::fact(x),
            _ => continue,
        };
        let _ = writeln!(s, "- {line}");
    }
    let step = &a.layout.step_range;
    if let Some(st) = a.tables.ranges.iter().find(|r| &r.name == step) {
        let _ = writeln!(
            s,
            "- Per {} instance ({} of them): {} ms wall, {} of kernels, {:.0} launches ({})",
            code(step),
            st.instances,
            ms(st.avg_wall_ns),
            dur(st.avg_kernel_ns),
            st.avg_launches,
            a.facts.sqlite_file
        );
    }
    s.push('\n');
}

fn captured_line(a: &Decided, c: &Finding) -> String {
    format!(
        "Captured range {}{}: {} CPU wall{}, {} of kernels in {} launches{}, GPU busy {} of the range time (the longer of CPU wall and GPU projection){}{}",
        phrase::range_name(c.scope.range.as_deref().unwrap_or("")),
        a.tables.ranks
            .first()
            .filter(|_| a.tables.ranks.len() > 1)
            .map(|r| format!(" (rank {})", r.rank))
            .unwrap_or_default(),
        c.text(Q::WallNs),
        c.figure(Q::GpuProjectionNs)
            .map(|p| format!(", {} GPU projection", p.text))
            .unwrap_or_default(),
        c.text(Q::KernelTimeNs),
        c.text(Q::KernelLaunches),
        graphs(c),
        c.text(Q::GpuBusyOfRangePct),
        c.figure(Q::GpuWorkingOfRangePct)
            .map(|w| format!(", {} not counting NCCL waiting", w.text))
            .unwrap_or_default(),
        phrase::cite(c)
    )
}

/// The levers, most saving first, as the engineer reads them.
fn levers(f: &Findings, s: &mut String) {
    let levers: Vec<String> = f
        .made()
        .filter(|x| matches!(x.claim, Claim::Lever { .. }))
        .map(|x| by_rule_id(x, capitalise(&phrase::sentence(x))))
        .collect();
    if levers.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "## Levers, most saving first
"
    );
    for (i, l) in levers.iter().enumerate() {
        let _ = writeln!(s, "{}. {l}", i + 1);
    }
    s.push('\n');
}

/// What to look at next: every verdict, caveat and piece of advice the findings make, the
/// captured range's first (the levers have their own list, and so do the findings on how sure
/// the figures are).
pub(crate) fn recommendations(f: &Findings) -> Vec<String> {
    f.made()
        .filter(|x| matches!(x.role, Role::Verdict | Role::Caveat | Role::Advice))
        .filter(|x| !matches!(x.claim, Claim::RangeVerdict { .. } | Claim::Lever { .. }))
        .filter(|x| !x.claim.how_sure())
        .map(|x| by_rule_id(x, phrase::sentence(x)))
        .collect()
}

/// A manager's sentence cites the rule by its id, where `stage2 explain` gives its words
/// (metric names and thresholds), instead of quoting them: kernels.md quotes them in full.
pub(super) fn by_rule_id(f: &Finding, sentence: String) -> String {
    match &f.rule {
        Some(r) => sentence.replacen(
            &format!("rule: {}", r.text),
            &format!("rule `{}`, `stage2 explain {}`", r.id, r.id),
            1,
        ),
        None => sentence,
    }
}

/// `stakeholder_summary.md`.
pub(crate) struct StakeholderMd;

impl super::Output for StakeholderMd {
    fn file(&self) -> &'static str {
        "stakeholder_summary.md"
    }
    fn render(&self, a: &Decided) -> Option<String> {
        Some(summary_md(a, &a.findings))
    }
}
