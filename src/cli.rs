//! Command-line interface: what the user types, turned into config sources and commands.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use serde_yaml::Value;

use crate::config::Sources;

#[derive(Debug, Parser)]
#[command(
    name = "stage2",
    version,
    about = "Deep-profile LLM inference on NVIDIA GPUs: nsys then ncu under NVTX gating, one run directory, readable reports",
    after_help = crate::exit_codes::help()
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Less output on stderr: warnings and errors only.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Colour on stderr: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it),
    /// always or never.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "auto",
        value_name = "WHEN"
    )]
    pub color: crate::term::ColorChoice,
    /// More output (-v: debug, -vv: trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the workload under nsys, then under ncu, and render the reports into a new run directory.
    Profile(ProfileArgs),
    /// Parse the artifacts already in RUN_DIR and (re)render every report. Needs no GPU or Nsight tools.
    Report(ReportArgs),
    /// Compare two runs per kernel and per NVTX range: Markdown on stdout; a CI gate with
    /// --fail-above. Exit 9 when the runs cannot be compared (incomplete, no data, another
    /// captured range, kernel basis or GPU).
    Diff {
        /// The baseline run directory.
        run_a: PathBuf,
        /// The run to compare with it.
        run_b: PathBuf,
        /// Also write what stdout shows (the Markdown, or the JSON with --json) to FILE;
        /// nothing is written into the runs.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Print the comparison as one JSON object on stdout instead of the Markdown (as
        /// `profile --json` and `report --json`; a refused comparison is an object too).
        #[arg(long)]
        json: bool,
        /// Exit 7 when the chosen scope grew by more than PCT percent and by more than the
        /// noise (Welch's t-test, 95%, with `profile --repeat` runs); exit 10 when the change is
        /// above PCT but within the noise.
        #[arg(long, value_name = "PCT", value_parser = threshold, allow_hyphen_values = true)]
        fail_above: Option<f64>,
        /// What --fail-above compares.
        #[arg(long, value_enum, default_value = "total")]
        scope: crate::analysis::diff::Scope,
        /// Compare runs that measure different things (capture range, kernel basis, GPU) or
        /// did not finish; the differences become warnings.
        #[arg(long)]
        force: bool,
    },
    /// Check that profiling can work here: tools, GPU, counters, nsys finalizing, disk. Exit 0 or 3.
    Doctor {
        #[command(flatten)]
        sources: SourceArgs,
        #[arg(value_name = "OVERRIDE", value_parser = ALL_KEYS, hide_possible_values = true)]
        overrides: Vec<String>,
    },
    /// Internal: run by the launcher on every rank of the ncu pass; profiles the chosen ranks.
    #[command(name = "__rank-exec", hide = true)]
    RankExec {
        /// The environment variable holding the rank (RANK, SLURM_PROCID, ...).
        var: String,
        /// Comma-separated ranks to profile.
        ranks: String,
        /// How many trailing arguments are the workload (run alone on other ranks).
        workload_len: usize,
        /// Other ranks run the whole argv without the profiler's flags that start with this
        /// (those before `-o`), instead of the workload alone.
        #[arg(long, allow_hyphen_values = true)]
        others_drop: Option<String>,
        #[arg(last = true, required = true)]
        argv: Vec<String>,
    },
    /// Print a shell completion script: `stage2 completions bash > /etc/bash_completion.d/stage2`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print a man page (roff): `stage2 man profile | man -l -`; `--dir DIR` writes them all.
    Man {
        /// The subcommand whose page to print (stage2-profile(1), ...); none: stage2(1).
        subcommand: Option<String>,
        /// Write every page (stage2.1, stage2-profile.1, ...) into DIR instead.
        #[arg(long, value_name = "DIR", conflicts_with = "subcommand")]
        dir: Option<std::path::PathBuf>,
    },
    /// Print the rules behind the findings: each one's id (as summary.json and the reports
    /// cite it), its words and its threshold; with RULE, that one.
    Explain {
        /// A rule id, e.g. memory_bound (none: every rule).
        rule: Option<String>,
    },
    /// Print the resolved configuration as YAML.
    Config {
        #[command(flatten)]
        sources: SourceArgs,
        /// Print every value on a line of its own with where it came from (embedded defaults,
        /// a conf/ or --config file, an override, a flag).
        #[arg(long)]
        show_origin: bool,
        /// Overrides: a.b=v (key must exist), +a.b=v (must not), ++a.b=v (either way), ~a.b (delete).
        #[arg(value_name = "OVERRIDE", value_parser = ALL_KEYS, hide_possible_values = true)]
        overrides: Vec<String>,
    },
}

