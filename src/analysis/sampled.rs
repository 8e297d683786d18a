//! Sampled GPU metrics (nsys `--gpu-metrics-*`) attributed to kernel launches: every launch of
//! the range, each launch configuration, for almost no cost beside ncu's replay of a few.
//!
//! A sample is the average of its window, which starts at its timestamp and ends at the next
//! sample (never stretched across a gap: a window lasts at most one sampling period). In an
//! eager decode step the GPU idles between kernels, so a window's DRAM share is diluted by the
//! idle part; dividing by the window's GR Active share gives the rate while the GPU worked
//! (measured on an H100 against ncu: a 5 us GEMM read 9% raw, 29% normalized, 27% in ncu).
//! Each launch takes every window it overlaps, weighed by the overlap. Windows in which the GPU
//! reads as idle say nothing of the launch: that time is left uncovered, and coverage says so.
//! A window's counters are also its neighbours' work: a kernel or launch configuration whose
//! launches are shorter on average than the window gets no class (rules::SAMPLED_WINDOW), its
//! figures kept for the comparison with ncu and marked so.

use std::collections::HashMap;
use std::sync::Arc;

use crate::model::{
    Bound, KernelRecord, SampledConfig, SampledFigures, SampledKernel, ShortLaunches,
};
use crate::parse::ncu::NcuReport;
use crate::parse::sqlite::Sample;

const GR: usize = 0;
pub(crate) const DRAM_READ: usize = 1;
pub(crate) const DRAM_WRITE: usize = 2;
const SM_ISSUE: usize = 3;
const TENSOR: usize = 4;

/// The windows of one GPU's samples.
pub(crate) struct Windows<'a> {
    samples: &'a [Sample],
    /// The sampling period: the median spacing of the samples (ns).
    pub(crate) period: i64,
}

impl<'a> Windows<'a> {
    /// None with fewer than two samples: no period to go by.
    pub(crate) fn new(samples: &'a [Sample]) -> Option<Windows<'a>> {
        let mut gaps: Vec<i64> = samples.windows(2).map(|w| w[1].t - w[0].t).collect();
        if gaps.is_empty() {
            return None;
        }
        let mid = gaps.len() / 2;
        let period = *gaps.select_nth_unstable(mid).1;
        (period > 0).then_some(Windows { samples, period })
    }

    /// The end of window `i`: the next sample, or one period after its start across a gap.
    fn end(&self, i: usize) -> i64 {
        let t = self.samples[i].t;
        match self.samples.get(i + 1) {
            Some(n) if n.t - t <= self.period + self.period / 2 => n.t,
            _ => t + self.period,
        }
    }

    /// The length of window `i` (ns).
    pub(crate) fn len(&self, i: usize) -> i64 {
        self.end(i) - self.samples[i].t
    }

    /// Each window that `[start, end)` overlaps, with the overlap and the window's length (ns).
    fn overlapping(&self, start: i64, end: i64, mut f: impl FnMut(&Sample, i64, i64)) {
        let first = self
            .samples
            .partition_point(|s| s.t <= start)
            .saturating_sub(1);
        for i in first..self.samples.len() {
            let s = &self.samples[i];
            if s.t >= end {
                break;
            }
            let ov = end.min(self.end(i)) - start.max(s.t);
            if ov > 0 {
                f(s, ov, self.len(i));
            }
        }
    }

    pub(crate) fn frequency_hz(&self) -> f64 {
        1e9 / self.period as f64
    }
}

/// Running sums of one set of launches.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Acc {
    launches: u64,
    time_ns: f64,
    covered_ns: f64,
    windows: u64,
    /// DRAM (read + write), SM issue, tensor: value x overlap, and the overlap they had.
    sums: [f64; 3],
    seen: [f64; 3],
    /// The longest sample window its launches were read in (ns; 0: none read them).
    window_ns: i64,
}

impl Acc {
    /// One launch over the windows it ran in.
    pub(crate) fn add(&mut self, w: &Windows, start: i64, end: i64) {
        self.launches += 1;
        self.time_ns += (end - start).max(0) as f64;
        self.window_ns = self.window_ns.max(w.period);
        w.overlapping(start, end, |s, ov, _| {
            let gr = s.v[GR];
            // A set without GR Active: the raw window average. A window that saw the GPU idle
            // while the launch ran (timestamps of two clocks) says nothing of it.
            let scale = match gr.is_nan() {
                true => 1.0,
                false if gr < 1.0 => return,
                false => 100.0 / f64::from(gr),
            };
            let ov = ov as f64;
            self.covered_ns += ov;
            self.windows += 1;
            let dram = f64::from(s.v[DRAM_READ]) + f64::from(s.v[DRAM_WRITE]);
            for (k, v) in [dram, f64::from(s.v[SM_ISSUE]), f64::from(s.v[TENSOR])]
                .into_iter()
                .enumerate()
            {
                if v.is_finite() {
                    self.sums[k] += (v * scale).min(100.0) * ov;
                    self.seen[k] += ov;
                }
            }
        });
    }

