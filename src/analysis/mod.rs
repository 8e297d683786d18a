//! Analysis: what a finished run directory holds, parsed and joined into kernel records, range
//! figures, selection, roofline points and comparisons. Nothing here renders; `report/` reads
//! these values and writes files.

pub(crate) mod diff;
pub(crate) mod durations;
pub(crate) mod infer;
pub mod kernels;
pub(crate) mod ledger;
pub(crate) mod nesting;
pub(crate) mod noise;
pub(crate) mod nvtx;
pub(crate) mod ops;
pub(crate) mod pysamples;
pub mod ranges;
pub(crate) mod ranks;
pub(crate) mod repeats;
pub(crate) mod roofline;
pub mod scan;
pub(crate) mod select;
pub(crate) mod summary;
pub(crate) mod tokens;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::analysis::nvtx::{include_and_base, style_for};
use crate::config::Config;
use crate::error::Error;
use crate::model::{self, KernelRecord};
use crate::parse::ncu::{self, NcuReport};
use crate::parse::nsys::{self, ApiSum, KernelSum, RangeSum};
use crate::parse::sqlite::NsysDb;
use crate::rundir::status::{NsysRecord, Status};
use crate::rundir::{RunDir, KERN_SUM, NVTX_SUM};
use ranges::RangeStats;
use roofline::Peaks;

/// The Python samples of the nsys pass (none when the run took none), placed in its ranges.
fn python_evidence(
    run: &RunDir,
    db: &NsysDb,
    ranges: &[crate::parse::sqlite::NvtxRange],
) -> Result<Option<pysamples::PyReport>, Error> {
    let files = crate::parse::pysamples::read_dir(&run.path.join("nsys"))?;
    if files.is_empty() {
        return Ok(None);
    }
    Ok(Some(pysamples::attribute(
        ranges,
        &db.marks("stage2:clock ")?,
        &files,
    )))
}

/// What one streaming pass over the SQLite export gives.
struct Timeline {
    /// The NVTX ranges without the operator ranges (those are `operators`).
    phases: Vec<crate::parse::sqlite::NvtxRange>,
    stats: Vec<RangeStats>,
    /// The captured range's kernels (empty without one, or when it is not in the export).
    kernel_rows: Vec<nsys::KernelSum>,
    /// Their mangled names by demangled name (read while streaming).
    mangled: HashMap<String, Vec<String>>,
    operators: Vec<ops::OpRow>,
    ledger: Vec<ledger::RangeLedger>,
}

impl Timeline {
    /// One pass over the export: launches into the scan, API calls into the ledger.
    fn read(db: &NsysDb, captured: Option<&str>) -> Result<Timeline, Error> {
        let all = db.ranges()?;
        let has_ops = all.iter().any(|r| ops::is_op(&r.name));
        // One nesting index for both consumers.
        let nest = nesting::Nesting::new(&all);
        let mut scan = scan::Scan::with(&all, std::borrow::Cow::Borrowed(&nest), captured);
        let mut ledger = ledger::Builder::new(&all, &nest);
        db.stream(&mut scan, &mut ledger)?;
        let strings = db.strings()?;
        let operators = match has_ops {
            true => ops::table(&all, &scan.ops, &strings),
            false => Vec::new(),
        };
        let (stats, kernel_rows, mangled) = (
            scan.stats(),
            scan.kernel_rows(&strings),
            scan.mangled_names(&strings),
        );
        // The instances' figures go before the ledger's are aggregated: at most one set held.
        drop(scan);
        let ledger = ledger.finish();
        let phases = match has_ops {
            true => all.into_iter().filter(|r| !ops::is_op(&r.name)).collect(),
            false => all,
        };
        Ok(Timeline {
            phases,
            stats,
            kernel_rows,
            mangled,
            operators,
            ledger,
        })
    }
}

