//! stage2's per-range figures beside NVIDIA's own reading of the same export: `nsys stats`'s
//! nvtx_gpu_proj_sum (instances, wall time, GPU projection, GPU operations), nvtx_kern_sum
//! (kernel time and launches) and cuda_gpu_kern_gb_sum:nvtx-name (the captured range's time in
//! small grids), as the nvidia pass (`run.crosscheck`) or scripts/nvidia-summaries.sh wrote
//! them to `nvidia/<export>_<report>.csv`.

use std::collections::BTreeMap;
use std::path::Path;

use super::ranges::RangeStats;
use super::scan::{most_time_within, time_within};
use crate::error::Error;

/// The comparison of one export's ranges.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Crosscheck {
    /// The two NVIDIA reports read (nvtx_gpu_proj_sum, nvtx_kern_sum), as the reports cite them.
    pub(crate) proj_file: String,
    pub(crate) kern_file: String,
    /// Ranges NVIDIA's reports hold, and figures compared over them.
    pub(crate) ranges: usize,
    pub(crate) figures: usize,
    /// Each figure that differs.
    pub(crate) differ: Vec<Differ>,
    /// Ranges whose launch count is not compared: instances nested in their own name, which
    /// nvtx_kern_sum's Kern Inst counts once and stage2 in each instance that holds them.
    pub(crate) self_nested: Vec<String>,
    /// The captured range's kernel time in small grids beside cuda_gpu_kern_gb_sum's.
    pub(crate) grids: Option<Grids>,
}

/// A range's kernel time in launches of at most `blocks` thread blocks (the small_grids
/// figure) beside NVIDIA's `cuda_gpu_kern_gb_sum:nvtx-name` of the same export, which names
/// each launch by its innermost range: compared where NVIDIA names all of the range's kernel
/// time by it, that is where no range with launches nests inside it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct Grids {
    pub(crate) file: String,
    pub(crate) range: String,
    pub(crate) blocks: i64,
    /// The kernel time NVIDIA's rows name by the range, and the range's kernel time in these
    /// reports (ns): compared where they are equal.
    pub(crate) named_ns: f64,
    pub(crate) kernel_ns: f64,
}

impl Grids {
    pub(crate) fn compared(&self) -> bool {
        self.named_ns == self.kernel_ns
    }
}

/// What stage2 holds of the captured range's grids: its name, the bound, its kernel time in
/// launches within the bound, and each kernel's launches by thread blocks.
pub(crate) struct OurGrids<'a> {
    pub(crate) range: &'a str,
    pub(crate) blocks: i64,
    pub(crate) small_ns: i64,
    pub(crate) kernels: &'a std::collections::HashMap<String, Vec<super::scan::Blocks>>,
}

/// The columns a differing small-grid figure is reported under: the time, and (per kernel) the
/// thread blocks of the grid holding most of it.
const GRID_COLUMN: &str = "Total Time (ns) of grids within the bound";
const GRID_BLOCKS_COLUMN: &str = "GridXYZ (x * y * z) holding most of that time";

/// One range figure that differs from NVIDIA's reading of the same export.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct Differ {
    pub(crate) range: String,
    /// NVIDIA's column.
    pub(crate) column: &'static str,
    pub(crate) ours: f64,
    pub(crate) theirs: f64,
}

