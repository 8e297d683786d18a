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
        write_pages(cmd, dir)?;
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

/// Every page into `dir`, each rendered whole in memory, written to a temporary file beside it
/// and renamed over the page: a link planted in `dir` is replaced, never followed to a file
/// outside it, and a full disk leaves the old page (or none), never a cut one.
fn write_pages(cmd: clap::Command, dir: &Path) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        return Err(Error::usage(format!("man --dir {}: not a folder", dir.display())).into());
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, e))?;
    let mut pages = vec![cmd.clone()];
    pages.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
    for page in pages {
        let name = format!("{}.1", page.get_display_name().unwrap_or(page.get_name()));
        let path = dir.join(&name);
        let mut text = Vec::new();
        clap_mangen::Man::new(page)
            .render(&mut text)
            .map_err(|e| Error::io("render", &path, e))?;
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            let mut perms = std::fs::metadata(dir)?.permissions();
            let mut tmp = tempfile::Builder::new()
                .prefix(".stage2-man-")
                .tempfile_in(dir)?;
            tmp.write_all(&text)?;
            // Pages are for every reader of the folder, as `man` expects (a temp file is 0600).
            std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o644);
            tmp.as_file().set_permissions(perms.clone())?;
            tmp.as_file().sync_all()?;
            tmp.persist(&path).map_err(|e| e.error)?;
            Ok(())
        };
        write().map_err(|e| Error::io("write", &path, e))?;
    }
    Ok(())
}
