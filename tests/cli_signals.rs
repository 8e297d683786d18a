//! Signals, timeouts and concurrent runs, with a fake nsys that records the signal it got.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{read, status, Sandbox};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// `stage2 profile` as a plain child process (the sandbox's, its metrics cache in the
/// sandbox), so the test can signal it.
fn command(sb: &Sandbox, id: &str, mode: &str, extra: &[&str]) -> Command {
    let mut cmd = sb.std_stage2();
    cmd.args(["-q", "profile", "--run-root", "runs", "--run-id", id])
        .args(extra)
        .args(["--", "true"])
        .env("FAKE_NSYS_MODE", mode)
        .env("FAKE_SIGNAL_LOG", sb.path().join(format!("{id}.signals")))
        .env("FAKE_READY", sb.path().join(format!("{id}.ready")))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

fn spawn(sb: &Sandbox, id: &str, mode: &str, extra: &[&str]) -> Child {
    command(sb, id, mode, extra).spawn().unwrap()
}

fn wait_for(path: &Path, limit: Duration) {
    let start = Instant::now();
    while !path.exists() {
        assert!(start.elapsed() < limit, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_exit(child: &mut Child, limit: Duration) -> i32 {
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st.code().unwrap_or(-1);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("stage2 did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(child: &Child, sig: Signal) {
    kill(Pid::from_raw(child.id() as i32), sig).unwrap();
}

#[test]
fn ctrl_c_is_forwarded_so_the_profiler_finalizes_and_the_run_says_interrupted() {
    let sb = Sandbox::new();
    let mut child = spawn(&sb, "int", "hang", &[]);
    wait_for(&sb.path().join("int.ready"), Duration::from_secs(20));
    signal(&child, Signal::SIGINT);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(20)), 130);
    assert_eq!(read(sb.path().join("int.signals")).trim(), "INT");
    let run = sb.run("int");
    let st = status(&run);
    assert_eq!(st["state"], "interrupted");
    assert_eq!(st["exit_code"], 130);
    assert_eq!(st["passes"]["nsys"]["state"], "interrupted");
    // The signal came during nsys, not while the reports were rendered.
    assert!(
        !st["passes"]["report"]
            .to_string()
            .contains("while the reports were rendered"),
        "{st}"
    );
    // The pass the interrupt kept from starting says so; the run never ends `ok`.
    assert_eq!(st["passes"]["ncu"]["state"], "interrupted");
    assert!(st["passes"]["ncu"]["reason"]
        .as_str()
        .unwrap()
        .starts_with("not started"));
    // What the profiler finalized is kept and processed.
    assert!(run.join("nsys/run.nsys-rep").exists());
    assert!(run.join("nsys/summary_cuda_gpu_kern_sum.csv").exists());
    assert!(run.join("kernels.md").exists());
}

#[test]
fn started_with_sigint_ignored_the_profiler_still_gets_the_forwarded_signal() {
    // What a background job (`stage2 ... &` in a non-interactive shell) looks like: SIGINT
    // ignored on entry. A shell that starts with a signal ignored cannot even trap it, so the
    // fake's INT trap fires only if the disposition was reset before exec.
    use std::os::unix::process::CommandExt;
    let sb = Sandbox::new();
    let mut cmd = command(&sb, "bg", "hang", &[]);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let _ = nix::sys::signal::signal(Signal::SIGINT, nix::sys::signal::SigHandler::SigIgn);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    wait_for(&sb.path().join("bg.ready"), Duration::from_secs(20));
    signal(&child, Signal::SIGINT);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(20)), 130);
    assert_eq!(read(sb.path().join("bg.signals")).trim(), "INT");
}

#[test]
fn sigterm_is_forwarded_too() {
    let sb = Sandbox::new();
    let mut child = spawn(&sb, "term", "hang", &[]);
    wait_for(&sb.path().join("term.ready"), Duration::from_secs(20));
    signal(&child, Signal::SIGTERM);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(20)), 130);
    assert_eq!(read(sb.path().join("term.signals")).trim(), "TERM");
}

