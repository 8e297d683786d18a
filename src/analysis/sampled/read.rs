//! Reading the export's samples and the range's launches, and choosing whose samples each
//! launch takes: the one sampled GPU's, or of several, its own device's.

use std::collections::HashMap;
use std::sync::Arc;

use super::bytes::{self, Bandwidth, How};
use super::{attribute_with, InstanceKey, Sampled, SampledLaunch, Windows};
use crate::analysis::nesting::{Cursor, Nesting};
use crate::error::Error;
use crate::parse::sqlite::{NsysDb, NvtxRange, Samples, Series};

/// Whether a lone sampled GPU's number can be held against the kernels' device: asked for by
/// number with nothing renumbering the GPUs, nsys's number is CUDA's. With `cuda-visible` a
/// GPU bound to the process (srun's per-task binding, say) keeps the machine's number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Numbering {
    AsCuda,
    Unknown,
}

/// What reading the samples needs beside the export.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reading<'a> {
    /// The workload's `CUDA_VISIBLE_DEVICES` where it renumbers the GPUs (not `0,1,...`), when
    /// several were sampled: which stream is the kernels' device is then not known.
    pub(crate) renumbered: Option<&'a str>,
    pub(crate) numbering: Numbering,
    /// The DRAM bandwidth the sampled shares are of (None: bytes only from counters).
    pub(crate) shares_of: Option<Bandwidth>,
    /// The metrics the nsys pass's set asked for, as the export names them (empty: nsys's
    /// own set, whose list is nsys's).
    pub(crate) asked: &'a [String],
}

/// Read the samples of the export and attribute them to the launches made inside an
/// instance of `range` (anywhere when None). None when the run sampled nothing.
pub(crate) fn read(
    db: &NsysDb,
    ranges: &[NvtxRange],
    range: Option<&str>,
    r: &Reading,
) -> Result<Option<Sampled>, Error> {
    // A run that sampled nothing costs one schema look.
    if !db.has_gpu_metrics()? {
        return Ok(None);
    }
    let launches = launches(db, ranges, range)?;
    let from = launches.iter().map(|l| l.start).min().unwrap_or(0);
    let to = launches.iter().map(|l| l.end).max().unwrap_or(0);
    let one = Sampled::noted;
    let series = match db.gpu_metric_samples(from.saturating_sub(1_000_000), to)? {
        Samples::Absent => Vec::new(),
        Samples::Read(s) => s,
        Samples::Unreadable(why) => {
            return Ok(Some(one(format!(
                "its samples cannot be read ({why}), so none are attributed"
            ))))
        }
    };
    // The devices the range's own launches ran on, read with them.
    let mut devices: Vec<i64> = launches.iter().map(|l| l.device).collect();
    devices.sort_unstable();
    devices.dedup();
    let peak = r.shares_of.as_ref();
    let mut a = match (series.as_slice(), devices.as_slice()) {
        ([], _) => one("the export holds no GPU-metrics samples over the range's kernels".into()),
        ([s], [device]) if r.numbering == Numbering::AsCuda && s.gpu & 0xFF != *device => {
            one(format!(
                "nsys sampled GPU {} and the range's kernels ran on device {device}: its samples are another GPU's, so none are attributed (nsys.gpu_metrics.devices names the GPU to sample)",
                s.gpu & 0xFF
            ))
        }
        ([s], [] | [_]) => match Windows::new(&s.samples) {
            Some(w) => {
                let (how, why) = bytes::how(s, &w, peak);
                let mut a = attribute_with(|_| Some(&w), |_| how, w.frequency_hz(), &launches);
                a.bytes_note = why;
                a
            }
            None => one("fewer than two GPU-metrics samples over the range's kernels".into()),
        },
        (many, []) => one(format!(
            "{} GPUs sampled and the range has no kernel launch to attribute them to",
            many.len()
        )),
        (many, devices) => match r.renumbered {
            Some(v) => one(format!(
                "{} sampled while CUDA_VISIBLE_DEVICES={v} renumbers the GPUs the workload sees, so which stream is which of the kernels' devices is not known and none are attributed",
                gpus(many.len()),
            )),
            None => of_devices(many, devices, &launches, peak).unwrap_or_else(one),
        },
    };
    a.dropped = dropped(r.asked, &series);
    Ok(Some(a))
}

/// The metrics asked for that a sampled GPU's list in the export lacks, each once.
fn dropped(asked: &[String], series: &[Series]) -> Vec<String> {
    asked
        .iter()
        .filter(|m| series.iter().any(|s| !s.names.contains(m)))
        .cloned()
        .collect()
}

