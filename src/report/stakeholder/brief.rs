//! The summary's opening for a manager: at most 200 words in plain words (no tool, metric or
//! rule names): what a step costs, where its time goes, the first change and what it buys,
//! and how sure the figures are. The engineer's detail follows it.

use std::fmt::Write;

use crate::findings::{
    Claim, CpuVerdict, Finding, Findings, LeverKind, LoopPart, Quantity as Q, StepBasis,
};

/// Words a manager's opening never uses: tools, metrics and mechanisms an engineer reads in
/// the sections below.
#[cfg(test)]
const JARGON: &[&str] = &[
    "nsys",
    "ncu",
    "NVTX",
    "CUDA",
    "kernel",
    "DRAM",
    "SM",
    "projection",
    "launch configuration",
    "tensor pipe",
    "floor",
    "PushPop",
    "cuModuleLoad",
    "cuLibraryLoad",
    "NCCL",
    "ledger",
    "rule",
    "roofline",
    "occupancy",
    "-bound",
    "sync",
    "torch.compile",
    "stage2 explain",
];

/// "## In short" and its lines; None without a step to speak of.
pub(crate) fn in_short(f: &Findings) -> Option<String> {
    let step = f.find(|x| matches!(x.claim, Claim::Step { .. }))?;
    let Claim::Step {
        basis, ref call_of, ..
    } = step.claim
    else {
        return None;
    };
    // A whole call of many steps is named so, and its levers are per call.
    let unit = match call_of {
        Some(_) => "call",
        None => "step",
    };
    let name = step.scope.range.as_deref().unwrap_or("");
    let mut s = String::from("## In short\n\n");
    let how = match (basis, step.scope.instances) {
        (StepBasis::Loop, _) => "the median from one step's start to the next",
        (StepBasis::Steady, _) => "the median of the steady steps",
        (StepBasis::Median, _) => "the median step",
        (StepBasis::Mean, Some(1)) => "its one run",
        (StepBasis::Mean, _) => "on average",
    };
    let two = crate::report::phrase::set_apart_two(step);
    let others = match step.figure(Q::SetApartMedianMs) {
        Some(_) if two.len() == 2 => format!("; 2 others took {} and {}", two[0], two[1]),
        Some(x) if x.scope.instances == Some(1) => format!("; 1 other took {}", x.text),
        Some(x) => format!(
            "; {} others took a median of {} each",
            x.scope.instances.unwrap_or(0),
            x.text
        ),
        None => String::new(),
    };
    let _ = write!(
        s,
        "Each {unit} of {} takes {} ({how}{others}).",
        crate::report::phrase::range_name(name),
        step.text(Q::StepMs)
    );
    if let Some(w) = step.get(Q::GpuWorkOfStepPct) {
        let _ = write!(s, " The GPU works {w:.0}% of that time");
        match waits_for(f, name) {
            Some(what) if w < 50.0 => {
                let _ = write!(s, " and waits the rest, mostly for {what}.");
            }
            _ if w < 50.0 => s.push_str(" and waits the rest for the CPU."),
            _ => s.push('.'),
        }
    }
    let levers: Vec<&Finding> = f
        .made()
        .filter(|x| matches!(x.claim, Claim::Lever { .. }))
        .take(3)
        .collect();
    for (i, l) in levers.iter().enumerate() {
        let Claim::Lever { lever, band, .. } = l.claim else {
            continue;
        };
        let lead = match i {
            0 => "First change",
            _ => "Next",
        };
        let _ = write!(
            s,
            "\n\n{lead}: {}{}. {}. {}",
            plain(lever),
            for_attention(l),
            buys(l, unit),
            crate::report::phrase::band_plain(band)
        );
    }
    if levers.is_empty() {
        s.push_str(
            "\n\nNone of the changes this report sizes (rebuilding GPU code, waiting on the CPU, memory traffic, a slow GPU among several, batch size) would save 5% of the step; what the GPU's work itself is made of is in the detail below.",
        );
    }
    let _ = write!(s, "\n\n{}\n", how_sure(f, step, unit));
    Some(s)
}

