//! `ncu.graph_step`: where ncu's range launches CUDA graphs, one instance is measured whole
//! (`ncu --graph-profiling graph`), and its DRAM bytes make the per-instance memory floor. The
//! fake nsys replays the compiled static-cache capture (examples/sample-run-hf-static), the
//! fake ncu the real graph-level profile of the same workload (tests/data/ncu/graph_step_*).

mod common;

use common::{read, root, status, Sandbox};

/// `sb` replaying the compiled static-cache capture, whose decode launches CUDA graphs.
fn compiled(sb: Sandbox) -> Sandbox {
    sb.with_env(
        "FAKE_NSYS_DIR",
        root().join("examples/sample-run-hf-static/nsys"),
    )
}

fn graph_step(st: &serde_json::Value) -> &serde_json::Value {
    &st["passes"]["ncu"]["ncu"]["graph_step"]
}

/// NVIDIA's own reading of the graph-level report: its DRAM read and write, in MB.
fn nvidia_mb() -> f64 {
    let text = read(root().join("tests/data/ncu/graph_step_summary.txt"));
    text.lines()
        .filter(|l| l.contains("dram__bytes_read.sum") || l.contains("dram__bytes_write.sum"))
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(cols[1], "Mbyte", "{l}");
            cols.last().unwrap().parse::<f64>().unwrap()
        })
        .sum()
}

#[test]
fn a_range_of_graph_launches_gets_one_instance_measured_whole() {
    let sb = compiled(Sandbox::with_gpu());
    let st = sb.profiled("g", &[]);
    let g = graph_step(&st);
    assert_eq!(g["state"], "measured", "{g}");
    // The export's first decode instance is a graph launch; the second is measured.
    assert_eq!(
        (g["instance"].as_u64(), g["skip"].as_u64()),
        (Some(2), Some(1))
    );
    let calls = sb.calls();
    let step = calls
        .lines()
        .find(|l| l.contains("--graph-profiling graph"))
        .expect("a graph-level ncu run");
    assert!(
        step.contains("--nvtx-include decode/ --graph-profiling graph --range-filter ::2 --launch-count 1 --kill on"),
        "{step}"
    );
    // The step's own copy was held from the kernel pass's start, on ports of its own, and
    // the step attached to it; cmd.txt holds both lines.
    assert!(
        step.starts_with("ncu --mode=attach --hostname 127.0.0.1 --port "),
        "{step}"
    );
    let launches = sb.calls_starting("ncu --mode=launch");
    assert_eq!(launches.len(), 2, "{calls}");
    let port = |l: &str| {
        l.split(" --port ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .to_string()
    };
    assert_ne!(port(&launches[0]), port(&launches[1]));
    assert_eq!(port(step), port(&launches[1]));
    let cmd = read(sb.run("g").join("ncu/cmd.txt"));
    let step_lines: Vec<&str> = cmd.lines().skip(5).collect();
    assert!(step_lines[0].contains("--mode=launch"), "{cmd}");
    assert!(
        step_lines[1].contains("--mode=attach")
            && step_lines[1].contains("--graph-profiling graph"),
        "{cmd}"
    );
    assert!(sb.run("g").join("ncu/graph-step-workload.log").is_file());
    // The floor's bytes are NVIDIA's own figure for the instance, as the reports state it.
    let summary: serde_json::Value =
        serde_json::from_str(&read(sb.run("g").join("summary.json"))).unwrap();
    let mb = summary["findings"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["evidence"].as_array().cloned().unwrap_or_default())
        .find(|e| e["quantity"] == "step_dram_mb")
        .expect("a step_dram_mb figure")["value"]
        .as_f64()
        .unwrap();
    assert!((mb - nvidia_mb()).abs() < 0.01, "{mb} vs {}", nvidia_mb());
    let md = read(sb.run("g").join("kernels.md"));
    assert!(
        md.contains("is instance 2 measured whole by ncu (`--graph-profiling graph`: 1 CUDA graph launch and 0 kernels outside graphs"),
        "{md}"
    );
    assert!(md.contains(": 283.7 MB."), "{md}");
    let headline = read(sb.run("g").join("stakeholder_summary.md"));
    assert!(
        headline.contains("the 283.7 MB of DRAM traffic ncu measured running instance 2 whole: 1 CUDA graph launch at peak bandwidth"),
        "{headline}"
    );
}

#[test]
fn a_re_run_takes_the_measured_instance_from_the_cache() {
    let sb = compiled(Sandbox::with_gpu());
    sb.profiled("a", &[]);
    let before = sb.calls().lines().count();
    let st = sb.profiled("b", &[]);
    let g = graph_step(&st);
    assert_eq!(
        (g["state"].as_str(), g["note"].as_str()),
        (Some("cached"), Some("a"))
    );
    let later: Vec<String> = sb.calls().lines().skip(before).map(String::from).collect();
    assert!(
        !later.iter().any(|l| l.contains("--graph-profiling")),
        "{later:?}"
    );
    assert!(read(sb.run("b").join("kernels.md")).contains(": 283.7 MB."));
}

#[test]
fn no_graph_step_when_turned_off_or_when_the_range_launches_no_graph() {
    let sb = compiled(Sandbox::with_gpu());
    let st = sb.profiled("off", &["ncu.graph_step=off"]);
    assert!(graph_step(&st).is_null(), "{st}");
    // The default replay (an eager decode) launches no graph.
    let eager = Sandbox::new();
    assert!(graph_step(&eager.profiled("eager", &[])).is_null());
    for sb in [&sb, &eager] {
        assert!(!sb.calls().contains("--graph-profiling"));
    }
}

/// A graph-level run that measures nothing costs the figure, not the run: a warning, the
/// record says why, and the floor is the kernels' replays as before.
#[test]
fn a_graph_step_that_measures_nothing_leaves_the_run_ok() {
    let sb = compiled(Sandbox::new());
    let out = sb
        .profile_decode("n", &[])
        .env("FAKE_NCU_MODE", "nograph")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // The fake, as the real ncu, says it profiled nothing: the words say which instance it
    // waited for.
    assert!(
        err.contains("the graph step was not measured: ncu profiled nothing: this run of the workload ended before instance 2 of `decode`"),
        "{err}"
    );
    let st = status(&sb.run("n"));
    assert_eq!(st["passes"]["ncu"]["state"], "ok");
    let g = graph_step(&st);
    assert_eq!(g["state"], "not_measured", "{g}");
    assert!(
        g["note"].as_str().unwrap().contains("ncu/graph-step.log"),
        "{g}"
    );
    let md = read(sb.run("n").join("kernels.md"));
    assert!(!md.contains("measured whole"), "{md}");
    // A broken import of a measured step (hand-made) is said and left out the same way.
    let run = sb.run("g");
    sb.profile_decode("g", &[])
        .env("FAKE_SMI", "1")
        .assert()
        .success();
    std::fs::write(run.join("ncu/decode.graph-step.csv"), "not,a,raw,export\n").unwrap();
    let out = sb.stage2().arg("report").arg(&run).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the instance measured whole is left out"),
        "{err}"
    );
    assert!(!read(run.join("kernels.md")).contains("measured whole"));
}

