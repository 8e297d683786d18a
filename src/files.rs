//! Reading the files a run directory or a user names: only regular files (a symlink to
//! `/dev/zero` or a FIFO would grow memory without end or block forever), and small ones read
//! whole only up to a cap. Also how an argv is quoted for a shell, for every line stage2 prints.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Caps for files that have no business being large.
pub(crate) const CONFIG_CAP: u64 = 4 << 20;
pub(crate) const RUN_FILE_CAP: u64 = 64 << 20;

fn not_regular() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "not a regular file (a device, FIFO, socket or directory)",
    )
}

/// Open `path` for reading if it is (or links to) a regular file; checked before opening, so
/// a FIFO never blocks, and again on the open file.
pub(crate) fn open_regular(path: &Path) -> io::Result<File> {
    if !std::fs::metadata(path)?.is_file() {
        return Err(not_regular());
    }
    let f = File::open(path)?;
    if !f.metadata()?.is_file() {
        return Err(not_regular());
    }
    Ok(f)
}

/// A regular file's text, refused when it is over `cap` bytes.
pub(crate) fn read_capped(path: &Path, cap: u64) -> io::Result<String> {
    let mut text = String::new();
    open_regular(path)?
        .take(cap + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {} MiB: not a file stage2 wrote", cap >> 20),
        ));
    }
    Ok(text)
}

/// Text from input as an error message shows it: at most 60 characters, the rest counted, control
/// characters escaped (a 10 MB field or a terminal escape is not echoed).
pub(crate) fn shown(text: &str) -> String {
    const MAX: usize = 60;
    let mut out: String = text
        .chars()
        .take(MAX)
        .flat_map(|c| {
            if c.is_control()
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c)
            {
                c.escape_unicode().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect();
    let n = text.chars().count();
    if n > MAX {
        out.push_str(&format!("... ({} more characters)", n - MAX));
    }
    out
}

/// Quote an argv as one line that a POSIX shell turns back into the same argv. Plain words
/// (`--trace=cuda,nvtx`, paths) stay bare so the line reads like what a person would type.
pub(crate) fn shell_line(argv: &[String]) -> String {
    argv.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
}

fn quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// The process environment as text: a key or value that is not UTF-8 (a Latin-1 directory in
/// `PWD`) is read lossily instead of stopping the run (`std::env::vars` panics on it).
pub(crate) fn env_vars() -> impl Iterator<Item = (String, String)> {
    std::env::vars_os().map(|(k, v)| {
        (
            k.to_string_lossy().into_owned(),
            v.to_string_lossy().into_owned(),
        )
    })
}

/// Whether an input file is there: `Ok(false)` when nothing is at `path`, `Ok(true)` for a
/// regular file (or a link to one), and an error for anything else there (a folder, a FIFO, a
/// device, a dangling link): an input in the way is said, never taken as absent.
pub(crate) fn present(path: &Path) -> io::Result<bool> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
        Ok(_) => match std::fs::metadata(path) {
            Ok(m) if m.is_file() => Ok(true),
            Ok(_) => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            )),
            Err(_) => Err(io::Error::new(io::ErrorKind::NotFound, "a link to nothing")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_and_directories_are_refused_without_blocking() {
        let tmp = tempfile::tempdir().unwrap();
        let link = tmp.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let fifo = tmp.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        for p in [link.as_path(), fifo.as_path(), tmp.path()] {
            let e = read_capped(p, 10).unwrap_err();
            assert!(
                e.to_string().contains("not a regular file"),
                "{}: {e}",
                p.display()
            );
        }
        let big = tmp.path().join("big");
        std::fs::write(&big, "x".repeat(11)).unwrap();
        assert!(read_capped(&big, 10).is_err());
        std::fs::write(&big, "x".repeat(10)).unwrap();
        assert_eq!(read_capped(&big, 10).unwrap().len(), 10);
    }
}