/// What the GPU waits for, in plain words: the largest part of the time between steps where
/// the loop decides, else the range's own verdict.
fn waits_for(f: &Findings, name: &str) -> Option<&'static str> {
    let here = |x: &&Finding| x.scope.range.as_deref() == Some(name);
    f.made().filter(here).find_map(|x| match &x.claim {
        Claim::Loop {
            decides: true,
            between,
            ..
        } => between.first().map(|(p, _)| match p {
            LoopPart::Sync => "results to come back to the CPU",
            LoopPart::Launch => "the CPU to start each piece of GPU work",
            LoopPart::OtherApi => "other calls from the CPU to the GPU driver",
            LoopPart::Compile => "GPU code being compiled for new input shapes",
            LoopPart::Own => "Python and framework code between steps",
            LoopPart::Range(_) => "other marked work between steps",
        }),
        Claim::GpuIdle {
            verdict: Some(v), ..
        } => Some(match v {
            CpuVerdict::Sync => "results to come back to the CPU",
            CpuVerdict::Launch => "the CPU to start each piece of GPU work",
            CpuVerdict::CudaCall => "other calls from the CPU to the GPU driver",
            CpuVerdict::Compile => "GPU code being compiled for new input shapes",
            CpuVerdict::Cpu => "Python and framework code in the step",
        }),
        _ => None,
    })
}

/// A lever in plain words.
fn plain(l: LeverKind) -> String {
    match l {
        LeverKind::Compile => "stop rebuilding GPU code inside the step (keep input shapes fixed or to a few sizes, and run each size once before the real work)".into(),
        LeverKind::HostWork { from_graphs: true, .. } => "cut the CPU work around the recorded GPU steps (the bookkeeping between them)".into(),
        LeverKind::HostWork { verdict: Some(CpuVerdict::Sync), .. } => "stop the CPU from waiting for GPU results inside the step".into(),
        LeverKind::HostWork { .. } => "cut the CPU work the GPU waits for (compile the step, record it once and replay it)".into(),
        LeverKind::Fuse => "merge the many small GPU operations that each read and write memory (normalisation, activations, additions, copies) into fewer, larger ones".into(),
        LeverKind::Bandwidth => "make the memory-heavy GPU work read and write less memory (merge small steps, smaller data types)".into(),
        LeverKind::LateRank => "make the slowest GPU keep pace with the others".into(),
        LeverKind::Batch { batch, forwards: 1, to } => format!("serve {to} sequences at once instead of {batch}, where the GPU's memory allows"),
        LeverKind::Batch { to, .. } => format!("serve the {to} requests of a step together, not one at a time, if they are separate requests"),
        LeverKind::WeightCopy { .. } => "stop copying large blocks of model weights inside each step (in a mixture-of-experts model, read the chosen experts' weights where they are)".into(),
        LeverKind::Fp8Scaling { .. } => "merge the small GPU steps that prepare each low-precision (FP8) multiplication into one, or reuse their scale instead of recomputing it every step".into(),
        LeverKind::PlainDecode => "generate without the small draft model: with it, each token costs more than without it".into(),
    }
}

/// How many builds came just before attention ran (an attention library building a kernel
/// for a new shape, as cuDNN's SDPA does): "; 21 of the builds come just before ...".
fn for_attention(l: &Finding) -> String {
    let cudnn = (l.get(Q::CudnnSdpaLoads), l.get(Q::LoadsNamed));
    match (l.figure(Q::AttentionLoads), cudnn) {
        (Some(_), (Some(c), Some(all))) if 2.0 * c >= all => format!(
            "; {} of the {} builds are the attention library's, which builds new code for each input shape it has not seen: one setting in PyTorch switches attention to code that needs none",
            l.text(Q::CudnnSdpaLoads),
            l.text(Q::LoadsNamed)
        ),
        (Some(n), _) => format!(
            "; {} of the builds come just before the attention computation runs",
            n.text
        ),
        (None, _) => String::new(),
    }
}

