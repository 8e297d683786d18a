//! `stage2 profile` end to end with fake nsys/ncu that replay real captured output.

mod common;

use common::{read, status, Sandbox};
use predicates::prelude::*;

const LAYOUT: &[&str] = &[
    "config.yaml",
    "env.json",
    "inputs.yaml",
    "status.json",
    "nsys/cmd.txt",
    "nsys/nsys.log",
    "nsys/run.nsys-rep",
    "nsys/summary_cuda_gpu_kern_sum.csv",
    "nsys/summary_nvtx_sum.csv",
    "nsys/summary_cuda_api_sum.csv",
    "nsys/run.sqlite",
    "ncu/cmd.txt",
    "ncu/ncu.log",
    "ncu/sections.txt",
    "ncu/decode.ncu-rep",
    "ncu/decode_raw.csv",
    "ncu/decode_raw_mangled.csv",
    "kernels.md",
    "stakeholder_summary.md",
    "kernels.csv",
    "summary.json",
];

#[test]
fn full_run_leaves_the_whole_layout() {
    let sb = Sandbox::new();
    sb.profile_decode("r1", &[])
        .assert()
        .success()
        .stderr(predicate::str::contains("nsys pass: ok"));
    let run = sb.run("r1");
    for f in LAYOUT {
        let meta = std::fs::metadata(run.join(f)).unwrap_or_else(|_| panic!("missing {f}"));
        assert!(meta.len() > 0, "empty {f}");
    }
    let nsys_cmd = read(run.join("nsys/cmd.txt"));
    let first = nsys_cmd.lines().next().unwrap();
    assert!(
        first.contains("--capture-range=nvtx --nvtx-capture=decode --env-var=NSYS_NVTX_PROFILER_REGISTER_ONLY=0"),
        "{first}"
    );
    assert!(
        first.ends_with("-o ") || first.contains(" python3 -c 'print(1)'"),
        "{first}"
    );
    // Every instance of a repeated range is captured by default.
    assert!(first.contains("--capture-range-end=none"), "{first}");
    // The top kernels become ncu's filter, by mangled name from the nsys SQLite.
    // The workload was started beside the nsys pass, held by ncu at its first CUDA call
    // (NVTX tracked from the start), and profiled by an attach that brings the filters.
    let ncu_cmd = read(run.join("ncu/cmd.txt"));
    let mut lines = ncu_cmd.lines();
    let launch = lines.next().unwrap();
    assert!(
        launch.contains("--mode=launch --target-processes all --nvtx --port "),
        "{ncu_cmd}"
    );
    // The launch listens on ports of its own, and the attach looks there only.
    let ports = launch.split(" --nvtx ").nth(1).unwrap();
    let ports = ports.split(" python3").next().unwrap();
    assert!(ports.ends_with("--max-connections 16"), "{launch}");
    let attach = format!("--mode=attach --hostname 127.0.0.1 {ports} --nvtx-include decode/");
    assert!(lines.next().unwrap().contains(&attach), "{ncu_cmd}");
    assert_eq!(
        status(&run)["passes"]["ncu"]["ncu"]["early_start"]["attached"],
        true
    );
    assert!(ncu_cmd.contains("--kernel-name-base mangled --kernel-id '::regex:^(nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN|_ZN"), "{ncu_cmd}");
    // Coverage selection: the top 10, then more until 80% of kernel time: 12 kernels.
    let regex = ncu_cmd
        .lines()
        .nth(1)
        .unwrap()
        .split("::regex:^(")
        .nth(1)
        .unwrap();
    assert_eq!(regex.split(")$:1").next().unwrap().split('|').count(), 12);
    let st = status(&run);
    assert_eq!(st["state"], "ok");
    assert_eq!(st["passes"]["nsys"]["state"], "ok");
    assert_eq!(st["passes"]["ncu"]["state"], "ok");
    let md = read(run.join("kernels.md"));
    assert!(
        md.contains("| 1 | nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN | 160 | 526.21 |"),
        "{md}"
    );
    let env: serde_json::Value = serde_json::from_str(&read(run.join("env.json"))).unwrap();
    assert_eq!(env["tools"]["nsys"]["version"], "2025.3.1.0");
    assert_eq!(env["tools"]["ncu"]["how"], "PATH");
    assert!(read(run.join("inputs.yaml")).contains("print(1)"));
    // The fake ran the workload under each profiler.
    assert_eq!(sb.ncu_profiles().len(), 1);
}

