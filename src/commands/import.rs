//! `stage2 report FILE.nsys-rep` / `FILE.ncu-rep`: a report made by hand becomes a run
//! directory. The report is copied into a new run directory, exported there with the installed
//! nsys or ncu (the same commands a profile pass runs, written to cmd.txt), and rendered.

use std::path::Path;
use std::time::Duration;

use crate::config;
use crate::error::{Error, Result};
use crate::passes::process::Spec;
use crate::passes::tools::{self, Tool};
use crate::passes::{ncu, nsys, run_step, with_program, write_cmd_txt};
use crate::rundir::RunDir;

/// The tool a report file needs, from its extension.
pub(crate) fn tool_for(path: &Path) -> Option<Tool> {
    match path.extension()?.to_str()? {
        "nsys-rep" | "qdrep" => Some(Tool::Nsys),
        "ncu-rep" => Some(Tool::Ncu),
        _ => None,
    }
}

/// Copy, export and render one report; returns the new run directory.
pub(crate) fn run(report: &Path, tool: Tool, extra: &crate::config::Extra) -> Result<RunDir> {
    // The report must be readable before a run directory is made for it.
    crate::files::open_regular(report)
        .map_err(|e| Error::parse(report, None, format!("cannot read: {e}")))?;
    let cfg = config::resolve(&config::Sources {
        embedded_only: true,
        flags: extra.flags.clone(),
        overrides: extra.overrides.clone(),
        ..Default::default()
    })?
    .config;
    let configured = match tool {
        Tool::Nsys => cfg.tools.nsys.as_deref(),
        _ => cfg.tools.ncu.as_deref(),
    };
    let found = tools::find(tool, configured).map_err(|e| {
        Error::tool(format!(
            "cannot read {}: {e}. Export it where {} is installed and run `stage2 report` on the folder (nsys: `nsys stats --report cuda_gpu_kern_sum --report nvtx_sum --report cuda_api_sum --format csv -o DIR/nsys/summary REPORT` and `nsys export --type sqlite -o DIR/nsys/run.sqlite REPORT`; ncu: `ncu --import REPORT --csv --page raw > DIR/ncu/NAME_raw.csv`)",
            report.display(),
            tool.name()
        ))
    })?;
    let run = RunDir::create(Path::new(&cfg.run.root), None)?;
    let (copy, commands, log) = match tool {
        Tool::Nsys => {
            let copy = run.nsys_report(None);
            let commands = vec![
                (nsys::stats_args(&copy, &run.nsys_stats_base(None)), None),
                (nsys::export_args(&copy, &run.nsys_sqlite(None)), None),
            ];
            (copy, commands, run.nsys("import.log"))
        }
        _ => {
            // The copy's name must fit a file name (255 bytes) with `_raw_mangled.csv` after it.
            let stem: String = report
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "report".into())
                .chars()
                .scan(0, |bytes, c| {
                    *bytes += c.len_utf8();
                    (*bytes <= 100).then_some(c)
                })
                .collect();
            let copy = run.ncu_report(&stem);
            let commands = vec![
                (ncu::import_args(&copy), Some(run.ncu_raw(&stem))),
                (
                    ncu::import_mangled_args(&copy),
                    Some(run.ncu_raw_mangled(&stem)),
                ),
            ];
            (copy, commands, run.ncu("import.log"))
        }
    };
    match export(report, (tool, &found), &run, &copy, commands, &log) {
        Ok(()) => Ok(run),
        Err(e) => {
            failed(&run, tool, &e);
            Err(e.into())
        }
    }
}

/// A failed import leaves its run directory saying so (status.json), not a bare folder.
fn failed(run: &RunDir, tool: Tool, e: &Error) {
    use crate::rundir::status::{Cause, PassStatus, Status};
    let mut st = Status::new(&run.id());
    st.set(
        tool.name(),
        PassStatus::failed(Cause::of(e), Some(format!("import failed: {e}"))),
    );
    st.finish(false);
    if let Err(w) = st.write(&run.path) {
        tracing::warn!("cannot write {}: {w}", run.file("status.json").display());
    }
}

/// Copy the report into the run and run the export commands (stdout to their files).
fn export(
    report: &Path,
    (tool, found): (Tool, &tools::Found),
    run: &RunDir,
    copy: &Path,
    commands: Vec<(Vec<String>, Option<std::path::PathBuf>)>,
    log: &Path,
) -> Result<(), Error> {
    if let Err(e) = std::fs::copy(report, copy) {
        // A partial copy (a full disk) is no report: nothing may read it later.
        let _ = std::fs::remove_file(copy);
        return Err(Error::io("copy", report, e));
    }
    let cmd_txt = log.with_file_name("cmd.txt");
    let lines: Vec<Vec<String>> = commands
        .iter()
        .map(|(a, _)| with_program(&found.path, a.iter().cloned()))
        .collect();
    write_cmd_txt(&cmd_txt, &[], &lines).map_err(|e| Error::io("write", &cmd_txt, e))?;
    tracing::info!(
        "exporting {} with {} {} into {}",
        report.display(),
        tool.name(),
        found.version.as_deref().unwrap_or("?"),
        run.path.display()
    );
    for (args, stdout) in commands {
        let mut spec = Spec::new(&found.path, args, log.to_path_buf());
        spec.stdout_file = stdout;
        spec.timeout = Some(Duration::from_secs(3600));
        run_step(&spec).map_err(Error::tool)?;
    }
    Ok(())
}
