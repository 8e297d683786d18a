use super::*;
use crate::config::Nsys;
use crate::exit_codes;
use std::time::Duration;

fn cfg(overrides: &[&str]) -> Nsys {
    crate::testutil::config(overrides).nsys
}

/// The nsys config and the capture it asks for, as `classify` takes them.
fn both(overrides: &[&str]) -> (Nsys, crate::config::Capture) {
    let c = crate::testutil::config(overrides);
    (c.nsys.clone(), crate::config::Capture::of(&c))
}

#[test]
fn osrt_over_a_long_capture_warns() {
    let warned = |over: &[&str]| {
        let (n, c) = both(over);
        osrt_warning(&n, &c).is_some_and(|w| w.contains("2.5 GB"))
    };
    let osrt = "nsys.trace=cuda,nvtx,osrt";
    assert!(warned(&["nsys.gating_nvtx=false", osrt]));
    assert!(warned(&[osrt]));
    assert!(!warned(&["nsys.gating_nvtx=false", "nsys.trace=cuda,nvtx"]));
    assert!(!warned(&[osrt, "nsys.capture_range_end=stop"]));
}

fn args(overrides: &[&str]) -> Vec<String> {
    profile_args(
        &cfg(overrides),
        None,
        Path::new("/m/nsys/run"),
        &["python3".into(), "w.py".into()],
    )
    .unwrap()
}

#[test]
fn default_profile_is_gated_on_prefill() {
    assert_eq!(
        args(&[]),
        [
            "profile",
            "--trace=cuda,nvtx",
            "--sample=none",
            "--cuda-graph-trace=node",
            "--cpuctxsw=none",
            "--capture-range=nvtx",
            "--nvtx-capture=prefill",
            "--env-var=NSYS_NVTX_PROFILER_REGISTER_ONLY=0",
            "--capture-range-end=none",
            "-o",
            "/m/nsys/run",
            "python3",
            "w.py"
        ]
    );
}

#[test]
fn capture_range_end_only_when_set() {
    assert!(!args(&["nsys.capture_range_end=null"])
        .iter()
        .any(|a| a.starts_with("--capture-range-end")));
    assert!(args(&["nsys.capture_range_end=stop-shutdown"])
        .contains(&"--capture-range-end=stop-shutdown".to_string()));
    assert!(
        args(&["nsys.capture_range_end=stop"]).contains(&"--capture-range-end=stop".to_string())
    );
}

#[test]
fn gating_off_passes_no_capture_flags() {
    let a = args(&["nsys.gating_nvtx=false", "nsys.capture_range_end=stop"]);
    assert!(
        !a.iter()
            .any(|x| x.starts_with("--capture-range") || x.starts_with("--nvtx-capture")),
        "{a:?}"
    );
}

#[test]
fn domains_and_extra_args_when_set() {
    let a = args(&[
        "nsys.nvtx_domain_include=llm",
        "nsys.nvtx_domain_exclude=noise",
        "nsys.extra_args=[--cuda-graph-trace=node]",
    ]);
    assert!(a.contains(&"--nvtx-domain-include=llm".to_string()));
    assert!(a.contains(&"--nvtx-domain-exclude=noise".to_string()));
    let i = a
        .iter()
        .position(|x| x == "--cuda-graph-trace=node")
        .unwrap();
    assert!(i < a.iter().position(|x| x == "-o").unwrap());
}

#[test]
fn nvtx_capture_without_a_name_is_a_config_error() {
    for o in [&["nsys.nvtx_capture="][..], &["nsys.nvtx_capture=null"][..]] {
        let err = profile_args(&cfg(o), None, Path::new("/x"), &[]).unwrap_err();
        assert_eq!(err.exit_code(), exit_codes::USAGE);
        assert!(err.to_string().contains("nsys.nvtx_capture"), "{err}");
    }
}

