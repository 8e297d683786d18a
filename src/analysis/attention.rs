//! The attention kernel each phase ran: per phase range (prefill, decode; under speculative
//! decoding the target's verify passes and the draft's), the kernels whose names say which
//! attention implementation they are (analysis::roles), with their time and their share of the
//! phase's kernel time, tallied per range name while the export streams by (analysis::scan).

use serde::Serialize;

use super::ranges::{RangeStats, PHASES};
use super::roles::{self, Attention};

/// One kernel's time in one range name, by its demangled name.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tally {
    pub(crate) range: String,
    pub(crate) kernel: String,
    pub(crate) ns: i64,
    pub(crate) launches: u64,
}

/// One attention kernel of a phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct AttentionKernel {
    pub(crate) name: String,
    pub(crate) kind: Attention,
    pub(crate) ns: i64,
    pub(crate) launches: u64,
}

/// A phase's attention kernels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PhaseAttention {
    pub(crate) phase: String,
    pub(crate) instances: u64,
    /// The phase's kernel time, every kernel's (the shares' basis).
    pub(crate) kernel_ns: i64,
    /// Most time first. Softmax kernels only where the phase ran no attention kernel.
    pub(crate) kernels: Vec<AttentionKernel>,
}

impl PhaseAttention {
    /// A kernel's share of the phase's kernel time, in %.
    pub(crate) fn share_pct(&self, k: &AttentionKernel) -> f64 {
        100.0 * k.ns as f64 / (self.kernel_ns as f64).max(1.0)
    }
}

/// Whether the scan should tally a kernel of this name.
pub(crate) fn watched(name: &str) -> bool {
    roles::attention(name).is_some()
}

/// Each phase range the export holds (none: the captured range) with its attention kernels;
/// a phase with neither an attention nor a softmax kernel is left out.
pub(crate) fn per_phase(
    stats: &[RangeStats],
    tallies: &[Tally],
    captured: Option<&str>,
) -> Vec<PhaseAttention> {
    let mut names: Vec<&str> = PHASES
        .iter()
        .copied()
        .filter(|p| stats.iter().any(|s| s.name == *p && s.instances > 0))
        .collect();
    if names.is_empty() {
        names.extend(captured);
    }
    let mut out = Vec::new();
    for name in names {
        let Some(s) = stats.iter().find(|s| s.name == name) else {
            continue;
        };
        let mut kernels: Vec<AttentionKernel> = tallies
            .iter()
            .filter(|t| t.range == name && t.ns > 0)
            .filter_map(|t| {
                Some(AttentionKernel {
                    name: t.kernel.clone(),
                    kind: roles::attention(&t.kernel)?,
                    ns: t.ns,
                    launches: t.launches,
                })
            })
            .collect();
        // A softmax names no implementation beside an attention kernel.
        if kernels.iter().any(|k| k.kind != Attention::Softmax) {
            kernels.retain(|k| k.kind != Attention::Softmax);
        }
        kernels.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.name.cmp(&b.name)));
        if kernels.is_empty() {
            continue;
        }
        out.push(PhaseAttention {
            phase: name.to_string(),
            instances: s.instances,
            kernel_ns: s.kernel_ns,
            kernels,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(name: &str, kernel_ns: i64) -> RangeStats {
        RangeStats {
            name: name.into(),
            instances: 2,
            kernel_ns,
            ..Default::default()
        }
    }

    fn t(range: &str, kernel: &str, ns: i64) -> Tally {
        Tally {
            range: range.into(),
            kernel: kernel.into(),
            ns,
            launches: 1,
        }
    }

    #[test]
    fn each_phase_its_attention_kernels_and_softmax_only_without_them() {
        let sdpa = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7";
        let soft = "void <unnamed>::softmax_warp_forward<float>(float *)";
        let st = [
            stats("step", 100),
            stats("prefill", 40),
            stats("decode", 60),
        ];
        let tallies = [
            t("prefill", sdpa, 10),
            t("prefill", soft, 2),
            t("decode", soft, 6),
            t("step", sdpa, 10),
        ];
        let p = per_phase(&st, &tallies, Some("step"));
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].phase, "prefill");
        assert_eq!(p[0].kernels.len(), 1);
        assert_eq!(p[0].kernels[0].kind, Attention::CudnnSdpa);
        assert!((p[0].share_pct(&p[0].kernels[0]) - 25.0).abs() < 1e-9);
        assert_eq!(p[1].kernels[0].kind, Attention::Softmax);
        // No phase range: the captured range's.
        let p = per_phase(&[stats("step", 100)], &tallies, Some("step"));
        assert_eq!((p.len(), p[0].phase.as_str()), (1, "step"));
    }
}
