//! Roofline figures from ncu's raw metrics: achieved FLOP/s (FMA counts twice), DRAM bytes/s,
//! arithmetic intensity, and the device's peaks from ncu's own peak metrics.
//!
//! ncu's peaks are per cycle times the clock each kernel ran at, and the clock varies from
//! kernel to kernel (`--clock-control none`: 1.82-1.98 GHz SM on one H100 run). The device's
//! peaks are the highest over every measured kernel, so the same kernels in another order
//! (a warm re-run served from the metrics cache) give the same peaks.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Peaks {
    pub(crate) fp32_flops: f64,
    pub(crate) fp16_flops: f64,
    pub(crate) fp64_flops: f64,
    /// Dense BF16 tensor-core peak (FP32 accumulate), where ncu reports it.
    pub(crate) tensor_flops: Option<f64>,
    pub(crate) dram_bytes_per_s: f64,
    /// The SM and DRAM clocks the peaks are at (the highest any measured kernel ran at), in Hz.
    #[serde(default)]
    pub(crate) sm_hz: f64,
    #[serde(default)]
    pub(crate) dram_hz: f64,
    /// How many kernels' peak metrics they are the highest of.
    #[serde(default)]
    pub(crate) kernels: usize,
}

impl Peaks {
    /// The roof a kernel's work runs against: the tensor cores when most of its operations are
    /// tensor operations, else FP16, FP64 or FP32 by the same rule.
    pub(crate) fn roof_for(&self, p: &Point) -> (&'static str, f64) {
        let bf16 = self.tensor_flops.unwrap_or(0.0);
        let candidates = [
            ("BF16 tensor", p.tensor_flops - p.fp8_tensor_flops, bf16),
            (
                "FP8 tensor",
                p.fp8_tensor_flops,
                self.fp8_tensor_flops().unwrap_or(0.0),
            ),
            ("FP16", p.fp16_flops, self.fp16_flops),
            ("FP64", p.fp64_flops, self.fp64_flops),
            ("FP32", p.fp32_flops, self.fp32_flops),
        ];
        candidates
            .iter()
            .filter(|(_, _, peak)| *peak > 0.0)
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(l, _, peak)| (*l, *peak))
            .unwrap_or(("FP32", self.fp32_flops))
    }

    /// The dense FP8 tensor peak: FP8_OVER_BF16 times the BF16 one.
    pub(crate) fn fp8_tensor_flops(&self) -> Option<f64> {
        self.tensor_flops.map(|t| t * FP8_OVER_BF16)
    }

    /// The arithmetic intensity (FLOP/byte) where FP32 stops being memory-bound.
    pub(crate) fn ridge_fp32(&self) -> f64 {
        self.fp32_flops / self.dram_bytes_per_s
    }
}

/// Dense FP8 tensor operations run at twice the dense BF16 rate on every GPU with FP8 tensor
/// cores (NVIDIA's H100, H200, L40S, L4 and B200 datasheets); ncu reports no FP8 peak metric.
pub(crate) const FP8_OVER_BF16: f64 = 2.0;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Point {
    pub(crate) fp32_flops: f64,
    pub(crate) fp16_flops: f64,
    pub(crate) fp64_flops: f64,
    /// Tensor-core operations per second (all source types), and those of an FP8 source.
    pub(crate) tensor_flops: f64,
    #[serde(default, skip_serializing_if = "none")]
    pub(crate) fp8_tensor_flops: f64,
    pub(crate) dram_bytes_per_s: f64,
    /// Tensor pipe busy, % of peak, where ncu measured it.
    pub(crate) tensor_pipe_pct: Option<f64>,
}

fn none(v: &f64) -> bool {
    *v == 0.0
}

impl Point {
    pub(crate) fn flops(&self) -> f64 {
        self.fp32_flops + self.fp16_flops + self.fp64_flops + self.tensor_flops
    }
    /// FLOP per DRAM byte; None without DRAM traffic.
    pub(crate) fn intensity(&self) -> Option<f64> {
        (self.dram_bytes_per_s > 0.0).then(|| self.flops() / self.dram_bytes_per_s)
    }
}

