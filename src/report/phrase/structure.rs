//! The workload's structure phrased: the attention kernel each phase ran, FP8 matrix products
//! and the work around them, a step's tensor-core rate against the peak, steps by their work,
//! and speculative decoding's acceptance and cost.

use super::*;
use crate::findings::{Attention, Fp8Role, Named};

/// How the reports name an attention kind.
fn attention_kind(k: Attention) -> &'static str {
    match k {
        Attention::Flash => "flash attention",
        Attention::CudnnSdpa => "cuDNN SDPA",
        Attention::MemEfficient => "memory-efficient attention",
        Attention::Softmax => "softmax",
    }
}

/// One kernel's figure of a finding, by its full name.
fn of_kernel<'a>(f: &'a Finding, name: &str, q: Q) -> Option<&'a crate::findings::Figure> {
    f.evidence
        .iter()
        .find(|e| e.quantity == q && e.scope.kernel.as_deref() == Some(name))
}

/// Kernels' labels as the tables print them, in the order given.
fn labels<T>(kernels: &[&Named<T>]) -> Vec<String> {
    crate::model::labels(kernels.iter().map(|k| k.name.as_str()), 60)
}

pub(super) fn attention(f: &Finding, kernels: &[Named<Attention>]) -> String {
    let all: Vec<&Named<Attention>> = kernels.iter().collect();
    let list: Vec<String> = all
        .iter()
        .zip(labels(&all))
        .map(|(k, label)| {
            let text = |q| of_kernel(f, &k.name, q).map_or("–".to_string(), |e| e.text.clone());
            format!(
                "{} {} ({}, {} of that kernel time, in {} launches)",
                attention_kind(k.kind),
                md(&label),
                text(Q::KernelTimeNs),
                text(Q::KernelSharePct),
                text(Q::KernelLaunches)
            )
        })
        .collect();
    let basis = f
        .evidence
        .iter()
        .find(|e| e.quantity == Q::KernelTimeNs && e.scope.kernel.is_none())
        .map_or(String::new(), |e| format!(", {} of kernels", e.text));
    let scope = match f.scope.instances {
        Some(n) if n > 1 => format!("{n} instances{basis}"),
        _ => basis.trim_start_matches(", ").to_string(),
    };
    let range = range_name(f.scope.range.as_deref().unwrap_or(""));
    let head = match scope.is_empty() {
        true => range,
        false => format!("{range} ({scope})"),
    };
    match kernels.iter().all(|k| k.kind == Attention::Softmax) {
        true => format!(
            "No kernel in {head} is named as a flash, cuDNN SDPA or memory-efficient attention kernel; its softmax kernels (attention's math path runs one between two matrix products, as other layers may): {}{}",
            list.join("; "),
            cite(f)
        ),
        false => format!("Attention in {head}: {}{}", list.join("; "), cite(f)),
    }
}

/// The kernels of one FP8 role with their shares: "name 24.1%, name 3.2%".
fn role_list(f: &Finding, kernels: &[Named<Fp8Role>], role: Fp8Role) -> String {
    let of: Vec<&Named<Fp8Role>> = kernels.iter().filter(|k| k.kind == role).collect();
    if of.is_empty() {
        return String::new();
    }
    let items: Vec<String> = of
        .iter()
        .zip(labels(&of))
        .map(|(k, label)| {
            let share =
                of_kernel(f, &k.name, Q::KernelSharePct).map_or("–".into(), |e| e.text.clone());
            format!("{} {share}", md(&label))
        })
        .collect();
    format!(" ({})", items.join(", "))
}

pub(super) fn fp8_work(f: &Finding, w: &str, kernels: &[Named<Fp8Role>]) -> String {
    format!(
        "FP8 matrix products {w}: {} of the kernel time{}; around them, casts to FP8 {}{}, abs and max reductions {}{}{}: {} of the FP8 products' own time{}{}",
        f.text(Q::Fp8GemmSharePct),
        role_list(f, kernels, Fp8Role::Gemm),
        f.text(Q::Fp8CastSharePct),
        role_list(f, kernels, Fp8Role::Cast),
        f.text(Q::AbsMaxSharePct),
        role_list(f, kernels, Fp8Role::AbsMax),
        scaling(f, kernels),
        f.text(Q::Fp8AroundOfGemmPct),
        chain_launches(f),
        cite(f)
    )
}

