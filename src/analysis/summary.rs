//! summary.json: the run's figures for machines, with a schema version.

use std::collections::BTreeMap;

use serde::Serialize;

use super::repeats::Stats;
use super::Artifacts;
use crate::model::{Bound, TimeSource};
use crate::rundir::status::PassStatus;

/// 2: per-range attribution from the SQLite export, roofline figures and peaks.
/// 3: GPU time on the GPU timeline: per-range projection, busy (union of kernels, over the
/// projection), graph kernels and per-instance spreads; `totals.gpu_busy_pct` never above 100.
/// 4: `timed_passes`; with `run.repeat` > 1, `runs` (values per pass, mean, stddev, min,
/// median, max) on the totals, each range and each kernel; each kernel's `per_launch` spread
/// (nsys's Med/Min/Max/StdDev) and `mangled` name.
/// 5: `ledger`: per push/pop range, where its wall time goes on its thread (sync, launch and
/// other CUDA calls, child ranges, the rest), summed and per instance; each range's `gpu_idle`
/// (gaps inside its projection, memcpy/memset time).
/// 6: `python_samples` (the hook's Python stacks placed in the ranges), `operators` (PyTorch
/// operator ranges grouped), `per_token` (tokens, ms per instance and per token, tokens/s,
/// the captured phase's memory and compute floors); cudaProfilerStart/Stop windows appear as
/// the range `cudaProfilerApi window`.
/// 7: `findings` (every verdict, headline clause, caveat and piece of advice, with its scope,
/// evidence and rule) and `capture` (what the nsys pass captured, typed); one name per busy
/// figure: `totals.gpu_busy_of_range_pct` / `gpu_working_of_range_pct` (over the longer of
/// CPU wall and GPU projection; working leaves NCCL waiting out), each range's
/// `gpu_busy_of_projection_pct` and `gpu_busy_of_range_pct`; `launch_bound` left the ranges
/// (a verdict: the `range_verdict` findings); `nsys_capture` is the captured range as the
/// export names it (`cudaProfilerApi window` for profiler-API windows). The JSON Schema is
/// src/findings/summary.schema.json.
/// 8: a finding's `rule` is the rule's id; `rules` holds each cited rule's words and
/// threshold once (a run with 73k range names repeated one rule's words 73k times).
/// 9: `ranges`, `ledger` and the `range_verdict` findings hold the ranges kernels.md lists
/// (`report.max_ranges`, the ranges with the most range time); `ranges_left_out` counts the
/// rest, which ranges.csv lists with every range (a run with 73k range names wrote 156 MB).
/// 10: the captured range's `dram_per_step` (DRAM bytes per step from the nsys pass's samples,
/// over its steady instances: median bytes, memory floor and bandwidth use against a labelled
/// ceiling); each sampled instance's DRAM bytes and their coverage; `gpu_metrics.dropped` (the
/// metrics asked for that the export lacks) and `bytes_note`.
pub(crate) const SCHEMA_VERSION: u32 = 10;

#[derive(Debug, Serialize)]
pub(crate) struct Summary {
    pub(crate) schema_version: u32,
    pub(crate) run_id: String,
    pub(crate) stage2_version: String,
    pub(crate) gpu: Option<String>,
    pub(crate) nsys_capture: Option<String>,
    pub(crate) ncu_include: Option<String>,
    pub(crate) passes: BTreeMap<String, PassStatus>,
    /// Timed nsys passes the figures come from (`run.repeat`).
    pub(crate) timed_passes: usize,
    pub(crate) totals: Totals,
    pub(crate) ranges: Vec<Range>,
    /// The ranges `ranges` and `ledger` leave out (absent: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ranges_left_out: Option<RangesLeftOut>,
    pub(crate) peaks: Option<crate::analysis::roofline::Peaks>,
    /// Per-rank figures of a multi-rank run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) ranks: Vec<super::ranks::RankData>,
    pub(crate) kernels: Vec<Kernel>,
    /// nsys's GPU-metrics sampling of the captured range (absent: the run sampled none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) gpu_metrics: Option<GpuMetrics>,
    /// Per push/pop range: its wall time split on its CPU thread (see analysis::ledger).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) ledger: Vec<super::ledger::RangeLedger>,
    /// Python stack samples placed in the ranges (`workload.python_sampling_hz` > 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) python_samples: Option<super::pysamples::PyReport>,
    /// PyTorch operators from their NVTX ranges (`nsys.pytorch`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) operators: Vec<super::ops::OpRow>,
    /// Per phase: tokens, ms per instance and per token, tokens/s; the captured phase's
    /// memory and compute floors.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) per_token: Vec<super::tokens::PhaseCost>,
    /// Which file each group of figures came from, relative to the run directory.
    pub(crate) sources: BTreeMap<String, String>,
}

