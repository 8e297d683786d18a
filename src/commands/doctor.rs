//! `stage2 doctor`: can profiling work here? One line per check, ok/warn/fail with the fix.

use std::path::Path;
use std::time::Duration;

use crate::cli::SourceArgs;
use crate::config;
use crate::error::Result;
use crate::exit_codes;
use crate::passes::process::{self, Spec};
use crate::passes::tools::{self, Tool};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    Ok,
    Warn,
    Fail,
}

pub(crate) struct Check {
    pub(crate) level: Level,
    pub(crate) what: String,
    pub(crate) fix: Option<String>,
}

fn check(level: Level, what: impl Into<String>, fix: Option<&str>) -> Check {
    Check {
        level,
        what: what.into(),
        fix: fix.map(str::to_string),
    }
}

pub(crate) fn run(sources: &SourceArgs, overrides: &[String]) -> Result<i32> {
    let cfg = config::resolve(&sources.to_sources(overrides))?.config;
    let mut checks = Vec::new();
    let nsys = tools::find(Tool::Nsys, cfg.tools.nsys.as_deref());
    let ncu = tools::find(Tool::Ncu, cfg.tools.ncu.as_deref());
    for (tool, found) in [(Tool::Nsys, &nsys), (Tool::Ncu, &ncu)] {
        checks.push(match found {
            // A tool that cannot say its version cannot be run: not a usable profiler.
            Ok(f) if f.version.is_none() => check(
                Level::Fail,
                format!(
                    "{} at {} (found via {}) does not run: `--version` gave no version",
                    tool.name(),
                    f.path.display(),
                    f.how
                ),
                Some("point tools.* / STAGE2_* at a working install"),
            ),
            Ok(f) => check(
                Level::Ok,
                format!(
                    "{} {} at {} (found via {})",
                    tool.name(),
                    f.version.as_deref().unwrap_or("(version unknown)"),
                    f.path.display(),
                    f.how
                ),
                None,
            ),
            Err(e) => check(
                Level::Fail,
                e.to_string(),
                Some("install it, or point tools.* / STAGE2_* at it"),
            ),
        });
    }
    checks.push(gpu_check());
    checks.push(counters_check());
    if let Ok(f) = &nsys {
        checks.push(finalize_check(&f.path));
        checks.push(sampling_check(&f.path, &cfg));
    }
    checks.push(disk_check(Path::new(&cfg.run.root)));
    checks.push(held_check());

    // In the one voice of every command: `stage2: ok: ...`, `stage2: warning: ...`,
    // `stage2: error: ...` on stderr, coloured where the terminal allows.
    for c in &checks {
        let fix = c
            .fix
            .as_ref()
            .map(|f| format!(" (fix: {f})"))
            .unwrap_or_default();
        match c.level {
            Level::Ok => tracing::info!("ok: {}", c.what),
            Level::Warn => tracing::warn!("{}{fix}", c.what),
            Level::Fail => tracing::error!("{}{fix}", c.what),
        }
    }
    let count = |l: Level| checks.iter().filter(|c| c.level == l).count();
    tracing::info!(
        "doctor: {} ok, {} warnings, {} failed",
        count(Level::Ok),
        count(Level::Warn),
        count(Level::Fail)
    );
    let worst = checks.iter().map(|c| c.level).max().unwrap_or(Level::Ok);
    Ok(if worst == Level::Fail {
        exit_codes::TOOL
    } else {
        exit_codes::OK
    })
}

/// Workloads held by `ncu --mode=launch` (`ncu.early_start`) that no run will attach to: a
/// run stopped by SIGKILL leaves its copy waiting, with the memory it holds.
fn held_check() -> Check {
    let held = crate::passes::ncu::early::held_launches();
    match held.first() {
        None => check(Level::Ok, "no workload waits for an ncu attach", None),
        Some((_, line)) => {
            check(
                Level::Warn,
                format!(
                    "{} `ncu --mode=launch` process(es) hold a workload waiting for an ncu attach, with the memory it took (pids {}; the first: `{}`): a running stage2 holds its own while its nsys pass runs; one stopped by SIGKILL leaves it",
                    held.len(),
                    crate::text::listed(held.iter().map(|(p, _)| p), ", "),
                    crate::term::visible(&crate::secrets::scrub(line)),
                ),
                Some("`kill PID` of those no running stage2 started"),
            )
        }
    }
}

fn gpu_check() -> Check {
    let (gpus, cuda) = crate::passes::provenance::nvidia_smi();
    if gpus.is_empty() {
        // Without a GPU nothing can be profiled: both cases fail, nvidia-smi's words quoted.
        return match which::which("nvidia-smi") {
            Ok(p) => {
                let said = crate::passes::process::probe_or_why(
                    &p,
                    &["-L"],
                    std::time::Duration::from_secs(30),
                )
                .map_or_else(
                    |why| why,
                    |out| format!("`nvidia-smi -L` printed: {}", out.trim()),
                );
                check(
                    Level::Fail,
                    format!(
                        "{} lists no GPU: {}",
                        p.display(),
                        crate::term::visible(&said)
                    ),
                    Some("check the NVIDIA driver (nvidia-smi must list the GPU)"),
                )
            }
            Err(_) => check(
                Level::Fail,
                "nvidia-smi not found: no NVIDIA driver here, so no GPU to profile",
                Some("install the NVIDIA driver utilities, or run on a GPU machine"),
            ),
        };
    }
    let list: Vec<String> = gpus
        .iter()
        .map(|g| format!("{} (driver {})", g.name, g.driver))
        .collect();
    check(
        Level::Ok,
        format!(
            "GPU: {}; CUDA {}",
            crate::text::listed(&list, ", "),
            cuda.as_deref().unwrap_or("version unknown")
        ),
        None,
    )
}

