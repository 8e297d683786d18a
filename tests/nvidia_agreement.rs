//! stage2's figures against NVIDIA's own reports of the same captures: the committed
//! transformers generate() sample runs (examples/sample-run-hf-*, every `decode` step captured)
//! and tests/data/hf/eager (a `generate` capture that ends with the range), all on an H200 with
//! nsys/ncu 2025.3.1 and `--cuda-graph-trace=node`. Each `nvidia/` was written by
//! scripts/nvidia-summaries.sh from the same .nsys-rep and .ncu-rep.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use stage2::analysis::ranges::RangeStats;
use stage2::analysis::scan::attribute;
use stage2::parse::sqlite::NsysDb;

/// `eager`/`static` of tests/data/hf, or a committed sample run (`sample-run-hf-...`).
fn dir(variant: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    if variant.starts_with("sample-run") {
        root.join("examples").join(variant)
    } else {
        root.join("tests/data/hf").join(variant)
    }
}

fn stats(variant: &str) -> Vec<RangeStats> {
    let db = NsysDb::open(&dir(variant).join("nsys/run.sqlite")).unwrap();
    attribute(&db.ranges().unwrap(), &db.launches().unwrap())
}

/// Rows of an nsys stats CSV as header -> value maps.
fn rows(path: &Path) -> Vec<BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap();
    let headers = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            headers
                .iter()
                .zip(rec.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn num(row: &BTreeMap<String, String>, col: &str) -> f64 {
    row[col].parse().unwrap()
}

/// Captures whose every range figure must equal NVIDIA's.
const SAME: [&str; 8] = [
    "eager",
    "sample-run-hf-window",
    "sample-run-hf-prefill",
    "sample-run-hf-eager",
    "sample-run-hf-static",
    "sample-run-hf-large",
    "sample-run-hf-moe",
    "sample-run-hf-second-gpu",
];

#[test]
fn range_projection_and_instances_equal_nvtx_gpu_proj_sum() {
    for variant in SAME {
        let ours = stats(variant);
        let theirs = rows(&dir(variant).join("nvidia/run_nvtx_gpu_proj_sum.csv"));
        assert!(!theirs.is_empty());
        for t in &theirs {
            let name = t["Range"].trim_start_matches(':');
            let o = ours
                .iter()
                .find(|r| r.name == name)
                .unwrap_or_else(|| panic!("{name}"));
            assert_eq!(
                o.instances as f64,
                num(t, "Range Instances"),
                "{variant} {name}"
            );
            assert_eq!(
                o.wall_ns as f64,
                num(t, "Total Range Time (ns)"),
                "{variant} {name}"
            );
            assert_eq!(
                o.gpu_ops as f64,
                num(t, "Total GPU Ops"),
                "{variant} {name}"
            );
            assert_eq!(
                o.proj_ns as f64,
                num(t, "Total Proj Time (ns)"),
                "{variant} {name}"
            );
            assert_eq!(
                o.proj_spread.max,
                num(t, "Proj Max (ns)"),
                "{variant} {name}"
            );
            assert_eq!(
                o.proj_spread.min,
                num(t, "Proj Min (ns)"),
                "{variant} {name}"
            );
            // Busy is the union of kernel intervals inside the projection.
            assert!(
                o.busy_ns <= o.proj_ns && o.gpu_busy_pct <= 100.0,
                "{variant} {name}"
            );
        }
    }
}

#[test]
fn range_kernel_time_and_launches_equal_nvtx_kern_sum() {
    for variant in SAME {
        let ours = stats(variant);
        let mut theirs: BTreeMap<String, (f64, f64)> = BTreeMap::new();
        // Rows with no range are kernels launched outside every range (the capture runs on
        // after the last decode step).
        for t in rows(&dir(variant).join("nvidia/run_nvtx_kern_sum.csv"))
            .into_iter()
            .filter(|t| !t["NVTX Range"].is_empty())
        {
            let e = theirs
                .entry(t["NVTX Range"].trim_start_matches(':').to_string())
                .or_default();
            e.0 += num(&t, "Total Time (ns)");
            e.1 += num(&t, "Kern Inst");
        }
        assert!(!theirs.is_empty());
        for (name, (time, inst)) in theirs {
            let o = ours.iter().find(|r| r.name == name).unwrap();
            assert_eq!(o.kernel_ns as f64, time, "{variant} {name}");
            assert_eq!(o.launches as f64, inst, "{variant} {name}");
        }
    }
}

#[test]
fn cuda_graph_kernels_are_attributed_to_the_range_that_launched_the_graph() {
    let s = stats("sample-run-hf-static");
    let decode = s.iter().find(|r| r.name == "decode").unwrap();
    assert!(decode.graph_kernels > 2000, "{}", decode.graph_kernels);
    assert!(decode.kernel_ns > 0);
    let eager = stats("eager");
    assert!(eager.iter().all(|r| r.graph_kernels == 0));
}

/// Each range's kernel rows (stage2's kernel table when that range is captured) equal
/// `nvtx_kern_sum`'s rows for it: total, launches, mean, median, min, max, deviation.
#[test]
fn range_kernel_rows_equal_nvtx_kern_sum_per_kernel() {
    use stage2::analysis::kernels::in_range;
    for variant in SAME {
        let db = NsysDb::open(&dir(variant).join("nsys/run.sqlite")).unwrap();
        let (ranges, launches, strings) = (
            db.ranges().unwrap(),
            db.launches().unwrap(),
            db.strings().unwrap(),
        );
        let theirs = rows(&dir(variant).join("nvidia/run_nvtx_kern_sum.csv"));
        assert!(!theirs.is_empty());
        let mut checked = 0;
        for t in theirs.iter().filter(|t| !t["NVTX Range"].is_empty()) {
            let range = t["NVTX Range"].trim_start_matches(':');
            let ours = in_range(range, &ranges, &launches, &strings);
            let k = ours
                .iter()
                .find(|k| k.name == t["Kernel Name"])
                .unwrap_or_else(|| panic!("{variant} {range} {}", t["Kernel Name"]));
            let at = format!("{variant} {range} {}", t["Kernel Name"]);
            assert_eq!(k.total_ns, num(t, "Total Time (ns)"), "{at}");
            assert_eq!(k.instances as f64, num(t, "Kern Inst"), "{at}");
            for (ours, col) in [
                (k.avg_ns, "Avg (ns)"),
                (k.med_ns.unwrap(), "Med (ns)"),
                (k.min_ns.unwrap(), "Min (ns)"),
                (k.max_ns.unwrap(), "Max (ns)"),
                (k.stddev_ns.unwrap(), "StdDev (ns)"),
            ] {
                // nsys prints one decimal.
                assert!((ours - num(t, col)).abs() <= 0.051, "{at} {col}: {ours}");
            }
            checked += 1;
        }
        assert!(checked > 10, "{variant}");
    }
}

/// A capture that ends with its range (`capture_range_end=stop`, as these samples were made)
/// holds only that range's kernels: the kernel table equals `cuda_gpu_kern_sum`.
#[test]
fn captured_range_rows_equal_cuda_gpu_kern_sum_when_the_capture_is_the_range() {
    use stage2::analysis::kernels::from_db;
    // tests/data/hf/eager: `generate` captured with capture_range_end=stop.
    for variant in ["eager"] {
        let db = NsysDb::open(&dir(variant).join("nsys/run.sqlite")).unwrap();
        let ours = from_db(&db, "generate").unwrap();
        let theirs = rows(&dir(variant).join("nvidia/run_cuda_gpu_kern_sum.csv"));
        assert_eq!(ours.len(), theirs.len(), "{variant}");
        for t in &theirs {
            let k = ours.iter().find(|k| k.name == t["Name"]).unwrap();
            assert_eq!(
                k.total_ns,
                num(t, "Total Time (ns)"),
                "{variant} {}",
                k.name
            );
            assert_eq!(k.instances as f64, num(t, "Instances"), "{variant}");
            assert!((k.time_pct.unwrap() - num(t, "Time (%)")).abs() <= 0.051);
        }
    }
}

/// The ncu values stage2 reads from the raw export equal `ncu --print-summary per-kernel` of
/// the same report (kernels profiled once: minimum = maximum = average).
#[test]
fn ncu_metrics_equal_ncu_print_summary() {
    // The window sample's ncu report holds kernels of one name and launch shape several times
    // (distinct functions, same demangled name), which the summary's rows cannot be matched to.
    for variant in SAME.iter().filter(|v| **v != "sample-run-hf-window") {
        let d = dir(variant);
        // The ncu report is named after the range it profiled.
        let base = if *variant == "sample-run-hf-prefill" {
            "prefill"
        } else {
            "decode"
        };
        let raw = stage2::parse::ncu::read_raw(&d.join(format!("ncu/{base}_raw.csv"))).unwrap();
        let summary = rows(&d.join(format!("nvidia/{base}_print_summary.csv")));
        let mut checked = 0;
        for t in summary.iter().filter(|t| t["Invocations"] == "1") {
            let dims = |s: &str| s.replace([' ', '(', ')'], "");
            let Some(k) = raw.kernels.iter().find(|k| {
                k.name == t["Kernel Name"]
                    && k.block.as_deref().map(dims) == Some(dims(&t["Block Size"]))
                    && k.grid.as_deref().map(dims) == Some(dims(&t["Grid Size"]))
            }) else {
                continue;
            };
            let Some(ours) = k.metrics.get(&t["Metric Name"]) else {
                continue;
            };
            let theirs: f64 = t["Average"].replace(',', "").parse().unwrap();
            // The summary scales a value to its own unit (Gbyte/s where the raw page has
            // Tbyte/s): compare in the raw page's unit.
            let unit = raw
                .units
                .get(&t["Metric Name"])
                .map(String::as_str)
                .unwrap_or("");
            let theirs = theirs * stage2::parse::ncu::si_ratio(&t["Metric Unit"], unit);
            let tol = 0.006 * theirs.abs().max(1.0);
            assert!(
                (ours - theirs).abs() <= tol,
                "{variant} {} {}: {ours} vs {theirs}",
                k.name,
                t["Metric Name"]
            );
            checked += 1;
        }
        assert!(checked > 20, "{variant}: {checked}");
    }
}

#[test]
fn profiler_windows_are_ranges_around_each_generate_call() {
    // cudaProfilerStart/Stop around each of the two measured generate() calls.
    let s = stats("sample-run-hf-window");
    let w = s
        .iter()
        .find(|r| r.name == "cudaProfilerApi window")
        .unwrap();
    let g = s.iter().find(|r| r.name == "generate").unwrap();
    assert_eq!((w.instances, g.instances), (2, 2));
    // Each window holds its generate call and the synchronize after it, nothing else.
    assert!(w.wall_ns >= g.wall_ns && (w.wall_ns - g.wall_ns) < w.wall_ns / 50);
    assert_eq!(w.launches, g.launches);
}

/// One launch configuration's grid, block and figures.
type Shape<'a> = (
    Option<&'a String>,
    Option<&'a String>,
    &'a BTreeMap<String, f64>,
);

