//! A run's timed nsys passes (`run.repeat`): each kernel's and range's total per pass, and
//! their mean, sample standard deviation, min, median and max over the passes. The first pass
//! is the run's own nsys/; passes 2..N are under repeats/<i>/, parsed like runs of their own.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Artifacts;

/// One figure over the timed passes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Stats {
    /// The value of each pass, in pass order.
    pub(crate) values: Vec<f64>,
    pub(crate) mean: f64,
    /// Sample standard deviation (n - 1); 0 for one pass.
    pub(crate) stddev: f64,
    pub(crate) min: f64,
    pub(crate) median: f64,
    pub(crate) max: f64,
}

impl Stats {
    pub(crate) fn of(values: Vec<f64>) -> Stats {
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n.max(1) as f64;
        let var = if n > 1 {
            values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let median = match n {
            0 => 0.0,
            _ if n % 2 == 1 => sorted[n / 2],
            _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
        };
        Stats {
            mean,
            stddev: var.sqrt(),
            min: sorted.first().copied().unwrap_or(0.0),
            median,
            max: sorted.last().copied().unwrap_or(0.0),
            values,
        }
    }
}

/// The run's figures over its timed passes.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Repeats {
    /// Timed passes parsed (the first included).
    pub(crate) passes: usize,
    /// Total kernel time of the kernel table, per pass.
    pub(crate) kernel_time_ns: Stats,
    /// Each kernel's total time per pass, by full name (0 in a pass that did not run it).
    pub(crate) kernels: BTreeMap<String, Stats>,
    /// Each range's wall time (summed over its instances) per pass.
    pub(crate) ranges: BTreeMap<String, Stats>,
}

/// The figures of one pass that the statistics are taken over.
pub(crate) struct Pass {
    kernel_ns: f64,
    kernels: BTreeMap<String, f64>,
    ranges: BTreeMap<String, f64>,
}

impl Pass {
    pub(crate) fn of(a: &Artifacts) -> Pass {
        let mut kernels = BTreeMap::new();
        for r in &a.records {
            *kernels.entry(r.name.clone()).or_insert(0.0) += r.total_time_ns;
        }
        let ranges = if a.range_stats.is_empty() {
            a.ranges
                .iter()
                .flatten()
                .map(|r| (r.name().to_string(), r.total_ns))
                .collect()
        } else {
            a.range_stats
                .iter()
                .map(|r| (r.name.clone(), r.wall_ns as f64))
                .collect()
        };
        Pass {
            kernel_ns: a.kernel_totals().0,
            kernels,
            ranges,
        }
    }
}

/// The statistics over the timed passes' figures (the run's own first).
pub(crate) fn over(passes: &[Pass]) -> Repeats {
    spread(passes)
}

fn spread(passes: &[Pass]) -> Repeats {
    let over = |get: &dyn Fn(&Pass) -> Option<f64>| -> Stats {
        Stats::of(passes.iter().map(|p| get(p).unwrap_or(0.0)).collect())
    };
    let names = |f: fn(&Pass) -> &BTreeMap<String, f64>| -> Vec<String> {
        let mut v: Vec<String> = passes.iter().flat_map(|p| f(p).keys().cloned()).collect();
        v.sort();
        v.dedup();
        v
    };
    Repeats {
        passes: passes.len(),
        kernel_time_ns: over(&|p| Some(p.kernel_ns)),
        kernels: names(|p| &p.kernels)
            .into_iter()
            .map(|n| {
                let s = over(&|p| p.kernels.get(&n).copied());
                (n, s)
            })
            .collect(),
        ranges: names(|p| &p.ranges)
            .into_iter()
            .map(|n| {
                let s = over(&|p| p.ranges.get(&n).copied());
                (n, s)
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_deviation_and_median_over_passes() {
        let s = Stats::of(vec![10.0, 12.0, 11.0, 15.0]);
        assert_eq!((s.mean, s.min, s.median, s.max), (12.0, 10.0, 11.5, 15.0));
        assert!((s.stddev - 2.1602).abs() < 1e-4);
        assert_eq!(Stats::of(vec![5.0]).stddev, 0.0);
    }

    #[test]
    fn a_kernel_missing_from_a_pass_counts_zero_there() {
        let pass = |k: &[(&str, f64)]| Pass {
            kernel_ns: k.iter().map(|x| x.1).sum(),
            kernels: k.iter().map(|(n, t)| (n.to_string(), *t)).collect(),
            ranges: BTreeMap::new(),
        };
        let r = spread(&[pass(&[("a", 1.0), ("b", 2.0)]), pass(&[("a", 3.0)])]);
        assert_eq!(r.passes, 2);
        assert_eq!(r.kernels["b"].values, vec![2.0, 0.0]);
        assert_eq!(r.kernel_time_ns.values, vec![3.0, 3.0]);
    }
}
