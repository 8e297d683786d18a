//! nsys's sampled GPU metrics against ncu's counters and NVIDIA's own summaries of the same
//! capture: tests/data/hf/gpu-metrics (H100, nsys and ncu 2025.3.1, eager qwen2 decode,
//! `--gpu-metrics-devices=0 --gpu-metrics-set=gh100 --gpu-metrics-frequency=50000`, ncu one
//! launch of every launch configuration). Its export keeps the samples of the `decode` span
//! only (scripts/gpu-metrics-capture.sh says how it was taken).

mod common;

use common::{read, Sandbox};

fn rendered() -> serde_json::Value {
    let sb = Sandbox::new();
    let run = sb.copy_of("tests/data/hf/gpu-metrics", "gm");
    sb.stage2().arg("report").arg(&run).assert().success();
    serde_json::from_str(&read(run.join("summary.json"))).unwrap()
}

#[test]
fn sampled_dram_agrees_with_ncu_per_launch_configuration() {
    let s = rendered();
    let gm = &s["gpu_metrics"];
    assert_eq!(gm["frequency_hz"].as_f64(), Some(50_000.0));
    let a = &gm["agreement"];
    // Configurations of >= 5% of decode's kernel time at >= 80% coverage.
    assert_eq!(a["compared"].as_u64(), Some(5), "{a}");
    let mean = a["dram_mean_diff_points"].as_f64().unwrap();
    let worst = a["dram_worst_diff_points"].as_f64().unwrap();
    assert!(
        mean <= 6.0,
        "time-weighted mean |sampled - ncu| DRAM {mean} points"
    );
    assert!(worst <= 15.0, "worst {worst} points");
    // Each of them launches for 2.5-5.5 us on average, under the 20 us window: none has a
    // sampled class to hold against ncu's (rules::SAMPLED_WINDOW).
    assert_eq!(a["unclassed"].as_u64(), Some(5), "{a}");
    assert!(a["same_class_pct"].is_null(), "{a}");
    // The one memory-bound configuration, of 27 us launches, is memory-bound by both.
    let rows = gm["beside_ncu"].as_array().unwrap();
    let mem: Vec<_> = rows.iter().filter(|r| r["ncu_bound"] == "memory").collect();
    assert_eq!(mem.len(), 1);
    assert_eq!(mem[0]["sampled_bound"], "memory");
    assert_eq!(mem[0]["grid"], "(2,63,1)");
}

#[test]
fn every_launch_of_the_range_is_sampled_as_nsys_stats_counts_them() {
    // NVIDIA's nvtx_kern_sum of the same report: 5280 kernel instances in `decode`, 12748422
    // ns of kernel time; the samples are attributed to exactly those launches.
    // (nsys stats 2025.3 has no report of GPU metrics to compare the sampled values with.)
    let s = rendered();
    let all = &s["gpu_metrics"]["all_kernels"];
    assert_eq!(all["launches"].as_u64(), Some(5280));
    assert_eq!(all["time_ns"].as_f64(), Some(12_748_422.0));
    assert_eq!(all["coverage_pct"].as_f64(), Some(100.0));
    // And per instance: nvtx_sum's 15 instances of `decode`, 352 launches each (5280 / 15).
    let inst = s["gpu_metrics"]["instances"].as_array().unwrap();
    assert_eq!(inst.len(), 15);
    assert!(inst.iter().all(|i| i["launches"] == 352), "{inst:?}");
    let kernels = s["kernels"].as_array().unwrap();
    // A class where the mean launch fills the 20 us window, else the two figures that say why
    // not (rules::SAMPLED_WINDOW): here one kernel of 27 us launches is classed.
    for k in kernels {
        let f = &k["sampled"];
        let mean = f["time_ns"].as_f64().unwrap() / f["launches"].as_f64().unwrap();
        match f["short"].as_object() {
            Some(short) => {
                assert!(f["bound"].is_null(), "{k}");
                assert_eq!(short["window_ns"].as_f64(), Some(20_000.0), "{k}");
                assert!((short["mean_launch_ns"].as_f64().unwrap() - mean).abs() < 1e-6);
                assert!(mean < 20_000.0, "{k}");
            }
            None => assert!(f["bound"].is_string() && mean >= 20_000.0, "{k}"),
        }
    }
    let classed = kernels.iter().filter(|k| k["sampled"]["bound"].is_string());
    assert_eq!(classed.count(), 1);
    let configs: usize = kernels
        .iter()
        .map(|k| k["sampled"]["configs"].as_array().unwrap().len())
        .sum();
    assert!(configs > kernels.len(), "{configs} configurations");
}

/// The fakes replaying the GPU-metrics capture (its export and its stats CSVs).
fn sampled_sandbox() -> Sandbox {
    Sandbox::new()
}

/// The committed GPU-metrics capture copied into `sb` as run `name`, its export changed by `sql`
/// (hand-made, each test says how).
fn edited_capture(sb: &Sandbox, name: &str, sql: &str) -> std::path::PathBuf {
    let run = sb.copy_of("tests/data/hf/gpu-metrics", name);
    let db = rusqlite::Connection::open(run.join("nsys/run.sqlite")).unwrap();
    db.execute_batch(sql).unwrap();
    run
}

/// The export's samples renumbered to GPU 1's stream.
const SAMPLES_ON_GPU_1: &str =
    "UPDATE TARGET_INFO_GPU_METRICS SET typeId = typeId + 1; UPDATE GPU_METRICS SET typeId = typeId + 1;";

/// `stage2 profile` arguments of a shallow two-rank torchrun run of `decode`, then `extra`.
fn launcher_quick<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "--launcher",
        "torchrun",
        "--nproc-per-node",
        "2",
        "--quick",
        "--nvtx-capture",
        "decode",
    ];
    a.extend_from_slice(extra);
    a
}