#[test]
fn a_profiler_that_ignores_the_signal_is_killed_after_the_grace_period() {
    let sb = Sandbox::new();
    let mut child = spawn(&sb, "stub", "stubborn", &["--grace", "1"]);
    wait_for(&sb.path().join("stub.ready"), Duration::from_secs(20));
    let start = Instant::now();
    signal(&child, Signal::SIGINT);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(20)), 130);
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(read(sb.path().join("stub.signals")).contains("INT-ignored"));
    assert_eq!(
        status(&sb.run("stub"))["passes"]["nsys"]["state"],
        "interrupted"
    );
}

#[test]
fn a_second_ctrl_c_kills_at_once() {
    let sb = Sandbox::new();
    let mut child = spawn(&sb, "twice", "stubborn", &["--grace", "60"]);
    wait_for(&sb.path().join("twice.ready"), Duration::from_secs(20));
    signal(&child, Signal::SIGINT);
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, Signal::SIGINT);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(15)), 130);
}

#[test]
fn if_stage2_dies_its_profiler_is_told_to_stop() {
    let sb = Sandbox::new();
    let mut child = spawn(&sb, "orphan", "hang", &[]);
    wait_for(&sb.path().join("orphan.ready"), Duration::from_secs(20));
    signal(&child, Signal::SIGKILL);
    let _ = wait_exit(&mut child, Duration::from_secs(5));
    // The parent-death signal reaches the profiler, which finalizes and exits.
    wait_for(&sb.path().join("orphan.signals"), Duration::from_secs(10));
    assert_eq!(read(sb.path().join("orphan.signals")).trim(), "TERM");
}

#[test]
fn a_pass_past_its_timeout_is_stopped_and_the_other_pass_still_runs() {
    let sb = Sandbox::new();
    let mut child = spawn(
        &sb,
        "slow",
        "stubborn",
        &["nsys.timeout_s=1", "--grace", "1"],
    );
    assert_eq!(wait_exit(&mut child, Duration::from_secs(30)), 4);
    let st = status(&sb.run("slow"));
    assert_eq!(st["passes"]["nsys"]["state"], "timed-out");
    assert!(st["passes"]["nsys"]["reason"]
        .as_str()
        .unwrap()
        .contains("time limit"));
    assert_eq!(st["passes"]["ncu"]["state"], "ok");
    assert!(read(sb.path().join("slow.signals")).contains("TERM-ignored"));
}

#[test]
fn concurrent_runs_never_share_a_run_directory() {
    let sb = Sandbox::new();
    let runs: Vec<Child> = (0..4)
        .map(|_| {
            sb.std_stage2()
                .args([
                    "-q",
                    "profile",
                    "--run-root",
                    "runs",
                    "--dry-run",
                    "--",
                    "true",
                ])
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in runs {
        assert_eq!(wait_exit(&mut c, Duration::from_secs(20)), 0);
    }
    assert_eq!(std::fs::read_dir(sb.runs()).unwrap().count(), 4);
    // The same explicit id at the same time: exactly one wins, the others exit 2.
    let same: Vec<Child> = (0..4)
        .map(|_| {
            sb.std_stage2()
                .args([
                    "-q",
                    "profile",
                    "--run-root",
                    "runs",
                    "--run-id",
                    "same",
                    "--dry-run",
                    "--",
                    "true",
                ])
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut codes: Vec<i32> = same
        .into_iter()
        .map(|mut c| wait_exit(&mut c, Duration::from_secs(20)))
        .collect();
    codes.sort();
    assert_eq!(codes, [0, 2, 2, 2]);
}

#[test]
fn ctrl_c_stops_a_hung_ncu_metric_query_and_nothing_runs_after_it() {
    let sb = Sandbox::new();
    let mut cmd = command(&sb, "q", "ok", &["--no-nsys"]);
    cmd.env("FAKE_NCU_QUERY", "hang");
    let mut child = cmd.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, Signal::SIGINT);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(15)), 130);
    // Interrupted during start-up: no pass ran, so no run directory was made.
    assert!(!sb.run("q").exists());
}

/// Ctrl-C while `nsys stats` runs: the run is interrupted (130), not a tool failure, and the
/// SQLite export of the report still happens.
#[test]
fn ctrl_c_during_nsys_stats_is_an_interrupt_and_the_export_still_runs() {
    let sb = Sandbox::new();
    let mut child = spawn(&sb, "st", "slowstats", &[]);
    wait_for(&sb.path().join("st.ready"), Duration::from_secs(20));
    signal(&child, Signal::SIGINT);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(30)), 130);
    let run = sb.run("st");
    let st = status(&run);
    assert_eq!(st["exit_code"], 130);
    assert_eq!(st["passes"]["nsys"]["state"], "interrupted");
    assert!(run.join("nsys/run.sqlite").exists());
}

