//! `baseline/ranges.<pid>.txt`: the NVTX ranges the workload closed with no profiler attached,
//! as stage2's Python hook times them (`name<TAB>start_ns<TAB>end_ns<TAB>tid`, one per line,
//! the name escaped onto one line).

use std::path::{Path, PathBuf};

use crate::error::Error;

/// The longest span taken as a range's time (2^48 ns, 78 hours; as nsys timestamps are read).
const MAX_SPAN_NS: i64 = 1 << 48;

/// One closed range.
#[derive(Debug, Clone, PartialEq)]
pub struct Timed {
    pub name: String,
    pub start: i64,
    pub end: i64,
}

/// The range files in `dir` (one per process), by name.
pub fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap_or_default().to_string_lossy();
            n.starts_with("ranges.") && n.ends_with(".txt")
        })
        .collect();
    v.sort();
    v
}

/// Every range of one file in the order they closed; a line cut short by a workload that
/// died mid-write is left out, any other malformed line is an error naming it.
pub fn read(path: &Path) -> Result<Vec<Timed>, Error> {
    let text = crate::files::read_capped(path, 1 << 30)
        .map_err(|e| Error::parse(path, None, format!("cannot read: {e}")))?;
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        let last = i + 1 == lines.len();
        let f: Vec<&str> = line.split('\t').collect();
        let parsed = match f.as_slice() {
            [name, start, end, _tid] => start
                .parse::<i64>()
                .ok()
                .zip(end.parse::<i64>().ok())
                // A span past 2^48 ns (78 hours) is not a range the workload timed.
                .filter(|(s, e)| e >= s && e.checked_sub(*s).is_some_and(|d| d <= MAX_SPAN_NS))
                .map(|(s, e)| Timed {
                    name: unescape(name),
                    start: s,
                    end: e,
                }),
            _ => None,
        };
        match parsed {
            Some(t) => out.push(t),
            None if last && !complete => {}
            None => {
                return Err(Error::parse(
                    path,
                    Some(i as u64 + 1),
                    "not `name<TAB>start_ns<TAB>end_ns<TAB>tid` with end >= start and at most 2^48 ns (78 hours) apart",
                ))
            }
        }
    }
    Ok(out)
}

/// Every range of every file, in start order: the files are one per process, and a spawned
/// child's file can sort before or after its parent's by name (pid). One clock for all: the
/// hook times with CLOCK_MONOTONIC (`time.perf_counter_ns`), shared by the processes of a host.
pub fn read_all(paths: &[PathBuf]) -> Result<Vec<Timed>, Error> {
    let mut all = Vec::new();
    for p in paths {
        all.extend(read(p)?);
    }
    all.sort_by_key(|t| t.start);
    Ok(all)
}

/// The hook's one-line escaping undone: `\\n`, `\\t`, `\\r`, `\\\\`.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(o) => out.push(o),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_and_a_cut_last_line_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ranges.1.txt");
        std::fs::write(&p, "decode\t10\t30\t7\na\\tb\t1\t2\t7\ndec").unwrap();
        let r = read(&p).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].name.as_str(), r[0].end - r[0].start), ("decode", 20));
        assert_eq!(r[1].name, "a\tb");
        std::fs::write(&p, "decode\t30\t10\t7\nx\t1\t2\t3\n").unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("line 1") || e.contains(":1"), "{e}");
        assert_eq!(files(dir.path()), vec![p.clone()]);
        // A span no workload timed (5e18 ns), and one that would overflow: errors, never data.
        for bad in [
            "decode\t0\t5000000000000000000\t7\n",
            "decode\t-9223372036854775808\t9223372036854775807\t7\n",
        ] {
            std::fs::write(&p, bad).unwrap();
            let e = read(&p).unwrap_err().to_string();
            assert!(e.contains("78 hours"), "{e}");
        }
    }

    #[test]
    fn ranges_of_several_processes_are_in_start_order() {
        let dir = tempfile::tempdir().unwrap();
        // The child (pid 900) started later than its parent (pid 1000) but sorts first by name.
        std::fs::write(dir.path().join("ranges.900.txt"), "decode\t50\t60\t900\n").unwrap();
        std::fs::write(
            dir.path().join("ranges.1000.txt"),
            "decode\t10\t20\t1000\ndecode\t30\t40\t1000\n",
        )
        .unwrap();
        let all = read_all(&files(dir.path())).unwrap();
        let starts: Vec<i64> = all.iter().map(|t| t.start).collect();
        assert_eq!(starts, [10, 30, 50]);
    }
}
