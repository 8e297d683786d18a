//! The ncu pass's workload started beside the nsys pass and held by ncu at its first CUDA call
//! (`ncu.early_start`), with the fake ncu's launch and attach modes: attached once the kernels
//! are chosen, started as usual when the held copy ended or the attach was refused, never
//! started where the run cannot use it, and stopped where the pass does not need it.

mod common;

use common::{read, status, Sandbox, DECODE};

fn lines_starting(sb: &Sandbox, prefix: &str) -> usize {
    sb.calls_starting(prefix).len()
}

/// What each workload's last run told the next (`<cache>/runs`), removed.
fn forget_last_runs(sb: &Sandbox) {
    let runs = sb.path().join("cache/stage2/ncu/runs");
    assert!(runs.is_dir(), "{}", runs.display());
    std::fs::remove_dir_all(runs).unwrap();
}

#[test]
fn a_held_copy_that_ends_before_the_attach_is_started_again_as_usual() {
    // Hand-made error path: the held workload exits on its own (FAKE_NCU_EARLY=die).
    let sb = Sandbox::new();
    sb.profile_decode("r", &[])
        .env("FAKE_NCU_EARLY", "die")
        .assert()
        .success();
    let st = status(&sb.run("r"));
    let ncu = &st["passes"]["ncu"];
    assert_eq!(ncu["state"], "ok", "{ncu}");
    assert_eq!(ncu["ncu"]["early_start"]["attached"], false, "{ncu}");
    assert!(ncu["warnings"][0]
        .as_str()
        .unwrap()
        .contains("ended before ncu attached (see ncu/workload.log; its start ran beside another run of the workload: one that binds a port, takes a lock or writes a fixed file before its first CUDA call cannot start twice at once and needs ncu.early_start=false); starting the workload under ncu as usual"));
    assert_eq!(lines_starting(&sb, "ncu --mode=attach"), 0);
    assert_eq!(lines_starting(&sb, "ncu --target-processes"), 1);
    // cmd.txt holds what ran: the launch, the attach it planned, the imports, the usual line.
    let cmd = read(sb.run("r").join("ncu/cmd.txt"));
    assert!(
        cmd.lines()
            .last()
            .unwrap()
            .contains("--target-processes all --nvtx --nvtx-include decode/"),
        "{cmd}"
    );
    assert!(read(sb.run("r").join("ncu/workload.log")).contains("held workload: died"));
}

#[test]
fn an_attach_ncu_refuses_falls_back_to_the_usual_launch() {
    let sb = Sandbox::new();
    sb.profile_decode("r", &[])
        .env("FAKE_NCU_ATTACH", "refuse")
        .assert()
        .success();
    let st = status(&sb.run("r"));
    let ncu = &st["passes"]["ncu"];
    assert_eq!(ncu["state"], "ok", "{ncu}");
    assert!(ncu["warnings"][0]
        .as_str()
        .unwrap()
        .contains("ncu would not attach with these options (==ERROR== Invalid option --nvtx specified for --mode attach)"));
    assert_eq!(lines_starting(&sb, "ncu --target-processes"), 1);
    assert!(read(sb.run("r").join("kernels.md")).contains("nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN"));
}

#[test]
fn an_attach_before_the_copy_is_attachable_is_tried_again_until_it_is() {
    let sb = Sandbox::new();
    sb.profile_decode("r", &[])
        .env("FAKE_NCU_ATTACH", "notyet:2")
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "the held workload is still starting",
        ));
    let st = status(&sb.run("r"));
    let ncu = &st["passes"]["ncu"];
    assert_eq!(ncu["state"], "ok", "{ncu}");
    assert_eq!(ncu["ncu"]["early_start"]["attached"], true, "{ncu}");
    // The nsys pass records the copy that ran beside it, for the reports to read back.
    let beside = &st["passes"]["nsys"]["nsys"]["held_beside"];
    assert!(beside["busy_s"].as_f64().is_some(), "{beside}");
    assert_eq!(
        lines_starting(&sb, "ncu --mode=attach"),
        3,
        "{}",
        sb.calls()
    );
    assert_eq!(lines_starting(&sb, "ncu --target-processes"), 0);
    assert!(read(sb.run("r").join("kernels.md")).contains("nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN"));
}

