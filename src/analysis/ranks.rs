//! Multi-rank runs: each rank's nsys figures, merged kernel totals, stragglers per NVTX range
//! and the share of GPU time in NCCL kernels.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::error::Error;
use crate::model::is_nccl;
use crate::parse::nsys::{read_kernels, read_ranges, KernelSum, RangeSum};
use crate::parse::sqlite::NsysDb;
use crate::rundir::RunDir;

#[derive(Debug, Clone, Serialize)]
pub(crate) struct RankData {
    pub(crate) rank: u32,
    pub(crate) kernel_time_ns: f64,
    pub(crate) launches: u64,
    pub(crate) nccl_time_ns: f64,
    pub(crate) nccl_pct: f64,
    /// Of `nccl_time_ns`, the time spent waiting for other ranks to arrive (see `nccl_waits`);
    /// absent without every rank's SQLite export or when ranks ran different collectives.
    pub(crate) nccl_wait_ns: Option<f64>,
    /// NVTX range name -> total wall time on this rank.
    pub(crate) ranges: BTreeMap<String, f64>,
    #[serde(skip)]
    pub(crate) kernels: Vec<KernelSum>,
}

/// Every `nsys/summary.rank<N>_cuda_gpu_kern_sum.csv`, in rank order.
pub(crate) fn load(run: &RunDir) -> Result<Vec<RankData>, Error> {
    let mut ranks = load_summaries(run)?;
    let durations: Option<Vec<Vec<i64>>> = ranks
        .iter()
        .map(|r| nccl_durations(&run.nsys_sqlite(Some(r.rank))))
        .collect();
    if let Some(waits) = durations.and_then(|d| nccl_waits(&d)) {
        for (r, w) in ranks.iter_mut().zip(waits) {
            r.nccl_wait_ns = Some(w);
        }
    }
    Ok(ranks)
}

/// One rank's NCCL kernel durations; None (with a warning) when its export is missing or
/// unreadable, since the wait analysis is an extra the other reports do not need.
fn nccl_durations(sqlite: &Path) -> Option<Vec<i64>> {
    if !sqlite.is_file() {
        return None;
    }
    match NsysDb::open(sqlite).and_then(|db| db.nccl_durations()) {
        Ok(d) => Some(d),
        Err(e) => {
            tracing::warn!("NCCL wait time not computed: {e}");
            None
        }
    }
}

/// Time each rank spent in NCCL kernels waiting for its peers. A collective's kernel runs from
/// when its rank arrives until the data has moved, so the last rank to arrive waits least: the
/// shortest duration of the i-th collective over all ranks approximates the transfer, and the
/// rest of each rank's duration is waiting for a late peer. Collectives are matched by order,
/// so this needs every rank to have run the same number of them.
pub(crate) fn nccl_waits(durations: &[Vec<i64>]) -> Option<Vec<f64>> {
    let n = durations.first()?.len();
    if n == 0 || durations.iter().any(|d| d.len() != n) {
        return None;
    }
    let fastest: Vec<i64> = (0..n)
        .map(|i| durations.iter().map(|d| d[i]).min().unwrap_or(0))
        .collect();
    Some(
        durations
            .iter()
            .map(|d| d.iter().zip(&fastest).map(|(x, f)| (x - f) as f64).sum())
            .collect(),
    )
}

fn load_summaries(run: &RunDir) -> Result<Vec<RankData>, Error> {
    run.ranks()
        .into_iter()
        .map(|rank| {
            let kernels = read_kernels(&run.kern_sum(Some(rank)))?;
            let nvtx = run.nsys_stats("nvtx_sum", Some(rank));
            let ranges: Vec<RangeSum> = if nvtx.is_file() {
                read_ranges(&nvtx)?
            } else {
                Vec::new()
            };
            // fold from +0.0: an empty f64 sum is -0.0, which JSON would keep.
            let total = kernels.iter().map(|k| k.total_ns).fold(0.0, |a, b| a + b);
            let nccl = kernels
                .iter()
                .filter(|k| is_nccl(&k.name))
                .map(|k| k.total_ns)
                .fold(0.0, |a, b| a + b);
            let mut by_name = BTreeMap::new();
            for r in &ranges {
                *by_name.entry(r.name().to_string()).or_insert(0.0) += r.total_ns;
            }
            Ok(RankData {
                rank,
                kernel_time_ns: total,
                launches: kernels.iter().map(|k| k.instances).sum(),
                nccl_time_ns: nccl,
                nccl_pct: if total > 0.0 {
                    100.0 * nccl / total
                } else {
                    0.0
                },
                nccl_wait_ns: None,
                ranges: by_name,
                kernels,
            })
        })
        .collect()
}

