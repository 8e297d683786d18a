//! What a user's hands meet: results on stdout for scripts, one voice on stderr, man pages,
//! report's own config, and errors that say once what failed and where.

mod common;

use common::{read, root, Sandbox};
use predicates::prelude::*;

fn sample(sb: &Sandbox) -> std::path::PathBuf {
    sb.copy_of("examples/sample-run", "sample")
}

#[test]
fn profile_prints_its_run_directory_and_json_on_stdout() {
    let sb = Sandbox::new();
    let out = sb.profile_decode("r", &[]).output().unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.trim_end(),
        sb.path().join("runs/r").display().to_string()
    );
    let out = sb.profile_decode("j", &["--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["state"], "ok");
    assert_eq!(v["exit_code"], 0);
    assert!(v["run_dir"].as_str().unwrap().ends_with("runs/j"));
    assert!(v["reports"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r == "kernels.md"));
    assert!(!v["findings"].as_array().unwrap().is_empty());
    // The very findings of summary.json, every float to its last digit.
    let summary: serde_json::Value =
        serde_json::from_str(&read(sb.path().join("runs/j/summary.json"))).unwrap();
    assert_eq!(v["findings"], summary["findings"]);
    assert_eq!(v["findings"].to_string(), summary["findings"].to_string());
    // Every human line went to stderr, in one voice.
    let err = String::from_utf8_lossy(&out.stderr);
    for line in err.lines() {
        assert!(
            line.starts_with("stage2: ") || line.starts_with("  "),
            "{line:?}"
        );
    }
}

#[test]
fn report_prints_its_run_directory_and_takes_report_and_tools_settings() {
    let sb = Sandbox::new();
    let dir = sample(&sb);
    sb.stage2()
        .arg("report")
        .arg(&dir)
        .arg("report.top_kernels=3")
        .assert()
        .success()
        .stdout(format!("{}\n", dir.display()));
    let md = read(dir.join("kernels.md"));
    assert!(md.contains("23 more kernels in kernels.csv"), "{md}");
    let cfg = sb.path().join("mine.yaml");
    std::fs::write(&cfg, "report:\n  top_kernels: 5\n").unwrap();
    sb.stage2()
        .arg("report")
        .arg(&dir)
        .arg("--config")
        .arg(&cfg)
        .assert()
        .success();
    assert!(read(dir.join("kernels.md")).contains("21 more kernels in kernels.csv"));
    // Other keys are the run's own: refused, saying so.
    sb.stage2()
        .arg("report")
        .arg(&dir)
        .arg("ncu.top_n=3")
        .assert()
        .code(2)
        .stderr(predicate::str::starts_with(
            "stage2: error: `ncu.top_n=3`: stage2 report uses only report.* and tools.* keys",
        ));
    std::fs::write(&cfg, "nsys:\n  trace: cuda\n").unwrap();
    sb.stage2()
        .arg("report")
        .arg(&dir)
        .arg("--config")
        .arg(&cfg)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "key `nsys`: stage2 report uses only",
        ));
}

#[test]
fn diff_writes_json_or_markdown_to_stdout_for_a_dash() {
    let sb = Sandbox::new();
    let (a, b) = (
        root().join("examples/diff/base"),
        root().join("examples/diff/same"),
    );
    let out = sb
        .stage2()
        .arg("diff")
        .arg(&a)
        .arg(&b)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["kernels"].is_array());
    let out = sb
        .stage2()
        .arg("diff")
        .arg(&a)
        .arg(&b)
        .args(["--out", "-"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with('#'));
    assert!(!sb.path().join("-").exists());
}

/// An unwritable --out: the path the user gave, the OS error once, no temp file name.
#[test]
fn an_unwritable_out_says_once_what_failed_where() {
    let sb = Sandbox::new();
    let (a, b) = (
        root().join("examples/diff/base"),
        root().join("examples/diff/same"),
    );
    let out = sb
        .stage2()
        .arg("diff")
        .arg(&a)
        .arg(&b)
        .args(["--out", "/proc/nope/diff.md"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(8));
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err
        .lines()
        .find(|l| l.starts_with("stage2: error:"))
        .unwrap();
    assert!(line.contains("cannot write /proc/nope/diff.md: "), "{line}");
    assert!(!line.contains(".stage2-"), "{line}");
    assert_eq!(line.matches("(os error").count(), 1, "{line}");
}

#[test]
fn clap_errors_and_run_ids_speak_in_stage2s_voice_with_exit_2() {
    let sb = Sandbox::new();
    sb.stage2()
        .args(["profile", "--bogus"])
        .assert()
        .code(2)
        .stderr(predicate::str::starts_with(
            "stage2: error: unexpected argument '--bogus'",
        ));
    // A bad run id is a usage error, with or without the tools installed.
    for cmd in [sb.stage2(), sb.stage2_without_tools()] {
        let mut cmd = cmd;
        cmd.args(["profile", "--run-id", "x/y", "--"])
            .args(common::WORKLOAD)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("--run-id \"x/y\""));
    }
    // A type error names the type in words.
    sb.stage2()
        .args(["config", "ncu.top_n=abc"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "expected a whole number (0 or more)",
        ));
    // A pass turned off says so without nested parentheses.
    sb.profile_of(
        "n",
        &["--no-ncu", "--nvtx-capture", "decode"],
        &["python3", "-c", "1"],
    )
    .assert()
    .success()
    .stderr(predicate::str::contains(
        "stage2: ncu pass: skipped: disabled by ncu.enable=false or --no-ncu",
    ));
}

