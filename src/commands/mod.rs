//! The subcommands, each a function from parsed CLI arguments to an exit code.

pub mod config;
pub mod diff;
pub mod doctor;
pub mod profile;
pub mod report;

use crate::cli::{Cli, Command};
use crate::error::Result;

pub fn run(cli: Cli) -> Result<i32> {
    let echo = !cli.quiet;
    match cli.command {
        Command::Profile(args) => profile::run(&args, echo),
        Command::Report { run_dir } => report::run(&run_dir),
        Command::Config { sources, overrides } => config::run(&sources, &overrides),
        Command::Doctor { sources, overrides } => doctor::run(&sources, &overrides),
        Command::Diff {
            run_a,
            run_b,
            out,
            fail_above,
            scope,
        } => diff::run(&diff::Args {
            run_a: &run_a,
            run_b: &run_b,
            out: out.as_deref(),
            fail_above,
            scope,
        }),
    }
}
