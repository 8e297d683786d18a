//! The decided document: a run's parsed data, its findings, its summary figures and the few
//! figures only the tables print (stragglers, tensor-core types, ncu's range), built once per
//! render. The renderers in `report/` read only this; they decide nothing. summary.json is
//! its serialized part ([`Document`]), whose JSON Schema is `src/findings/summary.schema.json`.
//!
//! The tables' rows stay the analysis's typed rows, borrowed, not copied: a run with 73k range
//! names has as many rows, and a second copy of them is memory the report does not need. They
//! are named here for the renderers.

use std::collections::BTreeMap;

use serde::Serialize;

pub(crate) use super::listed::{LeftOut, Listed, RANGES_CSV};
use super::Findings;
// `stage2 diff`'s document: two runs' figures set side by side.
pub(crate) use crate::analysis::diff::{Diff, Presence, Test, CONFIDENCE};
pub(crate) use crate::analysis::instances::Group;
pub(crate) use crate::analysis::ledger::{Parts, RangeLedger};
pub(crate) use crate::analysis::repeats::Repeats;
pub(crate) use crate::analysis::roofline::Peaks;
pub(crate) use crate::analysis::sampled::bytes::{BandwidthSource, BytesSource, StepBytes};
pub(crate) use crate::analysis::sampled::reuse::{Reused, FILE as REUSED_FIGURES};
pub(crate) use crate::analysis::sampled::Agreement;
pub(crate) use crate::analysis::summary::{GpuMetrics, RangesLeftOut, Summary};
pub(crate) use crate::analysis::tokens::PhaseCost;
pub(crate) use crate::analysis::work::WorkKind;
pub(crate) use crate::analysis::{Artifacts, Focus};
use crate::config::Capture;

/// What the renderers read: the run's facts, its named tables, the layout the config asks
/// for, and what was decided from them. No window onto the analysis: a renderer reads these
/// names or the few lookups below, nothing else.
pub(crate) struct Decided<'a> {
    analysis: &'a Artifacts,
    pub(crate) facts: Facts<'a>,
    pub(crate) tables: Tables<'a>,
    pub(crate) layout: Layout,
    pub(crate) findings: Findings,
    pub(crate) summary: Summary,
    /// Per range name of a multi-rank run: the median rank's wall time, the slowest rank and
    /// its wall time (see analysis::ranks::straggler).
    pub(crate) stragglers: BTreeMap<String, (f64, u32, f64)>,
    /// The tensor-core source types ncu measured (BF16, FP16, ...), from its metric names.
    pub(crate) tensor_sources: Vec<String>,
    /// The ranges kernels.md's range tables list (`report.max_ranges`).
    pub(crate) listed: Listed,
}

/// The run's facts: what it is, where each figure's file is, what it asked of the tools.
pub(crate) struct Facts<'a> {
    pub(crate) run_id: &'a str,
    /// What the nsys pass captured, as the run recorded it.
    pub(crate) capture: &'a Capture,
    /// The range the run is about (see [`Focus`]).
    pub(crate) focus: &'a Focus,
    /// The SQLite export the per-range figures come from, relative to the run directory.
    pub(crate) sqlite_file: &'a str,
    /// Where the kernel table's totals come from.
    pub(crate) kern_sum_file: &'a str,
    /// Where the NVTX summary came from (rank 0's in a multi-rank run).
    pub(crate) nvtx_sum_file: &'a str,
    /// The file the reports cite for ncu's figures: its raw CSV, or `ncu/cached.json` where
    /// the metrics cache served them all (empty without one).
    pub(crate) ncu_csv_file: &'a str,
    /// The baseline pass's file (empty without one).
    pub(crate) baseline_file: &'a str,
    /// Why the ncu export could not be read.
    pub(crate) ncu_problem: Option<&'a crate::error::Error>,
    pub(crate) status: Option<&'a crate::rundir::status::Status>,
    /// env.json as the run wrote it.
    pub(crate) env: Option<&'a serde_json::Value>,
    /// stage1's operator file, where the run has one.
    pub(crate) stage1_ops: Option<&'a std::path::Path>,
    /// How many CUDA devices the export's kernels ran on (0: not known).
    pub(crate) kernel_devices: usize,
    /// The workload's command line and the ncu set asked for, as the config gave them.
    pub(crate) workload_argv: &'a [String],
    pub(crate) workload_module: Option<&'a str>,
    pub(crate) ncu_set: &'a str,
    /// Python stack samples per second asked of the workload (0: none).
    pub(crate) python_sampling_hz: f64,
}

