//! Analysis: what a finished run directory holds, parsed and joined into kernel records, range
//! figures, selection, roofline points and comparisons. Nothing here renders; `report/` reads
//! these values and writes files.

pub(crate) mod attention;
pub(crate) mod batching;
pub(crate) mod cadence;
pub(crate) mod census;
pub(crate) mod copies;
pub(crate) mod datasheet;
pub(crate) mod diff;
pub(crate) mod durations;
pub(crate) mod graphs;
pub(crate) mod infer;
pub(crate) mod instances;
pub mod kernels;
pub(crate) mod ledger;
mod load;
pub(crate) mod nesting;
pub(crate) mod noise;
pub(crate) mod nvidia;
pub(crate) mod nvtx;
pub(crate) mod observer;
pub(crate) mod ops;
pub(crate) mod precision;
pub(crate) mod pysamples;
pub mod ranges;
pub(crate) mod ranks;
pub(crate) mod repeats;
pub(crate) mod roles;
pub(crate) mod roofline;
pub(crate) mod sampled;
pub mod scan;
pub(crate) mod select;
pub(crate) mod shapes;
pub(crate) mod spec;
pub(crate) mod summary;
pub(crate) mod tensor;
pub(crate) mod tokens;
pub(crate) mod work;

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::config::{Capture, Config};
use crate::error::Error;
use crate::model::{self, Bound, KernelRecord};
use crate::parse::ncu::NcuReport;
use crate::parse::nsys::{ApiSum, KernelSum, RangeSum};
use crate::parse::sqlite::NvtxRange;
use crate::rundir::record::RunRecord;
use crate::rundir::status::Status;
use crate::rundir::{KERN_SUM, NVTX_SUM};
use ranges::RangeStats;
use roofline::Peaks;

