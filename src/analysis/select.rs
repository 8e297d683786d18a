//! Which kernels ncu profiles: the top `ncu.top_n` by nsys total time, then more until their
//! share of kernel time reaches `ncu.coverage`, at most `ncu.max_kernels`.

use serde::{Deserialize, Serialize};

use crate::config::{Config, NcuTarget};
use crate::parse::nsys::{read_kernels, KernelSum};
use crate::parse::sqlite::NsysDb;
use crate::rundir::RunDir;

/// Which kernels ncu profiles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KernelFilter {
    /// Exact mangled names (from the nsys SQLite): the same in both tools.
    Mangled(Vec<String>),
    /// Function names (no namespaces, templates or parameters), when no mangled name is known.
    Function(Vec<String>),
}

impl KernelFilter {
    pub(crate) fn len(&self) -> usize {
        match self {
            KernelFilter::Mangled(v) | KernelFilter::Function(v) => v.len(),
        }
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Keep the first `n` (the largest: a filter is in rank order).
    pub(crate) fn truncate(&mut self, n: usize) {
        match self {
            KernelFilter::Mangled(v) | KernelFilter::Function(v) => v.truncate(n),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Selection {
    /// Indices into the nsys kernel list (its rank order), chosen.
    pub(crate) chosen: Vec<usize>,
    /// Share of kernel time the chosen kernels hold, in %.
    pub(crate) planned_coverage_pct: f64,
    /// Indices left out.
    pub(crate) left_out: Vec<usize>,
}

/// `cached[i]`: kernel i's ncu figures are in the metrics cache already (empty: none is).
/// The top `top_n` are chosen whatever the cache holds; past them, cached kernels count first
/// toward the coverage and the others only where those fall short, so that a re-run does not
/// start ncu for a kernel that differs from the last run's only at the margin.
pub(crate) fn select(
    kernels: &[KernelSum],
    top_n: usize,
    coverage: f64,
    max_kernels: usize,
    cached: &[bool],
) -> Selection {
    let total: f64 = kernels.iter().map(|k| k.total_ns).sum();
    let mut order: Vec<usize> = (0..kernels.len()).collect();
    // nsys lists kernels by time already; sort anyway so the rule does not depend on it.
    order.sort_by(|a, b| kernels[*b].total_ns.total_cmp(&kernels[*a].total_ns));
    let target = coverage.clamp(0.0, 1.0) * total;
    let is_cached = |i: usize| cached.get(i).copied().unwrap_or(false);
    let (top, rest) = order.split_at(top_n.min(order.len()));
    let rest = rest
        .iter()
        .filter(|&&i| is_cached(i))
        .chain(rest.iter().filter(|&&i| !is_cached(i)));
    let mut chosen = Vec::new();
    let mut covered = 0.0;
    for i in top.iter().chain(rest).copied() {
        if chosen.len() >= max_kernels {
            break;
        }
        // Compare with a relative tolerance: 95% of a sum of floats must count as reached.
        let reached = covered >= target * (1.0 - 1e-12);
        if chosen.len() >= top_n && reached {
            break;
        }
        chosen.push(i);
        covered += kernels[i].total_ns;
    }
    // Rank order, whichever way they were taken.
    chosen.sort_by(|a, b| kernels[*b].total_ns.total_cmp(&kernels[*a].total_ns));
    let left_out = order.into_iter().filter(|i| !chosen.contains(i)).collect();
    Selection {
        planned_coverage_pct: if total > 0.0 {
            100.0 * covered / total
        } else {
            0.0
        },
        chosen,
        left_out,
    }
}

/// The kernels of the nsys pass that ncu profiles (see [`crate::analysis::select`]), as mangled names
/// when the SQLite export has them (identical in both tools), else as function names. None:
/// no nsys data of ncu's range, so no filter. `cached(mangled)`: that kernel's figures are in
/// the metrics cache (None: no cache). `read`: the kernel table's rows where the caller read
/// them with its own pass over the export (else they are read here).
pub(crate) fn kernel_filter(
    (cfg, target): (&Config, &NcuTarget),
    run: &RunDir,
    cached: Option<&dyn Fn(&str) -> bool>,
    read: Option<crate::analysis::kernels::Loaded>,
) -> Option<KernelFilter> {
    if cfg.ncu.top_n == 0 && cfg.ncu.coverage <= 0.0 {
        return None;
    }
    let (all, streamed) = if target.same_as_capture {
        // The kernel table's rows (the captured range's kernels), or rank 0's under a launcher.
        let range = target.nsys_range.clone();
        match read.map_or_else(
            || crate::analysis::kernels::load(run, range.as_deref()),
            |l| Ok(Some(l)),
        ) {
            Ok(Some(l)) => (l.rows, l.mangled),
            _ => match read_kernels(&run.kern_sum(Some(0))) {
                Ok(rows) => (rows, None),
                Err(_) => {
                    // A dry run, or an nsys pass that left no export: nothing was captured.
                    tracing::info!(
                        "no nsys export to choose ncu's kernels from{}: ncu profiles each distinct kernel there once",
                        range.map(|r| format!(" in `{r}`")).unwrap_or_default()
                    );
                    return None;
                }
            },
        }
    } else {
        // ncu profiles another range than nsys's capture began with; a capture that ran on
        // (nsys.capture_range_end=none) holds that range's launches too: its kernels by time.
        other_range(target, run)?
    };
    // ncu serialises kernels across processes: an NCCL kernel waits for ranks that cannot run
    // meanwhile, and the profile hangs. They are left out unless asked for.
    let (kernels, nccl): (Vec<KernelSum>, Vec<KernelSum>) = all
        .into_iter()
        .partition(|k| cfg.ncu.include_nccl || !crate::model::is_nccl(&k.name));
    if !nccl.is_empty() {
        tracing::info!(
            "{} NCCL kernels left out of the ncu pass (ncu.include_nccl=true to profile them)",
            nccl.len()
        );
    }
    // Rows from the stats CSV: every kernel's mangled names, a pass over the export's kernels.
    let mangled = match streamed {
        Some(m) => Ok(m),
        None => NsysDb::open(&run.single_or_rank0_sqlite()).and_then(|db| db.mangled_names()),
    };
    // A kernel is cached when every mangled name it stands for is.
    let cached: Vec<bool> = match (&mangled, cached) {
        (Ok(map), Some(hit)) => kernels
            .iter()
            .map(|k| map.get(&k.name).is_some_and(|m| m.iter().all(|m| hit(m))))
            .collect(),
        _ => Vec::new(),
    };
    let sel = select(
        &kernels,
        cfg.ncu.top_n,
        cfg.ncu.coverage,
        cfg.ncu.max_kernels,
        &cached,
    );
    if sel.chosen.is_empty() {
        return None;
    }
    tracing::info!(
        "ncu will profile {} of {} kernels, {:.1}% of the kernel time nsys saw",
        sel.chosen.len(),
        kernels.len(),
        sel.planned_coverage_pct
    );
    let top: Vec<&str> = sel
        .chosen
        .iter()
        .map(|i| kernels[*i].name.as_str())
        .collect();
    match mangled {
        Ok(map) if top.iter().all(|n| map.contains_key(*n)) => {
            let names = unique(top.iter().flat_map(|n| map[*n].clone()));
            Some(KernelFilter::Mangled(names))
        }
        other => {
            if let Err(e) = other {
                tracing::warn!("kernel filter by function name ({e})");
            }
            let names = unique(top.iter().map(|n| crate::model::short_name(n)));
            Some(KernelFilter::Function(names))
        }
    }
}

/// ncu's range (the one its include names) when the nsys export holds instances of it.
pub(crate) fn range_in_export(target: &NcuTarget, run: &RunDir) -> Option<String> {
    let range = target.range()?;
    let db = crate::parse::sqlite::NsysDb::open(&run.nsys_sqlite(None)).ok()?;
    let ranges = db.ranges().ok()?;
    ranges.iter().any(|r| *r.name == *range).then_some(range)
}

/// Why ncu would profile nothing: nsys recorded the whole run, its export holds NVTX ranges,
/// and none is named like ncu's range. None when that cannot be told: no export, no NVTX at
/// all, a raw ncu expression, or a gated capture (a range opened before the capture started,
/// such as an enclosing `generate`, is not in its export, yet ncu would find it).
pub(crate) fn range_never_ran(target: &NcuTarget, run: &RunDir) -> Option<String> {
    if target.nsys_range.is_some() {
        return None;
    }
    let range = target.range()?;
    let db = run.single_or_rank0_sqlite();
    if !crate::files::present(&db).unwrap_or(false) {
        return None;
    }
    let mut names = NsysDb::open(&db).ok()?.range_names().ok()?;
    if names.is_empty() || names.contains(&range) {
        return None;
    }
    names.sort();
    Some(format!(
        "ncu's range `{range}` never ran while nsys recorded the whole run: its export holds the NVTX ranges {}. ncu would run the whole workload and profile nothing, so it is not run: set ncu.nvtx_include to one of those ranges (ncu.nvtx_include_raw passes an expression unchecked)",
        crate::text::listed(names.iter().map(|r| format!("`{}`", crate::term::visible(r))), ", ")
    ))
}

/// ncu's range's kernels from the nsys export, when it holds instances of that range; None
/// (each distinct kernel there, said on the console) when it holds none.
fn other_range(
    target: &NcuTarget,
    run: &RunDir,
) -> Option<(Vec<KernelSum>, Option<crate::model::MangledNames>)> {
    let name = &target.name;
    let range =
        crate::config::range_of(name).unwrap_or_else(|| crate::analysis::nvtx::base_name(name));
    let db = run.nsys_sqlite(None);
    let exported = crate::files::present(&db).unwrap_or(false);
    if !exported {
        // No export (a dry run, or an nsys pass that left none): nothing was captured to say of.
        tracing::info!(
            "no nsys export to choose ncu's kernels from in `{range}`: ncu profiles each distinct kernel there once"
        );
        return None;
    }
    let rows = exported
        .then(|| {
            crate::analysis::kernels::load(run, Some(&range))
                .ok()
                .flatten()
        })
        .flatten()
        // Rows of the stats CSV are the whole capture's, not the range's.
        .filter(|l| l.mangled.is_some() && !l.rows.is_empty());
    match rows {
        Some(l) => {
            tracing::info!(
                "nsys captured {} and ran on: its export holds `{range}`, so ncu's kernels are chosen from its launches there",
                target.nsys_captured
            );
            Some((l.rows, l.mangled))
        }
        None => {
            tracing::info!(
                "nsys captured {} but its export holds no instance of `{range}` (nsys.capture_range_end=none captures on past the range): ncu profiles each distinct kernel there once",
                target.nsys_captured
            );
            None
        }
    }
}

/// Keep the first of each name, in rank order.
fn unique(names: impl Iterator<Item = String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    names.filter(|n| seen.insert(n.clone())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn real() -> Vec<KernelSum> {
        let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/nsys/summary_cuda_gpu_kern_sum.csv");
        crate::parse::nsys::read_kernels(&p).unwrap()
    }

    #[test]
    fn coverage_on_the_real_capture() {
        let k = real();
        // Cumulative shares: ... 94.8% after 17 kernels, 96.1% after 18.
        let s = select(&k, 10, 0.95, 50, &[]);
        assert_eq!(s.chosen.len(), 18);
        assert!(
            s.planned_coverage_pct >= 95.0 && s.planned_coverage_pct < 96.5,
            "{}",
            s.planned_coverage_pct
        );
        assert_eq!(s.left_out.len(), 8);
        assert_eq!(s.chosen[0], 0);
    }

    #[test]
    fn nccl_kernels_of_the_real_two_gpu_run_are_left_out() {
        let dir =
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/sample-run-2gpu");
        let run = RunDir::open(&dir).unwrap();
        let cfg = |o: &[&str]| {
            crate::config::resolve(&crate::config::Sources {
                embedded_only: true,
                files: vec![dir.join("config.yaml")],
                overrides: o.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            })
            .unwrap()
            .config
        };
        let filter = |c: Config| kernel_filter((&c, &NcuTarget::of(&c)), &run, None, None);
        let Some(KernelFilter::Mangled(names)) = filter(cfg(&[])) else {
            panic!("no mangled filter")
        };
        assert!(!names.iter().any(|n| n.contains("nccl")), "{names:?}");
        assert!(names.len() >= 10, "{}", names.len());
        let Some(KernelFilter::Mangled(with)) = filter(cfg(&["ncu.include_nccl=true"])) else {
            panic!("no mangled filter")
        };
        assert!(with[0].contains("ncclDevKernel_AllReduce"), "{with:?}");
    }

    #[test]
    fn top_n_is_a_floor_and_max_kernels_a_cap() {
        let k = real();
        assert_eq!(select(&k, 10, 0.0, 50, &[]).chosen.len(), 10);
        assert_eq!(select(&k, 10, 1.0, 50, &[]).chosen.len(), 26);
        assert_eq!(select(&k, 10, 1.0, 5, &[]).chosen.len(), 5);
        assert_eq!(select(&k, 0, 0.5, 50, &[]).chosen.len(), 6);
        assert!(select(&[], 10, 0.95, 50, &[]).chosen.is_empty());
    }

    /// Past the top kernels, what the cache holds counts first: a re-run whose margin holds
    /// an uncached kernel takes cached ones instead when they reach the coverage, and never
    /// profiles more kernels than without the cache.
    #[test]
    fn cached_kernels_count_first_past_the_top() {
        let k = real();
        let plain = select(&k, 10, 0.95, 50, &[]);
        assert_eq!(plain.chosen.len(), 18);
        // The plain selection's last kernel (#17) is not cached; the three after it are.
        let mut cached = vec![true; k.len()];
        cached[17] = false;
        let aware = select(&k, 10, 0.95, 50, &cached);
        assert!(
            aware.planned_coverage_pct >= 95.0,
            "{}",
            aware.planned_coverage_pct
        );
        assert!(!aware.chosen.contains(&17), "{:?}", aware.chosen);
        assert_eq!(aware.chosen[..10], plain.chosen[..10]);
        let uncached = |s: &Selection| s.chosen.iter().filter(|&&i| !cached[i]).count();
        assert!(uncached(&aware) <= uncached(&plain));
        // Nothing cached: the plain selection.
        assert_eq!(select(&k, 10, 0.95, 50, &vec![false; k.len()]), plain);
        // The top is taken whatever the cache holds.
        let mut top_missing = vec![true; k.len()];
        top_missing[0] = false;
        assert!(select(&k, 10, 0.95, 50, &top_missing).chosen.contains(&0));
    }
}
