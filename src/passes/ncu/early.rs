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

mod host;
use host::{processes, watch_cpu};

/// How long to wait for a held launch to say it listens: ncu says so as soon as it starts.
pub(crate) const LISTEN_LIMIT: Duration = Duration::from_secs(120);

/// What ncu prints once the workload is held at its first CUDA call.
const WAITING: &str = "Waiting for profiler to attach";
/// What an attach says when no held process answers on its ports yet.
const NOT_FOUND: &str = "No attachable process found";
/// What ncu says of an option the attach cannot take (it belongs to the launch).
pub(crate) const REFUSED_OPTION: &str = "specified for --mode attach";

/// How the ncu pass's workload starts, decided before the nsys pass: held since then, or
/// under ncu as usual, where early start is off or cannot be, or where the last run of this
/// workload said the metrics cache answers every kernel it chose (that run: `warm`).
pub(crate) enum Start {
    Held(Held),
    Warm(String),
    Usual,
    /// A dry run: nothing starts; the plan writes what a real run would (see `plan::dry`).
    Dry(Dry),
}

/// How a real run's ncu pass would start, as a dry run can tell without running anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dry {
    /// An nsys pass runs first and its export chooses ncu's kernels.
    pub(crate) after_nsys: bool,
    /// The workload would be held since the nsys pass began (`ncu.early_start`).
    pub(crate) held: bool,
}

impl Dry {
    /// `nsys_found`: the nsys program is known (a dry run without it still writes nsys's line
    /// as `nsys ...` and so counts it). Held as `sequence::hold_early` would hold it, but for
    /// the metrics cache's guess that it answers every kernel (a dry run does not read it).
    pub(crate) fn of(cfg: &crate::config::Config, nsys_found: bool) -> Dry {
        let after_nsys = nsys_found && cfg.nsys.enable;
        Dry {
            after_nsys,
            held: after_nsys && wanted(cfg),
        }
    }
}

/// The held workload: its `ncu --mode=launch` process on a thread, and what the threads that
/// follow it share.
pub(crate) struct Held {
    /// The launch command line, program first (for cmd.txt).
    pub(crate) argv: Vec<String>,
    /// The first of the ports it listens on (None: ncu's defaults).
    pub(crate) port: Option<u16>,
    /// What its environment adds to the workload's ([`held_env`]).
    pub(crate) env: Vec<(String, String)>,
    started: Instant,
    shared: Arc<Shared>,
    run: Option<JoinHandle<std::io::Result<Outcome>>>,
}

/// What the launch's line hook, the CPU watcher and the pass share.
#[derive(Default)]
struct Shared {
    /// ncu listens for the attach (it says so at once, before the workload reaches its first
    /// CUDA call).
    listening: AtomicBool,
    /// The last look at which the workload's processes used the CPU (held ones do not).
    busy: Mutex<Option<Instant>>,
    /// Set to stop the launch (its soft stop's flag).
    stop: Arc<AtomicBool>,
    /// The pass attached: the copy is the ncu pass's own workload from then on.
    attached: AtomicBool,
    /// Why stage2 stopped it before any attach (host memory ran low).
    why: Mutex<Option<String>>,
    /// The launch's pid (its process group), once started.
    pid: Arc<std::sync::atomic::AtomicU32>,
}

/// Whether this run starts the ncu pass's workload early: asked for, both passes on, one
/// process (a launcher's ranks are launched by it), no second GPU (the passes already run at
/// once there), no `ncu.extra_args` (which of them belong to the launch is not known here).
/// Profiler-API windows are no bar: ncu refuses `--profile-from-start` on a launch ("Invalid
/// option ... for --mode launch") and honours it on the attach, which then profiles inside
/// the windows only (measured on an H100, ncu 2025.3.1: the attach's first kernel was the
/// window's `add`, not the `fill` before it that an attach without the option profiles).
pub(crate) fn wanted(cfg: &crate::config::Config) -> bool {
    cfg.ncu.early_start
        && cfg.ncu.extra_args.is_empty()
        && cfg.ncu.enable
        && cfg.nsys.enable
        && cfg.workload.launcher == crate::config::Launcher::None
        && !cfg.ncu.second_gpu
}

/// How many ports a held launch may listen on (one per held process of the workload).
pub(crate) const PORTS: u16 = 16;