#[test]
fn report_re_renders_a_finished_run_identically() {
    let sb = Sandbox::new();
    sb.profile_decode("r", &[]).assert().success();
    let run = sb.run("r");
    let before: Vec<String> = [
        "kernels.md",
        "stakeholder_summary.md",
        "kernels.csv",
        "summary.json",
    ]
    .iter()
    .map(|f| read(run.join(f)))
    .collect();
    for f in [
        "kernels.md",
        "stakeholder_summary.md",
        "kernels.csv",
        "summary.json",
    ] {
        std::fs::remove_file(run.join(f)).unwrap();
    }
    sb.stage2_without_tools()
        .arg("report")
        .arg(&run)
        .assert()
        .success();
    let after: Vec<String> = [
        "kernels.md",
        "stakeholder_summary.md",
        "kernels.csv",
        "summary.json",
    ]
    .iter()
    .map(|f| read(run.join(f)))
    .collect();
    assert_eq!(before, after);
}

#[test]
fn ncu_profiling_nothing_with_the_filter_is_rerun_without_it() {
    let sb = Sandbox::new();
    sb.profile_decode("r", &[])
        .env("FAKE_NCU_MODE", "nokernels-filtered")
        .assert()
        .success();
    let run = sb.run("r");
    let calls = sb.calls();
    let profiles = sb.ncu_profiles();
    assert_eq!(profiles.len(), 2, "{calls}");
    assert!(profiles[0].contains("regex:") && !profiles[1].contains("regex:"));
    let st = status(&run);
    assert_eq!(st["passes"]["ncu"]["state"], "ok");
    assert!(st["passes"]["ncu"]["warnings"][0]
        .as_str()
        .unwrap()
        .contains("without it"));
    // The held workload's launch and the attach, the three imports, then the retry.
    assert_eq!(read(run.join("ncu/cmd.txt")).lines().count(), 6);
}

/// ncu on another range than nsys's capture began with (the README's lead command): when the
/// capture ran on and its export holds ncu's range, ncu's kernels are chosen from those
/// launches by time; when it holds none, ncu profiles each distinct kernel there. Either way
/// ncu's kernels get their own table.
#[test]
fn ncu_on_another_range_takes_its_kernels_from_the_export_when_it_can() {
    let sb = Sandbox::new();
    // The replayed export holds `decode` instances (the capture ran on past `prefill`).
    sb.profile(
        "r",
        &["--nvtx-capture", "prefill", "ncu.nvtx_include=decode"],
    )
    .assert()
    .success()
    .stderr(predicate::str::contains(
        "its export holds `decode`, so ncu's kernels are chosen from its launches there",
    ));
    let run = sb.run("r");
    let cmd = read(run.join("ncu/cmd.txt"));
    assert!(cmd.contains("--kernel-id '::regex:^("), "{cmd}");
    let md = read(run.join("kernels.md"));
    assert!(md.contains("## Kernels ncu measured in `decode`"), "{md}");
    let csv = read(run.join("kernels.csv"));
    assert!(csv.lines().any(|l| l.contains(",ncu,decode,")), "{csv}");
    // A range the export does not hold: each distinct kernel, and the console says why.
    sb.profile(
        "g",
        &["--nvtx-capture", "prefill", "ncu.nvtx_include=generate"],
    )
    .assert()
    .stderr(predicate::str::contains(
        "its export holds no instance of `generate`",
    ));
    assert!(read(sb.run("g").join("ncu/cmd.txt")).contains("--kernel-id :::1"));
}

/// One capture decides both passes: ncu's range follows the capture unless set; and where nsys
/// recorded the whole run and ncu's range is not in it, ncu is not run blind.
#[test]
fn ncu_follows_the_capture_and_is_not_run_for_a_range_that_never_ran() {
    let sb = Sandbox::new();
    sb.profile_decode("f", &[]).assert().success();
    assert!(read(sb.run("f").join("ncu/cmd.txt")).contains("--nvtx-include decode/"));
    sb.profile("n", &["nsys.gating_nvtx=false", "ncu.nvtx_include=step"])
    .assert()
    .success()
    .stderr(predicate::str::contains(
        "ncu's range `step` never ran while nsys recorded the whole run: its export holds the NVTX ranges `decode`",
    ));
    let run = sb.run("n");
    assert!(!run.join("ncu/cmd.txt").exists());
    let st = status(&run);
    assert_eq!(st["passes"]["ncu"]["state"], "skipped");
    assert!(read(run.join("kernels.md")).contains("nvjet"));
}

