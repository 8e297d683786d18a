//! Loading a run directory into [`Artifacts`]: one loader per source (the nsys stats CSVs, the
//! SQLite export's timeline, the ncu export and its cache, the provenance files, the timed
//! repeats), then the join of nsys's kernels with ncu's counters.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::nvtx::{include_and_base, style_for};
use super::{
    graphs, kernels, ledger, nesting, ops, pysamples, ranks, repeats, roofline, same_range,
    sampled, scan, tokens, Artifacts,
};
use crate::config::{Capture, Config};
use crate::error::Error;
use crate::model::{self, KernelRecord};
use crate::parse::ncu::{self, NcuReport};
use crate::parse::nsys::{self, ApiSum, KernelSum, RangeSum};
use crate::parse::sqlite::{NsysDb, NvtxRange};
use crate::rundir::status::Status;
use crate::rundir::{RunDir, KERN_SUM};

fn optional<T>(
    path: &Path,
    read: impl FnOnce(&Path) -> Result<T, Error>,
) -> Result<Option<T>, Error> {
    match crate::files::present(path) {
        Ok(true) => read(path).map(Some),
        Ok(false) => Ok(None),
        Err(e) => Err(Error::parse(path, None, format!("cannot read: {e}"))),
    }
}

/// What one streaming pass over the SQLite export gives.
pub(super) struct Timeline {
    /// The NVTX ranges without the operator ranges (those are `operators`).
    pub(super) phases: Vec<NvtxRange>,
    pub(super) stats: Vec<super::ranges::RangeStats>,
    /// The captured range's kernels (empty without one, or when it is not in the export).
    pub(super) kernel_rows: Vec<KernelSum>,
    /// Their mangled names by demangled name (read while streaming).
    pub(super) mangled: HashMap<String, Vec<String>>,
    pub(super) operators: Vec<ops::OpRow>,
    pub(super) ledger: Vec<ledger::RangeLedger>,
    /// CUDA graph launches per range name, and how nsys traced them.
    pub(super) graphs: BTreeMap<String, graphs::GraphUse>,
    pub(super) groups: Vec<super::instances::RangeGroups>,
    /// Each grouped instance's (start, thread) -> its range and group, for the samples.
    pub(super) group_of: pysamples::GroupOf,
    /// The launch configurations of the kernels asked for, in the range asked for.
    pub(super) shapes: Option<super::shapes::Shapes>,
}

/// Which kernels' launch configurations a pass over the export tallies, and in which range.
pub(super) struct ShapeRequest {
    pub(super) range: String,
    pub(super) mangled: Vec<String>,
}

