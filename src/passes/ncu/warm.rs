//! Whether this run is likely a warm re-run: the last run of the same workload with the same
//! capture and ncu settings left every kernel it chose in the metrics cache. Such a run does
//! not start the ncu pass's workload early (`ncu.early_start`): the copy would start beside the
//! nsys pass, use the CPU while it profiles, and be stopped unused (docs/measured.md,
//! 2026-11-26: on the H200s, warm re-runs cost 1.12-1.58x bare without it, as `--quick` did).
//!
//! Where the guess is wrong (new kernels) the ncu pass starts the workload as usual, and the
//! next run of it starts early again: a workload whose kernels change run to run alternates.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::Config;

/// What the last run of one workload told the next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Last {
    /// The cache held, or now holds, every kernel that run chose.
    pub(crate) cache_answers: bool,
    /// That run.
    pub(crate) run: String,
}

/// Where the last run of this workload, capture and ncu settings is remembered, in the cache
/// folder (None: no cache, or it is off).
pub(crate) fn path(cfg: &Config) -> Option<PathBuf> {
    if !cfg.ncu.cache.enable {
        return None;
    }
    let dir = super::cache::default_dir(cfg.ncu.cache.dir.as_deref())?;
    let identity = format!(
        "{}|{}|{}|{}",
        cfg.workload.argv.join("\u{1f}"),
        serde_json::to_string(&cfg.nvtx).unwrap_or_default(),
        serde_json::to_string(&cfg.nsys).unwrap_or_default(),
        serde_json::to_string(&cfg.ncu).unwrap_or_default(),
    );
    Some(super::cache::keyed(&dir, "runs", &identity, "json"))
}

/// The run whose kernels the cache answers, when the last run of this workload said so.
pub(crate) fn expected(path: &Path) -> Option<String> {
    let text = crate::files::read_capped(path, 1 << 16).ok()?;
    let last: Last = serde_json::from_str(&text).ok()?;
    last.cache_answers.then_some(last.run)
}

/// Remember for the next run; a failure to write only costs the next run its guess.
pub(crate) fn remember(path: &Path, last: &Last) {
    let write = || -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let text = serde_json::to_vec_pretty(last).map_err(std::io::Error::other)?;
        crate::rundir::status::write_atomic(path, &text)
    };
    if let Err(e) = write() {
        tracing::debug!(
            "ncu: could not remember this run in {}: {e}",
            path.display()
        );
    }
}

/// What the next run should expect: the cache answered every kernel of this one, or this one
/// profiled and stored them all, unless it had itself expected a warm run and was wrong (the
/// kernels change between runs: start early next time).
pub(crate) fn next(nothing_left: bool, stored_all: bool, expected_warm: bool) -> bool {
    nothing_left || (stored_all && !expected_warm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_the_cache_answered_is_expected_again_and_a_wrong_guess_is_not_repeated() {
        assert!(next(true, false, true));
        assert!(next(false, true, false));
        assert!(!next(false, true, true), "guessed warm, had to profile");
        assert!(!next(false, false, false), "a failed or bounded pass");
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("runs").join("x.json");
        assert_eq!(expected(&p), None);
        let last = |cache_answers| Last {
            cache_answers,
            run: "r1".into(),
        };
        remember(&p, &last(true));
        assert_eq!(expected(&p).as_deref(), Some("r1"));
        remember(&p, &last(false));
        assert_eq!(expected(&p), None);
        std::fs::write(&p, "not json").unwrap();
        assert_eq!(expected(&p), None);
    }
}
