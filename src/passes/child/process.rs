//! Running one child: its own process group, output drained on threads and tee'd to a log,
//! signals forwarded to the group, a timeout, and the tail of its output kept for diagnosis.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use crate::passes::signals;
use crate::secrets::Scrubbed;

/// Bytes of combined output kept in memory to search for the profilers' messages.
const TAIL_BYTES: usize = 256 * 1024;

/// What to run and where its output goes.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    pub(crate) program: PathBuf,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) cwd: Option<PathBuf>,
    /// Everything the child prints is appended here.
    pub(crate) log: PathBuf,
    /// When set, stdout goes to this file alone (e.g. `ncu --import ... --csv`).
    pub(crate) stdout_file: Option<PathBuf>,
    /// Show the child's output live on our terminal.
    pub(crate) echo: bool,
    pub(crate) timeout: Option<Duration>,
    /// After a forwarded signal or a timeout, how long before SIGKILL.
    pub(crate) grace: Duration,
    /// Told each line the child prints (stdout and stderr), as it arrives.
    pub(crate) on_line: Option<LineHook>,
    /// Stop early, keeping what the child wrote (a bound reached, not a failure).
    pub(crate) soft_stop: Option<SoftStop>,
    /// Told the child's pid (its process group) once it has started.
    pub(crate) pid: Option<Arc<std::sync::atomic::AtomicU32>>,
    /// Run it (and what it starts) only on CPU time nothing else wants (SCHED_IDLE), so it
    /// does not slow another pass running at the same time.
    pub(crate) idle_cpu: bool,
    /// The signals already counted that the child is not to get. None: it gets every signal
    /// of the run, even one that came before it started (while its pass was planned: ncu then
    /// ran its workload to its end; two nvidia-smi probes side by side lost a SIGTERM so and
    /// waited their 30 s out). A step that finalizes what a stopped profiler wrote (an export,
    /// an import) runs after the stop on purpose: only a later signal reaches it.
    pub(crate) signals_seen: Option<usize>,
}

/// Ask a child to stop early as a Ctrl-C would (SIGINT to its group, SIGKILL after the grace),
/// so a profiler ends the workload and writes what it measured: once `flag` is set (by a line
/// hook that counted enough results, say) or `after` has passed.
#[derive(Debug, Clone, Default)]
pub(crate) struct SoftStop {
    pub(crate) flag: Arc<std::sync::atomic::AtomicBool>,
    pub(crate) after: Option<Duration>,
}

impl SoftStop {
    fn due(&self, elapsed: Duration) -> bool {
        self.flag.load(std::sync::atomic::Ordering::Relaxed)
            || self.after.is_some_and(|a| elapsed > a)
    }
}

/// A callback for each output line (ended by `\n` or `\r`, lossily decoded).
#[derive(Clone)]
pub(crate) struct LineHook(pub(crate) Arc<dyn Fn(&str) + Send + Sync>);

impl std::fmt::Debug for LineHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LineHook")
    }
}

impl Spec {
    pub(crate) fn new(
        program: impl Into<PathBuf>,
        args: Vec<String>,
        log: impl Into<PathBuf>,
    ) -> Self {
        Spec {
            program: program.into(),
            args,
            env: Vec::new(),
            cwd: None,
            log: log.into(),
            stdout_file: None,
            echo: false,
            timeout: None,
            grace: Duration::from_secs(30),
            on_line: None,
            soft_stop: None,
            pid: None,
            idle_cpu: false,
            signals_seen: None,
        }
    }

    /// The full argv, program first.
    pub(crate) fn argv(&self) -> Vec<String> {
        std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().cloned())
            .collect()
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    /// The exit code, or None when killed by a signal.
    pub(crate) code: Option<i32>,
    pub(crate) signal: Option<i32>,
    pub(crate) duration: Duration,
    /// The last bytes the child printed (stdout and stderr interleaved), lossily decoded.
    pub(crate) tail: String,
    pub(crate) interrupted: bool,
    pub(crate) timed_out: bool,
    /// Stopped by its [`SoftStop`].
    pub(crate) soft_stopped: bool,
}

