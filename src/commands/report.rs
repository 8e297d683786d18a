//! `stage2 report RUN_DIR`: re-render every report from the artifacts in a run directory (or
//! from a `.nsys-rep`/`.ncu-rep` file, exported first into a new run directory).

use crate::analysis::summary::Summary;
use crate::analysis::Artifacts;
use crate::cli::ReportArgs;
pub(crate) use crate::config::Extra;
use crate::config::{self, Config};
use crate::error::{Error, Result};
use crate::report;
use crate::rundir::RunDir;

pub(crate) fn run(args: &ReportArgs) -> Result<i32> {
    let extra = Extra::of(&args.files, &args.overrides)?;
    let dir = &args.run_dir;
    // A report file made by hand: exported into a new run directory first.
    let run = match super::import::tool_for(dir).filter(|_| dir.is_file()) {
        Some(tool) => super::import::run(dir, tool, &extra)?,
        None => RunDir::open(dir)?,
    };
    let config = run_config_with(&run, &extra)?;
    let a = crate::analysis::Artifacts::load(&run, config)?;
    if a.is_empty() {
        tracing::error!(
            "no profiler data in {}: no nsys/ stats or SQLite export, no ncu/ raw CSV; nothing rendered",
            run.path.display()
        );
        super::result::announce(&run, "no-data", crate::exit_codes::NO_DATA, args.json);
        return Ok(crate::exit_codes::NO_DATA);
    }
    let summary = render(&run, a)?;
    tracing::info!("rendered {} kernels", summary.kernels.len());
    super::result::announce(&run, "ok", crate::exit_codes::OK, args.json);
    Ok(crate::exit_codes::OK)
}

/// Render every report of a run directory into it; returns the summary written.
pub(crate) fn render_all(run: &RunDir, config: Config) -> Result<Summary, Error> {
    render(run, Artifacts::load(run, config)?)
}

/// Decide what a run's reports say, once, and write them. An ncu export that could not be
/// read is returned as the error after the reports are written without it.
pub(crate) fn render(run: &RunDir, mut a: Artifacts) -> Result<Summary, Error> {
    // What an earlier report killed while it wrote left: never replaced otherwise.
    crate::rundir::status::remove_stale_temps(&run.path);
    let d = crate::findings::document::decide(&a);
    report::write_all(run, &d)?;
    let summary = d.summary;
    match a.ncu_problem.take() {
        Some(e) => Err(e),
        None => Ok(summary),
    }
}

/// The run's own resolved config.yaml; for a folder of exports without one, the defaults with
/// the captured ranges read from the data (see `analysis::infer`), said on stderr.
pub(crate) fn run_config(run: &RunDir) -> Result<Config, Error> {
    run_config_with(run, &Extra::default())
}

/// [`run_config`] with the user's report/tools settings over it.
pub(crate) fn run_config_with(run: &RunDir, extra: &Extra) -> Result<Config, Error> {
    let path = run.file("config.yaml");
    // exists(), not is_file(): a config.yaml that is a device or FIFO is an error, not absent.
    let (files, mut flags) = if path.exists() {
        (vec![path], Vec::new())
    } else {
        (Vec::new(), inferred(run))
    };
    flags.extend(extra.flags.iter().cloned());
    let r = config::resolve(&config::Sources {
        embedded_only: true,
        files,
        flags,
        overrides: extra.overrides.clone(),
        ..Default::default()
    })?;
    Ok(r.config)
}

/// Typed settings for what the exports show was captured (range names are set as strings,
/// never parsed as override syntax).
fn inferred(run: &RunDir) -> Vec<(String, serde_yaml::Value)> {
    use crate::analysis::infer;
    use serde_yaml::Value;
    let mut out = Vec::new();
    let nsys = infer::nsys_range(run);
    match nsys.clone() {
        Some(r) => {
            tracing::info!("no config.yaml in {}: nsys's captured range taken as `{r}`, the first range that opens in the export", run.path.display());
            out.push(("nsys.nvtx_capture".into(), Value::String(r)));
        }
        None => out.push(("nsys.gating_nvtx".into(), Value::Bool(false))),
    }
    match infer::ncu_range(run, nsys.as_deref()) {
        Some(r) => {
            tracing::info!(
                "no config.yaml: ncu's range taken as `{r}`, the NVTX range of its kernels"
            );
            out.push(("ncu.nvtx_include".into(), Value::String(r)));
        }
        None => out.push(("ncu.gating_nvtx".into(), Value::Bool(false))),
    }
    out
}
