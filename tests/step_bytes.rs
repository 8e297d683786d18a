//! DRAM bytes per step from the nsys pass's samples, on the committed GPU-metrics capture
//! (tests/data/hf/gpu-metrics: H100, nsys's stock gh100 set at 50 kHz, so shares of peak and no
//! byte counters; ncu measured every launch configuration of `decode` once).
//!
//! What this capture cannot support: a 5% comparison with ncu's DRAM bytes. Its decode keeps
//! the DRAM at about 1% of peak, and the export keeps each share as a whole per cent, so the
//! shares bound a step's bytes only to about ±870 MB of the 538 MB they give (ncu's 240 MB of
//! the kernels it measured lies inside). The counters and a busy GPU are checked on the GPU by
//! scripts/gpu-bytes-check.sh. What it does support is tested here: the integration, against the
//! export's own rows; ncu's bytes inside the stated bound; the source, coverage, ceiling and
//! the outputs that carry them; and, hand-made from its rows, the counters' path.

mod common;

use common::{read, Sandbox};
use serde_json::Value;

/// The committed capture copied into `sb`, its export changed by `sql` (hand-made where a test
/// says so), reported.
fn rendered(sb: &Sandbox, name: &str, sql: &str) -> (std::path::PathBuf, Value) {
    let run = sb.copy_of("tests/data/hf/gpu-metrics", name);
    if !sql.is_empty() {
        let db = rusqlite::Connection::open(run.join("nsys/run.sqlite")).unwrap();
        db.execute_batch(sql).unwrap();
    }
    sb.stage2().arg("report").arg(&run).assert().success();
    let s = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
    (run, s)
}

fn decode(s: &Value) -> &Value {
    let ranges = s["ranges"].as_array().unwrap();
    let r = ranges.iter().find(|r| r["name"] == "decode").unwrap();
    &r["dram_per_step"]
}

/// Each instance's GPU span (its first kernel's start to its last kernel's end, of the kernels
/// whose launch call ran inside it on its thread), read from the export by SQL.
fn spans(db: &rusqlite::Connection) -> Vec<(i64, i64)> {
    let sql = "SELECT MIN(k.start), MAX(k.end) FROM NVTX_EVENTS d \
               JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.globalTid = d.globalTid AND r.start BETWEEN d.start AND d.end \
               JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = r.correlationId \
               WHERE COALESCE(d.text, (SELECT value FROM StringIds WHERE id = d.textId)) = 'decode' \
               GROUP BY d.start ORDER BY d.start";
    let mut stmt = db.prepare(sql).unwrap();
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    rows.map(Result::unwrap).collect()
}