/// What a clap error becomes: `--help` and `--version` on stdout (exit 0); a usage error in
/// stage2's voice (`stage2: error: ...`, the usage and a hint kept), exit 2.
pub fn usage_error(e: &clap::Error) -> i32 {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        crate::outln!("{}", e.render().to_string().trim_end());
        return match e.kind() {
            ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => crate::exit_codes::USAGE,
            _ => crate::exit_codes::OK,
        };
    }
    let args: Vec<String> = std::env::args().collect();
    let mut text = e.render().to_string();
    if e.kind() == ErrorKind::UnknownArgument {
        if let Some(hint) = forgot_separator(&args) {
            text.push_str(&hint);
        }
    }
    let text = text.strip_prefix("error: ").unwrap_or(&text).trim_end();
    crate::logging::error(text);
    if crate::out::json_asked(&args) {
        crate::out::json_refusal(crate::exit_codes::USAGE, "error", text);
    }
    crate::exit_codes::USAGE
}

/// `stage2 profile ... python3 -c X` without `--`: the workload's first word was taken for an
/// override and its flags for stage2's. The hint names the line with `--` in its place.
fn forgot_separator(args: &[String]) -> Option<String> {
    // The subcommand is the first word that is not a global flag (`--color` takes a value).
    let mut at = 1;
    while at < args.len() && args[at].starts_with('-') {
        at += if args[at] == "--color" { 2 } else { 1 };
    }
    if args.get(at).map(String::as_str) != Some("profile") {
        return None;
    }
    if args.iter().any(|a| a == "--") {
        return None;
    }
    // `profile`'s flags that take the next word as their value, from clap's own definition.
    let cmd = <Cli as clap::CommandFactory>::command();
    let profile = cmd.find_subcommand("profile")?;
    let takes_value = |flag: &str| {
        profile.get_arguments().any(|x| {
            x.get_action().takes_values()
                && (x
                    .get_long()
                    .is_some_and(|l| flag.strip_prefix("--") == Some(l))
                    || x.get_short().is_some_and(|c| flag == format!("-{c}")))
        })
    };
    // The first word after `profile` that is neither a flag, a flag's value nor an override.
    let mut i = at + 1;
    while i < args.len() {
        let a = &args[i];
        if a.starts_with('-') {
            i += if !a.contains('=') && takes_value(a) {
                2
            } else {
                1
            };
            continue;
        }
        if a.contains('=') || a.starts_with('~') {
            i += 1;
            continue;
        }
        let mut line: Vec<String> = vec!["stage2".into()];
        line.extend(args[1..i].iter().cloned());
        line.push("--".into());
        line.extend(args[i..].iter().cloned());
        return Some(format!(
            "\ndid you forget `--` before the workload? {}\n",
            crate::files::shell_line(&line)
        ));
    }
    None
}

/// `--fail-above`: a finite percentage, not negative.
fn threshold(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("`{s}` is not a finite percentage >= 0 (e.g. 5)")),
    }
}