    /// One launch no sample window covers (its device was not sampled).
    fn uncovered(&mut self, start: i64, end: i64) {
        self.launches += 1;
        self.time_ns += (end - start).max(0) as f64;
    }

    pub(crate) fn merge(&mut self, o: &Acc) {
        self.launches += o.launches;
        self.time_ns += o.time_ns;
        self.covered_ns += o.covered_ns;
        self.windows += o.windows;
        self.window_ns = self.window_ns.max(o.window_ns);
        for k in 0..3 {
            self.sums[k] += o.sums[k];
            self.seen[k] += o.seen[k];
        }
    }

    pub(crate) fn figures(&self) -> SampledFigures {
        let mean = |k: usize| (self.seen[k] > 0.0).then(|| self.sums[k] / self.seen[k]);
        let coverage_pct = match self.time_ns > 0.0 {
            true => 100.0 * self.covered_ns / self.time_ns,
            false => 0.0,
        };
        let mut f = SampledFigures {
            launches: self.launches,
            time_ns: self.time_ns,
            coverage_pct,
            samples: self.windows,
            dram_pct: mean(0),
            sm_issue_pct: mean(1),
            tensor_pct: mean(2),
            bound: None,
            short: None,
        };
        let enough = coverage_pct >= crate::rules::SAMPLED_MIN_COVERAGE_PCT;
        f.bound = match (enough, f.dram_pct, f.compute_pct()) {
            (true, Some(d), Some(c)) => Some(Bound::classify(c, d)),
            _ => None,
        };
        f
    }

    /// A kernel's or launch configuration's figures: [`Acc::figures`], with no class where its
    /// launches are shorter on average than the sample window (rules::SAMPLED_WINDOW). A
    /// range's figures span many windows and take [`Acc::figures`] as they are.
    pub(crate) fn kernel_figures(&self) -> SampledFigures {
        let mut f = self.figures();
        f.short = self.short();
        if f.short.is_some() {
            f.bound = None;
        }
        f
    }

    /// Its mean launch and window, where the mean is under the rule's share of the window.
    fn short(&self) -> Option<ShortLaunches> {
        if self.launches == 0 || self.window_ns <= 0 {
            return None;
        }
        let mean = self.time_ns / self.launches as f64;
        let window = self.window_ns as f64;
        (mean < window * crate::rules::SAMPLED_WINDOW.threshold).then_some(ShortLaunches {
            mean_launch_ns: mean,
            window_ns: window,
        })
    }
}

/// One kernel's sums, over all its launches and per launch configuration (grid, block).
#[derive(Debug, Clone, Default)]
struct KernelAcc {
    all: Acc,
    configs: HashMap<(String, String), Acc>,
}

/// The sampled figures of a range's kernels.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sampled {
    pub(crate) frequency_hz: f64,
    /// Every launch of the range together.
    pub(crate) whole: Option<SampledFigures>,
    kernels: HashMap<String, KernelAcc>,
    /// Each instance of the range, in start order (empty when no range was asked for).
    pub(crate) instances: Vec<InstanceFigures>,
    /// Each launch configuration ncu measured too, largest first (see [`Sampled::beside`]).
    pub(crate) beside_ncu: Vec<Agreement>,
    /// Why the samples could not be attributed (several GPUs sampled, say).
    pub(crate) note: Option<String>,
    /// Why the nsys pass took no samples though sampling is enabled.
    pub(crate) not_sampled: Option<String>,
    /// Which of several sampled GPUs' samples are attributed, and on what evidence.
    pub(crate) picked: Option<String>,
    /// Under a launcher: the rank whose nsys sampled (the others' do not), whose launches
    /// alone the figures cover.
    pub(crate) rank: Option<u32>,
    /// Set when the figures are an earlier run's, reused (this run's nsys pass sampled none).
    pub(crate) reused: Option<reuse::Reused>,
    /// The metrics the nsys pass asked for that its export does not list: nsys leaves out a
    /// counter the GPU cannot sample without a word.
    pub(crate) dropped: Vec<String>,
    /// Why the bytes per step are not from the byte counters the export lists, or why none
    /// are given.
    pub(crate) bytes_note: Option<String>,
    /// The captured range's bytes per step (None: no instance has bytes).
    pub(crate) steps: Option<bytes::StepBytes>,
}

/// One instance of the range: its CPU start and end (ns, the export's clock) and thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct InstanceKey {
    pub(crate) start: i64,
    pub(crate) end: i64,
    pub(crate) tid: i64,
}

/// One launch: its kernel (demangled name), grid, block, GPU start and end, and the range
/// instance it was launched in (None: no range asked for).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SampledLaunch {
    /// Shared by every launch of one configuration: a capture holds millions of launches of a
    /// few dozen.
    pub(crate) name: Arc<str>,
    pub(crate) grid: Arc<str>,
    pub(crate) block: Arc<str>,
    pub(crate) start: i64,
    pub(crate) end: i64,
    pub(crate) instance: Option<InstanceKey>,
    /// The CUDA device it ran on.
    pub(crate) device: i64,
}

