//! Benchmark (not a test): `stage2 report` against the scan floor, the two ways a report grows.
//!
//! 1. Launches: the sample run's export repeated COPIES times (scripts/synth-export.py; default
//!    1024 copies, 1.5M launches). The floor is SQLite reading every row of the kernel, runtime
//!    and NVTX tables once with nothing done with them (what any reader of the export pays).
//! 2. Distinct range names: the sample run's export with NAMES extra push/pop ranges of fresh
//!    names (default 73,000). Its floor is the same scan of that file.
//!
//! A third floor: that scan of the NVTX table with one CSV row written per range (the rows
//! ranges.csv must hold, one per range name, are at least this), for the names export.
//!
//! Each figure is the median of RUNS runs (default 3), the report in a process of its own
//! (peak RSS from `/usr/bin/time` when present). The target is held to the in-process floor;
//! the sqlite3 shell's time of the same scan (`bench/run.sh scale`'s floor) is printed beside
//! it. Prints a Markdown table with the targets
//! (report <= 1.6x the floor at 1.5M launches; <= 300 MB at 73k names); with GUARD=1 the bench
//! exits 1 when a target is missed, so a CI job on a quiet machine can hold them.
//!
//!   cargo bench --bench report_scale          env: COPIES, NAMES, RUNS, GUARD, PYTHON

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const FLOOR_SQL: &str = "SELECT total(start), total(end), total(correlationId), total(globalPid), total(demangledName) FROM CUPTI_ACTIVITY_KIND_KERNEL;
SELECT total(start), total(end), total(correlationId), total(globalTid), total(nameId) FROM CUPTI_ACTIVITY_KIND_RUNTIME;
SELECT total(start), total(end), total(globalTid), count(text) FROM NVTX_EVENTS;";

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let data = root.join("target/bench-data");
    let (copies, names, runs) = (
        env_or("COPIES", 1024),
        env_or("NAMES", 73_000),
        env_or("RUNS", 3),
    );
    let launches = run_copy(&root, &data.join(format!("launches-{copies}")));
    synth_launches(&root, &launches, copies);
    let ranges = run_copy(&root, &data.join(format!("names-{names}")));
    add_range_names(&ranges, names);

    println!("| export | scan floor (s) | sqlite3 CLI floor (s) | scan + a CSV row per range (s) | stage2 report (s) | report / floor | report / CLI floor | report / scan + rows | peak RSS (MB) | target | met |");
    println!("|---|--:|--:|--:|--:|--:|--:|--:|--:|---|---|");
    let mut missed = 0;
    for (what, run, target) in [
        (
            format!("{copies} copies (launches)"),
            &launches,
            Target::FloorRatio(1.6),
        ),
        (
            format!("{names} extra range names"),
            &ranges,
            Target::PeakMb(300.0),
        ),
    ] {
        let floor = median((0..runs).map(|_| scan_floor(&run.join("nsys/run.sqlite"))));
        let cli = median((0..runs).map(|_| cli_floor(&run.join("nsys/run.sqlite"))));
        let rows = median((0..runs).map(|_| rows_floor(&run.join("nsys/run.sqlite"), floor)));
        let measured: Vec<(f64, f64)> = (0..runs).map(|_| report(run)).collect();
        let secs = median(measured.iter().map(|m| m.0));
        let mb = median(measured.iter().map(|m| m.1));
        let met = match target {
            Target::FloorRatio(r) => secs / floor <= r,
            Target::PeakMb(m) => mb <= m,
        };
        missed += usize::from(!met);
        println!(
            "| {what} | {floor:.2} | {cli:.2} | {rows:.2} | {secs:.2} | {:.2}x | {:.2}x | {:.2}x | {mb:.0} | {} | {} |",
            secs / floor,
            secs / cli,
            secs / rows,
            target.describe(),
            if met { "yes" } else { "no" }
        );
    }
    if missed > 0 && std::env::var("GUARD").is_ok_and(|g| g == "1") {
        std::process::exit(1);
    }
}

#[derive(Clone, Copy)]
enum Target {
    FloorRatio(f64),
    PeakMb(f64),
}

impl Target {
    fn describe(self) -> String {
        match self {
            Target::FloorRatio(r) => format!("<= {r}x the floor"),
            Target::PeakMb(m) => format!("<= {m:.0} MB"),
        }
    }
}

