//! Per-token costs of each phase: how many tokens its instances handled (the NVTX marks
//! `stage2:tokens batch=B new=N` that stage2's hook, or the workload, puts inside each phase
//! range), time per instance and per token, tokens per second, and how close the captured
//! phase runs to the GPU's floors: the DRAM bytes and FLOPs its kernels need (ncu's rates
//! times nsys's durations and launch counts) at the GPU's peak bandwidth and tensor rate.

use std::collections::HashMap;

use serde::Serialize;

use super::batching::parse;
use crate::analysis::nesting::{Cursor, Nesting};
use crate::analysis::ranges::RangeStats;
use crate::analysis::roofline::{self, Peaks};
use crate::model::KernelRecord;
use crate::parse::sqlite::NvtxRange;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct PhaseCost {
    pub(crate) phase: String,
    pub(crate) instances: u64,
    pub(crate) wall_ns: i64,
    /// Sequences per instance and tokens in all, from the marks; None without marks.
    pub(crate) batch: Option<u64>,
    pub(crate) tokens: Option<u64>,
    pub(crate) ms_per_instance: f64,
    pub(crate) ms_per_token: Option<f64>,
    pub(crate) tokens_per_s: Option<f64>,
    /// The captured phase only (ncu measured its kernels).
    pub(crate) floor: Option<Floor>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct Floor {
    /// Per instance: DRAM bytes and FLOPs of the kernels ncu measured.
    pub(crate) dram_bytes: f64,
    pub(crate) flops: f64,
    /// Those at the GPU's peak DRAM bandwidth and dense BF16 tensor rate, in ms.
    pub(crate) memory_floor_ms: f64,
    pub(crate) compute_floor_ms: Option<f64>,
    /// The measured time per instance the floors are compared with: the longer of the range's
    /// CPU wall time and its GPU projection (CUDA graphs' work can outlast the range), in ms.
    pub(crate) measured_ms: f64,
    /// That time is the GPU projection (its work outlasts the CPU range), not the wall time.
    pub(crate) over_projection: bool,
    /// Floor over the measured time per instance, in %.
    pub(crate) pct_of_memory_floor: f64,
    pub(crate) pct_of_compute_floor: Option<f64>,
    /// Share of the phase's kernel time that ncu measured (the floors cover only that).
    pub(crate) measured_pct: f64,
    /// The DRAM bytes are one instance measured whole (CUDA graphs: `ncu.graph_step`), not
    /// the kernels' replays.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) whole: Option<super::graphs::MeasuredStep>,
    /// With `whole`: per instance, what the kernels ncu replayed one by one (those of
    /// `measured_pct`) sum to, for comparison.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) replay_dram_bytes: Option<f64>,
}

/// Token counts per range name: (largest batch, tokens) of the marks whose innermost
/// enclosing range (on the mark's thread, or a start/end range) is one of its instances, so
/// `generate` does not also count its phases' marks.
fn tokens_by_range<'a>(
    ranges: &'a [NvtxRange],
    marks: &[(i64, i64, String)],
) -> HashMap<&'a str, (u64, u64)> {
    let nest = Nesting::new(ranges);
    let mut cursor = Cursor::default();
    let mut out: HashMap<&str, (u64, u64)> = HashMap::new();
    for (t, tid, text) in marks {
        let Some((b, n)) = parse(text) else { continue };
        if let Some(i) = nest.holding_mark(&mut cursor, ranges, *tid, *t) {
            let e = out.entry(&*ranges[i].name).or_default();
            e.0 = e.0.max(b);
            e.1 += b * n;
        }
    }
    out
}

/// Costs of every range with token marks, and of the captured range; `records` are the
/// captured range's kernels (with ncu metrics where measured).
pub(crate) fn costs(
    stats: &[RangeStats],
    ranges: &[NvtxRange],
    marks: &[(i64, i64, String)],
    captured: Option<&str>,
    floor: impl Fn(&RangeStats) -> Option<Floor>,
) -> Vec<PhaseCost> {
    let by_range = tokens_by_range(ranges, marks);
    let mut out = Vec::new();
    for s in stats.iter().filter(|s| s.instances > 0) {
        let toks = by_range.get(s.name.as_str()).copied();
        let is_captured = captured == Some(s.name.as_str());
        if toks.is_none() && !is_captured {
            continue;
        }
        let n = s.instances as f64;
        let secs = s.wall_ns as f64 / 1e9;
        out.push(PhaseCost {
            phase: s.name.clone(),
            instances: s.instances,
            wall_ns: s.wall_ns,
            batch: toks.map(|t| t.0),
            tokens: toks.map(|t| t.1),
            ms_per_instance: s.wall_ns as f64 / 1e6 / n,
            ms_per_token: toks
                .filter(|t| t.1 > 0)
                .map(|t| s.wall_ns as f64 / 1e6 / t.1 as f64),
            tokens_per_s: toks.filter(|_| secs > 0.0).map(|t| t.1 as f64 / secs),
            floor: if is_captured { floor(s) } else { None },
        });
    }
    out
}