/// What a lever buys, in its unit.
fn buys(l: &Finding, unit: &str) -> String {
    if let Some(per) = l.figure(Q::SavingMsPerCompilingStep) {
        return format!(
            "It can save about {} in each of the {} steps that rebuild it (up to {}), {} of the {} this run's steps took ({})",
            per.text,
            l.text(Q::CompilingSteps),
            l.text(Q::CompileMaxMs),
            l.text(Q::SavingMsInCapture),
            l.text(Q::CapturedMs),
            l.text(Q::SavingOfCapturePct)
        );
    }
    if l.figure(Q::StepMsThen).is_none() && l.figure(Q::TokenMsThen).is_some() {
        return format!(
            "Each token would cost about {} instead of {} ({} less)",
            l.text(Q::TokenMsThen),
            l.text(Q::TokenMsNow),
            l.text(Q::SavingOfTokenPct)
        );
    }
    if let (Some(then), Some(now)) = (l.get(Q::StepMsThen), l.get(Q::StepMs)) {
        let step = match then > now {
            true => "though each step would take",
            false => "and each step would take",
        };
        return format!(
            "Each token would cost about {} instead of {} ({} less), {step} {} instead of {}",
            l.text(Q::TokenMsThen),
            l.text(Q::TokenMsNow),
            l.text(Q::SavingOfTokenPct),
            l.text(Q::StepMsThen),
            l.text(Q::StepMs)
        );
    }
    match l.figure(Q::GpuWorkMsPerStep) {
        Some(gpu) => format!(
            "Once the CPU work above is gone, it can save up to {} of the GPU's {} of work a step ({} of it)",
            l.text(Q::SavingMsPerStep),
            gpu.text,
            l.text(Q::SavingOfGpuWorkPct)
        ),
        None => format!(
            "It can save up to {} a {unit} ({} of it)",
            l.text(Q::SavingMsPerStep),
            l.text(Q::SavingOfStepPct)
        ),
    }
}

/// How sure: how many steps, what the profiler adds where the baseline pass measured it,
/// what else the profiling did to the figures where this run did it, and how many points the
/// engineer's list below holds.
fn how_sure(f: &Findings, step: &Finding, unit: &str) -> String {
    let n = match step.scope.instances {
        Some(1) => format!(" on one {unit}"),
        Some(n) => format!(" over {n} {unit}s"),
        None => String::new(),
    };
    let cost = f
        .find(|x| matches!(x.claim, Claim::MeasurementCost { .. }))
        .and_then(|m| m.get(Q::MeasurementAddedPct));
    let cost = match cost {
        Some(c) => format!("which made the {unit} {c:.0}% slower than without it"),
        None => format!("whose own cost on the {unit} was not measured"),
    };
    let listed = f.made().filter(|x| x.claim.how_sure()).count();
    let more = match listed {
        0 => String::new(),
        1 => format!(
            " One point that bears on the figures is listed under \"{}\" below.",
            super::sure::HEADING
        ),
        k => format!(
            " {k} points that bear on the figures are listed under \"{}\" below.",
            super::sure::HEADING
        ),
    };
    format!(
        "How sure: measured{n} of one run while profiling, {cost}{}; each saving is time this run measured, and a change that also speeds up the GPU work can save more.{more}",
        beside(f)
    )
}

/// What else the profiling did to the step's time, in plain words: a second copy of the
/// program starting beside it, and the recorded GPU steps followed piece by piece.
fn beside(f: &Findings) -> String {
    let mut s = String::new();
    if let Some(e) = f.find(|x| matches!(x.claim, Claim::EarlyStartBeside)) {
        let _ = match (e.figure(Q::CopyBusyInCaptureNs), e.figure(Q::CaptureNs)) {
            (Some(during), Some(all)) => write!(
                s,
                "; a second copy of the program was starting up on the same machine for {} of the {} measured, which may have slowed its CPU side",
                during.text, all.text
            ),
            _ => write!(
                s,
                "; a second copy of the program was starting up on the same machine while it was measured, which may have slowed its CPU side"
            ),
        };
    }
    if f.find(|x| matches!(x.claim, Claim::GraphNodeTrace))
        .is_some()
    {
        s.push_str("; the profiler followed each piece of work inside the recorded GPU steps, which slows every replay of them, so those steps run faster than measured");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::JARGON;

    /// Every committed sample's opening: at most 200 words, none of them jargon.
    #[test]
    fn every_samples_opening_is_short_and_plain() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let mut seen = 0;
        let mut dirs: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        dirs.extend(["base", "same", "slow"].map(|d| root.join("diff").join(d)));
        for dir in dirs {
            let Ok(text) = std::fs::read_to_string(dir.join("stakeholder_summary.md")) else {
                continue;
            };
            let Some(start) = text.find("## In short") else {
                continue;
            };
            let part = &text[start + "## In short".len()..];
            let part = &part[..part.find("**Headline:**").unwrap_or(part.len())];
            let words = part.split_whitespace().count();
            assert!(words <= 200, "{}: {words} words", dir.display());
            for j in JARGON {
                let hit = part
                    .split(|c: char| !c.is_alphanumeric() && c != '.' && c != '-')
                    .any(|w| w == *j)
                    || (j.contains(' ') || j.starts_with('-')) && part.contains(j);
                assert!(!hit, "{}: jargon {j:?} in {part}", dir.display());
            }
            seen += 1;
        }
        assert!(seen >= 8, "{seen} openings read");
    }
}
