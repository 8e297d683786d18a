//! The ncu metrics cache end to end, with the fake tools replaying real H100 output: a first
//! run stores each profiled kernel, a re-run takes them from the cache and does not run ncu,
//! and nothing is served for another GPU or with the cache off.

mod common;

use common::{read, status, Sandbox};

fn ncu_queries(sb: &Sandbox) -> usize {
    sb.calls_starting("ncu --query-metrics").len()
}

fn ncu_profiles(sb: &Sandbox) -> usize {
    sb.ncu_profiles().len()
}

/// The top 2 kernels by time. The replayed ncu capture comes from another run of the workload
/// than the nsys one: of the kernels further down, some are not in it and some of its rows
/// lack what a cache key needs, so a re-run would profile those again.
const TOP2: &[&str] = &["ncu.top_n=2", "ncu.coverage=0.01"];

#[test]
fn a_rerun_takes_every_kernel_from_the_cache_and_skips_ncu() {
    let sb = Sandbox::with_gpu();
    sb.profile_decode("one", TOP2).assert().success();
    let first = status(&sb.run("one"));
    let ncu = &first["passes"]["ncu"]["ncu"];
    let stored = ncu["cache"]["stored"].as_u64().unwrap();
    assert!(stored >= 2, "{ncu}");
    assert_eq!(ncu["cache"]["hits"], 0);
    assert!(ncu["cost"]["predicted_s"].as_f64().unwrap() > 0.0, "{ncu}");
    assert!(sb.path().join("cache/stage2/ncu/entries").is_dir());
    assert_eq!(ncu_profiles(&sb), 1);

    sb.profile_decode("two", TOP2).assert().success();
    let second = status(&sb.run("two"));
    let ncu = &second["passes"]["ncu"];
    assert_eq!(ncu["state"], "ok", "{ncu}");
    assert!(
        ncu["reason"].as_str().unwrap().contains("metrics cache"),
        "{ncu}"
    );
    assert_eq!(ncu_profiles(&sb), 1, "ncu ran again: {}", sb.calls());
    // ncu's list of metric names for this GPU was kept too: the re-run did not ask again.
    assert_eq!(ncu_queries(&sb), 1, "{}", sb.calls());
    assert!(std::fs::read_dir(sb.path().join("cache/stage2/ncu/query"))
        .unwrap()
        .any(|e| e.unwrap().path().extension().is_some_and(|x| x == "json")));
    let hits = ncu["ncu"]["cache"]["hits"].as_u64().unwrap();
    assert!(hits >= 2, "{ncu}");
    // The reports carry the cached figures and name the run that measured them.
    let md = read(sb.run("two").join("kernels.md"));
    assert!(
        md.contains("come from the metrics cache") && md.contains("`one`"),
        "{md}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&read(sb.run("two").join("summary.json"))).unwrap();
    let cached = summary["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["ncu_cached_from"] == "one")
        .count();
    assert_eq!(cached as u64, hits);
    // Every chosen kernel has its figures, all from the cache.
    assert_eq!(
        summary["totals"]["ncu_kernels_measured"].as_u64(),
        Some(hits)
    );
    assert!(read(sb.run("two").join("ncu/cmd.txt")).is_empty());
    // The summary does not say these were profiled in this run.
    let stake = read(sb.run("two").join("stakeholder_summary.md"));
    assert!(
        stake.contains("kernels' figures from the metrics cache (none profiled in this run)")
            && !stake.contains("kernels profiled"),
        "{stake}"
    );
    assert!(read(sb.run("one").join("stakeholder_summary.md")).contains("kernels profiled"));
    // Nor that there is no ncu data above a table of cached figures: it names where they
    // come from, the run that measured them and the list of what the cache served.
    assert!(!stake.contains("no ncu data"), "{stake}");
    assert!(
        stake.contains("bound classes from ncu's SM and DRAM throughput, measured by run `one` and served from the metrics cache"),
        "{stake}"
    );
    assert!(stake.contains("]: ncu/cached.json\n"), "{stake}");
    assert_eq!(summary["sources"]["ncu_metrics"], "ncu/cached.json");
}

#[test]
fn a_sampling_first_run_asks_for_metric_names_once_nsys_profile_has_ended() {
    // ncu's query cannot run while nsys samples the GPU's counters; it runs once `nsys profile`
    // has ended, beside the export, and is answered before the ncu pass starts.
    let sb = Sandbox::with_gpu();
    sb.profile_decode("one", TOP2)
        .env("FAKE_NSYS_EXPORT_S", "2")
        .assert()
        .success();
    let calls = sb.calls();
    let at = |prefix: &str| {
        calls
            .lines()
            .position(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` in {calls}"))
    };
    let profiled = at("nsys profile");
    assert!(calls
        .lines()
        .nth(profiled)
        .unwrap()
        .contains("--gpu-metrics-devices"));
    let query = at("ncu --query-metrics");
    // Asked while the export (2 s here) ran, not after the stats that follow it.
    assert!(profiled < query && query < at("nsys stats"), "{calls}");
    assert!(query < at("ncu --mode=attach"), "{calls}");
    assert_eq!(ncu_queries(&sb), 1, "{calls}");
}

#[test]
fn no_cache_and_other_settings_profile_again() {
    let sb = Sandbox::with_gpu();
    sb.profile_decode("one", &[]).assert().success();
    sb.profile_decode("off", &["--no-cache"]).assert().success();
    assert_eq!(ncu_profiles(&sb), 2);
    // With the cache off, ncu is asked for its metric names again.
    assert_eq!(ncu_queries(&sb), 2, "{}", sb.calls());
    assert!(status(&sb.run("off"))["passes"]["ncu"]["ncu"]["cache"].is_null());
    // Another clock setting is another key: nothing is served.
    sb.profile_decode("clocks", &["ncu.clock_control=none"])
        .assert()
        .success();
    assert_eq!(ncu_profiles(&sb), 3);
    let st = status(&sb.run("clocks"));
    assert_eq!(st["passes"]["ncu"]["ncu"]["cache"]["hits"], 0);
    // A cache folder of its own starts empty.
    sb.profile_decode("elsewhere", &["--cache-dir", "mycache"])
        .assert()
        .success();
    assert_eq!(ncu_profiles(&sb), 4);
    assert!(sb.path().join("mycache/entries").is_dir());
}

#[test]
fn without_gpu_facts_the_cache_is_not_used() {
    let sb = Sandbox::new();
    for id in ["a", "b"] {
        sb.profile_decode(id, &[]).assert().success();
    }
    assert_eq!(ncu_profiles(&sb), 2);
    assert!(!sb.path().join("cache").exists());
}

/// Hand-made broken input: an `ncu/cached.json` that is not JSON costs the ncu figures only;
/// the reports are made from the rest and the run exits 6 naming the file.
#[test]
fn a_broken_cached_list_is_named_and_exits_6() {
    let sb = Sandbox::with_gpu();
    sb.profile_decode("one", &[]).assert().success();
    let run = sb.run("one");
    std::fs::write(run.join("ncu/cached.json"), "[{\"kernel\": ").unwrap();
    sb.stage2()
        .args(["report", run.to_str().unwrap()])
        .assert()
        .code(6)
        .stderr(predicates::str::contains("cached.json"));
    assert!(read(run.join("kernels.md")).contains("ncu metrics missing"));
}

/// An entry measured beside another nsys duration of its launch configuration (a GEMM with
/// the same grid but another problem size) is stale: measured again, and the plan says so.
#[test]
fn an_entry_whose_duration_disagrees_with_this_run_is_measured_again() {
    let sb = Sandbox::with_gpu();
    sb.profile_decode("one", TOP2).assert().success();
    let entries = sb.path().join("cache/stage2/ncu/entries");
    let mut changed = 0;
    for e in std::fs::read_dir(&entries).unwrap().flatten() {
        let mut v: serde_json::Value = serde_json::from_str(&read(e.path())).unwrap();
        let ns = v["nsys_mean_ns"]
            .as_f64()
            .expect("entries keep the nsys duration");
        v["nsys_mean_ns"] = serde_json::json!(ns * 2.0);
        std::fs::write(e.path(), serde_json::to_vec(&v).unwrap()).unwrap();
        changed += 1;
    }
    assert!(changed >= 2);
    sb.profile_decode("two", TOP2).assert().success();
    assert_eq!(ncu_profiles(&sb), 2, "stale entries were served");
    let cache = &status(&sb.run("two"))["passes"]["ncu"]["ncu"]["cache"];
    assert_eq!(cache["hits"], 0, "{cache}");
    assert!(cache["stale"].as_u64().unwrap() >= 2, "{cache}");
    // A tolerance that admits a factor of two serves them.
    sb.profile_decode(
        "three",
        &[TOP2, &["ncu.cache.duration_tolerance=1.5"]].concat(),
    )
    .assert()
    .success();
    assert!(status(&sb.run("three"))["passes"]["ncu"]["ncu"]["cache"]["hits"].as_u64() >= Some(2));
}

/// `ncu.shapes`: every launch configuration (ncu's per-launch-config filter, no early stop)
/// or each kernel's first launch; the plan counts the configurations and the reports state
/// the share of the measured kernels' time whose configuration ncu measured.
#[test]
fn ncu_is_asked_for_every_shape_or_the_first() {
    let sb = Sandbox::with_gpu();
    sb.profile_decode("all", &["ncu.shapes=all", "--no-cache"])
        .assert()
        .success();
    let cmd = read(sb.run("all").join("ncu/cmd.txt"));
    assert!(
        cmd.contains("--filter-mode per-launch-config") && !cmd.contains("--kill"),
        "{cmd}"
    );
    let plan = &status(&sb.run("all"))["passes"]["ncu"]["ncu"]["shapes"];
    assert_eq!(plan["every_shape"], true, "{plan}");
    assert!(
        plan["launch_configs"].as_u64() > plan["kernels"].as_u64(),
        "{plan}"
    );
    let md = read(sb.run("all").join("kernels.md"));
    assert!(md.contains("Launch configurations in `decode`"), "{md}");
    sb.profile_decode("first", &["ncu.shapes=first", "--no-cache"])
        .assert()
        .success();
    let cmd = read(sb.run("first").join("ncu/cmd.txt"));
    assert!(
        cmd.contains("--kernel-id") && !cmd.contains("--filter-mode"),
        "{cmd}"
    );
    let plan = &status(&sb.run("first"))["passes"]["ncu"]["ncu"]["shapes"];
    assert_eq!(plan["every_shape"], false, "{plan}");
}

/// Every configuration measured is a bounded pass: it ends once the configurations the nsys
/// export holds are measured, or at `ncu.shapes_budget_s` (ncu stopped as by Ctrl-C, the report
/// of what it measured kept and read), never running on with the workload.
#[test]
fn a_pass_over_every_shape_is_bounded_and_keeps_what_it_measured() {
    let sb = Sandbox::with_gpu();
    let t0 = std::time::Instant::now();
    sb.profile_decode(
        "budget",
        &["ncu.shapes=all", "ncu.shapes_budget_s=1", "--no-cache"],
    )
    .env("FAKE_NCU_HOLD", "60")
    .assert()
    .success();
    let ncu = common::stopped_at_bound(
        &sb.run("budget"),
        t0,
        "time budget of 1 s (ncu.shapes_budget_s)",
    );
    assert_eq!(ncu["reason"], ncu["ncu"]["bounded"]);
    // What ncu wrote was imported: the reports carry its figures.
    let summary: serde_json::Value =
        serde_json::from_str(&read(sb.run("budget").join("summary.json"))).unwrap();
    assert!(
        summary["totals"]["ncu_kernels_measured"].as_u64() > Some(0),
        "{}",
        summary["totals"]
    );
}
