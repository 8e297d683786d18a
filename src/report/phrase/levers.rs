//! Levers phrased: what to change, what it saves in its unit (a step, a token, the GPU's work,
//! once), what the saving rests on, and how such a saving held when the change was made for
//! real (the lever's band), or that it never was.

use super::groups;
use crate::findings::{Finding, LeverKind, Quantity as Q};
use crate::rules::Band;

/// A lever in a few words, for the headline.
pub(crate) fn lever_name(lever: LeverKind) -> String {
    match lever {
        LeverKind::Compile => "not compiling GPU code inside the step".into(),
        LeverKind::HostWork { .. } => "moving the host work the GPU waits for off the step".into(),
        LeverKind::Bandwidth => "bringing the memory-bound kernels nearer the DRAM peak".into(),
        LeverKind::Fuse => {
            "fusing the element-wise and reduction kernels into their neighbours".into()
        }
        LeverKind::LateRank => "bringing the late rank in step".into(),
        LeverKind::Batch {
            forwards: 1, to, ..
        } => {
            format!("running {to} sequences per forward pass")
        }
        LeverKind::Batch { to, .. } => format!("forwarding the step's {to} requests in one pass"),
        LeverKind::WeightCopy { .. } => {
            "reading the weights in place instead of copying them by index".into()
        }
        LeverKind::PlainDecode => "decoding without the draft model".into(),
        LeverKind::Fp8Scaling { .. } => "fusing the scaling around the FP8 matrix products".into(),
    }
}

/// A lever, what it buys and how sure that is (no sources, no full stop).
pub(crate) fn lever_clause(
    f: &Finding,
    lever: LeverKind,
    band: Option<Band>,
    per_call: bool,
) -> String {
    let unit = match per_call {
        true => "call",
        false => "step",
    };
    let (what, bound) = match lever {
        LeverKind::Batch { .. } => return batch(f, lever, band),
        LeverKind::WeightCopy { after_host } => return copies(f, after_host, band),
        LeverKind::Fp8Scaling { after_host } => return scaling(f, after_host, band),
        LeverKind::PlainDecode => {
            return format!(
                "decode without the draft model, or make its tokens accepted (a draft closer to the target, fewer candidates a step): speculation's draft and verify passes cost {} a token they yield, the target's plain decode step {}; dropping the draft saves {} a token ({}); {}",
                f.text(Q::TokenMsNow),
                f.text(Q::TokenMsThen),
                f.text(Q::SavingMsPerToken),
                f.text(Q::SavingOfTokenPct),
                band_clause(lever, band)
            )
        }
        LeverKind::Compile if f.figure(Q::SavingMsPerCompilingStep).is_some() => {
            return format!(
                "{}: {} of the captured instances compile and take no part in the steady step; it saves a median of {} in each of them ({} to {}), {} over the {} the captured instances took ({}); {}",
                compile_what(f),
                f.text(Q::CompilingSteps),
                f.text(Q::SavingMsPerCompilingStep),
                f.text(Q::CompileMinMs),
                f.text(Q::CompileMaxMs),
                f.text(Q::SavingMsInCapture),
                f.text(Q::CapturedMs),
                f.text(Q::SavingOfCapturePct),
                band_clause(lever, band)
            )
        }
        LeverKind::Compile => (
            compile_what(f),
            "the compiling and loading measured in it",
        ),
        LeverKind::HostWork { verdict, from_graphs } => (
            format!("move the host work the GPU waits for off the step: {}{}{}", groups::host_next(verdict, from_graphs), preallocate(f), read_back(f)),
            "the time the GPU waits beyond compiling; a change that also fuses kernels can save more",
        ),
        LeverKind::Fuse => (
            format!("fuse the framework's {} kinds of element-wise and reduction kernels into their neighbours (torch.compile, fused normalisation, rotary and activation kernels): each makes its own pass over memory", f.text(Q::UnfusedKernels)),
            "their time, an upper bound: fused work still reads its inputs and writes its outputs once",
        ),
        LeverKind::Bandwidth => (
            "bring the memory-bound kernels nearer the DRAM peak (fuse them with their neighbours, move fewer bytes)".to_string(),
            "at most: their time beyond what their DRAM traffic needs at the peak",
        ),
        LeverKind::LateRank => (
            "bring the late rank in step (its host work, launches or shard size)".to_string(),
            "the NCCL waiting in it",
        ),
    };
    format!(
        "{what}; it saves {} per {unit}, {} of the {} {unit} ({bound}); {}",
        f.text(Q::SavingMsPerStep),
        f.text(Q::SavingOfStepPct),
        f.text(Q::StepMs),
        band_clause(lever, band)
    )
}

