//! Benchmark (not a test): streaming parse of a large `ncu --csv --page raw` export.
//!
//! Builds a file of ROWS rows (default 100,000) from the real H100 export's column set
//! (tests/data/ncu/decode_raw.csv, its 29 launches repeated with fresh IDs), then measures in
//! one run: stage2's parser (throughput on one core, peak RSS of a process that only parses)
//! and a plain Python `csv`-module parser doing the same work (every field read, numbers
//! converted). Prints a Markdown table.
//!
//!   cargo bench --bench ncu_parse            env: ROWS, BENCH_FILE, PYTHON (python3)

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const PY: &str = r#"
import csv, sys
def num(s):
    try:
        return float(s.replace(',', ''))
    except ValueError:
        return None
rows = 0
sums = {}
with open(sys.argv[1], newline='') as f:
    r = csv.reader(f)
    header = next(r)
    units = next(r)
    k = header.index('Kernel Name')
    for row in r:
        rows += 1
        acc = sums.setdefault(row[k], [0.0] * len(row))
        for i, v in enumerate(row):
            x = num(v)
            if x is not None:
                acc[i] += x
print(rows, len(sums))
"#;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--parse-only") {
        parse_only(Path::new(&args[i + 1]));
        return;
    }
    let rows: usize = std::env::var("ROWS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(100_000);
    let file = std::env::var("BENCH_FILE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join(format!("target/bench-data/ncu_raw_{rows}.csv"))
        });
    generate(&file, rows);
    let size = std::fs::metadata(&file).unwrap().len() as f64;

    // Warm the page cache so both parsers read from memory.
    let _ = std::fs::read(&file).map(|b| b.len());
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--parse-only", &file.display().to_string()])
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&out.stdout);
    let mut it = line.split_whitespace();
    let secs: f64 = it
        .next()
        .and_then(|s| s.parse().ok())
        .expect("parse child printed no time");
    let rss_kb: f64 = it.next().and_then(|s| s.parse().ok()).unwrap_or(f64::NAN);
    let mangled_secs: f64 = it.next().and_then(|s| s.parse().ok()).unwrap_or(f64::NAN);

    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let t = Instant::now();
    let py = Command::new(&python)
        .args(["-c", PY, &file.display().to_string()])
        .output();
    let py_secs = t.elapsed().as_secs_f64();
    let py_ok = py.as_ref().map(|o| o.status.success()).unwrap_or(false);

    println!();
    println!("| file | rows | stage2 parse (s) | stage2 MB/s (one core) | stage2 peak RSS (MB) | mangled-name pass (s) | Python csv (s) | Python MB/s | stage2 speed-up |");
    println!("|---|--:|--:|--:|--:|--:|--:|--:|--:|");
    println!(
        "| {:.2} GB | {rows} | {secs:.2} | {:.0} | {:.1} | {mangled_secs:.2} | {} | {} | {} |",
        size / 1e9,
        size / 1e6 / secs,
        rss_kb / 1024.0,
        if py_ok {
            format!("{py_secs:.1}")
        } else {
            "failed".into()
        },
        if py_ok {
            format!("{:.0}", size / 1e6 / py_secs)
        } else {
            "–".into()
        },
        if py_ok {
            format!("{:.1}x", py_secs / secs)
        } else {
            "–".into()
        },
    );
}

/// Parse in a process of its own, so its peak RSS is the parser's alone. Then the second read
/// a report does: the mangled-name import is as large, read for the IDs (the same file
/// stands in for it here).
fn parse_only(file: &Path) {
    let t = Instant::now();
    let mut r = stage2::parse::ncu::read_raw(file).expect("parse");
    let secs = t.elapsed().as_secs_f64();
    assert!(r.rows > 0);
    let t = Instant::now();
    stage2::parse::ncu::attach_mangled(&mut r, file).expect("mangled");
    let mangled_secs = t.elapsed().as_secs_f64();
    assert!(r.kernels.iter().all(|k| k.mangled.is_some()));
    let hwm = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        })
        .unwrap_or_else(|| "nan".into());
    println!("{secs} {hwm} {mangled_secs}");
}

fn generate(file: &Path, rows: usize) {
    if file.exists() {
        return;
    }
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/ncu/decode_raw.csv");
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_path(&src)
        .unwrap();
    let records: Vec<csv::StringRecord> = rdr.records().map(|r| r.unwrap()).collect();
    let (header, units, data) = (&records[0], &records[1], &records[2..]);
    let tmp = file.with_extension("part");
    let mut w = csv::WriterBuilder::new()
        .quote_style(csv::QuoteStyle::Always)
        .from_writer(BufWriter::with_capacity(
            1 << 20,
            std::fs::File::create(&tmp).unwrap(),
        ));
    w.write_record(header).unwrap();
    w.write_record(units).unwrap();
    for i in 0..rows {
        let mut rec: Vec<String> = data[i % data.len()].iter().map(str::to_string).collect();
        rec[0] = i.to_string();
        w.write_record(&rec).unwrap();
    }
    w.into_inner().unwrap().flush().unwrap();
    std::fs::rename(tmp, file).unwrap();
}