/// With the two passes at once (`ncu.second_gpu`), a Ctrl-C reaches the one still running and
/// the run ends with neither pass left `running`.
#[test]
fn ctrl_c_with_both_passes_at_once_leaves_no_pass_running() {
    let sb = Sandbox::new();
    let mut child = command(
        &sb,
        "pair",
        "hang",
        &["ncu.second_gpu=true", "ncu.nvtx_include=decode"],
    )
    .env("FAKE_SMI", "1")
    .env("FAKE_SMI_GPUS", "2")
    .env_remove("CUDA_VISIBLE_DEVICES")
    .spawn()
    .unwrap();
    wait_for(&sb.path().join("pair.ready"), Duration::from_secs(20));
    signal(&child, Signal::SIGINT);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(20)), 130);
    let st = status(&sb.run("pair"));
    assert_eq!(st["state"], "interrupted", "{st}");
    assert_eq!(st["passes"]["nsys"]["state"], "interrupted", "{st}");
    let ncu = st["passes"]["ncu"]["state"].as_str().unwrap();
    assert!(["ok", "interrupted", "no_data"].contains(&ncu), "{st}");
    assert_eq!(st["passes"]["ncu"]["ncu"]["second_gpu"]["ncu"], "1", "{st}");
}

/// SIGHUP (the terminal or SSH session closed) is handled as SIGTERM: forwarded as SIGTERM,
/// the run ends `interrupted` (130), nothing left `running`.
#[test]
fn sighup_is_handled_as_sigterm() {
    let sb = Sandbox::new();
    let mut child = spawn(&sb, "hup", "hang", &[]);
    wait_for(&sb.path().join("hup.ready"), Duration::from_secs(20));
    signal(&child, Signal::SIGHUP);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(20)), 130);
    assert_eq!(read(sb.path().join("hup.signals")).trim(), "TERM");
    let st = status(&sb.run("hup"));
    assert_eq!(st["state"], "interrupted", "{st}");
    assert!(run_has_no_running(&st), "{st}");
}

fn run_has_no_running(st: &serde_json::Value) -> bool {
    st["passes"]
        .as_object()
        .unwrap()
        .values()
        .all(|p| p["state"] != "running" && p["state"] != "pending")
}

/// A signal while a start-up probe hangs (a wedged nvidia-smi) stops it at once: the run ends
/// `interrupted`, 130, no pass started, not `ok` after the probe's time limit.
#[test]
fn a_signal_during_a_hung_probe_is_acted_on_at_once() {
    let sb = Sandbox::new();
    let mut child = command(&sb, "smi", "ok", &[])
        .env("FAKE_SMI", "hang")
        .spawn()
        .unwrap();
    wait_for(&sb.path().join("smi.ready"), Duration::from_secs(20));
    let t0 = Instant::now();
    signal(&child, Signal::SIGTERM);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(20)), 130);
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    let st = status(&sb.run("smi"));
    assert_eq!(st["state"], "interrupted", "{st}");
    assert_eq!(st["passes"]["nsys"]["state"], "interrupted", "{st}");
}

/// Probes are bounded by `run.probe_timeout_s`: a metric query that never answers is given up
/// after it, with a warning, and the run goes on.
#[test]
fn a_hung_metric_query_is_bounded_by_the_config() {
    let sb = Sandbox::new();
    let mut cmd = command(&sb, "pt", "ok", &["run.probe_timeout_s=1"]);
    cmd.env("FAKE_NCU_QUERY", "hang");
    let mut child = cmd.spawn().unwrap();
    assert_eq!(wait_exit(&mut child, Duration::from_secs(20)), 0);
    assert_eq!(status(&sb.run("pt"))["state"], "ok");
}