#[derive(Debug, Clone, Args)]
pub struct SourceArgs {
    /// A YAML config file merged over the defaults (repeatable; later wins).
    #[arg(long = "config", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// A directory laid out like conf/ (default: ./conf when present).
    #[arg(long, value_name = "DIR")]
    pub config_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// A run directory made by `stage2 profile`, a folder of exports, or a `.nsys-rep` /
    /// `.ncu-rep` file (exported into a new run directory with the installed nsys/ncu).
    pub run_dir: PathBuf,
    /// A YAML file merged over the run's own config.yaml (repeatable; later wins); only its
    /// `report` and `tools` keys are used.
    #[arg(long = "config", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Print one JSON object on stdout (run directory, state, exit code, reports, findings)
    /// instead of the run directory's path.
    #[arg(long)]
    pub json: bool,
    /// Overrides of `report.*` and `tools.*` keys, e.g. report.top_kernels=40
    /// tools.nsys=/opt/nsys/bin/nsys.
    #[arg(value_name = "OVERRIDE", value_parser = REPORT_KEYS, hide_possible_values = true)]
    pub overrides: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub struct ProfileArgs {
    #[command(flatten)]
    pub sources: SourceArgs,
    /// The NVTX range that gates the nsys capture (sets nsys.nvtx_capture), e.g. prefill.
    #[arg(long, value_name = "NAME")]
    pub nvtx_capture: Option<String>,
    /// Where run directories are made (sets run.root; default tmp/stage2).
    #[arg(long, value_name = "DIR")]
    pub run_root: Option<String>,
    /// The run directory's name (sets run.id; default: UTC timestamp plus a random suffix).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// Run the workload through a launcher, the profiler once per rank inside it (sets
    /// workload.launcher).
    #[arg(long, value_enum, value_name = "LAUNCHER")]
    pub launcher: Option<crate::passes::launcher::Launcher>,
    /// Processes per node for the launcher (sets workload.nproc_per_node).
    #[arg(long, value_name = "N")]
    pub nproc_per_node: Option<u32>,
    /// Nodes for the launcher (sets workload.nnodes).
    #[arg(long, value_name = "N")]
    pub nnodes: Option<u32>,
    /// Seconds between forwarding Ctrl-C/SIGTERM (or a timeout's SIGTERM) to the profiler and
    /// SIGKILL (sets run.grace_s; default 30).
    #[arg(long, value_name = "SECS")]
    pub grace: Option<u64>,
    /// Create the run directory, write config, provenance and every cmd.txt; run nothing.
    /// What only the nsys pass decides (ncu's kernels, their number) is a placeholder there.
    #[arg(long)]
    pub dry_run: bool,
    /// Time the nsys pass N times (one ncu pass); kernels.csv and summary.json keep the
    /// spread and `stage2 diff` tests changes against it (sets run.repeat).
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,
    /// After the profiler passes, run the workload once with no profiler, timing its NVTX
    /// ranges: the reports state what the measurement added to each (sets run.baseline=true).
    #[arg(long)]
    pub baseline: bool,
    /// Mark transformers forward passes as NVTX prefill/decode without changing the workload
    /// (sets workload.auto_nvtx=true).
    #[arg(long)]
    pub auto_nvtx: bool,
    /// Sample the workload's Python stacks HZ times a second in the nsys pass (sets
    /// workload.python_sampling_hz).
    #[arg(long, value_name = "HZ")]
    pub python_sampling: Option<f64>,
    /// An NVTX range around each PyTorch operator for the operators table (sets
    /// nsys.pytorch=autograd-shapes-nvtx; slows eager decode several times over).
    #[arg(long)]
    pub operators: bool,
    /// Skip the Nsight Systems pass (sets nsys.enable=false).
    #[arg(long)]
    pub no_nsys: bool,
    /// Skip the Nsight Compute pass (sets ncu.enable=false).
    #[arg(long)]
    pub no_ncu: bool,
    /// The shallow depth: the nsys pass alone, with GPU-metrics sampling, so every kernel gets
    /// a sampled bound class at almost no cost over the traced run (sets ncu.enable=false and
    /// nsys.gpu_metrics.enable=true)
    #[arg(long, conflicts_with_all = ["no_nsys", "no_gpu_metrics"])]
    pub quick: bool,
    /// Do not sample GPU metrics in the nsys pass (sets nsys.gpu_metrics.enable=false)
    #[arg(long)]
    pub no_gpu_metrics: bool,
    /// Keep ncu's figures out of the metrics cache and profile every selected kernel (sets
    /// ncu.cache.enable=false).
    #[arg(long)]
    pub no_cache: bool,
    /// Where the ncu metrics cache lives (sets ncu.cache.dir; default $XDG_CACHE_HOME/stage2/ncu).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<String>,
    /// Show the profilers' and the workload's own output live on stderr, redacted, instead of
    /// a progress line (it is in each pass's log either way).
    #[arg(long)]
    pub show_output: bool,
    /// Print one JSON object on stdout (run directory, state, exit code, reports, findings)
    /// instead of the run directory's path.
    #[arg(long)]
    pub json: bool,
    /// How a repeated range's instances are told apart: auto, all (one group) or skip=N
    /// (sets report.instances).
    #[arg(long, value_name = "RULE")]
    pub instances: Option<String>,
    /// Config overrides, e.g. ncu.top_n=5 nsys.trace=cuda,nvtx.
    #[arg(value_name = "OVERRIDE", value_parser = ALL_KEYS, hide_possible_values = true)]
    pub overrides: Vec<String>,
    /// The workload's argv, after `--`.
    #[arg(last = true, value_name = "WORKLOAD")]
    pub workload: Vec<String>,
}

/// An `OVERRIDE` argument: any text (the config resolver checks it), offered to shell
/// completion as every config key under `prefixes` (all when empty) followed by `=`.
#[derive(Clone)]
pub struct OverrideArg(&'static [&'static str]);

impl clap::builder::TypedValueParser for OverrideArg {
    type Value = String;

