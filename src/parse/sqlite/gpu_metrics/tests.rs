//! Hand-made exports (the error paths and the packing); the real capture is read in
//! tests/gpu_metrics.rs.

use super::*;

/// An export with nsys's two GPU-metrics tables (no constraints: a broken export's rows go in
/// as given) holding `rows` of (timestamp, typeId, metric name, value) as SQL literals.
fn export(rows: &[(&str, i64, &str, &str)]) -> (tempfile::TempDir, NsysDb) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.sqlite");
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch(
        "CREATE TABLE TARGET_INFO_GPU_METRICS (typeId, sourceId, typeName, metricId, metricName);
         CREATE TABLE GPU_METRICS (rawTimestamp, timestamp, typeId, metricId, value);",
    )
    .unwrap();
    let mut names: Vec<(i64, &str)> = Vec::new();
    for &(_, ty, name, _) in rows {
        if !names.contains(&(ty, name)) {
            names.push((ty, name));
        }
    }
    for (id, (ty, name)) in names.iter().enumerate() {
        c.execute(
            "INSERT INTO TARGET_INFO_GPU_METRICS VALUES (?1, ?1, '', ?2, ?3)",
            rusqlite::params![ty, id as i64, name],
        )
        .unwrap();
    }
    for &(t, ty, name, v) in rows {
        let id = names.iter().position(|n| *n == (ty, name)).unwrap();
        c.execute_batch(&format!(
            "INSERT INTO GPU_METRICS VALUES ({t}, {t}, {ty}, {id}, {v});"
        ))
        .unwrap();
    }
    drop(c);
    let db = NsysDb::open(&path).unwrap();
    (dir, db)
}

const GR: &str = METRICS[0];
const READ: &str = METRICS[1];

fn read_all(db: &NsysDb) -> Samples {
    db.gpu_metric_samples(i64::MIN, i64::MAX).unwrap()
}

#[test]
fn rows_are_packed_into_one_sample_per_gpu_and_timestamp() {
    // Two GPUs' rows interleaved, one GPU's written out of order, a metric not read, and a
    // raw byte counter.
    let (_d, db) = export(&[
        ("100", 7, GR, "50"),
        ("100", 7, READ, "20"),
        ("100", 8, GR, "1"),
        ("100", 7, COUNTERS[0], "123456"),
        ("120", 7, GR, "60"),
        ("120", 7, "SMs Active [Throughput %]", "9"),
        ("140", 8, GR, "3"),
        ("120", 8, GR, "2"),
        ("120", 8, READ, "4"),
    ]);
    let Samples::Read(series) = read_all(&db) else {
        panic!()
    };
    assert_eq!(series.len(), 2);
    let (a, b) = (&series[0], &series[1]);
    assert_eq!((a.gpu, b.gpu), (7, 8));
    let ts = |s: &Series| s.samples.iter().map(|x| x.t).collect::<Vec<_>>();
    assert_eq!(ts(a), [100, 120]);
    assert_eq!(ts(b), [100, 120, 140], "sorted once, out of order");
    assert_eq!(a.samples[0].v[0], 50.0);
    assert_eq!(a.samples[0].v[1], 20.0);
    assert_eq!(a.samples[0].v[METRICS.len()], 123456.0);
    assert!(a.samples[1].v[1].is_nan(), "no DRAM row at 120");
    assert_eq!((b.samples[1].v[0], b.samples[1].v[1]), (2.0, 4.0));
    assert!(a.names.contains(&"SMs Active [Throughput %]".to_string()));
}

#[test]
fn rows_of_one_timestamp_written_apart_are_one_sample() {
    let (_d, db) = export(&[
        ("200", 7, GR, "5"),
        ("100", 7, GR, "1"),
        ("200", 7, READ, "6"),
    ]);
    let Samples::Read(series) = read_all(&db) else {
        panic!()
    };
    let s = &series[0].samples;
    assert_eq!(s.len(), 2);
    assert_eq!((s[1].t, s[1].v[0], s[1].v[1]), (200, 5.0, 6.0));
}

/// Hand-made broken exports: each is refused naming the table, the row and what is wrong,
/// never read as no samples or as a figure outside what nsys can write.
#[test]
fn a_table_nsys_could_not_have_written_says_what_is_wrong_with_it() {
    for (t, v, why) in [
        ("100", "-724.3", "GPU_METRICS row 2: DRAM Read Bandwidth [Throughput %] at 100 ns: its value is -724.3: a share of peak is never below 0% or above 100%"),
        ("100", "500", "its value is 500: a share of peak"),
        ("100", "NULL", "GPU_METRICS row 2: DRAM Read Bandwidth [Throughput %] at 100 ns: its value is NULL, not a number"),
        ("100", "'abc'", "its value is text or a blob, not a number"),
        ("100.5", "3", "GPU_METRICS row 2: column timestamp: a real number where an integer belongs"),
    ] {
        let (_d, db) = export(&[("100", 7, GR, "5"), (t, 7, READ, v)]);
        match read_all(&db) {
            Samples::Unreadable(got) => assert!(got.contains(why), "{got}"),
            other => panic!("{v}: {other:?}"),
        }
    }
    // A 24-bit counter's wrap reads as down to -2^23; below that no counter nsys writes.
    let (_d, db) = export(&[("100", 7, COUNTERS[1], "-8388609")]);
    let Samples::Unreadable(got) = read_all(&db) else {
        panic!()
    };
    assert!(got.contains("a byte count is never below -2^23"), "{got}");
    let (_d, db) = export(&[("100", 7, COUNTERS[1], "-5220352")]);
    assert!(matches!(read_all(&db), Samples::Read(_)));
}

#[test]
fn a_metric_name_that_is_not_text_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.sqlite");
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch(
        "CREATE TABLE TARGET_INFO_GPU_METRICS (typeId, sourceId, typeName, metricId, metricName);
         CREATE TABLE GPU_METRICS (rawTimestamp, timestamp, typeId, metricId, value);
         INSERT INTO TARGET_INFO_GPU_METRICS VALUES (7, 7, '', 0, NULL);",
    )
    .unwrap();
    drop(c);
    let db = NsysDb::open(&path).unwrap();
    assert_eq!(
        read_all(&db),
        Samples::Unreadable("TARGET_INFO_GPU_METRICS row 1: its metricName is NULL".to_string())
    );
}
