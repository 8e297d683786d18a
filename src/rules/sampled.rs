//! The rules of nsys's sampled GPU metrics: when a sampled figure and class are given, when an
//! earlier run's are reused, and when they are held against ncu's.

use super::{Rule, BOUND_PCT};

/// A sampled bound class needs this share of the launches' time in sample windows that saw
/// the GPU working; below it the class is not given.
pub(crate) const SAMPLED_MIN_COVERAGE_PCT: f64 = 80.0;

/// A launch configuration's sampled figures are reused from an earlier run of the same command
/// only while its mean duration stays within this % of that run's: a kernel whose time moved
/// (new code, other inputs) is sampled again.
pub(crate) const SAMPLED_REUSE: Rule = Rule {
    id: "sampled_reuse",
    text: "a launch configuration takes the sampled figures of the last sampled run of the same command, GPU and settings when that run saw it and its mean duration differs from that run's by at most 15%; otherwise it has none, and when such configurations hold 5% or more of the kernel time the next run samples again",
    threshold: 15.0,
};

/// The share of the kernel time (%) left without reused figures at which the next run samples
/// again (below it, the few configurations stay unsampled and say so, rather than every other
/// run sampling: the static decode's warm re-runs on H100s left 2 configurations, about 1%).
pub(crate) const SAMPLED_REUSE_GAP_PCT: f64 = 5.0;

/// A top kernel's class from nsys's GPU-metrics samples, where ncu gave none.
pub(crate) const SAMPLED_BOUND: Rule = Rule {
    id: "sampled_bound",
    text: "sampled by nsys over every launch (each sample over its window's GR Active share): memory-bound when DRAM read + write bandwidth >= 60% of peak and above SM issue and tensor activity; compute-bound when SM issue or tensor activity >= 60% and at or above DRAM; otherwise latency-bound; no class below 80% coverage",
    threshold: BOUND_PCT,
};

/// A sample averages everything the GPU did in its window, so a kernel's sampled figures are
/// its own only as far as its launches fill the windows they fall in. A launch of d in windows
/// of W takes each window's value weighed by its overlap ov, and is sum(ov^2) / (W d) of the
/// window time its figures average: at least half for d >= W, however the launch falls; for
/// d < W at most d / W, down to d / 2W across a window edge. The mean launch, not the median,
/// is held against the window: the figures are weighed by time, and the mean is what the
/// tables print. On census-kv (H200, 50 kHz, 20 us windows) the 2-12 us GEMMs read "latency"
/// at 100% coverage, their class decided by their neighbours.
pub(crate) const SAMPLED_WINDOW: Rule = Rule {
    id: "sampled_window",
    text: "a kernel's or launch configuration's sampled DRAM, SM issue and tensor figures and its sampled bound class are given only where its launches last on average at least one sample window, the median spacing of the samples: each sample averages all the GPU did in its window, and a launch at least one window long is at least half of the window time its figures average, while a shorter one can be far less, its neighbours' work the rest; a DRAM figure of such a kernel that differs from ncu's is the window's, not a fault of ncu's replay",
    threshold: 1.0,
};

/// How many of the kernels too short for the sample window a finding names, largest first.
pub(crate) const SAMPLED_WINDOW_NAMED: usize = 3;

/// Sampled and ncu DRAM figures of one launch configuration further apart than measured: on
/// the committed H100 captures the largest difference was 5.5 points (eager) and 9.8 (CUDA
/// graphs) for configurations of >= 5% of the time.
pub(crate) const SAMPLED_DISAGREES: Rule = Rule {
    id: "sampled_disagrees",
    text: "a launch configuration's DRAM figure sampled by nsys and ncu's differ by more than 15 points of % of peak",
    threshold: 15.0,
};

/// A launch configuration's sampled figures are compared with ncu's when it holds this much of
/// the range's time.
pub(crate) const COMPARED_MIN_SHARE_PCT: f64 = 5.0;
