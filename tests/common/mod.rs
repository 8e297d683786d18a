//! Shared helpers for the CLI tests: the built binary with fake nsys/ncu on PATH.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// The profile arguments most tests run: nsys gated on `decode`, a workload that only prints.
pub const DECODE_RUN: &[&str] = &[
    "--nvtx-capture",
    "decode",
    "--",
    "python3",
    "-c",
    "print(1)",
];

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A temp dir to run in, with a calls log the fakes append to.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        Sandbox {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
    pub fn runs(&self) -> PathBuf {
        self.path().join("runs")
    }
    pub fn run(&self, id: &str) -> PathBuf {
        self.runs().join(id)
    }
    pub fn calls(&self) -> String {
        std::fs::read_to_string(self.path().join("calls.log")).unwrap_or_default()
    }
    /// The calls log's lines that start with `prefix`.
    pub fn calls_starting(&self, prefix: &str) -> Vec<String> {
        self.calls()
            .lines()
            .filter(|l| l.starts_with(prefix))
            .map(str::to_string)
            .collect()
    }
    /// The fake ncu's profiling runs, in order: launched with the workload, or attached to one
    /// held since the nsys pass (`ncu.early_start`).
    pub fn ncu_profiles(&self) -> Vec<String> {
        self.calls()
            .lines()
            .filter(|l| {
                l.starts_with("ncu --target-processes") || l.starts_with("ncu --mode=attach")
            })
            .map(str::to_string)
            .collect()
    }

    /// `stage2` with the fakes on PATH, run from the sandbox (no ./conf there).
    pub fn stage2(&self) -> Command {
        Command::from_std(self.std_stage2())
    }

    /// The same as a plain `std::process::Command` (for tests that wire its pipes themselves).
    pub fn std_stage2(&self) -> std::process::Command {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("stage2"));
        let path = format!(
            "{}:{}",
            root().join("tests/fakes").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        c.current_dir(self.path())
            .env("PATH", path)
            .env("FAKE_DATA", root().join("tests/data"))
            .env("FAKE_CALLS", self.path().join("calls.log"))
            // The ncu metrics cache lives in the sandbox, never in the user's home.
            .env("XDG_CACHE_HOME", self.path().join("cache"))
            .env_remove("STAGE2_NSYS")
            .env_remove("STAGE2_NCU")
            .env_remove("FAKE_NSYS_MODE")
            .env_remove("FAKE_NCU_MODE");
        c
    }

    /// `stage2` with no profiler reachable at all.
    pub fn stage2_without_tools(&self) -> Command {
        let mut c = self.stage2();
        c.env("PATH", "/usr/bin:/bin");
        c
    }

    /// `stage2 profile --run-root runs --run-id ID ARGS...`
    pub fn profile(&self, id: &str, args: &[&str]) -> Command {
        let mut c = self.stage2();
        c.args(["profile", "--run-root", "runs", "--run-id", id])
            .args(args);
        c
    }
}

/// Copy a folder of the repo (a sample run, test data) into a sandbox folder.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let dest = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

impl Sandbox {
    /// A copy of `examples/sample-run` (or another folder under the repo) named `name`.
    pub fn copy_of(&self, from: &str, name: &str) -> PathBuf {
        let dir = self.path().join(name);
        copy_dir(&root().join(from), &dir);
        dir
    }
}

pub fn read(p: impl AsRef<Path>) -> String {
    std::fs::read_to_string(p.as_ref()).unwrap_or_else(|e| panic!("{}: {e}", p.as_ref().display()))
}

pub fn status(run: &Path) -> serde_json::Value {
    serde_json::from_str(&read(run.join("status.json"))).unwrap()
}

/// The ncu pass of a run whose ncu was stopped at its bound (the fake's workload held 60 s): it
/// ended well before that, the pass is ok with `why` in its reason, and what ncu wrote was
/// imported. Returns the pass's status.
pub fn stopped_at_bound(run: &Path, started: std::time::Instant, why: &str) -> serde_json::Value {
    assert!(
        started.elapsed() < std::time::Duration::from_secs(40),
        "{:?}",
        started.elapsed()
    );
    let ncu = status(run)["passes"]["ncu"].clone();
    assert_eq!(ncu["state"], "ok", "{ncu}");
    let bounded = ncu["ncu"]["bounded"].as_str().unwrap();
    assert!(bounded.contains(why), "{bounded}");
    assert!(run.join("ncu/decode_raw.csv").is_file());
    ncu
}