/// The parsed contents of a run directory.
pub(crate) struct Artifacts {
    pub(crate) run_id: String,
    pub(crate) config: Config,
    /// Python stack samples placed in the ranges (`workload.python_sampling_hz`).
    pub(crate) python: Option<pysamples::PyReport>,
    /// nsys's sampled GPU metrics of the captured range's kernels (None: the run sampled none).
    pub(crate) sampled: Option<sampled::Sampled>,
    /// The range figures beside NVIDIA's reading of the same export (None: no `nvidia/`).
    pub(crate) nvidia: Option<nvidia::Crosscheck>,
    /// ncu's figures beside NVIDIA's summary of the same report (None: none in `nvidia/`).
    pub(crate) nvidia_ncu: Option<nvidia::NcuCrosscheck>,
    /// PyTorch operators from their NVTX ranges (nsys `--pytorch=...`), when the run has them.
    pub(crate) operators: Vec<ops::OpRow>,
    /// Per phase: tokens, time per instance and per token, floors (see analysis::tokens).
    pub(crate) per_token: Vec<tokens::PhaseCost>,
    /// The captured range's forward passes per step and sequences per pass, by its tokens
    /// marks (None: no marks inside its instances).
    pub(crate) forwards: Option<batching::Forwards>,
    /// Each range under nsys and in the baseline pass (no profiler), and the baseline's file.
    pub(crate) observed: Vec<observer::Observed>,
    pub(crate) baseline_file: String,
    pub(crate) kernels_nsys: Option<Vec<KernelSum>>,
    pub(crate) ranges: Option<Vec<RangeSum>>,
    pub(crate) api: Option<Vec<ApiSum>>,
    pub(crate) ncu: Option<NcuReport>,
    /// The file the reports cite for ncu's figures, relative to the run directory: its raw
    /// CSV, or `ncu/cached.json` where the metrics cache served them all (empty without one).
    pub(crate) ncu_csv_file: String,
    pub(crate) env: Option<serde_json::Value>,
    pub(crate) status: Option<Status>,
    pub(crate) stage1_ops: Option<PathBuf>,
    /// Kernels by nsys time, with ncu counters joined when both tools saw the same range.
    pub(crate) records: Vec<KernelRecord>,
    /// ncu's kernels in their own table, when ncu profiled another range than nsys captured.
    pub(crate) ncu_records: Vec<KernelRecord>,
    /// The share of the measured kernels' nsys time in launch configurations ncu measured.
    pub(crate) shape_cover: Option<shapes::Cover>,
    /// The kernel table's launches by thread blocks, by kernel name, where the table is the
    /// captured range's from the export (empty otherwise); and the GPU's SM count there.
    pub(crate) kernel_blocks: std::collections::HashMap<String, Vec<scan::Blocks>>,
    pub(crate) sm_count: Option<u32>,
    /// How many CUDA devices the export's kernels ran on (one process may use several: a
    /// model split across GPUs); 0 where the export does not say.
    pub(crate) kernel_devices: usize,
    /// Per NVTX range figures from the nsys SQLite export (empty without one; rank 0's in a
    /// multi-rank run).
    pub(crate) range_stats: Vec<RangeStats>,
    /// Per-rank nsys figures of a multi-rank run (empty for one process).
    pub(crate) rank_data: Vec<ranks::RankData>,
    /// The SQLite export the per-range figures come from, relative to the run directory.
    pub(crate) sqlite_file: String,
    /// Where the kernel table's totals come from.
    pub(crate) kern_sum_file: String,
    /// Where the NVTX and API summaries came from (rank 0's in a multi-rank run).
    pub(crate) nvtx_sum_file: String,
    pub(crate) api_sum_file: String,
    /// What the run decided at plan time (the capture, its sampling, ncu's scope), read back
    /// from status.json.
    pub(crate) record: RunRecord,
    /// The range the run is about, decided once from the record's capture.
    pub(crate) focus: Focus,
    /// CUDA graph launches per range name, read from the export (see analysis::graphs).
    pub(crate) graphs: BTreeMap<String, graphs::GraphUse>,
    /// Repeated ranges whose instances fall into groups (see analysis::instances).
    pub(crate) instance_groups: Vec<instances::RangeGroups>,
    /// The loop around the captured range (see analysis::cadence).
    pub(crate) cycle: Option<cadence::Loop>,
    /// Units of the ncu metrics.
    pub(crate) ncu_units: BTreeMap<String, String>,
    /// The device's peaks, from ncu's peak metrics.
    pub(crate) peaks: Option<Peaks>,
    /// Figures over the timed nsys passes, when `run.repeat` made more than one.
    pub(crate) repeats: Option<repeats::Repeats>,
    /// Why the ncu export could not be read (the reports are made without it and say so).
    pub(crate) ncu_problem: Option<Error>,
    /// One instance of ncu's range measured whole (`ncu.graph_step`), and its file.
    pub(crate) graph_step: Option<(graphs::MeasuredStep, String)>,
    /// Where each push/pop range's wall time goes on its thread (empty without the SQLite
    /// export's API table).
    pub(crate) ledger: Vec<ledger::RangeLedger>,
    /// The attention kernels each phase ran (empty without the SQLite export).
    pub(crate) attention: Vec<attention::PhaseAttention>,
    /// The captured range's instances and the work each did (empty without the export).
    pub(crate) step_work: Vec<work::Work>,
    /// Speculative decoding's marks and ranges (None: the export has no `stage2:spec` mark).
    pub(crate) speculation: Option<spec::Speculation>,
    /// What the sampled steps' range must read by the model's own numbers (the hook's marks).
    pub(crate) census: Option<census::Census>,
    /// One steady step's FP8 scaling chains (None: no FP8 matrix product, or no export).
    pub(crate) scale_chains: Option<precision::ScaleChains>,
}

/// The range a run is about, decided once from its record: the one nsys's capture was gated
/// on, as the export names it (the cudaProfilerStart/Stop windows read as one), in its domain.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Focus {
    range: Option<String>,
    /// The NVTX domain the range lives in, where the capture named one.
    pub(crate) domain: Option<String>,
    /// The capture held the range's first instance (or window) alone.
    pub(crate) first_only: bool,
}

impl Focus {
    pub(crate) fn of(c: &Capture) -> Focus {
        Focus {
            range: c.range().map(str::to_string),
            domain: c.domain().map(str::to_string),
            first_only: c.first_only(),
        }
    }