/// A metric's samples (timestamp, value), by its name in the export.
fn samples(db: &rusqlite::Connection, metric: &str) -> Vec<(i64, f64)> {
    let mut stmt = db
        .prepare(
            "SELECT g.timestamp, g.value FROM GPU_METRICS g JOIN TARGET_INFO_GPU_METRICS m \
             ON m.metricId = g.metricId AND m.typeId = g.typeId WHERE m.metricName = ?1 ORDER BY g.timestamp",
        )
        .unwrap();
    let rows = stmt
        .query_map([metric], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    rows.map(Result::unwrap).collect()
}

/// Each sample's value times the part of `[a, b)` its window (to the next sample: this
/// capture samples every 20 us, give or take 32 ns, without a gap) overlaps, in value x ns;
/// with `whole`, a window that overlaps at all counts whole (an edge window whose busy time is
/// all inside; stage2 counts an edge window between the two, by its kernels' busy time).
fn over(samples: &[(i64, f64)], a: i64, b: i64, whole: bool) -> f64 {
    samples
        .windows(2)
        .map(|w| {
            let ((t, v), end) = (w[0], w[1].0);
            assert!((19_900..=20_100).contains(&(end - t)), "{t}..{end}");
            let ov = (b.min(end) - a.max(t)).max(0);
            match (whole, ov > 0) {
                (true, true) => v * (end - t) as f64,
                _ => v * ov as f64,
            }
        })
        .sum()
}

#[test]
fn each_instances_bytes_are_its_windows_shares_times_the_peak() {
    let sb = Sandbox::new();
    let (run, s) = rendered(&sb, "gm", "");
    let peak = s["peaks"]["dram_bytes_per_s"].as_f64().unwrap();
    let step = decode(&s);
    // The shares are of ncu's peak; the ceiling is the H100 datasheet's 3.35 TB/s.
    assert_eq!(step["shares_of"]["source"], "ncu_peak");
    assert_eq!(step["shares_of"]["bytes_per_s"].as_f64(), Some(peak));
    assert_eq!(step["ceiling"]["source"], "datasheet");
    assert_eq!(step["ceiling"]["bytes_per_s"].as_f64(), Some(3.35e12));
    assert_eq!(step["source"], "shares");
    assert_eq!(step["coverage_pct"].as_f64(), Some(100.0));
    assert_eq!(step["instances"].as_u64(), Some(15), "one kind of instance");
    let db = rusqlite::Connection::open(run.join("nsys/run.sqlite")).unwrap();
    let (read_pct, write_pct) = (
        samples(&db, "DRAM Read Bandwidth [Throughput %]"),
        samples(&db, "DRAM Write Bandwidth [Throughput %]"),
    );
    let inst = s["gpu_metrics"]["instances"].as_array().unwrap();
    let spans = spans(&db);
    assert_eq!(inst.len(), spans.len());
    let mut totals = Vec::new();
    for (i, &(a, b)) in inst.iter().zip(&spans) {
        // A window's share of peak over its part inside the span, in bytes.
        let bytes = |shares: &[(i64, f64)], whole| over(shares, a, b, whole) / 100.0 * peak / 1e9;
        let (r, w) = (bytes(&read_pct, false), bytes(&write_pct, false));
        let (r_all, w_all) = (bytes(&read_pct, true), bytes(&write_pct, true));
        let got = |k: &str| i[k].as_f64().unwrap();
        assert_eq!(i["gpu_span_ns"].as_i64(), Some(b - a));
        let between = |v: f64, lo: f64, hi: f64| v >= lo * (1.0 - 1e-6) && v <= hi * (1.0 + 1e-6);
        assert!(
            between(got("dram_read_bytes"), r, r_all),
            "{i}: {r}..{r_all}"
        );
        assert!(
            between(got("dram_write_bytes"), w, w_all),
            "{i}: {w}..{w_all}"
        );
        let (r, w) = (got("dram_read_bytes"), got("dram_write_bytes"));
        assert_eq!(i["bytes_source"], "shares");
        assert_eq!(got("bytes_coverage_pct"), 100.0);
        // A point of each share over the span: the bound the whole per cents put on it.
        let point = 2.0 * peak / 100.0 * (b - a) as f64 / 1e9;
        assert!((got("bytes_within") - point).abs() <= 1e-6 * point);
        totals.push((r + w, got("step_ns")));
    }
    // The range's figure is the median instance's; its floor and use, against the ceiling.
    totals.sort_by(|x, y| x.0.total_cmp(&y.0));
    let median = totals[totals.len() / 2].0;
    let bytes = step["dram_bytes"].as_f64().unwrap();
    assert!((bytes - median).abs() <= 1e-6 * median, "{step}");
    let floor = step["memory_floor_ms"].as_f64().unwrap();
    assert!((floor - bytes / 3.35e12 * 1e3).abs() <= 1e-9, "{step}");
    let use_pct = step["bandwidth_use_pct"].as_f64().unwrap();
    assert!(use_pct > 0.0 && use_pct < 100.0, "{step}");
}

/// ncu's DRAM bytes of the kernels it measured per instance (their replays' rates times their
/// nsys durations: the per-token floor's bytes, 96% of decode's kernel time) lie inside the
/// samples' figure and the bound the whole per cents put on it; what 5% agreement would need
/// this capture cannot give (see the module's words).
#[test]
fn ncus_bytes_lie_inside_the_sampled_figure_and_its_bound() {
    let sb = Sandbox::new();
    let (run, s) = rendered(&sb, "gm", "");
    let step = decode(&s);
    let floor = &s["per_token"][0]["floor"];
    let ncu = floor["dram_bytes"].as_f64().unwrap();
    assert!(floor["measured_pct"].as_f64().unwrap() > 95.0);
    let (bytes, within) = (
        step["dram_bytes"].as_f64().unwrap(),
        step["bytes_within"].as_f64().unwrap(),
    );
    assert!(
        (bytes - within..=bytes + within).contains(&ncu),
        "ncu {ncu} against {bytes} ± {within}"
    );
    // The reports say both, each with its source: kernels.md's line and ranges.csv's columns.
    let md = read(run.join("kernels.md"));
    let line = md
        .lines()
        .find(|l| l.starts_with("DRAM traffic per step of `decode`"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(
        line.contains("(the nsys pass's samples, median of its 15 instances; summary.json `dram_per_step`): 547.86 MB (393.16 MB read, 156.06 MB written), all the GPU's DRAM traffic over each step's GPU span, from the sampled DRAM bandwidth shares of ncu's peak 3.35 TB/s, 100.0% covered; the export keeps each share as a whole per cent, so within ±875.81 MB. Memory floor 0.1635 ms a step at the datasheet's 3.35 TB/s (no copy bandwidth measured); bandwidth use 1.2% over the 13.27 ms step."),
        "{line}"
    );
    let csv = read(run.join("ranges.csv"));
    let mut rows = csv.lines().map(|l| l.split(',').collect::<Vec<_>>());
    let header = rows.next().unwrap();
    let row = rows.find(|r| r[0] == "decode").unwrap();
    let col = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
    assert_eq!(col("dram_bytes_per_step"), format!("{bytes:.0}"));
    assert_eq!(col("dram_bytes_source"), "shares");
    assert_eq!(col("dram_bytes_coverage_pct"), "100.0");
    assert_eq!(col("dram_ceiling_source"), "datasheet");
    assert_eq!(col("dram_ceiling_bytes_per_s"), "3350000000000");
    assert_eq!(col("listed"), "true");
}

/// The capture's own rows as counters (hand-made): each window's bytes, as stage2's set asks
/// nsys for them, made from its shares at ncu's peak. Where the export lists them they are
/// counted, with no bound; a window over twice the peak (a wrapped counter) sends the bytes
/// back to the shares, with a line saying why.
#[test]
fn byte_counters_are_counted_where_the_export_has_them() {
    let sb = Sandbox::new();
    let (_, plain) = rendered(&sb, "plain", "");
    let peak = plain["peaks"]["dram_bytes_per_s"].as_f64().unwrap();
    let window = peak * 20_000.0 / 1e9 / 100.0;
    let counters = format!(
        "INSERT INTO TARGET_INFO_GPU_METRICS SELECT typeId, sourceId, typeName, metricId + 100, \
           REPLACE(metricName, 'Bandwidth [Throughput %]', 'Bytes [Bytes]') \
           FROM TARGET_INFO_GPU_METRICS WHERE metricName LIKE 'DRAM % Bandwidth [Throughput %]';
         INSERT INTO GPU_METRICS (timestamp, typeId, metricId, value) SELECT timestamp, typeId, metricId + 100, ROUND(value * {window}) \
           FROM GPU_METRICS WHERE metricId IN (SELECT metricId - 100 FROM TARGET_INFO_GPU_METRICS WHERE metricName LIKE '% Bytes [Bytes]');"
    );
    let (run, s) = rendered(&sb, "counted", &counters);
    let (step, was) = (decode(&s), decode(&plain));
    assert_eq!(step["source"], "counters", "{step}");
    assert!(step.get("bytes_within").is_none() && step.get("shares_of").is_none());
    // The same traffic, counted (made for windows of 20 us; a few last 20.001): within 0.01%.
    let (a, b) = (
        step["dram_bytes"].as_f64().unwrap(),
        was["dram_bytes"].as_f64().unwrap(),
    );
    assert!((a - b).abs() / b < 1e-4, "{a} against {b}");
    let md = read(run.join("kernels.md"));
    assert!(
        md.contains("all the GPU's DRAM traffic over each step's GPU span, counted by the sampled DRAM byte counters, 100.0% covered. Memory floor"),
        "{md}"
    );
    // One window reading 1 TB in 20 us.
    let wrapped = format!(
        "{counters} UPDATE GPU_METRICS SET value = 1e12 WHERE rowid = (SELECT min(rowid) FROM GPU_METRICS \
         WHERE metricId = (SELECT metricId FROM TARGET_INFO_GPU_METRICS WHERE metricName = 'DRAM Write Bytes [Bytes]') AND timestamp > 20000000);"
    );
    let (run, s) = rendered(&sb, "wrapped", &wrapped);
    assert_eq!(decode(&s)["source"], "shares");
    let note = s["gpu_metrics"]["bytes_note"].as_str().unwrap();
    assert!(
        note.starts_with("the DRAM byte counters read more than twice ncu's peak bandwidth (3.35 TB/s) in the window at "),
        "{note}"
    );
    assert!(read(run.join("kernels.md"))
        .contains("Bytes per step: the DRAM byte counters read more than twice"));
}

/// Where nothing gives the peak the shares are of (no ncu pass, a GPU the datasheet table does
/// not know) and the export has no counters, no bytes are given, and the reports say why.
#[test]
fn no_bytes_without_a_peak_or_counters_and_a_line_why() {
    let sb = Sandbox::new();
    let run = sb.copy_of("tests/data/hf/gpu-metrics", "nopeak");
    std::fs::remove_dir_all(run.join("ncu")).unwrap();
    let env = read(run.join("env.json")).replace("NVIDIA H100 80GB HBM3", "NVIDIA X1");
    std::fs::write(run.join("env.json"), env).unwrap();
    sb.stage2().arg("report").arg(&run).assert().success();
    let s: Value = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
    assert!(decode(&s).is_null(), "{}", decode(&s));
    let md = read(run.join("kernels.md"));
    assert!(
        md.contains("Bytes per step: none are given: the export holds no DRAM byte counters, and no DRAM bandwidth is known for NVIDIA X1 to read the shares against"),
        "{md}"
    );
}
