//! The GPU-metrics set the nsys pass samples when `nsys.gpu_metrics.set` is null: nsys's own
//! set for the GPU's chip (the one nsys would choose), cut to the five metrics the reports read,
//! written into the run as `nsys/gpu_metrics.config` and given as `--gpu-metrics-set=file:...`.
//! nsys writes one GPU_METRICS row per sample and metric, so the rows, the report's finalizing
//! and its export shrink with the metrics: measured on an H100 at 50 kHz (docs/measured.md,
//! 2026-11-26), the CUDA-graph decode's export went from 361 MB, 11.3M rows and
//! 9.9 s to 79 MB, 2.5M rows and 2.3 s, the eager decode's from 1.8 s to 0.7 s.
//!
//! The set also asks for the raw DRAM byte counters (`dram__bytes_read.sum`,
//! `dram__bytes_write.sum`: each window's bytes), which make the bytes per step a count rather
//! than shares of peak (analysis::sampled::bytes); nsys leaves out a counter the GPU cannot
//! sample without a word, so the run records every metric asked for and the reports check the
//! export for each.
//!
//! Anything unexpected (no set folder beside nsys, no chip, GPUs of several chips, a file that
//! does not parse) leaves nsys's default set, with a line saying why.

use std::path::{Path, PathBuf};

use serde_yaml::Value;

use crate::files::{read_capped, CONFIG_CAP};
use crate::parse::sqlite::{export_name, METRICS};

/// The run's copy of the set, and its alias: nsys takes a set file whose alias is its name.
pub(crate) const FILE: &str = "nsys/gpu_metrics.config";
const ALIAS: &str = "gpu_metrics";

/// The set made for this run: its file and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Derived {
    pub(crate) path: PathBuf,
    /// "gh100 (GH100), 5 of 22 metrics, and the DRAM byte counters".
    pub(crate) from: String,
    /// Every metric the file asks for, as the export names them.
    pub(crate) asked: Vec<String>,
}

/// The raw DRAM byte counters added to the set: (the metric's name, its counter). Each
/// window's `.sum` is its bytes; the export names them `<name> [Bytes]`
/// (`parse::sqlite::COUNTERS`).
const COUNTERS: [(&str, &str); 2] = [
    ("DRAM Read Bytes", "dram__bytes_read"),
    ("DRAM Write Bytes", "dram__bytes_write"),
];
const COUNTER_SUB_METRIC: &str = "Bytes";

/// The chips of the GPUs `nsys profile --gpu-metrics-devices=help` lists, e.g.
/// "\t0: Hopper GH100 | NVIDIA H100 80GB HBM3 PCI[0000:00:06.0]" gives GH100.
pub(crate) fn chips(help: &str) -> Vec<String> {
    help.lines()
        .filter_map(|l| {
            let (id, rest) = l.trim().split_once(':')?;
            id.parse::<u32>().ok()?;
            let arch_chip = rest.split('|').next()?.trim();
            arch_chip.split_whitespace().last().map(str::to_string)
        })
        .collect()
}

/// Where nsys's answer of which GPUs it can sample is kept: by nsys (its path) and the GPUs
/// this machine and the workload see (None: the cache is off).
pub(crate) fn answer_cache(
    cfg: &crate::config::Config,
    nsys: &Path,
    gpus: &[String],
) -> Option<PathBuf> {
    // Without the GPUs' names the answer could be another machine's: asked every time.
    if !cfg.ncu.cache.enable || gpus.is_empty() {
        return None;
    }
    let dir = crate::passes::ncu::cache::default_dir(cfg.ncu.cache.dir.as_deref())?;
    let real = std::fs::canonicalize(nsys).unwrap_or_else(|_| nsys.to_path_buf());
    // `workload.device` first: it is what the workload's CUDA_VISIBLE_DEVICES will be.
    let visible = cfg
        .visible_devices()
        .or_else(|| std::env::var("CUDA_VISIBLE_DEVICES").ok())
        .unwrap_or_default();
    let key = format!("{}|{}|{visible}", real.display(), gpus.join("|"));
    Some(crate::passes::ncu::cache::keyed(
        &dir,
        "nsys-devices",
        &key,
        "txt",
    ))
}

/// The folder of nsys's metric sets, beside its binary (Nsight Systems' `target-linux-x64`, or
/// the copy bundled with Nsight Compute).
pub(crate) fn folder(nsys: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(nsys).ok()?;
    let dir = real.parent()?;
    [
        dir.join("GpuMetrics"),
        dir.join("../target-linux-x64/GpuMetrics"),
    ]
    .into_iter()
    .find(|d| d.join("index.config").is_file())
}

