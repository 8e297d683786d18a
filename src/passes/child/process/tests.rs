//! The process runner's tests: real children (sh, sleep) in temp dirs.

use super::*;

#[test]
fn a_probe_that_hangs_is_stopped_by_its_timeout() {
    let t0 = Instant::now();
    let out = probe(Path::new("sleep"), &["100"], Duration::from_millis(300));
    assert_eq!(out, None);
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    let echo = probe(Path::new("echo"), &["hi"], Duration::from_secs(10));
    assert_eq!(echo.as_deref(), Some("hi\n"));
}

#[test]
fn a_background_child_holding_stdout_does_not_hang_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    // The shell exits at once; the sleep it leaves behind keeps the pipe open.
    let args = vec!["-c".to_string(), "sleep 100 & echo started".to_string()];
    let spec = Spec::new("sh", args, tmp.path().join("x.log"));
    let t0 = Instant::now();
    let out = run(&spec).unwrap();
    assert!(out.success());
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
}

fn sh(script: &str, log: &Path) -> Spec {
    Spec::new("/bin/sh", vec!["-c".into(), script.into()], log)
}

#[test]
fn an_idle_cpu_child_and_what_it_starts_run_under_sched_idle() {
    let tmp = tempfile::tempdir().unwrap();
    // The policy is field 41 of /proc/PID/stat, read by a process the child starts.
    let policy = |idle_cpu: bool| {
        let mut spec = sh("cat /proc/self/stat", &tmp.path().join("x.log"));
        spec.idle_cpu = idle_cpu;
        let out = run(&spec).unwrap();
        let rest = out.tail.rsplit_once(')').unwrap().1.to_string();
        rest.split_whitespace()
            .nth(38)
            .unwrap()
            .parse::<i32>()
            .unwrap()
    };
    assert_eq!(policy(true), libc::SCHED_IDLE);
    assert_eq!(policy(false), libc::SCHED_OTHER);
}

#[test]
fn captures_exit_code_output_and_log() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("x.log");
    let out = run(&sh("echo out; echo err >&2; exit 3", &log)).unwrap();
    assert_eq!(out.code, Some(3));
    assert!(out.tail.contains("out") && out.tail.contains("err"));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("out") && text.contains("err"));
}

#[test]
fn stdout_file_takes_stdout_only() {
    let tmp = tempfile::tempdir().unwrap();
    let mut spec = sh("printf 'a,b\\n'; echo note >&2", &tmp.path().join("l"));
    spec.stdout_file = Some(tmp.path().join("o.csv"));
    assert!(run(&spec).unwrap().success());
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("o.csv")).unwrap(),
        "a,b\n"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("l")).unwrap(),
        "note\n"
    );
}

#[test]
fn timeout_terminates_the_process_group() {
    let tmp = tempfile::tempdir().unwrap();
    let mut spec = sh("sleep 30", &tmp.path().join("l"));
    spec.timeout = Some(Duration::from_millis(200));
    spec.grace = Duration::from_secs(5);
    let out = run(&spec).unwrap();
    assert!(out.timed_out);
    assert_eq!(out.signal, Some(libc_sigterm()));
    assert!(out.duration < Duration::from_secs(10));
}

#[test]
fn a_soft_stop_asks_with_sigint_and_keeps_what_the_child_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let script = "trap 'echo finalized; exit 0' INT; echo ready; while :; do sleep 0.05; done";
    // By its deadline.
    let mut spec = sh(script, &tmp.path().join("a"));
    spec.soft_stop = Some(SoftStop {
        after: Some(Duration::from_millis(300)),
        ..SoftStop::default()
    });
    let out = run(&spec).unwrap();
    assert!(out.soft_stopped && !out.timed_out && !out.interrupted);
    assert!(out.tail.contains("finalized"), "{}", out.tail);
    assert_eq!(out.code, Some(0));
    // By its flag, set from a line hook as the child prints.
    let mut spec = sh(script, &tmp.path().join("b"));
    let stop = SoftStop::default();
    let flag = stop.flag.clone();
    spec.on_line = Some(LineHook(Arc::new(move |l: &str| {
        if l.starts_with("ready") {
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    })));
    spec.soft_stop = Some(stop);
    let out = run(&spec).unwrap();
    assert!(
        out.soft_stopped && out.tail.contains("finalized"),
        "{}",
        out.tail
    );
    // A child that ignores it is killed after the grace.
    let mut spec = sh("trap '' INT; sleep 30", &tmp.path().join("c"));
    spec.grace = Duration::from_millis(300);
    spec.soft_stop = Some(SoftStop {
        after: Some(Duration::from_millis(100)),
        ..SoftStop::default()
    });
    let out = run(&spec).unwrap();
    assert!(out.soft_stopped && out.duration < Duration::from_secs(10));
}

