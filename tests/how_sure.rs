//! How sure a run's figures are, on real captures: the ncu pass's copy of the workload started
//! beside the nsys capture (tests/data/batching-loop, hf-prefill2: still starting during it;
//! fp8-loop, hf-spec: held before it began), CUDA graphs traced per node
//! (examples/sample-run-hf-static; tests/data/hf/static-graphtrace traced whole graphs), a
//! figure within a bound larger than itself (tests/data/hf/gpu-metrics), each said in the
//! summary's opening in plain words where it applies and gathered in one list for the engineer.

mod common;

use std::path::Path;

use common::{read, Sandbox};
use serde_json::Value;

/// A run directory reported in `sb` (its committed reports left out): summary.json, the
/// stakeholder summary and kernels.md.
struct Reported {
    summary: Value,
    stakeholder: String,
    kernels: String,
}

fn reported(sb: &Sandbox, from: &str) -> Reported {
    let run = sb.copy_of(from, "run");
    for f in ["kernels.md", "stakeholder_summary.md", "summary.json"] {
        let _ = std::fs::remove_file(run.join(f));
    }
    report(sb, &run)
}

fn report(sb: &Sandbox, run: &Path) -> Reported {
    sb.stage2().arg("report").arg(run).assert().success();
    Reported {
        summary: serde_json::from_str(&read(run.join("summary.json"))).unwrap(),
        stakeholder: read(run.join("stakeholder_summary.md")),
        kernels: read(run.join("kernels.md")),
    }
}

fn found<'a>(s: &'a Value, kind: &str) -> Vec<&'a Value> {
    s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == kind && f["abstain"].is_null())
        .collect()
}

fn one<'a>(s: &'a Value, kind: &str) -> &'a Value {
    let all = found(s, kind);
    assert_eq!(all.len(), 1, "{kind}: {all:?}");
    all[0]
}

/// The manager's opening: from "## In short" to the headline.
fn opening(md: &str) -> &str {
    let start = md.find("## In short").unwrap();
    let end = md.find("**Headline:**").unwrap();
    &md[start..end]
}

/// The points of a section of the summary, one per bullet line.
fn section<'a>(md: &'a str, heading: &str) -> Vec<&'a str> {
    let Some(start) = md.find(&format!("## {heading}\n")) else {
        return Vec::new();
    };
    md[start..]
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| l.starts_with("- "))
        .collect()
}

const HOW_SURE: &str = "How sure the figures are";

/// batching-loop's copy was busy until 5.63 s from its start (status.json `passes.ncu.ncu.
/// early_start`), its nsys capture ran 4.56-6.58 s: 1.07 s of the 2.02 s capture. The run is
/// older than the nsys record's `held_beside`, so the two recorded figures are read together.
#[test]
fn a_copy_starting_beside_the_capture_is_said_with_how_long() {
    let sb = Sandbox::new();
    let r = reported(&sb, "tests/data/batching-loop");
    let f = one(&r.summary, "early_start_beside");
    assert_eq!(f["rule"], "early_start_beside");
    assert_eq!(f["role"], "caveat");
    let during = common::figure(f, "copy_busy_in_capture_ns", None);
    assert!(
        (during - (5.62750894 - 4.557393311) * 1e9).abs() < 1.0,
        "{during}"
    );
    let capture = common::figure(f, "capture_ns", None);
    assert!(
        (capture - (6.576359308 - 4.557393311) * 1e9).abs() < 1.0,
        "{capture}"
    );
    assert_eq!(common::figure(f, "copy_busy_ns", None), 5.62750894e9);
    assert!(opening(&r.stakeholder).contains("a second copy of the program was starting up on the same machine for 1.1 s of the 2.0 s measured"), "{}", r.stakeholder);
    let points = section(&r.stakeholder, HOW_SURE);
    assert!(
        points.iter().any(|p| p
            .contains("still used the CPU for 1.1 s of the 2.0 s capture (5.6 s from its start)")),
        "{points:?}"
    );
    assert!(
        r.kernels
            .contains("## What the measurement added\n\n- The ncu pass's copy of the workload"),
        "{}",
        r.kernels
    );
}

/// fp8-loop's copy was held 3.29 s into its start, its capture began at 5.34 s; hf-spec's at
/// 14.12 s, its capture at 14.48 s: neither ran beside the capture, and neither report says so.
#[test]
fn a_copy_held_before_the_capture_began_is_not_said() {
    for run in ["tests/data/fp8-loop", "tests/data/hf-spec"] {
        let sb = Sandbox::new();
        let r = reported(&sb, run);
        assert!(found(&r.summary, "early_start_beside").is_empty(), "{run}");
        assert!(!r.stakeholder.contains("second copy"), "{run}");
    }
}