/// ncu profiling nothing after a good nsys pass: the run is `partial` (exit 11), the nsys
/// findings, headline included, written; the ncu pass says what went wrong.
#[test]
fn ncu_profiling_nothing_at_all_is_a_pass_without_data() {
    let sb = Sandbox::new();
    sb.profile("r", &[])
        .env("FAKE_NCU_MODE", "nokernels")
        .assert()
        .code(11);
    let st = status(&sb.run("r"));
    assert_eq!(
        (&st["state"], &st["exit_code"]),
        (&"partial".into(), &11.into())
    );
    assert!(read(sb.run("r").join("stakeholder_summary.md")).contains("**Headline:**"));
    assert_eq!(st["passes"]["ncu"]["state"], "no-data");
    assert_eq!(st["passes"]["ncu"]["exit_code"], 5);
    assert!(st["passes"]["ncu"]["reason"]
        .as_str()
        .unwrap()
        .contains("match only start/end ranges"));
    assert_eq!(st["passes"]["nsys"]["state"], "ok");
    // The nsys data still made it into the reports.
    assert!(read(sb.run("r").join("kernels.md")).contains("nvjet"));
}

/// No report from nsys for a range the workload does emit (its diagnosis lists `decode`): ncu
/// still runs on it (a range the diagnosis lacks is another test's).
#[test]
fn nsys_generating_no_report_does_not_stop_ncu() {
    let sb = Sandbox::new();
    sb.profile_decode("r", &[])
        .env("FAKE_NSYS_MODE", "noreport")
        .assert()
        .code(5)
        .stderr(predicate::str::contains("--nvtx-capture=decode"));
    let run = sb.run("r");
    let st = status(&run);
    assert_eq!(st["state"], "no-data");
    assert_eq!(st["passes"]["nsys"]["state"], "no-data");
    assert_eq!(st["passes"]["ncu"]["state"], "ok");
    // Without nsys data ncu runs with no kernel filter: each distinct kernel once.
    assert!(read(run.join("ncu/cmd.txt")).contains("--kernel-name-base demangled --kernel-id :::1"));
    let summary: serde_json::Value = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
    assert_eq!(summary["passes"]["nsys"]["state"], "no-data");
    assert!(read(run.join("stakeholder_summary.md")).contains("The nsys pass did not complete"));
}

/// A workload that fails before its range opens: its failure, with its own last lines, exit
/// 4; no diagnosis pass and no ncu pass run it again.
#[test]
fn a_workload_that_fails_before_its_range_is_reported_as_failing() {
    let sb = Sandbox::new();
    let calls = sb.path().join("calls.txt");
    sb.profile_of(
        "r",
        common::DECODE,
        &[
            "python3",
            "-c",
            "import sys; print('loading /models/x'); sys.exit(3)",
        ],
    )
    .env("FAKE_NSYS_MODE", "noreport")
    .env("FAKE_CALLS", &calls)
    .assert()
    .code(4)
    .stderr(predicate::str::contains(
        "the workload exited with status 3 before NVTX range `decode` opened",
    ))
    .stderr(predicate::str::contains("loading /models/x"))
    .stderr(predicate::str::contains("Check the NVTX range names").not());
    let run = sb.run("r");
    let st = status(&run);
    assert_eq!(st["passes"]["nsys"]["state"], "failed");
    assert_eq!(st["passes"]["ncu"]["state"], "skipped");
    let calls = read(&calls);
    // (`nsys profile --gpu-metrics-devices=help` asks which GPUs it can sample; no pass.)
    assert_eq!(calls.matches("nsys profile --trace").count(), 1, "{calls}");
    assert!(!calls.contains("--nvtx-include"), "{calls}");
}

