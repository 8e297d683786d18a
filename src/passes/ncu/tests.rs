use super::*;
use crate::analysis::nvtx::include_and_base;
use crate::config::{Ncu, NcuTarget};
use crate::exit_codes;
use crate::testutil::config as full;

fn cfg(overrides: &[&str]) -> Ncu {
    full(overrides).ncu
}

fn wl() -> Vec<String> {
    vec!["python3".into(), "w.py".into()]
}

/// The profile arguments for a scope, with the reports' full metric list.
fn args(
    c: &Ncu,
    include: Option<&str>,
    filter: Option<&KernelFilter>,
    out_base: &Path,
    exclude_nccl: bool,
    stop_early: bool,
) -> Vec<String> {
    let known: Vec<String> = crate::parse::ncu::REPORT_METRICS
        .iter()
        .map(|m| m.to_string())
        .collect();
    let collect = metrics_to_collect(c, Some(&known));
    let w = wl();
    profile_args(
        c,
        &Scope {
            include,
            filter,
            out_base,
            workload: &w,
            exclude_nccl,
            launches: match stop_early {
                true => Launches::FirstThenStop,
                false => Launches::First,
            },
            collect: &collect,
        },
    )
}

#[test]
fn default_plan_profiles_the_decode_push_pop_range() {
    let c = cfg(&["nsys.nvtx_capture=decode"]);
    let (inc, base, warn) = include_and_base(
        &NcuTarget::of(&full(&["nsys.nvtx_capture=decode"])),
        crate::analysis::nvtx::Style::PushPop,
    );
    assert_eq!(
        (inc.as_deref(), base.as_str(), warn),
        (Some("decode/"), "decode", None)
    );
    let a = args(
        &c,
        inc.as_deref(),
        None,
        Path::new("/m/ncu/decode"),
        false,
        false,
    );
    let line = a.join(" ");
    assert!(
        line.starts_with("--target-processes all --nvtx --nvtx-include decode/ "),
        "{line}"
    );
    assert!(
        line.contains("--kernel-name-base demangled --kernel-id :::1"),
        "{line}"
    );
    assert!(
        line.contains(" --metrics gpu__time_duration.sum,") && !line.contains("--set"),
        "{line}"
    );
    assert!(
        !line.contains("--kill"),
        "no filter, nothing to count: {line}"
    );
    assert!(line.ends_with("-o /m/ncu/decode python3 w.py"), "{line}");
    assert!(!line.contains("--clock-control"));
}

#[test]
fn mangled_filter_profiles_each_kernel_once() {
    let f = KernelFilter::Mangled(vec![
        "_ZN2at6native13reduce_kernel".into(),
        "nvjet_sm90".into(),
    ]);
    let a = args(
        &cfg(&["ncu.clock_control=none"]),
        Some("decode/"),
        Some(&f),
        Path::new("/o"),
        false,
        false,
    );
    let line = a.join(" ");
    assert!(line.contains("--kernel-name-base mangled --kernel-id ::regex:^(_ZN2at6native13reduce_kernel|nvjet_sm90)$:1"), "{line}");
    assert!(line.contains("--clock-control none"));
    let a = args(
        &cfg(&["ncu.instances_per_kernel=3"]),
        None,
        Some(&f),
        Path::new("/o"),
        false,
        false,
    );
    let line = a.join(" ");
    assert!(
        line.contains("--kernel-name regex:^(") && line.contains("--launch-count 6"),
        "{line}"
    );
    assert!(!line.contains("--nvtx"));
}

#[test]
fn with_a_filter_the_workload_ends_once_every_kernel_is_profiled() {
    let f = KernelFilter::Mangled(vec!["a".into(), "b".into(), "c".into()]);
    let line = args(&cfg(&[]), None, Some(&f), Path::new("/o"), false, true).join(" ");
    assert!(line.contains("--launch-count 3 --kill on"), "{line}");
    let line = args(&cfg(&[]), None, Some(&f), Path::new("/o"), false, false).join(" ");
    assert!(
        !line.contains("--kill") && !line.contains("--launch-count"),
        "{line}"
    );
}

