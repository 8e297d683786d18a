//! The persistent ncu metrics cache: each profiled kernel's figures, kept across runs so that a
//! re-run profiles only the kernels it lacks.
//!
//! An entry is one JSON file, `entries/<sha256 of its key>.json`, holding the key itself (a
//! hash match is checked against it), the kernel's figures with their units, and the run that
//! measured them. The key is everything that changes the figures: the mangled name and launch
//! configuration (grid, block, dynamic shared memory) of the launch ncu profiles, the GPU model,
//! driver and ncu version, and the ncu settings (section set, metrics, clock control, launch
//! skip, launches per kernel, extra arguments). So figures are never served across GPU models,
//! drivers or ncu versions: those are different keys.
//!
//! Safe under concurrent runs: entries are written to a temporary file and renamed into place
//! (a reader sees a whole entry or none), and an entry removed meanwhile is a miss. Bounded: after
//! each store, the least recently used entries (file modification time, refreshed on every hit)
//! are removed until the cache is under its size cap.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::parse::ncu::CachedKernel;

/// What a GPU and its tools are, for the key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Device {
    pub(crate) gpu: String,
    pub(crate) driver: String,
    pub(crate) ncu: String,
}

/// The H100 of the GPU machine, for tests.
#[cfg(test)]
pub(crate) fn test_device() -> Device {
    Device {
        gpu: "NVIDIA H100 80GB HBM3".into(),
        driver: "580.159.04".into(),
        ncu: "2025.3.1.0".into(),
    }
}

pub(crate) use crate::parse::sqlite::LaunchConfig as Launch;

/// Everything that changes one kernel's figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Key {
    pub(crate) mangled: String,
    pub(crate) launch: Launch,
    pub(crate) device: Device,
    /// The ncu settings, one string (see [`settings`]).
    pub(crate) settings: String,
}

impl Key {
    fn file_name(&self) -> String {
        let text = serde_json::to_string(self).unwrap_or_default();
        let digest = Sha256::digest(text.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("{hex}.json")
    }
}

/// The ncu settings that change a kernel's figures, as one string for the key; secrets in the
/// extra arguments are cut before it is kept in every entry (the same on store and lookup).
pub(crate) fn settings(cfg: &crate::config::Ncu, collect: &super::Collect) -> String {
    let text = format!(
        "set={};metrics={};clock={};skip={};per_kernel={};extra={}",
        collect.set.as_deref().unwrap_or("-"),
        collect.metrics.join(","),
        cfg.clock_control.map(|c| c.as_str()).unwrap_or("base"),
        cfg.launch_skip,
        cfg.instances_per_kernel,
        cfg.extra_args.join(" "),
    );
    crate::secrets::scrub(&text)
}

pub(crate) use crate::analysis::shapes::dims;

#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    key: Key,
    #[serde(flatten)]
    kernel: CachedKernel,
}

/// `<dir>/<folder>/<the first 16 bytes of the SHA-256 of identity, in hex>.<ext>`: where a
/// cache file named by what it is about lives (a workload's cost model, its last run, its
/// sampled figures, nsys's answer on a machine's GPUs).
pub(crate) fn keyed(dir: &Path, folder: &str, identity: &str, ext: &str) -> PathBuf {
    let digest = Sha256::digest(identity.as_bytes());
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    dir.join(folder).join(format!("{hex}.{ext}"))
}

/// The cache directory: `ncu.cache.dir`, else `$XDG_CACHE_HOME/stage2/ncu`, else
/// `~/.cache/stage2/ncu`. None when none of them can be named.
pub(crate) fn default_dir(configured: Option<&str>) -> Option<PathBuf> {
    // An empty setting names no folder (it would be the current directory).
    if let Some(d) = configured.filter(|d| !d.trim().is_empty()) {
        return Some(PathBuf::from(d));
    }
    let xdg = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let base = xdg.or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("stage2").join("ncu"))
}

pub(crate) struct Cache {
    pub(crate) dir: PathBuf,
    max_bytes: u64,
}