    /// The range's name (None: the capture is the whole run).
    pub(crate) fn range(&self) -> Option<&str> {
        self.range.as_deref()
    }
}

/// The captured range's headline figures, from the best source the run has.
pub(crate) struct Captured {
    pub(crate) name: String,
    pub(crate) wall_ns: f64,
    pub(crate) kernel_ns: f64,
    pub(crate) launches: u64,
    /// Of `launches`, kernels launched by CUDA graphs (0 when graph kernels are not traced).
    pub(crate) graph_kernels: u64,
    /// The GPU projection (first start to last end of the work launched in the range), when
    /// the SQLite export gives it.
    pub(crate) proj_ns: Option<f64>,
    /// Union of the kernels' execution intervals (never above the projection).
    pub(crate) busy_ns: f64,
    /// Of `kernel_ns`, time the first rank's NCCL kernels spent waiting for late peers (0 for
    /// one process): the GPU is "busy" then without doing work.
    pub(crate) nccl_wait_ns: f64,
    /// The files the figures come from.
    pub(crate) source: String,
}

impl Captured {
    /// The range's time on either clock: the longer of its CPU wall and its GPU projection.
    pub(crate) fn span_ns(&self) -> f64 {
        self.wall_ns.max(self.proj_ns.unwrap_or(0.0))
    }

    /// GPU busy (NCCL waiting included) as a share of the range's time on either clock (the
    /// longer of CPU wall and GPU projection); never above 100%.
    pub(crate) fn busy_pct(&self) -> f64 {
        let span = self.span_ns().max(1.0);
        (100.0 * self.busy_ns / span).min(100.0)
    }

    /// GPU busy as a share of the range's time on either clock (the longer of CPU wall and
    /// GPU projection), less the time spent waiting in NCCL kernels; never above 100%.
    pub(crate) fn working_pct(&self) -> f64 {
        let span = self.span_ns().max(1.0);
        (100.0 * (self.busy_ns - self.nccl_wait_ns).max(0.0) / span).min(100.0)
    }
}

/// The kernel table's launches too small to fill the GPU: at most `blocks` thread blocks
/// (half of `sms`), `ns` of kernel time, its share of the table's (None: no kernel time).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SmallGrids {
    pub(crate) sms: u32,
    pub(crate) blocks: i64,
    pub(crate) ns: i64,
    pub(crate) share_pct: Option<f64>,
}

impl Artifacts {
    /// Nothing to report: no kernels from either tool, no NVTX ranges.
    pub(crate) fn is_empty(&self) -> bool {
        self.records.is_empty()
            && self.ncu_records.is_empty()
            && self.range_stats.is_empty()
            && self.ranges.as_ref().is_none_or(|r| r.is_empty())
    }

    /// Whether the kernel table's rows sum the captured range's launches (else every launch
    /// in the capture).
    pub(crate) fn kernel_table_in_range(&self) -> bool {
        self.focus.range().is_some()
            && self.kern_sum_file == self.sqlite_file
            && self.capture_range_missing().is_none()
    }

    /// The NVTX range the capture names, where the export's ranges hold no instance of it (a
    /// typo such as `decod`, or a capture that opened on another name): nothing in the
    /// export is that range's. None where the capture names no range, or no range was read.
    pub(crate) fn capture_range_missing(&self) -> Option<&str> {
        let Capture::NvtxRange { name, .. } = &self.record.nsys.capture else {
            return None;
        };
        let read = self.range_stats.iter().any(|r| r.instances > 0);
        let held = self
            .range_stats
            .iter()
            .any(|r| r.name == *name && r.instances > 0);
        (read && !held).then_some(name.as_str())
    }

    /// The captured range and how many of its instances the export holds (None: no range).
    pub(crate) fn captured_instances(&self) -> Option<(&str, u64)> {
        let range = self.focus.range()?;
        let n = self
            .range_stats
            .iter()
            .filter(|s| s.name == range)
            .map(|s| s.instances)
            .sum();
        Some((range, n))
    }