/// A step whose workload never reaches its instance (seen on an H100: a torch.compile loop's
/// step ran the whole workload under ncu, 310 s, and profiled nothing) is stopped at the ncu
/// budget, as the kernel pass is; the run goes on and says why. The fake keeps the workload
/// running 60 s more under ncu (FAKE_NCU_HOLD), for this path.
#[test]
fn a_graph_step_is_stopped_at_the_ncu_budget() {
    let sb = compiled(Sandbox::new());
    let t0 = std::time::Instant::now();
    let out = sb
        .profile_decode("b", &["ncu.budget_s=3"])
        .env("FAKE_NCU_HOLD", "60")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(t0.elapsed().as_secs() < 40, "{:?}: {err}", t0.elapsed());
    let st = status(&sb.run("b"));
    let g = graph_step(&st);
    assert_eq!(g["state"], "not_measured", "{g}");
    let note = g["note"].as_str().unwrap();
    assert!(
        note.contains("stopped at its time budget of 3 s (ncu.budget_s)"),
        "{note}"
    );
    assert!(g["duration_s"].as_f64().unwrap() < 15.0, "{g}");
    assert_eq!(st["passes"]["ncu"]["state"], "ok");
}

/// The H100 capture of graph_loop.py (tests/data/hf/graph-step): a warm-up of 2 steps (the
/// first records the graphs, 184.9 ms) and 38 steady ones of 0.16 ms. Its graph step measured
/// instance 2, of the warm-up: the floor is set against the mean alone, never the warm-up
/// group's median. With the record moved to instance 3, the steady group's first (hand-made:
/// the bytes stay instance 2's, a step of the same two graphs), the floor is also set against
/// the steady steps' median, in kernels.md's sentence and table and the summary's headline.
#[test]
fn the_floor_of_a_measured_steady_step_is_set_against_its_group() {
    let sb = Sandbox::new();
    let run = sb.copy_of("tests/data/hf/graph-step", "gs");
    let report = || {
        let out = sb.stage2().arg("report").arg(&run).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
    };
    report();
    let md = read(run.join("kernels.md"));
    assert!(md.contains("instance 2 measured whole"), "{md}");
    assert!(
        !md.contains("the kind of instance ncu measured whole"),
        "{md}"
    );
    let path = run.join("status.json");
    let text = read(&path).replace("\"instance\": 2,", "\"instance\": 3,");
    std::fs::write(&path, text).unwrap();
    report();
    let md = read(run.join("kernels.md"));
    let summary = read(run.join("summary.json"));
    let v: serde_json::Value = serde_json::from_str(&summary).unwrap();
    let per_token = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "per_token")
        .unwrap();
    let figure = |group: Option<&str>| {
        per_token["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| {
                e["quantity"] == "memory_floor_of_measured_pct"
                    && e["scope"]["group"].as_str() == group
            })
            .map(|e| e["value"].as_f64().unwrap())
    };
    let (all, steady) = (figure(None).unwrap(), figure(Some("the other 38")).unwrap());
    // The same floor over a 0.16 ms median instead of the mean with the 184.9 ms recording.
    assert!(steady > 5.0 * all, "{all} {steady}");
    let line = md
        .lines()
        .find(|l| l.starts_with("Per instance, its memory-bandwidth floor"))
        .unwrap();
    assert!(
        line.contains(
            "of the median wall time of the other 38 (the kind of instance ncu measured whole)"
        ),
        "{line}"
    );
    let row = md
        .lines()
        .find(|l| l.starts_with("| step — the other 38 (median)"))
        .unwrap();
    assert!(row.contains(&format!("| {steady:.1} |")), "{row}");
    let head = read(run.join("stakeholder_summary.md"));
    assert!(
        head.contains("a median of 0.16 ms (the other 38; its memory-bandwidth floor, the 272.0 MB of DRAM traffic ncu measured running instance 3 whole at peak bandwidth, is"),
        "{head}"
    );
}