/// A block of [`PORTS`] free ports for this run's launch and attach, from one the system hands
/// out. Without one of its own, an attach reaches whichever held process answers first on
/// ncu's default ports: measured on an H200 (2026-11-26), with two held on the defaults one
/// attach profiled the other run's copy. None: no free block was found.
pub(crate) fn free_ports() -> Option<u16> {
    use std::net::TcpListener;
    let free = |p: u16| TcpListener::bind(("0.0.0.0", p)).is_ok();
    (0..32).find_map(|_| {
        let base = TcpListener::bind(("0.0.0.0", 0))
            .ok()?
            .local_addr()
            .ok()?
            .port();
        let end = base.checked_add(PORTS)?;
        (base..end).all(free).then_some(base)
    })
}

/// `--port BASE --max-connections N`: the same on the launch and its attach.
fn port_args(base: Option<u16>) -> Vec<String> {
    base.map(|b| {
        vec![
            "--port".to_string(),
            b.to_string(),
            "--max-connections".to_string(),
            PORTS.to_string(),
        ]
    })
    .unwrap_or_default()
}

/// Ok where the nsys pass saw kernels from one process at most. An attach reached one of two
/// held processes (measured with two launches on an H200, 2026-11-26); with kernels in
/// two processes of one workload the other could wait for an attach that never comes, where
/// ncu's launch profiles both. A second process that only asks CUDA questions (the static
/// cache's compile worker: two cudaGetDeviceProperties calls) ran attached without harm on an
/// H200, so it does not count. Err says why not, for the fallback's warning.
pub(crate) fn one_process(ctx: &crate::passes::Ctx) -> Result<(), String> {
    let sqlite = ctx.run.single_or_rank0_sqlite();
    let pids = crate::parse::sqlite::NsysDb::open(&sqlite).and_then(|db| db.kernel_pids(2));
    match pids {
        Ok(p) if p.len() > 1 => Err(format!(
            "the nsys pass saw kernels from more than one process (pids {} and {}), and an attach reaches one held process",
            p[0], p[1]
        )),
        Ok(_) => Ok(()),
        Err(e) => Err(format!("cannot tell how many processes run kernels ({e})")),
    }
}

/// PyTorch's `torch.cuda.is_available()` asks NVML instead of starting CUDA under this
/// variable (a weaker check that falls back to CUDA where NVML fails; the same answer on a
/// machine with a working driver).
pub(crate) const NVML_CHECK: &str = "PYTORCH_NVML_BASED_CUDA_CHECK";

/// What a held copy's environment adds to the workload's (`env`, the variables stage2 sets):
/// [`NVML_CHECK`], unless the workload or stage2's own environment sets it. ncu holds a copy
/// at its first CUDA call, and a script that asks `torch.cuda.is_available()` before it
/// imports its libraries and builds its model is otherwise held before all of that: its
/// start-up then runs after the attach instead of beside the nsys pass (measured on an H100,
/// the hand-written loop: 12.0 s from the attach to its first profiled kernel, its nsys
/// capture starting 12.7 s into the run; 2.3-2.5 s with it). Only the check's way of asking
/// changes: in both H100 bench runs every held copy ran the kernels the nsys pass chose.
pub(crate) fn held_env(env: &[(String, String)]) -> Vec<(String, String)> {
    let set = env.iter().any(|(k, _)| k == NVML_CHECK) || std::env::var_os(NVML_CHECK).is_some();
    match set {
        true => Vec::new(),
        false => vec![(NVML_CHECK.to_string(), "1".to_string())],
    }
}

/// The launch arguments: held at the first CUDA call, NVTX tracked (an attach cannot turn it
/// on), every process of the workload (a spawned worker is held the same way), listening on
/// this run's ports.
pub(crate) fn launch_args(workload: &[String], port: Option<u16>) -> Vec<String> {
    let mut a = vec![
        "--mode=launch".to_string(),
        "--target-processes".to_string(),
        "all".to_string(),
        "--nvtx".to_string(),
    ];
    a.extend(port_args(port));
    a.extend(workload.iter().cloned());
    a
}

