//! kernels.md's sections on the workload's structure: what the kernels are for (the attention
//! kernel each phase ran, FP8 matrix products and the work around them) and speculative
//! decoding's acceptance and cost.

use super::*;

/// The findings of these kinds, each a line of its own.
fn lines(f: &Findings, pick: fn(&Claim) -> bool) -> Vec<String> {
    f.made()
        .filter(|x| pick(&x.claim))
        .map(|x| match x.role {
            crate::findings::Role::Fact => format!("{}.", phrase::sentence(x)),
            _ => phrase::sentence(x),
        })
        .collect()
}

pub(super) fn roles_section(f: &Findings, s: &mut String) {
    let found = lines(f, |c| {
        matches!(
            c,
            Claim::AttentionKernels { .. } | Claim::Fp8Work { .. } | Claim::Fp8Overhead
        )
    });
    if found.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n## What the kernels are for\n\nBy their names (an FP8 matrix product also by ncu's tensor counters of an FP8 source type): attention kernels per phase range, and FP8 matrix products with the casts and abs/max reductions around them.\n"
    );
    for l in found {
        let _ = writeln!(s, "- {l}");
    }
}

pub(super) fn speculation_section(f: &Findings, s: &mut String) {
    let found = lines(f, |c| {
        matches!(c, Claim::Speculation | Claim::SpeculationSlower)
    });
    if found.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## Speculative decoding\n\n{}", found.join("\n\n"));
}
