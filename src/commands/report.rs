//! `stage2 report RUN_DIR`: re-render every report from the artifacts in a run directory.

use std::path::Path;

use crate::config::{self, Config};
use crate::error::{Error, Result};
use crate::report;
use crate::rundir::RunDir;

pub fn run(dir: &Path) -> Result<i32> {
    let run = RunDir::open(dir)?;
    let config = run_config(&run)?;
    let summary = report::render_all(&run, config)?;
    crate::outln!(
        "rendered {} kernels into {}: kernels.md, stakeholder_summary.md, kernels.csv, summary.json",
        summary.kernels.len(),
        run.path.display()
    );
    Ok(crate::exit_codes::OK)
}

/// The run's own resolved config.yaml, or the defaults when the directory has none.
pub fn run_config(run: &RunDir) -> Result<Config, Error> {
    let path = run.file("config.yaml");
    let files = if path.is_file() {
        vec![path]
    } else {
        Vec::new()
    };
    let r = config::resolve(&config::Sources {
        embedded_only: true,
        files,
        ..Default::default()
    })?;
    Ok(r.config)
}
