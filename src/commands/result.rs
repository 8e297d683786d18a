//! What `profile` and `report` leave on stdout for scripts: the run directory as the one line
//! (`RUN=$(stage2 profile ...)`), or with `--json` one object: the run directory, its state and
//! exit code, the reports written, and the findings from its summary.json. Human lines go to
//! stderr.

use std::path::Path;

use serde::Serialize;

use crate::rundir::RunDir;

#[derive(Serialize)]
struct Result<'a> {
    run_dir: String,
    state: &'a str,
    exit_code: i32,
    reports: Vec<&'static str>,
    findings: serde_json::Value,
}

/// The reports the run directory holds now.
pub(crate) fn written(dir: &Path) -> Vec<&'static str> {
    crate::report::file_names()
        .filter(|f| dir.join(f).is_file())
        .collect()
}

/// Print the result on stdout, and the human line on stderr.
pub(crate) fn announce(run: &RunDir, state: &str, code: i32, json: bool) {
    let reports = written(&run.path);
    let where_ = match reports.is_empty() {
        true => "no reports written".to_string(),
        false => format!("{}/{}", run.path.display(), reports.join(", ")),
    };
    tracing::info!("{state}: {where_}");
    if !json {
        crate::outln!("{}", run.path.display());
        return;
    }
    let findings = crate::files::read_capped(&run.file("summary.json"), crate::files::RUN_FILE_CAP)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.get("findings").cloned())
        .unwrap_or(serde_json::Value::Array(Vec::new()));
    let r = Result {
        run_dir: run.path.display().to_string(),
        state,
        exit_code: code,
        reports,
        findings,
    };
    crate::outln!("{}", serde_json::to_string(&r).unwrap_or_default());
}