impl Cache {
    pub(crate) fn new(dir: PathBuf, max_mb: u64) -> Cache {
        Cache {
            dir,
            max_bytes: max_mb.saturating_mul(1 << 20),
        }
    }

    fn entries(&self) -> PathBuf {
        self.dir.join("entries")
    }

    /// The figures stored under `key`; a missing, unreadable or mismatched entry is a miss.
    pub(crate) fn get(&self, key: &Key) -> Option<CachedKernel> {
        let path = self.entries().join(key.file_name());
        let bytes = crate::files::read_capped(&path, 16 << 20).ok()?;
        let entry: Entry = match serde_json::from_str(&bytes) {
            Ok(e) => e,
            Err(e) => {
                tracing::debug!("ncu cache: {} unreadable ({e}); a miss", path.display());
                return None;
            }
        };
        // An entry whose figures no ncu could have written (negative, infinite) is a miss.
        if let Err(why) = crate::parse::ncu::check_values([&entry.kernel.kernel]) {
            tracing::debug!("ncu cache: {}: {why}; a miss", path.display());
            return None;
        }
        (entry.key == *key).then_some(entry.kernel)
    }

    /// Mark an entry used now, so the size cap removes others first.
    pub(crate) fn touch(&self, key: &Key) {
        let path = self.entries().join(key.file_name());
        if let Ok(f) = std::fs::File::options().append(true).open(&path) {
            let _ = f.set_modified(SystemTime::now());
        }
    }

    /// Store one kernel's figures; then keep the cache under its cap.
    pub(crate) fn put(&self, key: Key, kernel: CachedKernel) -> std::io::Result<()> {
        let dir = self.entries();
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(key.file_name());
        let text = serde_json::to_vec(&Entry { key, kernel }).map_err(std::io::Error::other)?;
        // A temp file of its own, renamed into place: concurrent writers never mix.
        crate::rundir::status::write_atomic(&path, &text)
    }

    /// Remove the least recently used entries until the cache holds at most its cap. Only
    /// files named as stage2 names entries (64 hex digits, `.json`) are ever removed, and
    /// never through a linked `entries/`: a user's own files there are not the cache's.
    pub(crate) fn prune(&self) {
        let dir = self.entries();
        if std::fs::symlink_metadata(&dir).is_ok_and(|m| !m.is_dir()) {
            tracing::warn!(
                "ncu metrics cache: {} is not a plain folder; nothing pruned",
                dir.display()
            );
            return;
        }
        let mut files: Vec<(SystemTime, u64, PathBuf)> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let m = e.metadata().ok()?;
                let ours = is_entry_name(&e.file_name().to_string_lossy());
                if !(m.is_file() && ours) || e.file_type().ok()?.is_symlink() {
                    return None;
                }
                Some((m.modified().ok()?, m.len(), e.path()))
            })
            .collect();
        let mut total: u64 = files.iter().map(|f| f.1).sum();
        files.sort();
        for (_, len, path) in files {
            if total <= self.max_bytes {
                break;
            }
            // Another run may have removed it first: that is the same outcome.
            let _ = std::fs::remove_file(&path);
            total = total.saturating_sub(len);
        }
    }
}

