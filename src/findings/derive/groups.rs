//! Findings about instances that differ: each repeated range whose instances fall into groups
//! (analysis::instances) gets one finding with each group's median wall time, its tokens/s
//! where the phase has token marks, and the wall-time ledger part that differs most between the
//! fastest and slowest group.

use super::super::{span, Claim, Figure, Findings, GroupUse, Quantity, Scope};
use crate::analysis::instances::{Group, RangeGroups};
use crate::analysis::ledger::{Parts, RangeLedger};
use crate::analysis::ranges::Spread;
use crate::analysis::Artifacts;

/// Every finding about a repeated range's instances, in the order the reports read them: a
/// new one is a function here and a line in this list.
pub(super) fn instances(a: &Artifacts, out: &mut Findings) {
    instance_groups(a, out);
    graphs_rerecorded(a, out);
    instance_trend(a, out);
}

/// The range's warm-up, where the instance-group rule split one off: its instance count; and
/// whether the instances after it are one group (no rule told them apart).
fn warm_up(a: &Artifacts, name: &str) -> (Option<usize>, bool) {
    let Some(g) = a.instance_groups.iter().find(|g| g.name == name) else {
        return (None, true);
    };
    match g.rule == crate::rules::WARMUP || g.rule == crate::rules::SKIP {
        true => (
            g.groups.first().map(|g| g.instances as usize),
            g.groups.len() <= 2,
        ),
        false => (None, false),
    }
}

/// One part of a range instance's wall time on its thread.
type Part = fn(&Parts) -> i64;
/// One count of a range instance's CUDA calls.
type Count = fn(&Parts) -> u32;

/// The ledger's parts, by the name the reports give them.
const PARTS: &[(&str, Part)] = &[
    ("CUDA calls waiting for the GPU (sync)", |p| p.sync_ns),
    ("kernel launch calls", |p| p.launch_ns),
    ("other CUDA calls", |p| p.other_api_ns),
    ("code compiled and loaded for kernels' first use", |p| {
        p.compile_ns
    }),
    ("nested child ranges", |p| p.children_ns),
    ("the thread's own work outside CUDA calls", |p| p.rest_ns),
];

/// What a first call does that later ones do not, counted per group from its instances' CUDA
/// calls: graphs recorded (instantiated) and compiled kernels loaded.
const WORK_OF_A_FIRST_CALL: &[(Quantity, Count)] = &[
    (Quantity::GroupGraphsInstantiated, |p| p.graphs_instantiated),
    (Quantity::GroupModulesLoaded, |p| p.modules_loaded),
];

/// The ledger part whose per-group median differs most between the fastest and slowest
/// group, with each group's median of it; None without a per-instance ledger of every
/// instance.
fn differing_part(l: Option<&RangeLedger>, g: &RangeGroups) -> Option<(&'static str, Vec<f64>)> {
    let l = l?;
    let by = |grp: &Group, f: Part| {
        Spread::of(
            grp.members
                .iter()
                .filter_map(|&i| l.per_instance.get(i))
                .map(|p| f(p) as f64)
                .collect(),
        )
        .median
    };
    let fast = g
        .groups
        .iter()
        .min_by(|x, y| x.median_wall_ns.total_cmp(&y.median_wall_ns))?;
    let slow = g
        .groups
        .iter()
        .max_by(|x, y| x.median_wall_ns.total_cmp(&y.median_wall_ns))?;
    let (name, f) = PARTS.iter().max_by(|x, y| {
        (by(slow, x.1) - by(fast, x.1)).total_cmp(&(by(slow, y.1) - by(fast, y.1)))
    })?;
    Some((name, g.groups.iter().map(|grp| by(grp, *f)).collect()))
}

