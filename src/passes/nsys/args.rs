//! The nsys pass's command lines, built from config alone (tested without running anything):
//! `nsys profile` with its capture gating and GPU-metrics sampling, `nsys stats`, `nsys export`.

use std::path::Path;

use crate::config::{Capture, CaptureRange, Launcher, Nsys};
use crate::error::Error;

/// The reports `nsys stats` writes as `summary_<report>.csv`.
pub(crate) const STATS_REPORTS: &[&str] = &["cuda_gpu_kern_sum", "nvtx_sum", "cuda_api_sum"];

/// `nsys profile ...` arguments (without the program). Fails, before anything runs, when
/// NVTX gating is asked for without a range name.
pub(crate) fn profile_args(
    cfg: &Nsys,
    domain: Option<&str>,
    out_base: &Path,
    workload: &[String],
) -> Result<Vec<String>, Error> {
    let mut a = vec![
        "profile".to_string(),
        format!("--trace={}", cfg.trace),
        format!("--sample={}", cfg.sample),
        format!("--cuda-graph-trace={}", cfg.cuda_graph_trace.as_str()),
    ];
    // The reports read no thread scheduling; nsys traces it by default only to go with CPU
    // sampling. `extra_args` may still turn it on.
    if cfg.sample == "none" && !cfg.extra_args.iter().any(|x| x.starts_with("--cpuctxsw")) {
        a.push("--cpuctxsw=none".to_string());
    }
    if let Some(p) = cfg.pytorch {
        a.push(format!("--pytorch={}", p.as_str()));
    }
    a.extend(capture_args(cfg, domain)?);
    if let Some(d) = cfg.nvtx_domain_include.as_deref().filter(|d| !d.is_empty()) {
        a.push(format!("--nvtx-domain-include={d}"));
    }
    if let Some(d) = cfg.nvtx_domain_exclude.as_deref().filter(|d| !d.is_empty()) {
        a.push(format!("--nvtx-domain-exclude={d}"));
    }
    a.extend(cfg.extra_args.iter().cloned());
    a.push("-o".to_string());
    a.push(out_base.display().to_string());
    a.extend(workload.iter().cloned());
    Ok(a)
}

/// The capture's flags (none: the whole run). Fails when NVTX gating has no range name.
pub(crate) fn capture_args(cfg: &Nsys, domain: Option<&str>) -> Result<Vec<String>, Error> {
    let mut a = Vec::new();
    if cfg.gating_nvtx && cfg.capture_range != CaptureRange::None {
        a.push(format!("--capture-range={}", cfg.capture_range.as_str()));
        if cfg.capture_range == CaptureRange::Nvtx {
            let expr = capture_expr(cfg, domain)?;
            a.push(format!("--nvtx-capture={expr}"));
            // Without this nsys matches only registered NVTX strings, and torch's ranges are
            // not registered: the capture would never start.
            a.push("--env-var=NSYS_NVTX_PROFILER_REGISTER_ONLY=0".to_string());
        }
        if let Some(end) = cfg.capture_range_end {
            a.push(format!("--capture-range-end={}", end.as_str()));
        }
    }
    Ok(a)
}

/// osrt traced over a long capture (the whole run, or on past its range's first instance).
pub(crate) fn osrt_warning(cfg: &Nsys, capture: &Capture) -> Option<String> {
    let osrt = cfg.trace.split(',').any(|t| t.trim() == "osrt");
    let long = capture.range().is_none() || !capture.first_only();
    (osrt && long).then(|| "nsys traces osrt over a long capture: osrt once wrote a 2.5 GB intermediate file for a 1-second range of a tiny workload. Gate on a short range or drop it (nsys.trace=cuda,nvtx)".to_string())
}

/// How many GPUs the nsys pass samples where `cuda-visible` is every GPU of a machine of
/// several (`gpus`: how many nvidia-smi lists, asked only then) and nothing chooses the
/// workload's: each adds its rows to the export. None otherwise.
pub(crate) fn samples_every_gpu(
    cfg: &crate::config::Config,
    gpus: impl FnOnce() -> usize,
) -> Option<usize> {
    let every = sampled_devices(cfg).as_deref() == Some("cuda-visible") && !cfg.gpus_chosen();
    every.then(gpus).filter(|&n| n > 1)
}

