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
    let out = render(page).map_err(|e| Error::io("write", "stdout", e))?;
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
        let text = render(page).map_err(|e| Error::io("render", &path, e))?;
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

/// One page: clap's sections, then EXAMPLES (for the pages that have them) and ENVIRONMENT.
fn render(page: clap::Command) -> std::io::Result<Vec<u8>> {
    let name = page
        .get_display_name()
        .unwrap_or(page.get_name())
        .to_string();
    let mut out = Vec::new();
    clap_mangen::Man::new(page).render(&mut out)?;
    out.extend_from_slice(extra_sections(&name).as_bytes());
    Ok(out)
}

/// Example command lines of a page (roff-escaped where needed): what a newcomer types first.
fn examples(page: &str) -> &'static [(&'static str, &'static str)] {
    match page {
        "stage2" | "stage2-profile" => &[
            (
                "Profile the prefill of a Python workload with both tools (nsys gated on the NVTX range, ncu on its top kernels):",
                "stage2 profile --nvtx-capture prefill -- python3 generate.py",
            ),
            (
                "A transformers model with no NVTX ranges of its own: mark its phases automatically, profile decode:",
                "stage2 profile --auto-nvtx --nvtx-capture decode -- python3 generate.py",
            ),
            (
                "The nsys pass alone, with GPU-metrics sampling (no ncu pass):",
                "stage2 profile --quick --nvtx-capture decode -- python3 generate.py",
            ),
            (
                "Also time the same ranges without a profiler, so the reports state what the measurement added:",
                "stage2 profile --baseline --nvtx-capture decode -- python3 generate.py",
            ),
            (
                "See the command lines without running anything:",
                "stage2 profile --dry-run --nvtx-capture decode -- python3 generate.py",
            ),
        ],
        "stage2-report" => &[
            (
                "Render the reports of a finished run again:",
                "stage2 report tmp/stage2/RUN_ID",
            ),
            (
                "Read a report nsys or ncu wrote elsewhere:",
                "stage2 report run.nsys-rep",
            ),
        ],
        "stage2-diff" => &[
            (
                "Gate a change in CI: fail when total kernel time grows by more than 5%:",
                "stage2 diff tmp/stage2/base tmp/stage2/new --fail-above 5",
            ),
            (
                "The comparison as one JSON object on stdout, for a script:",
                "stage2 diff tmp/stage2/base tmp/stage2/new --json | jq .total_delta_pct",
            ),
        ],
        "stage2-doctor" => &[(
            "Check the tools, the GPU, counter access and GPU-metrics sampling:",
            "stage2 doctor",
        )],
        _ => &[],
    }
}

/// The variables stage2 itself reads, on every page.
const ENVIRONMENT: &[(&str, &str)] = &[
    ("STAGE2_NSYS, STAGE2_NCU", "the nsys and ncu to run, when tools.nsys / tools.ncu are not set (then PATH, then the standard install folders)."),
    ("STAGE2_LOG", "the log filter of stage2's own messages on stderr (e.g. debug)."),
    ("XDG_CACHE_HOME, HOME", "where the ncu metrics cache lives when ncu.cache.dir is not set: $XDG_CACHE_HOME/stage2/ncu, else ~/.cache/stage2/ncu."),
    ("NO_COLOR, CLICOLOR_FORCE", "colour on stderr off, or on even when it is not a terminal (--color overrides both)."),
    ("CUDA_VISIBLE_DEVICES", "the GPUs the workload sees; workload.device sets it for the workload."),
];

/// Roff text for one line: a leading dot or quote would read as a request.
fn roff(text: &str) -> String {
    let t = text.replace('\\', "\\e").replace('-', "\\-");
    match t.starts_with('.') || t.starts_with('\'') {
        true => format!("\\&{t}"),
        false => t,
    }
}

fn extra_sections(page: &str) -> String {
    let mut s = String::new();
    let ex = examples(page);
    if !ex.is_empty() {
        s.push_str(".SH EXAMPLES\n");
        for (what, cmd) in ex {
            s.push_str(&format!(
                ".PP\n{}\n.PP\n.RS 4\n\\fB{}\\fR\n.RE\n",
                roff(what),
                roff(cmd)
            ));
        }
    }
    s.push_str(".SH ENVIRONMENT\n");
    for (var, what) in ENVIRONMENT {
        s.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff(var), roff(what)));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_have_examples_and_environment() {
        let cmd = command();
        let profile = cmd.find_subcommand("profile").unwrap().clone();
        let text = String::from_utf8(render(profile).unwrap()).unwrap();
        assert!(text.contains(".SH EXAMPLES"), "{text}");
        assert!(
            text.contains("stage2 profile \\-\\-nvtx\\-capture prefill \\-\\- python3 generate.py"),
            "{text}"
        );
        assert!(
            text.contains(".SH ENVIRONMENT") && text.contains("STAGE2_NSYS"),
            "{text}"
        );
        // Every example line is a command of that page.
        for page in [
            "stage2",
            "stage2-profile",
            "stage2-report",
            "stage2-diff",
            "stage2-doctor",
        ] {
            let sub = page.strip_prefix("stage2-").unwrap_or("profile");
            assert!(
                examples(page)
                    .iter()
                    .all(|(_, c)| c.starts_with(&format!("stage2 {sub}"))),
                "{page}"
            );
        }
    }
}