fn median(xs: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = xs.collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// A fresh copy of the sample run, reports and export to be replaced.
fn run_copy(root: &Path, dst: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(dst);
    std::fs::create_dir_all(dst.join("nsys")).unwrap();
    let src = root.join("examples/sample-run");
    for e in walk(&src) {
        let rel = e.strip_prefix(&src).unwrap();
        let to = dst.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&e, &to).unwrap();
    }
    dst.to_path_buf()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        match p.is_dir() {
            true => out.extend(walk(&p)),
            false => out.push(p),
        }
    }
    out
}

fn synth_launches(root: &Path, run: &Path, copies: usize) {
    let db = run.join("nsys/run.sqlite");
    std::fs::remove_file(&db).unwrap();
    let py = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = Command::new(py)
        .arg(root.join("scripts/synth-export.py"))
        .arg(root.join("examples/sample-run/nsys/run.sqlite"))
        .arg(&db)
        .arg(copies.to_string())
        .output()
        .expect("python3 runs scripts/synth-export.py")
        .status
        .success();
    assert!(ok, "scripts/synth-export.py failed");
}

fn add_range_names(run: &Path, names: usize) {
    let db = rusqlite::Connection::open(run.join("nsys/run.sqlite")).unwrap();
    db.execute_batch(&format!(
        "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i < {names})
         INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid)
         SELECT 1000 + i * 10, 1005 + i * 10, 59, 'r' || i,
                (SELECT globalTid FROM NVTX_EVENTS WHERE eventType = 59 LIMIT 1) FROM c"
    ))
    .unwrap();
}

/// Seconds SQLite takes to read every row of the tables the report reads, once.
fn scan_floor(db: &Path) -> f64 {
    let c = rusqlite::Connection::open(db).unwrap();
    let t = Instant::now();
    for sql in FLOOR_SQL.split(';').filter(|s| !s.trim().is_empty()) {
        let mut st = c.prepare(sql).unwrap();
        let mut rows = st.query([]).unwrap();
        while rows.next().unwrap().is_some() {}
    }
    t.elapsed().as_secs_f64()
}

/// The scan floor plus the NVTX ranges read in start order, one CSV row written per range
/// (name, start, end, thread, type) to a file beside the export: what listing every range
/// costs before anything is computed.
fn rows_floor(db: &Path, scan: f64) -> f64 {
    let c = rusqlite::Connection::open(db).unwrap();
    let out = db.with_file_name("rows_floor.csv");
    let t = Instant::now();
    let mut w = csv::Writer::from_path(&out).unwrap();
    let mut st = c
        .prepare("SELECT text, start, end, globalTid, eventType FROM NVTX_EVENTS WHERE eventType IN (59, 60) ORDER BY start")
        .unwrap();
    let mut rows = st.query([]).unwrap();
    while let Some(r) = rows.next().unwrap() {
        let name: Option<String> = r.get(0).unwrap();
        let figures: [Option<i64>; 4] = [1, 2, 3, 4].map(|i| r.get(i).unwrap());
        let figures = figures.map(|v| v.map_or(String::new(), |v| v.to_string()));
        w.write_field(name.unwrap_or_default()).unwrap();
        w.write_record(&figures).unwrap();
    }
    w.flush().unwrap();
    let secs = t.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(out);
    scan + secs
}

/// The same scan by the sqlite3 command-line shell, a process of its own as the report is
/// (`bench/run.sh scale`'s floor; its SQLite build is another than the report's, so it is
/// printed beside the stricter in-process floor the target is held to). NaN without sqlite3.
fn cli_floor(db: &Path) -> f64 {
    let t = Instant::now();
    match Command::new("sqlite3").arg(db).arg(FLOOR_SQL).output() {
        Ok(o) if o.status.success() => t.elapsed().as_secs_f64(),
        _ => f64::NAN,
    }
}

/// `stage2 report RUN` in a process of its own: (seconds, peak RSS in MB; NaN without
/// /usr/bin/time).
fn report(run: &Path) -> (f64, f64) {
    let bin = env!("CARGO_BIN_EXE_stage2");
    let timed = Path::new("/usr/bin/time").exists();
    let log = run.join("time.txt");
    let mut cmd = match timed {
        true => {
            let mut c = Command::new("/usr/bin/time");
            c.arg("-o").arg(&log).arg("-f").arg("%M").arg(bin);
            c
        }
        false => Command::new(bin),
    };
    let t = Instant::now();
    let out = cmd.arg("report").arg(run).output().expect("stage2 runs");
    let secs = t.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "stage2 report {} failed: {}",
        run.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let kb: f64 = std::fs::read_to_string(&log)
        .ok()
        .and_then(|s| s.trim().lines().last()?.trim().parse().ok())
        .unwrap_or(f64::NAN);
    (secs, kb / 1024.0)
}
