//! What a first call does, and whose ranges are steps, from real captures (H200, nsys 2025.3.1,
//! `scripts/read-through.sh`, nsys only, no GPU metrics):
//! - tests/data/hf/graph-record: `examples/workloads/graph_loop.py --record-in-step`, whose first
//!   `step` warms up and captures two CUDA graphs that every later step replays;
//! - tests/data/hf/cub-ranges: `examples/workloads/topp_loop.py`, a top-p sampling loop whose
//!   sort runs in CUB, which emits `cub::DeviceRadixSort` ranges in its own `CCCL` NVTX domain.

mod common;

use common::{read, root, Sandbox};

fn rendered(data: &str) -> (serde_json::Value, String) {
    let sb = Sandbox::new();
    let run = sb.copy_of(&format!("tests/data/hf/{data}"), data);
    sb.stage2().arg("report").arg(&run).assert().success();
    let summary = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
    (summary, read(run.join("kernels.md")))
}

fn groups_of<'a>(s: &'a serde_json::Value, range: &str) -> Option<&'a serde_json::Value> {
    s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "instance_groups" && f["scope"]["range"] == range)
}

/// The graphs the warm-up group instantiated are NVIDIA's own count of cudaGraphInstantiate
/// calls in the capture (`nsys stats` cuda_api_sum of the same report: every one of them falls
/// in the first step), and the sentence names them.
#[test]
fn a_first_step_that_records_cuda_graphs_says_so_with_nvidias_count() {
    let (s, md) = rendered("graph-record");
    let g = groups_of(&s, "step").expect("step's instances are grouped");
    let count = |q: &str| -> f64 {
        g["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["quantity"] == q)
            .map(|e| e["value"].as_f64().unwrap())
            .sum()
    };
    let api = read(root().join("tests/data/hf/graph-record/nsys/summary_cuda_api_sum.csv"));
    let nvidia = |name: &str| -> f64 {
        api.lines()
            .filter(|l| l.contains(name))
            .map(|l| l.split(',').nth(2).unwrap().parse::<f64>().unwrap())
            .sum()
    };
    assert_eq!(
        count("group_graphs_instantiated"),
        nvidia("GraphInstantiate")
    );
    assert_eq!(count("group_graphs_instantiated"), 2.0);
    assert_eq!(
        count("group_modules_loaded"),
        nvidia("LibraryLoad") + nvidia("ModuleLoad")
    );
    let warm = &g["groups"][0];
    assert_eq!(warm["label"], "the first 2, a warm-up", "{g}");
    assert!(
        md.contains("(the first 2, a warm-up, #1-#2; their CUDA calls: 2 CUDA graphs instantiated (recorded), 16 modules of GPU code loaded"),
        "{md}"
    );
    // Two instances: both walls in start order (the recording first), not their median.
    assert!(
        md.contains("2 at 172.85 ms and 0.33 ms (the first 2, a warm-up"),
        "{md}"
    );
    // The recording step is the range's slowest: NVIDIA's nvtx_sum Max of the same report.
    let nvtx = read(root().join("tests/data/hf/graph-record/nsys/summary_nvtx_sum.csv"));
    let step = nvtx.lines().find(|l| l.ends_with(",:step")).unwrap();
    let max_ns: f64 = step.split(',').nth(6).unwrap().parse().unwrap();
    assert_eq!(format!("{:.2} ms", max_ns / 1e6), "172.85 ms");
}

/// CUB's ranges are in the table as the export has them, but they are not steps: no instance
/// groups of their own; the loop's `step` still has them.
#[test]
fn a_librarys_own_ranges_are_not_grouped_into_kinds() {
    let (s, md) = rendered("cub-ranges");
    assert!(groups_of(&s, "cub::DeviceRadixSort").is_none());
    assert!(groups_of(&s, "step").is_some());
    assert!(
        md.contains("| cub::DeviceRadixSort | PushPop | 64 |"),
        "{md}"
    );
    assert!(
        !md.contains("The instances in `cub::DeviceRadixSort`"),
        "{md}"
    );
    // NVIDIA names it by its domain: the range is CUB's, as the report treats it.
    let nvtx = read(root().join("tests/data/hf/cub-ranges/nsys/summary_nvtx_sum.csv"));
    assert!(nvtx.contains("CCCL:cub::DeviceRadixSort"), "{nvtx}");
}

/// A loop that records its graphs again every 5 steps (tests/data/hf/graph-rerecord:
/// `graph_loop.py --record-in-step --rerecord-every 5`): the 6 graphs instantiated after the
/// warm-up are a verdict, and with the warm-up's 2 they are NVIDIA's count of the calls. The
/// loop that records once (graph-record) has no such verdict.
#[test]
fn graphs_recorded_again_after_the_warm_up_are_a_verdict() {
    let (s, md) = rendered("graph-rerecord");
    let found: Vec<&serde_json::Value> = s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "graphs_rerecorded")
        .collect();
    assert_eq!(found.len(), 1, "{s}");
    let f = found[0];
    assert_eq!(f["scope"]["range"], "step");
    assert_eq!(f["scope"]["instances"], 19);
    assert_eq!(f["rule"], "graphs_rerecorded");
    let after = f["evidence"][0]["value"].as_f64().unwrap();
    let api = read(root().join("tests/data/hf/graph-rerecord/nsys/summary_cuda_api_sum.csv"));
    let nvidia: f64 = api
        .lines()
        .filter(|l| l.contains("GraphInstantiate"))
        .map(|l| l.split(',').nth(2).unwrap().parse::<f64>().unwrap())
        .sum();
    assert_eq!((after, nvidia), (6.0, 8.0));
    assert!(
        md.contains("CUDA graphs are recorded again after the warm-up in `step` (19 instances): 6 instantiated there"),
        "{md}"
    );
    let (once, _) = rendered("graph-record");
    assert!(!once.to_string().contains("graphs_rerecorded"));
}

