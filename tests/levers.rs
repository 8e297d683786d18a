//! Levers on real captures edited by hand where a test says so: the serving loop that forwards
//! each request alone (tests/data/batching-loop, H200) gets "batch the requests" only once its
//! steps' tokens marks say how many passes of one sequence each step runs; the eager decode with
//! its DRAM bytes sampled (tests/data/hf/gpu-metrics, H100) counts reading them as fixed.

mod common;

use std::path::Path;

use common::{copy_dir, read, root, Sandbox};
use serde_json::Value;

/// A copy of tests/data/`name`, edited, reported: its summary.json and summary.
fn report_of(name: &str, edit: impl FnOnce(&Path)) -> (Value, String) {
    let sb = Sandbox::new();
    let run = sb.path().join("run");
    copy_dir(&root().join("tests/data").join(name), &run);
    edit(&run);
    sb.stage2().arg("report").arg(&run).assert().success();
    let s = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
    (s, read(run.join("stakeholder_summary.md")))
}

fn report(edit: impl FnOnce(&Path)) -> (Value, String) {
    report_of("batching-loop", edit)
}

/// A figure of a finding by its quantity.
fn fig(f: &Value, q: &str) -> Option<f64> {
    let ev = f["evidence"].as_array().unwrap();
    ev.iter().find(|e| e["quantity"] == q)?["value"].as_f64()
}

/// Hand-made from the real export: a `stage2:tokens batch=B new=1` mark inside each instance of
/// `range`, on its thread.
fn mark_each(run: &Path, range: &str, batch: u32) {
    let db = rusqlite::Connection::open(run.join("nsys/run.sqlite")).unwrap();
    let sql =
        "SELECT e.start, e.globalTid FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId \
               WHERE COALESCE(e.text, s.value) = ?1 AND e.eventType = 59";
    let rows: Vec<(i64, i64)> = {
        let mut q = db.prepare(sql).unwrap();
        let r = q
            .query_map([range], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap();
        r.map(Result::unwrap).collect()
    };
    assert!(!rows.is_empty());
    for (start, tid) in rows {
        db.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES (?1, NULL, 34, ?2, ?3, 0)",
            rusqlite::params![start + 1, format!("stage2:tokens batch={batch} new=1"), tid],
        )
        .unwrap();
    }
}

fn batch_levers(s: &Value) -> Vec<&Value> {
    let all = s["findings"].as_array().unwrap();
    all.iter()
        .filter(|f| f["kind"] == "lever" && f["lever"]["what"] == "batch")
        .collect()
}

/// Hand-made from the real export: inside each `decode` range, one `stage2:tokens batch=1
/// new=1` mark per request the loop decodes in that step (a request arrives every 5 steps and
/// lives 20: 1, 2, 3, then 4 a step), as a hook marking each forward pass would put them.
fn mark_each_request(run: &Path) {
    let db = rusqlite::Connection::open(run.join("nsys/run.sqlite")).unwrap();
    let decodes: Vec<(i64, i64)> = {
        let mut q = db
            .prepare(
                "SELECT start, globalTid FROM NVTX_EVENTS WHERE text = 'decode' ORDER BY start",
            )
            .unwrap();
        let rows = q.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        rows.map(Result::unwrap).collect()
    };
    assert_eq!(decodes.len(), 40);
    for (step, (start, tid)) in decodes.iter().enumerate() {
        for i in 0..(1 + step / 5).min(4) {
            db.execute(
                "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES (?1, NULL, 34, 'stage2:tokens batch=1 new=1', ?2, 0)",
                rusqlite::params![start + 1 + i as i64, tid],
            )
            .unwrap();
        }
    }
}

/// Unmarked, the capture cannot tell one request a pass from several: no batch lever. Marked,
/// a step of 4 passes of one sequence is sized as one pass of 4, per token, the condition that
/// the passes are separate requests said.
#[test]
fn the_serving_loop_batches_its_requests_once_the_marks_say_so() {
    let (plain, _) = report(|_| {});
    assert!(batch_levers(&plain).is_empty());
    let (s, md) = report(mark_each_request);
    let b = batch_levers(&s);
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!(b[0]["lever"]["forwards"], 4);
    assert_eq!(
        (
            b[0]["lever"]["batch"].as_u64(),
            b[0]["lever"]["to"].as_u64()
        ),
        (Some(1), Some(4))
    );
    let fig = |q: &str| {
        let ev = b[0]["evidence"].as_array().unwrap();
        ev.iter()
            .find(|e| e["quantity"] == q)
            .map(|e| e["value"].as_f64().unwrap())
    };
    let (step, fixed, growing) = (
        fig("step_ms").unwrap(),
        fig("fixed_ms_per_step").unwrap(),
        fig("growing_ms_per_step").unwrap(),
    );
    // The step is the steady steps' median: the loop's compiling (new KV lengths) is in the
    // steps set apart, none of it in the step the lever is sized on.
    assert_eq!(fig("compile_ms_per_step"), None);
    assert!((fixed + growing - step).abs() < 1e-9);
    // Now: the step over its 4 tokens; then: one pass's fixed part and all the growing part.
    assert!((fig("token_ms_now").unwrap() - step / 4.0).abs() < 1e-9);
    let then = (fixed / 4.0 + growing) / 4.0;
    assert!((fig("token_ms_then").unwrap() - then).abs() < 1e-9);
    assert!(md.contains("if they are separate requests"), "{md}");
    assert!(md.contains("not one sequence's successive tokens"), "{md}");
}