/// A model whose kernels run with several launch configurations (tests/data/hf/shapes, H100,
/// `ncu.shapes` auto: one launch of each configuration): each configuration's figures as
/// stage2 reads them equal `ncu --print-summary per-kernel` of the same report, which
/// summarises per kernel name, block and grid.
#[test]
fn each_launch_configuration_matches_nvidias_per_kernel_summary() {
    let d = dir("shapes");
    let report = stage2::parse::ncu::read_raw(&d.join("ncu/decode_raw.csv")).unwrap();
    let nvidia = rows(&d.join("ncu/nvidia_summary_per_kernel.csv"));
    let mut compared = 0;
    let mut several = 0;
    for k in &report.kernels {
        let shapes: Vec<Shape> = match k.shapes.is_empty() {
            true => vec![(k.grid.as_ref(), k.block.as_ref(), &k.metrics)],
            false => {
                several += 1;
                k.shapes
                    .iter()
                    .map(|s| (s.grid.as_ref(), s.block.as_ref(), &s.metrics))
                    .collect()
            }
        };
        for (grid, block, metrics) in shapes {
            for metric in [
                "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                "dram__throughput.avg.pct_of_peak_sustained_elapsed",
                "gpu__time_duration.sum",
            ] {
                let row = nvidia
                    .iter()
                    .find(|r| {
                        r["Kernel Name"] == k.name
                            && Some(&r["Grid Size"]) == grid
                            && Some(&r["Block Size"]) == block
                            && r["Metric Name"] == metric
                    })
                    .unwrap_or_else(|| panic!("{} {grid:?} {block:?} {metric}", k.name));
                let (ours, theirs) = (metrics[metric], num(row, "Average"));
                assert!(
                    (ours - theirs).abs() <= 0.005 + 1e-9 * theirs.abs(),
                    "{} {grid:?}: {metric} {ours} vs NVIDIA's {theirs}",
                    k.name
                );
                compared += 1;
            }
        }
    }
    assert!(
        several >= 5,
        "kernels measured in several shapes: {several}"
    );
    assert_eq!(compared, 3 * 40);
}