/// The run's tables, by name.
pub(crate) struct Tables<'a> {
    /// Kernels by nsys time, with ncu counters joined where both tools saw the same range.
    pub(crate) kernels: &'a [crate::model::KernelRecord],
    /// ncu's kernels in their own table, where ncu profiled another range than nsys captured.
    pub(crate) ncu_kernels: &'a [crate::model::KernelRecord],
    /// nsys's kernel summary rows, where the run has them.
    pub(crate) kernel_sums: Option<&'a [crate::parse::nsys::KernelSum]>,
    /// Per NVTX range figures from the export.
    pub(crate) ranges: &'a [crate::analysis::ranges::RangeStats],
    /// nsys's own NVTX summary rows (`nsys stats nvtx_sum`).
    pub(crate) nvtx_sum: Option<&'a [crate::parse::nsys::RangeSum]>,
    /// Where each push/pop range's wall time goes on its thread.
    pub(crate) ledger: &'a [RangeLedger],
    pub(crate) operators: &'a [crate::analysis::ops::OpRow],
    /// Per-rank figures of a multi-rank run.
    pub(crate) ranks: &'a [crate::analysis::ranks::RankData],
    pub(crate) per_token: &'a [PhaseCost],
    pub(crate) sampled: Option<&'a crate::analysis::sampled::Sampled>,
    /// Each range under nsys and in the baseline pass.
    pub(crate) observed: &'a [crate::analysis::observer::Observed],
    pub(crate) repeats: Option<&'a Repeats>,
    /// CUDA graph launches per range name.
    pub(crate) graphs: &'a BTreeMap<String, crate::analysis::graphs::GraphUse>,
    /// One instance of ncu's range measured whole, and its file.
    pub(crate) graph_step: Option<&'a (crate::analysis::graphs::MeasuredStep, String)>,
    pub(crate) python: Option<&'a crate::analysis::pysamples::PyReport>,
    pub(crate) ncu: Option<&'a crate::parse::ncu::NcuReport>,
    pub(crate) peaks: Option<&'a Peaks>,
}

/// How the tables are laid out (`report.*`).
pub(crate) struct Layout {
    /// Rows of the kernel tables.
    pub(crate) top_kernels: usize,
    /// Characters of a kernel name in a table cell.
    pub(crate) name_width: usize,
    /// The range a step is (`report.step_range`).
    pub(crate) step_range: String,
}

impl<'a> Decided<'a> {
    /// The captured range's DRAM bytes per step from the nsys pass's samples.
    pub(crate) fn summary_steps(&self) -> Option<&'a StepBytes> {
        self.analysis.steps()
    }
    /// The NVTX include expression the ncu pass used.
    pub(crate) fn ncu_include(&self) -> Option<&'a str> {
        self.analysis.ncu_include()
    }
    /// The range ncu profiled, by name.
    pub(crate) fn ncu_range(&self) -> Option<String> {
        self.analysis.ncu_range()
    }
    /// A kernel as a list or chart names it: its display name, tagged as the tables tag it.
    pub(crate) fn kernel_label(&self, name: &str) -> String {
        self.analysis.kernel_label(name)
    }
    /// A string in env.json at `path`.
    pub(crate) fn env_str(&self, path: &[&str]) -> Option<String> {
        self.analysis.env_str(path)
    }
    /// The profilers of this run that were test doubles replaying a recorded capture.
    pub(crate) fn replayed_tools(&self) -> Vec<&'static str> {
        self.analysis.replayed_tools()
    }
    /// Roofline figures of one kernel, when ncu measured it.
    pub(crate) fn point(
        &self,
        r: &crate::model::KernelRecord,
    ) -> Option<crate::analysis::roofline::Point> {
        self.analysis.point(r)
    }
    /// The wall-time ledger by range name.
    pub(crate) fn ledger_by_name(&self) -> crate::analysis::ledger::ByName<'a> {
        self.analysis.ledger_by_name()
    }
    /// The kernel table's launches too small to fill the GPU.
    pub(crate) fn small_grids(&self) -> Option<crate::analysis::SmallGrids> {
        self.analysis.small_grids()
    }
    /// The GPUs of the two passes run at once.
    pub(crate) fn second_gpu(&self) -> Option<&'a crate::rundir::status::SecondGpu> {
        self.analysis.second_gpu()
    }
    /// The kernel table's kernel time and launches.
    pub(crate) fn kernel_totals(&self) -> (f64, u64) {
        self.analysis.kernel_totals()
    }
    /// Whether the kernel table's rows sum the captured range's launches.
    pub(crate) fn kernel_table_in_range(&self) -> bool {
        self.analysis.kernel_table_in_range()
    }
    /// The range the capture names, where the export holds no instance of it.
    pub(crate) fn capture_range_missing(&self) -> Option<&'a str> {
        self.analysis.capture_range_missing()
    }
    /// The captured range and how many of its instances the export holds.
    pub(crate) fn captured_instances(&self) -> Option<(&'a str, u64)> {
        self.analysis.captured_instances()
    }
}

