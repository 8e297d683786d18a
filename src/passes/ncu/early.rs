//! The ncu pass's workload started early (`ncu.early_start`): `ncu --mode=launch` starts it
//! beside the nsys pass and holds it at its first CUDA call, so its imports and CPU set-up run
//! while nsys profiles; once the nsys export has chosen the kernels, `ncu --mode=attach` brings
//! the profiling options and the held workload goes on under them. Measured on an H200 (eager
//! generate(), docs/measured.md): 9.7 s of a 15.1 s ncu run came before the first CUDA call.
//!
//! A held workload that ends before it is attached, or an attach ncu refuses, falls back to
//! the usual launch; one never attached is stopped when the pass is done with it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::passes::process::{self, LineHook, Outcome, SoftStop, Spec};

/// What ncu prints once the workload is held at its first CUDA call.
const WAITING: &str = "Waiting for profiler to attach";
/// What ncu says of an option the attach cannot take (it belongs to the launch).
pub(crate) const REFUSED_OPTION: &str = "specified for --mode attach";

/// The held workload: its `ncu --mode=launch` process on a thread, and when it began waiting.
pub(crate) struct Held {
    /// The launch command line, program first (for cmd.txt).
    pub(crate) argv: Vec<String>,
    started: Instant,
    waiting: Arc<Mutex<Option<Instant>>>,
    stop: Arc<AtomicBool>,
    run: Option<JoinHandle<std::io::Result<Outcome>>>,
}

/// Whether this run starts the ncu pass's workload early: asked for, both passes on, one
/// process (a launcher's ranks are launched by it), no second GPU (the passes already run at
/// once there), no profiler-API windows (ncu's `--profile-from-start` belongs to the launch).
pub(crate) fn wanted(cfg: &crate::config::Config) -> bool {
    cfg.ncu.early_start
        && cfg.ncu.enable
        && cfg.nsys.enable
        && cfg.workload.launcher == crate::config::Launcher::None
        && !cfg.ncu.second_gpu
        && super::args::window_args(cfg).is_empty()
}

/// The launch arguments: held at the first CUDA call, NVTX tracked (an attach cannot turn it
/// on), every process of the workload (a spawned worker is held the same way).
pub(crate) fn launch_args(workload: &[String]) -> Vec<String> {
    let mut a = vec![
        "--mode=launch".to_string(),
        "--target-processes".to_string(),
        "all".to_string(),
        "--nvtx".to_string(),
    ];
    a.extend(workload.iter().cloned());
    a
}

/// The attach form of a launch-and-attach ncu line (program first): the launch's own options
/// (`--target-processes`, `--nvtx`) and the workload after `-o OUT` dropped. None when the line
/// has no `-o`.
pub(crate) fn attach_argv(profile: &[String]) -> Option<Vec<String>> {
    let out = profile.iter().position(|a| a == "-o")?;
    let mut argv = vec![
        profile.first()?.clone(),
        "--mode=attach".to_string(),
        "--hostname".to_string(),
        "127.0.0.1".to_string(),
    ];
    let end = (out + 2).min(profile.len());
    let mut rest = profile[1..end].iter();
    while let Some(a) = rest.next() {
        match a.as_str() {
            "--target-processes" => {
                rest.next();
            }
            "--nvtx" => {}
            _ => argv.push(a.clone()),
        }
    }
    (argv.last().map(String::as_str) != Some("-o")).then_some(argv)
}

impl Held {
    /// Start `ncu --mode=launch` on the workload (`spec` carries its environment, folder and
    /// log); its output goes to the log only.
    pub(crate) fn start(mut spec: Spec) -> Held {
        let waiting = Arc::new(Mutex::new(None));
        let seen = waiting.clone();
        spec.on_line = Some(LineHook(Arc::new(move |line: &str| {
            if line.contains(WAITING) {
                let mut w = seen.lock().unwrap_or_else(|p| p.into_inner());
                w.get_or_insert_with(Instant::now);
            }
        })));
        spec.echo = false;
        // A held workload has done nothing worth a long grace when it is stopped.
        spec.grace = spec.grace.min(Duration::from_secs(5));
        let stop = Arc::new(AtomicBool::new(false));
        spec.soft_stop = Some(SoftStop {
            flag: stop.clone(),
            after: None,
        });
        let argv = spec.argv();
        let run = std::thread::spawn(move || process::run(&spec));
        Held {
            argv,
            started: Instant::now(),
            waiting,
            stop,
            run: Some(run),
        }
    }