/// A range nested in its own name (tests/data/hf/nested: H100, `examples/workloads/nested_ranges.py`,
/// each `work` holding an inner `work`): a launch in the inner one counts in both instances, in
/// kernel time as nvtx_kern_sum's Total Time and in kernels as nvtx_gpu_proj_sum's Total GPU Ops;
/// nvtx_kern_sum's Kern Inst counts it once, and kernels.md says so.
#[test]
fn a_range_nested_in_its_own_name_counts_as_nvidia_does_and_says_where_it_differs() {
    let d = dir("nested");
    let work = stats("nested")
        .into_iter()
        .find(|s| s.name == "work")
        .unwrap();
    let kern = rows(&d.join("nsys/nvidia_nvtx_kern_sum.csv"));
    let mine: Vec<&BTreeMap<String, String>> =
        kern.iter().filter(|r| r["NVTX Range"] == ":work").collect();
    let total: i64 = mine
        .iter()
        .map(|r| r["Total Time (ns)"].parse::<i64>().unwrap())
        .sum();
    let kern_inst: u64 = mine
        .iter()
        .map(|r| r["Kern Inst"].parse::<u64>().unwrap())
        .sum();
    let proj = rows(&d.join("nsys/nvidia_nvtx_gpu_proj_sum.csv"));
    let p = proj.iter().find(|r| r["Range"] == ":work").unwrap();
    assert_eq!(work.kernel_ns, total);
    assert_eq!(work.gpu_ops, p["Total GPU Ops"].parse::<u64>().unwrap());
    assert_eq!(
        work.proj_ns,
        p["Total Proj Time (ns)"].parse::<i64>().unwrap()
    );
    assert!(
        kern_inst < work.launches,
        "{kern_inst} vs {}",
        work.launches
    );
    // The report states the rule where it applies.
    let sb = tempfile::tempdir().unwrap();
    let run = sb.path().join("nested");
    std::fs::create_dir_all(run.join("nsys")).unwrap();
    for f in ["config.yaml", "env.json", "inputs.yaml", "status.json"] {
        std::fs::copy(d.join(f), run.join(f)).unwrap();
    }
    std::fs::copy(d.join("nsys/run.sqlite"), run.join("nsys/run.sqlite")).unwrap();
    let out = report(&run);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(run.join("kernels.md")).unwrap();
    assert!(
        md.contains("`work` nests in itself: 5 of its 10 instances are inside another `work`"),
        "{md}"
    );
}