    /// `cudaGraphLaunch` calls in the API summary of the whole capture (0 without one).
    pub(crate) fn graph_launches(&self) -> u64 {
        self.api
            .iter()
            .flatten()
            .filter(|r| {
                r.name.starts_with("cudaGraphLaunch") || r.name.starts_with("cuGraphLaunch")
            })
            .map(|r| r.calls)
            .sum()
    }

    /// The graph launches of range `name` whose kernels the export does not hold: nsys traced
    /// them as whole graphs (its default `--cuda-graph-trace=graph`), whatever the config
    /// says. Read from the export: launches in the range with no graph kernel traced in it,
    /// or launches recorded as whole-graph items. Without a SQLite export, from the API
    /// summary and the config. None when the range's graph kernels are all there.
    pub(crate) fn graph_level(&self, name: &str) -> Option<graphs::GraphUse> {
        if self.range_stats.is_empty() {
            let hidden = self.graph_launches() > 0
                && self.config.nsys.cuda_graph_trace == crate::config::CudaGraphTrace::Graph;
            return hidden.then(|| graphs::GraphUse {
                launches: self.graph_launches(),
                ..Default::default()
            });
        }
        let g = self.graphs.get(name)?;
        let traced = self
            .range_stats
            .iter()
            .find(|r| r.name == name)
            .map_or(0, |r| r.graph_kernels);
        (g.launches > 0 && (g.graph_level > 0 || traced == 0)).then(|| g.clone())
    }

    /// The ledgers by range name (one lookup, not a scan, per name).
    /// The main kind of a range's instances when its first ones are a warm-up
    /// (analysis::instances: the warm-up rule, or `report.instances=skip=N`) and the rest are
    /// one group: that group, for verdicts that should not mix the two.
    pub(crate) fn steady_group(&self, range: &str) -> Option<&instances::Group> {
        let g = self.instance_groups.iter().find(|g| g.name == range)?;
        // A positional warm-up, or the instances that compiled (set apart by that evidence):
        // the other group is the steady one.
        let warmup = g.rule == instances::WARMUP
            || g.rule == instances::SKIP
            || g.rule == instances::COMPILING;
        match g.groups.as_slice() {
            [_, steady] if warmup && steady.gpu_busy_of_range_pct.is_some() => Some(steady),
            _ => None,
        }
    }

