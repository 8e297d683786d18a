//! `stage2 diff`: what changed between two runs, per kernel (joined by name) and per NVTX
//! range, sorted by absolute impact, with warnings when the runs are not comparable.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::analysis::summary::Summary;

#[derive(Debug, Clone, Serialize)]
pub(crate) struct KernelDelta {
    pub(crate) name: String,
    pub(crate) time_a_ns: f64,
    pub(crate) time_b_ns: f64,
    pub(crate) delta_ns: f64,
    /// Relative change, % of A; None when the kernel is new in B.
    pub(crate) delta_pct: Option<f64>,
    pub(crate) share_a_pct: Option<f64>,
    pub(crate) share_b_pct: Option<f64>,
    pub(crate) instances_a: u64,
    pub(crate) instances_b: u64,
    pub(crate) sm_pct_delta: Option<f64>,
    pub(crate) dram_pct_delta: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct RangeDelta {
    pub(crate) name: String,
    pub(crate) wall_a_ns: f64,
    pub(crate) wall_b_ns: f64,
    pub(crate) wall_delta_pct: Option<f64>,
    pub(crate) kernel_a_ns: Option<f64>,
    pub(crate) kernel_b_ns: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Diff {
    pub(crate) schema_version: u32,
    pub(crate) run_a: String,
    pub(crate) run_b: String,
    pub(crate) total_kernel_time_a_ns: f64,
    pub(crate) total_kernel_time_b_ns: f64,
    pub(crate) total_delta_pct: Option<f64>,
    pub(crate) kernels: Vec<KernelDelta>,
    pub(crate) ranges: Vec<RangeDelta>,
    /// Why the runs may not be comparable.
    pub(crate) warnings: Vec<String>,
}

fn pct(a: f64, b: f64) -> Option<f64> {
    (a > 0.0).then(|| 100.0 * (b - a) / a)
}

pub(crate) fn diff(
    a: &Summary,
    b: &Summary,
    env_a: Option<&serde_json::Value>,
    env_b: Option<&serde_json::Value>,
    cfg_a: &serde_yaml::Value,
    cfg_b: &serde_yaml::Value,
) -> Diff {
    let ka: BTreeMap<&str, _> = a.kernels.iter().map(|k| (k.name.as_str(), k)).collect();
    let kb: BTreeMap<&str, _> = b.kernels.iter().map(|k| (k.name.as_str(), k)).collect();
    let names: BTreeSet<&str> = ka.keys().chain(kb.keys()).copied().collect();
    let mut kernels: Vec<KernelDelta> = names
        .into_iter()
        .map(|n| {
            let (x, y) = (ka.get(n), kb.get(n));
            let ta = x.map(|k| k.total_time_ns).unwrap_or(0.0);
            let tb = y.map(|k| k.total_time_ns).unwrap_or(0.0);
            let d =
                |f: fn(&&crate::analysis::summary::Kernel) -> Option<f64>| Some(f(y?)? - f(x?)?);
            KernelDelta {
                name: n.to_string(),
                time_a_ns: ta,
                time_b_ns: tb,
                delta_ns: tb - ta,
                delta_pct: pct(ta, tb),
                share_a_pct: x.and_then(|k| k.gpu_time_pct),
                share_b_pct: y.and_then(|k| k.gpu_time_pct),
                instances_a: x.map(|k| k.instances).unwrap_or(0),
                instances_b: y.map(|k| k.instances).unwrap_or(0),
                sm_pct_delta: d(|k| k.sm_throughput_pct),
                dram_pct_delta: d(|k| k.dram_throughput_pct),
            }
        })
        .collect();
    kernels.sort_by(|x, y| {
        y.delta_ns
            .abs()
            .total_cmp(&x.delta_ns.abs())
            .then(x.name.cmp(&y.name))
    });
    let ranges = a
        .ranges
        .iter()
        .filter_map(|ra| {
            let rb = b.ranges.iter().find(|r| r.name == ra.name)?;
            Some(RangeDelta {
                name: ra.name.clone(),
                wall_a_ns: ra.total_ns,
                wall_b_ns: rb.total_ns,
                wall_delta_pct: pct(ra.total_ns, rb.total_ns),
                kernel_a_ns: ra.kernel_ns,
                kernel_b_ns: rb.kernel_ns,
            })
        })
        .collect();
    let (ta, tb) = (a.totals.kernel_time_ns, b.totals.kernel_time_ns);
    Diff {
        schema_version: 1,
        run_a: a.run_id.clone(),
        run_b: b.run_id.clone(),
        total_kernel_time_a_ns: ta,
        total_kernel_time_b_ns: tb,
        total_delta_pct: pct(ta, tb),
        kernels,
        ranges,
        warnings: comparability(env_a, env_b, cfg_a, cfg_b),
    }
}

/// Differences in GPU, driver, tool versions and capture settings.
fn comparability(
    env_a: Option<&serde_json::Value>,
    env_b: Option<&serde_json::Value>,
    cfg_a: &serde_yaml::Value,
    cfg_b: &serde_yaml::Value,
) -> Vec<String> {
    let mut out = Vec::new();
    let env_keys: &[(&str, &[&str])] = &[
        ("GPU", &["gpus", "0", "name"]),
        ("driver", &["gpus", "0", "driver"]),
        ("nsys version", &["tools", "nsys", "version"]),
        ("ncu version", &["tools", "ncu", "version"]),
    ];
    for (label, path) in env_keys {
        let get = |e: Option<&serde_json::Value>| {
            let mut v = e?;
            for p in *path {
                v = match p.parse::<usize>() {
                    Ok(i) => v.get(i)?,
                    Err(_) => v.get(*p)?,
                };
            }
            v.as_str().map(str::to_string)
        };
        let (x, y) = (get(env_a), get(env_b));
        if x != y {
            out.push(format!(
                "{label} differs: {} vs {}",
                x.unwrap_or("?".into()),
                y.unwrap_or("?".into())
            ));
        }
    }
    for key in [
        "nsys.nvtx_capture",
        "nsys.capture_range_end",
        "nsys.trace",
        "ncu.nvtx_include",
        "ncu.set",
        "ncu.clock_control",
        "workload.argv",
        "workload.module",
        "workload.overrides",
    ] {
        let get = |c: &serde_yaml::Value| {
            key.split('.').try_fold(c, |v, k| v.get(k)).map(|v| {
                serde_yaml::to_string(v)
                    .unwrap_or_default()
                    .trim()
                    .to_string()
            })
        };
        let (x, y) = (get(cfg_a), get(cfg_b));
        if x != y {
            out.push(format!(
                "{key} differs: {} vs {}",
                x.unwrap_or("?".into()).replace('\n', " "),
                y.unwrap_or("?".into()).replace('\n', " ")
            ));
        }
    }
    out
}

/// What `--fail-above` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scope {
    /// Total kernel time of the run.
    Total,
    /// Any single kernel's total time.
    Kernels,
    /// Any NVTX range's wall time.
    Ranges,
}

/// The regressions above `threshold` %, described, for the chosen scope.
pub(crate) fn regressions(d: &Diff, scope: Scope, threshold: f64) -> Vec<String> {
    let over = |p: Option<f64>| p.is_some_and(|p| p > threshold);
    match scope {
        Scope::Total => over(d.total_delta_pct)
            .then(|| {
                format!(
                    "total kernel time +{:.1}%",
                    d.total_delta_pct.unwrap_or(0.0)
                )
            })
            .into_iter()
            .collect(),
        Scope::Kernels => d
            .kernels
            .iter()
            .filter(|k| over(k.delta_pct))
            .map(|k| {
                format!(
                    "{} +{:.1}%",
                    crate::model::display_name(&k.name),
                    k.delta_pct.unwrap_or(0.0)
                )
            })
            .collect(),
        Scope::Ranges => d
            .ranges
            .iter()
            .filter(|r| over(r.wall_delta_pct))
            .map(|r| format!("range {} +{:.1}%", r.name, r.wall_delta_pct.unwrap_or(0.0)))
            .collect(),
    }
}
