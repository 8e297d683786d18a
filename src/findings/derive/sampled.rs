//! Findings from nsys's sampled GPU metrics: the top kernels' sampled classes where ncu gave
//! none, the kernels whose launches are too short for the sample window to class, and the
//! launch configurations whose sampled DRAM figure and ncu's differ.

use super::super::{Claim, Figure, Findings, Quantity, Scope};
use crate::analysis::Artifacts;
use crate::model::{Bound, KernelRecord, ShortLaunches};
use crate::rules;

/// The top kernels ncu gave no class, by their sampled class (memory- or compute-bound only).
pub(super) fn bounds(a: &Artifacts, top: &[&KernelRecord], scope: Scope, out: &mut Findings) {
    let mut memory = Vec::new();
    let mut compute = Vec::new();
    let mut evidence = Vec::new();
    let mut thin = Vec::new();
    for r in top.iter().filter(|r| r.bound.is_none()) {
        let Some(f) = r.sampled.as_ref().map(|s| s.all) else {
            continue;
        };
        if f.coverage_pct < rules::SAMPLED_MIN_COVERAGE_PCT {
            thin.push(format!(
                "{} ({:.1}%)",
                a.kernel_label(&r.name),
                f.coverage_pct
            ));
        }
        let into = match f.bound {
            Some(Bound::Memory) => &mut memory,
            Some(Bound::Compute) => &mut compute,
            // The sampled rule classes memory and compute only; the others are ncu's words.
            Some(Bound::Latency | Bound::Instruction) | None => continue,
        };
        into.push(a.kernel_label(&r.name));
        let at = scope.clone().kernel(&r.name);
        for (q, v) in [
            (Quantity::SampledDramPct, f.dram_pct),
            (Quantity::SampledComputePct, f.compute_pct()),
            (Quantity::SampledCoveragePct, Some(f.coverage_pct)),
        ] {
            if let Some(v) = v {
                evidence.push(Figure::new(q, v, a.sampled_source(), &at));
            }
        }
    }
    if !thin.is_empty() {
        // Too little of their time in sample windows to class them: said, not claimed.
        out.0.push(crate::findings::Finding::abstain(
            Claim::SampledBound {
                memory: Vec::new(),
                compute: Vec::new(),
            },
            scope.clone(),
            format!(
                "the samples cover under {:.0}% of the time of {}",
                rules::SAMPLED_MIN_COVERAGE_PCT,
                thin.join(", ")
            ),
        ));
    }
    if !evidence.is_empty() {
        out.push(
            Claim::SampledBound { memory, compute },
            scope,
            Some(rules::SAMPLED_BOUND),
            evidence,
        );
    }
}

/// The kernels given no sampled class because their launches are shorter than the sample
/// window (rules::SAMPLED_WINDOW): how many, their share of the kernel time, the window, and
/// the largest of them with their mean launch. Over every sampled kernel of the table, ncu's
/// classed or not: a sampled figure beside ncu's is read by the same rule.
pub(super) fn window(a: &Artifacts, scope: Scope, out: &mut Findings) {
    let short: Vec<(&KernelRecord, ShortLaunches)> = a
        .records
        .iter()
        .filter_map(|r| Some((r, r.sampled.as_ref()?.all.short?)))
        .collect();
    let Some(window_ns) = short.iter().map(|(_, s)| s.window_ns).reduce(f64::max) else {
        return;
    };
    let src = a.sampled_source();
    let total: f64 = a
        .records
        .iter()
        .filter_map(|r| Some(r.sampled.as_ref()?.all.time_ns))
        .sum();
    let short_ns: f64 = short
        .iter()
        .filter_map(|(r, _)| Some(r.sampled.as_ref()?.all.time_ns))
        .sum();
    let mut evidence = vec![
        Figure::new(Quantity::SampleWindowNs, window_ns, src, &scope),
        Figure::new(Quantity::UnclassedKernels, short.len() as f64, src, &scope),
        Figure::new(
            Quantity::SampledKernels,
            a.records.iter().filter(|r| r.sampled.is_some()).count() as f64,
            src,
            &scope,
        ),
    ];
    if total > 0.0 {
        evidence.push(Figure::new(
            Quantity::UnclassedSharePct,
            100.0 * short_ns / total,
            src,
            &scope,
        ));
    }
    // The table's order is by time: its first short kernels are the largest.
    let named: Vec<String> = short
        .iter()
        .take(rules::SAMPLED_WINDOW_NAMED)
        .map(|(r, s)| {
            let at = scope.clone().kernel(&r.name);
            evidence.push(Figure::new(
                Quantity::MeanKernelNs,
                s.mean_launch_ns,
                src,
                &at,
            ));
            a.kernel_label(&r.name)
        })
        .collect();
    out.push(
        Claim::SampledWindow { kernels: named },
        scope,
        Some(rules::SAMPLED_WINDOW),
        evidence,
    );
}

/// Each launch configuration whose sampled DRAM figure and ncu's differ beyond the rule's
/// band; one of launches shorter than the sample window carries its mean launch and the
/// window, which the difference is put down to (rules::SAMPLED_WINDOW).
pub(super) fn disagreements(a: &Artifacts, scope: Scope, out: &mut Findings) {
    let Some(sampled) = &a.sampled else { return };
    let src = a.sampled_source();
    for x in sampled.beside_ncu.iter().cloned() {
        if (x.sampled_dram_pct - x.ncu_dram_pct).abs() <= rules::SAMPLED_DISAGREES.threshold {
            continue;
        }
        let at = scope.clone().kernel(&x.kernel);
        let mut evidence = vec![
            Figure::new(Quantity::SampledDramPct, x.sampled_dram_pct, src, &at),
            Figure::new(Quantity::SampledCoveragePct, x.coverage_pct, src, &at),
            Figure::new(
                Quantity::DramThroughputPct,
                x.ncu_dram_pct,
                &a.ncu_csv_file,
                &at.clone().ncu(),
            ),
        ];
        if let Some(s) = x.short {
            evidence.push(Figure::new(
                Quantity::MeanKernelNs,
                s.mean_launch_ns,
                src,
                &at,
            ));
            evidence.push(Figure::new(Quantity::SampleWindowNs, s.window_ns, src, &at));
        }
        out.push(
            Claim::SampledDisagrees {
                kernel: a.kernel_label(&x.kernel),
                grid: x.grid,
                short: x.short.is_some(),
            },
            at,
            Some(rules::SAMPLED_DISAGREES),
            evidence,
        );
    }
}