impl Timeline {
    /// One pass over the export: launches into the scan, API calls into the ledger.
    fn read(
        db: &NsysDb,
        capture: &Capture,
        rule: super::instances::Rule,
        shapes_of: Option<&ShapeRequest>,
    ) -> Result<Timeline, Error> {
        let captured = capture.range();
        let all = db.ranges()?;
        let has_ops = all.iter().any(|r| ops::is_op(&r.name));
        // One nesting index for every consumer.
        let nest = nesting::Nesting::new(&all);
        let graphs = graphs::per_range(&all, &nest, &db.graph_launches()?);
        let mut groups = super::instances::groups(&all, &nest, rule);
        // Operator ranges are not steps, nor are the ranges a library emits in its own NVTX
        // domain (CUB's `cub::DeviceRadixSort` inside a sampling step): their instances are not
        // grouped.
        let library = db.library_range_names(capture.domain())?;
        groups.retain(|g| !ops::is_op(&g.name) && !library.contains(&g.name));
        let group_of: pysamples::GroupOf = groups
            .iter()
            .flat_map(|g| g.groups.iter().map(move |grp| (g, grp)))
            .flat_map(|(g, grp)| {
                grp.ranges.iter().map(|&i| {
                    let key = (all[i].start, all[i].tid);
                    (key, (g.name.clone(), grp.label.clone()))
                })
            })
            .collect();
        let mut scan = scan::Scan::with(&all, std::borrow::Cow::Borrowed(&nest), captured);
        if let Some(req) = shapes_of {
            scan.shapes = Some(scan::ShapeScope {
                range: req.range.clone(),
                kernels: db.string_ids(&req.mangled)?.into_iter().collect(),
                tally: Default::default(),
            });
        }
        let mut ledger = ledger::Builder::new(&all, &nest);
        db.stream(&mut scan, &mut ledger)?;
        // Each group's GPU busy share, from its own instances.
        for grp in groups.iter_mut().flat_map(|g| g.groups.iter_mut()) {
            for &i in &grp.ranges {
                let (ns, n) = scan.instance(i).kernels();
                grp.kernel_ns = grp.kernel_ns.saturating_add(ns);
                grp.launches += u64::from(n);
            }
            let figures: Vec<(i64, i64, i64)> = grp
                .ranges
                .iter()
                .map(|&i| {
                    let inst = scan.instance(i);
                    (
                        (all[i].end - all[i].start).max(0),
                        inst.proj_ns(),
                        inst.busy_ns(),
                    )
                })
                .collect();
            grp.set_busy(figures.into_iter());
        }
        let strings = db.strings()?;
        let shapes = scan.shapes.as_ref().map(|t| t.tally.shapes(&strings));
        let operators = match has_ops {
            true => ops::table(&all, &scan.ops, &strings),
            false => Vec::new(),
        };
        let nested = super::ranges::nested_in_own_name(&all, &nest);
        let (mut stats, kernel_rows, mangled) = (
            scan.stats(),
            scan.kernel_rows(&strings),
            scan.mangled_names(&strings),
        );
        for st in &mut stats {
            st.nested_in_own_name = nested.get(st.name.as_str()).copied().unwrap_or(0);
        }
        // The instances' figures go before the ledger's are aggregated: at most one set held.
        drop(scan);
        let ledger = ledger.finish();
        let phases = match has_ops {
            true => all.into_iter().filter(|r| !ops::is_op(&r.name)).collect(),
            false => all,
        };
        Ok(Timeline {
            shapes,
            phases,
            stats,
            kernel_rows,
            mangled,
            operators,
            ledger,
            graphs,
            groups,
            group_of,
        })
    }
}

/// The nsys stats CSVs (a multi-rank run has one set per rank: its kernel table is their sum,
/// its other single-rank views are its first rank's).
struct Stats {
    rank_data: Vec<ranks::RankData>,
    kernels: Option<Vec<KernelSum>>,
    ranges: Option<Vec<RangeSum>>,
    api: Option<Vec<ApiSum>>,
    kern_sum_file: String,
    nvtx_sum: PathBuf,
    api_sum: PathBuf,
}

impl Stats {
    fn load(run: &RunDir) -> Result<Stats, Error> {
        let rank_data = ranks::load(run)?;
        let first_rank = rank_data.first().map(|r| r.rank);
        let first = |report: &str| {
            let p = run.nsys_stats(report, None);
            match first_rank {
                Some(r) if !p.is_file() => run.nsys_stats(report, Some(r)),
                _ => p,
            }
        };
        let kernels = match optional(&run.kern_sum(None), nsys::read_kernels)? {
            None if !rank_data.is_empty() => Some(ranks::merged(&rank_data)),
            k => k,
        };
        let (nvtx_sum, api_sum) = (first("nvtx_sum"), first("cuda_api_sum"));
        let mut ranges = optional(&nvtx_sum, nsys::read_ranges)?;
        if let Some(r) = ranges.as_mut() {
            r.retain(|r| !ops::is_op(r.name()));
        }
        let api = optional(&api_sum, nsys::read_api)?;
        let kern_sum_file = match rank_data.is_empty() {
            true => KERN_SUM.to_string(),
            false => "nsys/summary.rank<N>_cuda_gpu_kern_sum.csv, summed over ranks".to_string(),
        };
        Ok(Stats {
            rank_data,
            kernels,
            ranges,
            api,
            kern_sum_file,
            nvtx_sum,
            api_sum,
        })
    }
}

/// The ncu export, the kernels the metrics cache gave this run, and the range ncu profiled.
struct NcuSide {
    report: Option<NcuReport>,
    /// Why the export could not be read: the reports are made without it and say so.
    problem: Option<Error>,
    include: Option<String>,
    csv: Option<PathBuf>,
    /// The share of the measured kernels' time in shapes ncu measured (None: not known).
    shapes: Option<super::shapes::Cover>,
    /// One instance measured whole (`ncu.graph_step`), and its file.
    step: Option<(super::graphs::MeasuredStep, String)>,
}

