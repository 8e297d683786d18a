//! Value checks the types cannot express: ranges of numbers, known words in string settings.
//! They run right after the typed view is built, so a bad value fails before anything runs.

use super::Config;
use crate::error::Error;

/// nsys `--trace` APIs stage2 passes through (the ones `nsys profile --help` lists).
const NSYS_TRACE: &[&str] = &[
    "cuda",
    // CUDA traced in software, or in hardware: `cuda` lets nsys choose (newer nsys picks
    // hardware on newer GPUs and falls back in silence).
    "cuda-sw",
    "cuda-hw",
    "nvtx",
    "osrt",
    "cublas",
    "cublas-verbose",
    "cudnn",
    "cusparse",
    "cusparse-verbose",
    "opengl",
    "opengl-annotations",
    "openacc",
    "openmp",
    "mpi",
    "oshmem",
    "ucx",
    "vulkan",
    "vulkan-annotations",
    "nvvideo",
    "python-gil",
    "syscall",
    "dx11",
    "dx12",
    "wddm",
    "gds",
    "none",
];
/// nsys `--sample` values.
const NSYS_SAMPLE: &[&str] = &["none", "process-tree", "system-wide", "cpu"];
/// ncu `--set` section sets (ncu --list-sets), and `report`: only the metrics the reports read.
const NCU_SET: &[&str] = &[
    "report",
    "basic",
    "detailed",
    "full",
    "nvlink",
    "pmsampling",
    "roofline",
];

pub(crate) fn check(c: &Config) -> Result<(), Error> {
    let bad = |key: &str, v: &dyn std::fmt::Display, want: &str| {
        Err(Error::config(format!("{key}={v}: {want}")))
    };
    if !(c.ncu.coverage.is_finite() && c.ncu.coverage > 0.0 && c.ncu.coverage <= 1.0) {
        return bad(
            "ncu.coverage",
            &c.ncu.coverage,
            "must be a share in (0, 1], e.g. 0.95",
        );
    }
    if !(c.ncu.shape_coverage.is_finite() && (0.0..=1.0).contains(&c.ncu.shape_coverage)) {
        return bad(
            "ncu.shape_coverage",
            &c.ncu.shape_coverage,
            "must be a share in [0, 1], e.g. 0.9",
        );
    }
    if c.ncu.shapes_max_launches == 0 {
        return bad(
            "ncu.shapes_max_launches",
            &0,
            "must be at least 1, e.g. 200",
        );
    }
    if c.ncu.shapes_budget_s == Some(0) {
        return bad(
            "ncu.shapes_budget_s",
            &0,
            "must be at least 1 second, or null for no time bound",
        );
    }
    let tol = c.ncu.cache.duration_tolerance;
    if !(tol.is_finite() && tol >= 0.0) {
        return bad(
            "ncu.cache.duration_tolerance",
            &tol,
            "must be a fraction >= 0, e.g. 0.25 (25%)",
        );
    }
    if c.ncu
        .cache
        .dir
        .as_deref()
        .is_some_and(|d| d.trim().is_empty())
    {
        return bad(
            "ncu.cache.dir",
            &"''",
            "an empty folder name would be the current directory: name a folder (--cache-dir DIR) or leave it out for the default",
        );
    }
    if c.ncu.max_kernels == 0 {
        return bad(
            "ncu.max_kernels",
            &0,
            "must be at least 1 (ncu.enable=false skips ncu)",
        );
    }
    if c.ncu.top_n == 0 {
        return bad("ncu.top_n", &0, "must be at least 1");
    }
    if c.ncu.instances_per_kernel == 0 {
        return bad("ncu.instances_per_kernel", &0, "must be at least 1");
    }
    if !(c.run.min_free_gb.is_finite() && c.run.min_free_gb >= 0.0) {
        return bad(
            "run.min_free_gb",
            &c.run.min_free_gb,
            "must be a number of GB >= 0",
        );
    }
    let hz = c.workload.python_sampling_hz;
    if !(hz.is_finite() && (0.0..=10_000.0).contains(&hz)) {
        return bad(
            "workload.python_sampling_hz",
            &hz,
            "must be between 0 (off) and 10000 samples a second",
        );
    }
    // The grammar analysis::instances reads; anything else would silently mean `auto`.
    let inst = c.report.instances.trim();
    let skip = inst.strip_prefix("skip=").map(|n| n.parse::<u64>().is_ok());
    if !matches!(inst, "auto" | "all") && skip != Some(true) {
        return bad(
            "report.instances",
            &c.report.instances,
            "must be auto, all, or skip=N (the first N instances a warm-up group); --instances sets it",
        );
    }
    let gm = c.nsys.gpu_metrics.frequency_hz;
    if !(10..=200_000).contains(&gm) {
        return bad(
            "nsys.gpu_metrics.frequency_hz",
            &gm,
            "must be between 10 and 200000 samples a second (what nsys accepts)",
        );
    }
    // nsys's words for `--gpu-metrics-devices`, or GPU numbers: anything else nsys refuses,
    // and the pass would run again without sampling, the user's intent lost to a typo.
    if let Some(d) = c.nsys.gpu_metrics.devices.as_deref() {
        if !super::gpu_numbers(d) && !matches!(d.trim(), "" | "all" | "cuda-visible") {
            return bad(
                "nsys.gpu_metrics.devices",
                &d,
                "must be cuda-visible, all, or GPU numbers such as 0 or 0,1 (nsys --gpu-metrics-devices; nsys.gpu_metrics.enable=false turns sampling off)",
            );
        }
    }
    if !(1..=100).contains(&c.run.repeat) {
        return bad("run.repeat", &c.run.repeat, "must be between 1 and 100");
    }
    if c.workload.nproc_per_node == 0 || c.workload.nnodes == 0 {
        return bad(
            "workload.nproc_per_node/nnodes",
            &format!("{}/{}", c.workload.nproc_per_node, c.workload.nnodes),
            "must be at least 1",
        );
    }
    words("nsys.trace", &c.nsys.trace, NSYS_TRACE)?;
    words("nsys.sample", &c.nsys.sample, NSYS_SAMPLE)?;
    if !NCU_SET.contains(&c.ncu.set.as_str()) {
        return bad(
            "ncu.set",
            &c.ncu.set,
            &format!("one of {}", NCU_SET.join(", ")),
        );
    }
    Ok(())
}