/// The parsed contents of a run directory.
pub(crate) struct Artifacts {
    pub(crate) run_id: String,
    pub(crate) config: Config,
    /// Python stack samples placed in the ranges (`workload.python_sampling_hz`).
    pub(crate) python: Option<pysamples::PyReport>,
    /// PyTorch operators from their NVTX ranges (nsys `--pytorch=...`), when the run has them.
    pub(crate) operators: Vec<ops::OpRow>,
    /// Per phase: tokens, time per instance and per token, floors (see analysis::tokens).
    pub(crate) per_token: Vec<tokens::PhaseCost>,
    pub(crate) kernels_nsys: Option<Vec<KernelSum>>,
    pub(crate) ranges: Option<Vec<RangeSum>>,
    pub(crate) api: Option<Vec<ApiSum>>,
    pub(crate) ncu: Option<NcuReport>,
    /// `ncu_csv` as the reports cite it, relative to the run directory (empty without one).
    pub(crate) ncu_csv_file: String,
    /// The NVTX include expression the ncu pass used.
    pub(crate) ncu_include: Option<String>,
    pub(crate) env: Option<serde_json::Value>,
    pub(crate) status: Option<Status>,
    pub(crate) stage1_ops: Option<PathBuf>,
    /// Kernels by nsys time, with ncu counters joined when both tools saw the same range.
    pub(crate) records: Vec<KernelRecord>,
    /// ncu's kernels in their own table, when ncu profiled another range than nsys captured.
    pub(crate) ncu_records: Vec<KernelRecord>,
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
    /// What the nsys pass captured, as it recorded it (from the config for older runs).
    pub(crate) capture: NsysRecord,
    /// Units of the ncu metrics.
    pub(crate) ncu_units: BTreeMap<String, String>,
    /// The device's peaks, from ncu's peak metrics.
    pub(crate) peaks: Option<Peaks>,
    /// Figures over the timed nsys passes, when `run.repeat` made more than one.
    pub(crate) repeats: Option<repeats::Repeats>,
    /// Why the ncu export could not be read (the reports are made without it and say so).
    pub(crate) ncu_problem: Option<Error>,
    /// Where each push/pop range's wall time goes on its thread (empty without the SQLite
    /// export's API table).
    pub(crate) ledger: Vec<ledger::RangeLedger>,
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
    /// GPU busy (NCCL waiting included) as a share of the range's time on either clock (the
    /// longer of CPU wall and GPU projection); never above 100%.
    pub(crate) fn busy_pct(&self) -> f64 {
        let span = self.wall_ns.max(self.proj_ns.unwrap_or(0.0)).max(1.0);
        (100.0 * self.busy_ns / span).min(100.0)
    }

    /// GPU busy as a share of the range's time on either clock (the longer of CPU wall and
    /// GPU projection), less the time spent waiting in NCCL kernels; never above 100%.
    pub(crate) fn working_pct(&self) -> f64 {
        let span = self.wall_ns.max(self.proj_ns.unwrap_or(0.0)).max(1.0);
        (100.0 * (self.busy_ns - self.nccl_wait_ns).max(0.0) / span).min(100.0)
    }
}

/// The range the nsys capture was gated on, without a domain.
fn nsys_range(config: &Config) -> Option<String> {
    NsysRecord::from_config(&config.nsys).range
}

/// Whether nsys captured the range ncu profiles (an ungated side counts as the same).
pub(crate) fn same_range(config: &Config) -> bool {
    let ncu = config
        .ncu
        .nvtx_include
        .as_deref()
        .filter(|_| config.ncu.gating_nvtx);
    match (nsys_range(config), ncu) {
        (Some(a), Some(b)) => {
            crate::analysis::nvtx::base_name(&a) == crate::analysis::nvtx::base_name(b)
        }
        _ => true,
    }
}

fn optional<T>(
    path: &Path,
    read: impl FnOnce(&Path) -> Result<T, Error>,
) -> Result<Option<T>, Error> {
    if path.is_file() {
        read(path).map(Some)
    } else {
        Ok(None)
    }
}

/// The ncu raw export with the mangled names of its twin import, when there is one.
fn read_ncu(run: &RunDir, csv: &Path) -> Result<NcuReport, Error> {
    let mut report = ncu::read_raw(csv)?;
    let name = csv.file_name().unwrap_or_default().to_string_lossy();
    let mangled_csv = run.ncu_raw_mangled(name.strip_suffix("_raw.csv").unwrap_or(&name));
    if mangled_csv.is_file() {
        ncu::attach_mangled(&mut report, &mangled_csv)?;
    }
    Ok(report)
}

