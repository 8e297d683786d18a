//! `--baseline`: the workload once more with no profiler, stage2's hook timing the NVTX ranges
//! it opens, and the reports stating what the measurement added to each range. The fake nsys
//! replays a real capture; the workload here opens `decode` through a stand-in for
//! torch.cuda.nvtx (the real module's functions, without a GPU).

mod common;

use common::{read, status, Sandbox, DECODE};

/// A `torch` package with `torch.cuda.nvtx` as PyTorch defines it (push/pop, start/end, the
/// `range` context manager through the module's push/pop), beside a workload that opens
/// `decode` four times.
fn workload(sb: &Sandbox) -> String {
    let dir = sb.path().join("wl");
    std::fs::create_dir_all(dir.join("torch/cuda")).unwrap();
    std::fs::write(dir.join("torch/__init__.py"), "").unwrap();
    std::fs::write(dir.join("torch/cuda/__init__.py"), "").unwrap();
    std::fs::write(
        dir.join("torch/cuda/nvtx.py"),
        "from contextlib import contextmanager\n\
         def range_push(msg): return 0\n\
         def range_pop(): return 0\n\
         def range_start(msg): return 7\n\
         def range_end(range_id): pass\n\
         @contextmanager\n\
         def range(msg):\n    range_push(msg)\n    try:\n        yield\n    finally:\n        range_pop()\n",
    )
    .unwrap();
    let script = dir.join("serve.py");
    std::fs::write(
        &script,
        "import time\nimport torch.cuda.nvtx as nvtx\n\
         for i in range(3):\n    nvtx.range_push('decode')\n    time.sleep(0.02)\n    nvtx.range_pop()\n\
         with nvtx.range('decode'):\n    time.sleep(0.02)\n\
         r = nvtx.range_start('window')\ntime.sleep(0.01)\nnvtx.range_end(r)\n",
    )
    .unwrap();
    script.display().to_string()
}

/// The baseline's range files of a run (one per process that timed a range).
fn range_files(run: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(run.join("baseline"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("ranges.")
        })
        .collect()
}

#[test]
fn the_baseline_pass_times_the_ranges_and_the_reports_state_what_nsys_added() {
    let sb = Sandbox::new();
    let script = workload(&sb);
    sb.profile_of(
        "b",
        &[DECODE, &["--no-ncu", "--baseline"]].concat(),
        &["python3", &script],
    )
    .assert()
    .success();
    let run = sb.run("b");
    let st = status(&run);
    assert_eq!(st["passes"]["baseline"]["state"], "ok", "{st}");
    // The pass's command is the bare workload, with the hook's variable.
    let cmd = read(run.join("baseline/cmd.txt"));
    assert!(cmd.contains("serve.py") && !cmd.contains("nsys"), "{cmd}");
    // The line pasted times the ranges as the pass did, into the run's baseline/.
    let want = format!("STAGE2_RANGE_TIMES={}", run.join("baseline").display());
    assert!(cmd.contains(&want), "{cmd}");
    let files = range_files(&run);
    assert_eq!(files.len(), 1);
    let timed = read(&files[0]);
    assert_eq!(
        timed.lines().filter(|l| l.starts_with("decode\t")).count(),
        4,
        "{timed}"
    );
    assert_eq!(
        timed.lines().filter(|l| l.starts_with("window\t")).count(),
        1,
        "{timed}"
    );
    let md = read(run.join("kernels.md"));
    assert!(md.contains("## What the measurement added"), "{md}");
    assert!(
        md.contains("Measurement cost in `decode`: under nsys"),
        "{md}"
    );
    assert!(md.contains("without a profiler (baseline pass)"), "{md}");
    let summary: serde_json::Value = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
    let f = summary["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "measurement_cost")
        .expect("a measurement_cost finding");
    let baseline = f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["quantity"] == "baseline_ms_per_instance")
        .unwrap();
    let ms = baseline["value"].as_f64().unwrap();
    assert!((19.0..200.0).contains(&ms), "{baseline}");
    assert!(baseline["source"]
        .as_str()
        .unwrap()
        .starts_with("baseline/ranges."));
}

#[test]
fn without_the_flag_there_is_no_baseline_pass() {
    let sb = Sandbox::new();
    let script = workload(&sb);
    sb.profile_of(
        "n",
        &[DECODE, &["--no-ncu"]].concat(),
        &["python3", &script],
    )
    .assert()
    .success();
    let run = sb.run("n");
    assert!(status(&run)["passes"]["baseline"].is_null());
    assert!(!run.join("baseline").exists());
    assert!(!read(run.join("kernels.md")).contains("What the measurement added"));
}