#[test]
fn early_start_off_or_impossible_runs_the_passes_one_after_the_other() {
    let sb = Sandbox::new();
    let mut off = vec!["ncu.early_start=false"];
    off.extend_from_slice(DECODE);
    sb.profile("off", &off).assert().success();
    assert_eq!(lines_starting(&sb, "ncu --mode="), 0, "{}", sb.calls());
    let st = status(&sb.run("off"));
    assert!(st["passes"]["ncu"]["ncu"]["early_start"].is_null());
    assert!(st["passes"]["nsys"]["nsys"]["held_beside"].is_null());
    // Raw ncu arguments may belong to the launch: the passes run one after the other.
    let mut raw = vec!["ncu.extra_args=[--cache-control,none]"];
    raw.extend_from_slice(DECODE);
    sb.profile("raw", &raw).assert().success();
    assert_eq!(lines_starting(&sb, "ncu --mode="), 0, "{}", sb.calls());
    // Without an nsys pass there is nothing to overlap.
    let mut no_nsys = vec!["--no-nsys"];
    no_nsys.extend_from_slice(DECODE);
    sb.profile("no-nsys", &no_nsys).assert().success();
    assert_eq!(lines_starting(&sb, "ncu --mode="), 0, "{}", sb.calls());
    // Nor is nsys asked which GPUs it samples, and no metric set is made.
    let calls = sb.calls();
    let asked = calls.matches("--gpu-metrics-devices=help").count();
    let passes = calls.matches("nsys profile --trace").count();
    assert_eq!((asked, passes), (2, 2), "the runs before it only; {calls}");
    assert!(!sb.run("no-nsys").join("nsys/gpu_metrics.config").exists());
}

#[test]
fn a_held_copy_the_pass_does_not_need_is_stopped() {
    // The re-run finds every chosen kernel in the metrics cache: ncu does not run, and the
    // copy held since the nsys pass is stopped, not left waiting.
    let sb = Sandbox::new();
    let mut args = vec!["ncu.top_n=2", "ncu.coverage=0.01"];
    args.extend_from_slice(DECODE);
    sb.profile("one", &args)
        .env("FAKE_SMI", "1")
        .assert()
        .success();
    // Without the last run's word that the cache answers it, the re-run starts the copy.
    forget_last_runs(&sb);
    sb.profile("two", &args)
        .env("FAKE_SMI", "1")
        .assert()
        .success();
    assert_eq!(lines_starting(&sb, "ncu --mode=launch"), 2);
    assert_eq!(lines_starting(&sb, "ncu --mode=attach"), 1);
    let cmd = read(sb.run("two").join("ncu/cmd.txt"));
    assert!(cmd.is_empty(), "{cmd}");
    assert_eq!(held_left(&sb), 0);
}

/// Held launches of this sandbox still running (other tests run beside this one).
fn held_left(sb: &Sandbox) -> usize {
    let mine = format!("FAKE_CALLS={}", sb.path().join("calls.log").display());
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|p| {
            let read = |f: &str| std::fs::read(p.path().join(f)).unwrap_or_default();
            let args = String::from_utf8_lossy(&read("cmdline")).replace('\0', " ");
            let env = String::from_utf8_lossy(&read("environ")).replace('\0', "\n");
            args.contains("--mode=launch") && env.lines().any(|l| l == mine)
        })
        .count()
}

/// Run `r`'s held launch: the NVML check's value its workload saw (the fake's record), and its
/// line in cmd.txt.
fn nvml_check(sb: &Sandbox) -> (String, String) {
    let calls = sb.calls();
    let seen = calls
        .lines()
        .find_map(|l| l.strip_prefix("ncu-env PYTORCH_NVML_BASED_CUDA_CHECK="))
        .expect("the held launch records its environment")
        .to_string();
    let cmd = read(sb.run("r").join("ncu/cmd.txt"));
    let launch = cmd.lines().find(|l| l.contains("--mode=launch")).unwrap();
    (seen, launch.to_string())
}