/// "; in one steady step, 56 of its 82 launches run from an amax to its cast".
fn chain_launches(f: &Finding) -> String {
    match (
        f.figure(Q::ScaleChainLaunches),
        f.figure(Q::StepLaunchesRead),
    ) {
        (Some(c), Some(all)) => format!(
            "; in one steady step, {} of its {} launches run from an amax to its cast",
            c.text, all.text
        ),
        _ => String::new(),
    }
}

/// The scaling between each amax and its cast, where one step's launches showed some.
fn scaling(f: &Finding, kernels: &[Named<Fp8Role>]) -> String {
    match f.get(Q::Fp8ScaleSharePct).filter(|v| *v > 0.0) {
        Some(_) => format!(
            " and the scaling between each amax and its cast {}{}",
            f.text(Q::Fp8ScaleSharePct),
            role_list(f, kernels, Fp8Role::Scale)
        ),
        None => String::new(),
    }
}

pub(super) fn fp8_overhead(f: &Finding, w: &str) -> String {
    format!(
        "The work around the FP8 matrix products {w} takes {} of their own kernel time (casts to FP8 {}, abs and max reductions {}, scaling between them {}, against {} of the kernel time in the products): kernels a BF16 layer does not launch{}. Fusing the cast and the scale's absolute maximum into neighbouring kernels (torch.compile, a fused FP8 linear layer) or scaling from an amax history (delayed scaling) instead of a reduction per step cuts them{}.",
        f.text(Q::Fp8AroundOfGemmPct),
        f.text(Q::Fp8CastSharePct),
        f.text(Q::AbsMaxSharePct),
        f.text(Q::Fp8ScaleSharePct),
        f.text(Q::Fp8GemmSharePct),
        chain_launches(f),
        cite(f)
    )
}

/// "compute-bound at 63.7% of the tensor peak", or the rate alone where it is not
/// compute-bound (no sources, no full stop).
pub(crate) fn tensor_peak_clause(f: &Finding, compute_bound: bool) -> String {
    match compute_bound {
        true => format!(
            "compute-bound at {} of the tensor peak",
            f.text(Q::TensorPeakPct)
        ),
        false => format!(
            "its tensor-core work at {} of the tensor peak",
            f.text(Q::TensorPeakPct)
        ),
    }
}

/// "The steady step of `prefill` (the 1 steady)", "A step of `prefill`".
pub(crate) fn step_of(f: &Finding) -> String {
    let name = range_name(f.scope.range.as_deref().unwrap_or(""));
    match &f.scope.group {
        Some(g) => format!("the steady step of {name} ({})", md(g)),
        None => format!("a step of {name}"),
    }
}

pub(super) fn tensor_peak(f: &Finding, compute_bound: bool) -> String {
    let class = match compute_bound {
        true => "more than any other class",
        false => "less than another class, so it is not compute-bound",
    };
    let measured = f.figure(Q::NcuCoveragePct).map_or(String::new(), |c| {
        format!(
            " (the operations of the kernels ncu measured, {} of the kernel time: a lower bound)",
            c.text
        )
    });
    format!(
        "{} is {}: its kernels' tensor operations run at {} over the {} step{measured}, against the GPU's {} dense BF16 tensor peak, the GPU busy {} of the step; kernels ncu classed compute-bound hold {} of its kernel time, {class}{}",
        crate::report::fmt::capitalise(&step_of(f)),
        tensor_peak_clause(f, compute_bound),
        f.text(Q::TensorTflopPerS),
        f.text(Q::StepMs),
        f.text(Q::TensorPeakTflopPerS),
        f.text(Q::GpuBusyOfRangePct),
        f.text(Q::ComputeBoundSharePct),
        cite(f)
    )
}