/// A set cut for a run: its YAML text, its words, and every metric it asks for as the export
/// names them.
#[derive(Debug)]
pub(crate) struct Cut {
    pub(crate) text: String,
    pub(crate) from: String,
    pub(crate) asked: Vec<String>,
}

/// nsys's general set for `chip` (the first in its index that names the chip; graphics and
/// triage variants, whose aliases carry a suffix, are not general), cut to the metrics read,
/// with the DRAM byte counters added.
pub(crate) fn reduced(folder: &Path, chip: &str) -> Result<Cut, String> {
    let index = read_capped(&folder.join("index.config"), CONFIG_CAP)
        .map_err(|e| format!("{}: {e}", folder.join("index.config").display()))?;
    for alias in index.lines().map(str::trim).filter(|a| !a.is_empty()) {
        if alias.contains('-') {
            continue;
        }
        let path = folder.join(format!("{alias}.config"));
        let Ok(text) = read_capped(&path, CONFIG_CAP) else {
            continue;
        };
        let doc: Value =
            serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let Some(set) = one_set(&doc) else { continue };
        if !names_chip(set, chip) {
            continue;
        }
        return cut(doc, alias, chip);
    }
    Err(format!(
        "no metric set in {} names the chip {chip}",
        folder.display()
    ))
}

fn one_set(doc: &Value) -> Option<&Value> {
    match doc.get("metricSets")?.as_sequence()?.as_slice() {
        [one] => Some(one),
        _ => None,
    }
}

fn names_chip(set: &Value, chip: &str) -> bool {
    let chips = set.get("chips").and_then(Value::as_sequence);
    chips.is_some_and(|c| c.iter().any(|x| x.as_str() == Some(chip)))
}

/// The base names of the metrics read ("DRAM Read Bandwidth" of "DRAM Read Bandwidth [Throughput %]").
fn read_names() -> Vec<&'static str> {
    METRICS
        .iter()
        .map(|m| m.split(" [").next().unwrap_or(m))
        .collect()
}

/// One of the DRAM byte counters as a metric of a set, in the shape of nsys's own.
fn counter((name, id): (&str, &str)) -> Result<Value, String> {
    let text = format!(
        "name: {name}\nid: {id}\ndescription: Bytes of DRAM traffic in the sample window (added by stage2)\ncolor: '#FFA5A5'\nsubMetrics:\n- name: {COUNTER_SUB_METRIC}\n  suffix: .sum\n"
    );
    serde_yaml::from_str(&text).map_err(|e| e.to_string())
}

/// Every metric of a set's `metrics` with each of its sub-metrics, as the export names them.
fn export_names(metrics: &[Value]) -> Vec<String> {
    let name = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    metrics
        .iter()
        .flat_map(|m| {
            let subs = m.get("subMetrics").and_then(Value::as_sequence);
            let metric = name(m, "name");
            subs.into_iter()
                .flatten()
                .filter_map(move |sub| Some(export_name(metric.as_deref()?, &name(sub, "name")?)))
        })
        .collect()
}

/// `doc` with only the metrics read, in its metrics and its display rows, and the DRAM byte
/// counters.
fn cut(mut doc: Value, alias: &str, chip: &str) -> Result<Cut, String> {
    let keep = read_names();
    let named = |v: &Value| {
        v.get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| keep.contains(&n))
    };
    let kept_str = |v: &Value| v.as_str().is_some_and(|n| keep.contains(&n));
    let set = doc
        .get_mut("metricSets")
        .and_then(|s| s.as_sequence_mut())
        .and_then(|s| s.first_mut())
        .ok_or("no metric set")?;
    let metrics = set
        .get_mut("metrics")
        .and_then(Value::as_sequence_mut)
        .ok_or("the set lists no metrics")?;
    let all = metrics.len();
    metrics.retain(named);
    let kept = metrics.len();
    if kept == 0 {
        return Err(format!("the {alias} set has none of the metrics read"));
    }
    for c in COUNTERS {
        metrics.push(counter(c)?);
    }
    let asked = export_names(metrics);
    if let Some(rows) = set.get_mut("displayRows").and_then(Value::as_sequence_mut) {
        for r in rows.iter_mut() {
            if let Some(m) = r.get_mut("metrics").and_then(Value::as_sequence_mut) {
                m.retain(kept_str);
            }
        }
        rows.retain(|r| {
            r.get("metrics")
                .and_then(Value::as_sequence)
                .is_some_and(|m| !m.is_empty())
        });
        let names: Vec<Value> = COUNTERS.iter().map(|c| c.0.into()).collect();
        let row = serde_yaml::Mapping::from_iter([
            ("name".into(), "DRAM Bytes".into()),
            ("type".into(), "stacked".into()),
            ("metrics".into(), Value::Sequence(names)),
        ]);
        rows.push(Value::Mapping(row));
    }
    if let Some(m) = set.as_mapping_mut() {
        // nsys refuses a set file whose alias is not its file name ("Metric set alias doesn't
        // match the config file name").
        m.insert("alias".into(), ALIAS.into());
        m.insert(
            "name".into(),
            format!("{alias} cut to the metrics stage2 reads").into(),
        );
    }
    let text = serde_yaml::to_string(&doc).map_err(|e| e.to_string())?;
    let from = format!("{alias} ({chip}), {kept} of {all} metrics, and the DRAM byte counters");
    Ok(Cut { text, from, asked })
}

