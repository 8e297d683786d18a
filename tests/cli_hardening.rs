//! Hostile conditions, round 2: each case names the issue item it covers.

mod common;

use std::os::unix::ffi::OsStrExt;
use std::process::Stdio;

use common::{read, status, Sandbox};
use predicates::prelude::PredicateBooleanExt;

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
        .arg("--")
        .args(common::WORKLOAD)
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

fn all_text(dir: &std::path::Path, out: &mut String) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            all_text(&p, out);
        } else if let Ok(t) = std::fs::read(&p) {
            out.push_str(&String::from_utf8_lossy(&t));
        }
    }
}

/// Item 3: secrets a failing workload prints, secrets in the profilers' extra arguments and
/// URL credentials reach no file of the run, the metrics cache or the console.
#[test]
fn secrets_reach_no_file_and_no_console() {
    let sb = Sandbox::new();
    let script = "import os, sys; print('token', os.environ['HF_TOKEN']); \
                  print('aws AKIAABCDEFGHIJKLMNOP'); print('url https://bob:hunter22@example.com/x'); \
                  sys.exit(3)";
    let out = sb
        .profile_of(
            "s",
            &[
                "--nvtx-capture",
                "decode",
                "nsys.extra_args=[--env-var=API_TOKEN=nsys-secret-1]",
                "ncu.extra_args=[--cache-control=all,--env-var=MY_PASSWORD=ncu-secret-2]",
            ],
            &["python3", "-c", script],
        )
        .env("HF_TOKEN", "hf_WorkloadSecretValue12345678")
        .env("FAKE_SMI", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    let mut text = String::from_utf8_lossy(&out.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stdout));
    all_text(&sb.run("s"), &mut text);
    if sb.path().join("cache").is_dir() {
        all_text(&sb.path().join("cache"), &mut text);
    }
    for leak in [
        "hf_WorkloadSecretValue12345678",
        "AKIAABCDEFGHIJKLMNOP",
        "hunter22",
        "nsys-secret-1",
        "ncu-secret-2",
    ] {
        assert!(!text.contains(leak), "{leak} leaked");
    }
    // The workload's failure is still said, with its lines.
    assert!(text.contains("token <redacted>"));
    // With the ncu pass running, the metrics cache's entries keep no credential either.
    sb.profile_decode(
        "c",
        &["ncu.extra_args=[--env-var=DB_URL=https://amy:pa55word@db.example.com/x]"],
    )
    .env("FAKE_SMI", "1")
    .assert()
    .success();
    let mut cache = String::new();
    all_text(&sb.path().join("cache"), &mut cache);
    assert!(
        cache.contains("DB_URL=https://<redacted>@db.example.com"),
        "no entry stored?"
    );
    assert!(!cache.contains("pa55word"));
}

/// Item 4: the metrics cache. A folder in one entry's place costs that entry only; pruning
/// never deletes a file stage2 did not name, nor through a linked `entries/`; an empty cache
/// folder name is refused, not the current directory.
#[test]
fn the_metrics_cache_survives_hostile_folders() {
    let sb = Sandbox::new().with_env("FAKE_SMI", "1");
    sb.profile_decode("one", &[]).assert().success();
    let entries = sb.path().join("cache/stage2/ncu/entries");
    let mut names: Vec<_> = std::fs::read_dir(&entries)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    names.sort();
    let stored = names.len();
    assert!(stored >= 4);
    // A folder where an entry goes, the user's own JSON beside the entries.
    std::fs::remove_file(&names[0]).unwrap();
    std::fs::create_dir(&names[0]).unwrap();
    std::fs::write(entries.join("mine.json"), "{}").unwrap();
    sb.profile_decode("two", &["ncu.cache.max_mb=0", "--no-cache"])
        .assert()
        .success();
    sb.profile_decode("three", &["ncu.cache.max_mb=0"])
        .assert()
        .success();
    // Every other entry was written and pruned; the folder and the user's file stay.
    assert!(names[0].is_dir());
    assert!(entries.join("mine.json").is_file());
    // A linked entries/ is never pruned through.
    let elsewhere = sb.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let keep = elsewhere.join(format!("{}.json", "a".repeat(64)));
    std::fs::write(&keep, "{}").unwrap();
    let linked = sb.path().join("linked");
    std::fs::create_dir_all(&linked).unwrap();
    std::os::unix::fs::symlink(&elsewhere, linked.join("entries")).unwrap();
    sb.profile_decode(
        "four",
        &[
            "--cache-dir",
            linked.to_str().unwrap(),
            "ncu.cache.max_mb=0",
        ],
    )
    .assert()
    .success();
    assert!(keep.is_file());
    sb.profile_decode("five", &["--cache-dir", ""])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("ncu.cache.dir=''"));
    assert!(!sb.path().join("entries").exists());
}