#[test]
fn stats_and_export_force_overwrites() {
    let s = stats_args(Path::new("/m/run.nsys-rep"), Path::new("/m/summary"));
    assert!(s.contains(&"--force-export=true".to_string()));
    assert_eq!(s.iter().filter(|x| *x == "--report").count(), 3);
    let e = export_args(Path::new("/m/run.nsys-rep"), Path::new("/m/run.sqlite"));
    assert!(e.contains(&"--force-overwrite=true".to_string()));
}

fn outcome(code: i32, log: &str) -> Outcome {
    Outcome {
        code: Some(code),
        signal: None,
        duration: Duration::from_secs(1),
        tail: log.to_string(),
        interrupted: false,
        timed_out: false,
        soft_stopped: false,
    }
}

fn data(p: &str) -> String {
    std::fs::read_to_string(
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(p),
    )
    .unwrap()
}

#[test]
fn classify_real_outcomes() {
    let c = both(&["nsys.capture_range_end=null"]);
    let rep = Path::new("/m/run.nsys-rep");
    let st = classify(
        &outcome(0, &data("logs/nsys_wrong.log")),
        None,
        false,
        (&c.0, &c.1),
    );
    assert_eq!(st.state, PassState::NoData);
    assert!(st.reason.unwrap().contains("--nvtx-capture=prefill"));
    let st = classify(
        &outcome(143, &data("logs/nsys_empty.log")),
        Some(rep),
        false,
        (&c.0, &c.1),
    );
    assert_eq!(st.state, PassState::Ok);
    assert!(st.warnings[0].contains("capture_range_end=none"));
    let st = classify(
        &outcome(143, ""),
        Some(rep),
        false,
        (
            &both(&["nsys.capture_range_end=stop"]).0,
            &both(&["nsys.capture_range_end=stop"]).1,
        ),
    );
    assert_eq!(
        (st.state, st.exit_code),
        (PassState::Failed, exit_codes::WORKLOAD)
    );
    assert_eq!(
        classify(
            &outcome(0, &data("logs/nsys_profile.log")),
            Some(rep),
            false,
            (&c.0, &c.1)
        )
        .state,
        PassState::Ok
    );
    let st = classify(&outcome(0, ""), None, true, (&c.0, &c.1));
    assert_eq!(
        (st.state, st.exit_code),
        (PassState::Failed, exit_codes::TOOL)
    );
    let st = classify(&outcome(1, "Traceback"), None, false, (&c.0, &c.1));
    assert_eq!(st.exit_code, exit_codes::WORKLOAD);
}

#[test]
fn domain_and_raw_capture_expressions() {
    let a = profile_args(&cfg(&[]), Some("llm"), Path::new("/o"), &[]).unwrap();
    assert!(
        a.contains(&"--nvtx-capture=prefill@llm".to_string()),
        "{a:?}"
    );
    let a = profile_args(
        &cfg(&["nsys.nvtx_capture_raw=decode@*"]),
        Some("llm"),
        Path::new("/o"),
        &[],
    )
    .unwrap();
    assert!(a.contains(&"--nvtx-capture=decode@*".to_string()), "{a:?}");
}

#[test]
fn a_range_that_never_closes_is_warned_about() {
    let st = classify(
        &outcome(0, "Capture range started in the application.\n"),
        Some(Path::new("/r")),
        false,
        (&both(&[]).0, &both(&[]).1),
    );
    assert_eq!(st.state, PassState::Ok);
    assert!(st.warnings[0].contains("never closed"), "{:?}", st.warnings);
    let st = classify(
        &outcome(0, &data("logs/nsys_profile.log")),
        Some(Path::new("/r")),
        false,
        (&both(&[]).0, &both(&[]).1),
    );
    assert!(st.warnings.is_empty());
}