fn instance_groups(a: &Artifacts, out: &mut Findings) {
    let ledgers = a.ledger_by_name();
    for g in &a.instance_groups {
        let total: u64 = g.groups.iter().map(|x| x.instances).sum();
        let scope = Scope::range(&g.name).instances(total);
        let tokens = a
            .per_token
            .iter()
            .find(|p| p.phase == g.name)
            .and_then(|p| Some(p.tokens? as f64 / p.instances.max(1) as f64));
        // Per instance, only where the ledger kept every instance.
        let ledger = ledgers
            .get(&g.name)
            .filter(|l| l.per_instance.len() as u64 == total);
        let part = differing_part(ledger, g);
        let mut ev = Vec::new();
        let mut verdicts = Vec::new();
        let mut python = Vec::new();
        // Under a launcher, busy counts NCCL kernels waiting for peers: no verdict.
        let verdicts_hold = a.rank_data.is_empty();
        for (i, grp) in g.groups.iter().enumerate() {
            let s = scope.clone().group(&grp.label).instances(grp.instances);
            ev.push(Figure::new(
                Quantity::GroupMedianWallNs,
                grp.median_wall_ns,
                &a.sqlite_file,
                &s,
            ));
            if let Some(t) = tokens.filter(|_| grp.median_wall_ns > 0.0) {
                ev.push(Figure::new(
                    Quantity::TokensPerS,
                    t / (grp.median_wall_ns / 1e9),
                    &a.sqlite_file,
                    &s,
                ));
            }
            if let Some(busy) = grp.gpu_busy_of_range_pct {
                ev.push(Figure::new(
                    Quantity::GpuBusyOfRangePct,
                    busy,
                    &a.sqlite_file,
                    &s,
                ));
                verdicts.push(match busy < crate::rules::GPU_IDLE.threshold {
                    true => GroupUse::MostlyIdle,
                    false => GroupUse::GpuBound,
                });
            }
            let sampled = a
                .python
                .as_ref()
                .and_then(|p| p.top_of_group(&g.name, &grp.label));
            if let Some((_, share, n)) = sampled {
                let source = crate::analysis::pysamples::SOURCE;
                ev.push(Figure::new(Quantity::PythonSamplePct, share, source, &s));
                ev.push(Figure::new(Quantity::PythonSamples, n as f64, source, &s));
            }
            python.push(sampled.map(|t| t.0.to_string()));
            for (q, of) in WORK_OF_A_FIRST_CALL {
                let n: u32 = grp
                    .members
                    .iter()
                    .filter_map(|&i| ledger.and_then(|l| l.per_instance.get(i)))
                    .map(of)
                    .sum();
                if n > 0 {
                    ev.push(Figure::new(*q, n as f64, &a.sqlite_file, &s));
                }
            }
            if let Some((_, medians)) = &part {
                ev.push(Figure::new(
                    Quantity::GroupLedgerPartNs,
                    medians[i],
                    &a.sqlite_file,
                    &s,
                ));
            }
        }
        let claim = Claim::InstanceGroups {
            grouped_by: g.rule.name.to_string(),
            groups: g.groups.clone(),
            differs_in: part.map(|p| p.0.to_string()),
            // A verdict for every group or none.
            verdicts: match verdicts_hold && verdicts.len() == g.groups.len() {
                true => verdicts,
                false => Vec::new(),
            },
            python_functions: match python.iter().any(Option::is_some) {
                true => python,
                false => Vec::new(),
            },
        };
        out.push(claim, scope, Some(g.rule.rule()), ev);
    }
}

/// Ranges whose instances after the warm-up instantiate CUDA graphs: recorded again in steady
/// state. The warm-up is the instance-group rule's first group where it split one off, else
/// the first instance (which records, as a graph's first use does).
fn graphs_rerecorded(a: &Artifacts, out: &mut Findings) {
    for l in &a.ledger {
        if l.per_instance.len() as u64 != l.instances || l.instances < 2 {
            continue;
        }
        let warm = warm_up(a, &l.name).0.unwrap_or(1);
        let after = &l.per_instance[warm.min(l.per_instance.len())..];
        let n: u32 = after.iter().map(|p| p.graphs_instantiated).sum();
        if n == 0 {
            continue;
        }
        let scope = Scope::range(&l.name).instances(after.len() as u64);
        let ev = vec![Figure::new(
            Quantity::GroupGraphsInstantiated,
            n as f64,
            &a.sqlite_file,
            &scope,
        )];
        out.push(
            Claim::GraphsRerecorded,
            scope,
            Some(crate::rules::GRAPHS_RERECORDED),
            ev,
        );
    }
}

/// Phases whose later steady instances take another time than their first (rules::
/// INSTANCE_TREND), the most wall time first: their means per instance and per token hold
/// for this run's length only. From the ledger's per-instance wall times (push/pop ranges).
fn instance_trend(a: &Artifacts, out: &mut Findings) {
    let mut found = Vec::new();
    for l in &a.ledger {
        // The ranges with figures per instance and per token: phases and the captured range.
        let phase = a.per_token.iter().any(|p| p.phase == l.name);
        if !phase || l.per_instance.len() as u64 != l.instances {
            continue;
        }
        let (warm, one_kind) = warm_up(a, &l.name);
        if !one_kind {
            continue;
        }
        let warm = warm.unwrap_or(0).min(l.per_instance.len());
        let walls: Vec<f64> = l.per_instance[warm..]
            .iter()
            .map(|p| p.wall_ns as f64)
            .collect();
        if let Some(t) = trend(&walls) {
            found.push((l, warm as u64, walls.len() as u64, t));
        }
    }
    found.sort_by_key(|x| std::cmp::Reverse(x.0.total.wall_ns));
    for (l, warm, steady, t) in found {
        // 1-based ordinals among every instance, the warm-up's included.
        let at = |i: usize| warm + i as u64 + 1;
        let early_at = [at(0), at(t.third - 1)];
        let late_at = [at(steady as usize - t.third), at(steady as usize - 1)];
        let scope = Scope::range(&l.name).instances(steady);
        let mut ev: Vec<Figure> = [(early_at, t.early), (late_at, t.late)]
            .into_iter()
            .map(|(x, ns)| {
                let s = scope.clone().group(&span(x)).instances(t.third as u64);
                Figure::new(Quantity::GroupMedianWallNs, ns, &a.sqlite_file, &s)
            })
            .collect();
        ev.push(Figure::new(
            Quantity::RankCorrelation,
            t.rho,
            &a.sqlite_file,
            &scope,
        ));
        let claim = Claim::InstanceTrend {
            early: early_at,
            late: late_at,
            steady,
            settled_at: t.settled.map(at),
        };
        out.push(claim, scope, Some(crate::rules::INSTANCE_TREND), ev);
    }
}