    /// Seconds from the launch until ncu held the workload, if it has.
    pub(crate) fn waiting_after_s(&self) -> Option<f64> {
        let w = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        w.map(|t| t.duration_since(self.started).as_secs_f64())
    }

    fn ended(&self) -> bool {
        self.run.as_ref().is_none_or(|r| r.is_finished())
    }

    /// Wait until ncu holds the workload: true when it does, false when the launch ended
    /// first (or the run was interrupted, or `limit` passed).
    pub(crate) fn wait_held(&self, limit: Option<Duration>) -> bool {
        let t0 = Instant::now();
        loop {
            if self.waiting_after_s().is_some() {
                return !self.ended();
            }
            if self.ended() || crate::passes::signals::interrupted() {
                return false;
            }
            if limit.is_some_and(|l| t0.elapsed() > l) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The launch process's outcome once it ends by itself (after an attach ended the
    /// workload), stopped if it is still there after `grace`.
    pub(crate) fn finish(mut self, grace: Duration) -> Option<Outcome> {
        let t0 = Instant::now();
        while !self.ended() && t0.elapsed() < grace {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.stop.store(true, Ordering::Relaxed);
        self.run.take()?.join().ok()?.ok()
    }
}

impl Drop for Held {
    /// Never attached (the pass had nothing to profile, or the run stopped): the held workload
    /// is stopped, not left waiting.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(r) = self.run.take() {
            let _ = r.join();
        }
    }
}

/// The attach's outcome with the held workload's output after it: the classification reads
/// both (ncu's result lines come from the attach, the workload's own from the launch).
pub(crate) fn merged(attach: Outcome, launch: Option<Outcome>) -> Outcome {
    let Some(launch) = launch else {
        return attach;
    };
    let code = match (attach.code, launch.code) {
        // The workload failed on its own (not stopped by ncu's --kill): its code decides.
        (Some(0), Some(c)) if c != 0 && !attach.tail.contains(super::STOPPED_EARLY) => Some(c),
        (a, _) => a,
    };
    Outcome {
        code,
        tail: format!("{}\n{}", launch.tail, attach.tail),
        ..attach
    }
}

/// Where the held workload's own output goes.
pub(crate) fn log(ncu_dir: &Path) -> PathBuf {
    ncu_dir.join("workload.log")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn the_attach_line_keeps_the_filters_and_drops_the_launch_options_and_the_workload() {
        let line = v(&[
            "/cuda/ncu",
            "--target-processes",
            "all",
            "--nvtx",
            "--nvtx-include",
            "decode/",
            "--kernel-id",
            "::regex:^(a|b)$:1",
            "--launch-count",
            "2",
            "--kill",
            "on",
            "-o",
            "/run/ncu/decode",
            "python3",
            "w.py",
            "-o",
            "x",
        ]);
        assert_eq!(
            attach_argv(&line).unwrap(),
            v(&[
                "/cuda/ncu",
                "--mode=attach",
                "--hostname",
                "127.0.0.1",
                "--nvtx-include",
                "decode/",
                "--kernel-id",
                "::regex:^(a|b)$:1",
                "--launch-count",
                "2",
                "--kill",
                "on",
                "-o",
                "/run/ncu/decode",
            ])
        );
        assert_eq!(attach_argv(&v(&["/cuda/ncu", "python3"])), None);
        assert_eq!(attach_argv(&v(&["/cuda/ncu", "-o"])), None);
    }

    #[test]
    fn the_launch_holds_every_process_with_nvtx_tracked() {
        assert_eq!(
            launch_args(&v(&["python3", "w.py"])),
            v(&[
                "--mode=launch",
                "--target-processes",
                "all",
                "--nvtx",
                "python3",
                "w.py"
            ])
        );
    }
}
