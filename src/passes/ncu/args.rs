//! The ncu command lines, built by pure functions from the config and the plan (tested
//! without running anything): the profile command, what it collects, the imports.

use std::path::Path;

use super::KernelFilter;
use crate::config::Ncu;
use crate::error::Error;

/// What one ncu profile command covers.
pub(crate) struct Scope<'a> {
    /// The NVTX include expression (None: not gated).
    pub(crate) include: Option<&'a str>,
    pub(crate) filter: Option<&'a KernelFilter>,
    pub(crate) out_base: &'a Path,
    pub(crate) workload: &'a [String],
    /// Leave NCCL kernels out of the unfiltered pass (under a launcher).
    pub(crate) exclude_nccl: bool,
    /// Which launches of the filtered kernels, and whether ncu ends the workload after them
    /// (one process only: ending one rank of several would leave the others waiting on it).
    pub(crate) launches: Launches,
    /// The section set (None: only the metrics) and every metric collected.
    pub(crate) collect: &'a Collect,
}

/// `ncu ...` profile arguments (without the program).
pub(crate) fn profile_args(cfg: &Ncu, s: &Scope) -> Vec<String> {
    let mut a: Vec<String> = vec!["--target-processes".into(), "all".into()];
    if let Some(expr) = s.include {
        a.extend(["--nvtx".into(), "--nvtx-include".into(), expr.to_string()]);
    }
    let per_kernel = cfg.instances_per_kernel.max(1);
    // ncu counts invocations per distinct kernel from 1: skipping N warm-up launches of each
    // kernel means profiling its invocation N+1.
    let invocation = cfg.launch_skip + 1;
    match s.filter.filter(|f| !f.is_empty()) {
        Some(f) => {
            let (base, names) = match f {
                KernelFilter::Mangled(n) => ("mangled", n),
                KernelFilter::Function(n) => ("function", n),
            };
            let alternatives: Vec<String> = names.iter().map(|n| escape_regex(n)).collect();
            let regex = format!("^({})$", alternatives.join("|"));
            a.extend(["--kernel-name-base".into(), base.into()]);
            let results = (u64::from(per_kernel) * names.len() as u64).to_string();
            if per_kernel == 1 && s.launches != Launches::EveryShape {
                // The invocation number counts per distinct kernel: `:1` is each one's first
                // launch in the range. Every launch would take hours of replay.
                a.extend([
                    "--kernel-id".into(),
                    format!("::regex:{regex}:{invocation}"),
                ]);
            } else {
                if cfg.launch_skip > 0 {
                    a.extend(["--launch-skip".into(), cfg.launch_skip.to_string()]);
                }
                a.extend(["--kernel-name".into(), format!("regex:{regex}")]);
            }
            match s.launches {
                // Skip and count apply to each launch configuration of each kernel: the first
                // launch of every shape. ncu cannot know when the last shape has come, so the
                // workload runs to its end.
                Launches::EveryShape => a.extend([
                    "--filter-mode".into(),
                    "per-launch-config".into(),
                    "--launch-count".into(),
                    per_kernel.to_string(),
                ]),
                // The rest of the workload would run under ncu for nothing.
                Launches::FirstThenStop => a.extend([
                    "--launch-count".into(),
                    results,
                    "--kill".into(),
                    "on".into(),
                ]),
                Launches::First if per_kernel > 1 => a.extend(["--launch-count".into(), results]),
                Launches::First => {}
            }
        }
        // No filter: each distinct kernel once (distinct demangled name: with the default
        // function base, template instances would be lumped together).
        None => a.extend([
            "--kernel-name-base".into(),
            "demangled".into(),
            "--kernel-id".into(),
            if s.exclude_nccl {
                // NCCL kernels wait on the other ranks, which ncu's serialised replay stalls.
                format!("::regex:^(?!.*nccl).*:{invocation}")
            } else {
                format!(":::{invocation}")
            },
        ]),
    }
    if let Some(set) = &s.collect.set {
        a.extend(["--set".into(), set.clone()]);
    }
    if !s.collect.metrics.is_empty() {
        a.extend(["--metrics".into(), s.collect.metrics.join(",")]);
    }
    if let Some(c) = cfg.clock_control {
        a.extend(["--clock-control".into(), c.as_str().to_string()]);
    }
    a.extend(cfg.extra_args.iter().cloned());
    a.extend(["-o".into(), s.out_base.display().to_string()]);
    a.extend(s.workload.iter().cloned());
    a
}