#[test]
fn a_capture_that_never_opens_lists_the_ranges_the_workload_emits() {
    let sb = Sandbox::new();
    sb.profile("r", &["--nvtx-capture", "decod", "--no-ncu"])
        .env("FAKE_NSYS_MODE", "noreport")
        .assert()
        .code(5)
        .stderr(predicate::str::contains("did you mean `decode`?"));
    let run = sb.run("r");
    let reason = status(&run)["passes"]["nsys"]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.contains("decode (PushPop, 1x)"), "{reason}");
    // The ungated pass is recorded with the pass's other commands.
    let cmd = read(run.join("nsys/cmd.txt"));
    assert!(
        cmd.lines()
            .any(|l| l.contains("profile --trace=nvtx") && !l.contains("--capture-range")),
        "{cmd}"
    );
}

/// A capture that never opened in a whole run of the workload: ncu, following it, would run the
/// workload again to profile nothing (an encoder-decoder's `decode` unmarked took 19 s of ncu
/// on an H100 that way), so it is not run, and says why with the ranges the workload emits.
#[test]
fn ncu_is_not_run_on_a_range_the_workload_never_opened() {
    let sb = Sandbox::new();
    let calls = sb.path().join("calls.log");
    sb.profile("r", &["--nvtx-capture", "decod"])
        .env("FAKE_NSYS_MODE", "noreport")
        .env("FAKE_CALLS", &calls)
        .assert()
        .code(5)
        .stderr(predicate::str::contains(
            "ncu's range `decod` never opened in a whole run of the workload under nsys (the workload emits these NVTX ranges: ",
        ));
    let st = status(&sb.run("r"));
    assert_eq!(st["passes"]["ncu"]["state"], "skipped");
    assert!(
        st["passes"]["ncu"]["reason"]
            .as_str()
            .unwrap()
            .contains("did you mean `decode`?"),
        "{st}"
    );
    // The copy held since the nsys pass began is stopped, never attached to or profiled.
    let calls = read(&calls);
    assert!(
        !calls
            .lines()
            .any(|l| l.starts_with("ncu ") && (l.contains("--mode=attach") || l.contains(" -o "))),
        "{calls}"
    );
    // The capture's own name in what the workload emits (nsys wrote no report for another
    // reason): ncu runs as before.
    sb.profile_decode("s", &[])
        .env("FAKE_NSYS_MODE", "noreport")
        .assert()
        .code(5);
    assert_ne!(status(&sb.run("s"))["passes"]["ncu"]["state"], "skipped");
}

#[test]
fn ncu_profiling_nothing_says_why_from_the_nsys_ranges() {
    let sb = Sandbox::new();
    sb.profile_decode("r", &[])
        .env("FAKE_NCU_MODE", "nokernels")
        .assert()
        .code(11);
    let reason = status(&sb.run("r"))["passes"]["ncu"]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.contains("`decode` exists (PushPop)"), "{reason}");
}

#[test]
fn nsys_ending_the_app_at_the_end_of_the_range_is_not_a_failure() {
    let sb = Sandbox::new();
    sb.profile("r", &["nsys.capture_range_end=null"])
        .env("FAKE_NSYS_MODE", "shutdown")
        .assert()
        .success();
    let st = status(&sb.run("r"));
    assert!(st["passes"]["nsys"]["warnings"][0]
        .as_str()
        .unwrap()
        .contains("capture_range_end=none"));
}

#[test]
fn nsys_without_its_importer_is_a_tool_error() {
    let sb = Sandbox::new();
    sb.profile("r", &["--no-ncu"])
        .env("FAKE_NSYS_MODE", "qdstrm")
        .assert()
        .code(3)
        .stderr(predicate::str::contains("QdstrmImporter"));
}

#[test]
fn ncu_without_nsys_ranks_by_ncu_time() {
    let sb = Sandbox::new();
    sb.profile("r", &["--no-nsys"]).assert().success();
    let run = sb.run("r");
    assert!(!run.join("nsys/cmd.txt").exists());
    assert!(read(run.join("ncu/cmd.txt")).contains(":::1"));
    assert_eq!(status(&run)["passes"]["nsys"]["state"], "skipped");
    assert!(read(run.join("kernels.md")).contains("ncu's profiled launches only"));
}

