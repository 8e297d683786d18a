//! Shared helpers for the CLI tests: the built binary with fake nsys/ncu on PATH.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// The workload most tests profile: a Python that only prints. The fake nsys and ncu replay a
/// real capture, so what the workload does matters only where a test says so.
pub const WORKLOAD: &[&str] = &["python3", "-c", "print(1)"];

/// The flag most tests profile with: nsys gated on `decode`, the range the replayed capture has.
pub const DECODE: &[&str] = &["--nvtx-capture", "decode"];

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A temp dir to run in, with a calls log the fakes append to.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
    /// Variables every stage2 of this sandbox gets (see [`Sandbox::with_env`]).
    env: Vec<(String, std::ffi::OsString)>,
}

impl Sandbox {
    pub fn new() -> Self {
        Sandbox {
            dir: tempfile::tempdir().unwrap(),
            env: Vec::new(),
        }
    }
    /// A sandbox whose fake nvidia-smi answers: one H100, so runs have their GPU facts.
    pub fn with_gpu() -> Self {
        Sandbox::new().with_env("FAKE_SMI", "1")
    }
    /// The same sandbox whose every stage2 runs with `key=value` (e.g. `FAKE_SMI=1`: a GPU).
    pub fn with_env(mut self, key: &str, value: impl Into<std::ffi::OsString>) -> Self {
        self.env.push((key.to_string(), value.into()));
        self
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
            .env_remove("FAKE_NCU_MODE")
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }

    /// `stage2` with no profiler reachable at all.
    pub fn stage2_without_tools(&self) -> Command {
        let mut c = self.stage2();
        c.env("PATH", "/usr/bin:/bin");
        c
    }

    /// `stage2 profile --run-root runs --run-id ID FLAGS... -- python3 -c print(1)`.
    pub fn profile(&self, id: &str, flags: &[&str]) -> Command {
        self.profile_of(id, flags, WORKLOAD)
    }

    /// `stage2 profile --run-root runs --run-id ID FLAGS... -- WORKLOAD...`.
    pub fn profile_of(&self, id: &str, flags: &[&str], workload: &[&str]) -> Command {
        assert!(
            !flags.contains(&"--"),
            "the workload goes in its own argument: {flags:?}"
        );
        let mut c = self.stage2();
        c.args(["profile", "--run-root", "runs", "--run-id", id])
            .args(flags)
            .arg("--")
            .args(workload);
        c
    }

    /// [`Sandbox::profile`] gated on `decode` (see [`DECODE`]), `flags` after that.
    pub fn profile_decode(&self, id: &str, flags: &[&str]) -> Command {
        self.profile(id, &[DECODE, flags].concat())
    }

    /// [`Sandbox::profile_decode`] run to success: the run's status.json.
    pub fn profiled(&self, id: &str, flags: &[&str]) -> serde_json::Value {
        self.profile_decode(id, flags).assert().success();
        status(&self.run(id))
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

/// A summary.json finding's figure of `quantity` (scoped to `kernel` when given).
pub fn figure(f: &serde_json::Value, quantity: &str, kernel: Option<&str>) -> f64 {
    f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["quantity"] == quantity && e["scope"]["kernel"].as_str() == kernel)
        .and_then(|e| e["value"].as_f64())
        .unwrap_or_else(|| panic!("{quantity} {kernel:?} in {f}"))
}