/// Item 5: a run root with ':' cannot carry the hook on PYTHONPATH: refused before anything
/// is made.
#[test]
fn a_run_root_that_pythonpath_cannot_carry_is_refused_up_front() {
    let sb = Sandbox::new();
    sb.stage2()
        .args([
            "profile",
            "--run-root",
            "a:b",
            "--run-id",
            "x",
            "--auto-nvtx",
        ])
        .args(common::DECODE)
        .arg("--")
        .args(common::WORKLOAD)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("cannot go on PYTHONPATH"));
    assert!(!sb.path().join("a:b").exists());
}

/// Item 5: another run's hook already on PYTHONPATH (a pasted cmd.txt line) is taken off the
/// workload's path, and two hooks on a path never load each other: the workload starts.
#[test]
fn another_runs_hook_on_pythonpath_does_not_hang_the_workload() {
    let sb = Sandbox::new();
    let hooks: Vec<std::path::PathBuf> = ["h1", "h2"]
        .iter()
        .map(|h| {
            let d = sb.path().join(h);
            std::fs::create_dir(&d).unwrap();
            std::fs::copy(
                common::root().join("src/passes/workload/hook/sitecustomize.py"),
                d.join("sitecustomize.py"),
            )
            .unwrap();
            d
        })
        .collect();
    let path = format!("{}:{}", hooks[0].display(), hooks[1].display());
    // Python alone, both hooks on its path, sampling on: it starts and ends.
    let out = std::process::Command::new("timeout")
        .args(["20", "python3", "-c", "print('started')"])
        .env("PYTHONPATH", &path)
        .env("STAGE2_PY_SAMPLE_HZ", "50")
        .env("STAGE2_PY_SAMPLE_DIR", sb.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("started"));
    // Through stage2: the other hooks are not on the workload's PYTHONPATH.
    sb.profile_of(
        "p",
        &[
            "--python-sampling",
            "50",
            "--nvtx-capture",
            "decode",
            "--no-ncu",
        ],
        &[],
    )
    .args(["python3", "-c", "print('started')"])
    .env("PYTHONPATH", &path)
    .timeout(std::time::Duration::from_secs(60))
    .assert()
    .success();
    let cmd = read(sb.run("p").join("nsys/cmd.txt"));
    assert!(!cmd.contains("/h1") && !cmd.contains("/h2"), "{cmd}");
}