/// A step that rewrites its whole KV cache: a CUDA graph cannot record a cache grown by
/// concatenation, so it is preallocated first.
fn preallocate(f: &Finding) -> String {
    match f.figure(Q::WriteOfKvPct) {
        Some(w) => format!(
            "; first preallocate the KV cache (transformers: `cache_implementation=\"static\"`): each step writes {} of it, the whole cache, as a cache grown by concatenation does, and no CUDA graph can record that",
            w.text
        ),
        None => String::new(),
    }
}

/// A call waiting for the GPU between a loop's steps: a value read back every step.
fn read_back(f: &Finding) -> String {
    match f.figure(Q::SyncMsPerStep) {
        Some(s) => format!(
            "; {} of each step is spent between steps in calls that wait for the GPU, as reading a value back to the host every step does (the next token, a stopping check): choosing the token on the GPU and checking less often let the host prepare the next step while the GPU runs this one",
            s.text
        ),
        None => String::new(),
    }
}

/// What to change for compiling in the step: cuDNN's SDPA first where most loads came before
/// its kernels (its backend is one setting; a KV length that grows every step cannot be
/// bucketed away), else the general ways.
fn compile_what(f: &Finding) -> String {
    let general = "fixed or bucketed shapes, each shape run once before the measured loop, or another backend for the kernels it compiles";
    match (f.get(Q::CudnnSdpaLoads), f.get(Q::LoadsNamed)) {
        (Some(c), Some(all)) if 2.0 * c >= all => format!(
            "stop cuDNN's SDPA attention from building a kernel inside the step ({} of the {} loads came just before its kernels: it builds one for each attention shape it has not run): `torch.backends.cuda.enable_cudnn_sdp(False)` runs PyTorch's flash or memory-efficient attention instead, which builds none; else {general}",
            f.text(Q::CudnnSdpaLoads),
            f.text(Q::LoadsNamed)
        ),
        _ => format!("stop compiling and loading GPU code inside the step ({general})"),
    }
}

/// More sequences per pass, per token, with the split of the step it is predicted from.
fn batch(f: &Finding, lever: LeverKind, band: Option<Band>) -> String {
    let what = match lever {
        LeverKind::Batch { forwards: 1, .. } => format!(
            "run {} sequences per forward pass instead of {} (where the GPU's memory holds their KV cache{})",
            f.text(Q::BatchThen),
            f.text(Q::BatchSequences),
            f.figure(Q::KvMbThen).map_or(String::new(), |kv| format!(
                ", {} at this length by the model's own census",
                kv.text
            ))
        ),
        _ => format!(
            "forward the step's {} passes of one sequence each as one pass of {} (each step's tokens marks say one sequence a pass; where the passes are different requests', as a serving loop that forwards each request alone runs them, and not one sequence's successive tokens, which cannot share a pass)",
            f.text(Q::PassesPerStep),
            f.text(Q::BatchThen)
        ),
    };
    let bytes = match (
        f.figure(Q::StepSampledDramMb),
        f.figure(Q::StepDramFloorMs),
        f.figure(Q::CensusWeightsMb),
    ) {
        (Some(mb), Some(ms), Some(w)) => format!(
            ", and reading its {} of weights (the model's census; of the step's {} of DRAM traffic, the nsys pass's samples, the rest, the KV cache among it, grows with the sequences) at the ceiling bandwidth, {}",
            w.text, mb.text, ms.text
        ),
        (Some(mb), Some(ms), None) => format!(
            ", and reading the step's {} of DRAM traffic (the nsys pass's samples) at the ceiling bandwidth, {}",
            mb.text, ms.text
        ),
        _ => String::new(),
    };
    let compiling = f.figure(Q::CompileMsPerStep).map_or(String::new(), |c| {
        format!(
            " beyond its {} of compiling, which stays once a step",
            c.text
        )
    });
    format!(
        "{what}: a token costs {} now (the {} step over its tokens) and would cost {}, {} less ({}), each step then taking {}; predicted from this run's split of the step, {} fixed per pass (the time the GPU waits for the host{compiling}{bytes}) and {} of the GPU's work taken to grow in proportion to the sequences (faster than small-batch work grows, so the new step is an upper bound); {}",
        f.text(Q::TokenMsNow),
        f.text(Q::StepMs),
        f.text(Q::TokenMsThen),
        f.text(Q::SavingMsPerToken),
        f.text(Q::SavingOfTokenPct),
        f.text(Q::StepMsThen),
        f.text(Q::FixedMsPerStep),
        f.text(Q::GrowingMsPerStep),
        band_clause(lever, band)
    )
}

