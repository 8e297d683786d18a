//! What stage2 says when the input is odd: range names that look like Markdown or like a
//! cited source, lists of thousands of names, hints that must follow the facts, and an export
//! whose CUDA trace holds no kernels.

mod common;

use common::{read, Sandbox};

/// A real capture whose `decode` range is renamed (here: hand-made) to `name`, in the export,
/// the config and the run record alike.
fn renamed(sb: &Sandbox, name: &str) -> std::path::PathBuf {
    let run = sb.copy_of("tests/data/hf/gpu-metrics", "renamed");
    let db = rusqlite::Connection::open(run.join("nsys/run.sqlite")).unwrap();
    db.execute(
        "UPDATE NVTX_EVENTS SET text = ?1 WHERE text = 'decode'",
        [name],
    )
    .unwrap();
    drop(db);
    let mut st = common::status(&run);
    st["passes"]["nsys"]["nsys"]["range"] = name.into();
    std::fs::write(run.join("status.json"), st.to_string()).unwrap();
    let config = read(run.join("config.yaml")).replace(
        "nvtx_capture: decode",
        &format!("nvtx_capture: {}", serde_json::Value::from(name)),
    );
    std::fs::write(run.join("config.yaml"), config).unwrap();
    run
}

/// Item 11: a range name is one opaque unit of the summary. Its "(nsys/run.sqlite)" is no
/// footnote, its backtick does not stop the footnoting of its line, and inside its code span
/// nothing is backslash-escaped.
#[test]
fn a_range_name_is_opaque_in_the_stakeholder_summary() {
    let sb = Sandbox::new();
    let name = "de`c (nsys/run.sqlite) *x* [a] <b>";
    let run = renamed(&sb, name);
    sb.stage2()
        .args(["report", "--color", "never"])
        .arg(&run)
        .assert()
        .success();
    let md = read(run.join("stakeholder_summary.md"));
    let span = format!("``{name}``");
    let line = md
        .lines()
        .find(|l| l.starts_with("- GPU kernel time in "))
        .unwrap();
    assert_eq!(
        line,
        format!("- GPU kernel time in {span}: 12.75 ms in 5280 launches of 31 kernels[^2]")
    );
    // Every line naming the range has its own sources footnoted past the name (the name in
    // prose outside a code span is escaped), and every code span holds the name whole.
    let mut lines = 0;
    for l in md.lines().filter(|l| l.contains(&span)) {
        let rest = l.replace(&span, "").replace("\\(nsys/run.sqlite\\)", "");
        assert!(!rest.contains("nsys/run.sqlite)"), "{l}");
        lines += 1;
    }
    assert!(lines >= 5, "{md}");
    assert_eq!(
        md.matches("``de").count(),
        md.matches(&span).count(),
        "{md}"
    );
}

/// Item 15: the summary shows the output a failed pass's reason refers to ("Its last
/// output:"), and says ncu was asked for where it was: no advice to turn it on.
#[test]
fn the_summary_shows_the_workloads_last_output_and_what_ncu_did() {
    let sb = Sandbox::new();
    let failing = [
        "python3",
        "-c",
        "import sys; print('Traceback (most recent call last):'); print('ValueError: boom'); sys.exit(3)",
    ];
    sb.profile_of("f", common::DECODE, &failing)
        .assert()
        .code(4);
    let md = read(sb.run("f").join("stakeholder_summary.md"));
    let line = md
        .lines()
        .find(|l| l.starts_with("- The nsys pass did not complete"))
        .unwrap();
    assert!(
        line.contains("Its last output: ") && line.ends_with(" / `ValueError: boom`"),
        "{line}"
    );
    assert!(!md.contains("ncu.enable=true"), "{md}");
    assert!(
        md.contains("No ncu metrics in this run, though the ncu pass was asked for (not run: the workload failed under nsys"),
        "{md}"
    );
    // ncu ran and profiled nothing: its own finding says so, with no advice to run it.
    // nsys stood, ncu alone found nothing: the run is partial (exit 11).
    sb.profile_decode("n", &[])
        .env("FAKE_NCU_MODE", "nokernels")
        .assert()
        .code(11);
    let md = read(sb.run("n").join("stakeholder_summary.md"));
    assert!(md.contains("- The ncu pass did not complete"), "{md}");
    assert!(!md.contains("No ncu metrics"), "{md}");
    // ncu turned off: the advice stands.
    sb.profile_decode("off", &["--no-ncu"]).assert().success();
    let md = read(sb.run("off").join("stakeholder_summary.md"));
    assert!(md.contains("run the ncu pass (ncu.enable=true)"), "{md}");
}

/// Item 15: a budget that ends before any kernel, where the capture's kernels ran inside CUDA
/// graphs (the compiled static-cache capture): the hint does not promise that more time
/// reaches them, and says how this pass profiles graphs.
#[test]
fn a_budget_spent_before_graph_kernels_promises_no_more_time() {
    let sb = Sandbox::new().with_env(
        "FAKE_NSYS_DIR",
        common::root().join("examples/sample-run-hf-static/nsys"),
    );
    sb.profile_decode("g", &["ncu.budget_s=1", "ncu.early_start=false"])
        .env("FAKE_NCU_HOLD", "60")
        .env("FAKE_NCU_MODE", "nokernels")
        .assert()
        .code(11);
    let st = common::status(&sb.run("g"));
    let why = st["passes"]["ncu"]["reason"].as_str().unwrap();
    assert!(why.contains("launched CUDA graphs ("), "{why}");
    assert!(why.contains("`--graph-profiling node`"), "{why}");
    assert!(!why.contains("gives it longer"), "{why}");
}