/// The floors of one phase from its kernels: bytes and FLOPs per launch (ncu's rates times
/// the launch's nsys duration) times launches, per instance of the phase.
/// Where ncu measured one instance whole (`whole`), its DRAM bytes stand for the instance's.
pub(crate) fn floor(
    s: &RangeStats,
    records: &[KernelRecord],
    point: impl Fn(&KernelRecord) -> Option<roofline::Point>,
    peaks: &Peaks,
    whole: Option<&super::graphs::MeasuredStep>,
) -> Option<Floor> {
    let (mut bytes, mut flops, mut measured_ns, mut all_ns) = (0.0, 0.0, 0.0, 0.0);
    for r in records {
        all_ns += r.total_time_ns;
        if let Some(p) = point(r) {
            let secs = r.total_time_ns / 1e9;
            bytes += p.dram_bytes_per_s * secs;
            flops += p.flops() * secs;
            measured_ns += r.total_time_ns;
        }
    }
    let n = s.instances as f64;
    let actual_ms = s.wall_ns.max(s.proj_ns) as f64 / 1e6 / n.max(1.0);
    // Instances of no length (a range pushed and popped at once) have no time to set a
    // floor against.
    if measured_ns <= 0.0 || s.instances == 0 || peaks.dram_bytes_per_s <= 0.0 || actual_ms <= 0.0 {
        return None;
    }
    let per_instance = whole.map_or(bytes / n, |w| w.dram_bytes);
    let memory_floor_ms = per_instance / peaks.dram_bytes_per_s * 1e3;
    let compute_floor_ms = peaks
        .tensor_flops
        .filter(|f| *f > 0.0)
        .map(|f| flops / n / f * 1e3);
    Some(Floor {
        dram_bytes: per_instance,
        flops: flops / n,
        memory_floor_ms,
        compute_floor_ms,
        measured_ms: actual_ms,
        over_projection: s.proj_ns > s.wall_ns,
        pct_of_memory_floor: 100.0 * memory_floor_ms / actual_ms,
        pct_of_compute_floor: compute_floor_ms.map(|c| 100.0 * c / actual_ms),
        measured_pct: 100.0 * measured_ns / all_ns.max(1.0),
        whole: whole.cloned(),
        replay_dram_bytes: whole.map(|_| bytes / n),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(name: &str, instances: u64, wall_ns: i64) -> RangeStats {
        let mut s: RangeStats = serde_json::from_value(serde_json::json!({
            "name": name, "style": "PushPop", "instances": instances, "wall_ns": wall_ns,
            "kernel_ns": 0, "launches": 0, "graph_kernels": 0, "gpu_ops": 0, "proj_ns": 0,
            "busy_ns": 0, "gpu_busy_pct": 0.0, "avg_wall_ns": 0.0, "avg_kernel_ns": 0.0,
            "avg_launches": 0.0, "wall_spread": {"min": 0.0, "median": 0.0, "max": 0.0},
            "proj_spread": {"min": 0.0, "median": 0.0, "max": 0.0},
            "launches_spread": {"min": 0.0, "median": 0.0, "max": 0.0}
        }))
        .unwrap();
        s.wall_ns = wall_ns;
        s
    }

    fn r(name: &str, start: i64, end: i64) -> NvtxRange {
        NvtxRange {
            name: name.into(),
            start,
            end,
            push_pop: true,
            tid: 3,
        }
    }

    #[test]
    fn tokens_per_phase_from_the_marks_inside_each_instance() {
        let ranges = [
            r("generate", 0, 400),
            r("prefill", 0, 100),
            r("decode", 200, 210),
            r("decode", 300, 310),
        ];
        let m = |t, text: &str| (t, 3, text.to_string());
        let marks = [
            m(1, "stage2:tokens batch=4 new=256"),
            m(201, "stage2:tokens batch=4 new=1"),
            m(250, "stage2:tokens batch=4 new=1"), // between instances: not counted
            m(301, "stage2:tokens batch=4 new=1"),
            (302, 9, "stage2:tokens batch=4 new=1".to_string()), // another thread
        ];
        let st = [
            stats("generate", 1, 400_000_000),
            stats("prefill", 1, 100_000_000),
            stats("decode", 2, 20_000_000),
        ];
        let mut c = costs(&st, &ranges, &marks, Some("decode"), |_| None);
        // The mark between the decode steps is generate's own; its phases' marks are not.
        assert_eq!(c.remove(0).tokens, Some(4));
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].tokens, c[0].batch), (Some(1024), Some(4)));
        assert!((c[0].ms_per_token.unwrap() - 100.0 / 1024.0).abs() < 1e-9);
        assert_eq!(c[1].tokens, Some(8));
        assert_eq!(c[1].ms_per_instance, 10.0);
        assert_eq!(c[1].ms_per_token, Some(2.5));
        assert_eq!(c[1].tokens_per_s, Some(400.0));
        assert_eq!(parse("stage2:tokens new=1"), None);
    }
}