/// The keys that keep the samples of [`samples_every_gpu`] to the workload's GPU: under a
/// launcher rank 0 samples, and `workload.device` would hide the other ranks' GPUs.
pub(crate) fn keep_to_one(cfg: &crate::config::Config) -> &'static str {
    match cfg.workload.launcher {
        Launcher::None => {
            "nsys.gpu_metrics.devices=0 or workload.device=0 keeps it to GPU 0 where the workload uses that GPU alone"
        }
        _ => "nsys.gpu_metrics.devices=N keeps rank 0's sampling to its GPU N",
    }
}

/// The GPUs the nsys pass samples (`--gpu-metrics-devices`), or None: sampling is off. Under
/// a launcher rank 0 alone samples (the nsys pass runs each rank through `__rank-exec
/// --others-drop`, [`crate::passes::launcher::rank_exec_args`]): under torchrun and
/// mpirun, with nothing choosing the GPUs, its GPU is device 0 (rank r takes device r by the
/// convention those launchers' LOCAL_RANK serves; the report checks the kernels' device
/// against the samples' before attributing them); elsewhere the GPUs it can see.
pub(crate) fn sampled_devices(cfg: &crate::config::Config) -> Option<String> {
    let gm = &cfg.nsys.gpu_metrics;
    if !gm.enable || cfg.sampling_off().is_some() {
        return None;
    }
    let asked = gm
        .devices
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty());
    let rank_zero = matches!(cfg.workload.launcher, Launcher::Torchrun | Launcher::Mpirun)
        && !cfg.gpus_chosen();
    let default = if rank_zero { "0" } else { "cuda-visible" };
    Some(asked.unwrap_or(default).to_string())
}

/// `--gpu-metrics-*` arguments for sampling `devices`, put before `-o` in `argv`: the
/// configured set, else `derived` (see [`metric_set`]), else nsys's default.
pub(crate) fn add_sampling(
    argv: &mut Vec<String>,
    gm: &crate::config::GpuMetrics,
    devices: &str,
    derived: Option<&Path>,
) {
    let at = argv.iter().position(|a| a == "-o").unwrap_or(argv.len());
    let mut flags = vec![
        format!("--gpu-metrics-devices={devices}"),
        format!("--gpu-metrics-frequency={}", gm.frequency_hz),
    ];
    let derived = derived.map(|p| format!("file:{}", p.display()));
    if let Some(set) = configured_set(gm).map(str::to_string).or(derived) {
        flags.push(format!("--gpu-metrics-set={set}"));
    }
    argv.splice(at..at, flags);
}

/// `nsys.gpu_metrics.set` when one is given.
pub(crate) fn configured_set(gm: &crate::config::GpuMetrics) -> Option<&str> {
    gm.set.as_deref().filter(|s| !s.trim().is_empty())
}

/// The `--nvtx-capture` expression: the user's range name, e.g. `prefill` or `prefill@dom`.
pub(crate) fn capture_expr(cfg: &Nsys, domain: Option<&str>) -> Result<String, Error> {
    if let Some(raw) = cfg
        .nvtx_capture_raw
        .as_deref()
        .filter(|r| !r.trim().is_empty())
    {
        return Ok(raw.to_string());
    }
    match cfg.nvtx_capture.as_deref().map(str::trim) {
        Some(e) if !e.is_empty() => Ok(crate::analysis::nvtx::nsys_capture(e, domain)),
        _ => Err(Error::config(
            "nsys.capture_range=nvtx needs a range name: set nsys.nvtx_capture (or --nvtx-capture NAME), or nsys.gating_nvtx=false to capture the whole run".to_string(),
        )),
    }
}

/// `nsys stats` of `input`: the SQLite export when it exists (nsys reads it as it is), else
/// the report, which nsys then exports once more for itself (`--force-export`). Exporting
/// twice costs as much as the stats: 2.7 s of a 3.7 s step for a capture with GPU metrics.
pub(crate) fn stats_args(input: &Path, out_base: &Path) -> Vec<String> {
    let mut a = vec!["stats".to_string()];
    for r in STATS_REPORTS {
        a.push("--report".to_string());
        a.push(r.to_string());
    }
    a.extend(["--format", "csv"].map(str::to_string));
    if input.extension().is_none_or(|x| x != "sqlite") {
        a.push("--force-export=true".to_string());
    }
    a.extend([
        "-o".to_string(),
        out_base.display().to_string(),
        input.display().to_string(),
    ]);
    a
}

pub(crate) fn export_args(rep: &Path, sqlite: &Path) -> Vec<String> {
    [
        "export",
        "--type",
        "sqlite",
        "--force-overwrite=true",
        "-o",
        &sqlite.display().to_string(),
        &rep.display().to_string(),
    ]
    .map(str::to_string)
    .to_vec()
}