/// Item 5: a code file name with a newline or a tab keeps the samples file one frame per
/// line, and stage2 reads it.
#[test]
fn a_code_file_name_with_a_newline_keeps_the_samples_readable() {
    let sb = Sandbox::new();
    let hook = sb.path().join("hook");
    std::fs::create_dir(&hook).unwrap();
    std::fs::copy(
        common::root().join("src/passes/workload/hook/sitecustomize.py"),
        hook.join("sitecustomize.py"),
    )
    .unwrap();
    let code = "import time\ncode = compile('import time\\nt=time.time()\\nwhile time.time()-t<0.5: pass', 'odd\\nname\\t.py', 'exec')\nexec(code)";
    let out = std::process::Command::new("python3")
        .args(["-c", code])
        .env("PYTHONPATH", &hook)
        .env("STAGE2_PY_SAMPLE_HZ", "200")
        .env("STAGE2_PY_SAMPLE_DIR", sb.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let (files, problems) = stage2::parse::pysamples::read_dir(sb.path());
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(files.len(), 1);
    assert!(
        files[0]
            .frames
            .iter()
            .any(|f| f.contains("odd\\nname\\t.py")),
        "{:?}",
        files[0].frames
    );
    // A stray file beside it costs its own samples only.
    std::fs::write(sb.path().join("pysamples.999.txt"), "garbage line\n").unwrap();
    std::fs::write(sb.path().join("pysamples.x.txt"), "S 1 2 0\n").unwrap();
    let (files, problems) = stage2::parse::pysamples::read_dir(sb.path());
    assert_eq!((files.len(), problems.len()), (1, 2), "{problems:?}");
}

fn sample_copy(sb: &Sandbox, name: &str) -> std::path::PathBuf {
    sb.copy_of("examples/sample-run", name)
}

fn python(script: &str, args: &[&std::path::Path]) {
    let ok = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .status()
        .unwrap();
    assert!(ok.success());
}

/// Item 6 (hand-made broken inputs): a negative ncu figure, a kernel span near 2^62 and a
/// cached figure of 1e308 are refused where they are read, naming file and what is wrong (exit
/// 6); the reports are still made from what is valid.
#[test]
fn implausible_numbers_are_refused_where_they_are_read() {
    let sb = Sandbox::new();
    let neg = sample_copy(&sb, "neg");
    python(
        "import csv,sys; p=sys.argv[1]; r=list(csv.reader(open(p))); \
         c=r[0].index('sm__throughput.avg.pct_of_peak_sustained_elapsed'); r[2][c]='-10.8'; \
         csv.writer(open(p,'w'),quoting=csv.QUOTE_ALL,lineterminator='\\n').writerows(r)",
        &[&neg.join("ncu/decode_raw.csv")],
    );
    sb.stage2_without_tools()
        .arg("report")
        .arg(&neg)
        .assert()
        .code(6)
        .stderr(predicates::str::contains(
            "sm__throughput.avg.pct_of_peak_sustained_elapsed = -10.8",
        ));
    let md = read(neg.join("stakeholder_summary.md"));
    assert!(!md.contains("-10.8"), "{md}");
    let huge = sample_copy(&sb, "huge");
    python(
        "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); \
         c.execute('UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end=start+4611686018427387000 \
         WHERE rowid=(SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)'); c.commit()",
        &[&huge.join("nsys/run.sqlite")],
    );
    sb.stage2_without_tools()
        .arg("report")
        .arg(&huge)
        .assert()
        .code(6)
        .stderr(
            predicates::str::contains("CUPTI_ACTIVITY_KIND_KERNEL")
                .and(predicates::str::contains("beyond 2^48 ns")),
        );
}

/// Item 7: inputs that are not regular files are said, not taken as absent; an `nsys export`
/// that exits 0 without writing the export fails the pass.
#[test]
fn inputs_in_the_way_are_said_and_an_empty_export_is_a_failure() {
    let sb = Sandbox::new();
    type Make = fn(&std::path::Path);
    let cases: [(&str, Make); 3] = [
        ("dir", |p| std::fs::create_dir(p).unwrap()),
        ("fifo", |p| {
            nix::unistd::mkfifo(p, nix::sys::stat::Mode::S_IRWXU).unwrap()
        }),
        ("dangling", |p| {
            std::os::unix::fs::symlink("/nonexistent/x", p).unwrap()
        }),
    ];
    for (name, make) in cases {
        let run = sample_copy(&sb, name);
        let sqlite = run.join("nsys/run.sqlite");
        std::fs::remove_file(&sqlite).unwrap();
        make(&sqlite);
        sb.stage2_without_tools()
            .arg("report")
            .arg(&run)
            .timeout(std::time::Duration::from_secs(30))
            .assert()
            .code(6)
            .stderr(predicates::str::contains("run.sqlite"));
    }
    sb.profile_decode("nx", &[])
        .env("FAKE_NSYS_MODE", "noexport")
        .assert()
        .code(3)
        .stderr(predicates::str::contains(
            "nsys export exited 0 but wrote no",
        ));
}

/// Item 9: messages. `stage2 config > /dev/full` is a write error (8), not success; an
/// `.ncu-rep` whose name is at the file-name limit is imported under a shorter copy name.
#[test]
fn output_errors_and_long_report_names() {
    let sb = Sandbox::new();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = sb.std_stage2().arg("config").stdout(full).output().unwrap();
    assert_eq!(out.status.code(), Some(8));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot write stdout"));
    // Round 4, item 14: `--help` and `--version` too.
    for flag in ["--help", "--version"] {
        let full = std::fs::File::options()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = sb.std_stage2().arg(flag).stdout(full).output().unwrap();
        assert_eq!(out.status.code(), Some(8), "{flag}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("cannot write to stdout"));
    }
    let rep = sb.path().join(format!("{}.ncu-rep", "k".repeat(240)));
    std::fs::write(&rep, "fake ncu report").unwrap();
    sb.stage2().arg("report").arg(&rep).assert().success();
}

/// A tmpfs of `size` mounted on a new folder `name` of the sandbox: a disk that fills. Needs the
/// right to mount one (root in a container); elsewhere it says so and the caller checks nothing.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(sb: &Sandbox, name: &str, size: &str) -> Option<Tmpfs> {
        let dir = sb.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            eprintln!("cannot mount a tmpfs here: the full-disk case is not run");
        }
        mounted.then_some(Tmpfs(dir))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// Every file under `dir`, with its size.
fn files_in(dir: &std::path::Path) -> Vec<(std::path::PathBuf, u64)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_in(&p));
        } else if let Ok(m) = std::fs::symlink_metadata(&p) {
            out.push((p, m.len()));
        }
    }
    out
}