#[test]
fn every_subcommand_has_a_man_page() {
    let sb = Sandbox::new();
    sb.stage2()
        .args(["man", "profile"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("stage2\\-profile")
                .and(predicate::str::contains("nvtx\\-capture")),
        );
    let dir = sb.path().join("man1");
    sb.stage2()
        .args(["man", "--dir"])
        .arg(&dir)
        .assert()
        .success();
    for page in [
        "stage2",
        "stage2-profile",
        "stage2-report",
        "stage2-diff",
        "stage2-doctor",
        "stage2-config",
        "stage2-man",
        "stage2-completions",
    ] {
        assert!(dir.join(format!("{page}.1")).is_file(), "{page}");
    }
    sb.stage2()
        .args(["man", "nope"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no man page for `nope`"));
}

/// `man --dir` replaces what is planted in the folder (a link to a file outside it, a dangling
/// link) instead of writing through it, and a DIR that is a file is named as one (exit 2).
#[test]
fn man_dir_never_writes_through_a_link() {
    let sb = Sandbox::new();
    let dir = sb.path().join("man1");
    std::fs::create_dir_all(&dir).unwrap();
    let outside = sb.path().join("outside.txt");
    std::fs::write(&outside, "mine").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("stage2-profile.1")).unwrap();
    std::os::unix::fs::symlink(sb.path().join("nowhere"), dir.join("stage2-report.1")).unwrap();
    sb.stage2()
        .args(["man", "--dir"])
        .arg(&dir)
        .assert()
        .success();
    assert_eq!(read(&outside), "mine");
    for page in ["stage2-profile.1", "stage2-report.1"] {
        let meta = std::fs::symlink_metadata(dir.join(page)).unwrap();
        assert!(meta.file_type().is_file(), "{page}");
        assert!(read(dir.join(page)).contains(".TH"), "{page}");
    }
    sb.stage2()
        .args(["man", "--dir"])
        .arg(&outside)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a folder"));
}

/// With `--json` (profile, report, diff: one convention) stdout is one object also when the
/// command fails: a usage error, a missing run, runs that cannot be compared.
#[test]
fn json_on_stdout_also_when_the_command_fails() {
    let sb = Sandbox::new();
    let object = |args: &[&str]| -> serde_json::Value {
        let out = sb.stage2().args(args).output().unwrap();
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
    };
    let v = object(&["profile", "--json", "--bogus"]);
    assert_eq!(
        (v["state"].as_str(), v["exit_code"].as_i64()),
        (Some("error"), Some(2))
    );
    let missing = sb.path().join("missing");
    let v = object(&["report", "--json", missing.to_str().unwrap()]);
    assert_eq!(v["exit_code"], 2);
    assert!(
        v["error"].as_str().unwrap().contains("does not exist"),
        "{v}"
    );
    let h100 = root().join("tests/data/hf/gpu-metrics");
    let h200 = root().join("examples/sample-run-hf-eager");
    let v = object(&[
        "diff",
        "--json",
        h100.to_str().unwrap(),
        h200.to_str().unwrap(),
    ]);
    assert_eq!(
        (v["state"].as_str(), v["exit_code"].as_i64()),
        (Some("not-comparable"), Some(9))
    );
    assert!(v["error"].as_str().unwrap().contains("GPU differs"), "{v}");
    // The old file form is a usage error, said as an object too.
    let v = object(&["diff", "--json", "-", h100.to_str().unwrap()]);
    assert_eq!(v["exit_code"], 2, "{v}");
}

/// The try-it path: with the test doubles, the reports and the console headline say the
/// figures are a replayed capture's, not this workload's; a real run says nothing of it.
#[test]
fn a_replayed_capture_says_so_in_the_reports_and_on_the_console() {
    let sb = Sandbox::new();
    let out = sb
        .profile_decode("t", &[])
        .env("FAKE_SMI", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("stage2: headline (a replayed capture's figures, not this workload's; sources: stakeholder_summary.md): "),
        "{err}"
    );
    for f in ["stakeholder_summary.md", "kernels.md"] {
        let text = read(sb.run("t").join(f));
        assert!(
            text.contains(
                "**Replayed capture:** nsys and ncu in this run were stage2's test doubles"
            ),
            "{f}: {text}"
        );
    }
    assert!(read(sb.run("t").join("stakeholder_summary.md"))
        .contains("| Tools | nsys 2025.3.1.0 (test double: a recorded capture replayed)"));
    // The committed real runs (real tools) carry no such note.
    assert!(
        !read(root().join("examples/sample-run-hf-eager/stakeholder_summary.md"))
            .contains("Replayed capture")
    );
}

/// A workload given without `--` (its flags then read as stage2's) gets the line to type.
#[test]
fn a_workload_without_the_separator_gets_the_line_with_it() {
    let sb = Sandbox::new();
    let out = sb
        .stage2()
        .args(["profile", "--nvtx-capture", "decode", "ncu.top_n=3"])
        .args(common::WORKLOAD)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("did you forget `--` before the workload? stage2 profile --nvtx-capture decode ncu.top_n=3 -- python3 -c 'print(1)'"),
        "{err}"
    );
    // Without flags of its own the first word is read as an override: that message says so.
    let out = sb
        .stage2()
        .args(["profile", "python3", "w.py"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("if this is the workload, put `--` before it"),
        "{err}"
    );
}