/// `stage2 report RUN` with no profiler on PATH.
fn report(run: &Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_stage2"))
        .arg("report")
        .arg(run)
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap()
}

/// A run directory under `root` copied from `from` (its nsys export and provenance), with
/// NVIDIA's two per-range summaries at `nvidia/run_<report>.csv`, and stage2's report of it.
fn with_nvidia(
    root: &Path,
    from: &Path,
    proj: &Path,
    kern: &Path,
) -> (PathBuf, std::process::Output) {
    let run = root.join("run");
    std::fs::create_dir_all(run.join("nsys")).unwrap();
    std::fs::create_dir_all(run.join("nvidia")).unwrap();
    for f in ["config.yaml", "env.json", "inputs.yaml", "status.json"] {
        std::fs::copy(from.join(f), run.join(f)).unwrap();
    }
    std::fs::copy(from.join("nsys/run.sqlite"), run.join("nsys/run.sqlite")).unwrap();
    std::fs::copy(proj, run.join("nvidia/run_nvtx_gpu_proj_sum.csv")).unwrap();
    std::fs::copy(kern, run.join("nvidia/run_nvtx_kern_sum.csv")).unwrap();
    let out = report(&run);
    (run, out)
}

/// [`with_nvidia`]'s summary.json, with its stakeholder summary under `stakeholder`.
fn reported_with_nvidia(from: &Path, proj: &Path, kern: &Path) -> serde_json::Value {
    let sb = tempfile::tempdir().unwrap();
    let (run, out) = with_nvidia(sb.path(), from, proj, kern);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = std::fs::read_to_string(run.join("summary.json")).unwrap();
    let stake = std::fs::read_to_string(run.join("stakeholder_summary.md")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&s).unwrap();
    v["stakeholder"] = serde_json::Value::from(stake);
    v
}