/// Item 9: a full disk never leaves status.json `running`. Run on a 600 KB tmpfs.
#[test]
fn a_full_disk_leaves_a_final_state() {
    let sb = Sandbox::new();
    let Some(disk) = Tmpfs::mount(&sb, "tiny", "600k") else {
        return;
    };
    let tiny = disk.0.clone();
    let out = sb
        .stage2()
        .args(["profile", "--run-root"])
        .arg(tiny.join("runs"))
        .args(["--run-id", "full"])
        .args(common::DECODE)
        .arg("--")
        .args(common::WORKLOAD)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(8), "{out:?}");
    let st = status(&tiny.join("runs/full"));
    assert_ne!(st["state"], "running", "{st}");
    for p in st["passes"].as_object().unwrap().values() {
        assert!(p["state"] != "running" && p["state"] != "pending", "{st}");
    }
}

/// Item 9: a report file stage2 cannot read is said (exit 6) before any run directory is made.
/// Run as an unprivileged user (root reads everything): needs root and `setpriv`; elsewhere
/// the test says so and checks nothing.
#[test]
fn an_unreadable_report_file_makes_no_run_directory() {
    use std::os::unix::fs::PermissionsExt;
    let root_user = nix::unistd::Uid::effective().is_root();
    let setpriv = std::path::Path::new("/usr/bin/setpriv");
    if !root_user || !setpriv.exists() {
        eprintln!(
            "an_unreadable_report_file_makes_no_run_directory: needs root and setpriv; not run"
        );
        return;
    }
    let sb = Sandbox::new();
    let work = tempfile::Builder::new()
        .prefix("stage2-unreadable")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let rep = sb.path().join("mine.ncu-rep");
    std::fs::write(&rep, "x").unwrap();
    std::fs::set_permissions(&rep, std::fs::Permissions::from_mode(0o000)).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("stage2");
    // The binary and the sandbox stay the root user's: copy the binary where nobody can run it.
    let exe = work.path().join("stage2");
    std::fs::copy(&bin, &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = std::process::Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&exe)
        .arg("report")
        .arg(&rep)
        .current_dir(work.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{err}");
    assert!(
        err.contains("mine.ncu-rep") && err.contains("cannot read"),
        "{err}"
    );
    assert!(
        !work.path().join("tmp").exists(),
        "a run directory was made"
    );
}

/// Items 1, 5, 7: `stage2 diff` with its stderr closed does not panic; a run root with ',' is
/// refused with --python-sampling before a run directory is made; a cached.json that links to
/// /dev/zero is said, not taken as absent or read forever.
#[test]
fn more_hostile_corners() {
    let sb = Sandbox::new();
    let mut child = sb
        .std_stage2()
        .arg("diff")
        .arg(common::root().join("examples/diff/base"))
        .arg(common::root().join("examples/diff/same"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    assert_eq!(child.wait().unwrap().code(), Some(0));
    sb.stage2()
        .args([
            "profile",
            "--run-root",
            "a,b",
            "--run-id",
            "x",
            "--python-sampling",
            "50",
        ])
        .args(common::DECODE)
        .arg("--")
        .args(common::WORKLOAD)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("cannot carry a path with ','"));
    assert!(!sb.path().join("a,b").exists());
    let run = sample_copy(&sb, "zero");
    std::os::unix::fs::symlink("/dev/zero", run.join("ncu/cached.json")).unwrap();
    sb.stage2_without_tools()
        .arg("report")
        .arg(&run)
        .timeout(std::time::Duration::from_secs(30))
        .assert()
        .code(6)
        .stderr(predicates::str::contains("cached.json"));
}

/// Round 3, item 24: a full disk while `stage2 report FILE.nsys-rep` copies the report in:
/// exit 8 naming the report and the reason, and no partial copy left for a later command to read.
#[test]
fn a_full_disk_while_copying_a_report_leaves_no_partial_copy() {
    let sb = Sandbox::new();
    // The default run root, tmp/stage2, on a disk smaller than the report.
    let Some(disk) = Tmpfs::mount(&sb, "tmp", "256k") else {
        return;
    };
    // Hand-made (an error path): a report larger than the disk; the copy fails before nsys reads it.
    let rep = sb.path().join("big.nsys-rep");
    std::fs::write(&rep, vec![0u8; 1 << 20]).unwrap();
    let out = sb.stage2().arg("report").arg(&rep).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(8), "{err}");
    assert!(
        err.contains("big.nsys-rep") && err.contains("No space left"),
        "{err}"
    );
    let files = files_in(&disk.0);
    assert!(
        !files
            .iter()
            .any(|(p, _)| p.extension().is_some_and(|x| x == "nsys-rep")),
        "{files:?}"
    );
}

/// Round 3, item 16: a disk too full for a second copy of a log: the log is redacted as it is
/// written, so no copy is needed and no file keeps the secret.
#[test]
fn a_full_disk_keeps_no_secret_in_a_log() {
    let sb = Sandbox::new();
    let Some(disk) = Tmpfs::mount(&sb, "tiny", "2m") else {
        return;
    };
    let secret = "hf_FullDiskSecretValue1234567";
    // Sized so that the nsys pass's log (~700 KB), the replayed report and its export (~1.2 MB)
    // fit, and a second copy of the log does not.
    let script = "import os; print('token', os.environ['HF_TOKEN']); print('x' * 700_000)";
    let out = sb
        .stage2()
        .args(["profile", "--run-root"])
        .arg(disk.0.join("runs"))
        .args([
            "--run-id",
            "r",
            "--nvtx-capture",
            "decode",
            "ncu.enable=false",
        ])
        .args(["--", "python3", "-c", script])
        .env("HF_TOKEN", secret)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains(secret), "{err}");
    let files = files_in(&disk.0);
    for (p, _) in &files {
        let bytes = std::fs::read(p).unwrap();
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{} keeps the secret; stderr: {err}",
            p.display()
        );
    }
    let log = read(disk.0.join("runs/r/nsys/nsys.log"));
    assert!(log.contains("token <redacted>"), "{err}\n{files:?}");
}