impl NcuSide {
    fn load(run: &RunDir, config: &Config, status: Option<&Status>) -> NcuSide {
        // The pass records the ncu include and file base; runs made before it did get them
        // recomputed from the config, which is what the pass used then.
        let recorded = status.and_then(|s| s.passes.get("ncu").and_then(|p| p.ncu.clone()));
        let step = recorded
            .as_ref()
            .and_then(|r| r.graph_step.as_ref())
            .and_then(|g| measured_step(run, g));
        let (include, base) = match recorded {
            Some(r) => (r.include, r.base),
            None => {
                let (include, base, _) = include_and_base(config, style_for(config, run));
                (include, base)
            }
        };
        let raw = run.ncu_raw(&base);
        let csv = match crate::files::present(&raw) {
            Ok(true) => Some(raw),
            // In the way: read, so the export's problem is said (and costs the ncu figures).
            Err(_) => Some(raw),
            Ok(false) => run.find_ncu_raw(),
        };
        // A broken ncu export costs the ncu columns, not the nsys figures (exit 6 after them).
        let (mut report, mut problem) = match csv.as_deref().map(|csv| read_ncu(run, csv)) {
            None => (None, None),
            Some(Ok(r)) => (Some(r), None),
            Some(Err(e)) => (None, Some(e)),
        };
        // Kernels whose figures the metrics cache gave this run (all of them when ncu did not
        // need to run).
        match optional(&run.ncu("cached.json"), ncu::read_cached) {
            Ok(Some(cached)) if !cached.is_empty() && problem.is_none() => {
                ncu::merge_cached(report.get_or_insert_with(NcuReport::default), cached);
            }
            Err(e) if problem.is_none() => problem = Some(e),
            _ => {}
        }
        NcuSide {
            report,
            problem,
            include,
            csv,
            shapes: None,
            step,
        }
    }

    /// Weigh each kernel's measured shapes by their time in ncu's range in the nsys export
    /// (see `analysis::shapes`), read with the timeline's export and ranges; None when that
    /// range's launches are missing.
    /// What the pass over the export should tally for [`NcuSide::weigh_shapes`]: the measured
    /// kernels' launch configurations in ncu's range.
    fn shape_request(&self) -> Option<ShapeRequest> {
        let range = self.range()?;
        let mangled: Vec<String> = self
            .report
            .as_ref()?
            .kernels
            .iter()
            .filter_map(|k| k.mangled.clone())
            .collect();
        (!mangled.is_empty()).then_some(ShapeRequest { range, mangled })
    }

    fn weigh_shapes(
        &mut self,
        shapes: Option<&super::shapes::Shapes>,
    ) -> Option<super::shapes::Cover> {
        let report = self.report.as_mut()?;
        let shapes = shapes?;
        let cover = super::shapes::weigh(report, shapes);
        (cover.total_ns > 0.0).then_some(cover)
    }

    /// The range ncu was told to profile names its kernels; without one, their innermost.
    fn range(&self) -> Option<String> {
        match (&self.report, &self.include) {
            (Some(_), Some(inc)) => Some(super::nvtx::base_name(inc)),
            (Some(r), None) => r.kernels.iter().find_map(|k| k.nvtx_range.clone()),
            _ => None,
        }
    }

    fn peaks(&self) -> Option<roofline::Peaks> {
        let r = self.report.as_ref()?;
        r.kernels.iter().find_map(|k| {
            roofline::peaks(&roofline::Metrics {
                values: &k.metrics,
                units: &r.units,
            })
        })
    }
}

/// Each range under nsys beside the baseline pass's times of it, and the files they came from;
/// a broken file costs the comparison, said as a warning.
fn baseline(
    run: &RunDir,
    stats: &[super::ranges::RangeStats],
    first_only: bool,
) -> (Vec<super::observer::Observed>, String) {
    let files = crate::parse::baseline::files(&run.path.join("baseline"));
    let timed = match crate::parse::baseline::read_all(&files) {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!("the baseline comparison is left out: {e}");
            return (Vec::new(), String::new());
        }
    };
    let source = match files.as_slice() {
        [one] => run.relative(one),
        _ => "baseline/ranges.*.txt".to_string(),
    };
    (super::observer::compare(stats, &timed, first_only), source)
}

