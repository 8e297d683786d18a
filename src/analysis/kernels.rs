//! The kernel table's rows. With an NVTX-gated capture they are the kernels launched inside
//! the captured range, over every instance of it, from the SQLite export (as nsys's
//! `nvtx_kern_sum` lists a range's kernels): a capture that runs on past the range (every
//! decode step, `capture_range_end=none`) holds other ranges' kernels too, which
//! `cuda_gpu_kern_sum` would mix in. Without a range or a SQLite export, `cuda_gpu_kern_sum`.

use std::collections::HashMap;

use crate::analysis::ranges::kernels_of;
use crate::error::Error;
use crate::parse::nsys::{read_kernels, KernelSum};
use crate::parse::sqlite::{Launch, NsysDb, NvtxRange};
use crate::rundir::{RunDir, KERN_SUM};

/// Rows as `nsys stats` computes them from a kernel's durations: total, count, mean, median,
/// min, max and sample standard deviation.
pub fn summarize(name: String, mut ns: Vec<i64>, total_all: f64) -> KernelSum {
    ns.sort_unstable();
    let n = ns.len();
    let total: f64 = ns.iter().map(|&d| d as f64).sum();
    let avg = total / n.max(1) as f64;
    let med = match n {
        0 => 0.0,
        _ if n % 2 == 1 => ns[n / 2] as f64,
        _ => (ns[n / 2 - 1] + ns[n / 2]) as f64 / 2.0,
    };
    let var = if n > 1 {
        ns.iter().map(|&d| (d as f64 - avg).powi(2)).sum::<f64>() / (n - 1) as f64
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
        instances: n as u64,
        avg_ns: avg,
        med_ns: Some(med),
        min_ns: ns.first().map(|&d| d as f64),
        max_ns: ns.last().map(|&d| d as f64),
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
    let per = kernels_of(name, ranges, launches);
    let total: f64 = per.iter().flat_map(|(_, d)| d).map(|&d| d as f64).sum();
    let mut rows: Vec<KernelSum> = per
        .into_iter()
        .map(|(id, d)| {
            let name = strings
                .get(&id)
                .cloned()
                .unwrap_or_else(|| format!("#{id}"));
            summarize(name, d, total)
        })
        .collect();
    rows.sort_by(|a, b| b.total_ns.total_cmp(&a.total_ns).then(a.name.cmp(&b.name)));
    rows
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

/// The captured range's kernels from an open export (empty: the range is not in it).
pub fn from_db(db: &NsysDb, name: &str) -> Result<Vec<KernelSum>, Error> {
    Ok(in_range(
        name,
        &db.ranges()?,
        &db.launches()?,
        &db.strings()?,
    ))
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