/// The ranges summary.json leaves out (`report.max_ranges`): every range is a row of
/// `file`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RangesLeftOut {
    pub(crate) ranges: usize,
    /// How many ranges it lists.
    pub(crate) listed: usize,
    /// The most range time (the longer of CPU wall and GPU projection) of one left out.
    pub(crate) longest_ns: i64,
    pub(crate) file: &'static str,
}

#[derive(Debug, Serialize)]
pub(crate) struct Totals {
    pub(crate) kernel_time_ns: f64,
    pub(crate) kernel_launches: u64,
    pub(crate) distinct_kernels: usize,
    pub(crate) ncu_kernels_measured: usize,
    pub(crate) ncu_coverage_pct: Option<f64>,
    /// Ranks of the kernels without ncu metrics, when ncu profiled the captured range.
    pub(crate) ncu_left_out: Vec<usize>,
    pub(crate) capture_range_wall_ns: Option<f64>,
    /// The captured range's GPU busy (union of kernel intervals) over its range time (the
    /// longer of CPU wall and GPU projection), and the same less NCCL waiting.
    pub(crate) gpu_busy_of_range_pct: Option<f64>,
    pub(crate) gpu_working_of_range_pct: Option<f64>,
    /// `kernel_time_ns` over the timed passes (with more than one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) kernel_time_runs: Option<Stats>,
}

#[derive(Debug, Serialize)]
pub(crate) struct Range {
    pub(crate) name: String,
    pub(crate) style: Option<String>,
    pub(crate) instances: u64,
    pub(crate) total_ns: f64,
    pub(crate) avg_ns: f64,
    /// From the SQLite export: kernels launched inside the range.
    pub(crate) kernel_ns: Option<f64>,
    pub(crate) launches: Option<u64>,
    /// Kernels launched by CUDA graphs.
    pub(crate) graph_kernels: Option<u64>,
    /// GPU projection summed over instances, and the union of kernel intervals within it.
    pub(crate) gpu_projection_ns: Option<f64>,
    pub(crate) gpu_busy_ns: Option<f64>,
    /// `gpu_busy_ns` over `gpu_projection_ns`, in %.
    pub(crate) gpu_busy_of_projection_pct: Option<f64>,
    /// `gpu_busy_ns` over the longer of CPU wall and GPU projection, in %.
    pub(crate) gpu_busy_of_range_pct: Option<f64>,
    /// Per instance: CPU wall, GPU projection, kernels launched (min, median, max).
    pub(crate) per_instance: Option<PerInstance>,
    /// `total_ns` over the timed passes (with more than one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) runs: Option<Stats>,
    /// Inside the projection: gaps with none of the range's GPU work (count, total, largest),
    /// and memcpy/memset execution time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) gpu_idle: Option<GpuIdle>,
    /// The captured range's DRAM bytes per step, from the nsys pass's samples.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) dram_per_step: Option<crate::analysis::sampled::bytes::StepBytes>,
}

#[derive(Debug, Serialize)]
pub(crate) struct GpuIdle {
    pub(crate) gaps: u64,
    pub(crate) idle_ns: i64,
    pub(crate) largest_gap_ns: i64,
    pub(crate) memcpy_ns: i64,
}