/// The set for this run, written into `run`: from nsys's answer of which GPUs it can sample
/// (`help`) and its set folder. Err says why nsys's default set is used instead.
pub(crate) fn derive(nsys: &Path, help: &str, run: &Path) -> Result<Derived, String> {
    let mut chips = chips(help);
    chips.sort();
    chips.dedup();
    let chip = match chips.as_slice() {
        [one] => one.clone(),
        [] => return Err("nsys named no GPU it can sample".into()),
        many => {
            let chips = crate::text::listed(many, ", ");
            return Err(format!("GPUs of several chips ({chips})"));
        }
    };
    let folder = folder(nsys).ok_or("no GpuMetrics folder beside nsys")?;
    let Cut { text, from, asked } = reduced(&folder, &chip)?;
    let path = run.join(FILE);
    crate::rundir::status::write_atomic(&path, text.as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Derived { path, from, asked })
}

/// The set for `run`: asks nsys which GPUs it can sample (0.8 s on the H100 machine; the
/// answer is kept in `cache` where given, by nsys and the machine's GPUs), then [`derive`].
pub(crate) fn ask(
    nsys: &Path,
    run: &Path,
    cache: Option<&Path>,
    timeout: std::time::Duration,
) -> Result<Derived, String> {
    let help = match cache.and_then(|c| read_capped(c, CONFIG_CAP).ok()) {
        Some(help) if !chips(&help).is_empty() => help,
        _ => {
            let args = ["profile", "--gpu-metrics-devices=help"];
            let help = crate::passes::process::probe_or_why(nsys, &args, timeout)?;
            if let Some(c) = cache {
                // A failure to keep it only costs the next run the question.
                let _ = c.parent().map(std::fs::create_dir_all);
                let _ = crate::rundir::status::write_atomic(c, help.as_bytes());
            }
            help
        }
    };
    derive(nsys, &help, run)
}

/// What a dry run writes for the set a real run makes when it starts (it asks nsys, which a
/// dry run does not run): the same file, not yet written; [`DRY_NOTE`] says so in cmd.txt.
pub(crate) fn for_dry_run(run: &Path) -> Derived {
    Derived {
        path: run.join(FILE),
        from: "not made: a dry run (a real run makes it when it starts)".to_string(),
        // Which metrics the set holds is known once nsys has named the chip's set.
        asked: Vec::new(),
    }
}

/// The note a dry run's nsys cmd.txt ends with while the set file does not exist yet.
pub(crate) const DRY_NOTE: &str = "a real run first writes nsys/gpu_metrics.config, nsys's own GPU-metrics set for this GPU cut to the metrics the reports read; where nsys lists no set for it, the run keeps nsys's default set and drops --gpu-metrics-set";