/// Which launches of the filtered kernels one ncu command profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Launches {
    /// Each kernel's first launches in the range; the workload runs to its end.
    First,
    /// The same, then ncu ends the workload (`--kill on`).
    FirstThenStop,
    /// The first launch of each launch configuration of each kernel.
    EveryShape,
}

/// `ncu.set` value for "no section set, only the metrics the reports read".
pub(crate) const REPORT_SET: &str = "report";

/// What ncu collects: a section set (None: none) and metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Collect {
    pub(crate) set: Option<String>,
    pub(crate) metrics: Vec<String>,
}

/// What a pass collects. `ncu.set: report`: the metrics the reports read that this GPU knows
/// (`known`, from `ncu --query-metrics`), no section set, so ncu replays each kernel as few
/// times as it can. Some of those names exist only on some GPUs and an unknown name stops ncu,
/// so when ncu could not be asked the roofline set stands in (ncu picks its metrics per GPU).
/// Another set: that set and the base metrics. `ncu.metrics` always comes last.
pub(crate) fn metrics_to_collect(cfg: &Ncu, known: Option<&[String]>) -> Collect {
    use crate::parse::ncu::{DRAM_PCT, REPORT_METRICS, SM_PCT, TIME};
    let (set, ours): (Option<String>, Vec<&str>) = match (cfg.set.as_str(), known) {
        (REPORT_SET, Some(k)) => (
            None,
            REPORT_METRICS
                .iter()
                .copied()
                .filter(|m| k.iter().any(|n| n == m))
                .collect(),
        ),
        (REPORT_SET, None) => (Some("roofline".into()), vec![TIME, SM_PCT, DRAM_PCT]),
        (set, _) => (Some(set.to_string()), vec![TIME, SM_PCT, DRAM_PCT]),
    };
    let mut metrics: Vec<String> = Vec::new();
    for m in ours
        .into_iter()
        .map(str::to_string)
        .chain(cfg.metrics.iter().cloned())
    {
        if !metrics.contains(&m) {
            metrics.push(m);
        }
    }
    Collect { set, metrics }
}

/// When nsys captures the workload's cudaProfilerStart/Stop windows, ncu profiles inside them
/// too (`--profile-from-start off`), so both tools look at the same part of the run.
pub(crate) fn window_args(target: &crate::config::NcuTarget) -> Vec<String> {
    match target.in_windows {
        true => vec!["--profile-from-start".into(), "off".into()],
        false => Vec::new(),
    }
}

pub(crate) fn import_args(rep: &Path) -> Vec<String> {
    vec![
        "--import".into(),
        rep.display().to_string(),
        "--csv".into(),
        "--page".into(),
        "raw".into(),
    ]
}

/// The same import with mangled names: the join key shared with the nsys SQLite export.
pub(crate) fn import_mangled_args(rep: &Path) -> Vec<String> {
    let mut a = import_args(rep);
    a.extend(["--print-kernel-base".into(), "mangled".into()]);
    a
}

/// Escape a kernel name for ncu's (ECMAScript) regex.
pub(crate) fn escape_regex(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if "\\^$.|?*+()[]{}/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Metric names as ncu knows them: `unit__counter[.rollup...]`. nvprof-era names such as
/// `flop_count_sp` make ncu 2025 fail and kill the application, so they are refused up front.
pub(crate) fn check_metric_names(metrics: &[String]) -> Result<(), Error> {
    for m in metrics {
        let ok = m.contains("__")
            && m.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        if !ok {
            return Err(Error::config(format!(
                "ncu.metrics: `{m}` is not an Nsight Compute metric name (names look like sm__throughput.avg.pct_of_peak_sustained_elapsed; nvprof names such as flop_count_sp were replaced, see `ncu --query-metrics`)"
            )));
        }
    }
    Ok(())
}