fn with_capture(c: &mut assert_cmd::Command) -> &mut assert_cmd::Command {
    c.env(
        "FAKE_NSYS_DIR",
        common::root().join("tests/data/hf/gpu-metrics/nsys"),
    )
}

#[test]
fn the_nsys_pass_samples_the_workloads_gpus_by_default() {
    let sb = sampled_sandbox();
    with_capture(&mut sb.profile_of("d", &["--nvtx-capture", "decode", "--no-ncu"], &["true"]))
        .assert()
        .success();
    let cmd = read(sb.run("d").join("nsys/cmd.txt"));
    let profile = cmd.lines().find(|l| l.contains(" profile ")).unwrap();
    assert!(
        profile.contains("--gpu-metrics-devices=cuda-visible --gpu-metrics-frequency=50000 "),
        "{profile}"
    );
    let st = common::status(&sb.run("d"));
    assert_eq!(
        st["passes"]["nsys"]["nsys"]["sampling"]["frequency_hz"],
        50000
    );
    let md = read(sb.run("d").join("kernels.md"));
    assert!(
        md.contains("## Sampled GPU metrics (every launch in `decode`)"),
        "{md}"
    );
    assert!(md.contains("Sampled by nsys during its pass at 50000 Hz"));
}

#[test]
fn quick_is_the_nsys_pass_alone_with_sampled_classes() {
    let sb = sampled_sandbox();
    with_capture(&mut sb.profile_of("q", &["--quick", "--nvtx-capture", "decode"], &["true"]))
        .assert()
        .success();
    assert!(!sb.calls().contains("ncu "), "{}", sb.calls());
    let s: serde_json::Value =
        serde_json::from_str(&read(sb.run("q").join("summary.json"))).unwrap();
    let k = &s["kernels"][0];
    assert_eq!(k["bound"], serde_json::Value::Null, "no ncu class");
    // Its 2.52 us launches are under the 20 us window: no sampled class, and why.
    assert_eq!(k["sampled"]["bound"], serde_json::Value::Null);
    assert_eq!(k["sampled"]["short"]["window_ns"], 20_000.0);
    assert_eq!(s["passes"]["ncu"]["state"], "skipped");
    let summary = read(sb.run("q").join("stakeholder_summary.md"));
    assert!(
        summary.contains(
            // Tagged: another kernel of the run reads `elementwise_kernel [MulFunctor]` too.
            "| 1 | elementwise_kernel \\[MulFunctor\\] ~ee728c | 14.5% | 2.52 | not classed (sampled: launches of 2.52 us, shorter than the 20.0 us sample window) |"
        ),
        "{summary}"
    );
    let md = read(sb.run("q").join("kernels.md"));
    assert!(
        md.contains("| 27.08 | 3.2% | – | – | memory (sampled, 100.0% covered) |"),
        "{md}"
    );
}

#[test]
fn no_gpu_metrics_and_config_turn_sampling_off() {
    let sb = sampled_sandbox();
    sb.profile_of("off", &["--no-gpu-metrics", "--no-ncu"], &["true"])
        .assert()
        .success();
    sb.profile_of(
        "off2",
        &["nsys.gpu_metrics.enable=false", "--no-ncu"],
        &["true"],
    )
    .assert()
    .success();
    for id in ["off", "off2"] {
        assert!(!read(sb.run(id).join("nsys/cmd.txt")).contains("--gpu-metrics"));
    }
    sb.profile_of(
        "f",
        &[
            "nsys.gpu_metrics.frequency_hz=10000",
            "nsys.gpu_metrics.devices=0",
            "nsys.gpu_metrics.set=gh100",
            "--dry-run",
        ],
        &["true"],
    )
    .assert()
    .success();
    let cmd = read(sb.run("f").join("nsys/cmd.txt"));
    assert!(
        cmd.contains(
            "--gpu-metrics-devices=0 --gpu-metrics-frequency=10000 --gpu-metrics-set=gh100 -o"
        ),
        "{cmd}"
    );
}

#[test]
fn a_gpu_that_refuses_sampling_leaves_a_clear_line_and_the_run_goes_on_without_it() {
    for mode in ["refuse-sampling", "no-metric-set"] {
        let sb = sampled_sandbox();
        let out = sb
            .profile_of("r", &["--no-ncu"], &["true"])
            .env("FAKE_NSYS_MODE", mode)
            .assert()
            .success();
        let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(
            err.contains("nsys refused GPU-metrics sampling"),
            "{mode}: {err}"
        );
        let run = sb.run("r");
        let st = common::status(&run);
        assert_eq!(st["passes"]["nsys"]["state"], "ok");
        let w = st["passes"]["nsys"]["warnings"].to_string();
        assert!(w.contains("ran again without it"), "{w}");
        let refused = st["passes"]["nsys"]["nsys"]["sampling"]["refused"]
            .as_str()
            .unwrap();
        assert!(refused.contains("--gpu-metrics-"), "{refused}");
        let cmd = read(run.join("nsys/cmd.txt"));
        let profiles: Vec<&str> = cmd.lines().filter(|l| l.contains(" profile ")).collect();
        // A refusal naming the set is tried again with nsys's default set first.
        let tries = match mode {
            "no-metric-set" => 3,
            _ => 2,
        };
        assert_eq!(profiles.len(), tries, "{cmd}");
        assert!(!profiles[tries - 1].contains("--gpu-metrics"));
        assert!(run.join("nsys/nsys.sampling-refused.log").is_file());
        assert!(!read(run.join("kernels.md")).contains("Sampled GPU metrics"));
    }
}