/// A kernel whose grid multiplies past 64 bits (hand-made, beyond what CUDA allows: 2^31 - 1
/// in x, y and z, on one row of a real export) is counted as the largest block count there
/// is, never an overflow or an unreadable column.
#[test]
fn a_grid_too_large_to_multiply_is_no_panic() {
    let sb = common::Sandbox::new();
    let run = sb.copy_of("examples/sample-run-hf-eager", "big");
    let db = rusqlite::Connection::open(run.join("nsys/run.sqlite")).unwrap();
    db.execute(
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = 2147483647, gridY = 2147483647, gridZ = 2147483647 \
         WHERE rowid = (SELECT max(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)",
        [],
    )
    .unwrap();
    drop(db);
    let out = sb.stage2().arg("report").arg(&run).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(common::read(run.join("kernels.md")).contains("Launches of at most 66 thread blocks"));
}

/// A value of the wrong type in a launch or runtime row (hand-made: text and a real number
/// written into one row each of a real export) fails the report with exit 6, naming the
/// table, the row and the column, and the reports already there stay.
#[test]
fn a_wrongly_typed_value_names_its_table_row_and_column() {
    for (table, column, value, words) in [
        (
            "CUPTI_ACTIVITY_KIND_KERNEL",
            "correlationId",
            "'abc'",
            "text",
        ),
        (
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            "globalTid",
            "2.5",
            "a real number",
        ),
    ] {
        let sb = common::Sandbox::new();
        let run = sb.copy_of("examples/sample-run", "typed");
        let before = common::read(run.join("kernels.md"));
        let db = rusqlite::Connection::open(run.join("nsys/run.sqlite")).unwrap();
        let rowid: i64 = db
            .query_row(&format!("SELECT min(rowid) + 5 FROM {table}"), [], |r| {
                r.get(0)
            })
            .unwrap();
        db.execute(
            &format!("UPDATE {table} SET {column} = {value} WHERE rowid = {rowid}"),
            [],
        )
        .unwrap();
        drop(db);
        let out = sb.stage2().arg("report").arg(&run).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(6), "{err}");
        let said = format!(
            "table {table}, rowid {rowid}: column {column}: {words} where an integer belongs"
        );
        assert!(err.contains(&said), "{err}");
        assert_eq!(common::read(run.join("kernels.md")), before);
    }
}