#[test]
fn a_failing_workload_exits_4_and_keeps_what_was_produced() {
    let sb = Sandbox::new();
    sb.profile_of(
        "r",
        &[],
        &[
            "python3",
            "-c",
            "import sys; print('boom', file=sys.stderr); sys.exit(3)",
        ],
    )
    // It fails after its range opened, so nsys wrote a report.
    .env("FAKE_NSYS_MODE", "failafter")
    .assert()
    .code(4)
    .stderr(predicate::str::contains("boom"));
    let run = sb.run("r");
    let st = status(&run);
    assert_eq!(st["passes"]["nsys"]["state"], "failed");
    assert!(st["passes"]["nsys"]["reason"]
        .as_str()
        .unwrap()
        .contains("exit status 3"));
    // The report nsys wrote anyway was processed.
    assert!(run.join("nsys/summary_cuda_gpu_kern_sum.csv").exists());
    assert!(read(run.join("nsys/nsys.log")).contains("boom"));
    // The workload is not run again under ncu.
    assert_eq!(st["passes"]["ncu"]["state"], "skipped");
    assert!(st["passes"]["ncu"]["reason"]
        .as_str()
        .unwrap()
        .contains("failed under nsys"));
    // Only the copy held at its first CUDA call beside the nsys pass ran, and was stopped
    // there; the nsys pass says it was there.
    assert!(!sb.calls().lines().any(|l| l.starts_with("ncu")
        && l.contains("--nvtx")
        && !l.starts_with("ncu --mode=launch")));
    assert!(st["passes"]["nsys"]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("ncu.early_start=false")));
}

#[test]
fn both_passes_off_is_refused_and_a_dry_run_without_tools_says_so() {
    let sb = Sandbox::new();
    sb.profile("r", &["--no-nsys", "--no-ncu"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("nothing to run"));
    assert!(!sb.run("r").exists());
    sb.stage2_without_tools()
        .args([
            "profile",
            "--run-root",
            "runs",
            "--run-id",
            "d",
            "--dry-run",
            "--",
            "python3",
            "-c",
            "1",
        ])
        .assert()
        .success()
        .stderr(predicate::str::contains("a real run would exit 3"));
}

#[test]
fn a_missing_tool_exits_3_before_anything_runs() {
    let sb = Sandbox::new();
    sb.stage2_without_tools()
        .args(["profile", "--run-root", "runs", "--"])
        .args(common::WORKLOAD)
        .assert()
        .code(3)
        .stderr(
            predicate::str::contains("nsys not found").and(predicate::str::contains("STAGE2_NSYS")),
        );
    assert!(!sb.runs().exists());
}

#[test]
fn dry_run_writes_provenance_and_commands_and_runs_nothing() {
    let sb = Sandbox::new();
    sb.stage2_without_tools()
        .args([
            "profile",
            "--run-root",
            "runs",
            "--run-id",
            "d",
            "--dry-run",
            "--",
            "python3",
            "x.py",
        ])
        .assert()
        .success();
    let run = sb.run("d");
    for f in [
        "config.yaml",
        "env.json",
        "inputs.yaml",
        "status.json",
        "nsys/cmd.txt",
        "ncu/cmd.txt",
    ] {
        assert!(run.join(f).is_file(), "{f}");
    }
    assert!(!run.join("nsys/nsys.log").exists());
    assert_eq!(status(&run)["state"], "planned");
    assert!(read(run.join("nsys/cmd.txt")).starts_with("nsys profile --trace=cuda,nvtx --sample"));
}

#[test]
fn an_existing_run_id_is_never_reused() {
    let sb = Sandbox::new();
    sb.profile_of("same", &["--dry-run"], &["true"])
        .assert()
        .success();
    sb.profile_of("same", &["--dry-run"], &["true"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("already exists"));
}

#[test]
fn shell_metacharacters_reach_the_workload_literally() {
    let sb = Sandbox::new();
    sb.profile_of(
        "inj",
        &["--no-ncu"],
        &[
            "python3",
            "-c",
            "import sys; print(sys.argv[1])",
            "$(touch PWNED); rm -rf x | > y",
        ],
    )
    .assert()
    .success();
    assert!(!sb.path().join("PWNED").exists());
    assert!(!sb.path().join("y").exists());
    let line = read(sb.run("inj").join("nsys/cmd.txt"))
        .lines()
        .next()
        .unwrap()
        .to_string();
    let argv = shlex::split(&line).unwrap();
    assert_eq!(argv.last().unwrap(), "$(touch PWNED); rm -rf x | > y");
}

#[test]
fn secrets_never_reach_the_run_directory() {
    let sb = Sandbox::new();
    sb.profile_of(
        "sec",
        &["--dry-run"],
        &["python3", "https://user:hunter2@example.com/x"],
    )
    .env("HF_TOKEN", "hf_supersecret")
    .env("CUDA_API_KEY", "abc-secret-key")
    .assert()
    .success();
    let mut stack = vec![sb.run("sec")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                for secret in ["hf_supersecret", "abc-secret-key", "hunter2"] {
                    assert!(!text.contains(secret), "{secret} in {}", p.display());
                }
            }
        }
    }
}

