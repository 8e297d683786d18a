//! Finding nsys and ncu: config path, STAGE2_NSYS/STAGE2_NCU, PATH, then the standard install
//! folders (newest version first). Where it was found and why is recorded in env.json.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tool {
    Nsys,
    Ncu,
}

impl Tool {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Tool::Nsys => "nsys",
            Tool::Ncu => "ncu",
        }
    }
    fn env_var(self) -> &'static str {
        match self {
            Tool::Nsys => "STAGE2_NSYS",
            Tool::Ncu => "STAGE2_NCU",
        }
    }
    fn config_key(self) -> &'static str {
        match self {
            Tool::Nsys => "tools.nsys",
            Tool::Ncu => "tools.ncu",
        }
    }
    /// Standard install folders, in search order.
    fn places(self) -> &'static [Place] {
        const CUDA: Place = Place::Dir("/usr/local/cuda/bin");
        const CUDA_N: Place = Place::Versions("/usr/local", "cuda-", "bin");
        match self {
            Tool::Nsys => &[
                Place::Versions("/opt/nvidia/nsight-systems", "", "bin"),
                CUDA,
                CUDA_N,
                Place::Versions("/opt/nvidia/nsight-compute", "", "host/target-linux-x64"),
            ],
            Tool::Ncu => &[
                CUDA,
                CUDA_N,
                Place::Versions("/opt/nvidia/nsight-compute", "", ""),
            ],
        }
    }
}

/// Where a tool may be installed.
#[derive(Debug, Clone, Copy)]
enum Place {
    /// A fixed folder.
    Dir(&'static str),
    /// `PARENT/PREFIX*/SUB`, one folder per version.
    Versions(&'static str, &'static str, &'static str),
}

impl Place {
    fn describe(self) -> String {
        match self {
            Place::Dir(d) => d.to_string(),
            Place::Versions(p, pre, sub) => format!("{p}/{pre}*/{sub}"),
        }
    }

    /// Candidate folders under `root`, newest version first.
    fn folders(self, root: &Path) -> Vec<PathBuf> {
        let under = |p: &str| root.join(p.trim_start_matches('/'));
        match self {
            Place::Dir(d) => vec![under(d)],
            Place::Versions(parent, prefix, sub) => {
                let mut dirs: Vec<PathBuf> = std::fs::read_dir(under(parent))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
                    })
                    .collect();
                dirs.sort_by_key(|p| std::cmp::Reverse(version_key(p)));
                dirs.into_iter().map(|d| d.join(sub)).collect()
            }
        }
    }
}

/// A tool that was found, how, and its version.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Found {
    pub(crate) path: PathBuf,
    pub(crate) how: String,
    pub(crate) version: Option<String>,
    /// A test double that replays a recorded capture (its `--version` says so).
    pub(crate) replay: bool,
}

/// Find `tool`, explicitly configured path first.
pub(crate) fn find(tool: Tool, configured: Option<&str>) -> Result<Found, Error> {
    let name = tool.name();
    if let Some(p) = configured {
        let path = PathBuf::from(p);
        return if is_executable(&path) {
            Ok(found(path, format!("{} in config", tool.config_key())))
        } else {
            Err(Error::tool(format!(
                "{}={p}: not an executable file; fix the path or remove the key to search PATH",
                tool.config_key()
            )))
        };
    }
    if let Ok(p) = std::env::var(tool.env_var()) {
        let path = PathBuf::from(&p);
        return if is_executable(&path) {
            Ok(found(path, format!("${}", tool.env_var())))
        } else {
            Err(Error::tool(format!(
                "${}={p}: not an executable file",
                tool.env_var()
            )))
        };
    }
    if let Ok(path) = which::which(name) {
        return Ok(found(path, "PATH".to_string()));
    }
    if let Some(path) = search_install_folders(tool, Path::new("/")) {
        return Ok(found(path, "standard install folder".to_string()));
    }
    Err(Error::tool(format!(
        "{name} not found: pass {}=PATH (an override or --config file), set ${}, put {name} on PATH, or install Nsight {} (searched PATH and {})",
        tool.config_key(),
        tool.env_var(),
        if tool == Tool::Nsys { "Systems" } else { "Compute" },
        tool.places()
            .iter()
            .map(|p| p.describe())
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

fn found(path: PathBuf, how: String) -> Found {
    let text = super::process::probe(&path, &["--version"], std::time::Duration::from_secs(30));
    let text = text.unwrap_or_default();
    Found {
        path,
        how,
        version: parse_version(&text),
        replay: text.contains(REPLAY_MARK),
    }
}

/// What the test doubles in tests/fakes print with their version: their figures are a
/// recorded capture's, not the workload's.
const REPLAY_MARK: &str = "test double: replays a recorded capture";

/// Search the install folders below `root` (a test can point it at a fake tree).
pub(crate) fn search_install_folders(tool: Tool, root: &Path) -> Option<PathBuf> {
    tool.places()
        .iter()
        .flat_map(|place| place.folders(root))
        .map(|dir| dir.join(tool.name()))
        .find(|exe| is_executable(exe))
}

/// Sort key: the numbers in the folder name, so 2025.10 > 2025.3 and cuda-12.10 > cuda-12.9.
fn version_key(p: &Path) -> Vec<u64> {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect()
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The version line of `tool --version`, e.g. "2025.3.1.0".
fn parse_version(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let l = l.trim();
        let rest = l
            .strip_prefix("NVIDIA Nsight Systems version ")
            .or_else(|| l.strip_prefix("Version "))?;
        Some(rest.split_whitespace().next()?.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_version_banners() {
        assert_eq!(
            parse_version("NVIDIA Nsight Systems version 2025.3.1.0\n").as_deref(),
            Some("2025.3.1.0")
        );
        let ncu = "NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2025 NVIDIA Corporation\nVersion 2025.3.1.0 (build 36398880) (public-release)\n";
        assert_eq!(parse_version(ncu).as_deref(), Some("2025.3.1.0"));
        assert_eq!(parse_version("garbage"), None);
    }

    #[test]
    fn install_folders_prefer_the_newest_version() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        for v in ["2025.3.1", "2025.10.0", "2024.1.0"] {
            let d = tmp
                .path()
                .join("opt/nvidia/nsight-systems")
                .join(v)
                .join("bin");
            std::fs::create_dir_all(&d).unwrap();
            let exe = d.join("nsys");
            std::fs::write(&exe, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let got = search_install_folders(Tool::Nsys, tmp.path()).unwrap();
        assert!(
            got.to_string_lossy().contains("2025.10.0"),
            "{}",
            got.display()
        );
        assert_eq!(search_install_folders(Tool::Ncu, tmp.path()), None);
    }

    #[test]
    fn configured_path_that_is_not_executable_is_a_tool_error() {
        let err = find(Tool::Ncu, Some("/nonexistent/ncu")).unwrap_err();
        assert_eq!(err.exit_code(), crate::exit_codes::TOOL);
        assert!(err.to_string().contains("tools.ncu"));
    }
}