#[test]
fn the_metric_list_follows_the_set_and_what_this_gpu_knows() {
    let known = vec![crate::parse::ncu::TIME.to_string(), "sm__x.sum".to_string()];
    let c = metrics_to_collect(&cfg(&["ncu.metrics=[sm__x.sum]"]), Some(&known));
    assert_eq!(c.set, None);
    assert_eq!(c.metrics, [crate::parse::ncu::TIME, "sm__x.sum"]);
    // ncu could not be asked: names that exist only on some GPUs are not risked.
    let c = metrics_to_collect(&cfg(&[]), None);
    assert_eq!(c.set.as_deref(), Some("roofline"));
    assert_eq!(c.metrics.len(), 3);
    let c = metrics_to_collect(&cfg(&["ncu.set=full"]), Some(&known));
    assert_eq!(c.set.as_deref(), Some("full"));
    let q = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/ncu/query_metrics_head.txt"
    ))
    .unwrap();
    let names = super::query::base_names(&q);
    let k = super::query::decide(Some(&names), &[]).unwrap().unwrap();
    assert!(k.len() < crate::parse::ncu::REPORT_METRICS.len(), "{k:?}");
}

#[test]
fn raw_include_and_domain() {
    let (inc, base, _) = include_and_base(
        &NcuTarget::of(&full(&["ncu.nvtx_include_raw=regex:dec.*"])),
        crate::analysis::nvtx::Style::PushPop,
    );
    assert_eq!(
        (inc.as_deref(), base.as_str()),
        (Some("regex:dec.*"), "dec.")
    );
    let (inc, _, _) = include_and_base(
        &NcuTarget::of(&full(&["nvtx.domain=llm", "ncu.nvtx_include=decode"])),
        crate::analysis::nvtx::Style::StartEnd,
    );
    assert_eq!(inc.as_deref(), Some("llm@decode"));
}

#[test]
fn regex_escaping_covers_metacharacters() {
    assert_eq!(escape_regex("a.b(c)|d*"), r"a\.b\(c\)\|d\*");
    assert_eq!(escape_regex("Kernel2<x>"), "Kernel2<x>");
}

#[test]
fn star_names_are_turned_into_push_pop_with_a_warning() {
    let (inc, base, warn) = include_and_base(
        &NcuTarget::of(&full(&["ncu.nvtx_include=decode*"])),
        crate::analysis::nvtx::Style::PushPop,
    );
    assert_eq!((inc.as_deref(), base.as_str()), (Some("decode/"), "decode"));
    assert!(warn.is_some());
    let (inc, base, _) = include_and_base(
        &NcuTarget::of(&full(&["ncu.gating_nvtx=false"])),
        crate::analysis::nvtx::Style::PushPop,
    );
    assert_eq!((inc, base.as_str()), (None, "all"));
}

#[test]
fn nvprof_metric_names_are_refused() {
    let bad = vec!["flop_count_hp".to_string()];
    let err = check_metric_names(&bad).unwrap_err();
    assert_eq!(err.exit_code(), exit_codes::USAGE);
    assert!(err.to_string().contains("flop_count_hp"));
    check_metric_names(&cfg(&[]).metrics).unwrap();
}

#[test]
fn metrics_are_checked_against_query_output() {
    let q = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/ncu/query_metrics_suffix_head.txt"
    ))
    .unwrap();
    let m = vec![
        "gpu__time_duration.sum".to_string(),
        "sm__nonsense.sum".to_string(),
    ];
    let names = super::query::base_names(&q);
    let e = super::query::decide(Some(&names), &m)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("sm__nonsense.sum") && !e.contains("gpu__time_duration"),
        "{e}"
    );
}

fn outcome(code: i32, tail: &str) -> Outcome {
    Outcome {
        code: Some(code),
        signal: None,
        duration: std::time::Duration::from_secs(1),
        tail: tail.into(),
        interrupted: false,
        timed_out: false,
        soft_stopped: false,
    }
}