/// Under torchrun with the whole run captured only rank 0's nsys samples (its GPU, device 0,
/// where nothing chooses the GPUs); srun, which may bind a GPU per task, samples what rank 0
/// sees. A range-gated capture under a launcher does not sample.
#[test]
fn under_a_launcher_rank_0_alone_samples() {
    let sb = sampled_sandbox();
    for (id, launcher, var, devices) in [
        ("t", "torchrun", "RANK", "0"),
        ("s", "srun", "SLURM_PROCID", "cuda-visible"),
    ] {
        let args = ["--launcher", launcher, "--nproc-per-node", "2", "--dry-run"];
        let gated = format!("{id}-gated");
        sb.profile_of(&gated, &args, &["true"]).assert().success();
        assert!(!read(sb.run(&gated).join("nsys/cmd.txt")).contains("--gpu-metrics"));
        let whole = [&args[..], &["nsys.gating_nvtx=false"]].concat();
        sb.profile_of(id, &whole, &["true"])
            .env_remove("CUDA_VISIBLE_DEVICES")
            .assert()
            .success();
        let cmd = read(sb.run(id).join("nsys/cmd.txt"));
        let profile = cmd.lines().find(|l| l.contains(" profile ")).unwrap();
        let rank_0 = format!(" __rank-exec --others-drop=--gpu-metrics- {var} 0 0 -- ");
        assert!(profile.contains(&rank_0), "{profile}");
        assert!(
            profile.contains(&format!("--gpu-metrics-devices={devices} ")),
            "{profile}"
        );
    }
}