/// The range figures beside NVIDIA's summaries of the same export, where the run has them: a
/// broken summary costs the comparison alone.
fn crosscheck(
    run: &RunDir,
    sqlite: &Path,
    stats: &[super::ranges::RangeStats],
) -> Option<super::nvidia::Crosscheck> {
    let name = sqlite.file_name()?.to_string_lossy();
    let base = name.strip_suffix(".sqlite").unwrap_or(&name);
    super::nvidia::read(&run.path.join("nvidia"), base, stats, |p| run.relative(p)).unwrap_or_else(
        |e| {
            tracing::warn!("the comparison with NVIDIA's summaries is left out: {e}");
            None
        },
    )
}

/// ncu's figures beside NVIDIA's summary of the same report (`nvidia/<report>_print_summary.csv`).
fn ncu_crosscheck(run: &RunDir, a: &Artifacts) -> Option<super::nvidia::NcuCrosscheck> {
    let report = a.ncu.as_ref()?;
    let name = Path::new(&a.ncu_csv_file).file_name()?.to_string_lossy();
    let base = name.strip_suffix("_raw.csv")?;
    super::nvidia::read_ncu(&run.path.join("nvidia"), base, report, |p| run.relative(p))
        .unwrap_or_else(|e| {
            tracing::warn!("the comparison with NVIDIA's ncu summary is left out: {e}");
            None
        })
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

/// The SQLite export (a multi-rank run's first rank's) and what one pass over it gives.
fn timeline(
    run: &RunDir,
    first_rank: Option<u32>,
    capture: &Capture,
    rule: super::instances::Rule,
    shapes_of: Option<&ShapeRequest>,
) -> Result<(PathBuf, Option<NsysDb>, Option<Timeline>), Error> {
    let sqlite = match first_rank {
        Some(r) if !run.nsys_sqlite(None).is_file() => run.nsys_sqlite(Some(r)),
        _ => run.nsys_sqlite(None),
    };
    let there = crate::files::present(&sqlite)
        .map_err(|e| Error::parse(&sqlite, None, format!("cannot read: {e}")))?;
    let db = there.then(|| NsysDb::open(&sqlite)).transpose()?;
    let t = match &db {
        Some(db) => Some(Timeline::read(db, capture, rule, shapes_of)?),
        None => None,
    };
    Ok((sqlite, db, t))
}

/// The nsys kernel rows joined with ncu's counters: one table when both tools looked at the
/// same range; two when ncu profiled another (counters of decode kernels say nothing about
/// prefill kernels of the same name).
fn join(
    config: &Config,
    nsys_kernels: Option<&[KernelSum]>,
    mangled: Option<&HashMap<String, Vec<String>>>,
    ncu: &NcuSide,
    nsys_range: Option<&str>,
) -> (Vec<KernelRecord>, Vec<KernelRecord>) {
    let ncu_range = ncu.range();
    if same_range(config) || nsys_kernels.is_none() || ncu.report.is_none() {
        let range = ncu_range.as_deref().or(nsys_range);
        let records = model::build(nsys_kernels, mangled, ncu.report.as_ref(), range);
        return (records, Vec::new());
    }
    (
        model::build(nsys_kernels, None, None, nsys_range),
        model::build(None, None, ncu.report.as_ref(), ncu_range.as_deref()),
    )
}

/// The figures of each timed repeat pass (`run.repeat`), parsed like runs of their own; a
/// repeat whose pass failed left no data and is not a sample of zero time. None for a run of
/// one timed pass.
fn repeat_passes(run: &RunDir, config: &Config) -> Result<Option<Vec<repeats::Pass>>, Error> {
    let dirs = run.repeats();
    if dirs.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::new();
    for dir in dirs {
        if !dir.nsys_sqlite(None).is_file() && !dir.kern_sum(None).is_file() {
            tracing::warn!(
                "{}: no nsys data; left out of the spread",
                dir.path.display()
            );
            continue;
        }
        out.push(repeats::Pass::of(&Artifacts::load(&dir, config.clone())?));
    }
    Ok(Some(out))
}

/// The instance ncu measured whole, from its raw import; a file that cannot be read costs
/// the figure alone (the floor then comes from the kernels' replays).
fn measured_step(
    run: &RunDir,
    g: &crate::rundir::status::GraphStepRecord,
) -> Option<(super::graphs::MeasuredStep, String)> {
    use crate::rundir::status::GraphStepState;
    if g.state == GraphStepState::NotMeasured {
        return None;
    }
    let path = run.path.join(&g.csv);
    let choice = super::graphs::StepChoice {
        instance: g.instance,
        skip: g.skip,
        work: super::graphs::StepWork {
            graphs: g.graphs,
            kernels: g.kernels,
            kernel_ns: g.kernel_ns,
        },
    };
    match ncu::read_raw(&path) {
        Ok(r) => super::graphs::measured_step(&r, &g.range, choice).map(|m| (m, g.csv.clone())),
        Err(e) => {
            tracing::warn!("the instance measured whole is left out: {e}");
            None
        }
    }
}

impl Artifacts {
    /// Parse what the run directory holds; a missing artifact is `None`, a broken one an error.
    pub(crate) fn load(run: &RunDir, config: Config) -> Result<Artifacts, Error> {
        let status = Status::read(&run.path);
        let capture = Capture::of(&config.nsys);
        let stats = Stats::load(run)?;
        let mut ncu = NcuSide::load(run, &config, status.as_ref());
        let first_rank = stats.rank_data.first().map(|r| r.rank);
        let rule = super::instances::Rule::parse(&config.report.instances)
            .unwrap_or(super::instances::Rule::Auto);
        let request = ncu.shape_request();
        let (sqlite, db, timeline) = timeline(run, first_rank, &capture, rule, request.as_ref())?;
        if let Some(t) = &timeline {
            ncu.shapes = ncu.weigh_shapes(t.shapes.as_ref());
        }
        let mut kernels_nsys = stats.kernels;
        let mut kern_sum_file = stats.kern_sum_file;
        let mut mangled = None;
        // One process with a captured range in the export: its kernels, not the whole capture's.
        if let (Some(t), Some(_), true) = (&timeline, capture.range(), stats.rank_data.is_empty()) {
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
        let (mut records, ncu_records) = join(
            &config,
            kernels_nsys.as_deref(),
            mangled.as_ref(),
            &ncu,
            capture.range(),
        );
        // Sampled figures are evidence beside the timeline: a broken table costs them alone.
        let mut sampled = match (&db, &timeline, stats.rank_data.is_empty()) {
            (Some(db), Some(t), true) => sampled_figures(run, db, t, capture.range())
                .unwrap_or_else(|e| {
                    tracing::warn!("sampled GPU metrics left out: {e}");
                    None
                }),
            _ => None,
        };
        if let Some(s) = sampled.as_mut() {
            s.attach(&mut records);
            s.beside(&records, ncu.report.as_ref());
        }
        let python = match (&db, &timeline) {
            // The samples are evidence beside the figures: a broken file costs them alone.
            (Some(db), Some(t)) => python_evidence(run, db, t).unwrap_or_else(|e| {
                tracing::warn!("Python samples left out: {e}");
                None
            }),
            _ => None,
        };
        let env = crate::files::read_capped(&run.file("env.json"), crate::files::RUN_FILE_CAP)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        let peaks = ncu.peaks();
        let t = timeline.as_ref();
        let mut a = Artifacts {
            run_id: run.id(),
            kernels_nsys,
            ranges: stats.ranges,
            api: stats.api,
            ncu_units: ncu
                .report
                .as_ref()
                .map(|r| r.units.clone())
                .unwrap_or_default(),
            ncu: ncu.report,
            ncu_csv_file: ncu
                .csv
                .as_deref()
                .map(|p| run.relative(p))
                .unwrap_or_default(),
            ncu_include: ncu.include,
            shape_cover: ncu.shapes,
            env,
            status,
            stage1_ops: find_stage1_ops(&run.stage1()),
            records,
            ncu_records,
            range_stats: t.map(|t| t.stats.clone()).unwrap_or_default(),
            graphs: t.map(|t| t.graphs.clone()).unwrap_or_default(),
            instance_groups: t.map(|t| t.groups.clone()).unwrap_or_default(),
            sqlite_file: run.relative(&sqlite),
            nvtx_sum_file: run.relative(&stats.nvtx_sum),
            api_sum_file: run.relative(&stats.api_sum),
            kern_sum_file,
            capture,
            rank_data: stats.rank_data,
            peaks,
            config,
            repeats: None,
            ncu_problem: ncu.problem,
            graph_step: ncu.step,
            ledger: t.map(|t| t.ledger.clone()).unwrap_or_default(),
            python,
            sampled,
            nvidia: None,
            nvidia_ncu: None,
            operators: t.map(|t| t.operators.clone()).unwrap_or_default(),
            per_token: Vec::new(),
            observed: Vec::new(),
            baseline_file: String::new(),
        };
        a.classify_bounds();
        (a.observed, a.baseline_file) = baseline(run, &a.range_stats, a.capture.first_only());
        a.nvidia = crosscheck(run, &sqlite, &a.range_stats);
        a.nvidia_ncu = ncu_crosscheck(run, &a);
        if let (Some(db), Some(t)) = (&db, &timeline) {
            a.per_token = a.phase_costs(&t.phases, &db.marks("stage2:tokens ")?);
        }
        if let Some(more) = repeat_passes(run, &a.config)? {
            let mut passes = vec![repeats::Pass::of(&a)];
            passes.extend(more);
            a.repeats = Some(repeats::over(&passes));
        }
        Ok(a)
    }

    /// Per-token costs of each phase with token marks and of the captured range, with the
    /// floors of the captured range where ncu measured its kernels.
    fn phase_costs(
        &self,
        ranges: &[NvtxRange],
        marks: &[(i64, i64, String)],
    ) -> Vec<tokens::PhaseCost> {
        let captured = self.capture.range();
        tokens::costs(&self.range_stats, ranges, marks, captured, |s| {
            let peaks = self.peaks.as_ref()?;
            let whole = self
                .graph_step
                .as_ref()
                .map(|(m, _)| m)
                .filter(|m| m.range == s.name);
            tokens::floor(s, &self.records, |r| self.point(r), peaks, whole)
        })
    }
}

/// This run's samples, or where its nsys pass did not sample, the figures it reused from an
/// earlier run (`nsys/gpu_metrics_reused.json`).
fn sampled_figures(
    run: &RunDir,
    db: &NsysDb,
    t: &Timeline,
    range: Option<&str>,
) -> Result<Option<sampled::Sampled>, Error> {
    if let Some(s) = sampled::read(db, &t.phases, range)? {
        return Ok(Some(s));
    }
    let path = run.path.join(sampled::reuse::FILE);
    if !path.is_file() {
        return Ok(None);
    }
    let text = crate::files::read_capped(&path, crate::files::RUN_FILE_CAP)
        .map_err(|e| Error::io("read", path.clone(), e))?;
    let stored: sampled::reuse::Stored = serde_json::from_str(&text).map_err(|e| {
        Error::parse(
            &path,
            Some(e.line() as u64),
            format!("not the sampled figures of an earlier run ({e})"),
        )
    })?;
    let launches = sampled::launches(db, &t.phases, range)?;
    Ok(Some(sampled::reuse::attribute(
        &launches,
        &stored,
        sampled::reuse::FILE,
    )))
}

/// The Python samples of the nsys pass (none when the run took none), placed in its ranges.
fn python_evidence(
    run: &RunDir,
    db: &NsysDb,
    t: &Timeline,
) -> Result<Option<pysamples::PyReport>, Error> {
    let (files, problems) = crate::parse::pysamples::read_dir(&run.path.join("nsys"));
    for p in problems {
        tracing::warn!("Python samples of one process left out: {p}");
    }
    if files.is_empty() {
        return Ok(None);
    }
    Ok(Some(pysamples::attribute(
        &t.phases,
        &db.marks("stage2:clock ")?,
        &files,
        &t.group_of,
    )))
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
