//! Whether this run's nsys pass samples GPU metrics or reuses the figures of the last sampled
//! run of the same command (`nsys.gpu_metrics.reuse`), and what a finished run leaves for the
//! next. Kept in the metrics cache folder, `sampled/<hash of the command>.json`: the command's
//! argv, device, working directory, environment, NVTX and nsys settings make the hash; the GPU
//! is checked against the entry.
//! docs/measured.md: at 50 kHz, sampling and its export were most of what a warm re-run cost
//! over the traced run.

use std::path::{Path, PathBuf};

use crate::analysis::sampled::reuse::Stored;
use crate::analysis::summary::Summary;
use crate::config::Config;

/// Where the last sampled run of this command keeps its figures (None: reuse or the cache is
/// off, or sampling is).
pub(crate) fn path(cfg: &Config) -> Option<PathBuf> {
    let gm = &cfg.nsys.gpu_metrics;
    if !gm.enable || !gm.reuse || !cfg.ncu.cache.enable {
        return None;
    }
    let dir = crate::passes::ncu::cache::default_dir(cfg.ncu.cache.dir.as_deref())?;
    // The environment and working directory can change what the same argv runs (a batch size
    // in a variable, another checkout); hashed, so no value is kept.
    let identity = format!(
        "{}|{}|{}|{}|{}|{}",
        cfg.workload.argv.join("\u{1f}"),
        cfg.workload.device.as_deref().unwrap_or("-"),
        cfg.workload.cwd.clone().unwrap_or_else(|| {
            let here = std::env::current_dir().unwrap_or_default();
            here.display().to_string()
        }),
        serde_json::to_string(&cfg.workload.env).unwrap_or_default(),
        serde_json::to_string(&cfg.nvtx).unwrap_or_default(),
        serde_json::to_string(&cfg.nsys).unwrap_or_default(),
    );
    Some(crate::passes::ncu::cache::keyed(
        &dir, "sampled", &identity, "json",
    ))
}

/// The figures this run may reuse: the last sampled run's, on the same GPU model.
pub(crate) fn usable(cfg: &Config, gpu: Option<&str>) -> Option<Stored> {
    let path = path(cfg)?;
    let text = crate::files::read_capped(&path, crate::files::RUN_FILE_CAP).ok()?;
    let stored: Stored = serde_json::from_str(&text).ok()?;
    if let Err(why) = stored.check() {
        tracing::warn!(
            "nsys pass: the sampled figures kept for this command ({}) are not reused, so it samples: {why}",
            path.display()
        );
        return None;
    }
    let same_gpu = gpu.is_some() && stored.gpu.as_deref() == gpu;
    (same_gpu && !stored.configs.is_empty()).then_some(stored)
}

/// After the reports: a run that sampled leaves its figures for the next; a run whose reuse
/// left enough of the kernel time without figures removes them, so the next run samples again. A failure
/// to write only costs the next run its reuse.
pub(crate) fn keep(cfg: &Config, gpu: Option<&str>, summary: &Summary) {
    let (Some(path), Some(gm)) = (path(cfg), summary.gpu_metrics.as_ref()) else {
        return;
    };
    match &gm.reused {
        Some(r) if r.resample(gm.all_kernels.map_or(0.0, |a| a.time_ns)) => {
            let _ = std::fs::remove_file(&path);
        }
        Some(_) => {}
        None if worth_keeping(gm.note.as_deref(), gm.all_kernels.as_ref()) => {
            let kernels = summary
                .kernels
                .iter()
                .filter_map(|k| Some((k.name.as_str(), k.sampled.as_ref()?)));
            let stored = Stored::of(&summary.run_id, gpu, gm.frequency_hz, kernels);
            if let Err(e) = write(&path, &stored) {
                tracing::warn!(
                    "the sampled figures could not be kept for the next run ({}): {e}",
                    path.display()
                );
            }
        }
        None => {}
    }
}

/// Figures worth reusing: attributed, and covering as much of the range's kernel time as a
/// sampled class needs (a run whose sampling stopped partway is not frozen into the next ones).
fn worth_keeping(note: Option<&str>, all: Option<&crate::model::SampledFigures>) -> bool {
    note.is_none() && all.is_some_and(|a| a.coverage_pct >= crate::rules::SAMPLED_MIN_COVERAGE_PCT)
}

fn write(path: &Path, stored: &Stored) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_vec(stored).map_err(std::io::Error::other)?;
    crate::rundir::status::write_atomic(path, &text)
}

/// This run's copy of the figures it reuses, where the reports read them.
pub(crate) fn copy_into_run(run: &Path, stored: &Stored) -> std::io::Result<()> {
    write(&run.join(crate::analysis::sampled::reuse::FILE), stored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SampledFigures;

    fn covering(pct: f64) -> SampledFigures {
        SampledFigures {
            launches: 10,
            time_ns: 1e6,
            coverage_pct: pct,
            samples: 50,
            dram_pct: Some(40.0),
            sm_issue_pct: Some(10.0),
            tensor_pct: Some(0.0),
            bound: None,
            short: None,
        }
    }

    #[test]
    fn only_figures_that_cover_the_range_are_kept_for_the_next_run() {
        assert!(worth_keeping(None, Some(&covering(100.0))));
        assert!(worth_keeping(None, Some(&covering(80.0))));
        // A capture whose samples stopped partway (seen on a compiled loop: 50%).
        assert!(!worth_keeping(None, Some(&covering(50.0))));
        assert!(!worth_keeping(
            Some("2 GPUs sampled"),
            Some(&covering(100.0))
        ));
        assert!(!worth_keeping(None, None));
    }
}
