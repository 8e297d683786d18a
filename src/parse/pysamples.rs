//! The Python stack samples stage2's hook writes (`nsys/pysamples.<pid>.txt`): a header line,
//! `F <id> <file>:<line>\t<qualified name>` once per function, then
//! `S <monotonic ns> <native thread id> <frame ids, innermost first>` per sample.

use std::path::Path;

use crate::error::Error;

/// One process's samples.
#[derive(Debug, Clone, Default)]
pub struct PySamples {
    pub pid: i64,
    /// Function names by frame id: `qualname (file:line)`.
    pub frames: Vec<String>,
    pub samples: Vec<PySample>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PySample {
    /// `time.monotonic_ns()` in the workload.
    pub t: i64,
    /// The Linux thread id (what nsys keeps in the low 24 bits of `globalTid`).
    pub tid: i64,
    /// Frame ids, innermost first.
    pub stack: Vec<u32>,
}

/// Read one samples file. A last line cut short (the workload was killed while writing) is
/// dropped; any other malformed line is an error naming it.
pub fn read(path: &Path) -> Result<PySamples, Error> {
    let text = crate::files::read_capped(path, 1 << 30)
        .map_err(|e| Error::parse(path, None, format!("cannot read: {e}")))?;
    let pid = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| {
            n.strip_prefix("pysamples.")?
                .strip_suffix(".txt")?
                .parse()
                .ok()
        })
        .ok_or_else(|| Error::parse(path, None, "expected a name pysamples.<pid>.txt"))?;
    let mut out = PySamples {
        pid,
        ..Default::default()
    };
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let cut_short = !complete && i + 1 == lines.len();
        match parse_line(line, &mut out) {
            Ok(()) => {}
            Err(_) if cut_short => {}
            Err(why) => return Err(Error::parse(path, Some(i as u64 + 1), why)),
        }
    }
    Ok(out)
}

fn parse_line(line: &str, out: &mut PySamples) -> Result<(), String> {
    if line.is_empty() || line.starts_with('#') {
        return Ok(());
    }
    let bad = || {
        format!(
            "not a sample or frame line: {:?}",
            line.chars().take(120).collect::<String>()
        )
    };
    if let Some(rest) = line.strip_prefix("F ") {
        let (id, name) = rest.split_once(' ').ok_or_else(bad)?;
        let id: usize = id.parse().map_err(|_| bad())?;
        if id != out.frames.len() {
            return Err(format!(
                "frame id {id} out of order (expected {})",
                out.frames.len()
            ));
        }
        let (place, func) = name.split_once('\t').ok_or_else(bad)?;
        out.frames.push(format!("{func} ({place})"));
        return Ok(());
    }
    let rest = line.strip_prefix("S ").ok_or_else(bad)?;
    let mut it = rest.split(' ');
    let t = it.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?;
    let tid = it.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?;
    let stack = match it.next() {
        None | Some("") => Vec::new(),
        Some(ids) => ids
            .split(',')
            .map(|v| {
                v.parse::<u32>()
                    .ok()
                    .filter(|&f| (f as usize) < out.frames.len())
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| format!("a sample names a frame not defined before it: {ids:?}"))?,
    };
    out.samples.push(PySample { t, tid, stack });
    Ok(())
}

/// Every samples file in `dir`, by pid. A file that cannot be read or parsed (a stray
/// `pysamples.*.txt`, one cut off mid-way) costs its own samples only: it is named in the
/// returned problems and the other processes' samples are kept.
pub fn read_dir(dir: &Path) -> (Vec<PySamples>, Vec<String>) {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("pysamples.") && n.ends_with(".txt"))
        })
        .collect();
    files.sort();
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for p in files {
        match read(&p) {
            Ok(s) => out.push(s),
            Err(e) => problems.push(e.to_string()),
        }
    }
    (out, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_frames_and_samples_and_forgives_only_a_cut_last_line() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("pysamples.41.txt");
        std::fs::write(
            &p,
            "# stage2 python samples pid=41 hz=200\nF 0 a.py:3\tf\nF 1 b.py:9\tC.g\nS 100 41 0,1\nS 200 42 1\nS 3",
        )
        .unwrap();
        let s = read(&p).unwrap();
        assert_eq!(s.pid, 41);
        assert_eq!(s.frames, ["f (a.py:3)", "C.g (b.py:9)"]);
        assert_eq!(s.samples.len(), 2);
        assert_eq!(s.samples[0].stack, [0, 1]);
        // The same cut line in the middle is an error naming the line.
        std::fs::write(&p, "F 0 a.py:3\tf\nS 3\nS 100 41 0\n").unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("pysamples.41.txt") && e.contains('2'), "{e}");
        std::fs::write(&p, "S 100 41 7\n").unwrap();
        assert!(read(&p).unwrap_err().to_string().contains("not defined"));
    }
}
