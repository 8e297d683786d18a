//! Sampled figures beside ncu's: each launch configuration both tools measured, and how far
//! their DRAM figures and classes agree over those holding enough of the range's time.

use crate::model::{Bound, KernelRecord, ShortLaunches};
use crate::parse::ncu::NcuReport;

/// One kernel launch configuration both tools measured: ncu's DRAM throughput of its replayed
/// launch(es) beside the sampled DRAM bandwidth over every launch of the configuration.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct Agreement {
    pub(crate) kernel: String,
    pub(crate) grid: String,
    pub(crate) block: String,
    /// The configuration's share of the range's kernel time, in %.
    pub(crate) share_pct: f64,
    pub(crate) time_ns: f64,
    pub(crate) coverage_pct: f64,
    pub(crate) sampled_dram_pct: f64,
    pub(crate) ncu_dram_pct: f64,
    pub(crate) sampled_bound: Option<Bound>,
    pub(crate) ncu_bound: Bound,
    /// Its launches are shorter than the sample window (rules::SAMPLED_WINDOW): the sampled
    /// figure is its window's, and it has no sampled class.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) short: Option<ShortLaunches>,
}

/// Every configuration of `records` that ncu measured and the samples covered, largest first.
pub(crate) fn agreement(records: &[KernelRecord], ncu: &NcuReport) -> Vec<Agreement> {
    use crate::analysis::shapes::dims;
    let total: f64 = records.iter().map(|r| r.total_time_ns).sum();
    let mut out = Vec::new();
    for r in records {
        let Some(sk) = &r.sampled else { continue };
        let Some(k) = r.in_report(ncu) else { continue };
        for (grid, block, m) in k.measured() {
            let (Some(grid), Some(block)) = (grid, block) else {
                continue;
            };
            let (Some(ns), Some(nd)) = crate::parse::ncu::sm_dram_pct(m) else {
                continue;
            };
            let Some(c) = sk
                .configs
                .iter()
                .find(|c| dims(&c.grid) == dims(grid) && dims(&c.block) == dims(block))
            else {
                continue;
            };
            let Some(sd) = c.figures.dram_pct else {
                continue;
            };
            out.push(Agreement {
                kernel: r.name.clone(),
                grid: c.grid.clone(),
                block: c.block.clone(),
                share_pct: if total > 0.0 {
                    100.0 * c.figures.time_ns / total
                } else {
                    0.0
                },
                time_ns: c.figures.time_ns,
                coverage_pct: c.figures.coverage_pct,
                sampled_dram_pct: sd,
                ncu_dram_pct: nd,
                sampled_bound: c.figures.bound,
                ncu_bound: Bound::classify(ns, nd),
                short: c.figures.short,
            });
        }
    }
    out.sort_by(|a, b| b.time_ns.total_cmp(&a.time_ns));
    out
}

/// How the sampled DRAM figures and classes of the compared configurations stand against ncu's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Compared {
    /// The configurations compared.
    pub(crate) configs: usize,
    /// |sampled - ncu| DRAM in points of % of peak: the time-weighted mean and the largest.
    pub(crate) dram_mean_diff: f64,
    pub(crate) dram_worst_diff: f64,
    /// The share of the classed configurations' time whose classes agree, in % (None: none of
    /// them has a sampled class).
    pub(crate) same_class_pct: Option<f64>,
    /// Of `configs`, those without a sampled class as their launches are shorter than the
    /// sample window (rules::SAMPLED_WINDOW).
    pub(crate) unclassed: usize,
}

/// The agreement of the configurations holding at least `min_share_pct` of the range's time
/// at `min_coverage_pct`: the DRAM figures of every one, the classes of those that have a
/// sampled class. None: none compared.
pub(crate) fn agreement_stats(
    rows: &[Agreement],
    min_share_pct: f64,
    min_coverage_pct: f64,
) -> Option<Compared> {
    let kept: Vec<&Agreement> = rows
        .iter()
        .filter(|a| a.share_pct >= min_share_pct && a.coverage_pct >= min_coverage_pct)
        .collect();
    let time: f64 = kept.iter().map(|a| a.time_ns).sum();
    if kept.is_empty() || time <= 0.0 {
        return None;
    }
    let diff = |a: &Agreement| (a.sampled_dram_pct - a.ncu_dram_pct).abs();
    let mean = kept.iter().map(|a| diff(a) * a.time_ns).sum::<f64>() / time;
    let worst = kept.iter().map(|a| diff(a)).fold(0.0, f64::max);
    // Instruction-bound is ncu's compute-bound refined by FLOP/byte; samples cannot refine it.
    // A configuration of launches shorter than the window has no sampled class to hold
    // against ncu's: its classes are not counted either way.
    let classed: Vec<&&Agreement> = kept.iter().filter(|a| a.short.is_none()).collect();
    let classed_ns: f64 = classed.iter().map(|a| a.time_ns).sum();
    let same = classed
        .iter()
        .filter(|a| a.sampled_bound == Some(a.ncu_bound))
        .map(|a| a.time_ns)
        .sum::<f64>();
    Some(Compared {
        configs: kept.len(),
        dram_mean_diff: mean,
        dram_worst_diff: worst,
        same_class_pct: (classed_ns > 0.0).then(|| 100.0 * same / classed_ns),
        unclassed: kept.len() - classed.len(),
    })
}
