//! The committed sample run (real artifacts of a GPU run) re-renders exactly as committed.

mod common;

use common::{copy_dir, read, root, Sandbox};

const REPORTS: &[&str] = &[
    "kernels.md",
    "stakeholder_summary.md",
    "kernels.csv",
    "summary.json",
    "roofline.svg",
];

#[test]
fn stage2_report_re_renders_the_sample_run_identically() {
    re_renders_identically("sample-run");
}

#[test]
fn stage2_report_re_renders_the_two_gpu_sample_run_identically() {
    re_renders_identically("sample-run-2gpu");
}

#[test]
fn stage2_report_re_renders_the_tensor_parallel_sample_run_identically() {
    re_renders_identically("sample-run-2gpu-tp");
}

#[test]
fn stage2_report_re_renders_the_transformers_generate_sample_runs_identically() {
    // Eager, static KV cache with CUDA graphs in decode, and the ~1.1B compute-bound prefill.
    for name in [
        "sample-run-hf-eager",
        "sample-run-hf-static",
        "sample-run-hf-large",
        "sample-run-hf-moe",
        "sample-run-hf-auto",
        "sample-run-hf-window",
        "sample-run-hf-prefill",
        "sample-run-hf-second-gpu",
    ] {
        re_renders_identically(name);
    }
}

/// The real two-GPU run (`ncu.second_gpu` on 2 H200): both reports say which GPU ran which
/// pass, from its status.json.
#[test]
fn the_two_gpu_sample_says_the_passes_ran_at_once() {
    let d = root().join("examples/sample-run-hf-second-gpu");
    let st: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("status.json")).unwrap()).unwrap();
    let g = &st["passes"]["ncu"]["ncu"]["second_gpu"];
    assert_eq!(
        (g["nsys"].as_str(), g["ncu"].as_str()),
        (Some("0"), Some("1"))
    );
    let note = "the ncu pass ran on GPU 1 while the nsys pass ran on GPU 0, both NVIDIA H200";
    for f in ["kernels.md", "stakeholder_summary.md"] {
        let text = std::fs::read_to_string(d.join(f)).unwrap();
        assert!(text.contains(note), "{f}");
    }
    for (pass, gpu) in [("nsys", "0"), ("ncu", "1")] {
        let cmd = std::fs::read_to_string(d.join(pass).join("cmd.txt")).unwrap();
        assert!(
            cmd.starts_with(&format!("env CUDA_VISIBLE_DEVICES={gpu} ")),
            "{pass}: {cmd}"
        );
    }
}

