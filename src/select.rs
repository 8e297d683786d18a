//! Which kernels ncu profiles: the top `ncu.top_n` by nsys total time, then more until their
//! share of kernel time reaches `ncu.coverage`, at most `ncu.max_kernels`.

use serde::{Deserialize, Serialize};

use crate::parse::nsys::KernelSum;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Selection {
    /// Indices into the nsys kernel list (its rank order), chosen.
    pub chosen: Vec<usize>,
    /// Share of kernel time the chosen kernels hold, in %.
    pub planned_coverage_pct: f64,
    /// Indices left out.
    pub left_out: Vec<usize>,
}

pub fn select(kernels: &[KernelSum], top_n: usize, coverage: f64, max_kernels: usize) -> Selection {
    let total: f64 = kernels.iter().map(|k| k.total_ns).sum();
    let mut order: Vec<usize> = (0..kernels.len()).collect();
    // nsys lists kernels by time already; sort anyway so the rule does not depend on it.
    order.sort_by(|a, b| kernels[*b].total_ns.total_cmp(&kernels[*a].total_ns));
    let target = coverage.clamp(0.0, 1.0) * total;
    let mut chosen = Vec::new();
    let mut covered = 0.0;
    for i in order.iter().copied() {
        if chosen.len() >= max_kernels {
            break;
        }
        // Compare with a relative tolerance: 95% of a sum of floats must count as reached.
        let reached = covered >= target * (1.0 - 1e-12);
        if chosen.len() >= top_n && reached {
            break;
        }
        chosen.push(i);
        covered += kernels[i].total_ns;
    }
    let left_out = order.into_iter().filter(|i| !chosen.contains(i)).collect();
    Selection {
        planned_coverage_pct: if total > 0.0 {
            100.0 * covered / total
        } else {
            0.0
        },
        chosen,
        left_out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn real() -> Vec<KernelSum> {
        let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/nsys/summary_cuda_gpu_kern_sum.csv");
        crate::parse::nsys::read_kernels(&p).unwrap()
    }

    #[test]
    fn coverage_on_the_real_capture() {
        let k = real();
        // Cumulative shares: ... 94.8% after 17 kernels, 96.1% after 18.
        let s = select(&k, 10, 0.95, 50);
        assert_eq!(s.chosen.len(), 18);
        assert!(
            s.planned_coverage_pct >= 95.0 && s.planned_coverage_pct < 96.5,
            "{}",
            s.planned_coverage_pct
        );
        assert_eq!(s.left_out.len(), 8);
        assert_eq!(s.chosen[0], 0);
    }

    #[test]
    fn top_n_is_a_floor_and_max_kernels_a_cap() {
        let k = real();
        assert_eq!(select(&k, 10, 0.0, 50).chosen.len(), 10);
        assert_eq!(select(&k, 10, 1.0, 50).chosen.len(), 26);
        assert_eq!(select(&k, 10, 1.0, 5).chosen.len(), 5);
        assert_eq!(select(&k, 0, 0.5, 50).chosen.len(), 6);
        assert!(select(&[], 10, 0.95, 50).chosen.is_empty());
    }
}
