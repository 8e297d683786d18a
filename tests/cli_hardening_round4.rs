//! Hostile conditions, round 4: each case names the issue item it covers.

mod common;

use common::{read, status, Sandbox};

/// Every file's text under `dir`, lossily.
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

fn sample_copy(sb: &Sandbox, name: &str) -> std::path::PathBuf {
    sb.copy_of("examples/sample-run", name)
}

/// Round 4, item 3: the diagnosis's short run after a capture that never opened prints what
/// the workload prints into nsys/diagnose.log: its secrets reach that log (as every log a
/// child writes) redacted as they are written, like nsys.log.
#[test]
fn the_diagnosis_log_keeps_no_secret() {
    let sb = Sandbox::new();
    let script = "import os; print('token', os.environ['HF_TOKEN']); \
                  print('mine', os.environ['MY_API_KEY']); \
                  print('shape hf_ShapeOnlySecretValue123456'); \
                  print('url https://bob:hunter22@example.com/x')";
    sb.profile_of(
        "d",
        &[
            "--nvtx-capture",
            "decod",
            "--no-ncu",
            "+workload.env.MY_API_KEY=env-secret-value-42",
        ],
        &["python3", "-c", script],
    )
    .env("HF_TOKEN", "hf_DiagnoseSecretValue12345678")
    .env("FAKE_NSYS_MODE", "noreport")
    .assert()
    .code(5)
    .stderr(predicates::str::contains("did you mean `decode`?"));
    let log = read(sb.run("d").join("nsys/diagnose.log"));
    assert!(log.contains("token <redacted>"), "{log}");
    let mut text = String::new();
    all_text(&sb.run("d"), &mut text);
    for leak in [
        "hf_DiagnoseSecretValue12345678",
        "env-secret-value-42",
        "hf_ShapeOnlySecretValue123456",
        "hunter22",
    ] {
        assert!(!text.contains(leak), "{leak} leaked");
    }
}

/// Round 4, item 3: `stage2 config` and `config --show-origin` print secret-named values,
/// credentials and tokens cut, as the run's config.yaml keeps them.
#[test]
fn stage2_config_prints_no_secret() {
    let sb = Sandbox::new();
    for origin in [false, true] {
        let mut cmd = sb.stage2();
        cmd.arg("config");
        if origin {
            cmd.arg("--show-origin");
        }
        let out = cmd
            .args([
                "+workload.env.HF_TOKEN=hf_ConfigSecretValue12345678",
                "+workload.env.my_token=lower-case-secret-1",
                "nsys.extra_args=[--env-var=API_TOKEN=nsys-secret-1]",
                "workload.argv=[python3, serve.py, --hub, https://bob:hunter22@example.com/m, hf_ArgvSecretValue123456789]",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("serve.py"), "{text}");
        for leak in [
            "hf_ConfigSecretValue12345678",
            "lower-case-secret-1",
            "nsys-secret-1",
            "hunter22",
            "hf_ArgvSecretValue123456789",
        ] {
            assert!(
                !text.contains(leak),
                "{leak} printed (--show-origin: {origin}):\n{text}"
            );
        }
    }
}

/// Round 4, item 4: a graph-step cache entry that is a FIFO, or a link to `/dev/zero`, costs
/// that entry only: the step is measured again, the run ends (no endless wait, no memory
/// without bound). The workload's Stage-1 operator table as a FIFO neither stops a report.
#[test]
fn cache_entries_and_workload_files_that_are_not_files_never_block() {
    let sb = Sandbox::with_gpu().with_env(
        "FAKE_NSYS_DIR",
        common::root().join("examples/sample-run-hf-static/nsys"),
    );
    sb.profile_decode("a", &[]).assert().success();
    let dir = sb.path().join("cache/stage2/ncu/graph-step");
    let entry = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    type Make = fn(&std::path::Path);
    let cases: [(&str, Make); 2] = [
        ("fifo", |p| {
            nix::unistd::mkfifo(p, nix::sys::stat::Mode::S_IRWXU).unwrap()
        }),
        ("zero", |p| {
            std::os::unix::fs::symlink("/dev/zero", p).unwrap()
        }),
    ];
    for (id, make) in cases {
        std::fs::remove_file(&entry).unwrap();
        make(&entry);
        sb.profile_decode(id, &[])
            .timeout(std::time::Duration::from_secs(120))
            .assert()
            .success();
        let st = status(&sb.run(id));
        assert_eq!(
            st["passes"]["ncu"]["ncu"]["graph_step"]["state"], "measured",
            "{id}: {st}"
        );
    }
    let run = sample_copy(&sb, "ops");
    std::fs::create_dir_all(run.join("stage1")).unwrap();
    nix::unistd::mkfifo(
        &run.join("stage1/operators.csv"),
        nix::sys::stat::Mode::S_IRWXU,
    )
    .unwrap();
    sb.stage2_without_tools()
        .arg("report")
        .arg(&run)
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .success();
    assert!(read(run.join("stakeholder_summary.md")).contains("(unreadable)"));
}

/// Round 4, items 9, 10 and 13: a run root its runs could not use is refused (exit 2) before
/// anything is made or run: a `%` (nsys and ncu expand it in `-o`, so a report would land
/// elsewhere), as a flag or as `run.root`; a newline (stdout prints the run directory as one
/// line); a path so long that SQLite could not open the run's export. A root that is a link
/// to nothing, or a loop of links, is said as such, not "File exists".
#[test]
fn run_roots_a_run_could_not_use_are_refused_up_front() {
    let sb = Sandbox::new();
    let long = ["d".repeat(200), "e".repeat(200), "f".repeat(120)].join("/");
    let cases = [
        (
            vec!["--run-root", "r%q{HOME}"],
            "r%q{HOME}",
            "expand its `%`",
        ),
        (vec!["run.root=p%h"], "p%h", "expand its `%`"),
        (vec!["--run-root", "a\nb"], "a\nb", "control character"),
        (vec!["--run-root", &long], "d", "past the 504 SQLite opens"),
    ];
    for (flags, made, words) in cases {
        sb.stage2()
            .arg("profile")
            .args(&flags)
            .args(["--run-id", "x"])
            .args(common::DECODE)
            .arg("--")
            .args(common::WORKLOAD)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(words));
        assert!(!sb.path().join(made).exists(), "{flags:?}");
    }
    assert!(!sb.calls().contains("nsys profile"), "{}", sb.calls());
    std::os::unix::fs::symlink("/nonexistent/runs", sb.path().join("gone")).unwrap();
    std::os::unix::fs::symlink("loop-b", sb.path().join("loop-a")).unwrap();
    std::os::unix::fs::symlink("loop-a", sb.path().join("loop-b")).unwrap();
    for root in ["gone", "loop-a"] {
        sb.stage2()
            .args(["profile", "--run-root", root])
            .args(common::DECODE)
            .arg("--")
            .args(common::WORKLOAD)
            .assert()
            .code(8)
            .stderr(predicates::str::contains(format!(
                "{root} is a link to nothing (or a loop of links)"
            )));
    }
}

