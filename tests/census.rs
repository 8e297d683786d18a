//! A step's DRAM bytes read, from the nsys pass's samples, against what its model must read by
//! its own numbers (the hook's marks), on two real H200 captures (tests/data, trimmed as its
//! README says): a ~1.2B Llama's eager decode at batch 4 over 4096-token prompts, whose DRAM
//! write counter nsys wrote modulo 2^24, and a Mixtral-style decode whose experts' weights are
//! gathered every step.

mod common;

use common::{read, Sandbox};
use serde_json::Value;

fn reported(sb: &Sandbox, name: &str, sql: &str) -> (Value, String) {
    let run = sb.copy_of(&format!("tests/data/{name}"), name);
    if !sql.is_empty() {
        let db = rusqlite::Connection::open(run.join("nsys/run.sqlite")).unwrap();
        db.execute_batch(sql).unwrap();
    }
    sb.stage2().arg("report").arg(&run).assert().success();
    let s = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
    (s, read(run.join("kernels.md")))
}

fn census(s: &Value) -> &Value {
    let all: Vec<&Value> = s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "census")
        .collect();
    assert_eq!(all.len(), 1, "{all:?}");
    all[0]
}

fn fig(f: &Value, q: &str) -> f64 {
    common::figure(f, q, None)
}

/// The hook's marks: 2077364224 bytes of weights, 32768 of KV cache a token, 4 sequences with
/// 4096 + 2 tokens cached at the median step of the 5 (NVIDIA's nvtx_sum counts 5 `decode`).
/// Its 2824.6 MB read is 108.0% of the 2614.6 MB census: within the band.
#[test]
fn a_long_context_decode_reads_its_weights_and_kv_cache() {
    let sb = Sandbox::new();
    let (s, md) = reported(&sb, "census-kv", "");
    let c = census(&s);
    assert!(c["above"].is_null(), "{c}");
    assert_eq!(c["scope"]["instances"], 5);
    assert_eq!(fig(c, "census_weights_mb"), 2077.364224);
    assert_eq!(fig(c, "cached_tokens"), 4098.0);
    assert_eq!(fig(c, "census_kv_mb"), 4.0 * 4099.0 * 32768.0 / 1e6);
    let read_mb = fig(c, "step_read_mb");
    assert_eq!(
        read_mb,
        s["ranges"][0]["dram_per_step"]["dram_read_bytes"]
            .as_f64()
            .unwrap()
            / 1e6
    );
    let pct = fig(c, "read_of_census_pct");
    assert!((pct - 100.0 * read_mb / fig(c, "census_read_mb")).abs() < 1e-9);
    assert!((pct - 108.0).abs() < 0.05, "{pct}");
    assert!(md.contains("what the model needs"), "{md}");
    // It writes about its whole KV cache every step: the dynamic cache grows by concatenation.
    let written = fig(c, "step_write_mb");
    assert_eq!(
        written,
        s["ranges"][0]["dram_per_step"]["dram_write_bytes"]
            .as_f64()
            .unwrap()
            / 1e6
    );
    let of_kv = fig(c, "write_of_kv_pct");
    assert!((of_kv - 100.0 * written / fig(c, "census_kv_mb")).abs() < 1e-9);
    assert!((of_kv - 102.6).abs() < 0.05, "{of_kv}");
    assert!(
        md.contains("of its KV cache: about the whole cache every step"),
        "{md}"
    );
}

/// nsys wrote the DRAM write counter of 169 windows as negative numbers (a signed 24-bit value:
/// 11.6 MB as -5.2 MB): unwrapped by each window's bandwidth share, the step's bytes agree with
/// the bytes the shares alone give, within the bound of their whole per cents.
#[test]
fn a_counter_nsys_wrote_modulo_2_24_is_unwrapped_by_its_share() {
    let sb = Sandbox::new();
    let (s, md) = reported(&sb, "census-kv", "");
    assert!(md.contains("came back negative in 169 windows"), "{md}");
    let counted = &s["ranges"][0]["dram_per_step"];
    assert_eq!(counted["source"], "counters");
    // Hand-made: the counters' names taken out of the export's list, so the shares count.
    let (s, _) = reported(
        &sb,
        "census-kv",
        "DELETE FROM TARGET_INFO_GPU_METRICS WHERE metricName LIKE '% Bytes [Bytes]';",
    );
    let shares = &s["ranges"][0]["dram_per_step"];
    assert_eq!(shares["source"], "shares");
    let within = shares["bytes_within"].as_f64().unwrap();
    for k in ["dram_read_bytes", "dram_write_bytes"] {
        let (c, sh) = (counted[k].as_f64().unwrap(), shares[k].as_f64().unwrap());
        assert!(
            (c - sh).abs() <= within,
            "{k}: {c} counted, {sh} from shares (±{within})"
        );
    }
    // Above 2^23 bytes a window: the writes are not what a wrapped counter would leave.
    assert!(counted["dram_write_bytes"].as_f64().unwrap() > 500e6);
}