impl Artifacts {
    /// Parse what the run directory holds; a missing artifact is `None`, a broken one an error.
    pub(crate) fn load(run: &RunDir, config: Config) -> Result<Artifacts, Error> {
        // A multi-rank run has one nsys summary per rank: its kernel table is their sum, its
        // other single-rank views are rank 0's.
        let rank_data = ranks::load(run)?;
        let first_rank = rank_data.first().map(|r| r.rank);
        // Single-rank names first; a multi-rank run's single-rank views are its first rank's.
        let first = |report: &str| {
            let p = run.nsys_stats(report, None);
            match first_rank {
                Some(r) if !p.is_file() => run.nsys_stats(report, Some(r)),
                _ => p,
            }
        };
        let status = Status::read(&run.path);
        let capture = status
            .as_ref()
            .and_then(|s| s.passes.get("nsys")?.nsys.clone())
            .unwrap_or_else(|| NsysRecord::from_config(&config.nsys));
        let mut kernels_nsys = match optional(&run.kern_sum(None), nsys::read_kernels)? {
            None if !rank_data.is_empty() => Some(ranks::merged(&rank_data)),
            k => k,
        };
        let (nvtx_sum, api_sum) = (first("nvtx_sum"), first("cuda_api_sum"));
        let mut ranges = optional(&nvtx_sum, nsys::read_ranges)?;
        if let Some(r) = ranges.as_mut() {
            r.retain(|r| !ops::is_op(r.name()));
        }
        let api = optional(&api_sum, nsys::read_api)?;
        // The pass records the ncu include and file base; runs made before it did get them
        // recomputed from the config, which is what the pass used then.
        let recorded =
            Status::read(&run.path).and_then(|s| s.passes.get("ncu").and_then(|p| p.ncu.clone()));
        let (ncu_include, base) = match recorded {
            Some(r) => (r.include, r.base),
            None => {
                let (include, base, _) = include_and_base(&config, style_for(&config, run));
                (include, base)
            }
        };
        let ncu_csv = Some(run.ncu_raw(&base))
            .filter(|p| p.is_file())
            .or_else(|| run.find_ncu_raw());
        // A broken ncu export costs the ncu columns, not the nsys figures: the reports are
        // made from what is valid and the problem is reported (exit 6) after them.
        let (mut ncu, mut ncu_problem) = match ncu_csv.as_deref().map(|csv| read_ncu(run, csv)) {
            None => (None, None),
            Some(Ok(r)) => (Some(r), None),
            Some(Err(e)) => (None, Some(e)),
        };
        // Kernels whose figures the metrics cache gave this run (all of them when ncu did not
        // need to run).
        match optional(&run.ncu("cached.json"), ncu::read_cached) {
            Ok(Some(cached)) if !cached.is_empty() && ncu_problem.is_none() => {
                ncu::merge_cached(ncu.get_or_insert_with(NcuReport::default), cached);
            }
            Err(e) if ncu_problem.is_none() => ncu_problem = Some(e),
            _ => {}
        }
        let sqlite = match first_rank {
            Some(r) if !run.nsys_sqlite(None).is_file() => run.nsys_sqlite(Some(r)),
            _ => run.nsys_sqlite(None),
        };
        let db = sqlite
            .is_file()
            .then(|| NsysDb::open(&sqlite))
            .transpose()?;
        // The ranges and launches are read once: for the per-range figures and, in one
        // process, the kernel table (its captured range's kernels, see analysis::kernels).
        // One streaming pass over the launches gives the per-range figures, the captured
        // range's kernels and the operators' GPU time (see analysis::scan).
        let timeline = match &db {
            Some(db) => Some(Timeline::read(db, capture.range.as_deref())?),
            None => None,
        };
        let operators = timeline
            .as_ref()
            .map(|t| t.operators.clone())
            .unwrap_or_default();
        let mut kern_sum_file = if rank_data.is_empty() {
            KERN_SUM.to_string()
        } else {
            "nsys/summary.rank<N>_cuda_gpu_kern_sum.csv, summed over ranks".to_string()
        };
        let mut mangled = None;
        if let (Some(t), Some(_), true) = (&timeline, &capture.range, rank_data.is_empty()) {
            if !t.kernel_rows.is_empty() {
                kernels_nsys = Some(t.kernel_rows.clone());
                kern_sum_file = kernels::source(run);
                mangled = Some(t.mangled.clone());
            }
        }
        // The kernel table from the stats CSV: every kernel's mangled names, a pass over the
        // export's kernels.
        let mangled = match (mangled, &db, &kernels_nsys) {
            (Some(m), _, _) => Some(m),
            (None, Some(db), Some(_)) => Some(db.mangled_names()?),
            _ => None,
        };
        let range_stats = timeline
            .as_ref()
            .map(|t| t.stats.clone())
            .unwrap_or_default();
        let ledger = timeline
            .as_ref()
            .map(|t| t.ledger.clone())
            .unwrap_or_default();
        let python = match (&db, &timeline) {
            // The samples are evidence beside the figures: a broken file costs them alone.
            (Some(db), Some(t)) => python_evidence(run, db, &t.phases).unwrap_or_else(|e| {
                tracing::warn!("Python samples left out: {e}");
                None
            }),
            _ => None,
        };
        let ncu_units = ncu.as_ref().map(|r| r.units.clone()).unwrap_or_default();
        let peaks = ncu.as_ref().and_then(|r| {
            r.kernels.iter().find_map(|k| {
                roofline::peaks(&roofline::Metrics {
                    values: &k.metrics,
                    units: &r.units,
                })
            })
        });
        let env = crate::files::read_capped(&run.file("env.json"), crate::files::RUN_FILE_CAP)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        let nsys_range = capture.range.clone();
        // The range ncu was told to profile names its kernels; without one, their innermost.
        let ncu_range = match (&ncu, &ncu_include) {
            (Some(_), Some(inc)) => Some(crate::analysis::nvtx::base_name(inc)),
            (Some(r), None) => r.kernels.iter().find_map(|k| k.nvtx_range.clone()),
            _ => None,
        };
        // Counters of decode kernels say nothing about prefill kernels of the same name: join
        // only when both tools looked at the same range.
        let (records, ncu_records) =
            if same_range(&config) || kernels_nsys.is_none() || ncu.is_none() {
                let range = ncu_range.or(nsys_range);
                (
                    model::build(
                        kernels_nsys.as_deref(),
                        mangled.as_ref(),
                        ncu.as_ref(),
                        range.as_deref(),
                    ),
                    Vec::new(),
                )
            } else {
                (
                    model::build(kernels_nsys.as_deref(), None, None, nsys_range.as_deref()),
                    model::build(None, None, ncu.as_ref(), ncu_range.as_deref()),
                )
            };
        let mut a = Artifacts {
            run_id: run.id(),
            kernels_nsys,
            ranges,
            api,
            ncu,
            ncu_csv_file: ncu_csv
                .as_deref()
                .map(|p| run.relative(p))
                .unwrap_or_default(),
            ncu_include,
            env,
            status,
            stage1_ops: find_stage1_ops(&run.stage1()),
            records,
            ncu_records,
            range_stats,
            sqlite_file: run.relative(&sqlite),
            nvtx_sum_file: run.relative(&nvtx_sum),
            api_sum_file: run.relative(&api_sum),
            kern_sum_file,
            capture,
            rank_data,
            ncu_units,
            peaks,
            config,
            repeats: None,
            ncu_problem,
            ledger,
            python,
            operators,
            per_token: Vec::new(),
        };
        if let (Some(db), Some(t)) = (&db, &timeline) {
            a.per_token = a.phase_costs(&t.phases, &db.marks("stage2:tokens ")?);
        }
        a.repeats = repeats::load(run, &a.config, &a)?;
        Ok(a)
    }

