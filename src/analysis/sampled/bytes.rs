//! DRAM bytes per instance of the captured range, from the nsys pass's samples: every byte the
//! GPU's DRAM read and wrote over the instance's GPU span (its first kernel's start to its last
//! kernel's end), whoever moved it. Where the export holds the raw counters stage2's set adds
//! (`dram__bytes_read.sum`, `dram__bytes_write.sum`: each window's bytes) they are counted;
//! else each window's DRAM Read/Write Bandwidth share of peak times that peak times the window.
//! A window partly inside the span counts by the part of its kernels' busy time inside (the
//! GPU moves next to nothing while no kernel runs): a step of 0.32 ms at 20 us windows has two
//! edge windows, most of them idle, and counting them by time left 5% of its known bytes out
//! (H200, 2026-11-28). A window with no kernel in it counts by time. Measured on an H100 (docs/measured.md): the shares integrated over a range came within
//! 0.07% of ncu's dram__bytes_read.sum, the counters within 0.002-0.035% of known traffic.
//! nsys writes each share as a whole per cent, so each window's is within a point of the
//! share it stands for: at low DRAM use that bound is most of the figure, and it is given.
//!
//! Per range, over its steady instances: the median bytes per step, the memory floor (those
//! bytes at the ceiling bandwidth) and the bandwidth use (bytes over the step's time, as a
//! share of the ceiling).

use std::collections::BTreeMap;

use serde::Serialize;

use super::{InstanceFigures, InstanceKey, SampledLaunch, Windows, DRAM_READ, DRAM_WRITE};
use crate::parse::sqlite::{Series, COUNTERS, METRICS};

const READ_BYTES: usize = METRICS.len();
const WRITE_BYTES: usize = METRICS.len() + 1;

/// How an instance's bytes were measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum BytesSource {
    /// The raw byte counters, sampled per window: counted.
    Counters,
    /// The DRAM bandwidth shares of peak, times the peak and the window: sampled.
    Shares,
}

/// A DRAM bandwidth and where it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Bandwidth {
    pub(crate) bytes_per_s: f64,
    pub(crate) source: BandwidthSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum BandwidthSource {
    /// ncu's `dram__bytes.sum.peak_sustained` times `dram__cycles_elapsed.avg.per_second`: the
    /// peak the sampled shares are of.
    NcuPeak,
    /// NVIDIA's datasheet figure for the GPU (analysis::datasheet).
    Datasheet,
}

impl BandwidthSource {
    /// Whose bandwidth, in the reports' words ("the datasheet's 3.35 TB/s").
    pub(crate) fn label(self) -> &'static str {
        match self {
            BandwidthSource::NcuPeak => "ncu's peak",
            BandwidthSource::Datasheet => "the datasheet's",
        }
    }
}

/// One instance's DRAM bytes (flattened into its sampled figures).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct InstanceBytes {
    pub(crate) dram_read_bytes: f64,
    pub(crate) dram_write_bytes: f64,
    /// Share of its GPU span inside sample windows with the metrics read, in %.
    pub(crate) bytes_coverage_pct: f64,
    pub(crate) bytes_source: BytesSource,
    /// Where the shares are whole per cents: the bytes are within this many of the counted
    /// ones (a point of each share, read and write, over the covered time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) bytes_within: Option<f64>,
    /// Its GPU span: first kernel start to last kernel end (ns; summed over devices).
    pub(crate) gpu_span_ns: i64,
    /// The time the bytes are over: the longer of its CPU wall time and its GPU span (ns).
    pub(crate) step_ns: i64,
}

/// How one GPU's windows give bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum How {
    /// The counters; `peak` (bytes/s): the bandwidth their shares are of, to unwrap them by.
    Counters { peak: Option<f64> },
    /// The shares, of this peak (bytes/s); `whole`: written as whole per cents.
    Shares { peak: f64, whole: bool },
}

