//! Loading a run directory into [`Artifacts`]: one loader per source (the nsys stats CSVs, the
//! SQLite export's timeline, the ncu export and its cache, the provenance files, the timed
//! repeats), then the join of nsys's kernels with ncu's counters.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::nvtx::{include_and_base, style_for};
use super::{
    cadence, graphs, kernels, ledger, nesting, ops, pysamples, ranks, repeats, roofline, sampled,
    scan, tokens, Artifacts, Focus,
};
use crate::config::{Config, NcuTarget};
use crate::error::Error;
use crate::model::{self, KernelRecord};
use crate::parse::ncu::{self, NcuReport};
use crate::parse::nsys::{self, ApiSum, KernelSum, RangeSum};
use crate::parse::sqlite::{NsysDb, NvtxRange};
use crate::rundir::record::{NcuScope, RunRecord, SamplingRecord};
use crate::rundir::status::Status;
use crate::rundir::{RunDir, KERN_SUM};

mod ncu_side;
mod samples;
mod timeline;
use ncu_side::*;
use samples::sampled_of;
use timeline::*;

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
fn crosscheck(run: &RunDir, sqlite: &Path, a: &Artifacts) -> Option<super::nvidia::Crosscheck> {
    let name = sqlite.file_name()?.to_string_lossy();
    let base = name.strip_suffix(".sqlite").unwrap_or(&name);
    let grids = a
        .small_grids()
        .zip(a.focus.range())
        .map(|(g, range)| super::nvidia::OurGrids {
            range,
            blocks: g.blocks,
            small_ns: g.ns,
            kernels: &a.kernel_blocks,
        });
    let dir = run.path.join("nvidia");
    super::nvidia::read(&dir, base, &a.range_stats, grids, |p| run.relative(p)).unwrap_or_else(
        |e| {
            tracing::warn!("the comparison with NVIDIA's summaries is left out: {e}");
            None
        },
    )
}