/// Of the sampled GPUs (`--gpu-metrics-devices=cuda-visible` on a machine of several), each
/// launch takes its own device's samples. nsys numbers a sampled GPU in the low byte of its
/// sample stream's id (NVIDIA's `gpu_metric_util_map` recipe reads `typeId & 0xFF` as the GPU;
/// an H100 pair's export had two streams, ids ending 00 and 01). A device that no stream is
/// numbered as leaves its launches uncovered. Err: why none are attributed.
pub(super) fn of_devices(
    series: &[Series],
    devices: &[i64],
    launches: &[SampledLaunch],
    peak: Option<&Bandwidth>,
) -> Result<Sampled, String> {
    let n = series.len();
    let list = |d: &[i64]| crate::text::listed(d, ", ");
    let found: Vec<(i64, &Series)> = devices
        .iter()
        .filter_map(|&d| series.iter().find(|s| s.gpu & 0xFF == d).map(|s| (d, s)))
        .collect();
    if found.is_empty() {
        return Err(format!(
            "{} sampled and none numbered as the range's kernels' device {}, so none of their samples are attributed",
            gpus(n),
            list(devices)
        ));
    }
    let windows: HashMap<i64, (Windows, &Series)> = found
        .iter()
        .filter_map(|&(d, s)| Windows::new(&s.samples).map(|w| (d, (w, s))))
        .collect();
    let Some(frequency_hz) = windows.values().map(|(w, _)| w.frequency_hz()).next() else {
        return Err(format!(
            "fewer than two samples of device {} over the range's kernels",
            list(devices)
        ));
    };
    let mut notes = Vec::new();
    let mut hows: HashMap<i64, Option<How>> = HashMap::new();
    for (&d, (w, s)) in &windows {
        let (how, why) = bytes::how(s, w, peak);
        hows.insert(d, how);
        notes.extend(why.map(|why| format!("device {d}: {why}")));
    }
    notes.sort();
    let mut a = attribute_with(
        |d| windows.get(&d).map(|(w, _)| w),
        |d| hows.get(&d).copied().flatten(),
        frequency_hz,
        launches,
    );
    a.bytes_note = (!notes.is_empty()).then(|| notes.join("; "));
    let how = "nsys numbers a sampled GPU in the low byte of its stream id, as NVIDIA's gpu_metric_util_map recipe reads it";
    let unsampled: Vec<i64> = devices
        .iter()
        .copied()
        .filter(|d| !windows.contains_key(d))
        .collect();
    a.picked = Some(match (devices, unsampled.is_empty()) {
        ([d], _) => format!(
            "nsys sampled {} and the range's kernels ran on device {d}: its samples are theirs ({how})",
            gpus(n)
        ),
        (_, true) => format!(
            "nsys sampled {} and the range's kernels ran on devices {}: each launch takes its own device's samples ({how})",
            gpus(n),
            list(devices)
        ),
        (_, false) => format!(
            "nsys sampled {} and the range's kernels ran on devices {}: each launch takes its own device's samples ({how}), and device {}'s launches, with none, are uncovered",
            gpus(n),
            list(devices),
            list(&unsampled)
        ),
    });
    Ok(a)
}

/// A `CUDA_VISIBLE_DEVICES` value that renumbers GPUs: anything but `0`, `0,1`, `0,1,2`, ...
pub(crate) fn renumbers(visible: &str) -> bool {
    visible
        .split(',')
        .map(str::trim)
        .enumerate()
        .any(|(i, v)| v != i.to_string())
}

/// What a run whose export holds no samples says of it: the nsys pass was asked to sample
/// (`asked`: its command line) and the export has none, or sampling was left off and why.
pub(crate) fn none_taken(asked: bool, off: Option<String>) -> Option<Sampled> {
    match (asked, off) {
        (true, _) => Some(Sampled::noted(
            "its export holds none (no GPU_METRICS table)".into(),
        )),
        (false, Some(why)) => Some(Sampled::not_taken(why)),
        (false, None) => None,
    }
}

/// Every kernel launch made inside an instance of `range` (anywhere when None), with its
/// name and configuration.
pub(crate) fn launches(
    db: &NsysDb,
    ranges: &[NvtxRange],
    range: Option<&str>,
) -> Result<Vec<SampledLaunch>, Error> {
    let nest = Nesting::new(ranges);
    let mut cursor = Cursor::default();
    let mut launches: Vec<SampledLaunch> = Vec::new();
    let names = db.strings()?;
    let text = |id: i64| names.get(&id).cloned().unwrap_or_default();
    // Text once per distinct kernel and configuration, shared by its launches.
    type Named = (Arc<str>, Arc<str>, Arc<str>);
    let mut configs: rustc_hash::FxHashMap<(i64, Option<i64>, [i32; 7]), Named> =
        Default::default();
    db.shaped_launches(|l| {
        let instance = match range {
            Some(name) => match nest.holding_named(&mut cursor, ranges, l.tid, l.api_start, name) {
                Some(i) => Some(InstanceKey {
                    start: ranges[i].start,
                    end: ranges[i].end,
                    tid: ranges[i].tid,
                }),
                None => return,
            },
            None => None,
        };
        let (name, grid, block) = configs
            .entry((l.mangled, l.demangled, l.config))
            .or_insert_with(|| {
                let demangled = l.demangled.map(text).unwrap_or_default();
                let name = match demangled.is_empty() {
                    true => text(l.mangled),
                    false => demangled,
                };
                let c = l.launch();
                (name.into(), c.grid.into(), c.block.into())
            })
            .clone();
        launches.push(SampledLaunch {
            name,
            grid,
            block,
            start: l.start,
            end: l.start + l.ns,
            instance,
            device: l.device,
        });
    })?;
    Ok(launches)
}

/// "1 GPU", "2 GPUs".
pub(super) fn gpus(n: usize) -> String {
    match n {
        1 => "1 GPU".to_string(),
        n => format!("{n} GPUs"),
    }
}
