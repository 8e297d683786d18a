//! The ncu pass and the metrics cache: which chosen kernels the cache already holds (so ncu
//! profiles only the others), `ncu/cached.json` for the reports, and storing what ncu measured.

use std::path::Path;

use super::cache::{self, Cache, Device, Key};
use super::Collect;
use crate::analysis::select::KernelFilter;
use crate::analysis::shapes::{Shape, Shapes};
use crate::parse::ncu::{CachedKernel, NcuKernel, NcuShape};
use crate::passes::Ctx;

/// The cache's part in one pass.
pub(crate) struct Reuse {
    pub(crate) cache: Cache,
    pub(crate) device: Device,
    pub(crate) settings: String,
    /// Chosen kernels the cache holds, each with the keys of its shapes.
    pub(crate) hits: Vec<Hit>,
    /// Entries found but not served: their kernel's nsys duration in this run differs from
    /// the one they were measured beside (`ncu.cache.duration_tolerance`).
    pub(crate) stale: usize,
    /// The chosen kernels' shapes in ncu's range, for the entries stored after the pass.
    shapes: Shapes,
}

/// One kernel served from the cache: its figures (every shape's, when several) and keys.
pub(crate) struct Hit {
    pub(crate) keys: Vec<Key>,
    pub(crate) kernel: CachedKernel,
}

/// What the cache says of one kernel.
enum Found {
    Hit(Box<Hit>),
    Miss,
    /// How many of its shapes' entries are stale.
    Stale(usize),
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
/// shapes in ncu's range (from the nsys export), with their durations.
pub(crate) struct Lookup {
    cache: Cache,
    device: Device,
    settings: String,
    shapes: Shapes,
    tolerance: f64,
}

impl Lookup {
    /// None (with a warning) when there is no cache folder.
    pub(crate) fn new(
        ctx: &Ctx,
        collect: &Collect,
        device: Device,
        shapes: Shapes,
    ) -> Option<Lookup> {
        let Some(dir) = cache::default_dir(ctx.cfg.ncu.cache.dir.as_deref()) else {
            tracing::warn!("ncu metrics cache not used: no cache folder (set ncu.cache.dir)");
            return None;
        };
        Some(Lookup {
            cache: Cache::new(dir, ctx.cfg.ncu.cache.max_mb),
            settings: cache::settings(&ctx.cfg.ncu, collect),
            device,
            shapes,
            tolerance: ctx.cfg.ncu.cache.duration_tolerance,
        })
    }

    /// The cache's entry of one shape of a kernel, with its key.
    fn entry<'s>(&self, mangled: &str, shape: &'s Shape) -> Option<(Key, CachedKernel, &'s Shape)> {
        let key = Key {
            mangled: mangled.to_string(),
            launch: shape.launch.clone(),
            device: self.device.clone(),
            settings: self.settings.clone(),
        };
        let c = self.cache.get(&key)?;
        Some((key, c, shape))
    }

    /// The kernel's entries: of every shape in the range, or, with one launch per kernel, of
    /// the shape of its first launch there or else any other of its shapes (most time first)
    /// the cache holds: ncu's first profiled launch can be of another shape than nsys's first
    /// (a kernel replayed in a CUDA graph is measured when the graph runs, not while it is
    /// captured), and either is a launch of the range. Each entry must have been measured
    /// beside an nsys duration of its shape within the tolerance of this run's.
    fn get(&self, mangled: &str, every_shape: bool) -> Found {
        let shapes = self.shapes.of(mangled);
        let found: Vec<(Key, CachedKernel, &Shape)> = match every_shape {
            true => match shapes.iter().map(|s| self.entry(mangled, s)).collect() {
                Some(all) => all,
                None => return Found::Miss,
            },
            false => {
                let first = self.shapes.first(mangled);
                match first
                    .into_iter()
                    .chain(shapes)
                    .find_map(|s| self.entry(mangled, s))
                {
                    Some(one) => vec![one],
                    None => return Found::Miss,
                }
            }
        };
        if found.is_empty() {
            return Found::Miss;
        }
        let stale = found
            .iter()
            .filter(|(_, c, s)| !agrees(c.nsys_mean_ns, s.mean_ns(), self.tolerance))
            .count();
        if stale > 0 {
            return Found::Stale(stale);
        }
        let (keys, kernels): (Vec<Key>, Vec<CachedKernel>) =
            found.into_iter().map(|(k, c, _)| (k, c)).unzip();
        Found::Hit(Box::new(Hit {
            keys,
            kernel: merged(kernels),
        }))
    }