/// How `series`' bytes are read: its counters where the export lists both and none reads
/// more than twice `peak` over its window (a counter that wrapped, or not of this GPU), else
/// its shares of `peak`; None without either. The second value says why counters listed were
/// not used.
pub(crate) fn how(
    series: &Series,
    w: &Windows,
    peak: Option<&Bandwidth>,
) -> (Option<How>, Option<String>) {
    let listed = COUNTERS.iter().all(|c| series.names.iter().any(|n| n == c));
    let shares = peak.map(|p| How::Shares {
        peak: p.bytes_per_s,
        whole: series.whole_shares,
    });
    if !listed {
        return (shares, None);
    }
    let Some(p) = peak else {
        return (Some(How::Counters { peak: None }), None);
    };
    let over = (0..series.samples.len()).find(|&i| {
        let s = &series.samples[i];
        let most = 2.0 * p.bytes_per_s * w.len(i) as f64 / 1e9;
        [READ_BYTES, WRITE_BYTES]
            .iter()
            .any(|&k| f64::from(s.v[k]) > most)
    });
    // Only a series that shows the wrap is unwrapped: a share is of a peak that may be a few
    // per cent off, and whole counters need no help.
    let wrapped = series
        .samples
        .iter()
        .filter(|s| s.v[READ_BYTES] < 0.0 || s.v[WRITE_BYTES] < 0.0)
        .count();
    match over {
        None if wrapped > 0 => (
            Some(How::Counters {
                peak: Some(p.bytes_per_s),
            }),
            Some(format!(
                "the DRAM byte counters came back negative in {wrapped} windows, as nsys writes them modulo 2^24 on some runs: each window's bytes are its counter plus the multiple of 2^24 nearest the bytes its bandwidth share of {} {:.2} TB/s says",
                p.source.label(),
                p.bytes_per_s / 1e12
            )),
        ),
        None => (Some(How::Counters { peak: None }), None),
        Some(i) => (
            shares,
            Some(format!(
                "the DRAM byte counters read more than twice {} bandwidth ({:.2} TB/s) in the window at {} ns, as a counter that wrapped would: the bytes are from the bandwidth shares instead",
                p.source.label(),
                p.bytes_per_s / 1e12,
                series.samples[i].t
            )),
        ),
    }
}

/// One window's bytes from its counter. nsys writes a DRAM byte counter modulo 2^24 on some
/// runs, as a signed 24-bit value (H200, Nsight Systems 2025.3.1: windows of 20 us that wrote
/// 11.6 MB by their 12% share came back as -5.2 MB; 49 MB windows of another run came back
/// whole): the bytes are the counter plus the multiple of 2^24 nearest the bytes its share
/// says, `point` bytes a point of share. A negative counter with no share to go by is unknown
/// (NaN: the window is left uncovered).
fn unwrapped(counter: f32, share: f32, point: Option<f64>) -> f32 {
    const WRAP: f64 = (1u32 << 24) as f64;
    let v = f64::from(counter);
    match point.filter(|_| share.is_finite()) {
        Some(p) => {
            let k = ((f64::from(share) * p - v) / WRAP).round().max(0.0);
            (v + k * WRAP) as f32
        }
        None if v < 0.0 => f32::NAN,
        None => counter,
    }
}

/// The union of a device's kernel intervals, sorted: where its DRAM traffic happens.
#[derive(Debug, Default)]
pub(crate) struct Busy(Vec<(i64, i64)>);

impl Busy {
    pub(crate) fn new(mut spans: Vec<(i64, i64)>) -> Busy {
        spans.sort_unstable();
        let mut out: Vec<(i64, i64)> = Vec::with_capacity(spans.len());
        for (a, b) in spans {
            match out.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => out.push((a, b)),
            }
        }
        Busy(out)
    }

    /// Busy time inside `[a, b)`.
    fn within(&self, a: i64, b: i64) -> i64 {
        let first = self.0.partition_point(|&(_, e)| e <= a);
        self.0[first..]
            .iter()
            .take_while(|&&(s, _)| s < b)
            .map(|&(s, e)| (e.min(b) - s.max(a)).max(0))
            .sum()
    }
}