pub(super) fn step_work(
    f: &Finding,
    kinds: &[crate::findings::document::WorkKind],
    steady: Option<&str>,
) -> String {
    let name = range_name(f.scope.range.as_deref().unwrap_or(""));
    let over = match steady {
        Some(g) => md_group(g),
        None => format!("its {} instances", f.scope.instances.unwrap_or(0)),
    };
    let median: Vec<&crate::findings::Figure> = f
        .evidence
        .iter()
        .filter(|e| e.quantity == Q::GroupMedianWallNs)
        .collect();
    let parts: Vec<String> = kinds
        .iter()
        .zip(median)
        .map(|(k, m)| {
            let launches = match k.launches {
                [a, b] if a == b => format!("{a} kernel launches each"),
                [a, b] => format!("{a} to {b} kernel launches"),
            };
            let which = match k.ordinals.as_slice() {
                few if few.len() <= 5 => {
                    let n: Vec<String> = few.iter().map(|o| format!("#{o}")).collect();
                    n.join(", ")
                }
                _ => format!("between #{} and #{}", k.first, k.last),
            };
            let inside = match k.children.as_slice() {
                [] => "holding no range".to_string(),
                c => {
                    let names: Vec<String> = c.iter().map(|n| code(n)).collect();
                    format!("holding {}", names.join(" and "))
                }
            };
            format!(
                "the {} {inside} ({launches}; {which}) at a median of {}",
                k.instances, m.text
            )
        })
        .collect();
    format!(
        "The instances of {name} do {} kinds of work ({over}): {}; a mean over them describes none of these kinds{}",
        kinds.len(),
        parts.join("; "),
        cite(f)
    )
}

/// The speculation's figures as one clause (no sources, no full stop).
fn speculation_clause(f: &Finding) -> String {
    if f.figure(Q::VerifySteps).is_none() {
        return "no `stage2:spec` mark, so the draft tokens accepted are not known".to_string();
    }
    // The first step checks its candidates in the prompt's own pass, marked `prefill`.
    let passes = match (f.get(Q::VerifyPasses), f.get(Q::VerifySteps)) {
        (Some(p), Some(n)) if p < n => format!(
            " ({} of them `verify` passes; the rest checked their candidates in the prompt's own pass, `prefill`)",
            f.text(Q::VerifyPasses)
        ),
        _ => String::new(),
    };
    let mut s = format!(
        "{} verify steps{passes}, {} draft tokens proposed and {} accepted",
        f.text(Q::VerifySteps),
        f.text(Q::DraftTokensProposed),
        f.text(Q::DraftTokensAccepted),
    );
    if let Some(p) = f.figure(Q::AcceptancePct) {
        s.push_str(&format!(" ({})", p.text));
    }
    s.push_str(&format!(
        ", {} per verify step (the accepted ones and the target's own)",
        f.text(Q::TokensPerVerify)
    ));
    s
}

pub(super) fn speculation(f: &Finding, w: &str) -> String {
    let mut s = format!("Speculative decoding {w}: {}", speculation_clause(f));
    if let Some(d) = f.figure(Q::DraftShareOfWallPct) {
        s.push_str(&format!(
            "; the draft model's passes (`draft`) take {} of the wall time of its passes and the target's verify passes (`verify`)",
            d.text
        ));
        if let Some(k) = f.figure(Q::DraftShareOfKernelPct) {
            s.push_str(&format!(" and {} of their kernel time", k.text));
        }
    }
    if let Some(ms) = f.figure(Q::SpeculativeMsPerToken) {
        s.push_str(&format!("; the two take {} per token they yield", ms.text));
        if let Some(d) = f.figure(Q::DecodeMsPerToken) {
            s.push_str(&format!(
                ", {} of the target's plain decode step (`decode`, {})",
                f.text(Q::SpeculativeOfDecodePct),
                decode_steps(f, &d.text)
            ));
        }
    }
    s.push_str(&cite(f));
    s
}

/// "its median 7.79 ms" over several plain decode steps, "7.79 ms, its one step" over one.
fn decode_steps(f: &Finding, ms: &str) -> String {
    match f.get(Q::DecodeSteps) {
        Some(1.0) => format!("{ms}, its one step in the capture"),
        _ => format!("its median {ms}"),
    }
}