#[test]
fn a_copy_that_goes_on_after_its_attach_is_stopped_and_torch_asks_nvml_whether_cuda_exists() {
    // The held workload runs on 60 s after its attach ended, as the real one does.
    let sb = Sandbox::new();
    sb.profile_decode("r", &[])
        .env("FAKE_NCU_LINGER", "60")
        .assert()
        .success();
    let ncu = &status(&sb.run("r"))["passes"]["ncu"];
    assert_eq!(ncu["state"], "ok", "{ncu}");
    assert_eq!(ncu["ncu"]["early_start"]["attached"], true, "{ncu}");
    assert_eq!(held_left(&sb), 0);
    // The copy's `torch.cuda.is_available()` asks NVML, so it is held after its start-up; the
    // launch line in cmd.txt says so.
    let (seen, launch) = nvml_check(&sb);
    assert_eq!(seen, "1");
    assert!(
        launch.starts_with("env PYTORCH_NVML_BASED_CUDA_CHECK=1 "),
        "{launch}"
    );
}

/// A pass past its time budget (`ncu.budget_s`) is stopped as by a Ctrl-C: the attach ends the
/// held workload and writes what it profiled, which the reports read; the record says so.
#[test]
fn an_attached_pass_past_its_time_budget_is_stopped_and_keeps_what_it_measured() {
    let sb = Sandbox::new();
    // 4 s: the double profiles once its held workload runs, which on a loaded 2-core machine
    // took over 1 s; the workload is held 60 s, far past it.
    let mut args = vec!["ncu.budget_s=4"];
    args.extend_from_slice(DECODE);
    let t0 = std::time::Instant::now();
    sb.profile("r", &args)
        .env("FAKE_NCU_HOLD", "60")
        .assert()
        .success();
    let ncu = common::stopped_at_bound(&sb.run("r"), t0, "time budget of 4 s (ncu.budget_s)");
    assert_eq!(ncu["ncu"]["early_start"]["attached"], true, "{ncu}");
    let budget = &ncu["ncu"]["budget"];
    assert_eq!(budget["reached"], true, "{ncu}");
    assert_eq!(budget["from"], "ncu.budget_s", "{ncu}");
    assert_eq!(held_left(&sb), 0);
    let md = read(sb.run("r").join("kernels.md"));
    let line = md
        .lines()
        .find(|l| l.contains("ncu was stopped at its time budget of 4 s"))
        .unwrap_or_else(|| panic!("{md}"));
    // The largest kernel without ncu's figures is named with its share, where one is.
    if !line.contains(" 0.0% left out") {
        assert!(
            line.contains("the largest kernel left without its figures "),
            "{line}"
        );
    }
}

/// A budget that ends before ncu has profiled anything (hand-made: a launched pass whose
/// workload runs on without reaching a chosen kernel): no-data, the budget named, and not the
/// unfiltered retry, which would run the workload again past the same budget.
#[test]
fn a_budget_that_ends_before_any_kernel_says_so_and_is_not_retried() {
    let sb = Sandbox::new();
    let mut args = vec!["ncu.budget_s=1", "ncu.early_start=false"];
    args.extend_from_slice(DECODE);
    sb.profile("r", &args)
        .env("FAKE_NCU_HOLD", "60")
        .env("FAKE_NCU_MODE", "nokernels")
        .assert()
        .code(11);
    let ncu = &status(&sb.run("r"))["passes"]["ncu"];
    assert_eq!(ncu["state"], "no-data", "{ncu}");
    let why = ncu["reason"].as_str().unwrap();
    assert!(
        why.starts_with(
            "ncu reached its time budget of 1 s (ncu.budget_s) before it profiled a kernel"
        ),
        "{why}"
    );
    assert_eq!(
        lines_starting(&sb, "ncu --target-processes"),
        1,
        "{}",
        sb.calls()
    );
    assert!(sb.run("r").join("kernels.md").is_file());
}

#[test]
fn a_workload_that_sets_the_nvml_check_itself_keeps_its_value() {
    let sb = Sandbox::new();
    let mut args = vec!["+workload.env.PYTORCH_NVML_BASED_CUDA_CHECK=0"];
    args.extend_from_slice(DECODE);
    sb.profile("r", &args).assert().success();
    let (seen, launch) = nvml_check(&sb);
    assert_eq!(seen, "0");
    assert!(
        launch.starts_with("env PYTORCH_NVML_BASED_CUDA_CHECK=0 ") && !launch.contains("CHECK=1"),
        "{launch}"
    );
}

