//! Per-token costs (kernels.md table, the stakeholder headline's sentence).

use std::fmt::Write;

use super::fmt::md;
use crate::analysis::tokens::PhaseCost;
use crate::analysis::Artifacts;

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("–".into(), |v| format!("{v:.digits$}"))
}

/// kernels.md's table; nothing without phases.
pub(crate) fn section(a: &Artifacts, s: &mut String) {
    if a.per_token.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n## Per token\n\nTokens come from the `stage2:tokens batch=B new=N` NVTX marks inside each phase's instances (`{}`; `--auto-nvtx` puts them there); time is the phases' CPU wall time. The floors of the captured range: the DRAM bytes and FLOPs of its kernels (ncu's rates times nsys's durations, per instance) at the GPU's peak DRAM bandwidth and dense BF16 tensor rate (ncu's peaks); \"% of floor\" is the floor over the measured time per instance, so 100% would be running at the floor.\n",
        a.sqlite_file
    );
    let _ = writeln!(
        s,
        "| phase | instances | batch | tokens | ms per instance | ms per token | tokens/s | DRAM MB per instance | memory floor (ms) | % of memory floor | GFLOP per instance | compute floor (ms) | % of compute floor | kernel time measured by ncu |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
    );
    for p in &a.per_token {
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
    }
}

/// One sentence per phase for a manager: step time, per token, tokens/s, floor.
pub(crate) fn headline(a: &Artifacts) -> Option<String> {
    let parts: Vec<String> = a.per_token.iter().filter_map(sentence).collect();
    (!parts.is_empty()).then(|| {
        format!(
            "Per token ({}, kernels.md \"Per token\"): {}.",
            a.sqlite_file,
            parts.join("; ")
        )
    })
}

fn sentence(p: &PhaseCost) -> Option<String> {
    let mut t = format!(
        "{} takes {:.2} ms per instance",
        md(&p.phase),
        p.ms_per_instance
    );
    if let (Some(ms), Some(tps)) = (p.ms_per_token, p.tokens_per_s) {
        let _ = write!(t, ", {ms:.3} ms per token ({tps:.0} tokens/s)");
    }
    if let Some(f) = &p.floor {
        let _ = write!(
            t,
            ", at {:.1}% of its memory-bandwidth floor{}",
            f.pct_of_memory_floor,
            f.pct_of_compute_floor.map_or(String::new(), |c| format!(
                " and {c:.1}% of its compute floor"
            ))
        );
    }
    Some(t)
}