#[test]
fn classify_outcomes() {
    let st = classify(&outcome(0, "==WARNING== No kernels were profiled. Note that specified NVTX include expressions match only start/end ranges.\n"), false, true);
    assert_eq!(st.state, PassState::NoData);
    assert!(st.reason.unwrap().contains("match only start/end ranges"));
    assert_eq!(classify(&outcome(0, ""), true, false).state, PassState::Ok);
    let st = classify(
        &outcome(
            9,
            "==ERROR== Failed to find metric regex:^flop_count_hp\\.(sum)$\n",
        ),
        false,
        false,
    );
    assert_eq!(
        (st.state, st.exit_code),
        (PassState::Failed, exit_codes::WORKLOAD)
    );
    assert!(st.reason.unwrap().contains("Failed to find metric"));
    let st = classify(
        &outcome(
            1,
            "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\n",
        ),
        false,
        false,
    );
    assert_eq!(st.exit_code, exit_codes::TOOL);
}

#[test]
fn under_a_launcher_nccl_kernels_are_left_out_of_the_unfiltered_pass() {
    let a = args(
        &cfg(&[]),
        Some("decode/"),
        None,
        Path::new("/o"),
        true,
        false,
    );
    assert!(
        a.join(" ").contains("--kernel-id ::regex:^(?!.*nccl).*:1"),
        "{a:?}"
    );
}

#[test]
fn multi_rank_ncu_passes_turn_nccl_p2p_off_unless_told_otherwise() {
    let p2p = |o: &[&str]| rank_env(&full(o));
    let off = vec![("NCCL_P2P_DISABLE".to_string(), "1".to_string())];
    assert!(p2p(&[]).is_empty(), "one process: no NCCL to worry about");
    assert_eq!(p2p(&["workload.launcher=torchrun"]), off);
    assert_eq!(p2p(&["workload.launcher=srun"]), off);
    assert!(p2p(&["workload.launcher=torchrun", "ncu.nccl_p2p_disable=false"]).is_empty());
    // The user's own setting wins (and is passed through workload.env as it is).
    assert!(p2p(&[
        "workload.launcher=torchrun",
        "+workload.env.NCCL_P2P_DISABLE=0"
    ])
    .is_empty());
    assert_eq!(
        with_env(&off, vec!["torchrun".into(), "x".into()]),
        ["env", "NCCL_P2P_DISABLE=1", "torchrun", "x"]
    );
}

#[test]
fn profiler_api_windows_gate_ncu_too() {
    let windows = |over: &[&str]| window_args(&NcuTarget::of(&crate::testutil::config(over)));
    assert_eq!(
        windows(&["nsys.capture_range=cudaProfilerApi"]),
        ["--profile-from-start", "off"]
    );
    assert!(windows(&[]).is_empty());
    assert!(windows(&[
        "nsys.capture_range=cudaProfilerApi",
        "nsys.gating_nvtx=false"
    ])
    .is_empty());
}

/// Real ncu 2025.3 output of a workload that raised before `decode` opened (H100): the
/// workload's failure with its own last lines.
#[test]
fn a_workload_that_fails_before_any_kernel_is_a_workload_failure() {
    let log = std::fs::read_to_string(crate::testutil::data("logs/ncu_crash_raise.log")).unwrap();
    let st = classify(&outcome(1, &log), false, false);
    assert_eq!(st.exit_code, exit_codes::WORKLOAD);
    let r = st.reason.unwrap();
    assert!(
        r.starts_with("the workload exited with status 1 under ncu before any kernel was profiled"),
        "{r}"
    );
    assert!(
        r.ends_with("RuntimeError: checkpoint /models/x not found"),
        "{r}"
    );
    assert!(!r.contains("==PROF=="), "{r}");
}