/// The comparison, when `dir` holds both reports of the export named `base`.
pub(crate) fn read(
    dir: &Path,
    base: &str,
    stats: &[RangeStats],
    grids: Option<OurGrids>,
    cite: impl Fn(&Path) -> String,
) -> Result<Option<Crosscheck>, Error> {
    let proj = dir.join(format!("{base}_nvtx_gpu_proj_sum.csv"));
    let kern = dir.join(format!("{base}_nvtx_kern_sum.csv"));
    // Without the export's range figures (a run re-rendered from its stats CSVs alone) there
    // is nothing of stage2's to hold against NVIDIA's.
    if !proj.is_file() || !kern.is_file() || stats.is_empty() {
        return Ok(None);
    }
    use crate::parse::nsys::read_range_columns;
    let mut theirs = read_range_columns(
        &proj,
        "Range",
        &[
            "Range Instances",
            "Total Range Time (ns)",
            "Total Proj Time (ns)",
            "Total GPU Ops",
        ],
        false,
    )?;
    for (range, c) in
        read_range_columns(&kern, "NVTX Range", &["Total Time (ns)", "Kern Inst"], true)?
    {
        theirs.entry(range).or_default().extend(c);
    }
    let mut out = Crosscheck {
        proj_file: cite(&proj),
        kern_file: cite(&kern),
        ranges: theirs.len(),
        figures: 0,
        differ: Vec::new(),
        self_nested: Vec::new(),
        grids: None,
    };
    // By name once: a run can have tens of thousands of range names.
    let mut by_name = std::collections::HashMap::new();
    for s in stats {
        by_name.entry(s.name.as_str()).or_insert(s);
    }
    for (range, cols) in &theirs {
        let Some(s) = our_name(range).and_then(|name| by_name.get(name)) else {
            // A range NVIDIA reads and stage2 does not: every figure of it differs.
            out.figures += cols.len();
            for (column, v) in cols {
                out.differ.push(Differ {
                    range: range.clone(),
                    column,
                    ours: 0.0,
                    theirs: *v,
                });
            }
            continue;
        };
        for (column, v) in cols {
            let ours = match *column {
                "Range Instances" => s.instances as f64,
                "Total Range Time (ns)" => s.wall_ns as f64,
                "Total Proj Time (ns)" => s.proj_ns as f64,
                "Total GPU Ops" => s.gpu_ops as f64,
                "Total Time (ns)" => s.kernel_ns as f64,
                "Kern Inst" if s.nested_in_own_name > 0 => {
                    out.self_nested.push(s.name.clone());
                    continue;
                }
                _ => s.launches as f64,
            };
            out.figures += 1;
            if ours != *v {
                out.differ.push(Differ {
                    range: s.name.clone(),
                    column,
                    ours,
                    theirs: *v,
                });
            }
        }
    }
    let gb = dir.join(format!("{base}_cuda_gpu_kern_gb_sum_nvtx-name.csv"));
    if let (Some(g), true) = (grids, gb.is_file()) {
        let kernel_ns = by_name.get(g.range).map_or(0.0, |s| s.kernel_ns as f64);
        // A broken grid summary costs its own comparison, not the ranges'.
        match compare_grids(&gb, &g, kernel_ns, &mut out, cite(&gb)) {
            Ok(grids) => out.grids = Some(grids),
            Err(e) => tracing::warn!("the small-grid time is not compared with NVIDIA's: {e}"),
        }
    }
    Ok(Some(out))
}

/// The range's small-grid kernel time, in all and per kernel (the figures the small_grids
/// finding names), against NVIDIA's rows named `range/kernel`.
fn compare_grids(
    path: &Path,
    g: &OurGrids,
    kernel_ns: f64,
    out: &mut Crosscheck,
    file: String,
) -> Result<Grids, Error> {
    let prefix = format!("{}/", g.range);
    let (mut named, mut small) = (0.0, 0.0);
    // Kernel name -> NVIDIA's time in launches within the bound, by thread blocks (rows of
    // other grid or block shapes with the same product added up).
    let mut theirs: BTreeMap<String, BTreeMap<i64, f64>> = BTreeMap::new();
    for (name, blocks, ns) in crate::parse::nsys::read_grid_rows(path)? {
        let Some(kernel) = name.strip_prefix(&prefix) else {
            continue;
        };
        named += ns;
        if blocks <= g.blocks {
            small += ns;
            *theirs
                .entry(kernel.to_string())
                .or_default()
                .entry(blocks)
                .or_default() += ns;
        }
    }
    let ours_ns = |kernel: &str| {
        g.kernels
            .get(kernel)
            .map_or(0, |by| time_within(by, g.blocks))
    };
    let grids = Grids {
        file,
        range: g.range.to_string(),
        blocks: g.blocks,
        named_ns: named,
        kernel_ns,
    };
    if !grids.compared() {
        return Ok(grids);
    }
    let mut figure = |range: String, column, ours: f64, theirs: f64| {
        out.figures += 1;
        if ours != theirs {
            out.differ.push(Differ {
                range,
                column,
                ours,
                theirs,
            });
        }
    };
    figure(g.range.to_string(), GRID_COLUMN, g.small_ns as f64, small);
    // Every kernel with small-grid time on either side, by name.
    let kernels: std::collections::BTreeSet<&str> = theirs
        .keys()
        .map(String::as_str)
        .chain(
            g.kernels
                .keys()
                .map(String::as_str)
                .filter(|k| ours_ns(k) > 0),
        )
        .collect();
    for kernel in kernels {
        let by = theirs.get(kernel);
        let their_ns = by.map_or(0.0, |by| by.values().sum());
        let their_held =
            by.and_then(|by| most_time_within(by.iter().map(|(&b, &ns)| (b, ns as i64)), g.blocks));
        let our_held = g
            .kernels
            .get(kernel)
            .and_then(|by| most_time_within(by.iter().map(|b| (b.blocks, b.ns)), g.blocks));
        let blocks = |held: Option<i64>| held.map_or(0.0, |b| b as f64);
        let at = format!("{prefix}{kernel}");
        figure(at.clone(), GRID_COLUMN, ours_ns(kernel) as f64, their_ns);
        figure(at, GRID_BLOCKS_COLUMN, blocks(our_held), blocks(their_held));
    }
    Ok(grids)
}