fn nvidia_finding(v: &serde_json::Value) -> &serde_json::Value {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "nvidia_summaries")
        .expect("no nvidia_summaries finding")
}

/// Where the run holds NVIDIA's summaries of its export, the reports hold their figures against
/// stage2's: every sample with them agrees (a fact), a range nested in its own name has its
/// launches left out of the comparison, said with why.
#[test]
fn the_reports_compare_their_range_figures_with_nvidias_summaries() {
    for variant in SAME.iter().filter(|v| v.starts_with("sample-run")) {
        let s: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir(variant).join("summary.json")).unwrap(),
        )
        .unwrap();
        let f = nvidia_finding(&s);
        assert_eq!(f["role"], "fact", "{variant}: {f}");
        assert!(f["differ"].as_array().unwrap().is_empty(), "{variant}: {f}");
    }
    let d = dir("nested");
    let v = reported_with_nvidia(
        &d,
        &d.join("nsys/nvidia_nvtx_gpu_proj_sum.csv"),
        &d.join("nsys/nvidia_nvtx_kern_sum.csv"),
    );
    let f = nvidia_finding(&v);
    assert_eq!(f["role"], "fact", "{f}");
    assert_eq!(f["self_nested"][0], "work", "{f}");
    assert!(
        v["stakeholder"]
            .as_str()
            .unwrap()
            .contains("the launches of `work` are not compared"),
        "{}",
        v["stakeholder"]
    );
}

/// A figure NVIDIA reads otherwise is a caveat naming the range, NVIDIA's column and both
/// values. The summary here is NVIDIA's real one with one value changed (hand-made, for the path).
#[test]
fn a_range_figure_unlike_nvidias_is_a_caveat_with_both_values() {
    let d = dir("eager");
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join("proj.csv");
    let real = std::fs::read_to_string(d.join("nvidia/run_nvtx_gpu_proj_sum.csv")).unwrap();
    let mut lines: Vec<String> = real.lines().map(str::to_string).collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    let col = header.iter().position(|h| *h == "Total GPU Ops").unwrap();
    let mut cells: Vec<String> = lines[1].split(',').map(str::to_string).collect();
    let theirs: u64 = cells[col].parse::<u64>().unwrap() + 1;
    cells[col] = theirs.to_string();
    lines[1] = cells.join(",");
    std::fs::write(&proj, lines.join("\n") + "\n").unwrap();
    let v = reported_with_nvidia(&d, &proj, &d.join("nvidia/run_nvtx_kern_sum.csv"));
    let f = nvidia_finding(&v);
    assert_eq!(f["role"], "caveat", "{f}");
    let differ = f["differ"].as_array().unwrap();
    assert_eq!(differ.len(), 1, "{f}");
    assert_eq!(differ[0]["column"], "Total GPU Ops");
    assert_eq!(differ[0]["theirs"].as_f64(), Some(theirs as f64));
    let stake = v["stakeholder"].as_str().unwrap();
    assert!(
        stake.contains(&format!(
            "Total GPU Ops {} here, {theirs} in NVIDIA's",
            theirs - 1
        )),
        "{stake}"
    );
    // Among the points on how sure the figures are, not among what to look at next.
    let sure = stake.find("## How sure the figures are").expect(stake);
    let next = stake.find("## What to look at next").unwrap();
    let said = stake.find("Total GPU Ops").unwrap();
    assert!(
        sure < said && said < stake.find("## Run facts").unwrap(),
        "{stake}"
    );
    assert!(!stake[next..].contains("Total GPU Ops"), "{stake}");
}

