//! Disk and size guards: before a pass, is there room for what it will write?

use std::path::Path;

use crate::config::Config;

/// Free space at `path` (or its nearest existing parent), in GB.
pub(crate) fn free_gb(path: &Path) -> Option<f64> {
    let probe = std::iter::successors(Some(path), |p| p.parent())
        .find(|p| p.exists() && !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let s = nix::sys::statvfs::statvfs(probe).ok()?;
    Some(s.blocks_available() as f64 * s.fragment_size() as f64 / 1e9)
}

/// What a pass may write, in GB: a rough upper estimate for the warning, not a promise.
pub(crate) fn estimate_gb(cfg: &Config, pass: &str) -> f64 {
    match pass {
        // osrt with a long range: 2.5 GB of intermediate data was seen for a 1 s range.
        "nsys" if cfg.nsys.trace.contains("osrt") => 3.0,
        "nsys" => 1.0,
        // About 1 MB of report per profiled kernel with the roofline set; more for "full".
        "ncu" => {
            0.002
                * cfg.ncu.max_kernels.max(cfg.ncu.top_n) as f64
                * cfg.ncu.instances_per_kernel.max(1) as f64
        }
        _ => 0.0,
    }
}

/// Warnings before `pass` runs, given the free space in the run root.
pub(crate) fn warnings(cfg: &Config, pass: &str, free: Option<f64>) -> Vec<String> {
    let mut out = Vec::new();
    let need = cfg.run.min_free_gb.max(estimate_gb(cfg, pass));
    if let Some(free) = free.filter(|f| *f < need) {
        out.push(format!(
            "only {free:.1} GB free in the run root; the {pass} pass may need about {need:.1} GB (run.min_free_gb={}): free space or use --run-root on a larger disk",
            cfg.run.min_free_gb
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::config as cfg;

    #[test]
    fn low_disk_warns_with_the_floor() {
        let w = warnings(&cfg(&[]), "nsys", Some(1.0));
        assert!(
            w[0].contains("only 1.0 GB free") && w[0].contains("run.min_free_gb=5"),
            "{w:?}"
        );
        assert!(warnings(&cfg(&[]), "nsys", Some(500.0)).is_empty());
        assert!(warnings(&cfg(&["run.min_free_gb=0"]), "ncu", Some(0.5)).is_empty());
    }

    #[test]
    fn free_space_is_readable_here() {
        assert!(free_gb(Path::new("/nonexistent/child")).is_some());
    }
}