/// Decide everything the reports say about a run, once.
pub(crate) fn decide(a: &Artifacts) -> Decided<'_> {
    let mut stragglers = BTreeMap::new();
    if a.rank_data.len() > 1 {
        for name in a.rank_data.iter().flat_map(|r| r.ranges.keys()) {
            if stragglers.contains_key(name) {
                continue;
            }
            if let Some(s) = crate::analysis::ranks::straggler(&a.rank_data, name) {
                stragglers.insert(name.clone(), s);
            }
        }
    }
    let mut tensor_sources: Vec<String> = a
        .records
        .iter()
        .chain(&a.ncu_records)
        .flat_map(|r| r.metrics.keys())
        .filter_map(|k| crate::analysis::roofline::tensor_source(k))
        .map(|k| k.split('_').next().unwrap_or(k).to_ascii_uppercase())
        .collect();
    tensor_sources.sort_unstable();
    tensor_sources.dedup();
    let listed = Listed::of_run(a);
    // summary.json holds what the tables list; ranges.csv every range.
    let mut summary = crate::analysis::summary::summary_of(a, &|name| listed.has(name));
    let (_, left) = listed.split(&a.range_stats, |r| &r.name, |r| r.wall_ns.max(r.proj_ns));
    summary.ranges_left_out = left.map(|l| RangesLeftOut {
        ranges: l.rows,
        listed: l.max,
        longest_ns: l.longest_ns,
        file: RANGES_CSV,
    });
    Decided {
        analysis: a,
        facts: facts(a),
        tables: tables(a),
        layout: Layout {
            top_kernels: a.config.report.top_kernels,
            name_width: a.config.report.name_width,
            step_range: a.config.report.step_range.clone(),
        },
        findings: super::derive::all(a, &listed),
        summary,
        stragglers,
        tensor_sources,
        listed,
    }
}

fn facts(a: &Artifacts) -> Facts<'_> {
    Facts {
        run_id: &a.run_id,
        capture: &a.record.nsys.capture,
        focus: &a.focus,
        sqlite_file: &a.sqlite_file,
        kern_sum_file: &a.kern_sum_file,
        nvtx_sum_file: &a.nvtx_sum_file,
        ncu_csv_file: &a.ncu_csv_file,
        baseline_file: &a.baseline_file,
        ncu_problem: a.ncu_problem.as_ref(),
        status: a.status.as_ref(),
        env: a.env.as_ref(),
        stage1_ops: a.stage1_ops.as_deref(),
        kernel_devices: a.kernel_devices,
        workload_argv: &a.config.workload.argv,
        workload_module: a.config.workload.module.as_deref(),
        ncu_set: &a.config.ncu.set,
        python_sampling_hz: a.config.workload.python_sampling_hz,
    }
}

fn tables(a: &Artifacts) -> Tables<'_> {
    Tables {
        kernels: &a.records,
        ncu_kernels: &a.ncu_records,
        kernel_sums: a.kernels_nsys.as_deref(),
        ranges: &a.range_stats,
        nvtx_sum: a.ranges.as_deref(),
        ledger: &a.ledger,
        operators: &a.operators,
        ranks: &a.rank_data,
        per_token: &a.per_token,
        sampled: a.sampled.as_ref(),
        observed: &a.observed,
        repeats: a.repeats.as_ref(),
        graphs: &a.graphs,
        graph_step: a.graph_step.as_ref(),
        python: a.python.as_ref(),
        ncu: a.ncu.as_ref(),
        peaks: a.peaks.as_ref(),
    }
}

/// summary.json: the run's figures, the capture as typed once, and every finding with its
/// evidence. The contract for scripts and agents.
#[derive(Debug, Serialize)]
pub(crate) struct Document<'a> {
    #[serde(flatten)]
    pub(crate) summary: &'a Summary,
    /// What the nsys pass captured (`kind`: whole_run, nvtx_range, profiler_api).
    pub(crate) capture: &'a Capture,
    /// Borrowed: a run with 73k range names has as many findings, and a copy of them is
    /// memory the report does not need.
    pub(crate) findings: &'a Findings,
    /// The words and threshold of every rule the findings cite, by id.
    pub(crate) rules: std::collections::BTreeMap<&'static str, crate::rules::Words>,
}

impl Decided<'_> {
    /// The serialized part of the document.
    pub(crate) fn document(&self) -> Document<'_> {
        Document {
            summary: &self.summary,
            capture: self.facts.capture,
            findings: &self.findings,
            rules: crate::rules::table(self.findings.0.iter().filter_map(|f| f.rule.as_ref())),
        }
    }
}
