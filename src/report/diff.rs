//! diff.md: two runs' changes for a reader, largest first.

use std::fmt::Write;

use super::fmt::{cut, md, us};
use crate::analysis::diff::Diff;

pub(crate) fn to_markdown(d: &Diff, top: usize) -> String {
    let mut s = format!("# Diff: {} -> {}\n\n", md(&d.run_a), md(&d.run_b));
    let signed = |p: Option<f64>| {
        p.map(|p| format!("{p:+.1}%"))
            .unwrap_or_else(|| "new".into())
    };
    let _ = writeln!(
        s,
        "Total kernel time: {} us -> {} us ({}).\n",
        us(d.total_kernel_time_a_ns),
        us(d.total_kernel_time_b_ns),
        signed(d.total_delta_pct)
    );
    if d.warnings.is_empty() {
        let _ = writeln!(
            s,
            "The runs are comparable: same GPU, driver, tool versions and capture settings.\n"
        );
    } else {
        let _ = writeln!(s, "**Not directly comparable:**\n");
        for w in &d.warnings {
            let _ = writeln!(s, "- {}", md(w));
        }
        s.push('\n');
    }
    let _ = writeln!(s, "## Kernels, by absolute change\n");
    let _ = writeln!(s, "| kernel | A (us) | B (us) | change (us) | change | share A | share B | instances A -> B | SM % change | DRAM % change |");
    let _ = writeln!(s, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    let opt = |v: Option<f64>| v.map(|x| format!("{x:+.1}")).unwrap_or_else(|| "–".into());
    let share = |v: Option<f64>| v.map(|x| format!("{x:.1}%")).unwrap_or_else(|| "–".into());
    for k in d.kernels.iter().take(top) {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:+.2} | {} | {} | {} | {} -> {} | {} | {} |",
            md(&cut(&crate::model::display_name(&k.name), 70)),
            us(k.time_a_ns),
            us(k.time_b_ns),
            k.delta_ns / 1e3,
            signed(k.delta_pct),
            share(k.share_a_pct),
            share(k.share_b_pct),
            k.instances_a,
            k.instances_b,
            opt(k.sm_pct_delta),
            opt(k.dram_pct_delta)
        );
    }
    if !d.ranges.is_empty() {
        let _ = writeln!(s, "\n## NVTX ranges\n\n| range | wall A (ms) | wall B (ms) | change | kernel A (us) | kernel B (us) |\n|---|--:|--:|--:|--:|--:|");
        for r in &d.ranges {
            let _ = writeln!(
                s,
                "| {} | {:.2} | {:.2} | {} | {} | {} |",
                md(&r.name),
                r.wall_a_ns / 1e6,
                r.wall_b_ns / 1e6,
                signed(r.wall_delta_pct),
                r.kernel_a_ns.map(us).unwrap_or_else(|| "–".into()),
                r.kernel_b_ns.map(us).unwrap_or_else(|| "–".into())
            );
        }
    }
    s
}