    /// Nothing to report: no kernels from either tool, no NVTX ranges.
    pub(crate) fn is_empty(&self) -> bool {
        self.records.is_empty()
            && self.ncu_records.is_empty()
            && self.range_stats.is_empty()
            && self.ranges.as_ref().is_none_or(|r| r.is_empty())
    }

    /// Which launches the kernel table's rows sum: "every launch in the capture", or those of
    /// the captured range's instances (saying when the capture held only the first).
    pub(crate) fn kernel_scope(&self) -> String {
        let range = match (&self.capture.range, self.kern_sum_file == self.sqlite_file) {
            (Some(r), true) => r,
            _ => return "every launch in the capture".to_string(),
        };
        format!("every launch in `{range}`, {}", self.instances_captured())
    }

    /// How many instances of the captured range the report holds, and whether that is all:
    /// "15 instances captured" or "first instance only (...)". Empty without a range.
    pub(crate) fn instances_captured(&self) -> String {
        let Some(range) = &self.capture.range else {
            return String::new();
        };
        let n: u64 = self
            .range_stats
            .iter()
            .filter(|s| &s.name == range)
            .map(|s| s.instances)
            .sum();
        match n {
            0 => "no instance in the SQLite export".to_string(),
            1 if self.capture.first_instance_only => "first instance only (the capture stopped when it closed; nsys.capture_range_end=none captures every instance)".to_string(),
            1 => "1 instance captured".to_string(),
            n => format!("{n} instances captured"),
        }
    }

    /// `cudaGraphLaunch` calls in the API summary (0 without one).
    pub(crate) fn graph_launches(&self) -> u64 {
        self.api
            .iter()
            .flatten()
            .filter(|r| r.name.starts_with("cudaGraphLaunch"))
            .map(|r| r.calls)
            .sum()
    }

