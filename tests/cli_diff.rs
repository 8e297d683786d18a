//! `stage2 diff` on copies of the real sample run.

mod common;

use common::{read, root, Sandbox};
use predicates::prelude::*;

fn copy_sample(sb: &Sandbox, name: &str) -> std::path::PathBuf {
    let to = sb.path().join(name);
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(root().join("examples/sample-run"))
        .arg(&to)
        .status()
        .unwrap();
    assert!(status.success());
    to
}

/// Make the top kernel of a run 50% slower in its nsys summary.
fn slow_down_top_kernel(run: &std::path::Path) -> String {
    let path = run.join("nsys/summary_cuda_gpu_kern_sum.csv");
    let mut rdr = csv::Reader::from_path(&path).unwrap();
    let headers = rdr.headers().unwrap().clone();
    let total = headers.iter().position(|h| h == "Total Time (ns)").unwrap();
    let avg = headers.iter().position(|h| h == "Avg (ns)").unwrap();
    let name = headers.iter().position(|h| h == "Name").unwrap();
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&headers).unwrap();
    let mut slowed = String::new();
    for (i, rec) in rdr.records().enumerate() {
        let mut rec: Vec<String> = rec.unwrap().iter().map(str::to_string).collect();
        if i == 0 {
            slowed = rec[name].clone();
            for c in [total, avg] {
                rec[c] = format!("{:.1}", rec[c].parse::<f64>().unwrap() * 1.5);
            }
        }
        w.write_record(&rec).unwrap();
    }
    std::fs::write(&path, w.into_inner().unwrap()).unwrap();
    // The kernel table comes from the SQLite export's captured range: slow it there too.
    let db = rusqlite::Connection::open(run.join("nsys/run.sqlite")).unwrap();
    db.execute(
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start + (end - start) * 3 / 2 \
         WHERE demangledName = (SELECT id FROM StringIds WHERE value = ?1)",
        [&slowed],
    )
    .unwrap();
    slowed
}

#[test]
fn a_run_against_itself_has_zero_deltas() {
    let sb = Sandbox::new();
    let a = copy_sample(&sb, "a");
    sb.stage2()
        .args(["diff", "--fail-above", "5"])
        .arg(&a)
        .arg(&a)
        .assert()
        .success()
        .stdout(predicate::str::contains("total kernel time +0.0%"));
    let d: serde_json::Value = serde_json::from_str(&read(a.join("diff.json"))).unwrap();
    assert_eq!(d["total_delta_pct"], 0.0);
    assert!(d["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .all(|k| k["delta_ns"] == 0.0));
    assert!(d["warnings"].as_array().unwrap().is_empty());
    assert!(read(a.join("diff.md")).contains("The runs are comparable"));
}

#[test]
fn one_kernel_fifty_percent_slower_is_named_first_and_fails_the_gate() {
    let sb = Sandbox::new();
    let a = copy_sample(&sb, "a");
    let b = copy_sample(&sb, "b");
    let slowed = slow_down_top_kernel(&b);
    sb.stage2().arg("diff").arg(&a).arg(&b).assert().success();
    let d: serde_json::Value = serde_json::from_str(&read(b.join("diff.json"))).unwrap();
    assert_eq!(d["kernels"][0]["name"], slowed.as_str());
    // Within the rounding of integer nanoseconds.
    assert!((d["kernels"][0]["delta_pct"].as_f64().unwrap() - 50.0).abs() < 0.1);
    assert!(d["total_delta_pct"].as_f64().unwrap() > 5.0);
    sb.stage2()
        .args(["diff", "--fail-above", "5"])
        .arg(&a)
        .arg(&b)
        .assert()
        .code(7)
        .stderr(predicate::str::contains("regression above 5%"));
    // Per kernel, the 50% regression trips a 40% gate too; nothing trips a 60% one.
    sb.stage2()
        .args(["diff", "--scope", "kernels", "--fail-above", "40"])
        .arg(&a)
        .arg(&b)
        .assert()
        .code(7);
    sb.stage2()
        .args(["diff", "--scope", "kernels", "--fail-above", "60"])
        .arg(&a)
        .arg(&b)
        .assert()
        .success();
}

#[test]
fn runs_with_different_settings_are_flagged() {
    let sb = Sandbox::new();
    let a = copy_sample(&sb, "a");
    let b = copy_sample(&sb, "b");
    let cfg = read(b.join("config.yaml")).replace("set: roofline", "set: full");
    std::fs::write(b.join("config.yaml"), cfg).unwrap();
    sb.stage2()
        .arg("diff")
        .arg(&a)
        .arg(&b)
        .assert()
        .success()
        .stderr(predicate::str::contains("ncu.set differs"));
}
