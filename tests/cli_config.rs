//! Config and usage errors: exit 2 with a message naming what and where.

mod common;

use common::Sandbox;
use predicates::prelude::*;

#[test]
fn config_prints_the_resolved_yaml() {
    Sandbox::new()
        .stage2()
        .args(["config", "ncu.top_n=3"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("top_n: 3")
                .and(predicate::str::contains("nvtx_capture: prefill")),
        );
}

#[test]
fn misspelt_key_suggests_the_closest() {
    Sandbox::new()
        .stage2()
        .args(["config", "nsys.enabel=false"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("did you mean `nsys.enable`"));
}

#[test]
fn plus_on_an_existing_key_suggests_both_forms() {
    Sandbox::new()
        .stage2()
        .args(["profile", "--dry-run", "+nsys.trace=cuda", "--", "true"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("use `nsys.trace=...`")
                .and(predicate::str::contains("`++nsys.trace=...`")),
        );
}

#[test]
fn wrong_type_and_bad_grammar_exit_2() {
    let sb = Sandbox::new();
    sb.stage2()
        .args(["config", "ncu.top_n=lots"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("ncu.top_n"));
    sb.stage2()
        .args(["config", "nsys..trace=x"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad override"));
}

#[test]
fn empty_capture_name_with_nvtx_gating_exits_2_before_anything_runs() {
    let sb = Sandbox::new();
    sb.stage2()
        .args([
            "profile",
            "--run-root",
            "runs",
            "nsys.nvtx_capture=",
            "--",
            "true",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("nsys.nvtx_capture"));
    assert!(!sb.runs().exists());
}

#[test]
fn nvprof_metric_names_are_refused_up_front() {
    let sb = Sandbox::new();
    sb.stage2()
        .args([
            "profile",
            "--run-root",
            "runs",
            "ncu.metrics=[flop_count_hp,flop_count_sp]",
            "--",
            "true",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("flop_count_hp"));
}

#[test]
fn metrics_unknown_to_ncu_are_refused_before_the_run() {
    let metrics = "ncu.metrics=[gpu__time_duration.sum,sm__no_such_counter.sum]";
    let sb = Sandbox::new();
    // Without an nsys pass, before anything runs.
    sb.stage2()
        .args([
            "profile",
            "--run-root",
            "runs",
            "--no-nsys",
            metrics,
            "--",
            "true",
        ])
        .env("FAKE_NCU_QUERY", "1")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("sm__no_such_counter.sum"));
    assert!(!sb.runs().exists());
    // With one, the query runs beside it and the ncu pass is refused; the nsys part stands.
    sb.stage2()
        .args([
            "profile",
            "--run-root",
            "runs",
            "--run-id",
            "r",
            metrics,
            "--",
            "true",
        ])
        .env("FAKE_NCU_QUERY", "1")
        .assert()
        .code(11);
    let st: serde_json::Value =
        serde_json::from_str(&common::read(sb.run("r").join("status.json"))).unwrap();
    assert_eq!(st["state"], "partial");
    assert_eq!(st["passes"]["nsys"]["state"], "ok");
    assert_eq!(st["passes"]["ncu"]["exit_code"], 2);
    assert!(st["passes"]["ncu"]["reason"]
        .as_str()
        .unwrap()
        .contains("sm__no_such_counter.sum"));
    assert!(!sb.calls().contains("ncu --target-processes"));
}

#[test]
fn bad_config_file_names_file_and_key() {
    let sb = Sandbox::new();
    let f = sb.path().join("bad.yaml");
    std::fs::write(&f, "ncu:\n  top_m: 3\n").unwrap();
    sb.stage2()
        .args(["config", "--config"])
        .arg(&f)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad.yaml").and(predicate::str::contains("`ncu.top_n`")));
}

#[test]
fn bad_run_ids_are_refused() {
    let sb = Sandbox::new();
    for id in ["../escape", "a/b"] {
        sb.profile_of(id, &["--dry-run"], &["true"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("run id"));
    }
}

#[test]
fn no_workload_is_a_usage_error() {
    Sandbox::new()
        .stage2()
        .args(["profile", "--dry-run"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("after `--`"));
}

#[test]
fn report_on_a_broken_csv_exits_6_naming_file_and_line() {
    let sb = Sandbox::new();
    let run = sb.path().join("run");
    std::fs::create_dir_all(run.join("nsys")).unwrap();
    std::fs::copy(
        common::root().join("tests/data/bad/kern_sum_truncated_hand_made.csv"),
        run.join("nsys/summary_cuda_gpu_kern_sum.csv"),
    )
    .unwrap();
    sb.stage2()
        .arg("report")
        .arg(&run)
        .assert()
        .code(6)
        .stderr(predicate::str::contains("summary_cuda_gpu_kern_sum.csv:3"));
}

#[test]
fn report_on_a_missing_directory_is_a_usage_error() {
    Sandbox::new()
        .stage2()
        .args(["report", "/nonexistent/run"])
        .assert()
        .code(2);
}

#[test]
fn completions_and_the_man_page_are_printed() {
    let sb = common::Sandbox::new();
    for shell in ["bash", "zsh", "fish"] {
        let out = sb.stage2().args(["completions", shell]).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("stage2") && text.contains("profile"),
            "{shell}"
        );
    }
    let out = sb.stage2().arg("man").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(".TH stage2 1") && text.contains("diff"),
        "{text}"
    );
    sb.stage2().args(["completions", "tcsh"]).assert().code(2);
}

/// Completions offer the config keys where an OVERRIDE goes (`report`: its own keys only), as
/// cargo's offer its flags; bash's is run to complete a partial key.
#[test]
fn completions_offer_config_keys_for_overrides() {
    let sb = common::Sandbox::new();
    let script = |shell: &str| {
        let out = sb.stage2().args(["completions", shell]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for shell in ["bash", "zsh", "fish"] {
        let text = script(shell);
        assert!(
            text.contains("ncu.top_n=") && text.contains("report.instances="),
            "{shell}"
        );
    }
    let fish = script("fish");
    let report = fish
        .lines()
        .find(|l| l.contains("using_subcommand report\" -f -a"))
        .expect("fish: report's keys");
    assert!(
        report.contains("tools.nsys=") && !report.contains("ncu.top_n="),
        "{report}"
    );
    let path = sb.path().join("stage2.bash");
    std::fs::write(&path, script("bash")).unwrap();
    let complete = |words: &str| {
        let code = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}}-1)); \
             _stage2 stage2 \"${{COMP_WORDS[-1]}}\" \"${{COMP_WORDS[-2]}}\"; echo \"${{COMPREPLY[@]}}\"",
            path.display()
        );
        let out = std::process::Command::new("bash")
            .args(["-c", &code])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(complete("stage2 profile ncu.to"), "ncu.top_n=");
    assert_eq!(complete("stage2 report report.ins"), "report.instances=");
    assert_eq!(complete("stage2 report ncu.to"), "");
}

/// doctor on a machine without a GPU or driver fails (exit 3), and a tool that does not run
/// is a failure, not "ok (version unknown)".
#[test]
fn doctor_fails_without_a_gpu_and_with_a_tool_that_does_not_run() {
    let sb = common::Sandbox::new();
    let out = sb
        .stage2()
        .arg("doctor")
        .env("STAGE2_NSYS", "/bin/false")
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("stage2: error: nsys at /bin/false"), "{text}");
    assert!(!text.contains("(version unknown)"), "{text}");
    if !std::path::Path::new("/proc/driver/nvidia/params").exists() {
        assert!(!text.contains("ok: performance counters"), "{text}");
    }
    // Every line in the one voice; nothing on stdout.
    assert!(text.lines().all(|l| l.starts_with("stage2: ")), "{text}");
    assert!(out.stdout.is_empty());
    assert!(text.contains("stage2: doctor: "), "{text}");
}

/// `--instances` / `report.instances` outside its grammar is a config error, not a silent
/// `auto`.
#[test]
fn a_bad_instances_rule_exits_2_naming_the_key() {
    let sb = Sandbox::new();
    for args in [
        &[
            "profile",
            "--instances",
            "skip=x",
            "--dry-run",
            "--",
            "true",
        ][..],
        &[
            "profile",
            "report.instances=first",
            "--dry-run",
            "--",
            "true",
        ][..],
    ] {
        sb.stage2().args(args).assert().code(2).stderr(
            predicate::str::contains("report.instances=")
                .and(predicate::str::contains("must be auto, all, or skip=N")),
        );
    }
    sb.stage2()
        .args([
            "profile",
            "--instances",
            "skip=1",
            "--dry-run",
            "--",
            "true",
        ])
        .assert()
        .success();
}

/// `report --config` with a file that cannot be read is the same mistake as for `profile` and
/// `config`: exit 2, the file named.
#[test]
fn report_config_that_cannot_be_read_exits_2_like_the_others() {
    let sb = Sandbox::new();
    let run = sb.copy_of("tests/data/hf/gpu-metrics", "gm");
    let missing = sb.path().join("missing.yaml");
    for sub in [&["report", run.to_str().unwrap()][..], &["config"][..]] {
        sb.stage2()
            .args(sub)
            .arg("--config")
            .arg(&missing)
            .assert()
            .code(2)
            .stderr(
                predicate::str::contains("cannot read config file")
                    .and(predicate::str::contains("missing.yaml")),
            );
    }
}

/// A dry run says nothing was captured: no "nsys captured ..." for a pass that never ran; what
/// the nsys pass would choose for ncu is said to come after it.
#[test]
fn a_dry_run_claims_no_capture() {
    let sb = Sandbox::new();
    sb.stage2()
        .args(["profile", "--dry-run", "--", "true"])
        .assert()
        .success()
        .stderr(
            predicate::str::contains(
                "after the nsys pass, a real run puts the mangled names of the kernels it chooses",
            )
            .and(predicate::str::contains("nsys captured").not()),
        );
}

/// The dry run's ncu line asks for the metrics a real run asks for (its `--metrics` list), not
/// a stand-in section set.
#[test]
fn a_dry_runs_ncu_line_lists_the_reports_metrics() {
    let sb = Sandbox::new();
    sb.stage2()
        .args([
            "profile",
            "--dry-run",
            "--run-root",
            "runs",
            "--run-id",
            "d",
            "--",
            "true",
        ])
        .assert()
        .success();
    let cmd = std::fs::read_to_string(sb.path().join("runs/d/ncu/cmd.txt")).unwrap();
    assert!(!cmd.contains("--set roofline"), "{cmd}");
    assert!(
        cmd.contains("sm__inst_issued.avg.pct_of_peak_sustained_elapsed"),
        "{cmd}"
    );
    assert!(
        cmd.contains("dram__bytes.sum.pct_of_peak_sustained_elapsed"),
        "{cmd}"
    );
}

/// The workload given without `--` before it: exit 2, and the message says where it goes.
#[test]
fn a_workload_without_the_double_dash_is_told_where_it_goes() {
    let sb = Sandbox::new();
    sb.stage2()
        .args(["profile", "python3", "w.py"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "bad override `python3`: missing `=value`; if this is the workload, put `--` before it",
        ));
}

/// `stage2 config --show-origin`: every value with the layer it came from, as cargo's flag.
#[test]
fn show_origin_names_the_layer_of_every_value() {
    let sb = Sandbox::new();
    std::fs::write(sb.path().join("my.yaml"), "ncu:\n  top_n: 7\n").unwrap();
    let out = sb
        .stage2()
        .args([
            "config",
            "--show-origin",
            "--config",
            "my.yaml",
            "ncu.coverage=0.5",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "ncu.top_n: 7  # --config my.yaml",
        "ncu.coverage: 0.5  # override `ncu.coverage=0.5`",
        "ncu.max_kernels: 20  # embedded defaults",
        "ncu.nvtx_include: null  # embedded defaults (null: ncu's range is the nsys capture's, `prefill`)",
    ] {
        assert!(text.lines().any(|l| l == line), "{line}\n{text}");
    }
    // A deleted key is gone, not attributed.
    let out = sb
        .stage2()
        .args(["config", "--show-origin", "~ncu.cache.dir"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("ncu.cache.dir:"), "{text}");
}

/// `stage2 explain RULE`: the rule a finding cites, in the words and threshold the reports use;
/// an unknown id is a usage error naming the known ones.
#[test]
fn explain_prints_the_rule_a_finding_cites() {
    let sb = Sandbox::new();
    let out = sb
        .stage2()
        .args(["explain", "tiny_kernels"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("tiny_kernels\n  mean kernel duration under 10 us\n  threshold: 10"),
        "{text}"
    );
    // Every rule id a committed sample's summary.json cites is explained.
    let all =
        String::from_utf8_lossy(&sb.stage2().arg("explain").output().unwrap().stdout).to_string();
    let mut cited = 0;
    for e in std::fs::read_dir(common::root().join("examples"))
        .unwrap()
        .flatten()
    {
        let Ok(summary) = std::fs::read_to_string(e.path().join("summary.json")) else {
            continue;
        };
        let v: serde_json::Value = serde_json::from_str(&summary).unwrap();
        let ids: Vec<String> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["rule"].as_str().map(String::from))
            .collect();
        for id in &ids {
            assert!(all.lines().any(|l| l == id), "{id} not explained");
        }
        cited += ids.len();
    }
    assert!(cited >= 20, "{cited}");
    sb.stage2()
        .args(["explain", "nope"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("the rules are gpu_idle"));
}

/// doctor quotes nvidia-smi's own words when it lists no GPU (the fake answers as a machine
/// without a loaded driver does).
#[test]
fn doctor_quotes_nvidia_smi_when_it_lists_no_gpu() {
    let sb = Sandbox::new();
    let out = sb
        .stage2()
        .arg("doctor")
        .env_remove("FAKE_SMI")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(
        text.contains("lists no GPU: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. (exit status 9)"),
        "{text}"
    );
}

/// A flag that undoes an override says so (flags win, as documented), naming both; one that
/// agrees with it, or touches another key, says nothing.
#[test]
fn a_flag_over_a_contrary_override_is_named() {
    let sb = Sandbox::new();
    let out = sb
        .profile_of(
            "q",
            &["--dry-run", "--quick", "nsys.gpu_metrics.enable=false"],
            &["true"],
        )
        .assert()
        .success();
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        err.contains("a command-line flag sets nsys.gpu_metrics.enable to true over override `nsys.gpu_metrics.enable=false` (false): flags win over overrides; drop one of them"),
        "{err}"
    );
    let cmd = std::fs::read_to_string(sb.run("q").join("nsys/cmd.txt")).unwrap();
    assert!(cmd.contains("--gpu-metrics-frequency="), "{cmd}");
    let out = sb
        .profile_of(
            "r",
            &["--dry-run", "--quick", "nsys.gpu_metrics.enable=true"],
            &["true"],
        )
        .assert()
        .success();
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(!err.contains("flags win over overrides"), "{err}");
}

/// A workload held by `ncu --mode=launch` that no run attaches to (left by a run stopped with
/// SIGKILL) is named by doctor, with its pid, as a warning.
#[test]
fn doctor_names_a_workload_left_waiting_for_an_ncu_attach() {
    let sb = Sandbox::new();
    let mut held = std::process::Command::new(common::root().join("tests/fakes/ncu"))
        .arg("--mode=launch")
        .args(common::WORKLOAD)
        .env("FAKE_DATA", common::root().join("tests/data"))
        .env("FAKE_CALLS", sb.path().join("held.log"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let out = sb.stage2().arg("doctor").output().unwrap();
    let _ = held.kill();
    let _ = held.wait();
    let text = String::from_utf8_lossy(&out.stderr);
    let line = text
        .lines()
        .find(|l| l.contains("`ncu --mode=launch` process(es) hold a workload"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.starts_with("stage2: warning: "), "{line}");
    assert!(
        line.contains(&held.id().to_string()),
        "pid {}: {line}",
        held.id()
    );
    assert!(line.contains("(fix: `kill PID`"), "{line}");
}