/// NVIDIA writes a range as `domain:name` (an empty domain for the default one); stage2 by its
/// name.
fn our_name(theirs: &str) -> Option<&str> {
    theirs.split_once(':').map(|(_, name)| name)
}

/// ncu's figures beside NVIDIA's `ncu --import --print-summary per-kernel` of the same report.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NcuCrosscheck {
    pub(crate) file: String,
    /// Kernels (name, block, grid) matched, and metric values compared over them.
    pub(crate) kernels: usize,
    pub(crate) figures: usize,
    /// Each value that differs beyond the summary's rounding.
    pub(crate) differ: Vec<NcuDiffer>,
    /// Summary rows whose kernel stands for several of the report's (one name, block and grid
    /// for distinct functions): not compared.
    pub(crate) ambiguous: usize,
}

/// One ncu value that differs from NVIDIA's summary of the same report.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct NcuDiffer {
    pub(crate) kernel: String,
    pub(crate) metric: String,
    pub(crate) ours: f64,
    pub(crate) theirs: f64,
}

/// The comparison, when `dir` holds NVIDIA's summary of the ncu report named `base`. Values are
/// compared in the raw page's unit (the summary scales to its own: Gbyte/s for Tbyte/s) within
/// the summary's rounding (two decimals in its unit).
pub(crate) fn read_ncu(
    dir: &Path,
    base: &str,
    report: &crate::parse::ncu::NcuReport,
    cite: impl Fn(&Path) -> String,
) -> Result<Option<NcuCrosscheck>, Error> {
    let path = dir.join(format!("{base}_print_summary.csv"));
    if !path.is_file() {
        return Ok(None);
    }
    use crate::analysis::shapes::dims;
    let mut out = NcuCrosscheck {
        file: cite(&path),
        kernels: 0,
        figures: 0,
        differ: Vec::new(),
        ambiguous: 0,
    };
    let mut seen = std::collections::BTreeSet::new();
    let band = crate::rules::NVIDIA_NCU_SUMMARY.threshold / 100.0;
    for row in crate::parse::ncu::read_print_summary(&path)? {
        let (b, g) = (dims(&row.block), dims(&row.grid));
        // The report's launches of this kernel and configuration, one shape or a kernel's own.
        let shapes: Vec<&BTreeMap<String, f64>> = report
            .kernels
            .iter()
            .filter(|k| k.name == row.kernel && k.cached_from.is_none())
            .flat_map(|k| k.measured())
            .filter(|(kg, kb, _)| {
                kb.map(dims).as_ref() == Some(&b) && kg.map(dims).as_ref() == Some(&g)
            })
            .map(|(_, _, m)| m)
            .collect();
        let [one] = shapes.as_slice() else {
            out.ambiguous += usize::from(shapes.len() > 1);
            continue;
        };
        let Some(ours) = one.get(&row.metric) else {
            continue;
        };
        let raw_unit = report.units.get(&row.metric).map_or("", String::as_str);
        let theirs = row.average * crate::parse::ncu::si_ratio(&row.unit, raw_unit);
        seen.insert((row.kernel.clone(), b, g));
        out.figures += 1;
        if (ours - theirs).abs() > band * theirs.abs().max(1.0) {
            out.differ.push(NcuDiffer {
                kernel: row.kernel,
                metric: row.metric,
                ours: *ours,
                theirs,
            });
        }
    }
    out.kernels = seen.len();
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same_range(theirs: &str, ours: &str) -> bool {
        our_name(theirs) == Some(ours)
    }

    #[test]
    fn a_range_is_matched_by_its_name_in_any_one_domain() {
        assert!(same_range(":decode", "decode"));
        assert!(same_range("llm:decode", "decode"));
        assert!(!same_range(":predecode", "decode"));
        assert!(!same_range("a:b:decode", "decode"));
        assert!(!same_range("decode", "decode"));
    }

    /// NVIDIA's cuda_gpu_kern_gb_sum:nvtx-name of the GPU-metrics capture (nsys 2025.3.1 on an
    /// H100, the report's rows named `decode/<kernel>`): the time of decode's launches of at most
    /// 66 blocks equals stage2's, in all and per kernel; one nanosecond off is named; with a range nested inside
    /// `decode` (its rows then hold less than decode's kernel time) it is not compared.
    #[test]
    fn small_grid_time_agrees_with_cuda_gpu_kern_gb_sum() {
        let run = crate::testutil::data("hf/gpu-metrics");
        let dir = crate::rundir::RunDir::open(&run).unwrap();
        let cfg = crate::testutil::config(&["nsys.nvtx_capture=decode"]);
        let a = crate::analysis::Artifacts::load(&dir, cfg).unwrap();
        let c = a.nvidia.as_ref().unwrap();
        let g = c.grids.as_ref().unwrap();
        assert_eq!((g.range.as_str(), g.blocks), ("decode", 66));
        assert!(g.compared(), "{g:?}");
        assert_eq!(g.named_ns, 12_748_422.0);
        assert!(c.differ.is_empty(), "{:?}", c.differ);
        let crate::analysis::SmallGrids {
            blocks,
            ns: small_ns,
            ..
        } = a.small_grids().unwrap();
        // Per kernel too: the total and each of the 28 kernels with launches of at most 66
        // blocks in decode.
        let kernels = a
            .kernel_blocks
            .values()
            .filter(|by| by.iter().any(|b| b.blocks <= blocks))
            .count();
        assert_eq!(kernels, 28);
        let compare = |small_ns: i64, stats: &[RangeStats], kernels| {
            let ours = OurGrids {
                range: "decode",
                blocks,
                small_ns,
                kernels,
            };
            read(&run.join("nvidia"), "run", stats, Some(ours), |p| {
                p.display().to_string()
            })
            .unwrap()
            .unwrap()
        };
        let off = compare(small_ns + 1, &a.range_stats, &a.kernel_blocks);
        assert_eq!(off.figures, c.figures);
        assert_eq!(off.differ.len(), 1, "{:?}", off.differ);
        assert_eq!(off.differ[0].column, GRID_COLUMN);
        assert_eq!(off.differ[0].theirs, small_ns as f64);
        // A copy of the kernels to edit, and the name of one with launches within the bound.
        let small_kernel = || {
            let kernels = a.kernel_blocks.clone();
            let name = kernels
                .iter()
                .find(|(_, by)| by.iter().any(|b| b.blocks <= blocks))
                .unwrap()
                .0
                .clone();
            (kernels, name)
        };
        // One kernel's small-grid time off by a nanosecond is named by its kernel.
        let (mut kernels, name) = small_kernel();
        let by = kernels.get_mut(&name).unwrap();
        by.iter_mut().find(|b| b.blocks <= blocks).unwrap().ns += 1;
        let one = compare(small_ns, &a.range_stats, &kernels);
        assert_eq!(one.differ.len(), 1, "{:?}", one.differ);
        assert_eq!(one.differ[0].range, format!("decode/{name}"));
        // One kernel's time moved to a grid of other blocks within the bound: its time agrees,
        // the blocks holding most of it are named.
        let (mut kernels, name) = small_kernel();
        let by = kernels.get_mut(&name).unwrap();
        let held = most_time_within(by.iter().map(|b| (b.blocks, b.ns)), blocks).unwrap();
        let other = (1..=blocks)
            .find(|n| !by.iter().any(|b| b.blocks == *n))
            .unwrap();
        by.iter_mut().find(|b| b.blocks == held).unwrap().blocks = other;
        let moved = compare(small_ns, &a.range_stats, &kernels);
        let differ: Vec<_> = moved
            .differ
            .iter()
            .map(|d| (d.range.as_str(), d.column))
            .collect();
        let at = format!("decode/{name}");
        assert_eq!(differ, [(at.as_str(), GRID_BLOCKS_COLUMN)]);
        let mut nested = a.range_stats.clone();
        nested.iter_mut().for_each(|s| s.kernel_ns += 1000);
        let n = compare(small_ns, &nested, &a.kernel_blocks);
        assert!(!n.grids.as_ref().unwrap().compared());
        assert!(!n.differ.iter().any(|d| d.column == GRID_COLUMN));
    }

    /// A grid summary that cannot be read (hand-made, for the error path) costs its own
    /// comparison: the ranges' figures are still held against nvtx_gpu_proj_sum and
    /// nvtx_kern_sum.
    #[test]
    fn a_broken_grid_summary_leaves_the_range_comparison() {
        let run = crate::testutil::data("hf/gpu-metrics");
        let dir = crate::rundir::RunDir::open(&run).unwrap();
        let cfg = crate::testutil::config(&["nsys.nvtx_capture=decode"]);
        let a = crate::analysis::Artifacts::load(&dir, cfg).unwrap();
        let whole = a.nvidia.as_ref().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        for f in ["run_nvtx_gpu_proj_sum.csv", "run_nvtx_kern_sum.csv"] {
            std::fs::copy(run.join("nvidia").join(f), tmp.path().join(f)).unwrap();
        }
        let gb = tmp.path().join("run_cuda_gpu_kern_gb_sum_nvtx-name.csv");
        std::fs::write(&gb, "Name,GridXYZ\ndecode/k,not a grid\n").unwrap();
        let crate::analysis::SmallGrids {
            blocks,
            ns: small_ns,
            ..
        } = a.small_grids().unwrap();
        let ours = OurGrids {
            range: "decode",
            blocks,
            small_ns,
            kernels: &a.kernel_blocks,
        };
        let c = read(tmp.path(), "run", &a.range_stats, Some(ours), |p| {
            p.display().to_string()
        })
        .unwrap()
        .unwrap();
        assert!(c.grids.is_none());
        // The grid comparison: decode's total, and each of the 28 kernels with time in small
        // grids, its time and the blocks holding most of it.
        assert_eq!(c.figures + 1 + 2 * 28, whole.figures);
        assert!(c.differ.is_empty(), "{:?}", c.differ);
    }

    /// A grid NVIDIA's report would never write (hand-made, for the error path) is a parse
    /// error naming the file, line and column.
    #[test]
    fn a_grid_that_is_not_three_numbers_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("gb_hand_made.csv");
        std::fs::write(
            &p,
            "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),GridXYZ,BlockXYZ,Name\n1.0,10,1,10,10,10,10,0,   8    x    1, 128    1    1,decode/k\n",
        )
        .unwrap();
        let e = crate::parse::nsys::read_grid_rows(&p)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("gb_hand_made.csv") && e.contains("GridXYZ"),
            "{e}"
        );
    }

    /// The nvidia pass's own output on an H100 (tests/data/crosscheck/eager: `ncu --import
    /// --print-summary per-kernel --csv --log-file` of a fresh eager decode's report): every
    /// value of the 13 profiled kernels equals stage2's reading of the raw page.
    #[test]
    fn a_real_summary_agrees_with_the_raw_page() {
        let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/crosscheck/eager");
        let report = crate::parse::ncu::read_raw(&d.join("ncu/decode_raw.csv")).unwrap();
        let c = read_ncu(&d.join("nvidia"), "decode", &report, |p| {
            p.display().to_string()
        })
        .unwrap()
        .unwrap();
        assert_eq!((c.kernels, c.figures, c.ambiguous), (13, 364, 0));
        assert!(c.differ.is_empty(), "{:?}", c.differ);
        // With one value off by more than the summary's rounding, that value is named.
        let mut report = report;
        let k = &mut report.kernels[0];
        *k.metrics.get_mut("gpu__time_duration.sum").unwrap() *= 1.01;
        let c = read_ncu(&d.join("nvidia"), "decode", &report, |p| {
            p.display().to_string()
        })
        .unwrap()
        .unwrap();
        assert_eq!(c.differ.len(), 1, "{:?}", c.differ);
        assert_eq!(c.differ[0].metric, "gpu__time_duration.sum");
    }
}