/// An entry's file name as [`Key::file_name`] makes it: 64 hex digits and `.json`.
fn is_entry_name(name: &str) -> bool {
    name.strip_suffix(".json")
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Units of the metrics a kernel has, from a report's unit row.
pub(crate) fn units_of(
    metrics: &BTreeMap<String, f64>,
    units: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    metrics
        .keys()
        .filter_map(|k| Some((k.clone(), units.get(k)?.clone())))
        .filter(|(_, u)| !u.is_empty())
        .collect()
}

impl Cache {
    /// The figures a report's kernel can be stored as, with its key; None when the report
    /// lacks what the key needs (a mangled name, launch dimensions, dynamic shared memory).
    pub(crate) fn key_for(
        kernel: &crate::parse::ncu::NcuKernel,
        units: &BTreeMap<String, String>,
        device: &Device,
        settings: &str,
    ) -> Option<Key> {
        let dsmem = kernel.metrics.get("launch__shared_mem_per_block_dynamic")?;
        let scale = units
            .get("launch__shared_mem_per_block_dynamic")
            .map(|u| crate::analysis::roofline::unit_scale(u))
            .unwrap_or(1.0);
        Some(Key {
            mangled: kernel.mangled.clone()?,
            launch: Launch {
                grid: dims(kernel.grid.as_deref()?),
                block: dims(kernel.block.as_deref()?),
                dynamic_smem_bytes: (dsmem * scale).round() as u64,
            },
            device: device.clone(),
            settings: settings.to_string(),
        })
    }
}

/// Path helper for tests and the report: where an entry of `key` lives.
#[cfg(test)]
pub(crate) fn entry_path(cache: &Cache, key: &Key) -> PathBuf {
    cache.entries().join(key.file_name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::ncu::NcuKernel;

    fn key(gpu: &str, name: &str) -> Key {
        Key {
            mangled: name.into(),
            launch: Launch {
                grid: "(4,1,1)".into(),
                block: "(128,1,1)".into(),
                dynamic_smem_bytes: 0,
            },
            device: Device {
                gpu: gpu.into(),
                driver: "580.159.04".into(),
                ncu: "2025.3.1.0".into(),
            },
            settings: "set=-".into(),
        }
    }

    fn entry(name: &str) -> CachedKernel {
        CachedKernel {
            kernel: NcuKernel {
                name: name.into(),
                mangled: Some(name.into()),
                first_id: None,
                nvtx_range: None,
                nvtx_stack: Vec::new(),
                instances: 1,
                time_ns: Some(1000.0),
                block: Some("(128, 1, 1)".into()),
                grid: Some("(4, 1, 1)".into()),
                metrics: [("gpu__time_duration.sum".to_string(), 1.0)].into(),
                ..Default::default()
            },
            units: BTreeMap::new(),
            measured_by: "r1".into(),
            measured_at: "now".into(),
            nsys_mean_ns: None,
        }
    }

    #[test]
    fn figures_are_served_only_for_the_same_key() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::new(tmp.path().to_path_buf(), 1);
        cache
            .put(key("NVIDIA H100 80GB HBM3", "k"), entry("k"))
            .unwrap();
        assert_eq!(
            cache.get(&key("NVIDIA H100 80GB HBM3", "k")),
            Some(entry("k"))
        );
        assert_eq!(cache.get(&key("NVIDIA H200", "k")), None, "another GPU");
        assert_eq!(cache.get(&key("NVIDIA H100 80GB HBM3", "j")), None);
        // A broken entry is a miss, not an error.
        let k = key("NVIDIA H100 80GB HBM3", "k");
        std::fs::write(entry_path(&cache, &k), "{").unwrap();
        assert_eq!(cache.get(&k), None);
    }

    #[test]
    fn the_least_recently_used_entries_go_first() {
        let tmp = tempfile::tempdir().unwrap();
        let mut cache = Cache::new(tmp.path().to_path_buf(), 1);
        let names = ["a", "b", "c"];
        for (i, n) in names.iter().enumerate() {
            cache.put(key("g", n), entry(n)).unwrap();
            let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000 + i as u64);
            let f = std::fs::File::options()
                .append(true)
                .open(entry_path(&cache, &key("g", n)))
                .unwrap();
            f.set_modified(t).unwrap();
        }
        cache.touch(&key("g", "a"));
        let one = std::fs::metadata(entry_path(&cache, &key("g", "a")))
            .unwrap()
            .len();
        cache.max_bytes = 2 * one + 10;
        cache.prune();
        assert!(cache.get(&key("g", "a")).is_some(), "used last");
        assert!(cache.get(&key("g", "b")).is_none(), "oldest");
        assert!(cache.get(&key("g", "c")).is_some());
        assert_eq!(dims("(128, 1, 1)"), "(128,1,1)");
    }
}