    /// Whether the cache serves this kernel as the split would: one of its launch
    /// configurations, or every one it has in the range (`every_shape`).
    pub(crate) fn holds(&self, mangled: &str, every_shape: bool) -> bool {
        matches!(self.get(mangled, every_shape), Found::Hit(_))
    }

    /// Split the chosen kernels into those the cache holds and those ncu must profile. Only
    /// a filter of mangled names can be looked up (the cache is keyed by them).
    pub(crate) fn split(
        self,
        filter: Option<KernelFilter>,
        every_shape: bool,
    ) -> (Option<Reuse>, Option<KernelFilter>) {
        let Some(KernelFilter::Mangled(names)) = filter else {
            return (None, filter);
        };
        let (mut hits, mut misses, mut stale) = (Vec::new(), Vec::new(), 0);
        for name in names {
            match self.get(&name, every_shape) {
                Found::Hit(hit) => hits.push(*hit),
                Found::Miss => misses.push(name),
                Found::Stale(n) => {
                    stale += n;
                    misses.push(name);
                }
            }
        }
        if stale > 0 {
            tracing::info!(
                "ncu metrics cache: {stale} entries stale (this run's nsys duration of their launch configuration differs by more than {:.0}% from the one they were measured beside); measured again",
                self.tolerance * 100.0
            );
        }
        let reuse = Reuse {
            cache: self.cache,
            device: self.device,
            settings: self.settings,
            hits,
            stale,
            shapes: self.shapes,
        };
        (Some(reuse), Some(KernelFilter::Mangled(misses)))
    }
}

/// An entry measured beside nsys duration `then` may stand for a launch lasting `now` in
/// this run: within `tolerance` of it. An entry without one (an older cache) is stale.
fn agrees(then: Option<f64>, now: f64, tolerance: f64) -> bool {
    then.is_some_and(|t| t > 0.0 && (now / t - 1.0).abs() <= tolerance)
}

/// A kernel's per-shape entries as one kernel with its shapes (one entry: itself).
fn merged(mut entries: Vec<CachedKernel>) -> CachedKernel {
    if entries.len() == 1 {
        return entries.remove(0);
    }
    let mut first = entries[0].clone();
    let shapes: Vec<NcuShape> = entries
        .iter()
        .map(|e| NcuShape {
            grid: e.kernel.grid.clone(),
            block: e.kernel.block.clone(),
            instances: e.kernel.instances,
            metrics: e.kernel.metrics.clone(),
        })
        .collect();
    for e in &entries[1..] {
        for (k, u) in &e.units {
            first.units.entry(k.clone()).or_insert_with(|| u.clone());
        }
    }
    first.kernel.instances = shapes.iter().map(|s| s.instances).sum();
    first.kernel.shapes = shapes;
    first.nsys_mean_ns = None;
    first
}

/// Each shape of a report's kernel as a kernel of its own: what one cache entry holds.
fn per_shape(k: &NcuKernel) -> Vec<NcuKernel> {
    if k.shapes.is_empty() {
        return vec![k.clone()];
    }
    k.shapes
        .iter()
        .map(|s| NcuKernel {
            grid: s.grid.clone(),
            block: s.block.clone(),
            instances: s.instances,
            time_ns: None,
            metrics: s.metrics.clone(),
            shapes: Vec::new(),
            shape_cover_pct: None,
            ..k.clone()
        })
        .collect()
}

/// Write `ncu/cached.json` (the hits, for the reports) and mark them used.
pub(crate) fn record_hits(ctx: &Ctx, reuse: &Reuse) -> Result<(), String> {
    for key in reuse.hits.iter().flat_map(|h| &h.keys) {
        reuse.cache.touch(key);
    }
    let kernels: Vec<&CachedKernel> = reuse.hits.iter().map(|h| &h.kernel).collect();
    let path = ctx.run.ncu("cached.json");
    let text = serde_json::to_vec_pretty(&kernels).map_err(|e| e.to_string())?;
    crate::rundir::status::write_atomic(&path, &text)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// What one pass stored in the cache: entries (one per kernel and launch configuration), and
/// the kernels they are of.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Stored {
    pub(crate) entries: usize,
    pub(crate) kernels: usize,
}