#[derive(Debug, Serialize)]
pub(crate) struct PerInstance {
    pub(crate) wall_ns: crate::analysis::ranges::Spread,
    pub(crate) gpu_projection_ns: crate::analysis::ranges::Spread,
    pub(crate) kernels: crate::analysis::ranges::Spread,
}

#[derive(Debug, Serialize)]
pub(crate) struct Kernel {
    pub(crate) rank: usize,
    pub(crate) name: String,
    pub(crate) short_name: String,
    pub(crate) instances: u64,
    pub(crate) total_time_ns: f64,
    pub(crate) avg_time_ns: f64,
    pub(crate) gpu_time_pct: Option<f64>,
    pub(crate) sm_throughput_pct: Option<f64>,
    pub(crate) dram_throughput_pct: Option<f64>,
    pub(crate) bound: Option<Bound>,
    pub(crate) ncu_instances: u64,
    /// The run that measured its ncu figures, when they came from the metrics cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ncu_cached_from: Option<String>,
    pub(crate) time_source: TimeSource,
    pub(crate) nvtx_range: Option<String>,
    pub(crate) roofline: Option<crate::analysis::roofline::Point>,
    pub(crate) arithmetic_intensity: Option<f64>,
    pub(crate) mangled: Option<String>,
    /// One launch's duration over the kernel's launches (nsys's spread columns).
    pub(crate) per_launch: Option<crate::model::LaunchSpread>,
    /// `total_time_ns` over the timed passes (with more than one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) runs: Option<Stats>,
    /// nsys's sampled GPU metrics over every launch, and per launch configuration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sampled: Option<crate::model::SampledKernel>,
}

/// What the nsys pass sampled of the GPU over the captured range's kernels.
#[derive(Debug, Serialize)]
pub(crate) struct GpuMetrics {
    /// Samples per second, from the samples' median spacing.
    pub(crate) frequency_hz: f64,
    /// Every launch of the range together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) all_kernels: Option<crate::model::SampledFigures>,
    /// Why no figures were attributed, when none were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) note: Option<String>,
    /// Why the nsys pass took no samples though sampling is enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) not_sampled: Option<String>,
    /// Which of several sampled GPUs' samples are attributed, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) picked: Option<String>,
    /// Under a launcher: the one rank whose launches the figures cover.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) rank: Option<u32>,
    pub(crate) rule: &'static str,
    pub(crate) source: String,
    /// Set when this run's nsys pass did not sample and the figures are an earlier run's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reused: Option<crate::analysis::sampled::reuse::Reused>,
    /// Each instance of the captured range: the sampled figures of the launches made in it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) instances: Vec<crate::analysis::sampled::InstanceFigures>,
    /// Each launch configuration ncu measured too: both tools' DRAM figures and classes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) beside_ncu: Vec<crate::analysis::sampled::Agreement>,
    /// Over the configurations of at least 5% of the range's time at 80% coverage or more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) agreement: Option<AgreementSummary>,
    /// The metrics the pass's set asked for that the export does not list (nsys leaves out a
    /// counter the GPU cannot sample without a word).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) dropped: Vec<String>,
    /// Why the bytes per step are not from the byte counters the export lists, or why none
    /// are given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) bytes_note: Option<String>,
}

#[derive(Debug, Serialize)]
pub(crate) struct AgreementSummary {
    pub(crate) compared: usize,
    /// |sampled - ncu| DRAM, in points of % of peak: time-weighted mean, and the largest.
    pub(crate) dram_mean_diff_points: f64,
    pub(crate) dram_worst_diff_points: f64,
    /// Share of the compared time with a sampled class whose bound classes agree, in % (None:
    /// no compared configuration has a sampled class).
    pub(crate) same_class_pct: Option<f64>,
    /// Compared configurations without a sampled class: their launches are shorter than the
    /// sample window (rules::SAMPLED_WINDOW).
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) unclassed: usize,
    /// Which configurations were compared: at least this share of the range's time and this
    /// coverage (the reports print them).
    #[serde(skip)]
    pub(crate) min_share_pct: f64,
    #[serde(skip)]
    pub(crate) min_coverage_pct: f64,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

