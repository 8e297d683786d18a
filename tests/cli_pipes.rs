//! A reader that goes away early (`| head -0`, `| true`) is not an error: no panic, the
//! command's own exit code.

mod common;

use std::process::Command;

use common::{root, Sandbox};

/// Run `stage2 ARGS | true` in bash; returns stage2's exit code and its stderr.
fn piped_to_true(sb: &Sandbox, args: &str) -> (i32, String) {
    let bin = assert_cmd::cargo::cargo_bin("stage2");
    let script = format!(
        "'{}' {args} 2>stderr.txt | true; echo ${{PIPESTATUS[0]}}",
        bin.display()
    );
    let out = Command::new("bash")
        .args(["-c", &script])
        .current_dir(sb.path())
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let code = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let stderr = std::fs::read_to_string(sb.path().join("stderr.txt")).unwrap_or_default();
    (code, stderr)
}

#[test]
fn doctor_into_a_closed_pipe_does_not_panic() {
    let sb = Sandbox::new();
    let (code, stderr) = piped_to_true(&sb, "doctor");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // No GPU and no tools here: doctor's own verdict, not 101.
    assert_eq!(code, 3, "{stderr}");
}

#[test]
fn report_and_config_into_a_closed_pipe_do_not_panic() {
    let sb = Sandbox::new();
    let run = sb.path().join("sample");
    let copy = Command::new("cp")
        .args(["-r"])
        .arg(root().join("examples/sample-run"))
        .arg(&run)
        .status()
        .unwrap();
    assert!(copy.success());
    for args in ["report sample", "config", "--help"] {
        let (code, stderr) = piped_to_true(&sb, args);
        assert!(!stderr.contains("panicked"), "{args}: {stderr}");
        assert_eq!(code, 0, "{args}: {stderr}");
    }
}

/// A stdout that cannot be written (a full disk: /dev/full) is not a success: the result never
/// reached its reader. Exit 8 and the reason on stderr; the run directory is whole.
#[test]
fn a_stdout_that_cannot_be_written_is_exit_8() {
    if !std::path::Path::new("/dev/full").exists() {
        return;
    }
    let sb = Sandbox::new();
    let run = sb.copy_of("tests/data/hf/gpu-metrics", "full");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = sb
        .std_stage2()
        .args(["report", "--json"])
        .arg(&run)
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(8), "{err}");
    assert!(err.contains("cannot write to stdout"), "{err}");
    assert!(run.join("summary.json").is_file());
}

/// `--show-output` echoes the workload on stderr, redacted: stdout stays the one JSON object.
#[test]
fn show_output_keeps_stdout_for_the_result_and_redacts_the_echo() {
    let sb = Sandbox::new();
    let out = sb
        .profile_of(
            "show",
            &[
                "--json",
                "--show-output",
                "--no-ncu",
                "--nvtx-capture",
                "decode",
            ],
            &[
                "python3",
                "-c",
                "print('fetching https://user:hunter2@example.com/m')",
            ],
        )
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("stdout is one JSON object");
    assert_eq!(v["state"], "ok");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("fetching https://") && !err.contains("hunter2"),
        "{err}"
    );
}
