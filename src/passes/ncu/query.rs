//! `ncu --query-metrics`: the metric names this GPU has, asked once per GPU model, driver and
//! ncu version and then kept in the metrics cache (`query/<sha256 of the device>.json`).
//!
//! The answer decides the ncu pass's metric list (a name the GPU lacks stops ncu) and checks
//! the user's `ncu.metrics`. Asking costs about 3 s on an H100 and cannot run beside a nsys
//! pass that samples the GPU's counters (ncu then answers without its list: it is asked once
//! `nsys profile` has ended, beside the export), so a re-run whose kernels are all cached would
//! otherwise wait on it for nothing.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::cache::Device;
use crate::error::Error;

/// One device's answer as kept in the cache.
#[derive(Debug, Serialize, Deserialize)]
struct Kept {
    device: Device,
    /// Every metric base name ncu listed, sorted.
    names: Vec<String>,
}

/// Where the answer for `device` is kept under the cache folder `dir`.
pub(crate) fn kept_path(dir: &Path, device: &Device) -> PathBuf {
    let text = serde_json::to_string(device).unwrap_or_default();
    let hex: String = Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    dir.join("query").join(format!("{hex}.json"))
}

/// The names kept for `device`: None when absent, unreadable, for another device, or empty
/// (an empty list was never a real answer).
pub(crate) fn kept(dir: &Path, device: &Device) -> Option<Vec<String>> {
    let path = kept_path(dir, device);
    let text = crate::files::read_capped(&path, 16 << 20).ok()?;
    let mut k: Kept = serde_json::from_str(&text).ok()?;
    // decide() searches the list: a file edited by hand may not be in order.
    k.names.sort();
    k.names.dedup();
    (k.device == *device && !k.names.is_empty()).then_some(k.names)
}

/// Keep `names` for `device` (a temp file renamed into place: concurrent runs never mix).
pub(crate) fn keep(dir: &Path, device: &Device, names: &[String]) -> std::io::Result<()> {
    let path = kept_path(dir, device);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let kept = Kept {
        device: device.clone(),
        names: names.to_vec(),
    };
    let text = serde_json::to_vec(&kept).map_err(std::io::Error::other)?;
    crate::rundir::status::write_atomic(&path, &text)
}