use crate::rules::COMPARED_MIN_SHARE_PCT;

pub(crate) fn gpu_metrics(a: &Artifacts) -> Option<GpuMetrics> {
    use crate::analysis::sampled;
    let s = a.sampled.as_ref()?;
    let (share, coverage) = (
        COMPARED_MIN_SHARE_PCT,
        crate::rules::SAMPLED_MIN_COVERAGE_PCT,
    );
    let agreement =
        sampled::agreement_stats(&s.beside_ncu, share, coverage).map(|c| AgreementSummary {
            compared: c.configs,
            dram_mean_diff_points: c.dram_mean_diff,
            dram_worst_diff_points: c.dram_worst_diff,
            same_class_pct: c.same_class_pct,
            unclassed: c.unclassed,
            min_share_pct: share,
            min_coverage_pct: coverage,
        });
    Some(GpuMetrics {
        frequency_hz: s.frequency_hz,
        all_kernels: s.whole,
        note: s.note.clone(),
        not_sampled: s.not_sampled.clone(),
        picked: s.picked.clone(),
        rank: s.rank,
        rule: Bound::SAMPLED_RULE,
        source: a.sampled_source().to_string(),
        reused: s.reused.clone(),
        instances: s.instances.clone(),
        beside_ncu: s.beside_ncu.clone(),
        agreement,
        dropped: s.dropped.clone(),
        bytes_note: s.bytes_note.clone(),
    })
}

/// Every range's figures (what `stage2 diff` compares).
pub(crate) fn summary(a: &Artifacts) -> Summary {
    summary_of(a, &|_| true)
}