/// Metric values with their units, as ncu exported them.
pub(crate) struct Metrics<'a> {
    pub(crate) values: &'a BTreeMap<String, f64>,
    pub(crate) units: &'a BTreeMap<String, String>,
}

impl Metrics<'_> {
    /// The value in base units (bytes, hertz, instructions): `Gbyte/s` x1e9, `Ghz` x1e9,
    /// `Kbyte/cycle` x1e3.
    pub(crate) fn get(&self, name: &str) -> Option<f64> {
        let v = *self.values.get(name)?;
        Some(v * self.units.get(name).map(|u| unit_scale(u)).unwrap_or(1.0))
    }
    fn sum(&self, names: &[(&str, f64)]) -> Option<f64> {
        let mut any = false;
        let mut total = 0.0;
        for (n, w) in names {
            if let Some(v) = self.get(n) {
                any = true;
                total += w * v;
            }
        }
        any.then_some(total)
    }
}

pub(crate) fn unit_scale(unit: &str) -> f64 {
    let mut chars = unit.chars();
    let factor = match chars.next() {
        Some('K') => 1e3,
        Some('M') => 1e6,
        Some('G') => 1e9,
        Some('T') => 1e12,
        _ => return 1.0,
    };
    // A prefix only when a lowercase unit follows (Kbyte, Ghz), not a unit of its own.
    if chars.next().is_some_and(|c| c.is_ascii_lowercase()) {
        factor
    } else {
        1.0
    }
}

fn op(kind: &str) -> String {
    format!("smsp__sass_thread_inst_executed_op_{kind}_pred_on.sum.per_cycle_elapsed")
}

/// The source type of a `sm__ops_path_tensor_src_<type>.sum.per_second` metric
/// (`bf16_dst_fp32`, `fp16`, ...); None for any other metric.
pub(crate) fn tensor_source(metric: &str) -> Option<&str> {
    metric
        .strip_prefix("sm__ops_path_tensor_src_")?
        .strip_suffix(".sum.per_second")
}

/// Achieved rates of one kernel; None when the roofline metrics are missing.
pub(crate) fn point(m: &Metrics) -> Option<Point> {
    let hz = m.get("smsp__cycles_elapsed.avg.per_second")?;
    let per_cycle = |p: &str| {
        m.sum(&[
            (&op(&format!("{p}add")), 1.0),
            (&op(&format!("{p}mul")), 1.0),
            (&op(&format!("{p}fma")), 2.0),
        ])
    };
    // `sm__ops_path_tensor_src_<type>` partitions tensor work by source type; the
    // `sm__ops_path_tensor_op_*` family splits the same work by instruction, so only one counts.
    let tensor_flops = m
        .values
        .keys()
        .filter(|k| tensor_source(k).is_some())
        .filter_map(|k| m.get(k))
        .sum();
    let fp8_tensor_flops = m
        .values
        .keys()
        .filter(|k| tensor_source(k).is_some_and(|t| t.starts_with("fp8")))
        .filter_map(|k| m.get(k))
        .sum();
    Some(Point {
        tensor_flops,
        fp8_tensor_flops,
        fp32_flops: per_cycle("f")? * hz,
        fp16_flops: per_cycle("h").unwrap_or(0.0) * hz,
        fp64_flops: per_cycle("d").unwrap_or(0.0) * hz,
        dram_bytes_per_s: m.get("dram__bytes.sum.per_second")?,
        tensor_pipe_pct: m.get("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"),
    })
}