/// Ctrl-C during `ncu --import`: an interrupt (130), not a tool failure (3), and no empty
/// export left for the report pass to trip on.
#[test]
fn ctrl_c_during_the_ncu_import_is_an_interrupt_and_leaves_no_empty_export() {
    let sb = Sandbox::new();
    let mut child = command(&sb, "imp", "ok", &["--no-nsys"])
        .env("FAKE_NCU_MODE", "slowimport")
        .spawn()
        .unwrap();
    wait_for(&sb.path().join("imp.ready"), Duration::from_secs(20));
    signal(&child, Signal::SIGINT);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(20)), 130);
    let run = sb.run("imp");
    let st = status(&run);
    assert_eq!(st["passes"]["ncu"]["state"], "interrupted", "{st}");
    let csv = run.join("ncu/decode_raw.csv");
    assert!(!csv.exists() || std::fs::metadata(&csv).unwrap().len() > 0);
    assert!(run.join("ncu/decode.ncu-rep").exists());
}

/// status.json as it stands while stage2 runs (None: not written yet, or mid-write).
fn status_now(run: &Path) -> Option<serde_json::Value> {
    serde_json::from_str(&std::fs::read_to_string(run.join("status.json")).ok()?).ok()
}

/// Wait until the run's pass `pass` is `running`.
fn wait_running(run: &Path, pass: &str, limit: Duration) {
    let start = Instant::now();
    while status_now(run).is_none_or(|st| st["passes"][pass]["state"] != "running") {
        assert!(
            start.elapsed() < limit,
            "{pass} never ran: {:?}",
            status_now(run)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A signal after a good nsys pass and before ncu attaches to the copy held since
/// (`ncu.early_start`; hand-made: the fake's held copy never says it listens): the ncu pass is
/// interrupted, not failed, the reports are written from the nsys pass, stage2 exits 130 and
/// `--json` names the run.
#[test]
fn a_signal_before_ncu_attaches_ends_the_run_interrupted_with_its_reports() {
    let sb = Sandbox::new();
    let mut cmd = command(&sb, "held", "ok", &["--json"]);
    let mut child = cmd
        .env("FAKE_NCU_EARLY", "slow")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let run = sb.run("held");
    wait_running(&run, "ncu", Duration::from_secs(30));
    signal(&child, Signal::SIGINT);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(20)), 130);
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(json["run_dir"].as_str().unwrap().ends_with("held"), "{out}");
    let st = status(&run);
    assert_eq!(
        (&st["state"], &st["exit_code"]),
        (&"interrupted".into(), &130.into()),
        "{st}"
    );
    assert_eq!(st["passes"]["nsys"]["state"], "ok", "{st}");
    assert_eq!(st["passes"]["ncu"]["state"], "interrupted", "{st}");
    assert_eq!(st["passes"]["report"]["state"], "ok", "{st}");
    assert!(run.join("kernels.md").is_file());
}

/// A Ctrl-C while the graph step measures its instance: the ncu pass is interrupted, what the
/// kernel pass measured kept, and the run ends interrupted with its reports.
#[test]
fn ctrl_c_during_the_graph_step_leaves_the_ncu_pass_interrupted() {
    let sb = Sandbox::new();
    let nsys = common::root().join("examples/sample-run-hf-static/nsys");
    let mut child = command(
        &sb,
        "step",
        "ok",
        &["--nvtx-capture", "decode", "--grace", "2"],
    )
    .env("FAKE_SMI", "1")
    .env("FAKE_NSYS_DIR", nsys)
    .env("FAKE_NCU_GRAPH_HOLD", "60")
    .spawn()
    .unwrap();
    wait_for(&sb.path().join("step.ready"), Duration::from_secs(60));
    signal(&child, Signal::SIGINT);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(30)), 130);
    let run = sb.run("step");
    let st = status(&run);
    let ncu = &st["passes"]["ncu"];
    assert_eq!(ncu["state"], "interrupted", "{ncu}");
    assert_eq!(ncu["ncu"]["graph_step"]["state"], "not_measured", "{ncu}");
    assert!(run.join("ncu/decode_raw.csv").is_file());
    assert_eq!(st["state"], "interrupted", "{st}");
    assert!(run.join("kernels.md").is_file());
}
