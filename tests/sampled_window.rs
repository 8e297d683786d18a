//! Sampled classes only where a kernel's launches fill the sample window (rule
//! `sampled_window`), on real captures: census-kv (H200, a ~1.2B Llama's eager decode at batch
//! 4, 50 kHz: 20 us windows, GEMMs of 2-12 us and one of 34 us) and hf/gpu-metrics (H100, eager
//! qwen2 decode beside ncu's replay of every launch configuration).

mod common;

use common::{read, Sandbox};
use serde_json::Value;

/// `name` under tests/data reported in `sb`, its export changed by `sql` where not empty
/// (hand-made: each test says how): summary.json and kernels.md.
fn reported(sb: &Sandbox, name: &str, sql: &str) -> (Value, String) {
    let run = sb.copy_of(&format!("tests/data/{name}"), "run");
    if !sql.is_empty() {
        let db = rusqlite::Connection::open(run.join("nsys/run.sqlite")).unwrap();
        db.execute_batch(sql).unwrap();
    }
    sb.stage2().arg("report").arg(&run).assert().success();
    let s = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
    (s, read(run.join("kernels.md")))
}

fn kernel<'a>(s: &'a Value, name: &str) -> &'a Value {
    s["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == name)
        .unwrap_or_else(|| panic!("{name}"))
}

fn findings<'a>(s: &'a Value, kind: &str) -> Vec<&'a Value> {
    s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == kind && f["abstain"].is_null())
        .collect()
}

/// census-kv's top GEMM launches for 12.33 us on average (1972.54 us over 160 launches) in
/// 20 us windows: it read "latency (sampled, 100.0% covered)", a class its neighbours decided.
/// Now it has none and says why; the 34.48 us GEMM keeps its memory-bound class.
#[test]
fn census_kv_gemms_shorter_than_the_window_are_not_classed() {
    let sb = Sandbox::new();
    let (s, md) = reported(&sb, "census-kv", "");
    let top = &kernel(&s, "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT")["sampled"];
    assert!(top["bound"].is_null(), "{top}");
    assert_eq!(top["short"]["window_ns"], 20_000.0);
    let mean = top["short"]["mean_launch_ns"].as_f64().unwrap();
    assert!((mean - 1_972_540.0 / 160.0).abs() < 1.0, "{mean}");
    let long = &kernel(&s, "nvjet_sm90_tst_256x8_64x6_2x1_v_bz_TNT")["sampled"];
    assert_eq!(long["bound"], "memory");
    assert!(long["short"].is_null());
    // kernels.md's two tables: the class column says why there is none, and the sampled
    // table gives no figure as the kernel's own.
    assert!(md.contains("| 1 | nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT | 160 | 1972.54 | 12.33 | 16.4% | – | – | not classed (sampled: launches of 12.33 us, shorter than the 20.0 us sample window) |"), "{md}");
    assert!(md.contains("| 12.33 | 100.0% | 255 | – | – | – | not classed: launches of 12.33 us, shorter than the 20.0 us sample window | – | – |"), "{md}");
    assert!(
        md.contains("| 34.48 | 100.0% | 15 | 77.7 | 5.0 | 3.4 | memory | – | – |"),
        "{md}"
    );
    assert!(!md.contains("latency (sampled"), "{md}");
    // One finding says it of them all, with its rule and figures.
    let w = findings(&s, "sampled_window");
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0]["rule"], "sampled_window");
    assert_eq!(w[0]["role"], "caveat");
    assert_eq!(common::figure(w[0], "unclassed_kernels", None), 32.0);
    assert_eq!(common::figure(w[0], "sampled_kernels", None), 33.0);
    assert_eq!(common::figure(w[0], "sample_window_ns", None), 20_000.0);
    assert!(md.contains("Sampled figures and classes are not given for 32 of the 33 sampled kernels in `decode`"), "{md}");
    assert!(s["rules"]["sampled_window"]["text"]
        .as_str()
        .unwrap()
        .contains("at least one sample window"));
}

/// The committed H100 capture's DRAM Read shares raised by 20 points in every window (hand-made,
/// so that every configuration ncu measured disagrees with it): the 1-6 us configurations'
/// differences are put down to the window, the 27 us GEMM's to ncu's replay.
#[test]
fn a_disagreement_on_launches_shorter_than_the_window_is_the_windows() {
    let sb = Sandbox::new();
    let raise = "UPDATE GPU_METRICS SET value = value + 20 WHERE metricId = (SELECT metricId FROM TARGET_INFO_GPU_METRICS WHERE metricName = 'DRAM Read Bandwidth [Throughput %]' LIMIT 1);";
    let (s, md) = reported(&sb, "hf/gpu-metrics", raise);
    let all = findings(&s, "sampled_disagrees");
    let (short, long): (Vec<&Value>, Vec<&Value>) =
        all.iter().partition(|f| f["short"] == Value::Bool(true));
    assert_eq!(long.len(), 1, "{long:?}");
    assert_eq!(long[0]["grid"], "(2,63,1)");
    assert!(short.len() > 10, "{}", short.len());
    for f in &short {
        let k = f["scope"]["kernel"].as_str();
        assert_eq!(common::figure(f, "sample_window_ns", k), 20_000.0);
        assert!(common::figure(f, "mean_kernel_ns", k) < 20_000.0, "{f}");
    }
    let of = |grid: &str| {
        md.lines()
            .find(|l| l.starts_with("The two tools disagree on") && l.contains(grid))
            .unwrap_or_else(|| panic!("{grid}: {md}"))
            .to_string()
    };
    let gemv = of("with grid (4,11,1)");
    assert!(gemv.contains("its launches of 5.03 us on average are shorter than the 20.0 us sample window, so the sampled figure is mostly its neighbours' work in the window, not a fault of ncu's replay"), "{gemv}");
    let gemm = of("with grid (2,63,1)");
    assert!(
        gemm.contains("the replayed launch is not how it ran in the workload"),
        "{gemm}"
    );
    assert!(!gemm.contains("sample window"), "{gemm}");
    // The summary gathers them with the other points on how sure its figures are.
    let stake = read(sb.path().join("run/stakeholder_summary.md"));
    let sure = stake.find("## How sure the figures are").expect(&stake);
    let listed = &stake[sure..stake.find("## Run facts").unwrap()];
    assert_eq!(
        listed.matches("- The two tools disagree on").count(),
        all.len(),
        "{listed}"
    );
}

/// The agreement over the configurations of at least 5% of the time compares each one's DRAM
/// figure, and holds classes only where the samples give one: none of the five here.
#[test]
fn classes_are_compared_only_where_the_samples_give_one() {
    let sb = Sandbox::new();
    let (s, md) = reported(&sb, "hf/gpu-metrics", "");
    let a = &s["gpu_metrics"]["agreement"];
    assert_eq!(
        (a["compared"].as_u64(), a["unclassed"].as_u64()),
        (Some(5), Some(5))
    );
    assert!(md.contains("5.5 at worst; none has a sampled class to hold against ncu's: their launches are shorter than the sample window."), "{md}");
}