/// The MoE decode reads 187% of its census: its experts' weights are gathered (copied) every
/// step, bytes beyond the weights and the cache. The experts' part is the expected share of
/// 553648128 bytes when 4 tokens each pick 2 of 8 experts.
#[test]
fn a_moe_decode_that_copies_its_experts_reads_beyond_its_census() {
    let sb = Sandbox::new();
    let (s, md) = reported(&sb, "census-moe", "");
    let c = census(&s);
    assert_eq!(c["above"], true, "{c}");
    let expected = 553_648_128.0 * (1.0 - 0.75f64.powi(4)) / 1e6;
    assert!((fig(c, "census_experts_mb") - expected).abs() < 1e-9);
    assert_eq!(
        fig(c, "census_weights_mb"),
        (644_433_920.0 - 553_648_128.0) / 1e6
    );
    assert!(fig(c, "read_of_census_pct") > 180.0);
    assert!(md.contains("bytes beyond them move every step"), "{md}");
    // The gather that copies the chosen experts' weights is named with its share of the GPU
    // time in the range (the whole capture's, in nsys stats, is 25.4%).
    let ev = c["evidence"].as_array().unwrap();
    let gather = ev
        .iter()
        .find(|e| e["quantity"] == "kernel_share_pct")
        .unwrap_or_else(|| panic!("{c}"));
    assert!(gather["scope"]["kernel"]
        .as_str()
        .unwrap()
        .contains("vectorized_gather_kernel"));
    assert!((gather["value"].as_f64().unwrap() - 26.3).abs() < 0.05);
    assert!(
        md.contains("kernels that copy by index hold vectorized_gather_kernel 26.3%"),
        "{md}"
    );
    // Its 564.5 MB written are no cache rewrite: 8.5 MB of cache.
    assert!(
        !md.contains("of its KV cache: about the whole cache every step"),
        "{md}"
    );
}

/// A capture whose marks hold no model figures (as before the hook wrote them): no census.
#[test]
fn marks_without_the_models_figures_make_no_census() {
    let sb = Sandbox::new();
    let (s, _) = reported(
        &sb,
        "census-kv",
        "UPDATE NVTX_EVENTS SET text = substr(text, 1, instr(text, ' past=') - 1) \
         WHERE text LIKE 'stage2:tokens %past=%';",
    );
    let none = s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["kind"] != "census");
    assert!(none);
}

/// The 5 decode steps: the first at 21.30 ms pulls the mean (15.67 ms) away from the others,
/// so the step is the median instance, as NVIDIA's nvtx_sum gives it; the small-batch lever
/// names the KV cache 8 sequences would hold, the census's 4 scaled to 8.
#[test]
fn a_step_pulled_by_one_slow_instance_is_the_median_one() {
    let sb = Sandbox::new();
    let (s, md) = reported(&sb, "census-kv", "");
    let all = s["findings"].as_array().unwrap();
    let step = all.iter().find(|f| f["kind"] == "step").unwrap();
    assert_eq!(step["basis"], "median", "{md}");
    let sum = read(common::root().join("tests/data/census-kv/nvidia/run_nvtx_sum.csv"));
    let row = sum.lines().find(|l| l.ends_with(",:decode")).unwrap();
    let med_ns: f64 = row.split(',').nth(4).unwrap().parse().unwrap();
    assert!((fig(step, "step_ms") - med_ns / 1e6).abs() < 0.01, "{row}");
    assert!((fig(step, "mean_step_ms") - 15.67).abs() < 0.005);
    assert!((fig(step, "slowest_instance_ms") - 21.30).abs() < 0.005);
    let batch = all
        .iter()
        .find(|f| f["kind"] == "lever" && f["lever"]["what"] == "batch")
        .unwrap();
    let kv = fig(census(&s), "census_kv_mb");
    assert!((fig(batch, "kv_mb_then") - 2.0 * kv).abs() < 1e-6);
    // Only the weights are read once a pass whatever its sequences: the step's bytes at the
    // ceiling count as fixed in the census's weights' share, the KV cache among the rest grows.
    let weights = fig(batch, "census_weights_mb");
    assert_eq!(weights, fig(census(&s), "census_weights_mb"));
    let share = weights / fig(batch, "step_sampled_dram_mb");
    assert!(share > 0.5 && share < 0.7, "{share}");
    // Its steps rewrite the whole KV cache (a cache grown by concatenation): the host-work
    // lever says to preallocate it before any CUDA graph can record the step.
    let host = all
        .iter()
        .find(|f| f["kind"] == "lever" && f["lever"]["what"] == "host_work")
        .unwrap();
    let written = fig(host, "write_of_kv_pct");
    assert_eq!(written, fig(census(&s), "write_of_kv_pct"));
    let summary = read(sb.path().join("census-kv/stakeholder_summary.md"));
    assert!(
        summary.contains("first preallocate the KV cache"),
        "{summary}"
    );
}