/// ncu needs the GPU performance counters; by default the driver allows them to root only
/// (ncu then fails with ERR_NVGPUCTRPERM).
fn counters_check() -> Check {
    let params = std::fs::read_to_string("/proc/driver/nvidia/params").unwrap_or_default();
    let admin_only = params
        .lines()
        .find(|l| l.starts_with("RmProfilingAdminOnly"))
        .map(|l| l.trim().ends_with('1'));
    let root = nix::unistd::Uid::effective().is_root();
    match (admin_only, root) {
        (None, true) => check(
            Level::Warn,
            "performance counters: running as root, but no NVIDIA driver is loaded (no /proc/driver/nvidia/params)",
            None,
        ),
        (_, true) => check(Level::Ok, "performance counters: running as root, readable", None),
        (Some(false), _) => check(Level::Ok, "performance counters: open to all users", None),
        (Some(true), false) => check(
            Level::Fail,
            "performance counters: restricted to admin users (ncu would fail with ERR_NVGPUCTRPERM)",
            Some("run as root, or set `options nvidia NVreg_RestrictProfilingToAdminUsers=0` in /etc/modprobe.d and reboot (NVIDIA's ERR_NVGPUCTRPERM page)"),
        ),
        (None, false) => check(
            Level::Warn,
            "performance counters: cannot tell (no /proc/driver/nvidia/params); ncu may fail with ERR_NVGPUCTRPERM",
            Some("if it does: run as root or set NVreg_RestrictProfilingToAdminUsers=0"),
        ),
    }
}

/// A seconds-long `nsys profile` of a trivial command must leave a .nsys-rep: on some installs
/// the importer is missing or lacks a library and only a .qdstrm appears.
fn finalize_check(nsys: &Path) -> Check {
    let t = match trial(nsys, &["true"], Duration::from_secs(120), |_| {}) {
        Ok(t) => t,
        Err(Trial::NoTemp) => {
            return check(Level::Warn, "nsys finalize: no temp dir to test in", None)
        }
        Err(Trial::CannotRun(e)) => {
            return check(
                Level::Fail,
                format!("nsys finalize: cannot run nsys: {e}"),
                None,
            )
        }
    };
    let out = &t.out;
    if t.report {
        check(
            Level::Ok,
            format!(
                "nsys finalizes reports ({:.1} s for a trivial run)",
                out.duration.as_secs_f64()
            ),
            None,
        )
    } else if t.qdstrm || out.tail.contains("Importer") {
        check(
            Level::Fail,
            "nsys wrote only a .qdstrm: its importer (QdstrmImporter) is missing or cannot load a library",
            Some("use a complete Nsight Systems install (tools.nsys / STAGE2_NSYS), or install the importer's missing libraries (e.g. libdw1)"),
        )
    } else {
        check(
            Level::Fail,
            format!(
                "nsys profile of `true` left no report ({}): {}",
                out.describe(),
                out.tail_lines(3)
            ),
            None,
        )
    }
}