impl Outcome {
    pub(crate) fn success(&self) -> bool {
        self.code == Some(0)
    }
    /// The last `n` lines of output, for error messages.
    pub(crate) fn tail_lines(&self, n: usize) -> String {
        let lines: Vec<&str> = self.tail.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }
    pub(crate) fn describe(&self) -> String {
        match (self.code, self.signal) {
            (Some(c), _) => format!("exit status {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            _ => "unknown status".to_string(),
        }
    }
}

pub(crate) use crate::files::shell_line;

/// Whole lines of a child's output to stderr through the terminal's discipline (the live line
/// cleared first), secrets cut, control characters written out.
#[derive(Default)]
struct Echo {
    partial: Vec<u8>,
}

impl Echo {
    fn emit(&mut self, upto: usize) {
        let line: Vec<u8> = self.partial.drain(..upto).collect();
        let text = String::from_utf8_lossy(&line);
        let text = crate::term::visible(text.trim_end_matches('\n'));
        crate::term::line(&format!("{text}\n"));
    }
}

impl Write for Echo {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.partial.extend_from_slice(buf);
        while let Some(at) = self.partial.iter().position(|&b| b == b'\n') {
            self.emit(at + 1);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        if !self.partial.is_empty() {
            let n = self.partial.len();
            self.emit(n);
        }
    }
}

/// Run the child to its end. Errors only when it cannot be started.
pub(crate) fn run(spec: &Spec) -> io::Result<Outcome> {
    // Every signal of the run but those the caller has seen reaches the child, however early.
    let seen_signals = spec.signals_seen.unwrap_or(0);
    // The child's secret-named variables join the values its output is redacted of.
    crate::secrets::learn(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let log = SharedLog(Arc::new(Mutex::new(
        File::options().create(true).append(true).open(&spec.log)?,
    )));
    let tail = Arc::new(Mutex::new(VecDeque::with_capacity(TAIL_BYTES)));
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        // Only the baseline pass times ranges, into its own folder: one inherited from the
        // user's shell would make the hook write range files wherever it points.
        .env_remove(crate::passes::baseline::RANGE_TIMES)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group: Ctrl-C in the terminal reaches stage2 only, and stage2
        // forwards it to the whole group (the profiler and the workload under it).
        .process_group(0);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    let idle_cpu = spec.idle_cpu;
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if idle_cpu {
                // Inherited across fork and exec; where it is refused the child runs as usual.
                let param = libc::sched_param { sched_priority: 0 };
                let _ = libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
            }
            // A child started from a shell that ignores SIGINT would inherit that; reset so a
            // forwarded signal works. If stage2 dies, the child is told to stop.
            for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGQUIT] {
                let _ = nix::sys::signal::signal(sig, nix::sys::signal::SigHandler::SigDfl);
            }
            let _ = nix::sys::signal::sigprocmask(
                nix::sys::signal::SigmaskHow::SIG_SETMASK,
                Some(&nix::sys::signal::SigSet::empty()),
                None,
            );
            let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGTERM);
            Ok(())
        });
    }
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let pgid = Pid::from_raw(child.id() as i32);
    if let Some(pid) = &spec.pid {
        pid.store(child.id(), std::sync::atomic::Ordering::Relaxed);
    }

    // The workload's echoed output goes to stderr, redacted, line by line: stdout is the
    // command's result (the run directory, or `--json`'s one object).
    let stdout_sink: Box<dyn Write + Send> = match &spec.stdout_file {
        // A tool's export is data the reports are computed from, kept as the tool wrote it
        // (as its report files are): redaction could cut a kernel name the joins need.
        Some(p) => Box::new(File::create(p)?),
        None if spec.echo => Box::new(Echo::default()),
        None => Box::new(io::sink()),
    };
    let to_log = spec.stdout_file.is_none();
    let stderr_sink: Box<dyn Write + Send> = if spec.echo {
        Box::new(Echo::default())
    } else {
        Box::new(io::sink())
    };
    let tee = |hook: &Option<LineHook>, lines: bool| Tee {
        log: Scrubbed::output(log.clone()),
        tail: tail.clone(),
        hook: hook.clone().filter(|_| lines),
        partial: Vec::new(),
    };
    let readers = [
        child
            .stdout
            .take()
            .map(|r| drain(r, stdout_sink, to_log, tee(&spec.on_line, to_log))),
        child
            .stderr
            .take()
            .map(|r| drain(r, stderr_sink, true, tee(&spec.on_line, true))),
    ];

    let mut forwarded_at: Option<Instant> = None;
    let mut killed = false;
    let mut interrupted = false;
    let mut timed_out = false;
    let mut soft_stopped = false;
    let mut ended = None;
    let status = loop {
        if ended.is_none() {
            ended = child.try_wait()?;
        }
        if let Some(status) = ended {
            // A stop sent to the group reaches what the leader left in it too: a member that
            // outlives the grace is killed, as the leader would have been.
            if forwarded_at.is_none() || killed || !group_alive(pgid) {
                break status;
            }
        }
        let now = Instant::now();
        let new_signals = signals::count().saturating_sub(seen_signals);
        if new_signals > 0 && !interrupted {
            interrupted = true;
            let sig = Signal::try_from(signals::last()).unwrap_or(Signal::SIGINT);
            tracing::warn!("forwarding {sig} to the profiler so it can finalize its report");
            let _ = killpg(pgid, sig);
            forwarded_at.get_or_insert(now);
        }
        if let (Some(limit), false, None) = (spec.timeout, timed_out, ended) {
            if now.duration_since(start) > limit {
                timed_out = true;
                tracing::warn!("timed out after {}s: sending SIGTERM", limit.as_secs());
                let _ = killpg(pgid, Signal::SIGTERM);
                forwarded_at.get_or_insert(now);
            }
        }
        if let Some(stop) =
            (spec.soft_stop.as_ref()).filter(|_| forwarded_at.is_none() && ended.is_none())
        {
            if stop.due(now.duration_since(start)) {
                soft_stopped = true;
                let _ = killpg(pgid, Signal::SIGINT);
                forwarded_at = Some(now);
            }
        }
        // What a child stopped on purpose left behind is not waited for (see `join_readers`).
        let escalate = new_signals > 1
            || (ended.is_some() && soft_stopped)
            || forwarded_at.is_some_and(|t| now.duration_since(t) > spec.grace);
        if escalate && !killed {
            killed = true;
            match (ended.is_some(), soft_stopped) {
                (true, true) => tracing::debug!("stopping what the stopped child left behind"),
                (true, false) => tracing::warn!("sending SIGKILL to what the child left running"),
                (false, _) => tracing::warn!("sending SIGKILL"),
            }
            let _ = killpg(pgid, Signal::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    join_readers(readers.into_iter().flatten().collect(), pgid, soft_stopped);
    let tail = {
        let t = tail.lock().unwrap_or_else(|p| p.into_inner());
        let (a, b) = t.as_slices();
        let mut bytes = a.to_vec();
        bytes.extend_from_slice(b);
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Ok(Outcome {
        code: status.code(),
        signal: status.signal(),
        duration: start.elapsed(),
        tail,
        interrupted,
        timed_out,
        soft_stopped,
    })
}

/// Wait for the output readers. A child can leave a background process holding its stdout;
/// the pipe then never closes, so after a short wait the group is killed, and readers that still
/// do not finish (the holder left the group) are left behind rather than waited for forever.
/// A child stopped early on purpose (`stopped`) has nothing left to say: what its processes
/// left behind (torch.compile's worker pool, a spawned worker) is killed without the wait or a
/// warning (they held a stopped held copy's pipe 2 s on an H100).
fn join_readers(readers: Vec<std::thread::JoinHandle<()>>, pgid: Pid, stopped: bool) {
    let wait = |limit: Duration| {
        let t0 = Instant::now();
        while readers.iter().any(|r| !r.is_finished()) && t0.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    wait(match stopped {
        true => Duration::from_millis(200),
        false => Duration::from_secs(2),
    });
    if readers.iter().any(|r| !r.is_finished()) {
        match stopped {
            true => tracing::debug!("stopping what the stopped child left behind"),
            false => tracing::warn!(
                "a process the child left behind still holds its output; stopping it"
            ),
        }
        let _ = killpg(pgid, Signal::SIGKILL);
        wait(Duration::from_secs(2));
    }
    for r in readers {
        if r.is_finished() {
            let _ = r.join();
        }
    }
}

/// The /proc stat fields after the command name (state, ppid, pgrp, ...) of each process in
/// process group `pgid`.
pub(crate) fn group_stats(pgid: u32) -> Vec<Vec<String>> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let numeric = |e: &std::fs::DirEntry| {
        e.file_name()
            .to_str()
            .is_some_and(|n| n.parse::<u32>().is_ok())
    };
    dir.flatten()
        .filter(numeric)
        .filter_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let rest = stat.rsplit_once(')')?.1.split_whitespace();
            let fields: Vec<String> = rest.map(str::to_string).collect();
            (fields.get(2)?.parse::<u32>().ok()? == pgid).then_some(fields)
        })
        .collect()
}

/// Whether a member of process group `pgid` still runs: one that ended and was not reaped (a
/// zombie, where init does not reap orphans) does not.
fn group_alive(pgid: Pid) -> bool {
    killpg(pgid, None).is_ok()
        && group_stats(pgid.as_raw() as u32)
            .iter()
            .any(|f| f.first().is_some_and(|s| s != "Z" && s != "X"))
}

/// A short query (`--version`, `ncu --query-metrics`, `nvidia-smi`) run like a pass: its own
/// process group, Ctrl-C forwarded, stopped after `timeout`. Its stdout, or None when it cannot
/// start, fails or is stopped.
pub(crate) fn probe(program: &Path, args: &[&str], timeout: Duration) -> Option<String> {
    probe_or_why(program, args, timeout).ok()
}

/// [`probe`], or why there is no answer in the program's own words: its last lines and exit
/// status, that it ran past its limit (named), or that it could not start.
pub(crate) fn probe_or_why(
    program: &Path,
    args: &[&str],
    timeout: Duration,
) -> Result<String, String> {
    // After a Ctrl-C nothing more is asked: the run is stopping. One from here on reaches
    // the probe, however early.
    let seen = signals::count();
    if seen > 0 {
        return Err("not asked: interrupted".into());
    }
    let timeout = timeout.min(probe_limit());
    let dir = tempfile::tempdir().map_err(|e| format!("no temp folder: {e}"))?;
    let args = args.iter().map(|a| a.to_string()).collect();
    let mut spec = Spec::new(program, args, dir.path().join("probe.log"));
    spec.stdout_file = Some(dir.path().join("stdout"));
    spec.timeout = Some(timeout);
    // A probe has no report to finalize: a signal or its time limit stops it at once.
    spec.grace = Duration::from_millis(200);
    spec.signals_seen = Some(seen);
    let out = run(&spec).map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    if out.timed_out {
        return Err(format!("no answer in {} s", timeout.as_secs()));
    }
    if !out.success() {
        let said = out.tail_lines(3);
        return Err(match said.trim().is_empty() {
            true => out.describe(),
            false => format!("{} ({})", said.trim(), out.describe()),
        });
    }
    let bytes = std::fs::read(dir.path().join("stdout")).map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

static PROBE_LIMIT: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();

/// The bound on every probe (`run.probe_timeout_s`), set once from the config.
pub(crate) fn set_probe_limit(limit: Duration) {
    let _ = PROBE_LIMIT.set(limit);
}

/// The probes' bound: the config's, else 60 s (long enough for `ncu --query-metrics` on a cold
/// machine).
pub(crate) fn probe_limit() -> Duration {
    *PROBE_LIMIT.get().unwrap_or(&Duration::from_secs(60))
}

/// The pass log both of a child's output streams write to, whole lines at a time.
#[derive(Clone)]
struct SharedLog(Arc<Mutex<File>>);

impl Write for SharedLog {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut f = self.0.lock().unwrap_or_else(|p| p.into_inner());
        f.write_all(buf).map(|()| buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Where a child's output goes besides its sink: the pass log (redacted as it is written: a
/// secret the workload prints never reaches the disk), the tail kept for diagnosis, and the
/// line hook.
struct Tee {
    log: Scrubbed<SharedLog>,
    tail: Arc<Mutex<VecDeque<u8>>>,
    hook: Option<LineHook>,
    /// The unfinished last line, for the hook.
    partial: Vec<u8>,
}

impl Tee {
    fn write(&mut self, chunk: &[u8]) {
        let _ = self.log.write_all(chunk);
        let mut t = self.tail.lock().unwrap_or_else(|p| p.into_inner());
        t.extend(chunk);
        let excess = t.len().saturating_sub(TAIL_BYTES);
        t.drain(..excess);
        drop(t);
        let Some(hook) = &self.hook else { return };
        for &b in chunk {
            if b == b'\n' || b == b'\r' {
                if !self.partial.is_empty() {
                    (hook.0)(&String::from_utf8_lossy(&self.partial));
                    self.partial.clear();
                }
            } else if self.partial.len() < 64 * 1024 {
                self.partial.push(b);
            }
        }
    }
}

/// Copy raw bytes (not lines: progress bars end in `\r`, output need not be UTF-8).
fn drain(
    mut from: impl Read + Send + 'static,
    mut sink: Box<dyn Write + Send>,
    to_log: bool,
    mut tee: Tee,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let chunk = &buf[..n];
            // A closed terminal or a full disk must not stop the child: keep draining.
            let _ = sink.write_all(chunk);
            let _ = sink.flush();
            if to_log {
                tee.write(chunk);
            }
        }
    })
}

/// Whether `path` names an existing, non-empty file.
pub(crate) fn nonempty(path: &Path) -> bool {
    path.metadata().map(|m| m.len() > 0).unwrap_or(false)
}

#[cfg(test)]
mod tests;