pub(super) fn speculation_slower(f: &Finding, w: &str) -> String {
    // Fewer candidates is no change where each step proposes one already.
    let several = matches!(
        (f.get(Q::DraftTokensProposed), f.get(Q::VerifySteps)),
        (Some(p), Some(n)) if p > n
    );
    let try_next = match several {
        true => "a cheaper draft model, fewer candidate tokens per step, or plain decode",
        false => "a draft model whose tokens the target accepts, a cheaper one, or plain decode",
    };
    format!(
        "Speculation is slower than plain decode {w}: the draft and verify passes take {} per token they yield, against {} for the target's plain decode step ({}), with {}; {try_next} is what to try{}.",
        f.text(Q::SpeculativeMsPerToken),
        f.text(Q::DecodeMsPerToken),
        f.text(Q::SpeculativeOfDecodePct),
        speculation_clause(f),
        cite(f)
    )
}

/// A step's DRAM bytes read against what the model's own numbers say it must read.
pub(super) fn census(f: &Finding, above: Option<bool>) -> String {
    let step = crate::report::fmt::capitalise(&step_of(f));
    let mut parts = vec![format!(
        "{} of weights (the input embedding table left out: a lookup reads rows of it)",
        f.text(Q::CensusWeightsMb)
    )];
    match (f.figure(Q::CensusKvMb), f.figure(Q::CachedTokens)) {
        (Some(kv), Some(past)) => parts.push(format!(
            "{} of KV cache ({} tokens already cached per sequence, batch {})",
            kv.text,
            past.text,
            f.text(Q::BatchSequences)
        )),
        _ => parts.push(
            "no KV cache (the cache's length or this model's attention layout is not one stage2's hook reads)"
                .to_string(),
        ),
    }
    if let Some(x) = f.figure(Q::CensusExpertsMb) {
        parts.push(format!(
            "{} of expert weights (expected were its tokens routed uniformly over the experts)",
            x.text
        ));
    }
    let verdict = match above {
        None => "what the model needs",
        Some(true) => "more than its weights and KV cache: bytes beyond them move every step (activations, weights read again or copied)",
        Some(false) => "less than its weights: some are served from the L2 cache, or layers are skipped",
    };
    format!(
        "{step} reads {} of DRAM (the nsys pass's samples), {} of the {} its model's own numbers say it must read ({}): {verdict}; it writes {}{}{}{}",
        f.text(Q::StepReadMb),
        f.text(Q::ReadOfCensusPct),
        f.text(Q::CensusReadMb),
        parts.join(", "),
        f.text(Q::StepWriteMb),
        written_of_cache(f),
        gathers(f),
        cite(f)
    )
}

/// The kernels copying by index beside a census of experts: how an experts layer that indexes
/// its chosen experts' weights copies them (written, then read again by its matrix products).
fn gathers(f: &Finding) -> String {
    let of: Vec<&crate::findings::Figure> = f
        .evidence
        .iter()
        .filter(|e| e.quantity == Q::KernelSharePct && e.scope.kernel.is_some())
        .collect();
    let names = of.iter().filter_map(|e| e.scope.kernel.as_deref());
    let k: Vec<String> = crate::model::labels(names, 60)
        .iter()
        .zip(&of)
        .map(|(label, e)| format!("{} {}", md(label), e.text))
        .collect();
    match k.is_empty() {
        true => String::new(),
        false => format!(
            "; of the GPU time, kernels that copy by index hold {}: an experts layer that indexes its chosen experts' weights per token copies them this way, writing them and reading them again in its matrix products, where a grouped matrix-product kernel reads them in place",
            k.join(", ")
        ),
    }
}

/// ", 102.6% of its KV cache: about the whole cache every step (...)" where the bytes written
/// are the cache's within rules::CENSUS's band; nothing otherwise.
fn written_of_cache(f: &Finding) -> String {
    match f.get(Q::WriteOfKvPct) {
        Some(p) if (p - 100.0).abs() <= crate::rules::CENSUS.threshold => format!(
            ", {} of its KV cache: about the whole cache every step, as a cache that grows by concatenating each new token rewrites it (a preallocated, static cache writes only the new tokens)",
            f.text(Q::WriteOfKvPct)
        ),
        _ => String::new(),
    }
}
