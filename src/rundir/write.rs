//! Writing a run's files: whole or not at all (a temp file beside the target, renamed over it),
//! text through the one redaction step on its way to disk, large files streamed.

use std::path::Path;

/// Write `path` whole or not at all: a temp file of a unique name, created exclusively in the
/// same directory (never following a planted link), then renamed over `path`. Concurrent
/// writers of different files never share a temp file. Text goes through the one redaction
/// step on its way to disk (see [`crate::secrets::Scrubbed`]).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes).map(|()| true))
}

/// [`write_atomic`] of text written by `fill` as it goes (a large summary.json is never held
/// whole in memory): each line through the redaction step on its way to disk, the file
/// renamed into place once complete. `fill` returning false: there is nothing, no file.
pub(crate) fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<bool>,
) -> std::io::Result<()> {
    let mut tmp = temp_beside(path)?;
    {
        let mut lines = crate::secrets::Scrubbed::file(std::io::BufWriter::new(tmp.as_file_mut()));
        if !fill(&mut lines).map_err(plain)? {
            return Ok(());
        }
        lines.finish().map_err(plain)?;
    }
    tmp.persist(path).map_err(|e| plain(e.error))?;
    Ok(())
}

/// [`write_atomic`] of bytes as they are (stage2's own code, such as the Python hook).
pub(crate) fn write_atomic_raw(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut tmp = temp_beside(path)?;
    tmp.write_all(bytes).map_err(plain)?;
    // Temp files are created 0600, and the run's files stay so: a run directory can hold
    // workload output and paths the user may not want to share (the directory itself is 0700).
    tmp.persist(path).map_err(|e| plain(e.error))?;
    Ok(())
}

const TEMP_PREFIX: &str = ".stage2-";
const TEMP_SUFFIX: &str = ".tmp";

/// A hidden temp file in `path`'s folder, to be renamed over it once written whole. It is
/// locked while its writer lives (the lock goes with the process, however it ends), which is
/// how [`remove_stale_temps`] tells a killed writer's leftover from a live one.
fn temp_beside(path: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(TEMP_SUFFIX)
        .tempfile_in(dir)
        .map_err(plain)?;
    // Where the filesystem has no locks the leftover is only kept, never a writer disturbed.
    let _ = tmp.as_file().try_lock();
    Ok(tmp)
}

