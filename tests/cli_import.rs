//! `stage2 report FILE.nsys-rep|FILE.ncu-rep`: a report made by hand is exported into a new run
//! directory and rendered (fake nsys/ncu replaying real exports), or refused with exit 3 when
//! the tool is missing.

mod common;

use common::{read, root, Sandbox};
use predicates::prelude::*;

/// The single run directory made under the sandbox's default run root.
fn made(sb: &Sandbox) -> std::path::PathBuf {
    let runs: Vec<_> = std::fs::read_dir(sb.path().join("tmp/stage2"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

#[test]
fn an_nsys_report_file_is_exported_and_rendered() {
    let sb = Sandbox::new();
    // The fake nsys treats the SQLite as the report it exports.
    let rep = sb.path().join("mine.nsys-rep");
    std::fs::copy(root().join("tests/data/nsys/run.sqlite"), &rep).unwrap();
    sb.stage2()
        .arg("report")
        .arg(&rep)
        .assert()
        .success()
        .stderr(predicate::str::contains("exporting").and(predicate::str::contains("with nsys")));
    let run = made(&sb);
    let cmd = read(run.join("nsys/cmd.txt"));
    assert!(
        cmd.contains(" stats --report cuda_gpu_kern_sum") && cmd.contains(" export --type sqlite"),
        "{cmd}"
    );
    assert!(run.join("nsys/run.nsys-rep").is_file());
    let md = read(run.join("kernels.md"));
    assert!(md.contains("26 kernels, 1464 launches"), "{md}");
    // Nothing is written beside the user's file (calls.log is the fakes' own log).
    let mut beside: Vec<_> = std::fs::read_dir(sb.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "calls.log")
        .collect();
    beside.sort();
    assert_eq!(beside, ["mine.nsys-rep", "tmp"]);
}

#[test]
fn an_ncu_report_file_is_imported_and_rendered() {
    let sb = Sandbox::new();
    let rep = sb.path().join("decode.ncu-rep");
    std::fs::write(&rep, "fake ncu report").unwrap();
    sb.stage2().arg("report").arg(&rep).assert().success();
    let run = made(&sb);
    assert!(read(run.join("ncu/decode_raw.csv")).contains("Kernel Name"));
    assert!(run.join("ncu/decode_raw_mangled.csv").is_file());
    assert!(read(run.join("kernels.md")).contains("ncu"));
}

#[test]
fn a_report_file_without_its_tool_is_a_tool_error_saying_what_to_run() {
    let sb = Sandbox::new();
    let rep = sb.path().join("mine.nsys-rep");
    std::fs::write(&rep, "x").unwrap();
    sb.stage2_without_tools()
        .arg("report")
        .arg(&rep)
        .assert()
        .code(3)
        .stderr(
            predicate::str::contains("mine.nsys-rep")
                .and(predicate::str::contains("nsys export --type sqlite")),
        );
    assert!(!sb.path().join("tmp").exists());
}

/// A report nsys cannot read: exit 3, and the run directory made for it says why in its
/// status.json instead of being left bare.
#[test]
fn a_failed_import_leaves_a_status_saying_why() {
    let sb = Sandbox::new();
    let rep = sb.path().join("broken.nsys-rep");
    std::fs::write(&rep, "not a report").unwrap();
    sb.stage2()
        .arg("report")
        .arg(&rep)
        .env("FAKE_NSYS_MODE", "badreport")
        .assert()
        .code(3);
    let st = common::status(&made(&sb));
    assert_eq!(st["state"], "failed", "{st}");
    assert_eq!(st["exit_code"], 3);
    assert!(st["passes"]["nsys"]["reason"]
        .as_str()
        .unwrap()
        .contains("the report cannot be read"));
}