#[test]
fn what_a_stopped_child_left_holding_its_output_is_killed_with_it() {
    let tmp = tempfile::tempdir().unwrap();
    let pid_file = tmp.path().join("left.pid");
    // A worker that ignores SIGINT outlives the stopped shell and keeps its stdout open.
    let script = format!(
        "(trap '' INT; exec sleep 100) & echo $! > {}; trap 'exit 0' INT; while :; do sleep 0.05; done",
        pid_file.display()
    );
    let mut spec = sh(&script, &tmp.path().join("l"));
    spec.soft_stop = Some(SoftStop {
        after: Some(Duration::from_millis(300)),
        ..SoftStop::default()
    });
    let out = run(&spec).unwrap();
    assert!(out.soft_stopped && out.code == Some(0), "{out:?}");
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let t0 = Instant::now();
    let alive = || nix::sys::signal::kill(Pid::from_raw(pid), None).is_ok() && !zombie(pid);
    while alive() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(), "the worker {pid} still runs");
}

/// A pass's timeout SIGTERMs its group; a member that ignores it and does not hold the
/// output gets its SIGKILL after the grace all the same, though the leader has ended.
#[test]
fn a_member_that_ignores_the_timeout_s_sigterm_is_killed_after_the_grace() {
    let tmp = tempfile::tempdir().unwrap();
    let pid_file = tmp.path().join("left.pid");
    let script = format!(
        "(trap '' TERM; exec sleep 100 >/dev/null 2>&1) & echo $! > {}; exec sleep 100",
        pid_file.display()
    );
    let mut spec = sh(&script, &tmp.path().join("l"));
    spec.timeout = Some(Duration::from_millis(300));
    spec.grace = Duration::from_millis(300);
    let out = run(&spec).unwrap();
    assert!(out.timed_out, "{out:?}");
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let alive = || nix::sys::signal::kill(Pid::from_raw(pid), None).is_ok() && !zombie(pid);
    let t0 = Instant::now();
    while alive() && t0.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = alive();
    if left {
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
    assert!(!left, "the member {pid} outlived the run");
}

/// A signal counted before the child starts (one that came while its pass was planned)
/// reaches it as it starts: it is stopped, not run to its end. Run in a process of its own
/// (this test binary again, this test alone), where a signal is counted without touching
/// the other tests.
#[test]
fn a_signal_counted_before_the_child_starts_reaches_it() {
    const ALONE: &str = "STAGE2_TEST_SIGNAL_BEFORE_START";
    if std::env::var_os(ALONE).is_none() {
        let name =
            "passes::child::process::tests::a_signal_counted_before_the_child_starts_reaches_it";
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env(ALONE, "1")
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        let why = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && said.contains("1 passed"),
            "{said}{why}"
        );
        return;
    }
    signals::install();
    nix::sys::signal::raise(Signal::SIGINT).unwrap();
    let t0 = Instant::now();
    while signals::count() == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the signal was not counted"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut spec = sh("while :; do sleep 0.05; done", &tmp.path().join("l"));
    spec.timeout = Some(Duration::from_secs(20));
    let out = run(&spec).unwrap();
    assert!(out.interrupted && !out.timed_out, "{out:?}");
}

fn zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

fn libc_sigterm() -> i32 {
    Signal::SIGTERM as i32
}

#[test]
fn shell_line_round_trips_metacharacters() {
    let argv: Vec<String> = ["python3", "-c", "print('a b'); $(touch X) | > ;", ""]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let line = shell_line(&argv);
    assert_eq!(shlex::split(&line).unwrap(), argv);
}