/// The real H100 capture with its kernel rows dropped and nsys's hardware-trace diagnostic
/// added (hand-made: what users saw of a CUDA trace in hardware that fell back in silence),
/// laid out as a replayable capture in `dir`: the export and the stats CSVs but the kernel
/// summary, which nsys does not write for an export without kernels.
fn hardware_trace_hand_made(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    let data = common::root().join("tests/data/nsys");
    for f in [
        "run.sqlite",
        "summary_nvtx_sum.csv",
        "summary_cuda_api_sum.csv",
    ] {
        std::fs::copy(data.join(f), dir.join(f)).unwrap();
    }
    rusqlite::Connection::open(dir.join("run.sqlite"))
        .unwrap()
        .execute_batch(
            "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL; \
             INSERT INTO DIAGNOSTIC_EVENT (timestamp, timestampType, source, severity, text) \
             VALUES (0, 1, 1, 1, 'Hardware tracing used for CUDA tracing');",
        )
        .unwrap();
}

/// Item 17: an export with CUDA launch calls and no kernel is refused with the fix (exit 5),
/// by `stage2 report` and by the nsys pass, which records the trace asked for and the one the
/// export shows; the fix is a setting stage2 takes.
#[test]
fn an_export_of_launch_calls_without_kernels_is_refused_with_the_fix() {
    let sb = Sandbox::new();
    let run = sb.path().join("hw-run");
    hardware_trace_hand_made(&run.join("nsys"));
    let out = sb.stage2().arg("report").arg(&run).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains("run.sqlite: nsys recorded 1464 kernel launch calls and no kernel"),
        "{err}"
    );
    assert!(err.contains("nsys.trace=cuda-sw,nvtx"), "{err}");
    assert!(run.join("nsys/run.sqlite").is_file(), "the export is kept");

    let sb = sb.with_env("FAKE_NSYS_DIR", run.join("nsys"));
    sb.profile_decode("p", &["--no-ncu"]).assert().code(5);
    let nsys = &common::status(&sb.run("p"))["passes"]["nsys"];
    assert_eq!(nsys["state"], "no-data", "{nsys}");
    assert!(
        nsys["reason"]
            .as_str()
            .unwrap()
            .contains("nsys.trace=cuda-sw,nvtx"),
        "{nsys}"
    );
    let trace = &nsys["nsys"]["trace"];
    assert_eq!(
        (trace["cuda"].as_str(), trace["cuda_seen"].as_str()),
        (Some("nsys"), Some("hardware")),
        "{nsys}"
    );
    // The fix, taken: software CUDA tracing asked for and recorded (the double replays the
    // real software-traced capture).
    let sb = Sandbox::new();
    let st = sb.profiled("sw", &["--no-ncu", "nsys.trace=cuda-sw,nvtx"]);
    let trace = &st["passes"]["nsys"]["nsys"]["trace"];
    assert_eq!(
        (trace["cuda"].as_str(), trace["cuda_seen"].as_str()),
        (Some("software"), Some("software")),
        "{st}"
    );
}

/// A capture of a range the export does not hold (`--nvtx-capture decod`, a typo; the fake
/// nsys replays its `decode` capture whatever it is asked): the reports say the range was not
/// found, name the export's range nearest to it, and give no advice on `decod` or the capture.
#[test]
fn a_capture_of_a_range_not_in_the_export_names_the_nearest_and_advises_nothing() {
    let sb = Sandbox::with_gpu();
    sb.profile("typo", &["--nvtx-capture", "decod"])
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "headline (a replayed capture's figures, not this workload's; sources: stakeholder_summary.md): The capture names NVTX range `decod` and the export holds no instance of it",
        ));
    let run = sb.run("typo");
    let said = "The capture names NVTX range `decod` and the export holds no instance of it";
    let nearest = "its range names nearest to it: `decode`. Capture it by its exact name (`--nvtx-capture decode`).";
    for f in ["kernels.md", "stakeholder_summary.md"] {
        let text = read(run.join(f));
        assert!(text.contains(said) && text.contains(nearest), "{f}: {text}");
        // `decod` is named only where the missing range is said (and the run facts' capture).
        for line in text.lines().filter(|l| l.contains("`decod`")) {
            assert!(
                line.contains(said) || line.starts_with("| Capture |"),
                "{f}: {line}"
            );
        }
        assert!(!text.contains("Tensor cores are barely used"), "{f}");
    }
    let s: serde_json::Value = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
    let findings = s["findings"].as_array().unwrap();
    let missing = findings
        .iter()
        .find(|x| x["kind"] == "capture_range_missing")
        .unwrap_or_else(|| panic!("{findings:?}"));
    assert_eq!(missing["close"], serde_json::json!(["decode"]));
    // Advice on the capture is withheld, with the reason.
    assert!(findings.iter().any(|x| x["kind"] == "tensor_cores_idle"
        && x["abstain"]
            .as_str()
            .is_some_and(|w| w.contains("`decod` has no instance"))));
}
