//! Writing to stdout (stderr goes through [`crate::term::line`]). A reader that goes away (`stage2 doctor | head -1`) is not an
//! error: output stops and the command ends with its own exit code, as ripgrep does.

use std::io::{self, Write};

/// The first error writing stdout met (a full disk, a closed file), not a closed pipe: the
/// command's result did not reach its reader, so it must not end 0.
static FAILED: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Write `text` to stdout; a closed pipe counts as written, other errors are returned (and
/// remembered for [`failed`]).
pub(crate) fn stdout(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    let r = ignore_broken_pipe(out.write_all(text.as_bytes()).and_then(|_| out.flush()));
    if let Err(e) = &r {
        let mut f = FAILED.lock().unwrap_or_else(|p| p.into_inner());
        f.get_or_insert_with(|| e.to_string());
    }
    r
}

/// The exit code a command ends with: a success whose stdout could not be written is the
/// output error (8, said on stderr); any other code stands.
pub fn settle(code: i32) -> i32 {
    let failed = FAILED.lock().unwrap_or_else(|p| p.into_inner()).clone();
    match failed {
        Some(why) if code == crate::exit_codes::OK => {
            crate::logging::error(&format!("cannot write to stdout: {why}"));
            crate::exit_codes::RUN_DIR
        }
        _ => code,
    }
}

fn ignore_broken_pipe(r: io::Result<()>) -> io::Result<()> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// With `--json`, a command that ends without its result still prints one object: its state,
/// exit code and why, so a script reads the same shape every time.
pub(crate) fn json_refusal(code: i32, state: &str, why: &str) {
    let v = serde_json::json!({ "state": state, "exit_code": code, "error": why });
    let _ = stdout(&format!("{v}\n"));
}

/// Whether the command line asks for JSON on stdout (`profile`, `report` or `diff` `--json`),
/// read from the raw arguments, for errors found before they are parsed.
pub(crate) fn json_asked(args: &[String]) -> bool {
    let sub = args.get(1).map(String::as_str);
    matches!(sub, Some("profile" | "report" | "diff")) && args.iter().any(|a| a == "--json")
}

/// `println!` that neither panics nor fails on a closed stdout.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        let mut s = format!($($arg)*);
        s.push('\n');
        let _ = $crate::out::stdout(&s);
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_pipe_is_success_and_other_errors_are_not() {
        let broken = io::Error::from(io::ErrorKind::BrokenPipe);
        assert!(ignore_broken_pipe(Err(broken)).is_ok());
        let other = io::Error::from(io::ErrorKind::PermissionDenied);
        assert!(ignore_broken_pipe(Err(other)).is_err());
    }
}