/// The metric base names in `--query-metrics` output (the suffix mode lists `base.suffix`).
pub(crate) fn base_names(query_output: &str) -> Vec<String> {
    let mut names: Vec<String> = query_output
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(|n| n.split('.').next().unwrap_or(n))
        .filter(|n| {
            // Metric names are identifiers: the header, rules and banner lines are not.
            n.contains("__") && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        })
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Ask ncu. None (with a warning) when the query fails or answers without its list.
pub(crate) fn ask(ncu: &Path) -> Option<Vec<String>> {
    let out = crate::passes::process::probe(
        ncu,
        &["--query-metrics"],
        crate::passes::process::probe_limit(),
    );
    match out {
        Some(text) if text.contains("Metric Name") => Some(base_names(&text)),
        Some(other) => {
            let first = other.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            tracing::warn!(
                "unexpected `ncu --query-metrics` output ({}); metric names are not checked and the ncu pass asks for the roofline set instead of the reports' metric list",
                crate::term::visible(first.trim())
            );
            None
        }
        None => {
            tracing::warn!(
                "could not list ncu metrics; metric names are not checked before the run"
            );
            None
        }
    }
}

/// What the answer means for this run: the reports' metrics this GPU knows, or a config error
/// naming the user's `ncu.metrics` it does not know. No answer: nothing is known (None).
pub(crate) fn decide(
    names: Option<&[String]>,
    user_metrics: &[String],
) -> Result<Option<Vec<String>>, Error> {
    let Some(names) = names else {
        return Ok(None);
    };
    let known = |m: &str| {
        let base = m.split('.').next().unwrap_or(m);
        names.binary_search_by(|n| n.as_str().cmp(base)).is_ok()
    };
    let unknown: Vec<&str> = user_metrics
        .iter()
        .map(String::as_str)
        .filter(|m| !known(m))
        .collect();
    if !unknown.is_empty() {
        return Err(Error::config(format!(
            "ncu.metrics: not known to ncu on this GPU: {} (see `ncu --query-metrics`)",
            crate::text::listed(&unknown, ", ")
        )));
    }
    Ok(Some(
        crate::parse::ncu::REPORT_METRICS
            .iter()
            .filter(|m| known(m))
            .map(|m| m.to_string())
            .collect(),
    ))
}

/// Where this run's answer comes from: the cache folder and device it is kept under (when the
/// cache is on and the device known), and the ncu to ask otherwise.
pub(crate) struct Source {
    pub(crate) ncu: PathBuf,
    pub(crate) kept_in: Option<(PathBuf, Device)>,
}

impl Source {
    /// The kept answer, if any.
    pub(crate) fn cached(&self) -> Option<Vec<String>> {
        let (dir, device) = self.kept_in.as_ref()?;
        let names = kept(dir, device)?;
        tracing::info!(
            "ncu metric names for {} from the metrics cache (not queried again)",
            device.gpu
        );
        Some(names)
    }

    /// Ask ncu, and keep a real answer for the next run.
    pub(crate) fn ask_and_keep(&self) -> Option<Vec<String>> {
        let names = ask(&self.ncu)?;
        if let Some((dir, device)) = &self.kept_in {
            if let Err(e) = keep(dir, device, &names) {
                tracing::warn!(
                    "could not keep ncu's metric names in {} ({e}); the next run asks again",
                    dir.display()
                );
            }
        }
        Some(names)
    }
}

/// The check of ncu's metric names as the passes carry it: settled before any pass (the list
/// kept for this device, a dry run's full list, ncu's answer where no nsys pass comes first;
/// None: not known), under way beside the nsys pass, or to ask once `nsys profile` has ended
/// (when nsys samples the GPU's counters).
pub(crate) enum Check {
    Settled(Option<Vec<String>>),
    Beside(std::thread::JoinHandle<Result<Option<Vec<String>>, Error>>),
    After(Source, Vec<String>),
}

impl Check {
    /// The check for an nsys pass that starts now: one to ask after it waits on a thread until
    /// `nsys profile` has ended, then runs beside the pass's export and stats. The sender goes
    /// to the pass, which tells it (or drops it, ending otherwise: asked all the same).
    pub(crate) fn once_profiled(self) -> (Check, Option<std::sync::mpsc::Sender<()>>) {
        let Check::After(source, metrics) = self else {
            return (self, None);
        };
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let check = Check::Beside(std::thread::spawn(move || {
            let _ = rx.recv();
            decide(source.ask_and_keep().as_deref(), &metrics)
        }));
        (check, Some(tx))
    }

    /// The reports' metrics this GPU knows, or the error that refuses the ncu pass.
    pub(crate) fn answer(self) -> Result<Option<Vec<String>>, Error> {
        match self {
            Check::Settled(known) => Ok(known),
            Check::Beside(h) => h.join().unwrap_or(Ok(None)),
            Check::After(source, metrics) => decide(source.ask_and_keep().as_deref(), &metrics),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device() -> Device {
        super::super::cache::test_device()
    }

    #[test]
    fn base_names_keep_metric_identifiers_only() {
        let out = "Device NVIDIA H100\n------\nMetric Name  Metric Type  Metric Unit  Metric Description\n\
                   dram__bytes_read  Counter  byte  # of bytes\nsm__cycles_active.avg  Counter cycle x\n\
                   gpu__time_duration Counter nsecond y\ndram__bytes_read Counter byte dup\n";
        assert_eq!(
            base_names(out),
            [
                "dram__bytes_read",
                "gpu__time_duration",
                "sm__cycles_active"
            ]
        );
    }

    #[test]
    fn a_kept_answer_is_served_for_its_own_device_only() {
        let dir = tempfile::tempdir().unwrap();
        let names = vec!["dram__bytes_read".to_string(), "gpu__time_duration".into()];
        assert!(kept(dir.path(), &device()).is_none());
        keep(dir.path(), &device(), &names).unwrap();
        assert_eq!(kept(dir.path(), &device()), Some(names.clone()));
        let other = Device {
            driver: "575.0".into(),
            ..device()
        };
        assert!(kept(dir.path(), &other).is_none());
        // A file under the device's name that holds another device is not its answer.
        std::fs::copy(
            kept_path(dir.path(), &device()),
            kept_path(dir.path(), &other),
        )
        .unwrap();
        assert!(kept(dir.path(), &other).is_none());
    }

    #[test]
    fn a_broken_kept_file_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let p = kept_path(dir.path(), &device());
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, b"{not json").unwrap();
        assert!(kept(dir.path(), &device()).is_none());
    }

    #[test]
    fn decide_names_the_user_metrics_the_gpu_lacks() {
        let names = vec![
            "dram__bytes_read".to_string(),
            "gpu__time_duration".into(),
            "sm__cycles_active".into(),
        ];
        let e = decide(Some(&names), &["sm__nope.sum".into()]).unwrap_err();
        assert!(e.to_string().contains("sm__nope.sum"), "{e}");
        let k = decide(Some(&names), &["sm__cycles_active.avg".into()])
            .unwrap()
            .unwrap();
        assert!(k.iter().all(|m| {
            let base = m.split('.').next().unwrap();
            names.iter().any(|n| n == base)
        }));
        assert!(k.iter().any(|m| m.starts_with("gpu__time_duration")));
        assert_eq!(decide(None, &["x__y".into()]).unwrap(), None);
    }
}
