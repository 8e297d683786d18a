//! Hostile conditions, round 2: each case names the issue item it covers.

mod common;

use std::os::unix::ffi::OsStrExt;
use std::process::Stdio;

use common::{read, status, Sandbox};

/// Item 1: An environment that is not UTF-8 (key, value, a Latin-1 working directory in PWD) is read
/// lossily: no panic, the run ends well, env.json written.
#[test]
fn an_environment_that_is_not_utf8_does_not_panic() {
    let sb = Sandbox::new();
    let latin1 = sb.path().join(std::ffi::OsStr::from_bytes(b"caf\xe9"));
    std::fs::create_dir(&latin1).unwrap();
    for dry in [true, false] {
        let id = if dry { "dry" } else { "real" };
        let mut args = vec!["--nvtx-capture", "decode"];
        if dry {
            args.push("--dry-run");
        }
        args.extend(["--", "python3", "-c", "print(1)"]);
        sb.profile(id, &args)
            .env("STAGE2_ODD", std::ffi::OsStr::from_bytes(b"\xff\xfe"))
            .env(std::ffi::OsStr::from_bytes(b"CUDA_ODD_\xff"), "1")
            .env("PWD", &latin1)
            .assert()
            .success();
        assert!(sb.run(id).join("env.json").is_file());
    }
}

/// Item 1: stderr's reader gone (`2>&1 | head -5`, a dead log shipper): no panic, the run finishes
/// and writes its reports.
#[test]
fn a_closed_stderr_does_not_stop_the_run() {
    let sb = Sandbox::new();
    let mut child = sb
        .std_stage2()
        .args([
            "profile",
            "--run-root",
            "runs",
            "--run-id",
            "r",
            "--nvtx-capture",
            "decode",
        ])
        .args(["--", "python3", "-c", "print(1)"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(0));
    assert_eq!(status(&sb.run("r"))["state"], "ok");
    assert!(read(sb.run("r").join("kernels.md")).contains("nvjet"));
}
