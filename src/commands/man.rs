//! `stage2 man [SUBCOMMAND] [--dir DIR]`: the man pages, stage2(1) and one per subcommand
//! (stage2-profile(1), ...), printed or written into a folder.

use std::path::Path;

use crate::error::{Error, Result};

fn command() -> clap::Command {
    let mut cmd =
        <crate::cli::Cli as clap::CommandFactory>::command().disable_help_subcommand(true);
    // Built, each subcommand carries its page's name (`stage2-profile`).
    cmd.build();
    cmd
}

pub(crate) fn run(subcommand: Option<&str>, dir: Option<&Path>) -> Result<i32> {
    let cmd = command();
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, e))?;
        clap_mangen::generate_to(cmd, dir)
            .map_err(|e| Error::io("write man pages into", dir, e))?;
        tracing::info!("man pages written into {}", dir.display());
        return Ok(crate::exit_codes::OK);
    }
    let names: Vec<String> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| s.get_name().to_string())
        .collect();
    let page = match subcommand {
        None => cmd,
        Some(name) if names.iter().any(|n| n == name) => {
            cmd.find_subcommand(name).cloned().unwrap_or_else(command)
        }
        Some(name) => {
            return Err(Error::usage(format!(
                "no man page for `{name}`: the subcommands are {}",
                names.join(", ")
            ))
            .into())
        }
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut out)
        .map_err(|e| Error::io("write", "stdout", e))?;
    crate::out::stdout(&String::from_utf8_lossy(&out))
        .map_err(|e| Error::io("write", "stdout", e))?;
    Ok(crate::exit_codes::OK)
}
