//! A step's tensor-core rate: the tensor operations of its kernels ncu measured (ncu's rates
//! times nsys's durations, per instance, as the floors count them) over the step's time,
//! against the GPU's dense BF16 tensor peak; and how much of its kernel time ncu classed
//! compute-bound, beside every other class.

use serde::Serialize;

use super::roofline::{Peaks, Point};
use crate::model::{Bound, KernelRecord};

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct TensorRate {
    /// Tensor operations per second over the step, and the peak, in TFLOP/s.
    pub(crate) tflops: f64,
    pub(crate) peak_tflops: f64,
    /// The first over the second, in %.
    pub(crate) pct_of_peak: f64,
    /// The share of the kernel time ncu measured (the operations counted are theirs), in %.
    pub(crate) measured_pct: f64,
    /// The share of the kernel time in kernels ncu classed compute-bound, in %, and whether
    /// that is more than any other class holds.
    pub(crate) compute_bound_pct: f64,
    pub(crate) compute_bound_most: bool,
}

/// The rate of a step of `step_ms` whose range ran `instances` instances of the kernels in
/// `records` (the kernel table, nsys time); None without a tensor peak, a measured kernel or
/// a step time.
pub(crate) fn rate(
    records: &[KernelRecord],
    point: impl Fn(&KernelRecord) -> Option<Point>,
    peaks: &Peaks,
    instances: u64,
    step_ms: f64,
) -> Option<TensorRate> {
    let peak = peaks.tensor_flops.filter(|p| *p > 0.0)?;
    let rows: Vec<&KernelRecord> = records
        .iter()
        .filter(|r| r.gpu_time_pct.is_some())
        .collect();
    let all_ns: f64 = rows.iter().map(|r| r.total_time_ns).sum();
    // FP8 operations count against their own peak, twice the BF16 one: as BF16 time, half.
    let (mut ops, mut at_bf16, mut measured_ns) = (0.0, 0.0, 0.0);
    for r in &rows {
        if let Some(p) = point(r) {
            let secs = r.total_time_ns / 1e9;
            ops += p.tensor_flops * secs;
            at_bf16 +=
                (p.tensor_flops - p.fp8_tensor_flops / super::roofline::FP8_OVER_BF16) * secs;
            measured_ns += r.total_time_ns;
        }
    }
    if measured_ns <= 0.0 || instances == 0 || step_ms <= 0.0 || all_ns <= 0.0 {
        return None;
    }
    let per_s = ops / instances as f64 / (step_ms / 1e3);
    let class_ns = |b: Bound| -> f64 {
        rows.iter()
            .filter(|r| r.bound == Some(b))
            .map(|r| r.total_time_ns)
            .sum()
    };
    let compute = class_ns(Bound::Compute);
    let others = [Bound::Memory, Bound::Latency, Bound::Instruction];
    Some(TensorRate {
        tflops: per_s / 1e12,
        peak_tflops: peak / 1e12,
        pct_of_peak: 100.0 * at_bf16 / instances as f64 / (step_ms / 1e3) / peak,
        measured_pct: 100.0 * measured_ns / all_ns,
        compute_bound_pct: 100.0 * compute / all_ns,
        compute_bound_most: compute > 0.0 && others.iter().all(|b| compute > class_ns(*b)),
    })
}
