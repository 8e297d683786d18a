//! A kernel's row from its launches' durations, as `nsys stats` computes it (total, count,
//! mean, median, min, max, sample standard deviation): from a list, or from duration ->
//! count as a streaming scan keeps them.

use std::collections::BTreeMap;

use crate::parse::nsys::KernelSum;

/// The same from a list of durations (the tests' way in).
#[cfg(test)]
pub(crate) fn summarize(name: String, ns: Vec<i64>, total_all: f64) -> KernelSum {
    let mut counts: BTreeMap<i64, u64> = BTreeMap::new();
    for d in ns {
        *counts.entry(d).or_default() += 1;
    }
    summarize_counts(name, &counts, total_all)
}

/// A kernel's row from its durations held as duration -> launches (what a streaming scan
/// keeps); `total_all` is the kernel time its share is of.
pub(crate) fn summarize_counts(name: String, d: &BTreeMap<i64, u64>, total_all: f64) -> KernelSum {
    let n: u64 = d.values().sum();
    let total: f64 = d.iter().map(|(v, c)| *v as f64 * *c as f64).sum();
    let avg = total / n.max(1) as f64;
    // The k-th smallest duration (0-based).
    let nth = |k: u64| {
        let mut seen = 0;
        for (v, c) in d {
            seen += c;
            if k < seen {
                return *v as f64;
            }
        }
        0.0
    };
    let med = match n {
        0 => 0.0,
        _ if n % 2 == 1 => nth(n / 2),
        _ => (nth(n / 2 - 1) + nth(n / 2)) / 2.0,
    };
    let var = if n > 1 {
        d.iter()
            .map(|(v, c)| *c as f64 * (*v as f64 - avg).powi(2))
            .sum::<f64>()
            / (n - 1) as f64
    } else {
        0.0
    };
    KernelSum {
        name,
        time_pct: Some(if total_all > 0.0 {
            100.0 * total / total_all
        } else {
            0.0
        }),
        total_ns: total,
        instances: n,
        avg_ns: avg,
        med_ns: Some(med),
        min_ns: d.keys().next().map(|&v| v as f64),
        max_ns: d.keys().next_back().map(|&v| v as f64),
        stddev_ns: Some(var.sqrt()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_sample_deviation() {
        let k = summarize("k".into(), vec![4, 1, 3, 2], 20.0);
        assert_eq!((k.total_ns, k.instances, k.avg_ns), (10.0, 4, 2.5));
        assert_eq!(
            (k.med_ns, k.min_ns, k.max_ns),
            (Some(2.5), Some(1.0), Some(4.0))
        );
        assert!((k.stddev_ns.unwrap() - 1.2910).abs() < 1e-4);
        assert_eq!(k.time_pct, Some(50.0));
    }
}