/// Remove the temp files in `dir` that no live writer holds: what a stage2 killed while it
/// wrote left (a half summary.json that no later write would replace).
pub(crate) fn remove_stale_temps(dir: &Path) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let ours = name.starts_with(TEMP_PREFIX) && name.ends_with(TEMP_SUFFIX);
        // Links and anything but a plain file are never ours.
        if !ours || !e.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let unheld = crate::files::open_regular(&e.path()).is_ok_and(|f| f.try_lock().is_ok());
        if unheld {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// The OS's error without the hidden temp file's name tempfile adds to it ("... at path
/// \"/dir/.stage2-x.tmp\""): the caller names the path the user gave.
fn plain(e: std::io::Error) -> std::io::Error {
    if let Some(code) = e.raw_os_error() {
        return std::io::Error::from_raw_os_error(code);
    }
    let text = e.to_string();
    let cut = text.find(" at path ").map_or(text.as_str(), |i| &text[..i]);
    std::io::Error::new(e.kind(), cut.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file written as it is made is redacted line by line, a secret split across writes
    /// included, and its last line without a newline is kept.
    #[test]
    fn a_streamed_file_is_redacted_line_by_line() {
        crate::secrets::learn([("MY_API_TOKEN", "tok-streamed-secret-123")]);
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("out.json");
        write_atomic_with(&path, |w| {
            w.write_all(b"{\n  \"a\": \"tok-streamed-")?;
            w.write_all(b"secret-123\",\n  \"url\": \"https://bob:pw@example.com/x\"\n}")?;
            Ok(true)
        })
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains("tok-streamed-secret-123") && !text.contains("bob:pw"),
            "{text}"
        );
        assert!(
            text.starts_with("{\n  \"a\": ") && text.ends_with("\n}"),
            "{text}"
        );
    }

    /// Lines are scrubbed a block at a time: a secret on a line that straddles a block's
    /// edge, written a few bytes at a time, is cut, and a block holding bytes that are not
    /// UTF-8 still has its other lines scrubbed; every byte arrives, in order.
    #[test]
    fn a_streamed_file_is_redacted_across_blocks() {
        crate::secrets::learn([("MY_API_TOKEN", "tok-block-secret-456")]);
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("big.json");
        let filler = "x".repeat(99) + "\n";
        let mut expected = Vec::new();
        write_atomic_with(&path, |w| {
            let mut put = |bytes: &[u8]| -> std::io::Result<()> {
                expected.extend_from_slice(bytes);
                for piece in bytes.chunks(7) {
                    w.write_all(piece)?;
                }
                Ok(())
            };
            for _ in 0..(crate::secrets::SCRUB_BLOCK / filler.len() - 1) {
                put(filler.as_bytes())?;
            }
            put(b"\"k\": \"tok-block-secret-456\" padding padding padding padding\n")?;
            put(b"bad \xff byte\n")?;
            for _ in 0..(crate::secrets::SCRUB_BLOCK / filler.len()) {
                put(filler.as_bytes())?;
            }
            put(b"again tok-block-secret-456\n")?;
            Ok(true)
        })
        .unwrap();
        let got = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&got);
        assert!(!text.contains("tok-block-secret-456"), "secret kept");
        assert_eq!(text.matches(crate::secrets::REDACTED).count(), 2);
        let secret = b"tok-block-secret-456".as_slice();
        let mut want = expected.clone();
        while let Some(i) = want.windows(secret.len()).position(|w| w == secret) {
            want.splice(i..i + secret.len(), crate::secrets::REDACTED.bytes());
        }
        assert_eq!(got, want);
    }

    /// One line several blocks long (compact JSON), written in small pieces: kept whole for
    /// the redaction step, every byte in order.
    #[test]
    fn a_line_longer_than_a_block_is_redacted_whole() {
        crate::secrets::learn([("MY_API_TOKEN", "tok-long-line-secret-789")]);
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("compact.json");
        let half = "y".repeat(crate::secrets::SCRUB_BLOCK * 2);
        let line = format!("{half}tok-long-line-secret-789{half}\n");
        write_atomic_with(&path, |w| {
            for piece in line.as_bytes().chunks(1000) {
                w.write_all(piece)?;
            }
            w.write_all(b"tail\n")?;
            Ok(true)
        })
        .unwrap();
        let got = std::fs::read_to_string(&path).unwrap();
        let want = format!("{half}{}{half}\ntail\n", crate::secrets::REDACTED);
        assert_eq!(got, want);
    }

    /// A temp file whose writer is gone is removed; one a writer still holds, a link and a
    /// file of another name stay.
    #[test]
    fn only_the_temp_files_of_writers_that_are_gone_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let left = dir.join(".stage2-left.tmp");
        std::fs::write(&left, "{\"half\": ").unwrap();
        let live = temp_beside(&dir.join("summary.json")).unwrap();
        std::os::unix::fs::symlink(&left, dir.join(".stage2-link.tmp")).unwrap();
        std::fs::write(dir.join("mine.tmp"), "x").unwrap();
        remove_stale_temps(dir);
        assert!(!left.exists());
        assert!(live.path().exists());
        assert!(dir.join(".stage2-link.tmp").symlink_metadata().is_ok());
        assert!(dir.join("mine.tmp").exists());
    }

    /// Hand-made hostile setup: a planted `summary.tmp` link to a file elsewhere is left alone.
    #[cfg(unix)]
    #[test]
    fn atomic_writes_never_follow_a_planted_temp_link() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside.txt");
        std::fs::write(&outside, "keep").unwrap();
        let run = tmp.path().join("run");
        std::fs::create_dir(&run).unwrap();
        std::os::unix::fs::symlink(&outside, run.join("summary.tmp")).unwrap();
        write_atomic(&run.join("summary.json"), b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep");
        assert_eq!(
            std::fs::read_to_string(run.join("summary.json")).unwrap(),
            "{}"
        );
    }
}
