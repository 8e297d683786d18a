//! The ncu side of a run: its raw export (with the mangled names of its twin import), the
//! range and kernels it profiled, the instance it measured whole, and NVIDIA's summary of it.

use super::*;

/// The list of kernels the metrics cache gave a run, in its ncu folder.
const CACHED: &str = "cached.json";

/// The ncu export, the kernels the metrics cache gave this run, and the range ncu profiled.
pub(super) struct NcuSide {
    pub(super) report: Option<NcuReport>,
    /// Why the export could not be read: the reports are made without it and say so.
    pub(super) problem: Option<Error>,
    pub(super) include: Option<String>,
    /// The range `include` names, as the run record keeps it.
    pub(super) named: Option<String>,
    pub(super) csv: Option<PathBuf>,
    /// The share of the measured kernels' time in shapes ncu measured (None: not known).
    pub(super) shapes: Option<crate::analysis::shapes::Cover>,
    /// One instance measured whole (`ncu.graph_step`), and its file.
    pub(super) step: Option<(crate::analysis::graphs::MeasuredStep, String)>,
}

impl NcuSide {
    pub(super) fn load(
        run: &RunDir,
        config: &Config,
        status: Option<&Status>,
        // ncu's scope for a run that did not record it.
        unrecorded: &crate::config::NcuTarget,
    ) -> NcuSide {
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
                let style = style_for(config, unrecorded, run);
                let (include, base, _) = include_and_base(unrecorded, style);
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
        match optional(&run.ncu(CACHED), ncu::read_cached) {
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
            named: None,
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
    pub(super) fn shape_request(&self) -> Option<ShapeRequest> {
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

    pub(super) fn weigh_shapes(
        &mut self,
        shapes: Option<&crate::analysis::shapes::Shapes>,
    ) -> Option<crate::analysis::shapes::Cover> {
        let report = self.report.as_mut()?;
        let shapes = shapes?;
        let cover = crate::analysis::shapes::weigh(report, shapes);
        (cover.total_ns > 0.0).then_some(cover)
    }

    /// The range ncu was told to profile names its kernels; without one, their innermost.
    pub(super) fn range(&self) -> Option<String> {
        match (&self.report, &self.include) {
            (Some(r), Some(_)) => self
                .named
                .clone()
                .or_else(|| r.kernels.iter().find_map(|k| k.nvtx_range.clone())),
            (Some(r), None) => r.kernels.iter().find_map(|k| k.nvtx_range.clone()),
            _ => None,
        }
    }

    /// The file the reports cite for ncu's figures: the raw export, or, where the metrics cache
    /// served every figure (a warm re-run: ncu did not run), the list of what it served. Empty
    /// without either.
    pub(super) fn cited(&self, run: &RunDir) -> String {
        match (&self.csv, &self.report) {
            (Some(csv), _) => run.relative(csv),
            (None, Some(r)) if r.kernels.iter().any(|k| k.cached_from.is_some()) => {
                run.relative(&run.ncu(CACHED))
            }
            _ => String::new(),
        }
    }

    /// The device's peaks over every measured kernel (see `roofline::device_peaks`).
    pub(super) fn peaks(&self) -> Option<roofline::Peaks> {
        let r = self.report.as_ref()?;
        roofline::device_peaks(r.kernels.iter().map(|k| roofline::Metrics {
            values: &k.metrics,
            units: &r.units,
        }))
    }
}

/// ncu's figures beside NVIDIA's summary of the same report (`nvidia/<report>_print_summary.csv`).
pub(super) fn ncu_crosscheck(
    run: &RunDir,
    a: &Artifacts,
) -> Option<crate::analysis::nvidia::NcuCrosscheck> {
    let report = a.ncu.as_ref()?;
    let name = Path::new(&a.ncu_csv_file).file_name()?.to_string_lossy();
    let base = name.strip_suffix("_raw.csv")?;
    crate::analysis::nvidia::read_ncu(&run.path.join("nvidia"), base, report, |p| run.relative(p))
        .unwrap_or_else(|e| {
            tracing::warn!("the comparison with NVIDIA's ncu summary is left out: {e}");
            None
        })
}

/// The ncu raw export with the mangled names of its twin import, when there is one.
pub(super) fn read_ncu(run: &RunDir, csv: &Path) -> Result<NcuReport, Error> {
    let mut report = ncu::read_raw(csv)?;
    let name = csv.file_name().unwrap_or_default().to_string_lossy();
    let mangled_csv = run.ncu_raw_mangled(name.strip_suffix("_raw.csv").unwrap_or(&name));
    if mangled_csv.is_file() {
        ncu::attach_mangled(&mut report, &mangled_csv)?;
    }
    Ok(report)
}

/// The instance ncu measured whole, from its raw import; a file that cannot be read costs
/// the figure alone (the floor then comes from the kernels' replays).
pub(super) fn measured_step(
    run: &RunDir,
    g: &crate::rundir::status::GraphStepRecord,
) -> Option<(crate::analysis::graphs::MeasuredStep, String)> {
    use crate::rundir::status::GraphStepState;
    if g.state == GraphStepState::NotMeasured {
        return None;
    }
    let path = run.path.join(&g.csv);
    let choice = crate::analysis::graphs::StepChoice {
        instance: g.instance,
        skip: g.skip,
        work: crate::analysis::graphs::StepWork {
            graphs: g.graphs,
            kernels: g.kernels,
            kernel_ns: g.kernel_ns,
        },
    };
    match ncu::read_raw(&path) {
        Ok(r) => {
            crate::analysis::graphs::measured_step(&r, &g.range, choice).map(|m| (m, g.csv.clone()))
        }
        Err(e) => {
            tracing::warn!("the instance measured whole is left out: {e}");
            None
        }
    }
}