/// A comma-separated list of known words, not empty.
fn words(key: &str, value: &str, known: &[&str]) -> Result<(), Error> {
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    if let Some(p) = parts.iter().find(|p| !known.contains(p)) {
        let what = if p.is_empty() { "an empty entry" } else { p };
        return Err(Error::config(format!(
            "{key}={value}: {what} is not one of {}",
            known.join(", ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::{resolve, Sources};

    fn check(overrides: &[&str]) -> Result<(), String> {
        let src = Sources {
            embedded_only: true,
            overrides: overrides.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        resolve(&src).map(|_| ()).map_err(|e| e.to_string())
    }

    #[test]
    fn out_of_range_numbers_and_unknown_words_are_config_errors() {
        for (o, key) in [
            ("ncu.max_kernels=0", "ncu.max_kernels"),
            ("ncu.coverage=.nan", "ncu.coverage"),
            ("ncu.coverage=-1", "ncu.coverage"),
            ("ncu.coverage=1.5", "ncu.coverage"),
            ("run.min_free_gb=.nan", "run.min_free_gb"),
            ("run.repeat=0", "run.repeat"),
            ("nsys.trace=", "nsys.trace"),
            ("nsys.trace=cuda,foo", "nsys.trace"),
            ("ncu.set=bogus", "ncu.set"),
            ("nsys.sample=always", "nsys.sample"),
            (
                "nsys.gpu_metrics.frequency_hz=5",
                "nsys.gpu_metrics.frequency_hz",
            ),
            (
                "nsys.gpu_metrics.frequency_hz=400000",
                "nsys.gpu_metrics.frequency_hz",
            ),
            ("nsys.gpu_metrics.devices=1,x", "nsys.gpu_metrics.devices"),
            ("nsys.gpu_metrics.devices=none", "nsys.gpu_metrics.devices"),
            (
                "workload.python_sampling_hz=-1",
                "workload.python_sampling_hz",
            ),
            (
                "workload.python_sampling_hz=.inf",
                "workload.python_sampling_hz",
            ),
        ] {
            let e = check(&[o]).expect_err(o);
            assert!(e.contains(key), "{o}: {e}");
        }
        check(&["nsys.trace=cuda,nvtx,osrt", "ncu.set=full", "run.repeat=3"]).unwrap();
        for d in ["0", "0,1", "all", "cuda-visible"] {
            check(&[&format!("nsys.gpu_metrics.devices={d}")]).unwrap();
        }
    }
}
