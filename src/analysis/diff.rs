//! `stage2 diff`: what changed between two runs, per kernel (paired by mangled name where both
//! runs know it, else by name) and per NVTX range, sorted by absolute impact; whether each
//! change is outside the runs' noise (see `noise`); and why two runs cannot be compared.

use std::collections::BTreeMap;

use serde::Serialize;

use super::noise;
/// The diff document's surface: its noise test and the confidence its intervals are at.
pub(crate) use super::noise::{Test, CONFIDENCE};
use super::repeats::Stats;
use crate::analysis::summary::{Kernel, Summary};
use crate::model::TimeSource;
use crate::rundir::status::PassState;

mod comparable;
mod gate;
pub(crate) use comparable::{comparability, different_basis, incomplete, sampling};
pub(crate) use gate::{gate, Scope};

/// Whether a kernel ran in both runs or in one only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Presence {
    Both,
    /// Only in B.
    New,
    /// Only in A.
    Removed,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct KernelDelta {
    pub(crate) name: String,
    /// The short name, with a suffix from the full name when two kernels share it.
    pub(crate) label: String,
    pub(crate) presence: Presence,
    /// Total time, mean over the timed passes.
    pub(crate) time_a_ns: f64,
    pub(crate) time_b_ns: f64,
    pub(crate) delta_ns: f64,
    /// Relative change, % of A; None when the kernel is in one run only.
    pub(crate) delta_pct: Option<f64>,
    /// What `--scope kernels` compares: `delta_pct`, or for a kernel in one run only its
    /// whole share of that run's kernel time (+ new, - removed).
    pub(crate) change_pct: Option<f64>,
    pub(crate) share_a_pct: Option<f64>,
    pub(crate) share_b_pct: Option<f64>,
    pub(crate) instances_a: u64,
    pub(crate) instances_b: u64,
    pub(crate) sm_pct_delta: Option<f64>,
    pub(crate) dram_pct_delta: Option<f64>,
    /// The noise test of the total time over the timed passes (None: a side has one pass).
    pub(crate) test: Option<Test>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct RangeDelta {
    pub(crate) name: String,
    pub(crate) wall_a_ns: f64,
    pub(crate) wall_b_ns: f64,
    pub(crate) wall_delta_pct: Option<f64>,
    pub(crate) kernel_a_ns: Option<f64>,
    pub(crate) kernel_b_ns: Option<f64>,
    pub(crate) test: Option<Test>,
}

/// A range's wall time split (see analysis::ledger) in A and in B.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct LedgerDelta {
    pub(crate) name: String,
    pub(crate) a: super::ledger::Parts,
    pub(crate) b: super::ledger::Parts,
}

/// `stage2 diff --json`. schema_version 3: `advice` (a compared range that opens with a
/// warm-up).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Diff {
    pub(crate) schema_version: u32,
    pub(crate) run_a: String,
    pub(crate) run_b: String,
    /// Timed nsys passes behind each side's figures.
    pub(crate) passes_a: usize,
    pub(crate) passes_b: usize,
    /// How a change is tested against the noise.
    pub(crate) noise_test: String,
    pub(crate) total_kernel_time_a_ns: f64,
    pub(crate) total_kernel_time_b_ns: f64,
    pub(crate) total_delta_pct: Option<f64>,
    pub(crate) total_test: Option<Test>,
    pub(crate) kernels: Vec<KernelDelta>,
    pub(crate) ranges: Vec<RangeDelta>,
    /// Each push/pop range's wall-time ledger in both runs (first pass of each).
    pub(crate) ledger: Vec<LedgerDelta>,
    /// Why the runs may not be comparable.
    pub(crate) warnings: Vec<String>,
    /// What the compared figures hold that a reader should know before trusting a change
    /// (a compared range that opens with a warm-up instance).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) advice: Vec<String>,
}

