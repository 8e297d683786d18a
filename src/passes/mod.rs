//! The profiler passes: planning (pure argv builders, unit-tested without running anything),
//! running (every child through [`process`], with a timeout and signal forwarding) and what a
//! pass needs around that (tools, workload argv, launchers, provenance, guards).

pub(crate) mod baseline;
pub(crate) mod beside;
pub(crate) mod child;
pub(crate) mod crosscheck;
pub(crate) mod diagnose;
pub(crate) mod driver;
pub(crate) mod guards;
pub(crate) mod ncu;
pub(crate) mod nsys;
pub(crate) mod packages;
pub(crate) mod provenance;
pub(crate) mod sequence;
pub(crate) mod tools;
pub(crate) mod workload;

// The runner and the workload's pieces by their short paths (`passes::process`, ...).
pub(crate) use child::{process, progress, signals};
pub(crate) use workload::{hook, launcher};

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::passes::workload::Workload;
use crate::rundir::status::{PassState, PassStatus};
use crate::rundir::RunDir;
use process::{Outcome, Spec};

/// What a pass needs to know about the run.
pub(crate) struct Ctx<'a> {
    pub(crate) cfg: &'a Config,
    /// ncu's scope, decided once for the run (written into its record).
    pub(crate) ncu: &'a crate::config::NcuTarget,
    pub(crate) run: &'a RunDir,
    pub(crate) workload: &'a Workload,
    /// Show the children's output live.
    pub(crate) echo: bool,
    /// How each pass shows its progress.
    pub(crate) progress: progress::Mode,
}

impl<'a> Ctx<'a> {
    /// The same run with another workload (the same one pinned to another GPU).
    pub(crate) fn with_workload<'b>(&self, workload: &'b Workload) -> Ctx<'b>
    where
        'a: 'b,
    {
        Ctx {
            cfg: self.cfg,
            ncu: self.ncu,
            run: self.run,
            workload,
            echo: self.echo,
            progress: self.progress,
        }
    }

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

/// A profiler's argv without its own flags that start with `prefix` (those before `-o`; the
/// workload's are after it): nsys's `--gpu-metrics-set=` for its default set instead of a
/// derived one, `--gpu-metrics-` for no sampling (the pass run again when sampling is refused,
/// or a rank that does not sample).
pub(crate) fn without_flags(argv: &[String], prefix: &str) -> Vec<String> {
    let at = argv.iter().position(|a| a == "-o").unwrap_or(argv.len());
    argv.iter()
        .enumerate()
        .filter(|(i, a)| *i >= at || !a.starts_with(prefix))
        .map(|(_, a)| a.clone())
        .collect()
}

/// One pasteable line: `env VAR=value ... ` for the variables stage2 sets for the workload
/// (`workload.env`, `CUDA_VISIBLE_DEVICES` from `workload.device`), then the command. A
/// secret-named variable is taken from the pasting shell (`HF_TOKEN="${HF_TOKEN:?...}"`), so
/// the line runs the same without the secret being on disk; URL credentials are cut.
pub(crate) fn pasteable(env: &[(String, String)], argv: &[String]) -> String {
    let mut parts = Vec::new();
    if !env.is_empty() {
        parts.push("env".to_string());
        for (k, v) in env {
            parts.push(if crate::secrets::is_secret(k) {
                format!("{k}=\"${{{k}:?set {k}}}\"")
            } else {
                process::shell_line(&[format!("{k}={v}")])
            });
        }
    }
    parts.push(process::shell_line(argv));
    crate::secrets::redact_url(&parts.join(" "))
}

/// Write cmd.txt: one pasteable line per command of the pass, in order.
pub(crate) fn write_cmd_txt(
    path: &Path,
    env: &[(String, String)],
    commands: &[Vec<String>],
) -> std::io::Result<()> {
    let mut text = String::new();
    for argv in commands {
        text.push_str(&pasteable(env, argv));
        text.push('\n');
    }
    crate::rundir::status::write_atomic(path, text.as_bytes())
}

/// Append one more command (a rerun, a diagnosis pass) to cmd.txt.
pub(crate) fn append_cmd_txt(
    env: &[(String, String)],
    path: &Path,
    argv: &[String],
) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)?;
    writeln!(f, "{}", crate::secrets::scrub(&pasteable(env, argv)))
}

/// Run a post-processing step (stats, export, import) quietly, its output into the pass log.
/// A step finalizes what its profiler wrote, after a stop too: only a later signal stops it.
pub(crate) fn run_step(spec: &Spec) -> Result<Outcome, String> {
    let mut spec = spec.clone();
    spec.signals_seen.get_or_insert_with(signals::count);
    let spec = &spec;
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
        // What a failed or interrupted step wrote to its output file is not a result: gone,
        // so that no empty or half export is read as one.
        if let Some(f) = &spec.stdout_file {
            let _ = std::fs::remove_file(f);
        }
        Err(format!(
            "`{}` {} ({}):\n{}",
            process::shell_line(&spec.argv()),
            if out.interrupted {
                "was interrupted"
            } else {
                "failed"
            },
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
