//! What the measurement added: each range's CPU wall time per instance under nsys beside the
//! same range timed by the baseline pass (no profiler attached). nsys's export records no
//! per-range overhead of its own (its PROFILER_OVERHEAD table holds only the flushes at exit),
//! so the baseline pass is the measure.

use crate::analysis::ranges::RangeStats;
use crate::parse::baseline::Timed;

/// One range under nsys and without a profiler.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct Observed {
    pub(crate) range: String,
    pub(crate) nsys_instances: u64,
    pub(crate) nsys_ms_per_instance: f64,
    /// The baseline's instances compared (as many as nsys captured, from the same end of the
    /// run) and how many it timed in all.
    pub(crate) baseline_instances: u64,
    pub(crate) baseline_timed: u64,
    pub(crate) baseline_ms_per_instance: f64,
    /// (under nsys / without) - 1, in %.
    pub(crate) added_pct: f64,
}

/// Every range both the nsys export and the baseline hold. nsys holds the instances of its
/// capture: from its start to the run's end (or only the first, when the capture stopped when
/// the range closed); the baseline's instances are taken from the same end, as many.
pub(crate) fn compare(stats: &[RangeStats], timed: &[Timed], first_only: bool) -> Vec<Observed> {
    let mut out = Vec::new();
    for s in stats.iter().filter(|s| s.instances > 0) {
        let walls: Vec<i64> = timed
            .iter()
            .filter(|t| t.name == s.name)
            .map(|t| t.end - t.start)
            .collect();
        if walls.is_empty() {
            continue;
        }
        let all = walls.len();
        let n = (s.instances as usize).min(all);
        let kept: &[i64] = match first_only {
            true => &walls[..n],
            false => &walls[all - n..],
        };
        // As floats: a sum of many long spans cannot wrap.
        let baseline = kept.iter().map(|&w| w as f64).sum::<f64>() / n as f64 / 1e6;
        let nsys = s.wall_ns as f64 / s.instances as f64 / 1e6;
        if baseline <= 0.0 {
            // Spans of 0 ns (a clock that did not move): no ratio to give, and said so.
            tracing::warn!(
                "the baseline timed `{}` {n} time(s) at 0 ns each: no measurement cost is given for it",
                s.name
            );
            continue;
        }
        out.push(Observed {
            range: s.name.clone(),
            nsys_instances: s.instances,
            nsys_ms_per_instance: nsys,
            baseline_instances: n as u64,
            baseline_timed: all as u64,
            baseline_ms_per_instance: baseline,
            added_pct: 100.0 * (nsys / baseline - 1.0),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str, ms: i64) -> Timed {
        Timed {
            name: name.into(),
            start: 0,
            end: ms * 1_000_000,
        }
    }

    #[test]
    fn the_baseline_instances_are_those_the_capture_held() {
        let stats = vec![RangeStats {
            name: "decode".into(),
            instances: 2,
            wall_ns: 30_000_000,
            ..Default::default()
        }];
        // Four timed: a slow first one the capture did not hold, then 10 ms each.
        let timed = vec![
            t("decode", 90),
            t("decode", 10),
            t("decode", 10),
            t("decode", 10),
            t("other", 1),
        ];
        let o = compare(&stats, &timed, false);
        assert_eq!(o.len(), 1);
        assert_eq!((o[0].baseline_instances, o[0].baseline_timed), (2, 4));
        assert_eq!(o[0].baseline_ms_per_instance, 10.0);
        assert_eq!(o[0].nsys_ms_per_instance, 15.0);
        assert_eq!(o[0].added_pct, 50.0);
        // A capture of the first instance only compares the first.
        let o = compare(&stats, &timed, true);
        assert_eq!(o[0].baseline_ms_per_instance, 50.0);
    }
}