#[test]
fn a_re_run_the_cache_answers_does_not_start_the_copy_and_a_wrong_guess_is_not_repeated() {
    let sb = Sandbox::new();
    let mut args = vec!["ncu.top_n=2", "ncu.coverage=0.01"];
    args.extend_from_slice(DECODE);
    let run = |id: &str| {
        sb.profile(id, &args)
            .env("FAKE_SMI", "1")
            .assert()
            .success();
        status(&sb.run(id))["passes"]["ncu"].clone()
    };
    run("one");
    assert_eq!(lines_starting(&sb, "ncu --mode=launch"), 1);
    // The first run stored every kernel it chose: the re-run expects the cache to answer.
    let two = run("two");
    assert_eq!(
        lines_starting(&sb, "ncu --mode=launch"),
        1,
        "{}",
        sb.calls()
    );
    assert_eq!(two["ncu"]["warm_expected"], "one", "{two}");
    assert_eq!(two["ncu"]["cache"]["hits"], 2, "{two}");
    assert!(read(sb.run("two").join("ncu/cmd.txt")).is_empty());
    // The cache emptied: the guess is wrong, the pass starts the workload as usual ...
    std::fs::remove_dir_all(sb.path().join("cache/stage2/ncu/entries")).unwrap();
    let three = run("three");
    assert_eq!(three["state"], "ok", "{three}");
    assert_eq!(three["ncu"]["warm_expected"], "two", "{three}");
    assert_eq!(lines_starting(&sb, "ncu --mode=launch"), 1);
    assert_eq!(lines_starting(&sb, "ncu --target-processes"), 1);
    // ... and the next run starts early again.
    let four = run("four");
    assert!(four["ncu"]["warm_expected"].is_null(), "{four}");
    assert_eq!(lines_starting(&sb, "ncu --mode=launch"), 2);
}

#[test]
fn kernels_from_two_processes_start_the_workload_as_usual() {
    // Hand-made error path: the replayed export with one kernel moved to another process (an
    // attach reaches one held process; ncu's launch profiles both).
    let sb = Sandbox::new();
    let dir = sb.path().join("two-processes");
    std::fs::create_dir_all(&dir).unwrap();
    for f in std::fs::read_dir(common::root().join("tests/data/nsys")).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, dir.join(f.file_name().unwrap())).unwrap();
    }
    let db = rusqlite::Connection::open(dir.join("run.sqlite")).unwrap();
    db.execute(
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = globalPid + (1 << 24) \
         WHERE rowid = (SELECT MAX(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)",
        [],
    )
    .unwrap();
    drop(db);
    sb.profile_decode("r", &[])
        .env("FAKE_NSYS_DIR", &dir)
        .assert()
        .success();
    let ncu = &status(&sb.run("r"))["passes"]["ncu"];
    assert_eq!(ncu["state"], "ok", "{ncu}");
    assert_eq!(ncu["ncu"]["early_start"]["attached"], false, "{ncu}");
    assert!(
        ncu["warnings"][0]
            .as_str()
            .unwrap()
            .contains("the nsys pass saw kernels from more than one process"),
        "{ncu}"
    );
    assert_eq!(lines_starting(&sb, "ncu --mode=attach"), 0);
    assert_eq!(lines_starting(&sb, "ncu --target-processes"), 1);
    // The prediction is a launch's, not an attach's.
    let basis = ncu["ncu"]["cost"]["basis"].as_str().unwrap();
    assert!(!basis.contains("held at its first CUDA call"), "{basis}");
    // cmd.txt's last line is the usual launch that ran.
    let cmd = read(sb.run("r").join("ncu/cmd.txt"));
    assert!(!cmd.contains("--mode=attach"), "{cmd}");
}