    /// The workload launched CUDA graphs whose kernels nsys did not trace (it ran with
    /// `nsys.cuda_graph_trace=graph`): the graphs' kernels are missing from every figure.
    pub(crate) fn graph_kernels_hidden(&self) -> bool {
        self.graph_launches() > 0
            && self.config.nsys.cuda_graph_trace == crate::config::CudaGraphTrace::Graph
    }

    /// The ledgers by range name (one lookup, not a scan, per name).
    pub(crate) fn ledger_by_name(&self) -> ledger::ByName<'_> {
        ledger::ByName::new(&self.ledger)
    }

    /// The GPUs of the nsys and ncu passes when they ran at once (`ncu.second_gpu`).
    pub(crate) fn second_gpu(&self) -> Option<&crate::rundir::status::SecondGpu> {
        let ncu = self.status.as_ref()?.passes.get("ncu")?.ncu.as_ref()?;
        ncu.second_gpu.as_ref()
    }

    /// The sentence that says so, or None.
    pub(crate) fn hidden_graphs_note(&self) -> Option<String> {
        self.graph_kernels_hidden().then(|| {
            format!(
                "nsys traced CUDA graphs as whole graphs (nsys.cuda_graph_trace=graph): the kernels of the {} graph launches (cudaGraphLaunch, {}) are not in these figures, so kernel time, launches and GPU busy are too low; profile with nsys.cuda_graph_trace=node to see them",
                self.graph_launches(),
                self.api_sum_file
            )
        })
    }

    /// Total kernel time and launches on the ranking basis (nsys when present).
    pub(crate) fn kernel_totals(&self) -> (f64, u64) {
        self.records
            .iter()
            .filter(|r| r.gpu_time_pct.is_some())
            .fold((0.0, 0), |(t, n), r| (t + r.total_time_ns, n + r.instances))
    }

    /// Share of kernel time whose kernels have ncu metrics, in %; None when ncu profiled
    /// another range than nsys captured (its share of that range is unknown).
    pub(crate) fn ncu_coverage_pct(&self) -> Option<f64> {
        self.ncu.as_ref()?;
        if !self.ncu_records.is_empty() {
            return None;
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
    pub(crate) fn ncu_skips_nccl(&self) -> bool {
        !self.config.ncu.include_nccl && self.records.iter().any(|r| model::is_nccl(&r.name))
    }

    /// How ncu's coverage reads: of all kernel time, or of the time outside NCCL.
    pub(crate) fn coverage_scope(&self) -> &'static str {
        if self.ncu_skips_nccl() {
            "of the kernel time outside NCCL (ncu leaves NCCL kernels out)"
        } else {
            "of the kernel time"
        }
    }

    /// Roofline figures of one kernel, when ncu measured it.
    pub(crate) fn point(&self, r: &KernelRecord) -> Option<roofline::Point> {
        roofline::point(&roofline::Metrics {
            values: &r.metrics,
            units: &self.ncu_units,
        })
    }

    /// Per-token costs of each phase with token marks and of the captured range, with the
    /// floors of the captured range where ncu measured its kernels.
    fn phase_costs(
        &self,
        ranges: &[crate::parse::sqlite::NvtxRange],
        marks: &[(i64, i64, String)],
    ) -> Vec<tokens::PhaseCost> {
        let captured = self.capture.range.as_deref();
        tokens::costs(&self.range_stats, ranges, marks, captured, |s| {
            let peaks = self.peaks.as_ref()?;
            tokens::floor(s, &self.records, |r| self.point(r), peaks)
        })
    }

    /// The captured range's wall time, kernel time and launches: from the SQLite export's
    /// per-range attribution when there is one, else from the stats CSVs.
    pub(crate) fn captured(&self) -> Option<Captured> {
        let name = self.capture.range.clone()?;
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
        let r = self.capture_range()?;
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

    /// The NVTX range the nsys capture was gated on, as nvtx_sum reports it.
    pub(crate) fn capture_range(&self) -> Option<&RangeSum> {
        let name = self.capture.range.as_deref()?;
        self.ranges.as_ref()?.iter().find(|r| r.name() == name)
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

/// A Stage-1 operator table the workload left: a CSV under stage1/ named like `*operator*`.
fn find_stage1_ops(dir: &Path) -> Option<PathBuf> {
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((d, depth)) = stack.pop() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&d)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() && depth < 3 {
                stack.push((p, depth + 1));
            } else if p.extension().is_some_and(|e| e == "csv")
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().contains("operator"))
            {
                return Some(p);
            }
        }
    }
    None
}