#[test]
fn repeat_times_the_nsys_pass_n_times_and_keeps_the_spread() {
    let sb = Sandbox::new();
    sb.profile_decode("rep", &["--repeat", "3"])
        .assert()
        .success()
        .stderr(predicate::str::contains("nsys pass 3 of 3"));
    let run = sb.run("rep");
    for i in [2, 3] {
        assert!(run.join(format!("repeats/{i}/nsys/run.sqlite")).is_file());
        assert_eq!(status(&run.join(format!("repeats/{i}")))["state"], "ok");
    }
    // Three timed nsys passes, one ncu pass.
    let calls = sb.calls();
    assert_eq!(calls.matches("nsys profile --trace").count(), 3, "{calls}");
    // The repeats sample the same set as the first pass.
    assert_eq!(
        calls.matches("--gpu-metrics-set=file:").count(),
        3,
        "{calls}"
    );
    assert_eq!(
        calls
            .lines()
            .filter(|l| l.starts_with("ncu") && l.contains("--nvtx-include"))
            .count(),
        1,
        "{calls}"
    );
    let st = status(&run);
    assert_eq!(st["passes"]["nsys_repeat"]["state"], "ok");
    let s: serde_json::Value = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
    assert_eq!(s["timed_passes"], 3);
    let runs = &s["kernels"][0]["runs"];
    assert_eq!(runs["values"].as_array().unwrap().len(), 3);
    assert!(runs["stddev"].as_f64().is_some());
    assert!(s["totals"]["kernel_time_runs"]["mean"].as_f64().unwrap() > 0.0);
}