fn summary(name: &str) -> serde_json::Value {
    let p = root().join("examples").join(name).join("summary.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// A plain generate() script (no NVTX of its own) under --auto-nvtx, --python-sampling 200
/// and --operators: phases, tokens, Python evidence and operators all come out of it.
#[test]
fn an_unmarked_generate_script_gets_phases_tokens_samples_and_operators() {
    let s = summary("sample-run-hf-auto");
    let decode = &s["per_token"][0];
    assert_eq!(decode["phase"], "decode");
    // batch 4, one new token per step, 15 steps in the measured generate() call
    assert_eq!(
        (decode["batch"].as_u64(), decode["tokens"].as_u64()),
        (Some(4), Some(60))
    );
    let floor = &decode["floor"];
    assert!(floor["dram_bytes"].as_f64().unwrap() > 1e8, "{floor}");
    let py = &s["python_samples"];
    let in_decode = py["ranges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["range"] == "decode");
    assert!(in_decode.unwrap()["samples"].as_u64().unwrap() > 50, "{py}");
    let ops = s["operators"].as_array().unwrap();
    assert!(ops
        .iter()
        .any(|o| o["op"] == "aten::mm" && o["gpu_ns"].as_i64().unwrap() > 0));
    // Operator ranges are the operators table, not ranges of their own.
    assert!(s["ranges"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| !r["name"].as_str().unwrap().starts_with("aten::")));
}

/// Compute-bound prefill (~1.1B Llama, batch 8 x 1024 tokens) captured with ncu on prefill:
/// tokens from the marks and both floors from ncu's figures.
#[test]
fn prefill_gets_tokens_and_its_compute_floor() {
    let s = summary("sample-run-hf-prefill");
    let p = &s["per_token"][0];
    assert_eq!(
        (p["phase"].as_str(), p["tokens"].as_u64()),
        (Some("prefill"), Some(8192))
    );
    let compute = p["floor"]["pct_of_compute_floor"].as_f64().unwrap();
    assert!(compute > 5.0 && compute < 100.0, "{compute}");
    // GFLOP per prefill: about 2 x parameters x tokens (~1.1B x 8192 tokens).
    let tflop = p["floor"]["flops"].as_f64().unwrap() / 1e12;
    assert!((10.0..25.0).contains(&tflop), "{tflop}");
    // GPU-bound (74% busy) and mostly in compute-bound kernels: stated against the tensor
    // peak, its tensor operations alone (the compute floor above counts every FLOP).
    let peak: Vec<&serde_json::Value> = s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "tensor_peak")
        .collect();
    assert_eq!(peak.len(), 1);
    assert_eq!(peak[0]["compute_bound"], true);
    let pct = peak[0]["evidence"][0]["value"].as_f64().unwrap();
    assert!(pct > 20.0 && pct <= compute, "{pct} {compute}");
    // The large model's captured decode waits on the CPU: no such statement.
    let large = summary("sample-run-hf-large");
    let kinds = large["findings"].as_array().unwrap();
    assert!(kinds.iter().all(|f| f["kind"] != "tensor_peak"));
}

#[test]
fn stage2_report_re_renders_the_repeated_runs_of_the_diff_examples_identically() {
    for name in ["diff/base", "diff/same", "diff/slow"] {
        re_renders_identically(name);
    }
}

fn re_renders_identically(name: &str) {
    let sb = Sandbox::new();
    let committed = root().join("examples").join(name);
    let copy = sb.path().join(name);
    copy_dir(&committed, &copy);
    for f in REPORTS {
        std::fs::remove_file(copy.join(f)).unwrap();
    }
    sb.stage2_without_tools()
        .arg("report")
        .arg(&copy)
        .assert()
        .success();
    for f in REPORTS {
        assert_eq!(
            read(copy.join(f)),
            read(committed.join(f)),
            "{f} differs from the committed one: re-render examples/sample-run"
        );
    }
}

#[test]
fn the_sample_run_matches_its_nsys_csv_exactly() {
    let run = root().join("examples/sample-run");
    let kernels =
        stage2::parse::nsys::read_kernels(&run.join("nsys/summary_cuda_gpu_kern_sum.csv")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
    let top = &summary["kernels"][0];
    assert_eq!(top["name"], kernels[0].name.as_str());
    assert_eq!(top["instances"], kernels[0].instances);
    assert_eq!(top["total_time_ns"].as_f64().unwrap(), kernels[0].total_ns);
}

#[test]
fn a_run_whose_kernels_run_in_cuda_graphs_is_not_told_to_use_cuda_graphs() {
    let run = root().join("examples/sample-run-hf-static");
    let s = std::fs::read_to_string(run.join("stakeholder_summary.md")).unwrap();
    assert!(s.contains("2280 of them from CUDA graphs"), "{s}");
    assert!(!s.contains("to launch work"), "{s}");
    assert!(!s.contains("capture the loop in CUDA graphs"), "{s}");
}

/// A static-KV-cache run profiled with `nsys.cuda_graph_trace=graph` (real H200 capture): the
/// graphs' kernels are not in the report, and the reports say so, read from the export: with
/// its own config, with no config.yaml (an export folder made by hand), and with a config that
/// claims node tracing.
#[test]
fn graph_traced_as_whole_graphs_says_the_graph_kernels_are_invisible() {
    for config in ["as captured", "none", "node"] {
        let sb = Sandbox::new();
        let copy = sb.copy_of("tests/data/hf/static-graphtrace", "g");
        match config {
            "none" => std::fs::remove_file(copy.join("config.yaml")).unwrap(),
            "node" => {
                let c = read(copy.join("config.yaml"));
                std::fs::write(
                    copy.join("config.yaml"),
                    c.replace("cuda_graph_trace: graph", "cuda_graph_trace: node"),
                )
                .unwrap();
            }
            _ => {}
        }
        sb.stage2_without_tools()
            .arg("report")
            .arg(&copy)
            .assert()
            .success();
        let s = read(copy.join("stakeholder_summary.md"));
        assert!(
            s.contains("15 CUDA graph launches") && s.contains("cuda-graph-trace=node"),
            "{config}: {s}"
        );
        assert!(
            !s.contains("launch-bound") && !s.contains("mostly waits on the CPU"),
            "{config}: {s}"
        );
        assert!(
            !s.contains("capture the loop in CUDA graphs"),
            "{config}: {s}"
        );
        assert!(!s.contains("are tiny"), "{config}: {s}");
        let md = read(copy.join("kernels.md"));
        assert!(
            md.contains("Note: CUDA graphs traced as whole graphs in `decode`"),
            "{config}"
        );
        assert!(
            md.contains("no verdict: graph kernels not traced"),
            "{config}"
        );
    }
}

/// A folder of exports with no config.yaml or status.json: the captured ranges are read from
/// the data, and the kernel table equals the one the run's own config gives.
#[test]
fn a_folder_of_exports_without_config_infers_the_captured_ranges() {
    for name in ["sample-run-hf-eager", "sample-run-hf-static", "sample-run"] {
        let sb = Sandbox::new();
        let committed = root().join("examples").join(name);
        let copy = sb.path().join(name);
        copy_dir(&committed, &copy);
        for f in REPORTS.iter().chain(&["config.yaml", "status.json"]) {
            std::fs::remove_file(copy.join(f)).unwrap();
        }
        sb.stage2_without_tools()
            .arg("report")
            .arg(&copy)
            .assert()
            .success()
            .stderr(predicates::str::contains(
                "nsys's captured range taken as `decode`",
            ))
            .stderr(predicates::str::contains("ncu's range taken as `decode`"));
        assert_eq!(
            read(copy.join("kernels.csv")),
            read(committed.join("kernels.csv")),
            "{name}"
        );
    }
}

/// The wall-time ledger of every committed sample: each range's parts add up to its wall time
/// (conservation), and the shipped sample names `attn` as where decode's steps go.
#[test]
fn the_ledger_conserves_wall_time_on_every_sample_and_names_attn() {
    for name in [
        "sample-run",
        "sample-run-2gpu",
        "sample-run-2gpu-tp",
        "sample-run-hf-eager",
        "sample-run-hf-static",
        "sample-run-hf-large",
        "sample-run-hf-moe",
        "diff/base",
    ] {
        let s: serde_json::Value = serde_json::from_str(&read(
            root().join("examples").join(name).join("summary.json"),
        ))
        .unwrap();
        let ledger = s["ledger"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: no ledger"));
        assert!(!ledger.is_empty(), "{name}");
        for l in ledger {
            let t = &l["total"];
            let get = |k: &str| t[k].as_i64().unwrap();
            let parts = get("sync_ns")
                + get("launch_ns")
                + get("other_api_ns")
                + t["compile_ns"].as_i64().unwrap_or(0)
                + get("children_ns")
                + get("rest_ns");
            assert_eq!(parts, get("wall_ns"), "{name}: {}", l["name"]);
            assert_eq!(l["conserved"], true, "{name}: {}", l["name"]);
        }
        // GPU side: kernels running plus idle gaps never exceed the projection (the rest is
        // memcpy/memset only).
        for r in s["ranges"].as_array().unwrap() {
            let Some(idle) = r["gpu_idle"]["idle_ns"].as_i64() else {
                continue;
            };
            let busy = r["gpu_busy_ns"].as_f64().unwrap() as i64;
            let proj = r["gpu_projection_ns"].as_f64().unwrap() as i64;
            assert!(busy + idle <= proj, "{name}: {}", r["name"]);
        }
    }
    let md = read(root().join("examples/sample-run/kernels.md"));
    assert!(
        md.contains("| step | 8 | 659.05 |") && md.contains("child range attn (81.4%)"),
        "{md}"
    );
}

/// The same static-cache workload captured by hand with nsys's defaults (graph-level trace,
/// gated on `decode`, H100) and exported as a folder with no config.yaml: the reports say the
/// 15 graph launches' kernels are not traced, and the range figures are NVIDIA's own
/// (`nvtx_sum`, `nvtx_gpu_proj_sum` of the same report, in the folder).
#[test]
fn a_hand_made_default_capture_of_cuda_graphs_is_read_from_the_data() {
    let sb = Sandbox::new();
    let copy = sb.copy_of("tests/data/hf/static-default-trace", "g");
    sb.stage2_without_tools()
        .arg("report")
        .arg(&copy)
        .assert()
        .success();
    let s = read(copy.join("stakeholder_summary.md"));
    assert!(
        s.contains("its 15 CUDA graph launches ran kernels nsys traced only as whole graphs"),
        "{s}"
    );
    assert!(s.contains("`nsys profile --cuda-graph-trace=node`"), "{s}");
    assert!(!s.contains("mostly waits on the CPU"), "{s}");
    let summary: serde_json::Value =
        serde_json::from_str(&read(copy.join("summary.json"))).unwrap();
    let decode = summary["ranges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "decode")
        .unwrap();
    // NVIDIA: nvtx_sum 9179749 ns over 15 instances; nvtx_gpu_proj_sum 457415 ns.
    assert_eq!(decode["instances"], 15);
    assert_eq!(decode["total_ns"].as_f64(), Some(9_179_749.0));
    assert_eq!(decode["gpu_projection_ns"].as_f64(), Some(457_415.0));
    let nvidia = read(copy.join("nsys/summary_nvtx_gpu_proj_sum.csv"));
    assert!(nvidia.contains(":decode,PushPop,457415,9179749,15,"));
}

/// A floor's share is said of the time it was computed over: in the CUDA-graph decode the GPU
/// work (0.72 ms per step) outlasts the CPU range (0.45 ms), and 7.6% is of the former.
#[test]
fn the_floor_share_names_the_time_it_is_a_share_of() {
    let stake = read(root().join("examples/sample-run-hf-static/stakeholder_summary.md"));
    assert!(
        stake.contains("`decode` takes 0.45 ms per instance on average, in a loop that starts one every 1.35 ms, the time per step that counts; its memory-bandwidth floor (the DRAM bytes of the kernels ncu measured, 95.5% of its kernel time, at peak bandwidth) is 7.6% of its 0.72 ms per instance of GPU work"),
        "{stake}"
    );
    assert!(!stake.contains("7.6% of that time"), "{stake}");
    // Where the CPU range is the longer, "that time" is the time just stated.
    let eager = read(root().join("examples/sample-run-hf-eager/stakeholder_summary.md"));
    assert!(
        eager.contains("of that time") || !eager.contains("memory-bandwidth floor"),
        "{eager}"
    );
}

/// Advice follows the kernels' own figures: prefill's GEMMs keep the tensor cores 84-87% busy
/// (no "check they use tensor cores"), and its memory-bound kernel multiplies activations
/// element-wise (no "quantise weights" for it); a decode GEMM bound by its weights keeps it.
#[test]
fn advice_follows_the_tensor_pipe_and_what_the_bytes_are() {
    let prefill = read(root().join("examples/sample-run-hf-prefill/stakeholder_summary.md"));
    assert!(
        prefill.contains("tensor pipe 86.7%")
            && prefill.contains("they already keep the tensor cores busy")
            && !prefill.contains("check they use tensor cores"),
        "{prefill}"
    );
    let mem = prefill
        .lines()
        .find(|l| l.contains("memory-bound (vectorized_elementwise_kernel"))
        .unwrap();
    assert!(
        mem.contains("fuse them with their neighbours") && !mem.contains("quantise weights to cut"),
        "{mem}"
    );
    let eager = read(root().join("examples/sample-run-hf-eager/stakeholder_summary.md"));
    if let Some(l) = eager.lines().find(|l| l.contains("is memory-bound (nvjet")) {
        assert!(l.contains("quantise weights"), "{l}");
    }
}

/// Kernel advice where the GPU waits most of the step is withheld (rule kernel_advice): the
/// eager decode keeps the GPU 15% busy, the CUDA-graph decode 68% of its range but 38% of its
/// loop, which decides. The figures stay in summary.json with the reason.
#[test]
fn kernel_advice_is_withheld_where_the_gpu_mostly_waits() {
    for name in ["sample-run-hf-static", "sample-run-hf-eager"] {
        let stake = read(
            root()
                .join("examples")
                .join(name)
                .join("stakeholder_summary.md"),
        );
        for advice in [
            "are tiny",
            "Tensor cores are barely used",
            "too small to fill",
        ] {
            assert!(!stake.contains(advice), "{name}: {advice}");
        }
        let s = summary(name);
        let tiny = s["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["kind"] == "tiny_kernels")
            .unwrap();
        let why = tiny["abstain"].as_str().unwrap();
        assert!(why.contains("(rule kernel_advice)"), "{name}: {why}");
        assert!(!tiny["evidence"].as_array().unwrap().is_empty());
    }
}

/// The 2-GPU runs' kernel table is the whole capture (both ranks' summaries), but ncu measured
/// `decode`: the classes and tensor advice built on ncu's figures speak of `decode`.
#[test]
fn ncu_based_advice_speaks_of_the_range_ncu_measured() {
    for name in ["sample-run-2gpu", "sample-run-2gpu-tp"] {
        let stake = read(
            root()
                .join("examples")
                .join(name)
                .join("stakeholder_summary.md"),
        );
        // Withheld (the GPU waits on the CPU most of `decode`), but of `decode`.
        assert!(!stake.contains("Tensor cores are barely used"), "{name}");
        let s = summary(name);
        let tensor = s["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["kind"] == "tensor_cores_idle")
            .unwrap();
        assert_eq!(tensor["scope"]["range"], "decode", "{name}");
    }
}

/// RMSNorm's forward runs every step: it is not advised to be moved out of the step.
#[test]
fn model_code_is_not_told_to_leave_the_step() {
    let stake = read(root().join("examples/sample-run-hf-auto/stakeholder_summary.md"));
    let next = stake
        .lines()
        .find(|l| l.contains("Next: look at `Qwen2RMSNorm.forward"))
        .unwrap();
    assert!(
        next.contains("it is the model's own code, run every step")
            && !next.contains("move it out of the step"),
        "{next}"
    );
}

/// The same kernel in nsys's table (4.80 us in the workload) and in ncu's (6.07 us replayed):
/// the second table's columns say they are ncu's replayed launches, not GPU time.
#[test]
fn ncus_own_table_says_its_figures_are_replays() {
    let stake = read(root().join("examples/sample-run-hf-window/stakeholder_summary.md"));
    assert!(
        stake.contains(
            "| # | kernel | share of ncu's profiled time | avg under ncu replay (us) | bound |"
        ) && stake.contains("| 2 | nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT | 10.3% | 4.80 |"),
        "{stake}"
    );
    let md = read(root().join("examples/sample-run-hf-window/kernels.md"));
    assert!(
        md.contains("their durations are ncu's replays of one launch at a time"),
        "{md}"
    );
}

/// One kernel reads the same in every table of a run: the tag of a display name two kernels
/// share is in the kernel table, the per-rank table, the roofline, the manager's summary and
/// the CSV alike.
#[test]
fn a_kernel_reads_the_same_in_every_table() {
    let dir = root().join("examples/sample-run-2gpu-tp");
    let md = read(dir.join("kernels.md"));
    let stake = read(dir.join("stakeholder_summary.md"));
    let csv = read(dir.join("kernels.csv"));
    for tagged in [
        "elementwise_kernel \\[MulFunctor\\] ~ee728c",
        "elementwise_kernel \\[MulFunctor\\] ~367f09",
    ] {
        assert!(md.matches(tagged).count() >= 3, "{tagged}\n{md}");
    }
    assert!(
        stake.contains("elementwise_kernel \\[MulFunctor\\] ~ee728c"),
        "{stake}"
    );
    assert!(
        !md.contains("| elementwise_kernel \\[MulFunctor\\] |"),
        "{md}"
    );
    assert!(
        csv.contains(",elementwise_kernel [MulFunctor] ~ee728c,"),
        "{csv}"
    );
}

/// The headline's sentence is "Per token" only where the run has token marks to give a
/// per-token figure; without them it is per instance.
#[test]
fn per_token_is_said_only_with_a_per_token_figure() {
    let eager = read(root().join("examples/sample-run-hf-eager/stakeholder_summary.md"));
    assert!(
        eager.contains("Per instance, timed under nsys") && !eager.contains("Per token, timed"),
        "{eager}"
    );
    let auto = read(root().join("examples/sample-run-hf-auto/stakeholder_summary.md"));
    assert!(
        auto.contains("Per token, timed under nsys") && auto.contains("ms per token"),
        "{auto}"
    );
}

/// With more ranges than `report.max_ranges`, kernels.md's range tables and summary.json list
/// the ranges with the most range time and say how many are left out; ranges.csv has every
/// range, with the same figures.
#[test]
fn range_tables_list_the_longest_ranges_and_say_what_is_left_out() {
    let sb = Sandbox::new();
    let copy = sb.copy_of("examples/sample-run", "r");
    let config = read(copy.join("config.yaml")).replace("report:\n", "report:\n  max_ranges: 2\n");
    std::fs::write(copy.join("config.yaml"), config).unwrap();
    sb.stage2_without_tools()
        .arg("report")
        .arg(&copy)
        .assert()
        .success();
    let mut csv = csv::Reader::from_path(copy.join("ranges.csv")).unwrap();
    let head = csv.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
    assert!(rows.len() > 2, "{}", rows.len());
    // The two with the most range time (the longer of CPU wall and GPU projection).
    let num = |r: &csv::StringRecord, c: &str| r[col(c)].parse::<f64>().unwrap();
    let mut by_time: Vec<(f64, String)> = rows
        .iter()
        .map(|r| {
            let t = num(r, "wall_ns").max(num(r, "gpu_projection_ns"));
            (t, r[col("name")].to_string())
        })
        .collect();
    by_time.sort_by(|a, b| b.0.total_cmp(&a.0));
    let listed: Vec<&str> = rows
        .iter()
        .filter(|r| &r[col("listed")] == "true")
        .map(|r| &r[col("name")])
        .collect();
    assert_eq!(listed.len(), 2, "{listed:?}");
    let summary: serde_json::Value =
        serde_json::from_str(&read(copy.join("summary.json"))).unwrap();
    let ranges = summary["ranges"].as_array().unwrap();
    let in_json: Vec<&str> = ranges.iter().map(|r| r["name"].as_str().unwrap()).collect();
    let md = read(copy.join("kernels.md"));
    let table = &md[md.find("## Per NVTX range").unwrap()..md.find("## Per instance").unwrap()];
    let table_rows: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| range "))
        .collect();
    assert_eq!(table_rows.len(), 2, "{table}");
    for (_, name) in &by_time[..2] {
        assert!(
            table_rows
                .iter()
                .any(|r| r.starts_with(&format!("| {name} |"))),
            "{name}: {table}"
        );
        assert!(listed.contains(&name.as_str()) && in_json.contains(&name.as_str()));
    }
    assert_eq!(in_json.len(), 2, "{in_json:?}");
    // The listed ranges' figures in summary.json are ranges.csv's.
    for r in ranges {
        let row = rows
            .iter()
            .find(|x| x[col("name")] == *r["name"].as_str().unwrap())
            .unwrap();
        assert_eq!(r["total_ns"].as_f64().unwrap(), num(row, "wall_ns"));
        assert_eq!(r["kernel_ns"].as_f64().unwrap(), num(row, "kernel_ns"));
    }
    let left = rows.len() - 2;
    assert_eq!(summary["ranges_left_out"]["ranges"], left);
    assert_eq!(summary["ranges_left_out"]["file"], "ranges.csv");
    assert!(summary["ledger"].as_array().unwrap().len() <= 2);
    let verdicts = summary["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "range_verdict")
        .count();
    assert_eq!(verdicts, 2);
    let line = format!("{left} more range");
    assert!(table.contains(&line), "{table}");
    assert!(
        table.contains("and those the passes captured: `report.max_ranges`, 0 lists every range); ranges.csv has every range."),
        "{table}"
    );
    assert!(
        md.contains("left out of this table and of summary.json"),
        "{md}"
    );
}

/// Without the SQLite export, ranges.csv has nsys's `nvtx_sum` rows: each range's instances
/// and total time as nsys printed them, the export's columns empty.
#[test]
fn ranges_csv_without_the_export_is_nvtx_sum() {
    let sb = Sandbox::new();
    let copy = sb.copy_of("examples/sample-run", "r");
    std::fs::remove_file(copy.join("nsys/run.sqlite")).unwrap();
    sb.stage2_without_tools()
        .arg("report")
        .arg(&copy)
        .assert()
        .success();
    let mut nvtx = csv::Reader::from_path(copy.join("nsys/summary_nvtx_sum.csv")).unwrap();
    let want: Vec<(String, String, String)> = nvtx
        .records()
        .map(Result::unwrap)
        .map(|r| {
            (
                r[9].trim_start_matches(':').to_string(),
                r[2].to_string(),
                r[1].to_string(),
            )
        })
        .collect();
    let mut csv = csv::Reader::from_path(copy.join("ranges.csv")).unwrap();
    let got: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
    assert_eq!(got.len(), want.len());
    for (r, (name, instances, total)) in got.iter().zip(&want) {
        assert_eq!(
            (&r[0], &r[2], &r[3]),
            (name.as_str(), instances.as_str(), total.as_str())
        );
        assert_eq!(&r[5], "", "no kernel time without the export");
    }
}

/// Where ncu profiled another range than nsys captured (nsys `prefill`, ncu `decode`), its
/// coverage is of that range's kernel time: the kernels it measured (by mangled name), their
/// launches inside `decode` instances on the launching thread, over all of decode's kernel
/// time, computed here straight from the export and ncu's mangled-name CSV.
#[test]
fn ncu_coverage_of_another_range_is_of_that_range() {
    let run = root().join("examples/sample-run-hf-second-gpu");
    let db = rusqlite::Connection::open(run.join("nsys/run.sqlite")).unwrap();
    let ranges: Vec<(i64, i64, i64)> = db
        .prepare(
            "SELECT start, end, globalTid FROM NVTX_EVENTS WHERE eventType = 59 \
             AND COALESCE(text, (SELECT value FROM StringIds WHERE id = textId)) = 'decode'",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let launches: Vec<(i64, i64, i64, String)> = db
        .prepare(
            "SELECT r.start, r.globalTid, k.end - k.start, s.value \
             FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r \
             ON r.correlationId = k.correlationId AND r.globalTid >> 24 = k.globalPid >> 24 \
             JOIN StringIds s ON s.id = k.mangledName",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut ncu = csv::Reader::from_path(run.join("ncu/decode_raw_mangled.csv")).unwrap();
    let col = ncu
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "Kernel Name")
        .unwrap();
    let measured: std::collections::HashSet<String> =
        ncu.records().map(|r| r.unwrap()[col].to_string()).collect();
    let (mut all, mut hit) = (0i64, 0i64);
    for (start, tid, ns, mangled) in &launches {
        if ranges
            .iter()
            .any(|(a, b, t)| a <= start && start <= b && t == tid)
        {
            all += ns;
            hit += if measured.contains(mangled) { *ns } else { 0 };
        }
    }
    let want = 100.0 * hit as f64 / all as f64;
    let summary: serde_json::Value = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
    let got = summary["totals"]["ncu_coverage_pct"].as_f64().unwrap();
    assert!((got - want).abs() < 0.01, "{got} vs {want}");
    let md = read(run.join("kernels.md"));
    assert!(
        md.contains(
            "Hardware counters (ncu) measured for 31 kernels in `decode`: 97.5% of the kernel time"
        ),
        "{md}"
    );
    // The kernel table is prefill's: no list of its kernels as "left out" of decode's pass.
    assert!(!md.contains("## Left out of the ncu pass"), "{md}");
}

/// A tiny-LLM loop whose KV length grows every step (H100, cuDNN's SDPA): each new length
/// costs a 39-75 ms CPU gap ending in `cuLibraryLoadData`, then the first launch of a cuDNN
/// attention kernel. The verdict names that compilation, the kernels it was for and the
/// cuDNN lever, not Python.
#[test]
fn per_shape_compilation_is_named_with_what_it_built() {
    let s = summary("sample-run");
    let idle = s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "gpu_idle" && f["scope"]["range"] == "decode")
        .unwrap();
    assert_eq!(idle["verdict"], "compile-bound", "{idle}");
    let (kernel, loads) = (&idle["compiled_for"][0][0], &idle["compiled_for"][0][1]);
    assert!(
        kernel
            .as_str()
            .unwrap()
            .starts_with("cudnn_generated_fort_native_sdpa"),
        "{idle}"
    );
    assert_eq!(loads, 8);
    let md = read(root().join("examples/sample-run/stakeholder_summary.md"));
    assert!(md.contains("enable_cudnn_sdp(False)"), "{md}");
    assert!(!md.contains("(CPU-bound)"), "{md}");
}

/// A static-cache decode range holds a third of generate()'s step: the loop, timed start to
/// start, decides the verdict; an eager decode range holds most of its loop and keeps its own.
#[test]
fn a_range_that_is_a_fraction_of_its_loop_is_judged_over_the_loop() {
    let loop_of = |name: &str| {
        let s = summary(name);
        let found = s["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["kind"] == "loop")
            .cloned();
        found.unwrap_or_else(|| panic!("{name}: no loop finding"))
    };
    let fig = |f: &serde_json::Value, q: &str| {
        f["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["quantity"] == q)
            .and_then(|e| e["value"].as_f64())
            .unwrap()
    };
    let st = loop_of("sample-run-hf-static");
    assert_eq!(st["decides"], true);
    assert_eq!(st["role"], "verdict");
    assert!((fig(&st, "cycle_ms") - 1.353).abs() < 0.01);
    assert!(fig(&st, "range_share_of_cycle_pct") < 40.0);
    assert_eq!(st["between"][0][0], "own");
    let eager = loop_of("sample-run-hf-eager");
    assert_eq!(eager["decides"], false);
    assert_eq!(eager["role"], "fact");
    assert!(fig(&eager, "range_share_of_cycle_pct") > 90.0);
    // The range table's verdict is the loop's too: not GPU-bound on the range's own 68% busy.
    let verdict = summary("sample-run-hf-static")["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "range_verdict" && f["scope"]["range"] == "decode")
        .map(|f| f["verdict"].clone())
        .unwrap();
    assert_eq!(verdict, "CPU-bound");
    let head = read(root().join("examples/sample-run-hf-static/stakeholder_summary.md"));
    assert!(head.contains("so the loop, not the range alone, is bound by the CPU thread"));
    assert!(head.contains("in a loop that starts one every 1.35 ms"));
}
