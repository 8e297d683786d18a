//! Writing to stdout (stderr goes through [`crate::term::line`]). A reader that goes away (`stage2 doctor | head -1`) is not an
//! error: output stops and the command ends with its own exit code, as ripgrep does.

use std::io::{self, Write};

/// Write `text` to stdout; a closed pipe counts as written, other errors are returned.
pub(crate) fn stdout(text: &str) -> io::Result<()> {
    ignore_broken_pipe(io::stdout().lock().write_all(text.as_bytes()))
}

fn ignore_broken_pipe(r: io::Result<()>) -> io::Result<()> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
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