/// The DRAM bytes read and written over `[start, end)`, and the time of it inside windows
/// that hold the metrics `how` reads (ns). An edge window counts by the part of `busy`'s time
/// in it that is inside, or by time where no kernel ran in it.
pub(crate) fn integrate(
    w: &Windows,
    start: i64,
    end: i64,
    how: How,
    busy: &Busy,
) -> (f64, f64, f64) {
    let (mut read, mut write, mut covered) = (0.0, 0.0, 0.0);
    w.overlapping(start, end, |s, ov, len| {
        let (r, wr) = match how {
            How::Counters { peak } => {
                let point = peak.map(|p| p / 100.0 * len as f64 / 1e9);
                (
                    unwrapped(s.v[READ_BYTES], s.v[DRAM_READ], point),
                    unwrapped(s.v[WRITE_BYTES], s.v[DRAM_WRITE], point),
                )
            }
            How::Shares { .. } => (s.v[DRAM_READ], s.v[DRAM_WRITE]),
        };
        if r.is_nan() || wr.is_nan() || len <= 0 {
            return;
        }
        let part = match ov >= len {
            true => 1.0,
            false => match busy.within(s.t, s.t + len) {
                0 => ov as f64 / len as f64,
                all => busy.within(s.t.max(start), (s.t + len).min(end)) as f64 / all as f64,
            },
        };
        let whole = match how {
            How::Counters { .. } => 1.0,
            How::Shares { peak, .. } => peak / 100.0 * len as f64 / 1e9,
        };
        read += f64::from(r) * whole * part;
        write += f64::from(wr) * whole * part;
        covered += ov as f64;
    });
    (read, write, covered)
}

/// Sums of one instance over its devices.
#[derive(Default)]
struct Sums {
    read: f64,
    write: f64,
    covered_ns: f64,
    span_ns: i64,
    shares: bool,
    /// A point of each share, read and write, over the covered time (bytes), where whole.
    within: Option<f64>,
    /// A device with no windows or no way to read them: the instance has no bytes.
    unknown: bool,
}

/// Each instance's bytes over its GPU span on each device it ran on: `windows_of` and `how_of`
/// give a device's windows and how they are read. An instance with a device of neither has none.
pub(crate) fn per_instance<'w>(
    launches: &[SampledLaunch],
    windows_of: impl Fn(i64) -> Option<&'w Windows<'w>>,
    how_of: impl Fn(i64) -> Option<How>,
) -> BTreeMap<InstanceKey, InstanceBytes> {
    let mut spans: BTreeMap<(InstanceKey, i64), (i64, i64)> = BTreeMap::new();
    let mut kernels: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
    for l in launches {
        kernels.entry(l.device).or_default().push((l.start, l.end));
    }
    let busy: BTreeMap<i64, Busy> = kernels
        .into_iter()
        .map(|(d, v)| (d, Busy::new(v)))
        .collect();
    for l in launches {
        let Some(k) = l.instance else { continue };
        let e = spans.entry((k, l.device)).or_insert((l.start, l.end));
        e.0 = e.0.min(l.start);
        e.1 = e.1.max(l.end);
    }
    let mut sums: BTreeMap<InstanceKey, Sums> = BTreeMap::new();
    for ((k, device), (start, end)) in spans {
        let s = sums.entry(k).or_default();
        let Some((w, how)) = windows_of(device).zip(how_of(device)) else {
            s.unknown = true;
            continue;
        };
        let (read, write, covered) = integrate(w, start, end, how, &busy[&device]);
        s.read += read;
        s.write += write;
        s.covered_ns += covered;
        s.span_ns += (end - start).max(0);
        if let How::Shares { peak, whole } = how {
            s.shares = true;
            if whole {
                let point = 2.0 * peak / 100.0 * covered / 1e9;
                s.within = Some(s.within.unwrap_or(0.0) + point);
            }
        }
    }
    sums.into_iter()
        .filter(|(_, s)| !s.unknown)
        .map(|(k, s)| {
            let b = InstanceBytes {
                dram_read_bytes: s.read,
                dram_write_bytes: s.write,
                // A span of no length has nothing to cover.
                bytes_coverage_pct: match s.span_ns > 0 {
                    true => (100.0 * s.covered_ns / s.span_ns as f64).min(100.0),
                    false => 0.0,
                },
                bytes_source: match s.shares {
                    true => BytesSource::Shares,
                    false => BytesSource::Counters,
                },
                bytes_within: s.within,
                gpu_span_ns: s.span_ns,
                step_ns: (k.end - k.start).max(0).max(s.span_ns),
            };
            (k, b)
        })
        .collect()
}