/// The attach form of a launch-and-attach ncu line (program first): the launch's own options
/// (`--target-processes`, `--nvtx`) and the workload after `-o OUT` dropped. None when the line
/// has no `-o`. It looks for the held workload on the launch's ports (`port`).
pub(crate) fn attach_argv(profile: &[String], port: Option<u16>) -> Option<Vec<String>> {
    let out = profile.iter().position(|a| a == "-o")?;
    let mut argv = vec![
        profile.first()?.clone(),
        "--mode=attach".to_string(),
        "--hostname".to_string(),
        "127.0.0.1".to_string(),
    ];
    argv.extend(port_args(port));
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
    pub(crate) fn start(mut spec: Spec, port: Option<u16>) -> Held {
        let env = held_env(&spec.env);
        spec.env.extend(env.iter().cloned());
        let shared = Arc::new(Shared::default());
        let seen = shared.clone();
        spec.on_line = Some(LineHook(Arc::new(move |line: &str| {
            if line.contains(WAITING) {
                seen.listening.store(true, Ordering::Relaxed);
            }
        })));
        spec.echo = false;
        // Its start-up runs beside the nsys pass's workload, which must not feel it: only on
        // CPU time that workload leaves idle (measured without this on an H200: the copy's
        // CPU-heavy model build still ran during the 2 s capture).
        spec.idle_cpu = true;
        // A held workload has done nothing worth a long grace when it is stopped.
        spec.grace = spec.grace.min(Duration::from_secs(5));
        spec.soft_stop = Some(SoftStop {
            flag: shared.stop.clone(),
            after: None,
        });
        spec.pid = Some(shared.pid.clone());
        let argv = spec.argv();
        let run = std::thread::spawn(move || process::run(&spec));
        let watched = shared.clone();
        std::thread::spawn(move || watch_cpu(watched));
        Held {
            argv,
            port,
            env,
            started: Instant::now(),
            shared,
            run: Some(run),
        }
    }

    /// The pass attaches now: from here on the copy is the ncu pass's own workload.
    fn attaching(&self) {
        self.shared.attached.store(true, Ordering::Relaxed);
    }

    /// Why stage2 stopped the copy before any attach, if it did.
    fn stopped_why(&self) -> Option<String> {
        self.shared
            .why
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Seconds from the launch until the held workload last used the CPU: where it stands
    /// still, when ncu held it at its first CUDA call.
    pub(crate) fn busy_until_s(&self) -> f64 {
        let b = self.shared.busy.lock().unwrap_or_else(|p| p.into_inner());
        b.map_or(0.0, |t| t.duration_since(self.started).as_secs_f64())
    }

    fn listening(&self) -> bool {
        self.shared.listening.load(Ordering::Relaxed)
    }

    fn ended(&self) -> bool {
        self.run.as_ref().is_none_or(|r| r.is_finished())
    }

    /// The copy is still there (held, or starting).
    pub(crate) fn running(&self) -> bool {
        !self.ended()
    }

    /// Wait until ncu listens for the attach: true when it does, false when the launch ended
    /// first (or the run was interrupted, or `limit` passed).
    fn wait_held(&self, limit: Option<Duration>) -> bool {
        let t0 = Instant::now();
        loop {
            if self.listening() {
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

    /// Wait up to `limit` until ncu holds the workload, then run the attach line `attach` with
    /// `run`. Gives the attach's outcome with the copy's after it, or why the copy was not
    /// profiled (it is stopped then), and when the copy last used the CPU before the attach
    /// (s from its start). The kernel pass and the graph step attach alike through this.
    pub(crate) fn attach<E>(
        self,
        limit: Duration,
        attach: &[String],
        mut run: impl FnMut(&[String]) -> Result<Outcome, E>,
    ) -> Result<(Result<Outcome, NotAttached>, f64), E> {
        let ready = self.wait_held(Some(limit));
        // Read before the attach: from then on the workload works again.
        let held_after_s = self.busy_until_s();
        if !ready {
            let why = self
                .stopped_why()
                .map_or(NotAttached::Ended, NotAttached::Stopped);
            return Ok((Err(why), held_after_s));
        }
        self.attaching();
        let t0 = Instant::now();
        let mut out = run(attach)?;
        // ncu listens at once, but finds the copy only once it reaches its first CUDA call: a
        // copy still in its imports is "No attachable process found" (seen on an H100 for the
        // graph step's copy of a torch.compile loop, whose kernel pass took 13 s). Tried again
        // while the copy runs, within the limit.
        let mut said = false;
        while out.code != Some(0)
            && out.tail.contains(NOT_FOUND)
            && self.running()
            && t0.elapsed() < limit
            && !crate::passes::signals::interrupted()
        {
            if !std::mem::replace(&mut said, true) {
                tracing::info!("ncu: the held workload is still starting (not attachable yet); attaching again until it is");
            }
            std::thread::sleep(Duration::from_secs(1));
            out = run(attach)?;
        }
        if out.code == Some(0) || !out.tail.contains(REFUSED_OPTION) {
            return Ok((Ok(merged(out, self.finish(AFTER_ATTACH))), held_after_s));
        }
        let line = out.tail.lines().find(|l| l.contains(REFUSED_OPTION));
        let line = line.unwrap_or("").trim().to_string();
        Ok((Err(NotAttached::Refused(line)), held_after_s))
    }

    /// The launch process's outcome where it ends by itself within `grace` (after an attach
    /// ended the workload). Once the attach has ended nothing more of the workload is
    /// profiled: one still there is stopped and set aside to end while the pass goes on
    /// (None then), since its teardown under ncu took about 1.5 s on an H100 and the report's
    /// imports need nothing of it; [`Stopping`] joins it.
    fn finish(mut self, grace: Duration) -> Option<Outcome> {
        let t0 = Instant::now();
        while !self.ended() && t0.elapsed() < grace {
            std::thread::sleep(Duration::from_millis(20));
        }
        if self.ended() {
            return self.run.take()?.join().ok()?.ok();
        }
        self.shared.stop.store(true, Ordering::Relaxed);
        STOPPING
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(self);
        None
    }
}

/// Copies stopped after their attach, still ending.
static STOPPING: Mutex<Vec<Held>> = Mutex::new(Vec::new());

/// Joins the copies stopped after their attach when dropped: the pass holds one, so none
/// outlives it whichever way it returns, and a later profile (the graph step's) does not
/// share the GPU with one still ending.
pub(crate) struct Stopping;

impl Stopping {
    /// Wait for every stopped copy to end (each one's own grace bounds it).
    pub(crate) fn join(&self) {
        let ending = std::mem::take(&mut *STOPPING.lock().unwrap_or_else(|p| p.into_inner()));
        drop(ending);
    }
}

impl Drop for Stopping {
    fn drop(&mut self) {
        self.join();
    }
}

impl Drop for Held {
    /// Never attached (the pass had nothing to profile, or the run stopped): the held workload
    /// is stopped, not left waiting.
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(r) = self.run.take() {
            let _ = r.join();
        }
    }
}

/// Why a held copy was not profiled by its attach.
pub(crate) enum NotAttached {
    /// ncu refused an option of the attach (its line).
    Refused(String),
    /// stage2 stopped the copy first (why: host memory ran low).
    Stopped(String),
    /// The copy ended before ncu held it (or the run was interrupted, or the wait timed out).
    Ended,
}

impl NotAttached {
    /// Why, in the words of a warning (`log`: the held copy's own output).
    pub(crate) fn said(&self, log: &str) -> String {
        match self {
            NotAttached::Refused(line) => {
                format!("ncu would not attach with these options ({line})")
            }
            NotAttached::Stopped(why) => format!("the workload held for it was {why}"),
            NotAttached::Ended => format!(
                "the workload held for it ended before ncu attached (see {log}; its start ran beside another run of the workload: one that binds a port, takes a lock or writes a fixed file before its first CUDA call cannot start twice at once and needs ncu.early_start=false)"
            ),
        }
    }
}

/// How long a held workload may go on after its attach ended before it is stopped: the
/// attach has written its report, and nothing the workload does later is profiled. ncu's
/// `--kill on` did not end an attached workload: measured on an H200 (static cache, 2026-11-26),
/// it ran on until stopped, 30 s later; the eager loop ran on to its end (up to 2 s more with
/// the 2 s this was before).
pub(crate) const AFTER_ATTACH: Duration = Duration::from_millis(200);

/// The attach's outcome with the held workload's output after it: the classification reads
/// both (ncu's result lines come from the attach, the workload's own from the launch).
pub(crate) fn merged(attach: Outcome, launch: Option<Outcome>) -> Outcome {
    let Some(launch) = launch else {
        return attach;
    };
    let code = match (attach.code, launch.code) {
        // The workload failed on its own (not stopped by ncu's --kill, nor by the pass once
        // the attach ended): its code decides.
        (Some(0), Some(c))
            if c != 0 && !launch.soft_stopped && !attach.tail.contains(super::STOPPED_EARLY) =>
        {
            Some(c)
        }
        (a, _) => a,
    };
    Outcome {
        code,
        tail: format!("{}\n{}", launch.tail, attach.tail),
        ..attach
    }
}

/// The `ncu --mode=launch` processes on this machine, pid and command line: each holds a
/// workload at its first CUDA call until an attach comes, with the memory it took so far. A
/// run stopped by SIGKILL cannot stop its own.
pub(crate) fn held_launches() -> Vec<(u32, String)> {
    let mut found: Vec<(u32, String)> = processes("cmdline")
        .filter_map(|(pid, raw)| {
            let argv: Vec<String> = raw
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            // `ncu` itself, or a shell running an `ncu` script.
            let named =
                |a: Option<&String>| a.and_then(|a| Path::new(a).file_name().map(|n| n == "ncu"));
            let ncu = named(argv.first()) == Some(true) || named(argv.get(1)) == Some(true);
            (ncu && argv.iter().any(|a| a == "--mode=launch")).then(|| (pid, argv.join(" ")))
        })
        .collect();
    found.sort();
    found
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
    fn a_held_copy_asks_nvml_unless_the_workload_says_otherwise() {
        let own = vec![(NVML_CHECK.to_string(), "0".to_string())];
        assert!(held_env(&own).is_empty());
        // stage2's own environment decides where it sets the variable (the child inherits it).
        let added = held_env(&[("OMP_NUM_THREADS".to_string(), "2".to_string())]);
        match std::env::var_os(NVML_CHECK) {
            Some(_) => assert!(added.is_empty()),
            None => assert_eq!(added, vec![(NVML_CHECK.to_string(), "1".to_string())]),
        }
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
            attach_argv(&line, Some(41000)).unwrap(),
            v(&[
                "/cuda/ncu",
                "--mode=attach",
                "--hostname",
                "127.0.0.1",
                "--port",
                "41000",
                "--max-connections",
                "16",
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
        assert_eq!(attach_argv(&v(&["/cuda/ncu", "python3"]), None), None);
        assert_eq!(attach_argv(&v(&["/cuda/ncu", "-o"]), None), None);
    }

    /// Profiler-API windows: the workload is held as any other, and the window option goes
    /// to the attach, the one mode of ncu that takes it.
    #[test]
    fn windows_hold_the_workload_and_gate_the_attach() {
        let c = crate::testutil::config(&["nsys.capture_range=cudaProfilerApi"]);
        assert!(wanted(&c));
        let mut line = v(&["/cuda/ncu", "--target-processes", "all", "--nvtx"]);
        line.splice(
            1..1,
            crate::passes::ncu::window_args(&crate::config::NcuTarget::of(&c)),
        );
        line.extend(v(&["-o", "/run/ncu/decode", "python3", "w.py"]));
        let attach = attach_argv(&line, None).unwrap().join(" ");
        assert!(
            attach.contains("127.0.0.1 --profile-from-start off -o /run/ncu/decode"),
            "{attach}"
        );
        let launch = launch_args(&v(&["python3", "w.py"]), None).join(" ");
        assert!(!launch.contains("--profile-from-start"), "{launch}");
    }

    #[test]
    fn a_workload_stopped_after_its_attach_ended_is_no_failure_and_one_failing_on_its_own_is() {
        let out = |code, tail: &str, soft_stopped| Outcome {
            code,
            signal: None,
            duration: Duration::from_secs(1),
            tail: tail.to_string(),
            interrupted: false,
            timed_out: false,
            soft_stopped,
        };
        let attach = out(Some(0), "==PROF== Report: r.ncu-rep", false);
        let stopped = merged(
            attach.clone(),
            Some(out(Some(130), "KeyboardInterrupt", true)),
        );
        assert_eq!(stopped.code, Some(0));
        assert!(stopped.tail.starts_with("KeyboardInterrupt\n==PROF=="));
        let failed = merged(attach.clone(), Some(out(Some(1), "Traceback", false)));
        assert_eq!(failed.code, Some(1));
        assert_eq!(merged(attach, None).code, Some(0));
    }

    #[test]
    fn the_launch_holds_every_process_with_nvtx_tracked() {
        assert_eq!(
            launch_args(&v(&["python3", "w.py"]), None),
            v(&[
                "--mode=launch",
                "--target-processes",
                "all",
                "--nvtx",
                "python3",
                "w.py"
            ])
        );
        let base = free_ports().unwrap();
        let own = launch_args(&v(&["python3"]), Some(base));
        assert_eq!(
            own[4..8],
            v(&["--port", &base.to_string(), "--max-connections", "16"])
        );
        // Free when chosen: each of the block binds.
        let taken = std::net::TcpListener::bind(("0.0.0.0", base)).unwrap();
        assert_ne!(free_ports(), Some(base));
        drop(taken);
    }
}