/// The eager decode with its DRAM bytes per step sampled, marked batch 1: reading the step's
/// bytes at the ceiling (at most the GPU's work) is fixed beside the time the GPU waits, and
/// the summary says where that figure comes from.
#[test]
fn the_sampled_bytes_of_a_step_count_as_fixed() {
    let (s, md) = report_of("hf/gpu-metrics", |run| mark_each(run, "decode", 1));
    let b = batch_levers(&s);
    assert_eq!(b.len(), 1, "{b:?}");
    let f = b[0];
    assert_eq!(
        (f["lever"]["batch"].as_u64(), f["lever"]["to"].as_u64()),
        (Some(1), Some(2))
    );
    let floor = fig(f, "step_dram_floor_ms").unwrap();
    let step = fig(f, "step_ms").unwrap();
    let steps = s["findings"].as_array().unwrap();
    let work = steps.iter().find(|x| x["kind"] == "step").unwrap();
    let gpu = step * fig(work, "gpu_work_of_step_pct").unwrap() / 100.0;
    let fixed = fig(f, "fixed_ms_per_step").unwrap();
    assert!(floor > 0.0 && floor <= gpu, "{floor} of {gpu}");
    assert!((fixed - (step - gpu + floor)).abs() < 1e-9, "{fixed}");
    assert!((fig(f, "growing_ms_per_step").unwrap() - (gpu - floor)).abs() < 1e-9);
    let ranges = s["ranges"].as_array().unwrap();
    let decode = ranges.iter().find(|r| r["name"] == "decode").unwrap();
    let mb = decode["dram_per_step"]["dram_bytes"].as_f64().unwrap() / 1e6;
    assert!((fig(f, "step_sampled_dram_mb").unwrap() - mb).abs() < 1e-9);
    assert!(md.contains("of DRAM traffic (the nsys pass's samples) at the ceiling bandwidth"));
}

/// The prefill sample keeps the GPU busy most of its step: fusing its framework element-wise,
/// reduction and concatenation kernels saves at most their time, as NVIDIA's nvtx_kern_sum of
/// the same export gives it for `prefill`.
#[test]
fn a_gpu_bound_step_fuses_its_element_wise_kernels_at_most_by_their_time() {
    let run = root().join("examples/sample-run-hf-prefill");
    let s: Value = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
    let all = s["findings"].as_array().unwrap();
    let fuse = all
        .iter()
        .find(|f| f["kind"] == "lever" && f["lever"]["what"] == "fuse")
        .expect("a fuse lever");
    assert_eq!(fuse["rank"], 1);
    let mut rows = csv::Reader::from_path(run.join("nvidia/run_nvtx_kern_sum.csv")).unwrap();
    let unfused = |name: &str| {
        let short = name.split('<').next().unwrap_or(name);
        !name.starts_with("triton_")
            && (short.contains("elementwise_kernel")
                || short.ends_with("reduce_kernel")
                || name.contains("CatArrayBatchedCopy"))
    };
    let theirs: f64 = rows
        .records()
        .map(Result::unwrap)
        .filter(|r| &r[0] == ":prefill" && unfused(&r[12]))
        .map(|r| r[6].parse::<f64>().unwrap())
        .sum();
    let ours = fig(fuse, "saving_ms_per_step").unwrap();
    assert!(
        (ours - theirs / 1e6).abs() < 1e-6,
        "{ours} vs NVIDIA {}",
        theirs / 1e6
    );
}

/// The static-cache sample's loop: between its graph-launched steps the thread waits for the
/// GPU in a synchronising call every step; the host-work lever names that wait per step, the
/// loop finding's own figure.
#[test]
fn a_loop_that_reads_back_every_step_names_the_wait() {
    let run = root().join("examples/sample-run-hf-static");
    let s: Value = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
    let all = s["findings"].as_array().unwrap();
    let host = all
        .iter()
        .find(|f| f["kind"] == "lever" && f["lever"]["what"] == "host_work")
        .unwrap();
    let sync = fig(host, "sync_ms_per_step").expect("the wait between steps");
    let step = fig(host, "step_ms").unwrap();
    assert!(sync >= 0.1 * step, "{sync} of {step}");
    let lp = all.iter().find(|f| f["kind"] == "loop").unwrap();
    let between = lp["between"].as_array().unwrap();
    let theirs = between.iter().find(|p| p[0] == "sync").unwrap()[1]
        .as_f64()
        .unwrap();
    assert_eq!(sync, theirs);
    let md = read(run.join("stakeholder_summary.md"));
    assert!(
        md.contains("calls that wait for the GPU, as reading a value back"),
        "{md}"
    );
}