/// Round 4, item 12: the packages query imports nothing of the workload's: its folder's own
/// `platform.py` and `json.py` (hand-made, each ending any Python that imports it) are not on
/// the query's path, and an interpreter named relative to that folder is still the one used.
#[test]
fn the_packages_query_imports_nothing_of_the_workload() {
    let sb = Sandbox::new();
    let wl = sb.path().join("wl");
    std::fs::create_dir_all(wl.join("py")).unwrap();
    for m in ["platform", "json"] {
        std::fs::write(
            wl.join(format!("{m}.py")),
            format!("raise SystemExit('the workload folder {m}.py was imported')\n"),
        )
        .unwrap();
    }
    let python = which_python3();
    std::os::unix::fs::symlink(&python, wl.join("py/python3")).unwrap();
    sb.profile_of(
        "p",
        &[common::DECODE, &["--no-ncu", "workload.cwd=wl"]].concat(),
        &["./py/python3", "-c", "print(1)"],
    )
    .assert()
    .success();
    let run = sb.run("p");
    let st = status(&run);
    assert_eq!(st["passes"]["packages"]["state"], "ok", "{st}");
    assert!(
        st["passes"]["packages"]["warnings"]
            .as_array()
            .is_none_or(|w| w.is_empty()),
        "{st}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&read(run.join("packages/versions.json"))).unwrap();
    assert!(v["python"].as_str().unwrap().starts_with('3'), "{v}");
}

fn which_python3() -> std::path::PathBuf {
    let out = std::process::Command::new("sh")
        .args(["-c", "command -v python3"])
        .output()
        .unwrap();
    std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// Round 4, item 13: what a `stage2 report` killed while writing leaves (hand-made: a half
/// summary.json under a temp name) is removed by the next report.
#[test]
fn a_later_report_removes_what_a_killed_one_left() {
    let sb = Sandbox::new();
    let run = sample_copy(&sb, "killed");
    let left = run.join(".stage2-AbCdEf.tmp");
    std::fs::write(&left, "{\"schema_version\": 1, \"kern").unwrap();
    sb.stage2_without_tools()
        .arg("report")
        .arg(&run)
        .assert()
        .success();
    assert!(!left.exists());
}

/// Round 4, item 14: a range name read from the export, for a folder of exports without a
/// config (hand-made: a real export whose `decode` is renamed with ESC and BEL in it), reaches
/// no report with its control characters: they are written out.
#[test]
fn an_inferred_range_name_sends_no_escape_to_a_report() {
    let sb = Sandbox::new();
    let run = sb.path().join("exports");
    common::copy_dir(
        &common::root().join("examples/sample-run/ncu"),
        &run.join("ncu"),
    );
    std::fs::create_dir_all(run.join("nsys")).unwrap();
    let db = run.join("nsys/run.sqlite");
    std::fs::copy(
        common::root().join("examples/sample-run/nsys/run.sqlite"),
        &db,
    )
    .unwrap();
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute(
            "UPDATE NVTX_EVENTS SET text = 'dec' || char(27) || '[31mode' || char(7) WHERE text = 'decode'",
            [],
        )
        .unwrap();
    sb.stage2_without_tools()
        .arg("report")
        .arg(&run)
        .assert()
        .success();
    for f in ["kernels.md", "stakeholder_summary.md"] {
        let text = read(run.join(f));
        assert!(text.contains("dec\\u{1b}"), "{f}: {text}");
        assert!(!text.contains(['\u{1b}', '\u{7}']), "{f}");
    }
}
