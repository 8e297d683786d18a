//! The kernel table's rows. With an NVTX-gated capture they are the kernels launched inside
//! the captured range, over every instance of it, from the SQLite export (as nsys's
//! `nvtx_kern_sum` lists a range's kernels): a capture that runs on past the range (every
//! decode step, `capture_range_end=none`) holds other ranges' kernels too, which
//! `cuda_gpu_kern_sum` would mix in. Without a range or a SQLite export, `cuda_gpu_kern_sum`.

use std::collections::{BTreeMap, HashMap};

use crate::error::Error;
use crate::parse::nsys::{read_kernels, KernelSum};
use crate::parse::sqlite::{Launch, NsysDb, NvtxRange};
use crate::rundir::{RunDir, KERN_SUM};

/// Rows as `nsys stats` computes them from a kernel's durations: total, count, mean, median,
/// min, max and sample standard deviation.
pub fn summarize(name: String, ns: Vec<i64>, total_all: f64) -> KernelSum {
    let mut counts: BTreeMap<i64, u64> = BTreeMap::new();
    for d in ns {
        *counts.entry(d).or_default() += 1;
    }
    summarize_counts(name, &counts, total_all)
}

/// [`summarize`] of durations held as duration -> count (what a streaming scan keeps).
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

/// The kernels launched in the instances of range `name`, largest total first.
pub fn in_range(
    name: &str,
    ranges: &[NvtxRange],
    launches: &[Launch],
    strings: &HashMap<i64, String>,
) -> Vec<KernelSum> {
    crate::analysis::scan::Scan::over(ranges, Some(name), launches).kernel_rows(strings)
}

/// The rows of a single-process run and the source they come from: the captured range's
/// kernels when `range` is named and the SQLite export holds it, else `cuda_gpu_kern_sum`.
pub(crate) fn load(
    run: &RunDir,
    range: Option<&str>,
) -> Result<Option<(Vec<KernelSum>, String)>, Error> {
    let sqlite = run.nsys_sqlite(None);
    if let (Some(name), true) = (range, sqlite.is_file()) {
        let db = NsysDb::open(&sqlite)?;
        let rows = from_db(&db, name)?;
        if !rows.is_empty() {
            return Ok(Some((rows, source(run))));
        }
    }
    let csv = run.kern_sum(None);
    if !csv.is_file() {
        return Ok(None);
    }
    Ok(Some((read_kernels(&csv)?, KERN_SUM.to_string())))
}

/// The captured range's kernels from an open export (empty: the range is not in it),
/// streaming its launches.
pub fn from_db(db: &NsysDb, name: &str) -> Result<Vec<KernelSum>, Error> {
    let ranges = db.ranges()?;
    let mut scan = crate::analysis::scan::Scan::new(&ranges, Some(name));
    db.for_each_launch(&mut scan)?;
    Ok(scan.kernel_rows(&db.strings()?))
}

/// How the reports name the rows' source.
pub(crate) fn source(run: &RunDir) -> String {
    run.relative(&run.nsys_sqlite(None))
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