#[test]
fn a_pass_over_every_shape_stops_at_the_known_count_or_its_bound() {
    let ncu = cfg(&["ncu.shapes_max_launches=50", "ncu.shapes_budget_s=90"]);
    let known = Bound::new(&ncu, Some(32), false);
    assert_eq!((known.launches, known.all_known), (Some(32), true));
    assert_eq!(known.budget, Some(std::time::Duration::from_secs(90)));
    assert!(known
        .reason(32, std::time::Duration::from_secs(40))
        .contains("each of the 32 launch configurations the nsys export holds"));
    // More configurations than the bound, none known, or several ranks: the bound.
    for b in [
        Bound::new(&ncu, Some(80), false),
        Bound::new(&ncu, None, false),
        Bound::new(&ncu, Some(32), true),
    ] {
        assert_eq!((b.launches, b.all_known), (Some(50), false));
    }
    let b = Bound::new(&ncu, None, false);
    assert!(b
        .reason(50, std::time::Duration::from_secs(10))
        .contains("bound of 50 launches (ncu.shapes_max_launches)"));
    assert!(b
        .reason(12, std::time::Duration::from_secs(91))
        .contains("time budget of 90 s (ncu.shapes_budget_s)"));
}

/// Any other pass is bounded in time: `auto` is a share of the nsys pass (at least
/// AUTO_BUDGET_MIN_S), plus its time to ncu's range when ncu starts the workload again; a
/// number is seconds; null is no bound, as is `auto` without an nsys pass.
#[test]
fn a_first_launch_pass_gets_a_time_budget_from_the_nsys_pass() {
    let secs = |b: Option<Bound>| b.and_then(|b| b.budget).map(|d| d.as_secs());
    let auto = cfg(&[]);
    let held = Bound::time(&auto, Some(17.4), None, false).unwrap();
    assert_eq!(
        (held.launches, held.budget.map(|d| d.as_secs())),
        (None, Some(14))
    );
    assert_eq!(
        held.budget_from,
        "ncu.budget_s=auto: 0.8 x the nsys pass's 17.4 s"
    );
    assert!(held
        .reason(9, std::time::Duration::from_secs(15))
        .contains("time budget of 14 s (ncu.budget_s=auto: 0.8 x the nsys pass's 17.4 s)"));
    let launched = Bound::time(&auto, Some(17.4), Some(14.3), false).unwrap();
    assert_eq!(launched.budget.map(|d| d.as_secs()), Some(29));
    assert!(launched
        .budget_from
        .contains("plus its 14.3 s to ncu's range"));
    assert_eq!(secs(Bound::time(&auto, Some(3.0), None, false)), Some(10));
    assert!(Bound::time(&auto, Some(3.0), None, false)
        .unwrap()
        .budget_from
        .contains("at least 10 s"));
    assert_eq!(secs(Bound::time(&auto, None, None, false)), None);
    let fixed = cfg(&["ncu.budget_s=45"]);
    assert_eq!(secs(Bound::time(&fixed, None, Some(3.0), false)), Some(45));
    assert!(Bound::time(&cfg(&["ncu.budget_s=null"]), Some(17.4), None, false).is_none());
    let huge = cfg(&["ncu.budget_s=18446744073709551615"]);
    assert_eq!(secs(Bound::time(&huge, None, Some(3.0), false)), None);
    // Under a launcher only a budget the user sets.
    assert!(Bound::time(&auto, Some(17.4), None, true).is_none());
    assert_eq!(secs(Bound::time(&fixed, Some(17.4), None, true)), Some(45));
}

/// A launched ncu must reach its range again: the budget adds the time the nsys pass took to
/// the range's first instance (here a whole-run capture, whose own start says nothing of it).
#[test]
fn a_range_began_at_its_first_instance_on_the_exports_clock() {
    let r = |name: &str, start: i64| crate::parse::sqlite::NvtxRange {
        name: name.into(),
        start,
        end: start + 1_000,
        push_pop: true,
        tid: 1,
    };
    let ranges = [
        r("prefill", 9_000_000_000),
        r("decode", 12_500_000_000),
        r("decode", 11_000_000_000),
    ];
    assert_eq!(plan::first_start_s(&ranges, "decode"), Some(11.0));
    assert_eq!(plan::first_start_s(&ranges, "verify"), None);
    let launched = Bound::time(&cfg(&[]), Some(16.0), Some(11.0), false).unwrap();
    assert_eq!(launched.budget.map(|d| d.as_secs()), Some(24));
}