/// The tiny-kernels verdict of a range with a warm-up speaks of its steady instances: their
/// mean kernel and GPU busy (the same busy share as their instance group), not the range's
/// whole time with its first call in it.
#[test]
fn the_tiny_kernels_verdict_leaves_the_warm_up_out() {
    let (s, _) = rendered("cub-ranges");
    let tiny = s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "tiny_kernels")
        .expect("tiny kernels");
    assert_eq!(tiny["scope"]["group"], "the other 31", "{tiny}");
    let busy = |f: &serde_json::Value| {
        f["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| {
                e["quantity"] == "gpu_busy_of_range_pct" && e["scope"]["group"] == "the other 31"
            })
            .map(|e| e["value"].as_f64().unwrap())
    };
    let groups = groups_of(&s, "step").unwrap();
    assert_eq!(busy(tiny), busy(groups));
    assert!(busy(tiny).unwrap() > 20.0, "{tiny}");
}

/// A step loop that replays two CUDA graphs and launches kernels between them: the range's
/// graph launches are NVIDIA's count of cudaGraphLaunch calls (cuda_api_sum of the same report),
/// and its kernels outside the graphs the report's launch calls less those recorded into the
/// graphs (the warm-up's stream capture records a launch instead of running it). The finding
/// speaks of the steps after the warm-up, which runs eagerly what later steps replay.
#[test]
fn kernels_launched_beside_cuda_graphs_are_counted_as_nvidia_counts_their_calls() {
    let (s, _) = rendered("graph-record");
    let api = read(root().join("tests/data/hf/graph-record/nsys/summary_cuda_api_sum.csv"));
    let calls = |name: &str| -> f64 {
        api.lines()
            .filter(|l| l.split(',').nth(8) == Some(name))
            .map(|l| l.split(',').nth(2).unwrap().parse::<f64>().unwrap())
            .sum()
    };
    let step = s["ranges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "step")
        .unwrap();
    let whole = |k: &str| step[k].as_f64().unwrap();
    let (launches, in_graphs, instances) = (
        whole("launches"),
        whole("graph_kernels"),
        whole("instances"),
    );
    let graph_launches = calls("cudaGraphLaunch_v10000");
    let recorded = calls("cudaGraphInstantiateWithFlags_v11040") * in_graphs / graph_launches;
    assert_eq!(
        launches - in_graphs,
        calls("cudaLaunchKernel") + calls("cuLaunchKernelEx") - recorded
    );
    let f = s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "kernels_beside_graphs")
        .expect("the finding");
    assert_eq!(
        (&f["scope"]["range"], &f["scope"]["group"]),
        (
            &serde_json::json!("step"),
            &serde_json::json!("the other 18")
        )
    );
    let fig = |q: &str| -> f64 {
        f["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["quantity"] == q)
            .map(|e| e["value"].as_f64().unwrap())
            .unwrap()
    };
    // Every step replays both graphs: 18 steps of the per-step graph kernels.
    assert_eq!(fig("graph_kernels"), 18.0 * in_graphs / instances);
    assert_eq!(
        (fig("kernel_launches"), fig("graph_kernels")),
        (198.0, 144.0)
    );
    // Where every kernel of the range runs from the graphs, nothing is said.
    let sb = Sandbox::new();
    let run = sb.copy_of("examples/sample-run-hf-static", "static");
    sb.stage2().arg("report").arg(&run).assert().success();
    assert!(!read(run.join("summary.json")).contains("kernels_beside_graphs"));
}

/// The instances of `decode` in tests/data/hf/gpu-metrics slow the first steps of a generate()
/// call (15.1-36.8 ms) before they settle near 12.7 ms, longer than a warm-up the groups split
/// off: the trend finding gives each end's median, read here again from the export's own NVTX
/// table, and the instance from which the range settled. None elsewhere: generate-twice's
/// instances are already told apart by the instance groups, graph-record's are flat, CUB's
/// sorts (-40%) are a library's ranges and eager's `decode` (-20%) is neither a phase with
/// token marks nor the captured range (`generate`), so no figure per token speaks of them.
#[test]
fn instances_that_change_time_over_the_run_say_so_with_each_ends_median() {
    let walls = |data: &str| -> Vec<f64> {
        let db = root().join(format!("tests/data/{data}/nsys/run.sqlite"));
        let c = rusqlite::Connection::open(db).unwrap();
        let mut q = c
            .prepare(
                "SELECT e.\"end\" - e.start FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId \
                 WHERE coalesce(e.text, s.value) = 'decode' ORDER BY e.start",
            )
            .unwrap();
        let rows = q.query_map([], |r| r.get::<_, i64>(0)).unwrap();
        rows.map(|r| r.unwrap() as f64).collect()
    };
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        match v.len() % 2 {
            1 => v[v.len() / 2],
            _ => (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0,
        }
    };
    let trend = |s: &serde_json::Value| -> Vec<serde_json::Value> {
        s["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["kind"] == "instance_trend")
            .cloned()
            .collect()
    };
    let (s, md) = rendered("gpu-metrics");
    // Its summary.json, with the trend's coefficient, holds to the schema.
    let schema: serde_json::Value =
        serde_json::from_str(&read(root().join("src/findings/summary.schema.json"))).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&s)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let found = trend(&s);
    assert_eq!(found.len(), 1, "{s}");
    let f = &found[0];
    assert_eq!(f["rule"], "instance_trend");
    assert_eq!(f["role"], "caveat");
    assert_eq!(f["scope"]["range"], "decode");
    assert_eq!(
        (f["early"].clone(), f["late"].clone()),
        (serde_json::json!([1, 5]), serde_json::json!([11, 15]))
    );
    assert_eq!(f["settled_at"], 7);
    let w = walls("hf/gpu-metrics");
    assert_eq!(w.len(), 15);
    let ev: Vec<f64> = f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["value"].as_f64().unwrap())
        .collect();
    assert_eq!(ev[..2], [median(&w[..5]), median(&w[10..])]);
    // Settled at #7: every instance from there is within 20% of the last third's median, #6 not.
    let bound = median(&w[10..]) * 1.2;
    assert!(w[6..].iter().all(|&x| x <= bound) && w[5] > bound, "{w:?}");
    assert!((f["evidence"][2]["value"].as_f64().unwrap() - spearman(&w)).abs() < 1e-9);
    assert!(md.contains("The instances of `decode` change time over the run: of the 15 after any warm-up, the first third (#1-#5) took a median of 23.44 ms and the last third (#11-#15) 12.73 ms (-46%; rank correlation with their order -0.66)"), "{md}");
    assert!(
        md.contains("`report.instances=skip=6` gives #7-#15 a median of their own"),
        "{md}"
    );

    // A jitter is not a trend: mistral-jitter's last third is 33% over its first, by NVIDIA's
    // own list of the instances (nvtx_pushpop_trace), but in the middle the instances jump and
    // come back, and their rank correlation with their order is 0.50.
    let trace = read(root().join("tests/data/hf/mistral-jitter/nvidia/run_nvtx_pushpop_trace.csv"));
    let nvidia: Vec<f64> = trace
        .lines()
        .filter(|l| l.contains(",:decode,") || l.contains(",decode,"))
        .map(|l| l.split(',').nth(2).unwrap().parse::<f64>().unwrap())
        .collect();
    assert_eq!(nvidia.len(), 15);
    let steady = &nvidia[1..];
    let change = median(&steady[10..]) / median(&steady[..4]) - 1.0;
    assert!(change > 0.2, "{change}");
    assert!(
        (spearman(steady) - 0.5).abs() < 0.01,
        "{}",
        spearman(steady)
    );
    let (jitter, _) = rendered("mistral-jitter");
    let g = groups_of(&jitter, "decode").expect("a warm-up");
    assert_eq!(g["groups"][0]["instances"], 1);
    assert!(trend(&jitter).is_empty(), "{jitter}");
    for quiet in ["generate-twice", "graph-record", "cub-ranges", "eager"] {
        let (s, _) = rendered(quiet);
        assert!(trend(&s).is_empty(), "{quiet}: {s}");
    }
}

/// Spearman's coefficient of `v` with its order, ties at their mean rank (written again here
/// from its definition, apart from stage2's).
fn spearman(v: &[f64]) -> f64 {
    let rank = |x: f64| {
        let below = v.iter().filter(|&&y| y < x).count() as f64;
        let equal = v.iter().filter(|&&y| y == x).count() as f64;
        below + (equal - 1.0) / 2.0
    };
    let n = v.len() as f64;
    let r: Vec<f64> = v.iter().map(|&x| rank(x)).collect();
    let m = (n - 1.0) / 2.0;
    let cov: f64 = r
        .iter()
        .enumerate()
        .map(|(i, x)| (i as f64 - m) * (x - m))
        .sum();
    let sx: f64 = (0..v.len()).map(|i| (i as f64 - m).powi(2)).sum();
    let sy: f64 = r.iter().map(|x| (x - m).powi(2)).sum();
    cov / (sx * sy).sqrt()
}