/// The nsys kernel rows joined with ncu's counters: one table when both tools looked at the
/// same range; two when ncu profiled another (counters of decode kernels say nothing about
/// prefill kernels of the same name).
fn join(
    same_range: bool,
    nsys_kernels: Option<&[KernelSum]>,
    mangled: Option<&HashMap<String, Vec<String>>>,
    ncu: &NcuSide,
    nsys_range: Option<&str>,
) -> (Vec<KernelRecord>, Vec<KernelRecord>) {
    let ncu_range = ncu.range();
    if same_range || nsys_kernels.is_none() || ncu.report.is_none() {
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

impl Artifacts {
    /// Parse what the run directory holds; a missing artifact is `None`, a broken one an error.
    pub(crate) fn load(run: &RunDir, config: Config) -> Result<Artifacts, Error> {
        let status = Status::read(&run.path);
        let mut record = RunRecord::read(status.as_ref(), &config);
        let focus = Focus::of(&record.nsys.capture);
        let stats = Stats::load(run)?;
        let unrecorded = NcuTarget::beside(&config, &record.nsys.capture);
        let mut ncu = NcuSide::load(run, &config, status.as_ref(), &unrecorded);
        if record.ncu.is_none() {
            record.ncu = Some(NcuScope::of_expression(ncu.include.clone(), &unrecorded));
        }
        ncu.named = record.ncu.as_ref().and_then(|n| n.range.clone());
        let first_rank = stats.rank_data.first().map(|r| r.rank);
        let rule = super::instances::Rule::parse(&config.report.instances)
            .unwrap_or(super::instances::Rule::Auto);
        let request = ncu.shape_request();
        let (sqlite, db, mut timeline) = timeline(run, first_rank, &focus, rule, request.as_ref())?;
        if let Some(t) = &timeline {
            ncu.shapes = ncu.weigh_shapes(t.shapes.as_ref());
        }
        let mut kernels_nsys = stats.kernels;
        let mut kern_sum_file = stats.kern_sum_file;
        let mut mangled = None;
        let (mut kernel_blocks, mut sm_count) = (HashMap::new(), None);
        let kernel_devices = db.as_ref().map(|d| d.kernel_devices()).transpose()?;
        // One process with a captured range in the export: its kernels, not the whole capture's.
        if let (Some(t), Some(_), true) = (&mut timeline, focus.range(), stats.rank_data.is_empty())
        {
            if !t.kernel_rows.is_empty() {
                kernels_nsys = Some(std::mem::take(&mut t.kernel_rows));
                kern_sum_file = kernels::source(run);
                mangled = Some(std::mem::take(&mut t.mangled));
                kernel_blocks = std::mem::take(&mut t.blocks);
                sm_count = db.as_ref().map(|d| d.sm_count()).transpose()?.flatten();
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
            record.same_range(),
            kernels_nsys.as_deref(),
            mangled.as_ref(),
            &ncu,
            focus.range(),
        );
        let json = |f: &str| -> Option<serde_json::Value> {
            let text = crate::files::read_capped(&run.file(f), crate::files::RUN_FILE_CAP).ok()?;
            serde_json::from_str(&text).ok()
        };
        let mut env = json("env.json");
        let peaks = ncu.peaks();
        let read = (db.as_ref(), timeline.as_ref(), focus.range());
        let given = (env.as_ref(), peaks.as_ref());
        let sampling = (
            record.nsys.sampling.as_ref(),
            record.nsys.sampling_off.as_deref(),
        );
        let sampled = sampled_of(run, (&config, sampling), given, read).map(|mut s| {
            // Under a launcher the timeline is the first rank's, and rank 0 alone samples.
            s.rank = first_rank;
            s.attach(&mut records);
            s.beside(&records, ncu.report.as_ref());
            s
        });
        let python = match (&db, &timeline) {
            // The samples are evidence beside the figures: a broken file costs them alone.
            (Some(db), Some(t)) => python_evidence(run, db, t).unwrap_or_else(|e| {
                tracing::warn!("Python samples left out: {e}");
                None
            }),
            _ => None,
        };
        // The packages pass's versions read as env.json's `python` (provenance, one place).
        if let (Some(serde_json::Value::Object(e)), Some(p)) =
            (env.as_mut(), json(crate::rundir::PACKAGES))
        {
            e.insert("python".to_string(), p);
        }
        let ncu_cited = ncu.cited(run);
        // Moved out, not copied: at 73,000 range names a copy of these was a fifth of the
        // report's allocations. The phases and the sample index stay for what follows.
        use std::mem::take;
        let (range_stats, graphs, instance_groups, ledger, operators, cycle) =
            match timeline.as_mut() {
                Some(t) => (
                    take(&mut t.stats),
                    take(&mut t.graphs),
                    take(&mut t.groups),
                    take(&mut t.ledger),
                    take(&mut t.operators),
                    t.cycle.take(),
                ),
                None => Default::default(),
            };
        let attention = timeline.as_ref().map_or_else(Vec::new, |t| {
            super::attention::per_phase(&range_stats, &t.attention, focus.range())
        });
        let step_work = timeline
            .as_mut()
            .map_or_else(Vec::new, |t| take(&mut t.work));
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
            ncu_csv_file: ncu_cited,
            shape_cover: ncu.shapes,
            kernel_blocks,
            sm_count,
            kernel_devices: kernel_devices.map_or(0, |d| d.len()),
            env,
            status,
            stage1_ops: find_stage1_ops(&run.stage1()),
            records,
            ncu_records,
            range_stats,
            cycle,
            graphs,
            instance_groups,
            sqlite_file: run.relative(&sqlite),
            nvtx_sum_file: run.relative(&stats.nvtx_sum),
            api_sum_file: run.relative(&stats.api_sum),
            kern_sum_file,
            record,
            focus,
            rank_data: stats.rank_data,
            peaks,
            config,
            repeats: None,
            ncu_problem: ncu.problem,
            graph_step: ncu.step,
            ledger,
            python,
            sampled,
            nvidia: None,
            nvidia_ncu: None,
            operators,
            per_token: Vec::new(),
            forwards: None,
            attention,
            step_work,
            speculation: None,
            census: None,
            scale_chains: None,
            observed: Vec::new(),
            baseline_file: String::new(),
        };
        a.classify_bounds();
        (a.observed, a.baseline_file) = baseline(run, &a.range_stats, a.focus.first_only);
        a.nvidia = crosscheck(run, &sqlite, &a);
        a.nvidia_ncu = ncu_crosscheck(run, &a);
        if let (Some(db), Some(t)) = (&db, &timeline) {
            let marks = db.marks("stage2:tokens ")?;
            a.per_token = a.phase_costs(&t.phases, &marks);
            a.forwards = a
                .focus
                .range()
                .and_then(|name| super::batching::of(&t.phases, &marks, name));
            a.census = a
                .steps()
                .and_then(|s| super::census::of(&t.phases, &marks, &s.range));
            a.speculation = super::spec::of(&db.marks(super::spec::MARK)?, &a.range_stats);
            if super::precision::fp8_work(&a.records, None).is_some() {
                if let Some(r) = a.one_step(&t.phases) {
                    let launches = db.launches_between(r.tid, r.start, r.end)?;
                    a.scale_chains = Some(super::precision::chains(&launches));
                }
            }
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
        let captured = self.focus.range();
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