/// A range's steady instances that change time over the run (rules::INSTANCE_TREND).
#[derive(Debug, PartialEq)]
struct Trend {
    /// Instances in each third compared.
    third: usize,
    /// The first and last third's median wall time, in ns.
    early: f64,
    late: f64,
    /// Spearman's coefficient of the walls with their order.
    rho: f64,
    /// Where the later ones take less: the index of the first instance from which every one
    /// is within the rule's threshold of the last third's median, where that is before the
    /// last third (None: still falling there, or growing).
    settled: Option<usize>,
}

/// The trend of a range's steady instances' wall times, in start order; None where the rule
/// finds none.
fn trend(walls: &[f64]) -> Option<Trend> {
    use crate::rules::{INSTANCE_TREND, TREND_MIN_CORRELATION, TREND_MIN_INSTANCES};
    if walls.len() < TREND_MIN_INSTANCES {
        return None;
    }
    let third = walls.len() / 3;
    let median = |w: &[f64]| Spread::of(w.to_vec()).median;
    let (early, late) = (
        median(&walls[..third]),
        median(&walls[walls.len() - third..]),
    );
    if early <= 0.0 || (late / early - 1.0).abs() * 100.0 < INSTANCE_TREND.threshold {
        return None;
    }
    let rho = rank_correlation(walls);
    if rho.abs() < TREND_MIN_CORRELATION || (rho > 0.0) != (late > early) {
        return None;
    }
    let bound = late * (1.0 + INSTANCE_TREND.threshold / 100.0);
    let settled = (late < early)
        .then(|| walls.iter().rposition(|&w| w > bound))
        .flatten()
        .map(|i| i + 1)
        .filter(|&i| i < walls.len() - third);
    Some(Trend {
        third,
        early,
        late,
        rho,
        settled,
    })
}