/// The device's peaks over every kernel that has ncu's peak metrics: each the highest of them,
/// so that neither the order of the kernels nor which comes first changes them. None where no
/// kernel has them.
pub(crate) fn device_peaks<'a>(kernels: impl Iterator<Item = Metrics<'a>>) -> Option<Peaks> {
    // NaN never wins a comparison (`f64::max` keeps the other side), so input cannot make the
    // result depend on the order either.
    let top = |a: f64, b: f64| a.max(b);
    kernels.filter_map(|m| peaks(&m)).reduce(|a, b| Peaks {
        fp32_flops: top(a.fp32_flops, b.fp32_flops),
        fp16_flops: top(a.fp16_flops, b.fp16_flops),
        fp64_flops: top(a.fp64_flops, b.fp64_flops),
        tensor_flops: match (a.tensor_flops, b.tensor_flops) {
            (Some(x), Some(y)) => Some(top(x, y)),
            (x, y) => x.or(y),
        },
        dram_bytes_per_s: top(a.dram_bytes_per_s, b.dram_bytes_per_s),
        sm_hz: top(a.sm_hz, b.sm_hz),
        dram_hz: top(a.dram_hz, b.dram_hz),
        kernels: a.kernels + b.kernels,
    })
}

/// One kernel's peaks: ncu's peak metrics at the clocks that kernel ran at.
fn peaks(m: &Metrics) -> Option<Peaks> {
    let sm_hz = m.get("sm__cycles_elapsed.avg.per_second")?;
    let dram_hz = m.get("dram__cycles_elapsed.avg.per_second")?;
    // The roofline sections' derived peaks (`..._x2`: an FMA is two operations, `_x4` a packed
    // half FMA four); without those sections, the same from the instruction peak itself.
    let peak = |op: &str, x: f64| {
        m.get(&format!(
            "derived__sm__sass_thread_inst_executed_op_{op}_pred_on_x{x}"
        ))
        .or_else(|| {
            m.get(&format!(
                "sm__sass_thread_inst_executed_op_{op}_pred_on.sum.peak_sustained"
            ))
            .map(|v| v * x)
        })
    };
    Some(Peaks {
        fp32_flops: peak("ffma", 2.0)? * sm_hz,
        fp16_flops: peak("hfma", 4.0).unwrap_or(0.0) * sm_hz,
        fp64_flops: peak("dfma", 2.0).unwrap_or(0.0) * sm_hz,
        // Dense (sparsity off) BF16: wgmma on Hopper, mma before it.
        tensor_flops: [
            "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained_elapsed.per_second",
            "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained_elapsed.per_second",
        ]
        .iter()
        .find_map(|n| m.get(n)),
        dram_bytes_per_s: m.get("dram__bytes.sum.peak_sustained")? * dram_hz,
        sm_hz,
        dram_hz,
        kernels: 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::ncu::read_raw;

    #[test]
    fn h100_peaks_and_points_from_the_real_export() {
        let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/ncu/decode_raw.csv");
        let r = read_raw(&p).unwrap();
        let k = &r.kernels[0];
        let m = Metrics {
            values: &k.metrics,
            units: &r.units,
        };
        let peaks = peaks(&m).unwrap();
        // H100 SXM: ~67 TFLOP/s FP32 (non-tensor), ~3.35 TB/s HBM3.
        assert!(
            (60e12..70e12).contains(&peaks.fp32_flops),
            "{}",
            peaks.fp32_flops
        );
        assert!(
            (3.0e12..3.5e12).contains(&peaks.dram_bytes_per_s),
            "{}",
            peaks.dram_bytes_per_s
        );
        assert!((peaks.fp16_flops / peaks.fp32_flops - 2.0).abs() < 0.01);
        // ~990 TFLOP/s dense BF16 on the tensor cores.
        let tensor = peaks.tensor_flops.unwrap();
        assert!((9e14..1.1e15).contains(&tensor), "{tensor}");
        let nvjet = r
            .kernels
            .iter()
            .find(|k| k.name.starts_with("nvjet"))
            .unwrap();
        let pt = point(&Metrics {
            values: &nvjet.metrics,
            units: &r.units,
        })
        .unwrap();
        assert!(pt.tensor_flops > 1e12, "{}", pt.tensor_flops);
        assert!(peaks.ridge_fp32() > 10.0 && peaks.ridge_fp32() < 30.0);
        for k in &r.kernels {
            let pt = point(&Metrics {
                values: &k.metrics,
                units: &r.units,
            })
            .unwrap();
            assert!(pt.flops() >= 0.0 && pt.dram_bytes_per_s >= 0.0);
            assert!(pt.flops() < peaks.fp32_flops + peaks.fp16_flops + tensor);
        }
    }

    /// The same kernels in another order give the same peaks (a warm re-run lists the cached
    /// kernels in another order): the highest of each, not the first kernel's, whose clock is
    /// one of many (ncu ran with `--clock-control none`).
    #[test]
    fn the_same_kernels_in_another_order_give_the_same_peaks() {
        let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("examples/sample-run-hf-static/ncu/decode_raw.csv");
        let r = read_raw(&p).unwrap();
        let of = |ks: &[&crate::parse::ncu::NcuKernel]| {
            device_peaks(ks.iter().map(|k| Metrics {
                values: &k.metrics,
                units: &r.units,
            }))
            .unwrap()
        };
        let mut ks: Vec<&crate::parse::ncu::NcuKernel> = r.kernels.iter().collect();
        let first = of(&ks[..1]);
        let all = of(&ks);
        ks.reverse();
        assert_eq!(of(&ks), all);
        let third = ks.len() / 3;
        ks.rotate_left(third);
        assert_eq!(of(&ks), all);
        // In this run the first kernel's clock is not the highest: the old rule's answer
        // depended on which came first.
        assert!(first.sm_hz < all.sm_hz, "{first:?} {all:?}");
        assert!(all.tensor_flops.unwrap() > first.tensor_flops.unwrap());
        assert_eq!(all.kernels, r.kernels.len());
        // Every kernel's own peaks are at most the device's.
        for k in &r.kernels {
            let own = of(&[k]);
            assert!(own.fp32_flops <= all.fp32_flops && own.sm_hz <= all.sm_hz);
            assert!(own.dram_bytes_per_s <= all.dram_bytes_per_s);
        }
    }

    /// The capture made with only the reports' metrics (`ncu.set: report`, no section set)
    /// gives the same peaks from the instruction peaks as the roofline sections' derived ones.
    #[test]
    fn the_reports_own_metrics_give_the_same_peaks() {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/ncu");
        let own = read_raw(&dir.join("report_metrics_raw.csv")).unwrap();
        let sections = read_raw(&dir.join("decode_raw.csv")).unwrap();
        let peaks_of = |r: &crate::parse::ncu::NcuReport| {
            peaks(&Metrics {
                values: &r.kernels[0].metrics,
                units: &r.units,
            })
            .unwrap()
        };
        let (a, b) = (peaks_of(&own), peaks_of(&sections));
        assert!(!own.kernels[0]
            .metrics
            .keys()
            .any(|k| k.starts_with("derived__")));
        assert!((a.fp16_flops / a.fp32_flops - b.fp16_flops / b.fp32_flops).abs() < 1e-9);
        assert!(
            (a.fp32_flops / b.fp32_flops - 1.0).abs() < 0.05,
            "{a:?} {b:?}"
        );
        assert!(a.tensor_flops.is_some());
        assert_eq!((own.rows, own.kernels.len()), (34, 30));
        for k in &own.kernels {
            let m = Metrics {
                values: &k.metrics,
                units: &own.units,
            };
            assert!(point(&m).is_some(), "{}", k.name);
        }
    }

    #[test]
    fn units_scale_only_with_a_prefix() {
        assert_eq!(unit_scale("Gbyte/s"), 1e9);
        assert_eq!(unit_scale("Kbyte/cycle"), 1e3);
        assert_eq!(unit_scale("Ghz"), 1e9);
        assert_eq!(unit_scale("inst/cycle"), 1.0);
        assert_eq!(unit_scale("%"), 1.0);
        assert_eq!(unit_scale("M"), 1.0);
    }
}