/// A real export (H100, a capture gated on `generate` that began 8.57 s into the nsys pass):
/// its events count from the trace's start, so `decode` began at 8.59 s, not at 0.018 s.
#[test]
fn a_real_capture_reaches_its_range_at_the_traces_start_plus_the_ranges() {
    let path = crate::testutil::data("hf/eager/nsys/run.sqlite");
    let db = crate::parse::sqlite::NsysDb::open(&path).unwrap();
    let ranges = db.ranges().unwrap();
    let began = plan::range_began_s(&db, &ranges, "decode").unwrap();
    assert!(
        (began - (8.570_077_169 + 0.017_938_702)).abs() < 1e-6,
        "{began}"
    );
}

/// A pass stopped at its budget with a report is ok and says why; without one it is no-data
/// naming the budget; a Ctrl-C is not the budget's stop; a pass that ended by itself keeps its
/// budget on record, not reached.
#[test]
fn a_stop_at_the_budget_decides_the_status() {
    let b = Bound::time(&cfg(&["ncu.budget_s=5"]), None, None, false).unwrap();
    let ran = |secs: u64, soft: bool, interrupted: bool| Outcome {
        duration: std::time::Duration::from_secs(secs),
        soft_stopped: soft,
        interrupted,
        ..outcome(0, "")
    };
    let stop = b.stop(&ran(6, true, false), true, 3);
    assert!(stop.budget.as_ref().unwrap().reached);
    let st = stop.status(|| 0).unwrap();
    assert_eq!(st.state, PassState::Ok);
    assert!(st.reason.unwrap().contains(
        "ncu measured 3 launches and was stopped: it reached its time budget of 5 s (ncu.budget_s)"
    ));
    let st = b.stop(&ran(6, true, false), false, 0).status(|| 0).unwrap();
    assert_eq!(st.state, PassState::NoData);
    let why = st.reason.unwrap();
    assert!(why.starts_with(
        "ncu reached its time budget of 5 s (ncu.budget_s) before it profiled a kernel"
    ));
    assert!(
        why.ends_with("ncu.budget_s=SECONDS (or null) gives it longer"),
        "{why}"
    );
    // Kernels inside CUDA graphs: more time is not promised to reach them.
    let st = b
        .stop(&ran(6, true, false), false, 0)
        .status(|| 120)
        .unwrap();
    let why = st.reason.unwrap();
    assert!(
        why.contains("launched CUDA graphs (120 graph launches)"),
        "{why}"
    );
    assert!(
        why.contains("no promise") && !why.contains("gives it longer"),
        "{why}"
    );
    let ctrl_c = b.stop(&ran(6, true, true), true, 3);
    assert!(ctrl_c.status(|| 0).is_none() && !ctrl_c.budget.unwrap().reached);
    let done = b.stop(&ran(2, false, false), true, 13);
    assert!(done.status(|| 0).is_none() && done.bounded.is_none());
    assert_eq!(done.budget.unwrap().s, 5.0);
}

/// A workload that fails before its range: ncu says both that the application failed and that
/// it profiled no kernel. The failure is the cause (exit 4), not the range names (exit 5).
#[test]
fn a_failed_workload_outranks_no_kernels() {
    let tail = "==ERROR== The application returned an error code (3).\n==WARNING== No kernels were profiled.\n";
    let st = classify(&outcome(3, tail), false, true);
    assert_eq!(st.state, PassState::Failed);
    assert_eq!(st.exit_code, exit_codes::WORKLOAD);
    assert!(st
        .reason
        .unwrap()
        .contains("exited with status 3 under ncu"));
}
