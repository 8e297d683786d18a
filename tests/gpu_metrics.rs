//! nsys's sampled GPU metrics against ncu's counters and NVIDIA's own summaries of the same
//! capture: tests/data/hf/gpu-metrics (H100, nsys and ncu 2025.3.1, eager qwen2 decode,
//! `--gpu-metrics-devices=0 --gpu-metrics-set=gh100 --gpu-metrics-frequency=50000`, ncu one
//! launch of every launch configuration). Its export keeps the samples of the `decode` span
//! only (scripts/gpu-metrics-probe.sh says how it was taken).

mod common;

use common::{read, Sandbox};

fn rendered() -> serde_json::Value {
    let sb = Sandbox::new();
    let run = sb.copy_of("tests/data/hf/gpu-metrics", "gm");
    sb.stage2().arg("report").arg(&run).assert().success();
    serde_json::from_str(&read(run.join("summary.json"))).unwrap()
}

#[test]
fn sampled_dram_agrees_with_ncu_per_launch_configuration() {
    let s = rendered();
    let gm = &s["gpu_metrics"];
    assert_eq!(gm["frequency_hz"].as_f64(), Some(50_000.0));
    let a = &gm["agreement"];
    // Configurations of >= 5% of decode's kernel time at >= 80% coverage.
    assert_eq!(a["compared"].as_u64(), Some(5), "{a}");
    let mean = a["dram_mean_diff_points"].as_f64().unwrap();
    let worst = a["dram_worst_diff_points"].as_f64().unwrap();
    assert!(
        mean <= 6.0,
        "time-weighted mean |sampled - ncu| DRAM {mean} points"
    );
    assert!(worst <= 15.0, "worst {worst} points");
    assert!(a["same_class_pct"].as_f64().unwrap() >= 95.0, "{a}");
    // The one memory-bound configuration is memory-bound by both.
    let rows = gm["beside_ncu"].as_array().unwrap();
    let mem: Vec<_> = rows.iter().filter(|r| r["ncu_bound"] == "memory").collect();
    assert_eq!(mem.len(), 1);
    assert_eq!(mem[0]["sampled_bound"], "memory");
    assert_eq!(mem[0]["grid"], "(2,63,1)");
}

#[test]
fn every_launch_of_the_range_is_sampled_as_nsys_stats_counts_them() {
    // NVIDIA's nvtx_kern_sum of the same report: 5280 kernel instances in `decode`, 12748422
    // ns of kernel time; the samples are attributed to exactly those launches.
    // (nsys stats 2025.3 has no report of GPU metrics to compare the sampled values with.)
    let s = rendered();
    let all = &s["gpu_metrics"]["all_kernels"];
    assert_eq!(all["launches"].as_u64(), Some(5280));
    assert_eq!(all["time_ns"].as_f64(), Some(12_748_422.0));
    assert_eq!(all["coverage_pct"].as_f64(), Some(100.0));
    let kernels = s["kernels"].as_array().unwrap();
    assert!(
        kernels.iter().all(|k| k["sampled"]["bound"].is_string()),
        "every kernel has a sampled class"
    );
    let configs: usize = kernels
        .iter()
        .map(|k| k["sampled"]["configs"].as_array().unwrap().len())
        .sum();
    assert!(configs > kernels.len(), "{configs} configurations");
}