/// Secrets planted every way a user can: an env override, a URL with credentials in the
/// workload argv, a secret in stage2's own environment that the workload prints. None of them
/// is anywhere in the run directory; cmd.txt still runs the same (the secret comes from the
/// pasting shell); the run directory is private.
#[test]
fn no_secret_reaches_the_run_directory() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let token = "hf_PLANTEDtoken1234";
    let url_pw = "s3cretpassw0rd";
    let shell_secret = "shellSECRETvalue99";
    sb.profile_of(
        "sec",
        &[
            "--nvtx-capture",
            "decode",
            &format!("+workload.env.HF_TOKEN={token}"),
            "+workload.env.OMP_NUM_THREADS=2",
        ],
        &[
            "python3",
            "-c",
            "import os,sys; print(os.environ.get('HF_TOKEN'), os.environ.get('MY_API_KEY'))",
            &format!("https://user:{url_pw}@example.com/model"),
        ],
    )
    .env("MY_API_KEY", shell_secret)
    .assert()
    .success();
    let run = sb.run("sec");
    let mut files = Vec::new();
    let mut stack = vec![run.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    assert!(files.len() > 10);
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for s in [token, url_pw, shell_secret] {
            assert!(!text.contains(s), "{s} in {}", f.display());
        }
    }
    // The workload printed both secrets into the pass log; they were replaced there.
    assert!(read(run.join("nsys/nsys.log")).contains("<redacted> <redacted>"));
    let cmd = read(run.join("nsys/cmd.txt"));
    let first = cmd.lines().next().unwrap();
    assert!(
        first.starts_with("env HF_TOKEN=\"${HF_TOKEN:?set HF_TOKEN}\" OMP_NUM_THREADS=2 "),
        "{first}"
    );
    let mode = std::fs::metadata(&run).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let mode = std::fs::metadata(run.join("summary.json"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
}

/// A missing working directory is named before anything runs; a missing launcher is recorded
/// as the pass's failure with the run's final state (nothing left `running`).
#[test]
fn missing_cwd_and_missing_launcher_leave_no_run_pending() {
    let sb = Sandbox::new();
    sb.profile_of(
        "c",
        &["workload.cwd=/nonexistent/dir"],
        &["python3", "-c", "1"],
    )
    .assert()
    .code(2)
    .stderr(predicate::str::contains(
        "workload.cwd=/nonexistent/dir: no such directory",
    ));
    assert!(!sb.run("c").exists());
    sb.profile_of("l", &["--launcher", "srun"], &["python3", "-c", "1"])
        .env(
            "PATH",
            format!(
                "{}:/usr/bin:/bin",
                common::root().join("tests/fakes").display()
            ),
        )
        .assert()
        .code(3)
        .stderr(predicate::str::contains("`srun` not found"));
    let st = status(&sb.run("l"));
    assert_eq!(st["state"], "failed");
    assert_eq!(st["exit_code"], 3);
    assert_eq!(st["passes"]["nsys"]["state"], "failed");
    assert_eq!(st["passes"]["ncu"]["state"], "skipped");
}

/// `--auto-nvtx --python-sampling` on a dry run: the hook lands in the run directory, both
/// passes' lines carry its PYTHONPATH, only the nsys pass samples, and `--operators` asks
/// nsys for operator ranges.
#[test]
fn the_hook_and_its_variables_are_in_every_pasteable_line() {
    let sb = Sandbox::new();
    sb.stage2_without_tools()
        .args([
            "profile",
            "--run-root",
            "runs",
            "--run-id",
            "h",
            "--dry-run",
            "--auto-nvtx",
            "--python-sampling",
            "100",
            "--operators",
            "workload.auto_nvtx_skip=1",
            "--nvtx-capture",
            "decode",
            "--",
            "python3",
            "x.py",
        ])
        .assert()
        .success();
    let run = sb.run("h");
    assert!(run.join("hook/sitecustomize.py").is_file());
    let hook = run.join("hook").canonicalize().unwrap();
    let nsys = read(run.join("nsys/cmd.txt"));
    let ncu = read(run.join("ncu/cmd.txt"));
    for line in [&nsys, &ncu] {
        assert!(
            line.contains(&format!("PYTHONPATH={}", hook.display())),
            "{line}"
        );
        assert!(
            line.contains("STAGE2_AUTO_NVTX=1 STAGE2_AUTO_NVTX_SKIP=1"),
            "{line}"
        );
    }
    assert!(
        nsys.contains(",STAGE2_PY_SAMPLE_HZ=100,STAGE2_PY_SAMPLE_DIR="),
        "{nsys}"
    );
    assert!(nsys.contains("--pytorch=autograd-shapes-nvtx"), "{nsys}");
    assert!(!ncu.contains("STAGE2_PY_SAMPLE_HZ"), "{ncu}");
}

/// Modes as the README says: every folder of a run 0700 and every file 0600 (inputs.yaml and
/// what nsys and ncu wrote included); `run.private=false` opens them to 0755/0644.
#[test]
fn a_run_directory_is_private_through_and_through_unless_asked() {
    use std::os::unix::fs::PermissionsExt;
    fn modes(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, u32)>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let m = e.metadata().unwrap();
            out.push((e.path(), m.permissions().mode() & 0o777));
            if m.is_dir() {
                modes(&e.path(), out);
            }
        }
    }
    let sb = Sandbox::new();
    for (id, extra, dir_mode, file_mode) in [
        ("closed", None, 0o700, 0o600),
        ("open", Some("run.private=false"), 0o755, 0o644),
    ] {
        let flags: Vec<&str> = extra.into_iter().collect();
        sb.profile_decode(id, &flags).assert().success();
        let mut all = Vec::new();
        modes(&sb.run(id), &mut all);
        assert!(all.iter().any(|(p, _)| p.ends_with("inputs.yaml")));
        assert!(all.iter().any(|(p, _)| p.ends_with("nsys/run.sqlite")));
        for (p, m) in all {
            let want = if p.is_dir() { dir_mode } else { file_mode };
            assert_eq!(m, want, "{}: {m:o}", p.display());
        }
    }
}

/// The try-it path says what it is: the fakes replay a recorded capture, and the console says
/// so before the figures.
#[test]
fn the_test_doubles_are_named_on_the_console() {
    let sb = Sandbox::new();
    sb.profile_decode("t", &[]).assert().success().stderr(
        predicate::str::contains("nsys at ").and(predicate::str::contains(
            "is a test double: it runs the workload, then replays a recorded H100 capture",
        )),
    );
}