/// The bytes per step of the captured range, over its steady instances.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct StepBytes {
    pub(crate) range: String,
    /// The instances the medians are over, and the group they are where the analysis set
    /// others apart (a warm-up, compiling instances); None: all of them.
    pub(crate) instances: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) group: Option<String>,
    /// Medians per instance.
    pub(crate) dram_read_bytes: f64,
    pub(crate) dram_write_bytes: f64,
    pub(crate) dram_bytes: f64,
    pub(crate) step_ms: f64,
    /// Their spans' share inside sample windows, all together, in %.
    pub(crate) coverage_pct: f64,
    /// Counters where every one of them was counted, else shares.
    pub(crate) source: BytesSource,
    /// Where the shares are whole per cents: the median instance's bound on its bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) bytes_within: Option<f64>,
    /// The peak the shares are of (None: all counted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) shares_of: Option<Bandwidth>,
    /// The bandwidth the floor and the use are against (None: no bandwidth known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ceiling: Option<Bandwidth>,
    /// The median bytes at the ceiling, in ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) memory_floor_ms: Option<f64>,
    /// Median over the instances of their bytes over their time, as a share of the ceiling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) bandwidth_use_pct: Option<f64>,
}

/// The steady instances' bytes per step (`steady` picks them, with their group's label);
/// None where no instance has bytes.
pub(crate) fn per_step(
    range: &str,
    instances: &[InstanceFigures],
    steady: impl Fn(&InstanceKey) -> bool,
    group: Option<String>,
    shares_of: Option<Bandwidth>,
    ceiling: Option<Bandwidth>,
) -> Option<StepBytes> {
    let kept: Vec<(&InstanceKey, &InstanceBytes)> = instances
        .iter()
        .filter(|i| steady(&i.key))
        .filter_map(|i| Some((&i.key, i.bytes.as_ref()?)))
        .collect();
    if kept.is_empty() {
        return None;
    }
    let median = |f: &dyn Fn(&InstanceBytes) -> f64| {
        let v: Vec<f64> = kept.iter().map(|(_, b)| f(b)).collect();
        crate::analysis::ranges::Spread::of(v).median
    };
    let span: i64 = kept.iter().map(|(_, b)| b.gpu_span_ns).sum();
    let covered: f64 = kept
        .iter()
        .map(|(_, b)| b.bytes_coverage_pct / 100.0 * b.gpu_span_ns as f64)
        .sum();
    let counted = kept
        .iter()
        .all(|(_, b)| b.bytes_source == BytesSource::Counters);
    let bytes = median(&|b| b.dram_read_bytes + b.dram_write_bytes);
    let ceiling = ceiling.filter(|c| c.bytes_per_s > 0.0);
    let use_of = |b: &InstanceBytes, c: &Bandwidth| match b.step_ns > 0 {
        true => {
            100.0 * (b.dram_read_bytes + b.dram_write_bytes)
                / (b.step_ns as f64 / 1e9)
                / c.bytes_per_s
        }
        false => 0.0,
    };
    Some(StepBytes {
        range: range.to_string(),
        instances: kept.len(),
        group,
        dram_read_bytes: median(&|b| b.dram_read_bytes),
        dram_write_bytes: median(&|b| b.dram_write_bytes),
        dram_bytes: bytes,
        step_ms: median(&|b| b.step_ns as f64) / 1e6,
        coverage_pct: match span > 0 {
            true => (100.0 * covered / span as f64).min(100.0),
            false => 0.0,
        },
        source: match counted {
            true => BytesSource::Counters,
            false => BytesSource::Shares,
        },
        bytes_within: match kept.iter().any(|(_, b)| b.bytes_within.is_some()) {
            true => Some(median(&|b| b.bytes_within.unwrap_or(0.0))),
            false => None,
        },
        shares_of: shares_of.filter(|_| !counted),
        memory_floor_ms: ceiling.map(|c| bytes / c.bytes_per_s * 1e3),
        bandwidth_use_pct: ceiling.map(|c| median(&|b| use_of(b, &c))),
        ceiling,
    })
}

#[cfg(test)]
mod tests;