/// The set for this run when nsys's default would be used (`nsys.gpu_metrics.set` null), by
/// [`ask`]. None, with a line why, keeps nsys's default.
pub(crate) fn for_run(nsys: &Path, run: &Path, cache: Option<&Path>) -> Option<Derived> {
    match ask(nsys, run, cache, std::time::Duration::from_secs(30)) {
        Ok(d) => {
            tracing::info!(
                "nsys pass: samples {} (nsys's set cut to the metrics the reports read: a smaller export)",
                d.from
            );
            Some(d)
        }
        Err(why) => {
            tracing::info!("nsys pass: samples nsys's default GPU-metrics set ({why})");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    /// The GPUs nsys may sample depend on what the workload sees: `workload.device` keys the
    /// answer as the workload's own CUDA_VISIBLE_DEVICES does.
    #[test]
    fn the_answer_is_kept_per_visible_gpus() {
        let dir = tempfile::tempdir().unwrap();
        let d = format!("ncu.cache.dir={}", dir.path().display());
        let gpus = ["NVIDIA H100 80GB HBM3".to_string()];
        let at = |o: &[&str]| {
            let cfg = crate::testutil::config(&[&[d.as_str()][..], o].concat());
            super::answer_cache(&cfg, Path::new("/opt/nsys"), &gpus).unwrap()
        };
        let none = at(&[]);
        assert_ne!(none, at(&["workload.device=1"]));
        assert_eq!(
            at(&["workload.device=1"]),
            at(&["+workload.env.CUDA_VISIBLE_DEVICES=1"])
        );
    }

    use super::*;

    /// nsys 2025.3.1's own set folder (the H100 machine's, tests/fakes/GpuMetrics: its index and
    /// the gh100 and ga100 sets).
    fn sets() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fakes/GpuMetrics")
    }

    #[test]
    fn the_chips_are_read_from_nsyss_list_of_devices() {
        let help = std::fs::read_to_string(crate::testutil::data(
            "logs/nsys_gpu_metrics_devices_help.log",
        ))
        .unwrap();
        assert_eq!(chips(&help), ["GH100"]);
        let two = "\t0: Hopper GH100 | NVIDIA H100 PCI[0]\n\t1: Ampere GA100 | NVIDIA A100 PCI[1]\n\tall: Select all supported GPUs\n";
        assert_eq!(chips(two), ["GH100", "GA100"]);
        let run = tempfile::tempdir().unwrap();
        let err = derive(Path::new("/no/nsys"), two, run.path()).unwrap_err();
        assert!(err.contains("several chips (GA100, GH100)"), "{err}");
        assert!(derive(Path::new("/no/nsys"), "", run.path()).is_err());
    }

    #[test]
    fn each_chips_general_set_is_cut_to_the_five_metrics_read_and_the_byte_counters() {
        for (chip, from) in [
            (
                "GH100",
                "gh100 (GH100), 5 of 24 metrics, and the DRAM byte counters",
            ),
            ("GA100", "ga100 (GA100)"),
        ] {
            let cut = reduced(&sets(), chip).unwrap();
            assert!(cut.from.starts_with(from), "{}", cut.from);
            let doc: Value = serde_yaml::from_str(&cut.text).unwrap();
            let set = one_set(&doc).expect("one set, as nsys takes");
            // Its alias is the file's name, as nsys requires.
            assert_eq!(
                Path::new(FILE).file_stem().unwrap(),
                set["alias"].as_str().unwrap()
            );
            let metrics = set["metrics"].as_sequence().unwrap();
            let names: Vec<&str> = metrics
                .iter()
                .map(|m| m["name"].as_str().unwrap())
                .collect();
            let counters: Vec<&str> = COUNTERS.iter().map(|c| c.0).collect();
            let ours = |n: &str| read_names().contains(&n) || counters.contains(&n);
            assert!(names.iter().all(|n| ours(n)), "{names:?}");
            assert!(names.contains(&"DRAM Read Bandwidth"), "{names:?}");
            assert_eq!(names[names.len() - 2..], counters[..]);
            // Every metric keeps its counter and sub-metric, so the export names it as before.
            assert!(metrics
                .iter()
                .all(|m| m["id"].is_string() && m["subMetrics"].is_sequence()));
            for row in set["displayRows"].as_sequence().unwrap() {
                let shown = row["metrics"].as_sequence().unwrap();
                assert!(!shown.is_empty());
                assert!(shown.iter().all(|m| ours(m.as_str().unwrap())));
            }
            // What the run records as asked for: the export's names, the counters' those the
            // reports look for.
            assert!(cut.asked.contains(&"GR Active [Throughput %]".to_string()));
            for c in crate::parse::sqlite::COUNTERS {
                assert!(cut.asked.contains(&c.to_string()), "{:?}", cut.asked);
            }
            assert_eq!(cut.asked.len(), names.len(), "one sub-metric each");
        }
        let err = reduced(&sets(), "GB100").unwrap_err();
        assert!(err.contains("no metric set"), "{err}");
    }
}