/// The same run with its nsys pass's timing taken out of status.json (hand-made: a run that
/// did not time its capture): the copy ran beside the pass, for how much of the capture is
/// not known, and the reports say that much.
#[test]
fn a_copy_beside_a_capture_the_run_did_not_time_is_said_without_an_overlap() {
    let sb = Sandbox::new();
    let run = sb.copy_of("tests/data/batching-loop", "run");
    let path = run.join("status.json");
    let mut st: Value = serde_json::from_str(&read(&path)).unwrap();
    st["passes"]["nsys"]["nsys"]
        .as_object_mut()
        .unwrap()
        .remove("timing");
    std::fs::write(&path, serde_json::to_string_pretty(&st).unwrap()).unwrap();
    let r = report(&sb, &run);
    let f = one(&r.summary, "early_start_beside");
    let quantities: Vec<&Value> = f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["quantity"])
        .collect();
    assert_eq!(quantities, ["copy_busy_ns"], "{f}");
    assert!(
        opening(&r.stakeholder).contains("starting up on the same machine while it was measured"),
        "{}",
        r.stakeholder
    );
    assert!(
        r.stakeholder
            .contains("used the CPU for its first 5.6 s, and the run did not time the capture"),
        "{}",
        r.stakeholder
    );
}

/// The static-cache sample's `decode` runs all 2280 of its kernels from 15 graph launches,
/// each kernel in the export: nsys traced every node.
#[test]
fn graphs_traced_per_node_are_said_to_slow_the_steps_that_launch_them() {
    let sb = Sandbox::new();
    let r = reported(&sb, "examples/sample-run-hf-static");
    let f = one(&r.summary, "graph_node_trace");
    assert_eq!(f["rule"], "graph_node_trace");
    assert_eq!(f["scope"]["range"], "decode");
    assert_eq!(common::figure(f, "graph_kernels", None), 2280.0);
    assert_eq!(common::figure(f, "graph_launches", None), 15.0);
    assert!(opening(&r.stakeholder).contains("the profiler followed each piece of work inside the recorded GPU steps, which slows every replay of them, so those steps run faster than measured"), "{}", r.stakeholder);
    let points = section(&r.stakeholder, HOW_SURE);
    assert_eq!(points.len(), 1, "{points:?}");
    assert!(
        points[0].contains("2280 of its 2280 kernel launches ran from 15 CUDA graph launches"),
        "{points:?}"
    );
    assert!(r
        .stakeholder
        .contains("(rule `graph_node_trace`, `stage2 explain graph_node_trace`)"));
}

/// A capture of whole graphs (nsys's default trace) holds none of their kernels, and one of
/// an eager decode runs no graph: neither says graphs were traced per node.
#[test]
fn whole_graphs_and_no_graphs_are_not_said_to_be_traced_per_node() {
    for run in ["tests/data/hf/static-graphtrace", "tests/data/census-kv"] {
        let sb = Sandbox::new();
        let r = reported(&sb, run);
        assert!(found(&r.summary, "graph_node_trace").is_empty(), "{run}");
        assert!(
            !r.stakeholder.contains("recorded GPU steps, which slows"),
            "{run}"
        );
    }
}

/// hf/gpu-metrics reads its step's DRAM bytes from whole-per-cent shares at about 1% of the
/// H100's bandwidth: 547.9 MB within 875.8 MB. census-kv counts them: no bound to say.
#[test]
fn a_bound_larger_than_its_figure_is_said() {
    let sb = Sandbox::new();
    let r = reported(&sb, "tests/data/hf/gpu-metrics");
    let f = one(&r.summary, "bound_over_value");
    let bytes = common::figure(f, "step_sampled_dram_mb", None);
    let within = common::figure(f, "step_dram_within_mb", None);
    let step = &r.summary["ranges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "decode")
        .unwrap()["dram_per_step"];
    assert_eq!(bytes, step["dram_bytes"].as_f64().unwrap() / 1e6);
    assert_eq!(within, step["bytes_within"].as_f64().unwrap() / 1e6);
    assert!(within > bytes, "{within} {bytes}");
    assert!(
        r.kernels
            .contains("547.9 MB by the sampled bandwidth shares, is within ±875.8 MB"),
        "{}",
        r.kernels
    );
    let sb = Sandbox::new();
    let counted = reported(&sb, "tests/data/census-kv");
    assert!(found(&counted.summary, "bound_over_value").is_empty());
}

/// The engineer's list gathers every finding on how sure the figures are, each the finding's
/// own sentence, once: hf/gpu-metrics has two (the bytes' bound, and its kernels too short for
/// the sample window), and neither is repeated under "What to look at next". The opening
/// points to the list.
#[test]
fn the_points_on_how_sure_are_gathered_once() {
    let sb = Sandbox::new();
    let r = reported(&sb, "tests/data/hf/gpu-metrics");
    let points = section(&r.stakeholder, HOW_SURE);
    assert_eq!(points.len(), 2, "{points:?}");
    assert!(points[0].contains("(rule `bound_over_value`"), "{points:?}");
    assert!(
        points[1].starts_with(
            "- Sampled figures and classes are not given for 30 of the 31 sampled kernels"
        ),
        "{points:?}"
    );
    let next = section(&r.stakeholder, "What to look at next");
    for p in &points {
        assert!(!next.contains(p), "{p} twice");
    }
    assert!(
        !next
            .iter()
            .any(|l| l.contains("rule `sampled_window`") || l.contains("rule `bound_over_value`")),
        "{next:?}"
    );
    assert!(opening(&r.stakeholder).contains("2 points that bear on the figures are listed under \"How sure the figures are\" below."), "{}", r.stakeholder);
    // A run with none has no list, and its opening points to none.
    let sb = Sandbox::new();
    let quiet = reported(&sb, "tests/data/fp8-loop");
    assert!(section(&quiet.stakeholder, HOW_SURE).is_empty());
    assert!(!quiet.stakeholder.contains(HOW_SURE));
}