/// All ranks' kernels summed per name, ordered by total time: the run's kernel table.
pub(crate) fn merged(ranks: &[RankData]) -> Vec<KernelSum> {
    let mut by: BTreeMap<&str, KernelSum> = BTreeMap::new();
    for r in ranks {
        for k in &r.kernels {
            let e = by.entry(k.name.as_str()).or_insert_with(|| KernelSum {
                name: k.name.clone(),
                time_pct: None,
                total_ns: 0.0,
                instances: 0,
                avg_ns: 0.0,
                med_ns: None,
                min_ns: None,
                max_ns: None,
                stddev_ns: None,
            });
            e.total_ns += k.total_ns;
            e.instances += k.instances;
        }
    }
    let mut out: Vec<KernelSum> = by.into_values().collect();
    for k in &mut out {
        k.avg_ns = k.total_ns / k.instances.max(1) as f64;
    }
    out.sort_by(|a, b| b.total_ns.total_cmp(&a.total_ns).then(a.name.cmp(&b.name)));
    out
}

/// For one range: (median wall time over ranks, slowest rank, its wall time).
pub(crate) fn straggler(ranks: &[RankData], range: &str) -> Option<(f64, u32, f64)> {
    let mut walls: Vec<(f64, u32)> = ranks
        .iter()
        .filter_map(|r| Some((*r.ranges.get(range)?, r.rank)))
        .collect();
    if walls.is_empty() {
        return None;
    }
    walls.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = walls.len();
    let median = if n % 2 == 1 {
        walls[n / 2].0
    } else {
        (walls[n / 2 - 1].0 + walls[n / 2].0) / 2.0
    };
    let (slow, rank) = walls[n - 1];
    Some((median, rank, slow))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(r: u32, decode: f64, kernels: &[(&str, f64)]) -> RankData {
        RankData {
            rank: r,
            kernel_time_ns: kernels.iter().map(|k| k.1).sum(),
            launches: kernels.len() as u64,
            nccl_time_ns: 0.0,
            nccl_pct: 0.0,
            nccl_wait_ns: None,
            ranges: [("decode".to_string(), decode)].into_iter().collect(),
            kernels: kernels
                .iter()
                .map(|(n, t)| KernelSum {
                    name: n.to_string(),
                    time_pct: None,
                    total_ns: *t,
                    instances: 1,
                    avg_ns: *t,
                    med_ns: None,
                    min_ns: None,
                    max_ns: None,
                    stddev_ns: None,
                })
                .collect(),
        }
    }

    #[test]
    fn merge_sums_per_name_and_stragglers_are_found() {
        let r = [
            rank(0, 100.0, &[("a", 5.0), ("nccl_x", 1.0)]),
            rank(1, 130.0, &[("a", 6.0)]),
            rank(2, 110.0, &[]),
        ];
        let m = merged(&r);
        assert_eq!(
            (m[0].name.as_str(), m[0].total_ns, m[0].instances),
            ("a", 11.0, 2)
        );
        assert_eq!(straggler(&r, "decode"), Some((110.0, 1, 130.0)));
        assert!(is_nccl("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
    }

    #[test]
    fn the_fastest_rank_of_each_collective_sets_its_transfer_time() {
        let w = nccl_waits(&[vec![50, 10, 7], vec![5, 30, 7]]).unwrap();
        assert_eq!(w, vec![45.0, 20.0]);
        assert_eq!(nccl_waits(&[vec![1, 2], vec![1]]), None);
        assert_eq!(nccl_waits(&[vec![], vec![]]), None);
    }

    #[test]
    fn the_real_two_gpu_run_waits_on_rank_0() {
        let dir =
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/sample-run-2gpu");
        let r = load(&RunDir::open(&dir).unwrap()).unwrap();
        let (w0, w1) = (r[0].nccl_wait_ns.unwrap(), r[1].nccl_wait_ns.unwrap());
        // Rank 0 reaches every all-reduce ~30 ms before rank 1 (8 of them, 258 ms in all).
        assert!(
            w0 > 0.99 * r[0].nccl_time_ns,
            "{w0} of {}",
            r[0].nccl_time_ns
        );
        assert_eq!(w1, 0.0);
    }
}