/// The figures with only the ranges `keep` names in `ranges` and `ledger`.
pub(crate) fn summary_of(a: &Artifacts, keep: &dyn Fn(&str) -> bool) -> Summary {
    let (total, launches) = a.kernel_totals();
    let captured = a.captured();
    let wall = captured.as_ref().map(|c| c.wall_ns);
    let mut sources = BTreeMap::new();
    if a.kernels_nsys.is_some() {
        sources.insert("kernels".into(), a.kern_sum_file.clone());
    }
    if !a.range_stats.is_empty() {
        sources.insert("ranges".into(), a.sqlite_file.clone());
    } else if a.ranges.is_some() {
        sources.insert("ranges".into(), a.nvtx_sum_file.clone());
    }
    if a.api.is_some() {
        sources.insert("api".into(), a.api_sum_file.clone());
    }
    if !a.ncu_csv_file.is_empty() {
        sources.insert("ncu_metrics".into(), a.ncu_csv_file.clone());
    }
    Summary {
        schema_version: SCHEMA_VERSION,
        run_id: a.run_id.clone(),
        stage2_version: env!("CARGO_PKG_VERSION").to_string(),
        gpu: a.env_str(&["gpus", "0", "name"]),
        nsys_capture: a.focus.range().map(str::to_string),
        ncu_include: a.ncu_include().map(str::to_string),
        timed_passes: a.repeats.as_ref().map_or(1, |r| r.passes),
        passes: a
            .status
            .as_ref()
            .map(|s| s.passes.clone())
            .unwrap_or_default(),
        totals: Totals {
            kernel_time_ns: total,
            kernel_launches: launches,
            distinct_kernels: a.records.len(),
            ncu_kernels_measured: a
                .records
                .iter()
                .chain(&a.ncu_records)
                .filter(|r| r.ncu_instances > 0)
                .count(),
            ncu_coverage_pct: a.ncu_coverage_pct(),
            ncu_left_out: if a.ncu_coverage_pct().is_some() && a.ncu_records.is_empty() {
                a.records
                    .iter()
                    .filter(|r| r.ncu_instances == 0)
                    .map(|r| r.rank)
                    .collect()
            } else {
                Vec::new()
            },
            capture_range_wall_ns: wall,
            gpu_busy_of_range_pct: captured.as_ref().map(|c| c.busy_pct()),
            gpu_working_of_range_pct: captured.as_ref().map(|c| c.working_pct()),
            kernel_time_runs: a.repeats.as_ref().map(|r| r.kernel_time_ns.clone()),
        },
        ranges: if a.range_stats.is_empty() {
            a.ranges
                .iter()
                .flatten()
                .filter(|r| keep(r.name()))
                .map(|r| Range {
                    name: r.name().to_string(),
                    style: r.style.clone(),
                    instances: r.instances,
                    total_ns: r.total_ns,
                    avg_ns: r.avg_ns,
                    kernel_ns: None,
                    launches: None,
                    graph_kernels: None,
                    gpu_projection_ns: None,
                    gpu_busy_ns: None,
                    gpu_busy_of_projection_pct: None,
                    gpu_busy_of_range_pct: None,
                    per_instance: None,
                    runs: range_runs(a, r.name()),
                    gpu_idle: None,
                    dram_per_step: None,
                })
                .collect()
        } else {
            a.range_stats
                .iter()
                .filter(|r| keep(&r.name))
                .map(|r| Range {
                    name: r.name.clone(),
                    style: Some(r.style.clone()),
                    instances: r.instances,
                    total_ns: r.wall_ns as f64,
                    avg_ns: r.avg_wall_ns,
                    kernel_ns: Some(r.kernel_ns as f64),
                    launches: Some(r.launches),
                    graph_kernels: Some(r.graph_kernels),
                    gpu_projection_ns: Some(r.proj_ns as f64),
                    gpu_busy_ns: Some(r.busy_ns as f64),
                    gpu_busy_of_projection_pct: Some(r.gpu_busy_pct),
                    gpu_busy_of_range_pct: Some(r.busy_of_range_pct()),
                    per_instance: Some(PerInstance {
                        wall_ns: r.wall_spread,
                        gpu_projection_ns: r.proj_spread,
                        kernels: r.launches_spread,
                    }),
                    runs: range_runs(a, &r.name),
                    gpu_idle: Some(GpuIdle {
                        gaps: r.idle_gaps,
                        idle_ns: r.idle_ns,
                        largest_gap_ns: r.largest_gap_ns,
                        memcpy_ns: r.memcpy_ns,
                    }),
                    dram_per_step: a.steps().filter(|s| s.range == r.name).cloned(),
                })
                .collect()
        },
        ranges_left_out: None,
        peaks: a.peaks,
        ranks: a.rank_data.clone(),
        kernels: a
            .records
            .iter()
            .chain(&a.ncu_records)
            .map(|r| Kernel {
                rank: r.rank,
                name: r.name.clone(),
                short_name: r.short_name(),
                instances: r.instances,
                total_time_ns: r.total_time_ns,
                avg_time_ns: r.avg_time_ns,
                gpu_time_pct: r.gpu_time_pct,
                sm_throughput_pct: r.sm_throughput_pct,
                dram_throughput_pct: r.dram_throughput_pct,
                bound: r.bound,
                ncu_instances: r.ncu_instances,
                ncu_cached_from: r.ncu_cached_from.clone(),
                time_source: r.time_source,
                nvtx_range: r.nvtx_range.clone(),
                roofline: a.point(r),
                arithmetic_intensity: a.point(r).and_then(|p| p.intensity()),
                mangled: r.mangled.clone(),
                per_launch: r.per_launch,
                runs: a
                    .repeats
                    .as_ref()
                    .and_then(|x| x.kernels.get(&r.name).cloned()),
                sampled: r.sampled.clone(),
            })
            .collect(),
        gpu_metrics: gpu_metrics(a),
        ledger: a.ledger.iter().filter(|l| keep(&l.name)).cloned().collect(),
        python_samples: a.python.clone(),
        operators: a.operators.clone(),
        per_token: a.per_token.clone(),
        sources,
    }
}

fn range_runs(a: &Artifacts, name: &str) -> Option<Stats> {
    a.repeats.as_ref()?.ranges.get(name).cloned()
}