/// A broken NVIDIA summary (hand-made, for the path) costs the comparison alone: the report is
/// written, without the finding, and a warning names the file.
#[test]
fn a_broken_nvidia_summary_costs_the_comparison_alone() {
    let d = dir("eager");
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join("proj.csv");
    std::fs::write(&proj, "Range,Range Instances\n:decode,not a number\n").unwrap();
    let sb = tempfile::tempdir().unwrap();
    let (run, out) = with_nvidia(
        sb.path(),
        &d,
        &proj,
        &d.join("nvidia/run_nvtx_kern_sum.csv"),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("NVIDIA's summaries") && err.contains("run_nvtx_gpu_proj_sum.csv"),
        "{err}"
    );
    let s = std::fs::read_to_string(run.join("summary.json")).unwrap();
    assert!(!s.contains("nvidia_summaries"));
}

/// ncu's values against NVIDIA's `--print-summary per-kernel` of the same report: every
/// committed sample with that summary agrees (a fact); one value changed (hand-made, for the
/// path) is a caveat naming the kernel, the metric and both values.
#[test]
fn the_reports_compare_their_ncu_values_with_nvidias_summary() {
    for variant in SAME.iter().filter(|v| v.starts_with("sample-run")) {
        let s: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir(variant).join("summary.json")).unwrap(),
        )
        .unwrap();
        let f = s["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["kind"] == "nvidia_ncu_summary")
            .unwrap_or_else(|| panic!("{variant}: no nvidia_ncu_summary"));
        assert_eq!(f["role"], "fact", "{variant}: {f}");
        let compared = f["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["quantity"] == "nvidia_figures_compared")
            .unwrap();
        assert!(
            compared["value"].as_f64().unwrap() >= 39.0,
            "{variant}: {f}"
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let from = dir("sample-run-hf-eager");
    for sub in ["", "nsys", "ncu", "nvidia"] {
        std::fs::create_dir_all(run.join(sub)).unwrap();
        for e in std::fs::read_dir(from.join(sub)).unwrap().flatten() {
            if e.path().is_file() {
                std::fs::copy(e.path(), run.join(sub).join(e.file_name())).unwrap();
            }
        }
    }
    let summary = run.join("nvidia/decode_print_summary.csv");
    let text = std::fs::read_to_string(&summary).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let i = lines
        .iter()
        .position(|l| l.contains("\"gpu__time_duration.sum\""))
        .unwrap();
    // The Average column is the last: one more microsecond than NVIDIA printed.
    let (head, avg) = lines[i].rsplit_once(',').unwrap();
    let theirs: f64 = avg.trim_matches('"').parse::<f64>().unwrap() + 1.0;
    lines[i] = format!("{head},\"{theirs:.2}\"");
    std::fs::write(&summary, lines.join("\n") + "\n").unwrap();
    let out = report(&run);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let f = s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "nvidia_ncu_summary")
        .unwrap();
    assert_eq!(f["role"], "caveat", "{f}");
    assert_eq!(f["differ"].as_array().unwrap().len(), 1, "{f}");
    assert_eq!(f["differ"][0]["metric"], "gpu__time_duration.sum");
    let stake = std::fs::read_to_string(run.join("stakeholder_summary.md")).unwrap();
    assert!(
        stake.contains("gpu__time_duration.sum") && stake.contains("in NVIDIA's"),
        "{stake}"
    );
}
