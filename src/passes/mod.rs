//! The profiler passes: planning (pure argv builders, unit-tested without running anything),
//! running (every child through [`process`], with a timeout and signal forwarding) and what a
//! pass needs around that (tools, workload argv, launchers, provenance, guards).

pub(crate) mod diagnose;
pub(crate) mod driver;
pub(crate) mod guards;
pub(crate) mod launcher;
pub(crate) mod ncu;
pub(crate) mod nsys;
pub(crate) mod process;
pub(crate) mod provenance;
pub(crate) mod signals;
pub(crate) mod tools;
pub(crate) mod workload;

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::passes::workload::Workload;
use crate::rundir::status::{PassState, PassStatus};
use crate::rundir::RunDir;
use process::{Outcome, Spec};

/// What a pass needs to know about the run.
pub(crate) struct Ctx<'a> {
    pub(crate) cfg: &'a Config,
    pub(crate) run: &'a RunDir,
    pub(crate) workload: &'a Workload,
    /// Show the children's output live.
    pub(crate) echo: bool,
}

impl Ctx<'_> {
    /// A child spec with the workload's environment and working directory.
    pub(crate) fn spec(&self, program: &Path, args: Vec<String>, log: PathBuf) -> Spec {
        let mut s = Spec::new(program, args, log);
        s.env = self.workload.env.clone();
        s.cwd = self.workload.cwd.clone();
        s.echo = self.echo;
        s.grace = std::time::Duration::from_secs(self.cfg.run.grace_s);
        s
    }
}

/// A command line: the program, then its arguments.
pub(crate) fn with_program(program: &Path, args: impl IntoIterator<Item = String>) -> Vec<String> {
    std::iter::once(program.display().to_string())
        .chain(args)
        .collect()
}

/// Write cmd.txt: one pasteable, shell-quoted line per command of the pass, in order.
pub(crate) fn write_cmd_txt(path: &Path, commands: &[Vec<String>]) -> std::io::Result<()> {
    let mut text = String::new();
    for argv in commands {
        // Credentials in URLs never reach the run directory, not even here.
        text.push_str(&crate::passes::provenance::redact_url(
            &process::shell_line(argv),
        ));
        text.push('\n');
    }
    std::fs::write(path, text)
}

/// Append one more command (a rerun, a diagnosis pass) to cmd.txt.
pub(crate) fn append_cmd_txt(path: &Path, argv: &[String]) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)?;
    writeln!(
        f,
        "{}",
        crate::passes::provenance::redact_url(&process::shell_line(argv))
    )
}

/// Run a post-processing step (stats, export, import) quietly, its output into the pass log.
pub(crate) fn run_step(spec: &Spec) -> Result<Outcome, String> {
    let out =
        process::run(spec).map_err(|e| format!("cannot start {}: {e}", spec.program.display()))?;
    if out.success() {
        tracing::info!(
            "  {} {} done in {:.1} s",
            spec.program
                .file_name()
                .unwrap_or_default()
                .to_string_lossy(),
            spec.args.first().map(String::as_str).unwrap_or(""),
            out.duration.as_secs_f64()
        );
        Ok(out)
    } else {
        Err(format!(
            "`{}` failed ({}):\n{}",
            process::shell_line(&spec.argv()),
            out.describe(),
            out.tail_lines(8)
        ))
    }
}

/// The status of a pass the user interrupted or that ran past its time limit.
pub(crate) fn stopped(out: &Outcome, tool: &str) -> Option<PassStatus> {
    if out.interrupted || signals::interrupted() {
        return Some(PassStatus::new(PassState::Interrupted, Some(format!(
                "interrupted: the signal was forwarded to {tool} so it could finalize its report; what it wrote is kept"
            )),
        ));
    }
    if out.timed_out {
        return Some(PassStatus::new(
            PassState::TimedOut,
            Some(format!(
                "{tool} ran past its time limit and was stopped after {:.0} s",
                out.duration.as_secs_f64()
            )),
        ));
    }
    None
}
