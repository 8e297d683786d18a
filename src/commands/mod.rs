//! The subcommands, each a function from parsed CLI arguments to an exit code.

pub(crate) mod config;
pub(crate) mod diff;
pub(crate) mod doctor;
pub(crate) mod explain;
pub(crate) mod import;
pub(crate) mod man;
pub(crate) mod profile;
pub(crate) mod report;
pub(crate) mod result;

use crate::cli::{Cli, Command};
use crate::error::Result;

pub fn run(cli: Cli) -> Result<i32> {
    // `--json` (profile, report, diff) promises one object on stdout, errors too.
    let json = match &cli.command {
        Command::Profile(a) => a.json,
        Command::Report(a) => a.json,
        Command::Diff { json, .. } => *json,
        _ => false,
    };
    let r = dispatch(cli);
    if let (true, Err(e)) = (json, &r) {
        result::refusal(crate::error::exit_code_of(e), "error", &format!("{e:#}"));
    }
    r
}

fn dispatch(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Profile(args) => profile::run(&args, cli.quiet),
        Command::Report(args) => report::run(&args),
        Command::Config {
            sources,
            show_origin,
            overrides,
        } => config::run(&sources, &overrides, show_origin),
        Command::Explain { rule } => explain::run(rule.as_deref()),
        Command::Completions { shell } => {
            let mut cmd = <crate::cli::Cli as clap::CommandFactory>::command();
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut cmd, "stage2", &mut out);
            // clap's fish script offers no values for positional arguments: the config keys
            // for OVERRIDE are added here (bash and zsh get them from the parser).
            if shell == clap_complete::Shell::Fish {
                out.extend(fish_override_keys().into_bytes());
            }
            crate::out::stdout(&String::from_utf8_lossy(&out))
                .map_err(|e| crate::error::Error::io("write", "stdout", e))?;
            Ok(crate::exit_codes::OK)
        }
        Command::Man { subcommand, dir } => man::run(subcommand.as_deref(), dir.as_deref()),
        Command::Doctor { sources, overrides } => doctor::run(&sources, &overrides),
        Command::RankExec {
            var,
            ranks,
            workload_len,
            others_drop,
            argv,
        } => {
            let others = match others_drop {
                Some(prefix) => crate::passes::launcher::Others::Drop(prefix),
                None => crate::passes::launcher::Others::Workload(workload_len),
            };
            rank_exec(&var, &ranks, &others, &argv)
        }
        Command::Diff {
            run_a,
            run_b,
            out,
            json,
            fail_above,
            scope,
            force,
        } => diff::run(&diff::Args {
            run_a: &run_a,
            run_b: &run_b,
            out: out.as_deref(),
            json,
            fail_above,
            scope,
            force,
        }),
    }
}

/// fish `complete` lines offering `KEY=` for each subcommand's OVERRIDE arguments.
fn fish_override_keys() -> String {
    use crate::cli::{ALL_KEYS, REPORT_KEYS};
    let subs = [
        ("profile", ALL_KEYS),
        ("config", ALL_KEYS),
        ("doctor", ALL_KEYS),
        ("report", REPORT_KEYS),
    ];
    subs.iter()
        .map(|(sub, keys)| {
            format!(
                "complete -c stage2 -n \"__fish_stage2_using_subcommand {sub}\" -f -a \"{}\" -d 'config key'\n",
                keys.keys().join(" ")
            )
        })
        .collect()
}

/// Replace this process with the profiler (chosen ranks) or the bare workload (the others):
/// no shell, and signals and exit codes pass straight through.
fn rank_exec(
    var: &str,
    ranks: &str,
    others: &crate::passes::launcher::Others,
    argv: &[String],
) -> Result<i32> {
    use std::os::unix::process::CommandExt;
    let rank = std::env::var(var).ok();
    let chosen = crate::passes::launcher::choose(rank.as_deref(), ranks, others, argv);
    let Some((program, args)) = chosen.split_first() else {
        return Err(crate::error::Error::usage("__rank-exec: nothing to run").into());
    };
    let err = std::process::Command::new(program).args(args).exec();
    Err(crate::error::Error::start(program, err).into())
}