    fn parse_ref(
        &self,
        _cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        Ok(value.to_string_lossy().into_owned())
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            self.keys()
                .into_iter()
                .map(clap::builder::PossibleValue::new),
        ))
    }
}

impl OverrideArg {
    /// `KEY=` for each key offered.
    pub(crate) fn keys(&self) -> Vec<String> {
        crate::config::known_keys()
            .into_iter()
            .filter(|k| self.0.is_empty() || self.0.iter().any(|p| k.starts_with(p)))
            .map(|k| format!("{k}="))
            .collect()
    }
}

/// Every config key.
pub(crate) const ALL_KEYS: OverrideArg = OverrideArg(&[]);
/// What `report` takes.
pub(crate) const REPORT_KEYS: OverrideArg = OverrideArg(&["report.", "tools."]);

impl SourceArgs {
    pub fn to_sources(&self, overrides: &[String]) -> Sources {
        Sources {
            config_dir: self.config_dir.clone(),
            embedded_only: false,
            files: self.files.clone(),
            overrides: overrides.to_vec(),
            flags: Vec::new(),
        }
    }
}

impl ProfileArgs {
    /// Config sources with the flags applied last, as documented.
    pub fn to_sources(&self) -> Sources {
        let mut s = self.sources.to_sources(&self.overrides);
        let mut flag = |k: &str, v: Value| s.flags.push((k.to_string(), v));
        if let Some(n) = &self.nvtx_capture {
            flag("nsys.nvtx_capture", Value::from(n.as_str()));
        }
        if let Some(r) = &self.run_root {
            flag("run.root", Value::from(r.as_str()));
        }
        if let Some(id) = &self.run_id {
            flag("run.id", Value::from(id.as_str()));
        }
        if let Some(l) = self.launcher {
            flag(
                "workload.launcher",
                serde_yaml::to_value(l).unwrap_or_default(),
            );
        }
        if let Some(n) = self.nproc_per_node {
            flag("workload.nproc_per_node", Value::from(n));
        }
        if let Some(n) = self.nnodes {
            flag("workload.nnodes", Value::from(n));
        }
        if let Some(g) = self.grace {
            flag("run.grace_s", Value::from(g));
        }
        if self.baseline {
            flag("run.baseline", Value::from(true));
        }
        if let Some(n) = self.repeat {
            flag("run.repeat", Value::from(n));
        }
        if self.auto_nvtx {
            flag("workload.auto_nvtx", Value::from(true));
        }
        if let Some(hz) = self.python_sampling {
            flag("workload.python_sampling_hz", Value::from(hz));
        }
        if self.operators {
            flag("nsys.pytorch", Value::from("autograd-shapes-nvtx"));
        }
        if self.no_nsys {
            flag("nsys.enable", Value::from(false));
        }
        if self.no_ncu {
            flag("ncu.enable", Value::from(false));
        }
        if self.quick {
            flag("ncu.enable", Value::from(false));
            flag("nsys.gpu_metrics.enable", Value::from(true));
        }
        if self.no_gpu_metrics {
            flag("nsys.gpu_metrics.enable", Value::from(false));
        }
        if self.no_cache {
            flag("ncu.cache.enable", Value::from(false));
        }
        if let Some(rule) = &self.instances {
            flag("report.instances", Value::from(rule.as_str()));
        }
        if let Some(dir) = &self.cache_dir {
            flag("ncu.cache.dir", Value::from(dir.clone()));
        }
        if !self.workload.is_empty() {
            let argv = self.workload.iter().map(|a| Value::from(a.as_str()));
            flag("workload.argv", Value::Sequence(argv.collect()));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_splits_overrides_from_workload_and_applies_flags_last() {
        let cli = Cli::try_parse_from([
            "stage2",
            "profile",
            "--nvtx-capture",
            "decode",
            "--no-ncu",
            "ncu.top_n=3",
            "--",
            "python3",
            "-c",
            "print(1)",
        ])
        .unwrap();
        let Command::Profile(p) = cli.command else {
            panic!("not profile")
        };
        assert_eq!(p.overrides, ["ncu.top_n=3"]);
        assert_eq!(p.workload, ["python3", "-c", "print(1)"]);
        let cfg = crate::config::resolve(&p.to_sources()).unwrap().config;
        assert_eq!(cfg.nsys.nvtx_capture.as_deref(), Some("decode"));
        assert!(!cfg.ncu.enable);
        assert_eq!(cfg.ncu.top_n, 3);
        assert_eq!(cfg.workload.argv, ["python3", "-c", "print(1)"]);
    }
}