/// Each compared range that opens with a warm-up in one run (the instance-group rule
/// `warm-up`, or `report.instances=skip=N`): the range's figures above include it.
pub(crate) fn warm_ups(
    side: &str,
    s: &Summary,
    groups: &[super::instances::RangeGroups],
    compared: &[RangeDelta],
) -> Vec<String> {
    use super::instances::{SKIP, WARMUP};
    let mut out = Vec::new();
    for g in groups {
        let warm_rule = g.rule.name == WARMUP.name || g.rule.name == SKIP.name;
        if !warm_rule || !compared.iter().any(|r| r.name == g.name) {
            continue;
        }
        let (Some(warm), Some(total)) = (
            g.groups.first().filter(|w| w.first == 1),
            s.ranges
                .iter()
                .find(|r| r.name == g.name)
                .map(|r| r.total_ns),
        ) else {
            continue;
        };
        // Each other group's median, by its label ("0.85 ms for the 24 faster").
        let rest: Vec<String> = g
            .groups
            .iter()
            .skip(1)
            .map(|x| format!("{:.2} ms for {}", x.median_wall_ns / 1e6, x.label))
            .collect();
        let warm_ns = warm.median_wall_ns * warm.instances as f64;
        let first = match warm.instances {
            1 => format!(
                "its first instance took {:.2} ms",
                warm.median_wall_ns / 1e6
            ),
            n => format!(
                "its first {n} instances took a median of {:.2} ms",
                warm.median_wall_ns / 1e6
            ),
        };
        let against = match rest.len() {
            1 => format!("a median of {}", rest[0]),
            _ => format!("medians of {}", rest.join(", ")),
        };
        out.push(format!(
            "{side}'s `{}` opens with a warm-up: {first} against {against}, {:.0}% of the range's wall time compared here; a change in `{}` can be the warm-up's. Running the warm-up before the range opens (or outside the NVTX range) compares steady instances",
            g.name,
            100.0 * warm_ns / total.max(1.0),
            g.name
        ));
    }
    out
}

fn pct(a: f64, b: f64) -> Option<f64> {
    (a > 0.0).then(|| 100.0 * (b - a) / a)
}

/// A figure over a side's passes: its per-pass values, or the one value it has.
fn runs(stats: Option<&Stats>, value: f64, passes: usize) -> Stats {
    match stats {
        Some(s) => s.clone(),
        None if passes > 1 => Stats::of(vec![value; passes]),
        None => Stats::of(vec![value]),
    }
}

/// The A/B pairs of kernels: by mangled name when both have one, else by full name.
fn pair<'a>(a: &[&'a Kernel], b: &[&'a Kernel]) -> Vec<(Option<&'a Kernel>, Option<&'a Kernel>)> {
    let mut used = vec![false; b.len()];
    let mut by_mangled: BTreeMap<&str, usize> = BTreeMap::new();
    let mut by_name: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, k) in b.iter().enumerate() {
        if let Some(m) = &k.mangled {
            by_mangled.entry(m.as_str()).or_insert(i);
        }
        by_name.entry(k.name.as_str()).or_insert(i);
    }
    let mut out = Vec::new();
    for k in a {
        let found = k
            .mangled
            .as_deref()
            .and_then(|m| by_mangled.get(m))
            .or_else(|| by_name.get(k.name.as_str()))
            .copied()
            .filter(|i| !used[*i]);
        if let Some(i) = found {
            used[i] = true;
        }
        out.push((Some(*k), found.map(|i| b[i])));
    }
    out.extend(
        b.iter()
            .zip(&used)
            .filter(|(_, u)| !**u)
            .map(|(k, _)| (None, Some(*k))),
    );
    out
}

/// One kernel's change; times are means over the timed passes (`totals`: each side's mean
/// total kernel time, for the share of a kernel in one run only).
fn kernel_delta(
    x: Option<&Kernel>,
    y: Option<&Kernel>,
    (pa, pb): (usize, usize),
    totals: (f64, f64),
) -> KernelDelta {
    let sa = runs(
        x.and_then(|k| k.runs.as_ref()),
        x.map_or(0.0, |k| k.total_time_ns),
        pa,
    );
    let sb = runs(
        y.and_then(|k| k.runs.as_ref()),
        y.map_or(0.0, |k| k.total_time_ns),
        pb,
    );
    let (ta, tb) = (sa.mean, sb.mean);
    let d = |f: fn(&Kernel) -> Option<f64>| Some(f(y?)? - f(x?)?);
    let share = |t: f64, total: f64| (total > 0.0).then(|| 100.0 * t / total);
    let (presence, change_pct) = match (x, y) {
        (Some(_), Some(_)) => (Presence::Both, pct(ta, tb)),
        (None, _) => (Presence::New, share(tb, totals.1)),
        (_, None) => (Presence::Removed, share(ta, totals.0).map(|p| -p)),
    };
    KernelDelta {
        name: y.or(x).map(|k| k.name.clone()).unwrap_or_default(),
        label: String::new(),
        presence,
        time_a_ns: ta,
        time_b_ns: tb,
        delta_ns: tb - ta,
        delta_pct: if presence == Presence::Both {
            pct(ta, tb)
        } else {
            None
        },
        change_pct,
        share_a_pct: x.and(share(ta, totals.0)),
        share_b_pct: y.and(share(tb, totals.1)),
        instances_a: x.map(|k| k.instances).unwrap_or(0),
        instances_b: y.map(|k| k.instances).unwrap_or(0),
        sm_pct_delta: d(|k| k.sm_throughput_pct),
        dram_pct_delta: d(|k| k.dram_throughput_pct),
        test: noise::welch(&sa, &sb),
    }
}