#[test]
fn doctor_says_whether_nsys_may_sample_and_why_not() {
    let sb = sampled_sandbox();
    let out = sb.stage2().arg("doctor").output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        text.contains(
            "stage2: ok: GPU-metrics sampling: nsys samples devices `cuda-visible` at 50000 Hz, set gh100 (GH100), 5 of 24 metrics"
        ),
        "{text}"
    );
    let out = sb
        .stage2()
        .arg("doctor")
        .env("FAKE_NSYS_MODE", "refuse-sampling")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(text.contains("stage2: warning: GPU-metrics sampling: nsys refuses it (Illegal --gpu-metrics-devices argument: 0. Already under profiling."), "{text}");
    assert!(text.contains("fix: stop the other sampler"), "{text}");
    let out = sb
        .stage2()
        .args(["doctor", "nsys.gpu_metrics.enable=false"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("GPU-metrics sampling: off (nsys.gpu_metrics.enable=false)"));
    let out = sb
        .stage2()
        .args(["doctor", "workload.launcher=torchrun"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("GPU-metrics sampling: off: under a launcher only rank 0 can sample"));
    // Two GPUs visible (the nvidia-smi double lists two): both are sampled, and doctor says so.
    let two = |args: &[&str]| {
        let out = sb
            .stage2()
            .args(args)
            .env("FAKE_SMI", "1")
            .env("FAKE_SMI_GPUS", "2")
            .env_remove("CUDA_VISIBLE_DEVICES")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let text = two(&["doctor"]);
    assert!(text.contains("; all 2 GPUs here are visible to the workload and each is sampled, adding its rows to the export (nsys.gpu_metrics.devices=0 or workload.device=0 keeps it to GPU 0 where the workload uses that GPU alone)"), "{text}");
    let text = two(&["doctor", "workload.device=0"]);
    assert!(!text.contains("GPUs here are visible"), "{text}");
}

/// Hand-made from the real capture (error path): nsys's samples end early, as they did in a
/// 19 s torch.compile capture (H200: samples only in its first instance). The samples after
/// the second `decode` instance are deleted; the per-instance line says how many instances
/// have none and that the figures are the others'.
#[test]
fn instances_without_samples_are_counted_not_hidden() {
    let sb = Sandbox::new();
    let run = sb.copy_of("tests/data/hf/gpu-metrics", "cut");
    let db = rusqlite::Connection::open(run.join("nsys/run.sqlite")).unwrap();
    let second_end: i64 = db
        .query_row(
            "SELECT e.end FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId \
             WHERE COALESCE(e.text, s.value) = 'decode' ORDER BY e.start LIMIT 1 OFFSET 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    db.execute("DELETE FROM GPU_METRICS WHERE timestamp > ?1", [second_end])
        .unwrap();
    drop(db);
    sb.stage2().arg("report").arg(&run).assert().success();
    let md = read(run.join("kernels.md"));
    let line = md
        .lines()
        .find(|l| l.starts_with("Per instance of `decode`"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(
        line.contains("13 of the 15 instances have no samples (between #3 and #15; their launches fell in no sample window): the figures are the other 2's"),
        "{line}"
    );
}

/// The one entry a sampled run left in the sandbox's metrics cache folder.
fn sampled_entry(sb: &Sandbox) -> Option<std::path::PathBuf> {
    let mut stack = vec![sb.path().join("cache")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.parent().is_some_and(|d| d.ends_with("sampled")) {
                return Some(p);
            }
        }
    }
    None
}

/// A sampled profile of `decode` on the fake H100 (reuse needs the GPU named).
fn sampled_profile(sb: &Sandbox, id: &str, extra: &[&str]) {
    let mut args = extra.to_vec();
    args.extend(["--nvtx-capture", "decode", "--no-ncu"]);
    with_capture(&mut sb.profile_of(id, &args, &["true"]))
        .env("FAKE_SMI", "1")
        .assert()
        .success();
}

/// Hand-made from the real entry (error path): the configuration `pick` chooses, as if it had
/// run twice as long per launch in the sampled run.
fn twice_as_long(
    sb: &Sandbox,
    pick: impl FnOnce(&mut Vec<serde_json::Value>) -> &mut serde_json::Value,
) {
    let entry = sampled_entry(sb).expect("a sampled run leaves its figures");
    let mut stored: serde_json::Value = serde_json::from_str(&read(&entry)).unwrap();
    let config = pick(stored["configs"].as_array_mut().unwrap());
    let t = config["time_ns"].as_f64().unwrap();
    config["time_ns"] = serde_json::json!(2.0 * t);
    std::fs::write(&entry, serde_json::to_vec(&stored).unwrap()).unwrap();
}

fn profile_line(sb: &Sandbox, id: &str) -> String {
    let cmd = read(sb.run(id).join("nsys/cmd.txt"));
    cmd.lines()
        .find(|l| l.contains(" profile "))
        .unwrap()
        .to_string()
}

#[test]
fn a_re_run_reuses_the_last_sampled_runs_figures_instead_of_sampling() {
    let sb = sampled_sandbox();
    for id in ["a", "b"] {
        sampled_profile(&sb, id, &[]);
    }
    assert!(profile_line(&sb, "a").contains("--gpu-metrics-devices="));
    assert!(
        !profile_line(&sb, "b").contains("--gpu-metrics"),
        "b sampled"
    );
    let st = common::status(&sb.run("b"));
    assert_eq!(st["passes"]["nsys"]["nsys"]["sampling"]["reused_from"], "a");
    assert!(sb.run("b").join("nsys/gpu_metrics_reused.json").is_file());
    let summary = |id: &str| -> serde_json::Value {
        serde_json::from_str(&read(sb.run(id).join("summary.json"))).unwrap()
    };
    let (a, b) = (summary("a"), summary("b"));
    assert_eq!(b["gpu_metrics"]["reused"]["run"], "a");
    assert_eq!(b["gpu_metrics"]["source"], "nsys/gpu_metrics_reused.json");
    // The same capture replayed: every configuration takes a's figures, and the totals agree.
    for key in [
        "dram_pct",
        "sm_issue_pct",
        "tensor_pct",
        "coverage_pct",
        "launches",
    ] {
        let (x, y) = (
            a["gpu_metrics"]["all_kernels"][key].as_f64().unwrap(),
            b["gpu_metrics"]["all_kernels"][key].as_f64().unwrap(),
        );
        assert!((x - y).abs() < 1e-6 * x.abs().max(1.0), "{key}: {x} vs {y}");
    }
    // Per configuration exactly a's figures (a kernel's merge may differ in the last digit).
    assert_eq!(
        a["kernels"][0]["sampled"]["configs"],
        b["kernels"][0]["sampled"]["configs"]
    );
    assert_eq!(b["gpu_metrics"]["reused"]["unseen"]["configs"], 0);
    let md = read(sb.run("b").join("kernels.md"));
    assert!(
        md.contains("Sampled by nsys in run `a` at 50000 Hz and reused here: this run's nsys pass did not sample"),
        "{md}"
    );
    assert!(!md.contains("Not reused"), "{md}");
    // Compared, the two runs' range times were taken with and without nsys's sampler.
    let out = sb
        .stage2()
        .arg("diff")
        .arg(sb.run("a"))
        .arg(sb.run("b"))
        .assert()
        .success();
    let diff = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(
        diff.contains("the nsys pass's GPU-metrics sampling differs: sampled vs not sampled (run a's sampled figures reused)"),
        "{diff}"
    );
    let stakeholder = read(sb.run("b").join("stakeholder_summary.md"));
    assert!(
        stakeholder.contains("in run `a` and reused by this run"),
        "{stakeholder}"
    );
    // The run folder holds what it reused: re-rendered without the cache, the same words.
    std::fs::rename(sb.path().join("cache"), sb.path().join("cache-aside")).unwrap();
    sb.stage2()
        .arg("report")
        .arg(sb.run("b"))
        .assert()
        .success();
    assert_eq!(read(sb.run("b").join("kernels.md")), md);
    std::fs::rename(sb.path().join("cache-aside"), sb.path().join("cache")).unwrap();
    // Hand-made broken input: a reused-figures file that is not JSON costs the sampled figures
    // only, with a line naming the file.
    std::fs::write(
        sb.run("b").join("nsys/gpu_metrics_reused.json"),
        "{not json",
    )
    .unwrap();
    let out = sb
        .stage2()
        .arg("report")
        .arg(sb.run("b"))
        .assert()
        .success();
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        err.contains("sampled GPU metrics left out") && err.contains("gpu_metrics_reused.json"),
        "{err}"
    );
    assert!(!read(sb.run("b").join("kernels.md")).contains("## Sampled GPU metrics"));
    // Turned off, the run samples again.
    sampled_profile(&sb, "c", &["nsys.gpu_metrics.reuse=false"]);
    assert!(profile_line(&sb, "c").contains("--gpu-metrics-devices="));
}

#[test]
fn a_configuration_whose_duration_moved_is_not_reused_and_the_next_run_samples_again() {
    let sb = sampled_sandbox();
    let run = |id: &str| sampled_profile(&sb, id, &[]);
    run("a");
    // The entry as if one configuration had run twice as long per launch in run a.
    twice_as_long(&sb, |configs| &mut configs[0]);
    run("b");
    assert!(!profile_line(&sb, "b").contains("--gpu-metrics"));
    let md = read(sb.run("b").join("kernels.md"));
    assert!(
        md.contains("Not reused: 1 whose mean duration moved by more than 15% ("),
        "{md}"
    );
    assert!(
        md.contains("the next run of this command samples again"),
        "{md}"
    );
    assert!(sampled_entry(&sb).is_none(), "the entry is removed");
    run("c");
    assert!(profile_line(&sb, "c").contains("--gpu-metrics-devices="));
    assert!(sampled_entry(&sb).is_some(), "c left its own");
}

#[test]
fn the_pass_samples_nsyss_set_for_the_chip_cut_to_the_metrics_read() {
    let sb = sampled_sandbox();
    sampled_profile(&sb, "s", &[]);
    let line = profile_line(&sb, "s");
    let file = sb.run("s").join("nsys/gpu_metrics.config");
    assert!(
        line.contains(&format!("--gpu-metrics-set=file:{} ", file.display())),
        "{line}"
    );
    let set: serde_yaml::Value = serde_yaml::from_str(&read(&file)).unwrap();
    let sets = set["metricSets"].as_sequence().unwrap();
    assert_eq!(sets.len(), 1, "nsys takes one set per file");
    assert_eq!(sets[0]["chips"][0], "GH100");
    let names: Vec<&str> = sets[0]["metrics"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "GR Active",
            "SM Issue",
            "Tensor Active",
            "DRAM Read Bandwidth",
            "DRAM Write Bandwidth",
            "DRAM Read Bytes",
            "DRAM Write Bytes"
        ]
    );
    let st = common::status(&sb.run("s"));
    assert_eq!(
        st["passes"]["nsys"]["nsys"]["sampling"]["set"],
        "nsys/gpu_metrics.config: gh100 (GH100), 5 of 24 metrics, and the DRAM byte counters"
    );
    // The run records every metric it asked for, as the export names them.
    let asked = st["passes"]["nsys"]["nsys"]["sampling"]["asked"]
        .as_array()
        .unwrap();
    assert_eq!(asked.len(), 7, "{asked:?}");
    assert!(asked.contains(&serde_json::json!("DRAM Read Bytes [Bytes]")));
    // The replayed export is of nsys's own set, without the counters: the reports say nsys
    // left them out, and the bytes are from the shares.
    let md = read(sb.run("s").join("kernels.md"));
    assert!(
        md.contains("The export lacks 2 of the metrics the pass asked for, left out by nsys without a word (a counter this GPU cannot sample): DRAM Read Bytes \\[Bytes\\], DRAM Write Bytes \\[Bytes\\]."),
        "{md}"
    );
    // A set given in the config is nsys's to choose, and none is made.
    sampled_profile(
        &sb,
        "g",
        &["nsys.gpu_metrics.set=gh100", "nsys.gpu_metrics.reuse=false"],
    );
    assert!(profile_line(&sb, "g").contains("--gpu-metrics-set=gh100 "));
    assert!(!sb.run("g").join("nsys/gpu_metrics.config").exists());
}

#[test]
fn a_set_nsys_refuses_falls_back_to_its_default_set_and_still_samples() {
    let sb = sampled_sandbox();
    with_capture(&mut sb.profile_of("f", &["--nvtx-capture", "decode", "--no-ncu"], &["true"]))
        .env("FAKE_SMI", "1")
        .env("FAKE_NSYS_MODE", "reject-set-file")
        .assert()
        .success();
    let cmd = read(sb.run("f").join("nsys/cmd.txt"));
    let profiles: Vec<&str> = cmd.lines().filter(|l| l.contains(" profile ")).collect();
    assert_eq!(profiles.len(), 2, "{cmd}");
    assert!(profiles[0].contains("--gpu-metrics-set=file:"));
    assert!(
        profiles[1].contains("--gpu-metrics-devices=")
            && !profiles[1].contains("--gpu-metrics-set")
    );
    let st = common::status(&sb.run("f"));
    let w = st["passes"]["nsys"]["warnings"].to_string();
    assert!(w.contains("nsys refused the GPU-metrics set cut for this run (nsys/gpu_metrics.config), so the pass ran again with nsys's default set: Can't parse metric config. Use the '--gpu-metrics-set=help'"), "{w}");
    assert_eq!(
        st["passes"]["nsys"]["nsys"]["sampling"]["set"],
        serde_json::Value::Null
    );
    assert_eq!(
        st["passes"]["nsys"]["nsys"]["sampling"]["refused"],
        serde_json::Value::Null
    );
    assert!(sb.run("f").join("nsys/nsys.set-refused.log").is_file());
    assert!(read(sb.run("f").join("kernels.md"))
        .contains("Sampled by nsys during its pass at 50000 Hz"));
}

#[test]
fn nsys_is_asked_which_gpus_it_samples_once_per_machine() {
    let sb = sampled_sandbox();
    for id in ["a", "b"] {
        sampled_profile(&sb, id, &["nsys.gpu_metrics.reuse=false"]);
    }
    let calls = sb.calls();
    assert_eq!(
        calls.matches("--gpu-metrics-devices=help").count(),
        1,
        "{calls}"
    );
    assert!(profile_line(&sb, "b").contains("--gpu-metrics-set=file:"));
}

#[test]
fn a_small_share_left_without_figures_keeps_the_reuse() {
    let sb = sampled_sandbox();
    let run = |id: &str| sampled_profile(&sb, id, &[]);
    run("a");
    // The entry as if the configuration with the least time had run twice as long per launch.
    twice_as_long(&sb, |configs| {
        let time = |c: &serde_json::Value| c["time_ns"].as_f64().unwrap();
        configs
            .iter_mut()
            .min_by(|x, y| time(x).total_cmp(&time(y)))
            .unwrap()
    });
    run("b");
    let md = read(sb.run("b").join("kernels.md"));
    assert!(
        md.contains("Not reused: 1 whose mean duration moved by more than 15% ("),
        "{md}"
    );
    assert!(
        md.contains("of the kernel time, under 5%, so the next run of this command reuses these figures too"),
        "{md}"
    );
    assert!(sampled_entry(&sb).is_some(), "the entry is kept");
    run("c");
    assert!(
        !profile_line(&sb, "c").contains("--gpu-metrics"),
        "c reuses"
    );
}

/// A shallow run under a launcher with a range-gated capture samples nothing and profiles
/// nothing: it says so before the run, and kernels.md says why no kernel has a sampled class.
#[test]
fn a_gated_quick_run_under_a_launcher_says_no_kernel_gets_a_class() {
    let sb = sampled_sandbox();
    let out = sb
        .profile_of("lq", &launcher_quick(&[]), &["true"])
        .assert()
        .success();
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        err.contains("stage2: warning: nsys pass: not sampling GPU metrics: under a launcher only rank 0 can sample")
            && err.contains("no kernel gets a bound class"),
        "{err}"
    );
    let md = read(sb.run("lq").join("kernels.md"));
    assert!(
        md.contains("The nsys pass took no GPU-metrics samples: under a launcher only rank 0"),
        "{md}"
    );
}

/// A shallow run under a launcher with the whole run captured: rank 0's nsys alone is asked to
/// sample, and the reports say the figures are its launches'.
#[test]
fn a_quick_run_under_a_launcher_samples_rank_0() {
    let sb = sampled_sandbox();
    with_capture(&mut sb.profile_of(
        "lq",
        &launcher_quick(&["nsys.gating_nvtx=false"]),
        &["true"],
    ))
    .env_remove("CUDA_VISIBLE_DEVICES")
    .assert()
    .success();
    let calls = read(sb.path().join("calls.log"));
    let profiles: Vec<&str> = calls
        .lines()
        .filter(|l| l.starts_with("nsys profile") && !l.contains("=help"))
        .collect();
    assert_eq!(profiles.len(), 2, "{calls}");
    let sampling = profiles
        .iter()
        .filter(|l| l.contains("--gpu-metrics-"))
        .count();
    assert_eq!(sampling, 1, "{calls}");
    let md = read(sb.run("lq").join("kernels.md"));
    assert!(md.contains("Rank 0's launches alone"), "{md}");
    // The kernel table sums both ranks: a sampled class there says whose launches it is, and
    // so does the want of one.
    assert!(
        md.contains("| memory (sampled on rank 0, 100.0% covered) |"),
        "{md}"
    );
    assert!(
        md.contains("| not classed (sampled on rank 0: launches of "),
        "{md}"
    );
    assert!(
        md.contains("Sampled by nsys during its pass at 50000 Hz"),
        "{md}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&read(sb.run("lq").join("summary.json"))).unwrap();
    assert_eq!(summary["gpu_metrics"]["rank"], 0);
}

#[test]
fn an_export_without_the_samples_asked_for_says_so() {
    let sb = sampled_sandbox();
    sb.profile_of("ns", &["--quick", "--nvtx-capture", "decode"], &["true"])
        .assert()
        .success();
    let run = sb.run("ns");
    assert!(read(run.join("nsys/cmd.txt")).contains("--gpu-metrics-devices="));
    let md = read(run.join("kernels.md"));
    assert!(
        md.contains(
            "The nsys pass sampled GPU metrics, but its export holds none (no GPU_METRICS table)."
        ),
        "{md}"
    );
}

/// The committed capture with a second GPU's samples added (hand-made: every sample copied
/// under the next stream id, the next GPU, with every value 0, as `cuda-visible` samples each
/// GPU of a machine of several): the kernels' device's samples are theirs, with the same
/// agreement with ncu, and kernels.md says how they were chosen. With the capture's own
/// samples moved to GPU 1 and the copy to GPU 2, none are numbered as the kernels' device 0:
/// none are attributed, and the section says why.
#[test]
fn a_second_sampled_gpu_leaves_the_kernels_figures_as_they_were() {
    let alone = rendered();
    for (edit, device, picked) in [
        ("", "null", true),
        (SAMPLES_ON_GPU_1, "null", false),
        // Shown the workload as its device 0, GPU 1 is not nsys's GPU 0.
        ("", "'1,0'", false),
    ] {
        let sb = Sandbox::new();
        let run = edited_capture(
            &sb,
            "two",
            &format!(
                "{edit}
                 INSERT INTO TARGET_INFO_GPU_METRICS SELECT typeId + 1, sourceId, typeName, metricId, metricName FROM TARGET_INFO_GPU_METRICS;
                 INSERT INTO GPU_METRICS (timestamp, typeId, metricId, value) SELECT timestamp, typeId + 1, metricId, 0 FROM GPU_METRICS;"
            ),
        );
        let cfg = read(run.join("config.yaml"));
        std::fs::write(
            run.join("config.yaml"),
            cfg.replacen("  device: null", &format!("  device: {device}"), 1),
        )
        .unwrap();
        sb.stage2().arg("report").arg(&run).assert().success();
        let s: serde_json::Value = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
        let md = read(run.join("kernels.md"));
        match picked {
            true => {
                assert_eq!(
                    s["gpu_metrics"]["agreement"],
                    alone["gpu_metrics"]["agreement"]
                );
                assert_eq!(
                    s["gpu_metrics"]["all_kernels"],
                    alone["gpu_metrics"]["all_kernels"]
                );
                assert!(md.contains("\nnsys sampled 2 GPUs and the range's kernels ran on device 0: its samples are theirs"), "{md}");
            }
            false => {
                assert!(
                    s["gpu_metrics"]["all_kernels"].is_null(),
                    "{}",
                    s["gpu_metrics"]
                );
                let why = match device {
                    "null" => "2 GPUs sampled and none numbered as the range's kernels' device 0",
                    _ => "2 GPUs sampled while CUDA_VISIBLE_DEVICES=1,0 renumbers the GPUs the workload sees",
                };
                assert!(md.contains(why), "{md}");
            }
        }
    }
}

/// On a machine of two GPUs with nothing hiding one, the nsys pass says it samples both.
#[test]
fn a_run_that_samples_every_gpu_of_the_machine_says_so() {
    let sb = sampled_sandbox();
    let run = |id: &str, extra: &[&str]| {
        let mut args = vec!["--quick", "--nvtx-capture", "decode"];
        args.extend_from_slice(extra);
        let out = sb
            .profile_of(id, &args, &["true"])
            .env("FAKE_SMI", "1")
            .env("FAKE_SMI_GPUS", "2")
            .env_remove("CUDA_VISIBLE_DEVICES")
            .assert()
            .success();
        String::from_utf8_lossy(&out.get_output().stderr).to_string()
    };
    let err = run("all", &[]);
    assert!(
        err.contains("stage2: nsys pass: samples all 2 GPUs the workload can see (cuda-visible)"),
        "{err}"
    );
    assert!(!run("one", &["workload.device=0"]).contains("samples all 2 GPUs"));
}

/// Under a launcher rank 0's nsys is refused sampling while rank 1's, not asked, writes its
/// report: the refusal is still seen, that try's report set aside, and every rank run again
/// without sampling.
#[test]
fn a_refusal_on_rank_0_runs_every_rank_again_without_sampling() {
    let sb = sampled_sandbox();
    sb.profile_of(
        "lr",
        &launcher_quick(&["nsys.gating_nvtx=false"]),
        &["true"],
    )
    .env_remove("CUDA_VISIBLE_DEVICES")
    .env("FAKE_NSYS_MODE", "refuse-sampling")
    .assert()
    .success();
    let run = sb.run("lr");
    let st = common::status(&run);
    assert_eq!(st["passes"]["nsys"]["state"], "ok", "{st}");
    let refused = &st["passes"]["nsys"]["nsys"]["sampling"]["refused"];
    assert!(
        refused
            .as_str()
            .unwrap()
            .contains("Already under profiling"),
        "{st}"
    );
    for r in 0..2 {
        assert!(run.join(format!("nsys/run.rank{r}.sqlite")).is_file());
    }
    assert!(run.join("nsys/refused-try.run.rank1.nsys-rep").is_file());
}

/// One GPU sampled, asked for by number, and another than the kernels' device (a launcher's
/// rank 0 on another GPU than its convention's, or a mistyped `nsys.gpu_metrics.devices`):
/// none are attributed. Asked as `cuda-visible`, a lone GPU's number says nothing (a GPU bound
/// to the process keeps the machine's number), and its samples are the kernels'.
#[test]
fn a_lone_gpu_asked_by_number_must_be_the_kernels_device() {
    for (asked, attributed) in [("1", false), ("cuda-visible", true)] {
        let sb = Sandbox::new();
        let run = edited_capture(&sb, "other", SAMPLES_ON_GPU_1);
        // The run record says which GPUs the pass asked to sample.
        let status = read(run.join("status.json"));
        let status = status.replace("\"devices\": \"0\"", &format!("\"devices\": \"{asked}\""));
        std::fs::write(run.join("status.json"), status).unwrap();
        sb.stage2().arg("report").arg(&run).assert().success();
        let s: serde_json::Value = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
        let md = read(run.join("kernels.md"));
        assert_eq!(
            !s["gpu_metrics"]["all_kernels"].is_null(),
            attributed,
            "{asked}"
        );
        if !attributed {
            assert!(md.contains("nsys sampled GPU 1 and the range's kernels ran on device 0: its samples are another GPU's"), "{md}");
        }
    }
}

/// One process on two devices (hand-made from the committed capture: every other launch moved
/// to device 1, a CUDA context on device 1 beside the one on device 0, and a second sample
/// stream, GPU 1's, a copy of GPU 0's): each launch takes its own device's samples, and the
/// headline says two GPUs ran the kernels.
#[test]
fn a_process_on_two_devices_has_each_launch_sampled_on_its_own() {
    let sb = Sandbox::new();
    let run = edited_capture(
        &sb,
        "split",
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 1 WHERE rowid % 2 = 0;
         INSERT INTO TARGET_INFO_CUDA_CONTEXT_INFO SELECT nullStreamId, hwId, vmId, processId, 1, contextId + 1, parentContextId, isGreenContext FROM TARGET_INFO_CUDA_CONTEXT_INFO;
         INSERT INTO TARGET_INFO_GPU_METRICS SELECT typeId + 1, sourceId, typeName, metricId, metricName FROM TARGET_INFO_GPU_METRICS;
         INSERT INTO GPU_METRICS (timestamp, typeId, metricId, value) SELECT timestamp, typeId + 1, metricId, value FROM GPU_METRICS;",
    );
    sb.stage2().arg("report").arg(&run).assert().success();
    let s: serde_json::Value = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
    let all = &s["gpu_metrics"]["all_kernels"];
    assert_eq!(all["coverage_pct"], 100.0, "{}", s["gpu_metrics"]);
    let picked = s["gpu_metrics"]["picked"].as_str().unwrap();
    assert!(
        picked.contains("ran on devices 0, 1: each launch takes its own device's samples"),
        "{picked}"
    );
    let summary = read(run.join("stakeholder_summary.md"));
    assert!(
        summary.contains(" the 2 GPUs ran ")
            && summary.contains(", one or more of them busy ")
            && summary.contains(": the GPUs mostly wait on the CPU"),
        "{summary}"
    );
}

/// Hand-made from the real capture (error paths): one GPU_METRICS row nsys could not have
/// written (a negative share, a text value, a timestamp between nanoseconds). The reports name
/// the table, the row and what is wrong with it, attribute none of the samples, and print no
/// figure from them; they do not say the export holds none.
#[test]
fn an_unreadable_samples_table_is_named_with_what_is_wrong() {
    let row = "(SELECT min(rowid) FROM GPU_METRICS WHERE metricId = 18 AND timestamp > 20000000)";
    for (set, why) in [
        (
            "value = -724.3",
            "its value is -724.3: a share of peak is never below 0% or above 100%",
        ),
        ("value = 'x'", "its value is text or a blob, not a number"),
        (
            "timestamp = timestamp + 0.5",
            "column timestamp: a real number where an integer belongs",
        ),
    ] {
        let sb = Sandbox::new();
        let run = edited_capture(
            &sb,
            "bad",
            &format!("UPDATE GPU_METRICS SET {set} WHERE rowid = {row};"),
        );
        sb.stage2().arg("report").arg(&run).assert().success();
        let md = read(run.join("kernels.md"));
        let line = md
            .lines()
            .find(|l| l.starts_with("The nsys pass sampled GPU metrics, but"))
            .unwrap_or_else(|| panic!("{md}"));
        assert!(
            line.contains("but its samples cannot be read (GPU_METRICS row ") && line.contains(why),
            "{line}"
        );
        assert!(!md.contains("-724") || line.contains("-724"), "{md}");
        let s: serde_json::Value = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
        assert!(
            s["gpu_metrics"]["all_kernels"].is_null(),
            "{}",
            s["gpu_metrics"]
        );
    }
}

/// Hand-made from a real entry (error path): the sampled figures a run keeps for the next,
/// edited to what no sampled run could store. The next run does not reuse them (it samples,
/// saying why), and a run's own copy so edited is refused by the reports, never printed as
/// "500.0% covered" or "-50000 Hz".
#[test]
fn sampled_figures_out_of_range_are_not_reused() {
    let sb = sampled_sandbox();
    sampled_profile(&sb, "a", &[]);
    sampled_profile(&sb, "r", &[]);
    assert!(
        !profile_line(&sb, "r").contains("--gpu-metrics"),
        "r reuses a's"
    );
    let big = format!("1{}", "0".repeat(299));
    for (i, (field, value, why)) in [
        (
            "coverage_pct",
            "500.0",
            "coverage_pct = 500: a share is 0% to 100%",
        ),
        (
            "dram_pct",
            big.as_str(),
            "dram_pct = 1e299: a share is 0% to 100%",
        ),
        (
            "frequency_hz",
            "-50000",
            "frequency_hz = -50000: a sampling frequency is above 0",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let edit = |path: &std::path::Path| {
            let text = read(path);
            let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
            let at = match field {
                "frequency_hz" => &mut v[field],
                _ => &mut v["configs"][0][field],
            };
            *at = serde_json::from_str(value).unwrap();
            std::fs::write(path, serde_json::to_string(&v).unwrap()).unwrap();
        };
        edit(&sampled_entry(&sb).unwrap());
        let id = format!("b{i}");
        let out = with_capture(&mut sb.profile_of(
            &id,
            &["--nvtx-capture", "decode", "--no-ncu"],
            &["true"],
        ))
        .env("FAKE_SMI", "1")
        .assert()
        .success();
        let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(
            profile_line(&sb, &id).contains("--gpu-metrics-devices="),
            "{id} reused"
        );
        assert!(
            err.contains("are not reused, so it samples: ") && err.contains(why),
            "{err}"
        );
        // The reusing run's own copy, edited the same way.
        let copy = sb.run("r").join("nsys/gpu_metrics_reused.json");
        let kept = read(&copy);
        edit(&copy);
        sb.stage2()
            .arg("report")
            .arg(sb.run("r"))
            .assert()
            .success();
        let md = read(sb.run("r").join("kernels.md"));
        assert!(
            md.contains("The nsys pass took no GPU-metrics samples: it was to reuse an earlier run's figures, and nsys/gpu_metrics_reused.json holds figures no sampled run could have (")
                && md.contains(why),
            "{md}"
        );
        assert!(!md.contains("500.0%") && !md.contains("-50000 Hz"), "{md}");
        std::fs::write(&copy, kept).unwrap();
    }
}

/// Hand-made from the real capture (error path): `decode` instances of no length (pushed and
/// popped at once), all of them, then two in three. No division by an instance's length
/// reaches an output: no `inf` or `NaN` in any report, no "inf%" floor, and summary.json
/// holds to its schema.
#[test]
fn instances_of_no_length_put_no_inf_in_any_output() {
    let schema: serde_json::Value = serde_json::from_str(&read(
        common::root().join("src/findings/summary.schema.json"),
    ))
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for (i, which) in ["1 = 1", "rowid % 3 <> 0"].into_iter().enumerate() {
        let sb = Sandbox::new();
        let sql = format!(
            "UPDATE NVTX_EVENTS SET end = start WHERE COALESCE(text, (SELECT value FROM StringIds WHERE id = textId)) = 'decode' AND {which};"
        );
        let run = edited_capture(&sb, &format!("zero{i}"), &sql);
        sb.stage2().arg("report").arg(&run).assert().success();
        for f in [
            "kernels.md",
            "stakeholder_summary.md",
            "kernels.csv",
            "ranges.csv",
            "summary.json",
        ] {
            let text = read(run.join(f));
            for word in text.split(|c: char| !c.is_ascii_alphanumeric()) {
                assert!(
                    word != "inf" && word != "NaN",
                    "{which}: {f} has {word}:\n{text}"
                );
            }
        }
        let doc: serde_json::Value = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&doc)
            .map(|e| format!("{e} at {}", e.instance_path))
            .take(5)
            .collect();
        assert!(errors.is_empty(), "{which}: {errors:#?}");
    }
}