/// The doubles behave as the real tools for a workload that fails before its range: no report,
/// its status passed on, the run a failed workload (exit 4) with no replayed kernels in it,
/// under nsys and under ncu alone.
#[test]
fn a_workload_failing_before_its_range_gets_no_replayed_capture() {
    let sb = Sandbox::new();
    let fail = ["python3", "-c", "import sys; sys.exit(3)"];
    sb.profile_of("n", common::DECODE, &fail).assert().code(4);
    let st = status(&sb.run("n"));
    assert_eq!(st["passes"]["nsys"]["state"], "failed", "{st}");
    assert_eq!(st["passes"]["ncu"]["state"], "skipped", "{st}");
    assert!(!sb
        .run("n")
        .join("nsys/summary_cuda_gpu_kern_sum.csv")
        .exists());
    sb.profile_of("c", &["--no-nsys"], &fail).assert().code(4);
    let st = status(&sb.run("c"));
    assert_eq!(st["passes"]["ncu"]["state"], "failed", "{st}");
    assert!(st["passes"]["ncu"]["reason"]
        .as_str()
        .unwrap()
        .contains("exited with status 3 under ncu before any kernel was profiled"));
    assert!(!sb.run("c").join("ncu/decode_raw.csv").exists());
}

/// A Python workload's interpreter and package versions are read by the workload's own
/// interpreter in its environment (a hand-made `torch` distribution on PYTHONPATH stands for
/// an installed one), kept in packages/ with the command line, and named in the run facts; a
/// workload that is not a Python interpreter has no such pass, and a query that fails costs
/// only its file.
#[test]
fn the_python_stack_is_recorded_and_its_absence_costs_nothing() {
    let sb = Sandbox::new();
    let site = sb.path().join("site_hand_made");
    let dist = site.join("torch-2.11.0.dist-info");
    std::fs::create_dir_all(&dist).unwrap();
    // A broken install beside it (no METADATA) is passed over, not the query's end.
    std::fs::create_dir_all(site.join("deepspeed-0.1.dist-info")).unwrap();
    std::fs::write(
        dist.join("METADATA"),
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0\n",
    )
    .unwrap();
    sb.profile_decode("py", &[])
        .env("PYTHONPATH", &site)
        .assert()
        .success();
    let run = sb.run("py");
    let v: serde_json::Value =
        serde_json::from_str(&read(run.join("packages/versions.json"))).unwrap();
    assert_eq!(v["packages"]["torch"], "2.11.0");
    assert!(v["python"].as_str().unwrap().starts_with('3'));
    assert_eq!(read(run.join("packages/cmd.txt")).lines().count(), 1);
    assert_eq!(status(&run)["passes"]["packages"]["state"], "ok");
    let facts = read(run.join("stakeholder_summary.md"));
    assert!(
        facts.contains(": torch 2.11.0 (packages/versions.json) |"),
        "{facts}"
    );
    // An interpreter whose query fails (hand-made: a `python3` that refuses the query and
    // runs the workload): the run is ok, the pass says why in a warning, no row.
    let bin = sb.path().join("bin_hand_made");
    std::fs::create_dir_all(&bin).unwrap();
    let shim = bin.join("python3");
    std::fs::write(
        &shim,
        "#!/bin/sh\ncase \"$2\" in *importlib*) echo 'no metadata here' >&2; exit 3;; esac\nexec python3 \"$@\"\n",
    )
    .unwrap();
    let mut perms = std::fs::metadata(&shim).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&shim, perms).unwrap();
    let shim_s = shim.display().to_string();
    // The usual workload, with the shim for its interpreter.
    let workload = [&[shim_s.as_str()], &common::WORKLOAD[1..]].concat();
    sb.profile_of("broken", common::DECODE, &workload)
        .assert()
        .success();
    let run = sb.run("broken");
    let st = status(&run);
    assert_eq!(st["passes"]["packages"]["state"], "ok");
    let warned = st["passes"]["packages"]["warnings"][0].as_str().unwrap();
    assert!(
        warned.contains("no metadata here") && warned.contains("packages/query.log"),
        "{warned}"
    );
    assert!(!read(run.join("stakeholder_summary.md")).contains("| Python |"));
    // Not a Python interpreter: skipped, and no row.
    sb.profile_of("sh", common::DECODE, &["sh", "-c", "exit 0"])
        .assert()
        .success();
    let run = sb.run("sh");
    assert_eq!(status(&run)["passes"]["packages"]["state"], "skipped");
    assert!(!read(run.join("stakeholder_summary.md")).contains("| Python |"));
}
