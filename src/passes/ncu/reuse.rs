//! The ncu pass and the metrics cache: which chosen kernels the cache already holds (so ncu
//! profiles only the others), `ncu/cached.json` for the reports, and storing what ncu measured.

use std::path::Path;

use super::cache::{self, Cache, Device, Key};
use super::Collect;
use crate::analysis::select::KernelFilter;
use crate::parse::ncu::CachedKernel;
use crate::parse::sqlite::NsysDb;
use crate::passes::Ctx;

/// The cache's part in one pass.
pub(crate) struct Reuse {
    pub(crate) cache: Cache,
    pub(crate) device: Device,
    pub(crate) settings: String,
    /// Chosen kernels the cache holds, with their keys.
    pub(crate) hits: Vec<(Key, CachedKernel)>,
}

/// Why the cache is not used this run (None: it is).
pub(crate) fn unusable(ctx: &Ctx, device: Option<&Device>) -> Option<String> {
    let c = &ctx.cfg.ncu.cache;
    if !c.enable {
        return Some("off (ncu.cache.enable=false or --no-cache)".into());
    }
    if ctx.cfg.workload.launcher != crate::passes::launcher::Launcher::None {
        return Some("not used under a launcher (each rank's kernels differ)".into());
    }
    if device.is_none() {
        return Some("not used: the GPU model, driver or ncu version is unknown (env.json)".into());
    }
    None
}

/// What a lookup in the cache needs: the cache, the GPU, the settings and each kernel's
/// launch configuration (from the nsys export).
pub(crate) struct Lookup {
    cache: Cache,
    device: Device,
    settings: String,
    launches: std::collections::HashMap<String, cache::Launch>,
}

impl Lookup {
    /// None (with a warning) when there is no cache folder or no nsys export to read the
    /// launches from.
    pub(crate) fn new(
        ctx: &Ctx,
        collect: &Collect,
        device: Device,
        range: Option<&str>,
    ) -> Option<Lookup> {
        let Some(dir) = cache::default_dir(ctx.cfg.ncu.cache.dir.as_deref()) else {
            tracing::warn!("ncu metrics cache not used: no cache folder (set ncu.cache.dir)");
            return None;
        };
        let launches = match first_launches(ctx, range) {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!("ncu metrics cache not used: {e}");
                return None;
            }
        };
        Some(Lookup {
            cache: Cache::new(dir, ctx.cfg.ncu.cache.max_mb),
            settings: cache::settings(&ctx.cfg.ncu, collect),
            device,
            launches,
        })
    }

    fn get(&self, mangled: &str) -> Option<(Key, CachedKernel)> {
        let key = Key {
            mangled: mangled.to_string(),
            launch: self.launches.get(mangled)?.clone(),
            device: self.device.clone(),
            settings: self.settings.clone(),
        };
        let hit = self.cache.get(&key)?;
        Some((key, hit))
    }

    /// Whether the cache holds this kernel's figures.
    pub(crate) fn holds(&self, mangled: &str) -> bool {
        self.get(mangled).is_some()
    }

    /// Split the chosen kernels into those the cache holds and those ncu must profile. Only
    /// a filter of mangled names can be looked up (the cache is keyed by them).
    pub(crate) fn split(
        self,
        filter: Option<KernelFilter>,
    ) -> (Option<Reuse>, Option<KernelFilter>) {
        let Some(KernelFilter::Mangled(names)) = filter else {
            return (None, filter);
        };
        let (mut hits, mut misses) = (Vec::new(), Vec::new());
        for name in names {
            match self.get(&name) {
                Some(hit) => hits.push(hit),
                None => misses.push(name),
            }
        }
        let reuse = Reuse {
            cache: self.cache,
            device: self.device,
            settings: self.settings,
            hits,
        };
        (Some(reuse), Some(KernelFilter::Mangled(misses)))
    }
}

/// Each kernel's first launch from the start of the range's first instance (the whole
/// capture when no range is known).
fn first_launches(
    ctx: &Ctx,
    range: Option<&str>,
) -> Result<std::collections::HashMap<String, cache::Launch>, crate::error::Error> {
    let db = NsysDb::open(&ctx.run.single_or_rank0_sqlite())?;
    let since = match range {
        Some(r) => db
            .ranges()?
            .iter()
            .filter(|x| crate::analysis::nvtx::base_name(&x.name) == r)
            .map(|x| x.start)
            .min()
            .unwrap_or(0),
        None => 0,
    };
    db.first_launches(since)
}

/// Write `ncu/cached.json` (the hits, for the reports) and mark them used.
pub(crate) fn record_hits(ctx: &Ctx, reuse: &Reuse) -> Result<(), String> {
    for (key, _) in &reuse.hits {
        reuse.cache.touch(key);
    }
    let kernels: Vec<&CachedKernel> = reuse.hits.iter().map(|(_, c)| c).collect();
    let path = ctx.run.ncu("cached.json");
    let text = serde_json::to_vec_pretty(&kernels).map_err(|e| e.to_string())?;
    crate::rundir::status::write_atomic(&path, &text)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Store every kernel of this run's ncu report; returns how many were stored.
pub(crate) fn store(ctx: &Ctx, reuse: &Reuse, raw: &Path, mangled: &Path) -> usize {
    let report = crate::parse::ncu::read_raw(raw).and_then(|mut r| {
        crate::parse::ncu::attach_mangled(&mut r, mangled)?;
        Ok(r)
    });
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!("ncu metrics cache: nothing stored ({e})");
            return 0;
        }
    };
    let now = crate::rundir::status::now();
    let mut stored = 0;
    let mut failed = Vec::new();
    for k in &report.kernels {
        let Some(key) = Cache::key_for(k, &report.units, &reuse.device, &reuse.settings) else {
            continue;
        };
        let entry = CachedKernel {
            units: cache::units_of(&k.metrics, &report.units),
            kernel: k.clone(),
            measured_by: ctx.run.id(),
            measured_at: now.clone(),
        };
        // One entry that cannot be written (a folder in its place) costs that entry only.
        match reuse.cache.put(key, entry) {
            Ok(()) => stored += 1,
            Err(e) => failed.push(e.to_string()),
        }
    }
    if let Some(first) = failed.first() {
        tracing::warn!(
            "ncu metrics cache: {} of {} entries not stored in {} (first: {first})",
            failed.len(),
            failed.len() + stored,
            reuse.cache.dir.display()
        );
    }
    reuse.cache.prune();
    stored
}
