//! The diff's Markdown: two runs' changes for a reader, largest first.

use std::fmt::Write;

use super::fmt::{cut, md, us};
use crate::findings::document::{Diff, Presence, Test, CONFIDENCE};

/// "+12.3% (±1.1%)": a change and, with a noise test, the half-width of its interval in %.
fn change(p: Option<f64>, t: Option<Test>, base: f64) -> String {
    let Some(p) = p else {
        return "–".into();
    };
    match t {
        Some(t) if base > 0.0 => format!("{p:+.1}% (±{:.1}%)", 100.0 * t.half_width / base),
        _ => format!("{p:+.1}%"),
    }
}

fn noise_line(d: &Diff) -> String {
    if d.passes_a > 1 && d.passes_b > 1 {
        format!(
            "Timed passes: {} (A), {} (B). Changes show ± the half-width of their {} \
             interval; a change counts when its interval excludes zero ({}).\n",
            d.passes_a, d.passes_b, CONFIDENCE, d.noise_test
        )
    } else {
        format!(
            "Timed passes: {} (A), {} (B): noise unknown (`stage2 profile --repeat N`, N >= 2 \
             on both, measures it).\n",
            d.passes_a, d.passes_b
        )
    }
}

pub(crate) fn to_markdown(d: &Diff, top: usize) -> String {
    let mut s = format!("# Diff: {} -> {}\n\n", md(&d.run_a), md(&d.run_b));
    // With several timed passes the total is their mean; the range table's kernel column is
    // the first pass's (the export's ranges): each says which it is.
    let several = d.passes_a > 1 || d.passes_b > 1;
    let _ = writeln!(
        s,
        "Total kernel time{}: {} us -> {} us ({}).\n",
        if several {
            " (mean over the timed passes)"
        } else {
            ""
        },
        us(d.total_kernel_time_a_ns),
        us(d.total_kernel_time_b_ns),
        change(d.total_delta_pct, d.total_test, d.total_kernel_time_a_ns)
    );
    let _ = writeln!(s, "{}", noise_line(d));
    if d.warnings.is_empty() {
        let _ = writeln!(
            s,
            "Same GPU, driver, tool versions, capture and workload settings.\n"
        );
    } else {
        let _ = writeln!(s, "**Differences between the runs:**\n");
        for w in &d.warnings {
            let _ = writeln!(s, "- {}", md(w));
        }
        s.push('\n');
    }
    if !d.advice.is_empty() {
        let _ = writeln!(s, "**Before trusting a change:**\n");
        for a in &d.advice {
            let _ = writeln!(s, "- {}", md(a));
        }
        s.push('\n');
    }
    kernels(&mut s, d, top);
    if !d.ranges.is_empty() {
        let basis = match several {
            true => "Wall: mean over the timed passes; kernel time: the first timed pass of each run.\n\n",
            false => "",
        };
        let _ = writeln!(s, "\n## NVTX ranges\n\n{basis}| range | wall A (ms) | wall B (ms) | change | kernel A (us) | kernel B (us) |\n|---|--:|--:|--:|--:|--:|");
        for r in &d.ranges {
            let _ = writeln!(
                s,
                "| {} | {:.2} | {:.2} | {} | {} | {} |",
                md(&r.name),
                r.wall_a_ns / 1e6,
                r.wall_b_ns / 1e6,
                change(r.wall_delta_pct, r.test, r.wall_a_ns),
                r.kernel_a_ns.map(us).unwrap_or_else(|| "–".into()),
                r.kernel_b_ns.map(us).unwrap_or_else(|| "–".into())
            );
        }
    }
    ledger(&mut s, d);
    names(&mut s, d, top);
    s
}

/// Where each range's wall time went in A and in B, part by part (ms).
fn ledger(s: &mut String, d: &Diff) {
    if d.ledger.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n## Where the wall time goes (CPU thread), A -> B\n\nms, first timed pass of each run; see kernels.md for the parts.\n\n| range | wall | sync | launch | other CUDA | child ranges | rest |\n|---|--:|--:|--:|--:|--:|--:|"
    );
    let pair = |a: i64, b: i64| format!("{:.2} -> {:.2}", a as f64 / 1e6, b as f64 / 1e6);
    for l in &d.ledger {
        let (a, b) = (&l.a, &l.b);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            md(&l.name),
            pair(a.wall_ns, b.wall_ns),
            pair(a.sync_ns, b.sync_ns),
            pair(a.launch_ns, b.launch_ns),
            pair(a.other_api_ns, b.other_api_ns),
            pair(a.children_ns, b.children_ns),
            pair(a.rest_ns, b.rest_ns)
        );
    }
}

fn kernels(s: &mut String, d: &Diff, top: usize) {
    let _ = writeln!(s, "## Kernels, by absolute change\n");
    let _ = writeln!(s, "| kernel | A (us) | B (us) | change (us) | change | share A | share B | instances A -> B | SM % change | DRAM % change |");
    let _ = writeln!(s, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    let opt = |v: Option<f64>| v.map(|x| format!("{x:+.1}")).unwrap_or_else(|| "–".into());
    let share = |v: Option<f64>| v.map(|x| format!("{x:.1}%")).unwrap_or_else(|| "–".into());
    for k in d.kernels.iter().take(top) {
        let how = match k.presence {
            Presence::Both => change(k.delta_pct, k.test, k.time_a_ns),
            Presence::New => "new".into(),
            Presence::Removed => "removed".into(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:+.2} | {} | {} | {} | {} -> {} | {} | {} |",
            md(&cut(&k.label, 80)),
            us(k.time_a_ns),
            us(k.time_b_ns),
            k.delta_ns / 1e3,
            how,
            share(k.share_a_pct),
            share(k.share_b_pct),
            k.instances_a,
            k.instances_b,
            opt(k.sm_pct_delta),
            opt(k.dram_pct_delta)
        );
    }
}

/// Full names of the listed kernels whose label is cut or made unique by a suffix.
fn names(s: &mut String, d: &Diff, top: usize) {
    let listed: Vec<_> = d
        .kernels
        .iter()
        .take(top)
        .filter(|k| k.label.contains(" ~") || k.label.chars().count() > 80)
        .collect();
    if listed.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n<details><summary>Full names of kernels that share a short name</summary>\n"
    );
    for k in listed {
        let _ = writeln!(s, "- `{}`: `{}`", k.label, k.name.replace('`', "'"));
    }
    let _ = writeln!(s, "\n</details>");
}
