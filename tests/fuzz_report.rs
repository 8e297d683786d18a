//! `stage2 report` over mutated copies of the sample runs: truncated files, flipped bytes,
//! poisoned numbers, files replaced by devices, FIFOs, directories or nothing. Every case must
//! end with a documented exit code, never a panic, a signal or a hang, and `--json` prints one
//! object on every exit. The baseline pass's range files are among the mutated. CI runs 60 cases;
//! `STAGE2_FUZZ_CASES=500 cargo test --release --test fuzz_report -- --nocapture` runs more.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{copy_dir, root, Sandbox};

/// A small deterministic generator (xorshift64*): the same cases on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The regular files under `dir` (not the links and FIFOs an earlier mutation made).
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let (p, t) = (e.path(), e.file_type().unwrap());
        if t.is_dir() {
            out.extend(files(&p));
        } else if t.is_file() {
            out.push(p);
        }
    }
    out.sort();
    out
}

const POISON: &[&str] = &[
    "NaN",
    "-1",
    "1e309",
    "inf",
    "-0",
    "99999999999999999999999",
    "",
];

/// Mutate one file of the run; returns what was done, for the failure message.
fn mutate(rng: &mut Rng, run: &Path) -> String {
    let all = files(run);
    let target = &all[rng.below(all.len())];
    let name = target.strip_prefix(run).unwrap().display().to_string();
    let bytes = std::fs::read(target).unwrap();
    match rng.below(7) {
        0 => {
            let at = rng.below(bytes.len());
            std::fs::write(target, &bytes[..at]).unwrap();
            format!("truncate {name} at {at}")
        }
        1 => {
            let mut b = bytes;
            for _ in 0..1 + rng.below(8) {
                if !b.is_empty() {
                    let i = rng.below(b.len());
                    b[i] ^= 1 << rng.below(8);
                }
            }
            std::fs::write(target, b).unwrap();
            format!("flip bytes in {name}")
        }
        2 | 3 if name.ends_with(".csv") => {
            // Replace one number-looking field with a poisoned value.
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let starts: Vec<usize> = text
                .char_indices()
                .filter(|(i, c)| {
                    c.is_ascii_digit() && (*i == 0 || matches!(text.as_bytes()[i - 1], b',' | b'"'))
                })
                .map(|(i, _)| i)
                .collect();
            if starts.is_empty() {
                return format!("no numbers in {name}");
            }
            let at = starts[rng.below(starts.len())];
            let end = text[at..]
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .map_or(text.len(), |e| at + e);
            let p = POISON[rng.below(POISON.len())];
            std::fs::write(target, format!("{}{p}{}", &text[..at], &text[end..])).unwrap();
            format!("poison {name} at {at} with {p:?}")
        }
        4 => {
            std::fs::remove_file(target).unwrap();
            std::os::unix::fs::symlink("/dev/zero", target).unwrap();
            format!("{name} -> /dev/zero")
        }
        5 => {
            std::fs::remove_file(target).unwrap();
            nix::unistd::mkfifo(target, nix::sys::stat::Mode::S_IRWXU).unwrap();
            format!("{name} is a FIFO")
        }
        _ => {
            std::fs::remove_file(target).unwrap();
            if rng.below(2) == 0 {
                std::fs::create_dir(target).unwrap();
                format!("{name} is a directory")
            } else {
                format!("{name} removed")
            }
        }
    }
}

#[test]
fn report_never_panics_or_hangs_on_mutated_runs() {
    let cases: usize = std::env::var("STAGE2_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    // The last one has the baseline pass's range files, which are mutated like the rest.
    let samples = [
        "examples/sample-run",
        "examples/sample-run-hf-eager",
        "examples/sample-run-2gpu",
        "examples/diff/slow",
        "tests/data/hf/shapes",
    ];
    let sb = Sandbox::new();
    let mut rng = Rng(0x5eed_5eed_1234_5678);
    let mut codes = std::collections::BTreeMap::new();
    for case in 0..cases {
        let sample = samples[case % samples.len()];
        let run = sb.path().join(format!("case{case}"));
        copy_dir(&root().join(sample), &run);
        let what = (0..1 + rng.below(3))
            .map(|_| mutate(&mut rng, &run))
            .collect::<Vec<_>>();
        let out = sb
            .stage2_without_tools()
            .args(["report", "--json"])
            .arg(&run)
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let code = out.status.code();
        assert!(
            matches!(code, Some(0 | 2 | 5 | 6 | 8)) && !err.contains("panicked"),
            "case {case} ({sample}: {what:?}): exit {code:?}\n{err}"
        );
        // Whatever the exit, stdout is one JSON object for a script to read.
        let json: Result<serde_json::Value, _> = serde_json::from_slice(&out.stdout);
        assert!(
            json.as_ref().is_ok_and(|v| v.is_object()),
            "case {case} ({sample}: {what:?}): exit {code:?}, stdout not one JSON object: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        *codes.entry(code.unwrap_or(-1)).or_insert(0) += 1;
        std::fs::remove_dir_all(&run).ok();
    }
    eprintln!("{cases} cases, exit codes: {codes:?}");
}