/// The sampled figures of the launches made in one instance of the range.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct InstanceFigures {
    /// The instance's CPU start (ns, the export's clock).
    pub(crate) start_ns: i64,
    #[serde(skip)]
    pub(crate) key: InstanceKey,
    #[serde(flatten)]
    pub(crate) figures: SampledFigures,
    /// Its DRAM bytes (None: no sampled GPU's windows, or no way to read them).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub(crate) bytes: Option<bytes::InstanceBytes>,
}

/// Attribute one GPU's samples to launches.
#[cfg(test)]
pub(crate) fn attribute(samples: &[Sample], launches: &[SampledLaunch]) -> Option<Sampled> {
    let w = Windows::new(samples)?;
    Some(attribute_with(
        |_| Some(&w),
        |_| None,
        w.frequency_hz(),
        launches,
    ))
}

/// Attribute to each launch the samples of its device's GPU (`windows_of`); a launch whose
/// device has none adds its time uncovered. Each instance gets its DRAM bytes where its
/// devices' windows can be read for them (`how_of`).
fn attribute_with<'w>(
    windows_of: impl Fn(i64) -> Option<&'w Windows<'w>>,
    how_of: impl Fn(i64) -> Option<bytes::How>,
    frequency_hz: f64,
    launches: &[SampledLaunch],
) -> Sampled {
    let mut bytes = bytes::per_instance(launches, &windows_of, how_of);
    // Per launch configuration while reading (a million launches are a few dozen of them),
    // per kernel once at the end.
    let mut configs: rustc_hash::FxHashMap<(&str, &str, &str), Acc> = Default::default();
    let mut instances: std::collections::BTreeMap<InstanceKey, Acc> = Default::default();
    let mut whole = Acc::default();
    for l in launches {
        let mut one = Acc::default();
        match windows_of(l.device) {
            Some(w) => one.add(w, l.start, l.end),
            None => one.uncovered(l.start, l.end),
        }
        whole.merge(&one);
        if let Some(i) = l.instance {
            instances.entry(i).or_default().merge(&one);
        }
        configs
            .entry((&l.name, &l.grid, &l.block))
            .or_default()
            .merge(&one);
    }
    let mut kernels: HashMap<String, KernelAcc> = HashMap::new();
    for ((name, grid, block), acc) in configs {
        let k = kernels.entry(name.to_string()).or_default();
        k.all.merge(&acc);
        k.configs.insert((grid.to_string(), block.to_string()), acc);
    }
    Sampled {
        frequency_hz,
        whole: Some(whole.figures()),
        kernels,
        instances: instances
            .into_iter()
            .map(|(key, acc)| InstanceFigures {
                start_ns: key.start,
                key,
                figures: acc.figures(),
                bytes: bytes.remove(&key),
            })
            .collect(),
        ..Sampled::default()
    }
}

impl Sampled {
    /// No figures, and why (the words follow "The nsys pass sampled GPU metrics, but").
    pub(crate) fn noted(why: String) -> Sampled {
        Sampled {
            note: Some(why),
            ..Sampled::default()
        }
    }

    /// No samples taken, and why (the words follow "The nsys pass took no GPU-metrics
    /// samples:").
    pub(crate) fn not_taken(why: String) -> Sampled {
        Sampled {
            not_sampled: Some(why),
            ..Sampled::default()
        }
    }

    /// Set the configurations ncu measured too, once, for every reader (summary, reports,
    /// findings) after the records have their sampled figures.
    pub(crate) fn beside(&mut self, records: &[KernelRecord], ncu: Option<&NcuReport>) {
        self.beside_ncu = ncu.map(|n| agreement(records, n)).unwrap_or_default();
    }

    /// Give each record of the range its sampled figures, largest configuration first.
    pub(crate) fn attach(&self, records: &mut [KernelRecord]) {
        for r in records {
            let Some(k) = self.kernels.get(&r.name) else {
                continue;
            };
            let mut configs: Vec<SampledConfig> = k
                .configs
                .iter()
                .map(|((grid, block), acc)| SampledConfig {
                    grid: grid.clone(),
                    block: block.clone(),
                    figures: acc.kernel_figures(),
                })
                .collect();
            configs.sort_by(|a, b| {
                b.figures
                    .time_ns
                    .total_cmp(&a.figures.time_ns)
                    .then_with(|| a.grid.cmp(&b.grid))
                    .then_with(|| a.block.cmp(&b.block))
            });
            r.sampled = Some(SampledKernel {
                all: k.all.kernel_figures(),
                configs,
                rank: self.rank,
            });
        }
    }
}

mod agreement;
pub(crate) mod bytes;
mod read;
pub(crate) mod reuse;
pub(crate) use agreement::{agreement, agreement_stats, Agreement};
pub(crate) use read::{launches, none_taken, read, renumbers, Numbering, Reading};

#[cfg(test)]
mod tests;