/// Short names, with a suffix from the full name where two kernels of the diff share one.
fn label(kernels: &mut [KernelDelta]) {
    let labels = crate::model::labels(kernels.iter().map(|k| k.name.as_str()), usize::MAX);
    for (k, l) in kernels.iter_mut().zip(labels) {
        k.label = l;
    }
}

/// The kernels whose times a side is compared on: those nsys timed, when it timed any (ncu's
/// replay times of kernels nsys did not see are another measure).
fn timed(s: &Summary) -> Vec<&Kernel> {
    let nsys: Vec<&Kernel> = s
        .kernels
        .iter()
        .filter(|k| k.time_source == TimeSource::Nsys)
        .collect();
    if nsys.is_empty() {
        s.kernels.iter().collect()
    } else {
        nsys
    }
}

pub(crate) fn diff(a: &Summary, b: &Summary, warnings: Vec<String>) -> Diff {
    let passes = (a.timed_passes, b.timed_passes);
    let total_a = runs(
        a.totals.kernel_time_runs.as_ref(),
        a.totals.kernel_time_ns,
        passes.0,
    );
    let total_b = runs(
        b.totals.kernel_time_runs.as_ref(),
        b.totals.kernel_time_ns,
        passes.1,
    );
    let (ta, tb) = (total_a.mean, total_b.mean);
    let mut kernels: Vec<KernelDelta> = pair(&timed(a), &timed(b))
        .into_iter()
        .map(|(x, y)| kernel_delta(x, y, passes, (ta, tb)))
        .collect();
    label(&mut kernels);
    kernels.sort_by(|x, y| {
        y.delta_ns
            .abs()
            .total_cmp(&x.delta_ns.abs())
            .then(x.label.cmp(&y.label))
    });
    // By name: a capture can hold tens of thousands of range names.
    let b_ranges: std::collections::HashMap<&str, _> = b
        .ranges
        .iter()
        .rev()
        .map(|r| (r.name.as_str(), r))
        .collect();
    let ranges = a
        .ranges
        .iter()
        .filter_map(|ra| {
            let rb = *b_ranges.get(ra.name.as_str())?;
            let sa = runs(ra.runs.as_ref(), ra.total_ns, passes.0);
            let sb = runs(rb.runs.as_ref(), rb.total_ns, passes.1);
            Some(RangeDelta {
                name: ra.name.clone(),
                wall_a_ns: sa.mean,
                wall_b_ns: sb.mean,
                wall_delta_pct: pct(sa.mean, sb.mean),
                kernel_a_ns: ra.kernel_ns,
                kernel_b_ns: rb.kernel_ns,
                test: noise::welch(&sa, &sb),
            })
        })
        .collect();
    let total_test = noise::welch(&total_a, &total_b);
    let b_ledger = crate::analysis::ledger::ByName::new(&b.ledger);
    let ledger = a
        .ledger
        .iter()
        .filter_map(|la| {
            let lb = b_ledger.get(&la.name)?;
            Some(LedgerDelta {
                name: la.name.clone(),
                a: la.total,
                b: lb.total,
            })
        })
        .collect();
    Diff {
        schema_version: 3,
        run_a: a.run_id.clone(),
        run_b: b.run_id.clone(),
        passes_a: passes.0,
        passes_b: passes.1,
        noise_test: format!("Welch's t-test, two-sided, {}", CONFIDENCE),
        total_kernel_time_a_ns: ta,
        total_kernel_time_b_ns: tb,
        total_delta_pct: pct(ta, tb),
        total_test,
        kernels,
        ranges,
        ledger,
        warnings,
        advice: Vec::new(),
    }
}

/// Distinct kernels on each side only, for the summary line.
pub(crate) fn one_sided(d: &Diff) -> (usize, usize) {
    let count = |p: Presence| d.kernels.iter().filter(|k| k.presence == p).count();
    (count(Presence::New), count(Presence::Removed))
}