/// Spearman's rank correlation of `v` with its order (ties take their mean rank); 0 for fewer
/// than two values or values all equal.
fn rank_correlation(v: &[f64]) -> f64 {
    let n = v.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| v[i].total_cmp(&v[j]));
    let mut rank = vec![0.0; n];
    let mut k = 0;
    while k < n {
        let mut e = k;
        while e + 1 < n && v[order[e + 1]] == v[order[k]] {
            e += 1;
        }
        for &i in &order[k..=e] {
            rank[i] = (k + e) as f64 / 2.0;
        }
        k = e + 1;
    }
    // Pearson's coefficient of the ranks with the positions.
    let mean = (n as f64 - 1.0) / 2.0;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (i, r) in rank.iter().enumerate() {
        let (x, y) = (i as f64 - mean, r - mean);
        sxy += x * y;
        sxx += x * x;
        syy += y * y;
    }
    match sxx * syy > 0.0 {
        true => sxy / (sxx * syy).sqrt(),
        false => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::{rank_correlation, trend, Trend};

    /// A range's instances' durations in start order, from NVIDIA's `nvtx_pushpop_trace`.
    fn nvidia_walls(data: &str, range: &str) -> Vec<f64> {
        let text = std::fs::read_to_string(crate::testutil::data(data)).unwrap();
        text.lines()
            .skip(1)
            .filter(|l| l.split(',').nth(5) == Some(range))
            .map(|l| l.split(',').nth(2).unwrap().parse().unwrap())
            .collect()
    }

    /// A loop whose 200 steps grow from about 42 ms to 68 ms (tests/data/hf/step-growth, an
    /// H100): the trend stage2 reported from the whole run there, from NVIDIA's list of the
    /// same instances. No warm-up group was split off, so every instance is steady.
    #[test]
    fn a_growing_loop_is_a_trend_on_nvidias_own_instance_list() {
        let w = nvidia_walls("hf/step-growth/nvidia/run_nvtx_pushpop_trace.csv", ":step");
        assert_eq!(w.len(), 200);
        let t = trend(&w).expect("a trend");
        assert_eq!((t.third, t.settled), (66, None));
        // What the run's stakeholder summary printed: 41.83 ms, 68.45 ms, +64%, 0.61.
        let ms = |ns: f64| format!("{:.2}", ns / 1e6);
        assert_eq!((ms(t.early), ms(t.late)), ("41.83".into(), "68.45".into()));
        assert_eq!(
            format!("{:+.0}% {:.2}", (t.late / t.early - 1.0) * 100.0, t.rho),
            "+64% 0.61"
        );
    }

    /// mistral-jitter's steady instances (after its one-instance warm-up): +33% by the
    /// thirds' medians, but a jump in the middle that comes back, 0.50 by rank: no trend.
    #[test]
    fn a_jump_that_comes_back_is_no_trend() {
        let w = nvidia_walls(
            "hf/mistral-jitter/nvidia/run_nvtx_pushpop_trace.csv",
            ":decode",
        );
        assert_eq!(w.len(), 15);
        assert!(trend(&w[1..]).is_none());
        assert!((rank_correlation(&w[1..]) - 0.5).abs() < 0.01);
        // Too few instances, flat ones, a zero: none.
        assert!(trend(&w[1..9]).is_none());
        assert!(trend(&[5.0; 12]).is_none());
        assert!(trend(&[0.0; 12]).is_none());
    }

    proptest::proptest! {
        /// What the rule decides does not depend on the unit of time, and never reads a trend
        /// against the order of the instances; the same walls sorted (each later instance at
        /// least as long) are a growing trend whenever their thirds differ by the threshold.
        #[test]
        fn a_trend_is_scale_free_and_ordered(
            walls in proptest::collection::vec(1.0f64..1e9, 0..60),
            scale in 1e-3f64..1e3,
        ) {
            let mut sorted = walls.clone();
            sorted.sort_by(f64::total_cmp);
            for w in [&walls, &sorted] {
                let t = trend(w);
                let scaled: Vec<f64> = w.iter().map(|x| x * scale).collect();
                proptest::prop_assert_eq!(t.is_some(), trend(&scaled).is_some());
                if let Some(t) = &t {
                    proptest::prop_assert!(t.rho.abs() >= 0.6 && t.rho.abs() <= 1.0 + 1e-9);
                    proptest::prop_assert_eq!(t.rho > 0.0, t.late > t.early);
                    proptest::prop_assert!(t.settled.is_none_or(|i| i < w.len() - t.third));
                }
                let reversed: Vec<f64> = w.iter().rev().copied().collect();
                proptest::prop_assert!((rank_correlation(&reversed) + rank_correlation(w)).abs() < 1e-9);
            }
            let third = sorted.len() / 3;
            if sorted.len() >= 9 && sorted[sorted.len() - third..].iter().copied().fold(f64::MAX, f64::min)
                >= 1.2 * sorted[third - 1]
            {
                proptest::prop_assert!(trend(&sorted).is_some_and(|t| t.rho > 0.0));
            }
        }
    }

    /// Falling instances settle where every later one is within 20% of the last third's
    /// median; where the last third still falls, they have not settled.
    #[test]
    fn falling_instances_settle_before_the_last_third_or_not_at_all() {
        let settling = [30.0, 28.0, 26.0, 11.0, 10.0, 10.5, 10.0, 9.5, 10.0];
        let t = trend(&settling).unwrap();
        assert_eq!((t.early, t.late, t.settled), (28.0, 10.0, Some(3)));
        let falling: Vec<f64> = (0..12).map(|i| 100.0 - 5.0 * i as f64).collect();
        assert_eq!(
            trend(&falling),
            Some(Trend {
                third: 4,
                early: 92.5,
                late: 52.5,
                rho: -1.0,
                settled: None
            })
        );
    }

    #[test]
    fn rank_correlation_is_spearmans() {
        assert_eq!(rank_correlation(&[1.0, 2.0, 3.0, 4.0]), 1.0);
        assert_eq!(rank_correlation(&[4.0, 3.0, 2.0, 1.0]), -1.0);
        assert_eq!(rank_correlation(&[2.0, 2.0, 2.0]), 0.0);
        assert_eq!(rank_correlation(&[]), 0.0);
        // Ties share their mean rank: ranks 0, 2, 1, 3.5, 3.5 against positions 0-4 give
        // 8.5 / sqrt(10 x 9.5).
        let tied = rank_correlation(&[1.0, 3.0, 2.0, 4.0, 4.0]);
        assert!((tied - 8.5 / 95f64.sqrt()).abs() < 1e-12, "{tied}");
    }
}