    /// One instance of the captured range to read a step's launches from: the middle one of
    /// its steady instances, else of them all.
    pub(crate) fn one_step<'r>(&self, phases: &'r [NvtxRange]) -> Option<&'r NvtxRange> {
        let name = self.focus.range()?;
        let mut all: Vec<&NvtxRange> = phases.iter().filter(|r| &*r.name == name).collect();
        all.sort_by_key(|r| r.start);
        let k = match self.steady_group(name) {
            Some(g) => *g.members.get(g.members.len() / 2)?,
            None => all.len() / 2,
        };
        all.get(k).copied()
    }

    pub(crate) fn ledger_by_name(&self) -> ledger::ByName<'_> {
        ledger::ByName::new(&self.ledger)
    }

    /// The GPUs of the nsys and ncu passes when they ran at once (`ncu.second_gpu`).
    pub(crate) fn second_gpu(&self) -> Option<&crate::rundir::status::SecondGpu> {
        let ncu = self.status.as_ref()?.passes.get("ncu")?.ncu.as_ref()?;
        ncu.second_gpu.as_ref()
    }

    /// The captured range's DRAM bytes per step from the samples (None: none measured).
    pub(crate) fn steps(&self) -> Option<&sampled::bytes::StepBytes> {
        self.sampled.as_ref()?.steps.as_ref()
    }

    /// The file the sampled figures come from: the export, or the earlier run's figures this
    /// run reused.
    pub(crate) fn sampled_source(&self) -> &str {
        match self.sampled.as_ref().and_then(|s| s.reused.as_ref()) {
            Some(r) => &r.source,
            None => &self.sqlite_file,
        }
    }

    /// The kernel table's time in launches of at most [`crate::rules::small_grid_blocks`]
    /// thread blocks; None without the export's grids or one SM count.
    pub(crate) fn small_grids(&self) -> Option<SmallGrids> {
        let sms = self.sm_count?;
        let blocks = crate::rules::small_grid_blocks(sms);
        if self.kernel_blocks.is_empty() {
            return None;
        }
        let ns: i64 = self
            .kernel_blocks
            .values()
            .map(|by| scan::time_within(by, blocks))
            .sum();
        let (total, _) = self.kernel_totals();
        Some(SmallGrids {
            sms,
            blocks,
            ns,
            share_pct: (total > 0.0).then(|| 100.0 * ns as f64 / total),
        })
    }

    /// The run's kernels by full name: the kernel table's and ncu's own table's.
    fn kernel_names(&self) -> impl Iterator<Item = &str> {
        self.records
            .iter()
            .chain(&self.ncu_records)
            .map(|r| r.name.as_str())
    }

    /// A kernel as the reports list it outside the tables: its display name, with the tag the
    /// tables give it where another of the run's kernels shares that name.
    pub(crate) fn kernel_label(&self, name: &str) -> String {
        model::label_in(name, self.kernel_names())
    }

    /// Whether the tables tag this kernel (another of the run's kernels shares its display
    /// name).
    pub(crate) fn kernel_tagged(&self, name: &str) -> bool {
        model::shares_display_name(name, self.kernel_names())
    }

    /// Total kernel time and launches on the ranking basis (nsys when present).
    pub(crate) fn kernel_totals(&self) -> (f64, u64) {
        self.records
            .iter()
            .filter(|r| r.gpu_time_pct.is_some())
            .fold((0.0, 0), |(t, n), r| (t + r.total_time_ns, n + r.instances))
    }

    /// Share of kernel time whose kernels have ncu metrics, in %. Where ncu profiled another
    /// range than nsys captured, of that range's kernel time in the export (see
    /// [`Artifacts::ncu_range_coverage_pct`]).
    pub(crate) fn ncu_coverage_pct(&self) -> Option<f64> {
        self.ncu.as_ref()?;
        if !self.ncu_records.is_empty() {
            return self.ncu_range_coverage_pct();
        }
        let share = |keep: &dyn Fn(&KernelRecord) -> bool| -> f64 {
            self.records
                .iter()
                .filter(|r| keep(r))
                .filter_map(|r| r.gpu_time_pct)
                .sum()
        };
        let measured = share(&|r| r.ncu_instances > 0);
        if !self.ncu_skips_nccl() {
            return Some(measured);
        }
        // ncu was kept off NCCL kernels: its coverage is of the time it could have measured.
        let nccl = share(&|r| model::is_nccl(&r.name));
        Some(100.0 * measured / (100.0 - nccl).max(1e-9))
    }

    /// The selection left NCCL kernels out of ncu (`ncu.include_nccl`, see `select`) and the
    /// run has some.
    /// ncu's range, where it is another than nsys captured and the export holds it: the
    /// measured kernels' time there (the scan's tally of their launches in that range) over
    /// the range's kernel time. None where the range is nested in its own name (its kernel
    /// time counts inner launches twice) or ncu left NCCL kernels out (the basis would be the
    /// time outside NCCL, which the export's range figures do not split).
    fn ncu_range_coverage_pct(&self) -> Option<f64> {
        let name = self.ncu_range()?;
        let r = self.range_stats.iter().find(|r| r.name == name)?;
        let nccl = !self.config.ncu.include_nccl
            && self.ncu_records.iter().any(|k| model::is_nccl(&k.name));
        if r.nested_in_own_name > 0 || r.kernel_ns <= 0 || nccl {
            return None;
        }
        let measured = self.shape_cover?.total_ns;
        Some((100.0 * measured / r.kernel_ns as f64).min(100.0))
    }

    /// The NVTX include expression the ncu pass used (None: not gated, or no ncu pass).
    pub(crate) fn ncu_include(&self) -> Option<&str> {
        self.record.ncu.as_ref()?.include.as_deref()
    }

    /// The range ncu profiled, by name (the innermost range its NVTX include expression
    /// names; None for an expression that names no one range).
    pub(crate) fn ncu_range(&self) -> Option<String> {
        self.record.ncu.as_ref()?.range.clone()
    }

    pub(crate) fn ncu_skips_nccl(&self) -> bool {
        !self.config.ncu.include_nccl && self.records.iter().any(|r| model::is_nccl(&r.name))
    }

    /// Roofline figures of one kernel, when ncu measured it.
    pub(crate) fn point(&self, r: &KernelRecord) -> Option<roofline::Point> {
        roofline::point(&roofline::Metrics {
            values: &r.metrics,
            units: &self.ncu_units,
        })
    }

    /// The captured range's wall time, kernel time and launches: from the SQLite export's
    /// per-range attribution when there is one, else from the stats CSVs.
    pub(crate) fn captured(&self) -> Option<Captured> {
        let name = self.focus.range()?.to_string();
        // Single-rank views are the first rank's; so is the wait (see ranks::nccl_waits).
        let wait = self.rank_data.first().and_then(|r| r.nccl_wait_ns);
        if let Some(s) = self.range_stats.iter().find(|s| s.name == name) {
            return Some(Captured {
                name,
                wall_ns: s.wall_ns as f64,
                kernel_ns: s.kernel_ns as f64,
                launches: s.launches,
                graph_kernels: s.graph_kernels,
                proj_ns: Some(s.proj_ns as f64),
                busy_ns: s.busy_ns as f64,
                nccl_wait_ns: wait.unwrap_or(0.0).min(s.busy_ns as f64),
                source: self.sqlite_file.clone(),
            });
        }
        // The range as nvtx_sum reports it.
        let r = self.ranges.as_ref()?.iter().find(|r| r.name() == name)?;
        let (kernel_ns, launches) = self.kernel_totals();
        Some(Captured {
            name,
            wall_ns: r.total_ns,
            kernel_ns,
            launches,
            graph_kernels: 0,
            proj_ns: None,
            // Without the timeline, overlap is unknown: the kernel sum, at most the wall time.
            busy_ns: kernel_ns.min(r.total_ns),
            nccl_wait_ns: wait.unwrap_or(0.0).min(kernel_ns),
            source: format!("{NVTX_SUM}, {KERN_SUM}"),
        })
    }

    /// The profilers of this run that were test doubles replaying a recorded capture (env.json
    /// `tools.<name>.replay`, from their `--version`).
    pub(crate) fn replayed_tools(&self) -> Vec<&'static str> {
        ["nsys", "ncu"]
            .into_iter()
            .filter(|t| {
                self.env
                    .as_ref()
                    .and_then(|e| e.get("tools")?.get(*t)?.get("replay")?.as_bool())
                    .unwrap_or(false)
            })
            .collect()
    }

    pub(crate) fn env_str(&self, path: &[&str]) -> Option<String> {
        let mut v = self.env.as_ref()?;
        for p in path {
            v = match p.parse::<usize>() {
                Ok(i) => v.get(i)?,
                Err(_) => v.get(*p)?,
            };
        }
        v.as_str().map(str::to_string)
    }
}

impl Artifacts {
    /// A kernel whose SM throughput is high but whose FLOP/byte is below the FP32 ridge is busy
    /// with instructions that are not arithmetic (loads, stores, address math): not
    /// compute-bound in the roofline's sense, so it is classed instruction-bound.
    fn classify_bounds(&mut self) {
        let Some(ridge) = self.peaks.map(|p| p.ridge_fp32()) else {
            return;
        };
        let units = &self.ncu_units;
        for r in self.records.iter_mut().chain(self.ncu_records.iter_mut()) {
            if r.bound != Some(Bound::Compute) {
                continue;
            }
            let point = roofline::point(&roofline::Metrics {
                values: &r.metrics,
                units,
            });
            if point.and_then(|p| p.intensity()).is_some_and(|i| i < ridge) {
                r.bound = Some(Bound::Instruction);
            }
        }
    }
}
