//! stage2 on a terminal (a pseudo-terminal): the live progress line is cleared before any other
//! line, colour follows `--color`, `NO_COLOR` and `CLICOLOR_FORCE`, and every line has stage2's
//! one prefix.

mod common;

use std::io::Read;
use std::process::Stdio;

use common::Sandbox;

/// Run `stage2 profile` with stderr on a pseudo-terminal; the raw bytes it wrote there.
fn on_a_terminal(sb: &Sandbox, id: &str, env: &[(&str, &str)], extra: &[&str]) -> String {
    let pty = nix::pty::openpty(None, None).unwrap();
    let mut cmd = sb.std_stage2();
    cmd.env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .envs(env.iter().copied())
        .args(["profile", "--run-root", "runs", "--run-id", id])
        .args(extra)
        .args(["--nvtx-capture", "decode", "--", "python3", "-c"])
        // Long enough for the live line to be drawn (every 0.5 s) before the next log line.
        .arg("import time; time.sleep(1.6)")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(pty.slave));
    let mut child = cmd.spawn().unwrap();
    drop(cmd);
    let mut master = std::fs::File::from(pty.master);
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    // EIO once the child (the last holder of the terminal) is gone.
    while let Ok(n) = master.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    assert!(child.wait().unwrap().success());
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn the_live_line_is_cleared_before_every_other_line() {
    let sb = Sandbox::new();
    let raw = on_a_terminal(&sb, "t", &[], &[]);
    assert!(raw.contains("stage2: nsys: running"), "{raw:?}");
    // Each line after a live line starts on a cleared row: the live line is never followed by
    // another line's text on the same row.
    for (i, _) in raw.match_indices("elapsed") {
        let rest = &raw[i + "elapsed".len()..];
        assert!(
            rest.is_empty() || rest.starts_with("\r\x1b[2K") || rest.starts_with(", about"),
            "live line not cleared: {:?}",
            &raw[i.saturating_sub(60)..(i + 80).min(raw.len())]
        );
    }
    // One voice: every line stage2 wrote starts with its prefix.
    for line in raw
        .split(['\n', '\r'])
        .map(|l| l.trim_start_matches("\x1b[2K"))
    {
        let line = line.trim();
        if !line.is_empty() {
            assert!(
                line.starts_with("stage2: ") || line.starts_with('/'),
                "{line:?}"
            );
        }
    }
}

#[test]
fn colour_on_a_terminal_unless_no_color_or_never() {
    let sb = Sandbox::new();
    // The fake ncu's metric listing fails here: a warning, with its word in colour.
    let warn = [("FAKE_NCU_QUERY", "fail")];
    let coloured = on_a_terminal(&sb, "c", &warn, &[]);
    assert!(
        coloured.contains("\x1b[1;33mwarning:\x1b[0m"),
        "{coloured:?}"
    );
    let no_color = on_a_terminal(
        &sb,
        "n",
        &[("FAKE_NCU_QUERY", "fail"), ("NO_COLOR", "1")],
        &[],
    );
    assert!(no_color.contains("stage2: warning: "), "{no_color:?}");
    assert!(!no_color.contains("\x1b[1;"), "{no_color:?}");
    let never = on_a_terminal(&sb, "v", &warn, &["--color", "never"]);
    assert!(!never.contains("\x1b[1;"), "{never:?}");
}

/// Off a terminal (a pipe, a CI log): no colour and no live line, unless CLICOLOR_FORCE.
#[test]
fn off_a_terminal_plain_unless_forced() {
    let sb = Sandbox::new();
    let plain = sb
        .profile_decode("p", &[])
        .env("FAKE_NCU_QUERY", "fail")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&plain.stderr);
    assert!(
        err.contains("stage2: warning: ") && !err.contains('\x1b'),
        "{err:?}"
    );
    let forced = sb
        .profile_decode("f", &[])
        .env("FAKE_NCU_QUERY", "fail")
        .env("CLICOLOR_FORCE", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&forced.stderr);
    assert!(err.contains("\x1b[1;33mwarning:\x1b[0m"), "{err:?}");
}

/// A range name with terminal escapes (a real export, its `decode` renamed here: hand-made)
/// reaches neither stderr nor the reports raw.
#[test]
fn escape_sequences_in_range_names_are_written_out() {
    let sb = Sandbox::new();
    let run = sb.copy_of("tests/data/hf/gpu-metrics", "esc");
    let db = rusqlite::Connection::open(run.join("nsys/run.sqlite")).unwrap();
    db.execute(
        "UPDATE NVTX_EVENTS SET text = 'dec\u{1b}[2J\u{1b}]0;pwned\u{7}ode' WHERE text = 'decode'",
        [],
    )
    .unwrap();
    drop(db);
    let out = sb
        .stage2()
        .args(["report", "--color", "never"])
        .arg(&run)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    for f in ["kernels.md", "kernels.csv", "stakeholder_summary.md"] {
        let text = std::fs::read_to_string(run.join(f)).unwrap_or_default();
        assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "{f}");
    }
    let md = std::fs::read_to_string(run.join("kernels.md")).unwrap();
    assert!(md.contains("\\u{1b}"), "the escape is shown, not dropped");
}