/// Whether nsys may sample GPU metrics as the nsys pass asks: a second of `sleep` under
/// `nsys profile --gpu-metrics-*` (nsys refuses before the program starts when the counters
/// are held by another sampler such as DCGM profiling or another nsys, when the user has no
/// counter access, or when the GPU has no metric set).
fn sampling_check(nsys: &Path, cfg: &config::Config) -> Check {
    let Some(devices) = crate::passes::nsys::sampled_devices(cfg) else {
        let why = match cfg.sampling_off() {
            None => "off (nsys.gpu_metrics.enable=false)".to_string(),
            Some(why) => format!("off: {why}"),
        };
        return check(Level::Ok, format!("GPU-metrics sampling: {why}"), None);
    };
    let timeout = Duration::from_secs(cfg.run.probe_timeout_s.max(30));
    // The set a profile would sample: nsys's for the chip, cut to the metrics read.
    let set_dir = tempfile::tempdir().ok();
    let derived = cut_set(nsys, cfg, set_dir.as_ref().map(|d| d.path()), timeout);
    let set_words = match &derived {
        Ok(d) => d.from.clone(),
        Err(why) => format!("nsys's default set ({why})"),
    };
    let set_path = derived.as_ref().ok().map(|d| d.path.clone());
    let sample = |argv: &mut Vec<String>| {
        let gm = &cfg.nsys.gpu_metrics;
        crate::passes::nsys::add_sampling(argv, gm, &devices, set_path.as_deref())
    };
    let t = match trial(nsys, &["sleep", "1"], timeout, sample) {
        Ok(t) => t,
        Err(Trial::NoTemp) => {
            return check(
                Level::Warn,
                "GPU-metrics sampling: no temp dir to test in",
                None,
            )
        }
        Err(Trial::CannotRun(e)) => {
            return check(
                Level::Warn,
                format!("GPU-metrics sampling: cannot run nsys: {e}"),
                None,
            )
        }
    };
    let (out, made) = (&t.out, t.report);
    match crate::passes::nsys::sampling_refused(out, made) {
        None if made => check(
            Level::Ok,
            format!(
                "GPU-metrics sampling: nsys samples devices `{devices}` at {} Hz, set {set_words}{}",
                cfg.nsys.gpu_metrics.frequency_hz,
                every_gpu(cfg)
            ),
            None,
        ),
        Some(why) => check(
            Level::Warn,
            format!("GPU-metrics sampling: nsys refuses it ({why}); the nsys pass will run without it and the reports will have no sampled figures"),
            Some("stop the other sampler (DCGM profiling: `dcgmi profile --pause`; another nsys with --gpu-metrics-*), run as root or allow counter access (NVreg_RestrictProfilingToAdminUsers=0), or set nsys.gpu_metrics.enable=false"),
        ),
        None => check(
            Level::Warn,
            format!("GPU-metrics sampling: a test profile left no report ({}): {}", out.describe(), out.tail_lines(3)),
            None,
        ),
    }
}

/// Where `cuda-visible` is every GPU of a machine of several: what that costs, and the keys
/// that keep the samples to the workload's GPU.
fn every_gpu(cfg: &config::Config) -> String {
    let gpus = || crate::passes::provenance::nvidia_smi().0.len();
    crate::passes::nsys::samples_every_gpu(cfg, gpus).map_or(String::new(), |n| {
        let keep = crate::passes::nsys::keep_to_one(cfg);
        format!("; all {n} GPUs here are visible to the workload and each is sampled, adding its rows to the export ({keep})")
    })
}

/// The metric set a profile would cut for this GPU (see `passes::nsys::metric_set`), made in
/// `dir`; Err says why nsys's own would be sampled.
fn cut_set(
    nsys: &Path,
    cfg: &config::Config,
    dir: Option<&Path>,
    timeout: Duration,
) -> std::result::Result<crate::passes::nsys::metric_set::Derived, String> {
    use crate::passes::nsys::{configured_set, metric_set};
    if let Some(set) = configured_set(&cfg.nsys.gpu_metrics) {
        return Err(format!("nsys.gpu_metrics.set={set}"));
    }
    let dir = dir.ok_or("no temp dir")?;
    std::fs::create_dir_all(dir.join("nsys")).map_err(|e| e.to_string())?;
    metric_set::ask(nsys, dir, None, timeout)
}

/// What a trial `nsys profile` left.
struct Tried {
    out: process::Outcome,
    /// A finalized report, or only the raw stream (`.qdstrm`).
    report: bool,
    qdstrm: bool,
}

/// Why a trial did not run.
enum Trial {
    NoTemp,
    CannotRun(std::io::Error),
}

/// A short `nsys profile` of `program` in a temp dir, its own flags given by `flags` (placed
/// before `-o`).
fn trial(
    nsys: &Path,
    program: &[&str],
    timeout: Duration,
    flags: impl FnOnce(&mut Vec<String>),
) -> std::result::Result<Tried, Trial> {
    let tmp = tempfile::tempdir().map_err(|_| Trial::NoTemp)?;
    let base = tmp.path().join("doctor");
    let mut argv: Vec<String> = ["profile", "--trace=osrt", "--sample=none", "-o"]
        .map(str::to_string)
        .to_vec();
    argv.push(base.display().to_string());
    argv.extend(program.iter().map(|a| a.to_string()));
    flags(&mut argv);
    let mut spec = Spec::new(nsys, argv, tmp.path().join("nsys.log"));
    spec.timeout = Some(timeout);
    spec.grace = Duration::from_secs(5);
    let out = process::run(&spec).map_err(Trial::CannotRun)?;
    Ok(Tried {
        report: crate::rundir::find_nsys_report(&base).is_some(),
        qdstrm: base.with_extension("qdstrm").exists(),
        out,
    })
}

fn disk_check(root: &Path) -> Check {
    match crate::passes::guards::free_gb(root) {
        Some(free) => {
            let what = format!("free disk at {}: {free:.1} GB", root.display());
            match free {
                f if f < 1.0 => check(
                    Level::Fail,
                    what,
                    Some("free space or use --run-root on a larger disk: nsys intermediates reach GBs"),
                ),
                f if f < 10.0 => check(
                    Level::Warn,
                    what,
                    Some("long captures with osrt tracing can write several GB"),
                ),
                _ => check(Level::Ok, what, None),
            }
        }
        None => check(
            Level::Warn,
            format!("free disk at {}: unknown", root.display()),
            None,
        ),
    }
}