/// The real H100 capture (tests/data/hf/shapes: qwen2 decode, every launch configuration
/// measured, a baseline pass): the reports state both, from this run's figures.
#[test]
fn a_real_capture_states_the_shapes_measured_and_what_nsys_added() {
    let sb = Sandbox::new();
    let run = sb.path().join("shapes");
    common::copy_dir(&common::root().join("tests/data/hf/shapes"), &run);
    sb.stage2().arg("report").arg(&run).assert().success();
    let md = read(run.join("kernels.md"));
    assert!(
        md.contains("the grids and blocks ncu measured hold 100.0% of the measured kernels' time")
            && md.contains("7 kernels measured in several have their figures weighed"),
        "{md}"
    );
    assert!(
        md.contains("under nsys 13.12 ms per instance; without a profiler (the baseline pass, 15 instances) 7.79 ms; the measurement added +68.4%"),
        "{md}"
    );
    // The headline leads with the time without a profiler, the one under nsys beside it.
    let stake = read(run.join("stakeholder_summary.md"));
    assert!(
        stake.contains("Per instance[^")
            && stake.contains("`decode` takes 7.79 ms per instance without a profiler (the baseline pass); under nsys it takes 13.12 ms per instance")
            && !stake.contains("timed under nsys"),
        "{stake}"
    );
    // The figure under nsys is nsys's own: `nsys stats` nvtx_sum's Avg of the same report.
    let summary: serde_json::Value = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
    let under_nsys = summary["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "measurement_cost")
        .flat_map(|f| f["evidence"].as_array().unwrap().iter())
        .find(|e| e["quantity"] == "nsys_ms_per_instance")
        .unwrap()["value"]
        .as_f64()
        .unwrap();
    let nvtx_sum = read(run.join("nsys/summary_nvtx_sum.csv"));
    let avg: f64 = nvtx_sum
        .lines()
        .find(|l| l.ends_with(",:decode"))
        .unwrap()
        .split(',')
        .nth(3)
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (under_nsys * 1e6 - avg).abs() < 1.0,
        "{under_nsys} ms vs nvtx_sum {avg} ns"
    );
}

/// A STAGE2_RANGE_TIMES left in the user's shell reaches no pass: the hook writes range files
/// only where the baseline pass points it, inside the run directory.
#[test]
fn an_inherited_range_times_variable_writes_nothing_outside_the_run() {
    let sb = Sandbox::new();
    let outside = sb.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let script = workload(&sb);
    sb.profile_of(
        "inh",
        &[DECODE, &["--no-ncu", "--baseline"]].concat(),
        &["python3", &script],
    )
    .env("STAGE2_RANGE_TIMES", &outside)
    .assert()
    .success();
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert_eq!(range_files(&sb.run("inh")).len(), 1);
}

/// A baseline pass that sees no ranges (a workload whose ranges the hook cannot time) leaves
/// the profile whole: exit 0, a warning, and `stage2 diff` still takes the run.
#[test]
fn a_baseline_with_no_ranges_leaves_the_run_ok() {
    let sb = Sandbox::new();
    sb.profile_of(
        "none",
        &[DECODE, &["--no-ncu", "--baseline"]].concat(),
        &["python3", "-S", "-c", "print(1)"],
    )
    .assert()
    .success();
    let st = status(&sb.run("none"));
    assert_eq!(st["state"], "ok", "{st}");
    assert_eq!(st["passes"]["baseline"]["state"], "ok");
    assert!(st["passes"]["baseline"]["warnings"]
        .to_string()
        .contains("opened no NVTX range the hook could time"));
    let none = sb.run("none");
    sb.stage2()
        .arg("diff")
        .arg(&none)
        .arg(&none)
        .assert()
        .success();
}