/// Store every kernel of this run's ncu report.
pub(crate) fn store(ctx: &Ctx, reuse: &Reuse, raw: &Path, mangled: &Path) -> Stored {
    let report = crate::parse::ncu::read_raw(raw).and_then(|mut r| {
        crate::parse::ncu::attach_mangled(&mut r, mangled)?;
        Ok(r)
    });
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!("ncu metrics cache: nothing stored ({e})");
            return Stored::default();
        }
    };
    let now = crate::rundir::status::now();
    let (mut stored, mut kernels) = (0, std::collections::BTreeSet::new());
    let mut failed = Vec::new();
    for k in report.kernels.iter().flat_map(per_shape) {
        let Some(key) = Cache::key_for(&k, &report.units, &reuse.device, &reuse.settings) else {
            continue;
        };
        // The nsys duration of this shape in this run, which a later run's must agree with.
        let nsys_mean_ns = reuse
            .shapes
            .get(&key.mangled, &key.launch)
            .map(Shape::mean_ns);
        let entry = CachedKernel {
            units: cache::units_of(&k.metrics, &report.units),
            kernel: k,
            measured_by: ctx.run.id(),
            measured_at: now.clone(),
            nsys_mean_ns,
        };
        // One entry that cannot be written (a folder in its place) costs that entry only.
        let kernel = key.mangled.clone();
        match reuse.cache.put(key, entry) {
            Ok(()) => {
                stored += 1;
                kernels.insert(kernel);
            }
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
    Stored {
        entries: stored,
        kernels: kernels.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device() -> Device {
        super::super::cache::test_device()
    }

    /// An entry for kernel `k` with launch configuration `grid`, measured beside `nsys_ns`.
    fn put(cache: &Cache, grid: &str, nsys_ns: f64) {
        let key = Key {
            mangled: "k".into(),
            launch: crate::parse::sqlite::LaunchConfig {
                grid: grid.into(),
                block: "(128,1,1)".into(),
                dynamic_smem_bytes: 0,
            },
            device: device(),
            settings: "s".into(),
        };
        let kernel = CachedKernel {
            kernel: NcuKernel {
                name: "k".into(),
                mangled: Some("k".into()),
                grid: Some(grid.into()),
                block: Some("(128, 1, 1)".into()),
                instances: 1,
                metrics: [("gpu__time_duration.sum".to_string(), 1.0)].into(),
                ..Default::default()
            },
            units: Default::default(),
            measured_by: "one".into(),
            measured_at: "then".into(),
            nsys_mean_ns: Some(nsys_ns),
        };
        cache.put(key, kernel).unwrap();
    }

    fn lookup(dir: &Path) -> Lookup {
        Lookup {
            cache: Cache::new(dir.to_path_buf(), 16),
            device: device(),
            settings: "s".into(),
            // The first launch is of (8,1,1); most time is in (96,1,1): 10 x 3 us.
            shapes: Shapes::of_list(&[(
                "k",
                &[("(96,1,1)", 10, 30_000.0, 5), ("(8,1,1)", 1, 1_000.0, 1)],
            )]),
            tolerance: 0.25,
        }
    }

    #[test]
    fn one_launch_per_kernel_is_served_from_any_of_its_shapes() {
        let dir = tempfile::tempdir().unwrap();
        // ncu measured the (96,1,1) launch, not the shape of nsys's first launch.
        put(
            &Cache::new(dir.path().to_path_buf(), 16),
            "(96,1,1)",
            3000.0,
        );
        let l = lookup(dir.path());
        match l.get("k", false) {
            Found::Hit(h) => assert_eq!(h.keys[0].launch.grid, "(96,1,1)"),
            _ => panic!("not served"),
        }
        // Every shape wanted: the (8,1,1) one is missing.
        assert!(matches!(l.get("k", true), Found::Miss));
        assert!(!l.holds("k", true));
        // What the selection asks where ncu measures one launch per kernel: served.
        assert!(l.holds("k", false));
    }

    #[test]
    fn an_entry_beside_another_duration_is_stale() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path().to_path_buf(), 16);
        put(&cache, "(96,1,1)", 3000.0 * 1.5);
        put(&cache, "(8,1,1)", 1000.0);
        let l = lookup(dir.path());
        assert!(matches!(l.get("k", true), Found::Stale(1)));
        let (reuse, filter) = l.split(Some(KernelFilter::Mangled(vec!["k".into()])), true);
        let reuse = reuse.unwrap();
        assert_eq!((reuse.hits.len(), reuse.stale), (0, 1));
        assert_eq!(filter, Some(KernelFilter::Mangled(vec!["k".into()])));
        // Within the tolerance both are served, as one kernel with its two shapes.
        let cache = Cache::new(dir.path().to_path_buf(), 16);
        put(&cache, "(96,1,1)", 3000.0 * 1.2);
        match lookup(dir.path()).get("k", true) {
            Found::Hit(h) => {
                assert_eq!(h.keys.len(), 2);
                assert_eq!(h.kernel.kernel.shapes.len(), 2);
                assert_eq!(h.kernel.kernel.instances, 2);
            }
            _ => panic!("not served"),
        }
    }
}