/// The work around FP8 matrix products, fused or replaced by an amax history.
fn scaling(f: &Finding, after_host: bool, band: Option<Band>) -> String {
    let launches = match (f.figure(Q::ScaleChainLaunches), f.figure(Q::StepLaunchesRead)) {
        (Some(c), Some(all)) => format!(
            "; {} of a steady step's {} launches run from an amax to its cast, so fusing them also cuts the host's launch work",
            c.text, all.text
        ),
        _ => String::new(),
    };
    let saves = match after_host {
        true => format!(
            "it saves up to their {} of kernel time per step, {} of the GPU's {} of work per step (the GPU waits for the host most of the {} step, so the wall time moves by it once the host work is off the step)",
            f.text(Q::SavingMsPerStep),
            f.text(Q::SavingOfGpuWorkPct),
            f.text(Q::GpuWorkMsPerStep),
            f.text(Q::StepMs)
        ),
        false => format!(
            "it saves up to their {} of kernel time per step, {} of the {} step",
            f.text(Q::SavingMsPerStep),
            f.text(Q::SavingOfStepPct),
            f.text(Q::StepMs)
        ),
    };
    format!(
        "fuse each activation's amax, scale, division and cast to FP8 into one kernel (a fused FP8 linear layer, torch.compile), or scale from an amax history (delayed scaling) instead of a reduction every step: that work takes {} of the FP8 products' own kernel time{launches}; {saves}, at most: a fused kernel still reads the activations once; {}",
        f.text(Q::Fp8AroundOfGemmPct),
        band_clause(LeverKind::Fp8Scaling { after_host }, band)
    )
}

/// Copies of weight-sized data by index, with the bytes that make them weight-sized.
fn copies(f: &Finding, after_host: bool, band: Option<Band>) -> String {
    let saves = match after_host {
        true => format!(
            "it saves their {} of kernel time per step, {} of the GPU's {} of work per step: the GPU waits for the host most of the {} step, so the wall time moves by it only once the host work is off the step",
            f.text(Q::SavingMsPerStep),
            f.text(Q::SavingOfGpuWorkPct),
            f.text(Q::GpuWorkMsPerStep),
            f.text(Q::StepMs)
        ),
        false => format!(
            "it saves their {} of kernel time per step, {} of the {} step",
            f.text(Q::SavingMsPerStep),
            f.text(Q::SavingOfStepPct),
            f.text(Q::StepMs)
        ),
    };
    format!(
        "read the weights in place instead of copying them by index every step: the kernels that copy by index, {}, move {} a step (ncu's DRAM rate times the launches' mean time), at the scale of the largest matrix product, {}; an experts layer that indexes its chosen experts' weights per token copies them this way before its matrix products read them again, which a grouped matrix-product kernel reads in place; {saves}; {}",
        super::per_kernel(f, &[(Q::CopyMbPerCall, "{} a call"), (Q::CopyCallsPerStep, "{} calls a step")]),
        f.text(Q::CopyMbPerStep),
        super::per_kernel(f, &[(Q::MatrixMbPerCall, "{} a call")]),
        band_clause(LeverKind::WeightCopy { after_host }, band)
    )
}

/// How such a saving held when the change was made for real: its band, or what the saving is
/// where it was never checked.
fn band_clause(lever: LeverKind, band: Option<Band>) -> String {
    let Some(b) = band else {
        let what = match lever {
            LeverKind::Batch { .. } => "a prediction",
            // The plain step measured in the same run, not a bound on it.
            LeverKind::PlainDecode => "an estimate from this run's own plain decode step,",
            _ => "an upper bound",
        };
        return format!("{what} not yet checked against a real change");
    };
    let changes = b.changes.join(", ");
    // A file of stage2's repository, not of the run directory: quoted, not a footnote.
    let from = format!("stage2's {}", crate::text::code(b.source));
    match ratio(b.lo) == ratio(b.hi) {
        true => format!(
            "made for real once ({changes}), it saved {} of the predicted saving on an {} ({from})",
            ratio(b.lo),
            b.gpu
        ),
        false => format!(
            "made for real, it saved {}-{} of the predicted saving on an {} ({changes}; {from})",
            ratio(b.lo),
            ratio(b.hi),
            b.gpu
        ),
    }
}

/// A measured over predicted saving as the reports print it and the bench compares it.
fn ratio(r: f64) -> String {
    format!("{r:.2}")
}

/// How sure a lever's saving is, in a manager's words: "On a test GPU this kind of change
/// saved 86-94% of its estimate."
pub(crate) fn band_plain(band: Option<Band>) -> String {
    let pct = |r: f64| format!("{:.0}%", 100.0 * r);
    match band {
        Some(b) if pct(b.lo) == pct(b.hi) => format!(
            "On a test GPU this kind of change saved {} of its estimate.",
            pct(b.lo)
        ),
        Some(b) => format!(
            "On a test GPU this kind of change saved {:.0}-{} of its estimate.",
            100.0 * b.lo,
            pct(b.hi)
        ),
        None => "This estimate has not yet been checked against a real change.".into(),
    }
}
