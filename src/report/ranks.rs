//! Multi-rank runs: each rank's nsys figures, merged kernel totals, stragglers per NVTX range
//! and the share of GPU time in NCCL kernels.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::error::Error;
use crate::parse::nsys::{read_kernels, read_ranges, KernelSum, RangeSum};

#[derive(Debug, Clone, Serialize)]
pub struct RankData {
    pub rank: u32,
    pub kernel_time_ns: f64,
    pub launches: u64,
    pub nccl_time_ns: f64,
    pub nccl_pct: f64,
    /// NVTX range name -> total wall time on this rank.
    pub ranges: BTreeMap<String, f64>,
    #[serde(skip)]
    pub kernels: Vec<KernelSum>,
}

pub fn is_nccl(name: &str) -> bool {
    name.to_ascii_lowercase().contains("nccl")
}

/// Every `nsys/summary.rank<N>_cuda_gpu_kern_sum.csv`, in rank order.
pub fn load(nsys_dir: &Path) -> Result<Vec<RankData>, Error> {
    let mut ranks: Vec<u32> = std::fs::read_dir(nsys_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix("summary.rank")?
                .strip_suffix("_cuda_gpu_kern_sum.csv")?
                .parse()
                .ok()
        })
        .collect();
    ranks.sort();
    ranks
        .into_iter()
        .map(|rank| {
            let kernels =
                read_kernels(&nsys_dir.join(format!("summary.rank{rank}_cuda_gpu_kern_sum.csv")))?;
            let nvtx = nsys_dir.join(format!("summary.rank{rank}_nvtx_sum.csv"));
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
                ranges: by_name,
                kernels,
            })
        })
        .collect()
}

/// All ranks' kernels summed per name, ordered by total time: the run's kernel table.
pub fn merged(ranks: &[RankData]) -> Vec<KernelSum> {
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
pub fn straggler(ranks: &[RankData], range: &str) -> Option<(f64, u32, f64)> {
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
}
