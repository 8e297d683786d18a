//! Whether two runs can be compared: each complete with data, both measuring the same thing
//! (capture range, kernel basis, GPU model), and what differs that may explain a change.

use super::*;

/// Why a run cannot be one side of a comparison: it did not finish well, or has no data.
pub(crate) fn incomplete(s: &Summary) -> Option<String> {
    let bad: Vec<String> = s
        .passes
        .iter()
        .filter(|(_, p)| !matches!(p.state, PassState::Ok | PassState::Skipped))
        .map(|(name, p)| {
            let state = serde_json::to_value(p.state).unwrap_or_default();
            format!("{name} pass {}", state.as_str().unwrap_or("?"))
        })
        .collect();
    if !bad.is_empty() {
        return Some(format!(
            "the run is not complete: {}",
            crate::text::listed(&bad, ", ")
        ));
    }
    if s.kernels.is_empty() || s.totals.kernel_time_ns <= 0.0 {
        return Some("no kernel data (no nsys kernel summary or SQLite export)".into());
    }
    None
}

/// Why two complete runs measure different things: another capture range, another kernel
/// basis (one range's kernels vs the whole capture's), another GPU model.
pub(crate) fn different_basis(a: &Summary, b: &Summary) -> Vec<String> {
    let mut out = Vec::new();
    let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(none)".into());
    if a.nsys_capture != b.nsys_capture {
        out.push(format!(
            "captured range differs: {} vs {}",
            show(&a.nsys_capture),
            show(&b.nsys_capture)
        ));
    }
    let basis = |s: &Summary| {
        s.sources.get("kernels").map(|f| {
            if f.ends_with(".sqlite") {
                "the captured range's kernels (SQLite export)"
            } else {
                "every kernel in the capture (cuda_gpu_kern_sum)"
            }
        })
    };
    if basis(a) != basis(b) {
        out.push(format!(
            "kernel times measure different things: {} vs {}",
            basis(a).unwrap_or("?"),
            basis(b).unwrap_or("?")
        ));
    }
    if a.gpu.is_some() && b.gpu.is_some() && a.gpu != b.gpu {
        out.push(format!("GPU differs: {} vs {}", show(&a.gpu), show(&b.gpu)));
    }
    out
}

/// Differences that do not stop a comparison but may explain it: driver, tool versions,
/// capture and workload settings.
pub(crate) fn comparability(
    env_a: Option<&serde_json::Value>,
    env_b: Option<&serde_json::Value>,
    cfg_a: &serde_yaml::Value,
    cfg_b: &serde_yaml::Value,
) -> Vec<String> {
    let mut out = Vec::new();
    let env_keys: &[(&str, &[&str])] = &[
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
    out.extend(packages(env_a, env_b));
    for key in [
        "nsys.capture_range_end",
        "nsys.trace",
        "ncu.set",
        "ncu.clock_control",
        "workload.argv",
        "workload.module",
        "workload.overrides",
        "workload.env",
    ] {
        let get = |c: &serde_yaml::Value| key.split('.').try_fold(c, |v, k| v.get(k)).map(show);
        let (x, y) = (get(cfg_a), get(cfg_b));
        if x != y {
            out.push(format!(
                "{key} differs: {} vs {}",
                x.unwrap_or("?".into()),
                y.unwrap_or("?".into())
            ));
        }
    }
    out
}

/// Whether the two nsys passes sampled GPU metrics alike (`sampled`: each side's, None where
/// unknown; `reused`: the run whose figures a side reused instead). Sampling runs nsys's
/// sampler beside the workload, so it is a difference in how the range times were taken.
pub(crate) fn sampling(sampled: [Option<bool>; 2], reused: [Option<&str>; 2]) -> Option<String> {
    let [Some(a), Some(b)] = sampled else {
        return None;
    };
    let show = |s: bool, r: Option<&str>| match (s, r) {
        (true, _) => "sampled".to_string(),
        (false, Some(run)) => format!("not sampled (run {run}'s sampled figures reused)"),
        (false, None) => "not sampled".to_string(),
    };
    (a != b).then(|| {
        format!(
            "the nsys pass's GPU-metrics sampling differs: {} vs {}",
            show(a, reused[0]),
            show(b, reused[1])
        )
    })
}

/// The Python stacks of two runs that both recorded theirs (the packages pass): the
/// interpreter and each package whose version differs or that one side lacks.
fn packages(a: Option<&serde_json::Value>, b: Option<&serde_json::Value>) -> Vec<String> {
    let stack = |e: Option<&serde_json::Value>| e?.get("python").cloned();
    let (Some(a), Some(b)) = (stack(a), stack(b)) else {
        return Vec::new();
    };
    let version = |v: &serde_json::Value, path: &[&str]| {
        path.iter()
            .try_fold(v, |v, k| v.get(*k))
            .and_then(|v| v.as_str())
            .unwrap_or("(not installed)")
            .to_string()
    };
    let names: std::collections::BTreeSet<&String> = [&a, &b]
        .into_iter()
        .filter_map(|s| s["packages"].as_object())
        .flat_map(|m| m.keys())
        .collect();
    std::iter::once(("Python".to_string(), vec!["python"]))
        .chain(
            names
                .into_iter()
                .map(|n| (n.clone(), vec!["packages", n.as_str()])),
        )
        .filter_map(|(label, path)| {
            let (x, y) = (version(&a, &path), version(&b, &path));
            (x != y).then(|| format!("{label} differs: {x} vs {y}"))
        })
        .collect()
}

/// A config value as a person writes it: a list as a shell line, a map as `k=v` pairs.
fn show(v: &serde_yaml::Value) -> String {
    use serde_yaml::Value;
    let scalar = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => "null".into(),
        other => serde_yaml::to_string(other)
            .unwrap_or_default()
            .trim()
            .to_string(),
    };
    match v {
        Value::Sequence(items) if items.is_empty() => "[]".into(),
        Value::Sequence(items) => {
            crate::files::shell_line(&items.iter().map(scalar).collect::<Vec<_>>())
        }
        Value::Mapping(m) if m.is_empty() => "{}".into(),
        Value::Mapping(m) => m
            .iter()
            .map(|(k, v)| format!("{}={}", scalar(k), scalar(v)))
            .collect::<Vec<_>>()
            .join(", "),
        other => scalar(other),
    }
}