/// Range names reach the baseline's range files redacted like every log: URL credentials and
/// a secret-named assignment cut, the times kept.
#[test]
fn range_names_in_the_baseline_files_are_redacted() {
    let sb = Sandbox::new();
    workload(&sb);
    let script = sb.path().join("wl/leak.py");
    std::fs::write(
        &script,
        "import torch.cuda.nvtx as nvtx\n\
         nvtx.range_push('decode')\nnvtx.range_pop()\n\
         nvtx.range_push('fetch https://user:hunter2@example.com/x API_KEY=sk12345')\nnvtx.range_pop()\n",
    )
    .unwrap();
    sb.profile_of(
        "leak",
        &[DECODE, &["--no-ncu", "--baseline"]].concat(),
        &["python3", script.to_str().unwrap()],
    )
    .assert()
    .success();
    let files = range_files(&sb.run("leak"));
    assert_eq!(files.len(), 1);
    let text = read(&files[0]);
    assert!(
        !text.contains("hunter2") && !text.contains("sk12345"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.lines().all(|l| l.split('\t').count() == 4), "{text}");
}

/// The hook itself, as the baseline pass runs it: `python3 -c CODE` with the hook and the
/// stand-in torch on PYTHONPATH, timing into `dir`. Returns the range names per file.
fn hooked(sb: &Sandbox, code: &str) -> Vec<Vec<String>> {
    workload(sb);
    let dir = sb.path().join("times");
    std::fs::create_dir_all(&dir).unwrap();
    let hook = common::root().join("src/passes/workload/hook");
    let path = format!("{}:{}", hook.display(), sb.path().join("wl").display());
    let _ = std::process::Command::new("python3")
        .args(["-c", code])
        .env("PYTHONPATH", path)
        .env("STAGE2_RANGE_TIMES", &dir)
        .output()
        .unwrap();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| {
            read(p)
                .lines()
                .map(|l| l.split('\t').next().unwrap().to_string())
                .collect()
        })
        .collect()
}

/// Every range is on disk as it closes: a forked child writes its own file and no parent line
/// twice; os._exit() and a SIGTERM lose nothing already closed.
#[test]
fn the_hook_writes_each_range_as_it_closes() {
    let fork = "import os, torch.cuda.nvtx as n\n\
                n.range_push('a'); n.range_pop()\n\
                pid = os.fork()\n\
                if pid == 0:\n    n.range_push('b'); n.range_pop(); os._exit(0)\n\
                os.waitpid(pid, 0)\n\
                n.range_push('c'); n.range_pop()\n";
    let mut files = hooked(&Sandbox::new(), fork);
    files.sort();
    assert_eq!(
        files,
        vec![
            vec!["a".to_string(), "c".to_string()],
            vec!["b".to_string()]
        ]
    );
    let exit = "import os, torch.cuda.nvtx as n\nfor x in 'de':\n    n.range_push(x); n.range_pop()\nos._exit(3)\n";
    assert_eq!(
        hooked(&Sandbox::new(), exit),
        vec![vec!["d".to_string(), "e".to_string()]]
    );
    let term = "import os, signal, torch.cuda.nvtx as n\nn.range_push('f'); n.range_pop()\nos.kill(os.getpid(), signal.SIGTERM)\n";
    assert_eq!(hooked(&Sandbox::new(), term), vec![vec!["f".to_string()]]);
}

/// The real baseline of tests/data/hf/shapes with every span made 0 ns (hand-made): no
/// measurement cost, and stderr says why instead of dropping it silently.
#[test]
fn a_baseline_of_zero_spans_is_said_not_dropped() {
    let sb = Sandbox::new();
    let run = sb.copy_of("tests/data/hf/shapes", "zero");
    let f = run.join("baseline/ranges.1587.txt");
    let zeroed: String = read(&f)
        .lines()
        .map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            format!("{}\t{}\t{}\t{}\n", c[0], c[1], c[1], c[3])
        })
        .collect();
    std::fs::write(&f, zeroed).unwrap();
    let out = sb.stage2().arg("report").arg(&run).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("at 0 ns each: no measurement cost is given"),
        "{err}"
    );
}

/// A workload that starts its own session (`os.setsid()`, as servers that daemonize do) runs in
/// the baseline pass as under the profilers: it is not the leader of a process group there.
#[test]
fn a_workload_that_calls_setsid_runs_in_the_baseline_too() {
    let sb = Sandbox::new();
    sb.profile_of(
        "sid",
        &[DECODE, &["--no-ncu", "--baseline"]].concat(),
        &[
            "python3",
            "-c",
            "import os; os.setsid(); print('own session')",
        ],
    )
    .assert()
    .success();
    let run = sb.run("sid");
    let st = status(&run);
    assert_eq!(st["passes"]["baseline"]["state"], "ok", "{st}");
    assert!(read(run.join("baseline/workload.log")).contains("own session"));
}