#[test]
fn operator_ranges_are_asked_of_nsys_only_when_set() {
    let a = profile_args(
        &cfg(&["nsys.pytorch=autograd-shapes-nvtx"]),
        None,
        Path::new("/o"),
        &[],
    )
    .unwrap();
    assert!(a.contains(&"--pytorch=autograd-shapes-nvtx".to_string()));
    let a = profile_args(&cfg(&[]), None, Path::new("/o"), &[]).unwrap();
    assert!(!a.iter().any(|x| x.starts_with("--pytorch")));
}

/// Real nsys 2025.3 output of workloads that fail before `decode` opens (H100): nsys passes
/// the workload's status on (1, 7, 128 + 11). The pass is the workload's failure with its own
/// last lines, not an empty capture to diagnose.
#[test]
fn a_workload_that_fails_before_its_range_is_a_workload_failure() {
    let c = both(&["nsys.nvtx_capture=decode"]);
    for (log, code, words) in [
        ("logs/nsys_crash_raise.log", 1, "exited with status 1"),
        ("logs/nsys_crash_exit7.log", 7, "exited with status 7"),
        (
            "logs/nsys_crash_segv.log",
            139,
            "was killed by signal 11 (SIGSEGV; exit status 139)",
        ),
    ] {
        let st = classify(&outcome(code, &data(log)), None, false, (&c.0, &c.1));
        assert_eq!(st.state, PassState::Failed, "{log}");
        assert_eq!(st.exit_code, exit_codes::WORKLOAD, "{log}");
        let r = st.reason.unwrap();
        assert!(
            r.contains(&format!(
                "the workload {words} before NVTX range `decode` opened"
            )),
            "{r}"
        );
        assert!(
            !r.contains("Check the NVTX range names") && !r.contains("Generated:"),
            "{r}"
        );
    }
    let r = classify(
        &outcome(1, &data("logs/nsys_crash_raise.log")),
        None,
        false,
        (&c.0, &c.1),
    )
    .reason;
    assert!(r
        .unwrap()
        .ends_with("RuntimeError: checkpoint /models/x not found"));
    // The same "no reports" after a workload that ended well is still a range never opened.
    let st = classify(
        &outcome(0, &data("logs/nsys_wrong.log")),
        None,
        false,
        (&c.0, &c.1),
    );
    assert_eq!(st.state, PassState::NoData);
}

/// With profiler-API windows, an empty capture is a cudaProfilerStart never called, not a
/// range name.
#[test]
fn a_profiler_api_capture_that_never_starts_says_so() {
    let c = both(&["nsys.capture_range=cudaProfilerApi"]);
    let st = classify(
        &outcome(0, &data("logs/nsys_wrong.log")),
        None,
        false,
        (&c.0, &c.1),
    );
    assert_eq!(st.state, PassState::NoData);
    let r = st.reason.unwrap();
    assert!(
        r.contains("never called cudaProfilerStart") && !r.contains("--nvtx-capture"),
        "{r}"
    );
}

#[test]
fn stats_read_the_sqlite_export_as_it_is_and_export_a_report_themselves() {
    let s = stats_args(Path::new("/m/run.sqlite"), Path::new("/m/summary"));
    assert!(!s.iter().any(|a| a.starts_with("--force-export")), "{s:?}");
    assert_eq!(s.last().map(String::as_str), Some("/m/run.sqlite"));
}

/// A capture in a named domain that never opened names its whole expression and says the
/// domain may be the wrong one (the range in the default domain), not to add one.
#[test]
fn a_capture_in_a_domain_that_never_opens_says_the_domain_may_be_wrong() {
    let c = both(&["nsys.nvtx_capture=decode@TSL"]);
    let st = classify(
        &outcome(0, &data("logs/nsys_wrong.log")),
        None,
        false,
        (&c.0, &c.1),
    );
    let r = st.reason.unwrap();
    assert!(
        r.contains("`--nvtx-capture=decode@TSL` never opened"),
        "{r}"
    );
    assert!(r.contains("in the default one: no @DOMAIN"), "{r}");
    assert!(!r.contains("a domain: NAME@DOMAIN"), "{r}");
}