/// A re-run whose learned pace says the kernels the cache lacks overrun its budget gives ncu
/// only the largest that fit, and says so (the replays paced by the double: 1 s a kernel).
#[test]
fn a_budget_the_learned_pace_overruns_gives_ncu_the_largest_kernels_that_fit() {
    let sb = Sandbox::new();
    let run = |id: &str, extra: &[&str]| {
        let mut args = vec!["ncu.early_start=false"];
        args.extend_from_slice(extra);
        args.extend_from_slice(DECODE);
        sb.profile(id, &args)
            .env("FAKE_SMI", "1")
            .env("FAKE_NCU_PACE", "1")
            .assert()
            .success();
        status(&sb.run(id))["passes"]["ncu"]["ncu"].clone()
    };
    // The top 2, unbounded: the cost model learns 1 s a kernel.
    let one = run(
        "one",
        &["ncu.top_n=2", "ncu.coverage=0.01", "ncu.budget_s=null"],
    );
    assert_eq!(one["cache"]["stored"], 2, "{one}");
    // The top 8 within a budget that affords fewer than the 6 the cache lacks at that pace.
    let two = run(
        "two",
        &["ncu.top_n=8", "ncu.coverage=0.99", "ncu.budget_s=4"],
    );
    let cost = &two["cost"];
    let (given, deferred) = (
        cost["kernels"].as_u64().unwrap(),
        cost["deferred"].as_u64().unwrap_or(0),
    );
    assert!(deferred > 0 && given >= 1, "{two}");
    assert!(
        cost["basis"].as_str().unwrap().contains(&format!(
            "its time budget affords the {given} largest of the"
        )),
        "{two}"
    );
    let md = read(sb.run("two").join("kernels.md"));
    assert!(
        md.contains(&format!(
            "afforded the {given} largest of the chosen kernels"
        )),
        "{md}"
    );
    assert_eq!(
        sb.ncu_profiles().len(),
        2,
        "one ncu profile per run: {}",
        sb.calls()
    );
    // ncu was given the largest the cache lacked: the kernels with ncu's figures are the top
    // 2 (cached) and the next `given`, in the table's rank order.
    let measured: Vec<bool> = md
        .lines()
        .skip_while(|l| !l.starts_with("| # | kernel | instances"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.split('|').nth(7).is_some_and(|c| c.trim() != "–"))
        .collect();
    let top = 2 + given as usize;
    assert!(measured.len() > top, "{md}");
    assert!(measured[..top].iter().all(|&m| m), "{md}");
    assert!(!measured[top..].iter().any(|&m| m), "{md}");
}

/// cudaProfilerStart/Stop windows (the real windows capture of examples/sample-run-hf-window):
/// the workload is held as for a range, and `--profile-from-start off` goes on the attach, which
/// takes it; the launch, which refuses it (the fake answers as the real ncu does), never gets it.
#[test]
fn profiler_api_windows_hold_the_workload_and_gate_the_attach() {
    let sb = Sandbox::new();
    sb.profile("w", &["nsys.capture_range=cudaProfilerApi"])
        .env(
            "FAKE_NSYS_DIR",
            common::root().join("examples/sample-run-hf-window/nsys"),
        )
        .assert()
        .success();
    let launch = sb.calls_starting("ncu --mode=launch");
    let attach = sb.calls_starting("ncu --mode=attach");
    assert_eq!((launch.len(), attach.len()), (1, 1), "{}", sb.calls());
    assert!(!launch[0].contains("--profile-from-start"), "{}", launch[0]);
    assert!(
        attach[0].contains("--profile-from-start off"),
        "{}",
        attach[0]
    );
    let st = status(&sb.run("w"));
    assert_eq!(
        st["passes"]["ncu"]["ncu"]["early_start"]["attached"], true,
        "{st}"
    );
}

/// A pass that stored fewer kernels than ncu was given (hand-made: the workload under ncu
/// reached 1 of the 2 chosen kernels) does not tell the next run that the cache answers it:
/// that run starts its copy early again.
#[test]
fn a_pass_that_stored_some_of_its_kernels_does_not_expect_a_warm_re_run() {
    let sb = Sandbox::new();
    let mut args = vec!["ncu.top_n=2", "ncu.coverage=0.01"];
    args.extend_from_slice(DECODE);
    sb.profile("one", &args)
        .env("FAKE_SMI", "1")
        .env("FAKE_NCU_KEEP", "1")
        .assert()
        .success();
    let one = &status(&sb.run("one"))["passes"]["ncu"];
    assert_eq!(one["state"], "ok", "{one}");
    assert_eq!(one["ncu"]["cost"]["kernels"], 2, "{one}");
    assert_eq!(one["ncu"]["cache"]["stored"], 1, "{one}");
    sb.profile("two", &args)
        .env("FAKE_SMI", "1")
        .assert()
        .success();
    let two = &status(&sb.run("two"))["passes"]["ncu"];
    assert!(two["ncu"]["warm_expected"].is_null(), "{two}");
    assert_eq!(two["ncu"]["cache"]["hits"], 1, "{two}");
    assert_eq!(
        lines_starting(&sb, "ncu --mode=launch"),
        2,
        "{}",
        sb.calls()
    );
}
