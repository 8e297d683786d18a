//! The held copy watched from the host: whether its processes still use the CPU (a copy held
//! at its first CUDA call does not), and whether host memory runs low while it starts.

use super::*;

/// CPU time its processes used within one look (100 ms) above which the held workload counts as
/// still starting: ncu's own listening costs far less.
const BUSY_CPU_S: f64 = 0.005;
const LOOK_EVERY: Duration = Duration::from_millis(100);

/// Each process's pid and its `/proc/<pid>/<file>` (empty where /proc cannot be read).
pub(super) fn processes(file: &'static str) -> impl Iterator<Item = (u32, Vec<u8>)> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(move |e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            Some((pid, std::fs::read(e.path().join(file)).ok()?))
        })
}

/// The CPU seconds (user and system) of every process in process group `pgid`, from /proc.
fn group_cpu_s(pgid: u32) -> f64 {
    let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as f64;
    // utime and stime are the 12th and 13th fields after the command name.
    let t = |f: &[String], i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok());
    crate::passes::process::group_stats(pgid)
        .iter()
        .map(|f| (t(f, 11).unwrap_or(0.0) + t(f, 12).unwrap_or(0.0)) / ticks)
        .sum()
}

/// The host's share of memory still available below which the held copy is stopped: a
/// workload that loads its weights into host memory before its first CUDA call holds them
/// twice while both copies start.
const MIN_AVAILABLE_SHARE: f64 = 0.15;

/// MemAvailable and MemTotal of `/proc/meminfo` text, in kB.
fn memory(meminfo: &str) -> Option<(f64, f64)> {
    let kb = |key: &str| {
        meminfo
            .lines()
            .find_map(|l| l.strip_prefix(key))?
            .split_whitespace()
            .next()?
            .parse::<f64>()
            .ok()
    };
    Some((kb("MemAvailable:")?, kb("MemTotal:")?))
}

/// Why the held copy must go now: host memory ran low while it was still starting.
fn memory_low(meminfo: &str) -> Option<String> {
    let (available, total) = memory(meminfo)?;
    (total > 0.0 && available / total < MIN_AVAILABLE_SHARE).then(|| {
        format!(
            "stopped: host memory fell to {:.1} of {:.1} GB available while it started",
            available / 1048576.0,
            total / 1048576.0
        )
    })
}

/// Follow the group until it is stopped: `busy` is the last look at which it was still
/// working; a copy still starting when host memory runs low is stopped (`why`).
pub(super) fn watch_cpu(shared: Arc<Shared>) {
    let mut last = 0.0;
    while !shared.stop.load(Ordering::Relaxed) {
        std::thread::sleep(LOOK_EVERY);
        let pgid = shared.pid.load(Ordering::Relaxed);
        if pgid == 0 {
            continue;
        }
        let now = group_cpu_s(pgid);
        if now - last > BUSY_CPU_S {
            *shared.busy.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        }
        last = now;
        // Once attached, the copy is the ncu pass itself: its memory is its own business.
        if shared.attached.load(Ordering::Relaxed) {
            continue;
        }
        let low = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| memory_low(&m));
        if let Some(low) = low {
            tracing::warn!("ncu pass: the held copy of the workload is {low}");
            *shared.why.lock().unwrap_or_else(|p| p.into_inner()) = Some(low);
            shared.stop.store(true, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_group_s_cpu_time_grows_while_it_works_and_stands_still_while_it_waits() {
        use std::os::unix::process::CommandExt;
        // Busy for about 0.6 s, then asleep: as a workload held at its first CUDA call.
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done; sleep 5",
            ])
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id();
        let mut last = -1.0;
        let mut still = 0;
        let t0 = Instant::now();
        // Wait until two looks 300 ms apart see the same CPU time.
        while still < 1 && t0.elapsed() < Duration::from_secs(4) {
            std::thread::sleep(Duration::from_millis(300));
            let now = group_cpu_s(pgid);
            still = if now - last <= BUSY_CPU_S {
                still + 1
            } else {
                0
            };
            last = now;
        }
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pgid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = child.wait();
        assert!(last > 0.05, "the busy loop's CPU time: {last}");
        assert_eq!(still, 1, "never stood still: {last}");
        assert_eq!(group_cpu_s(u32::MAX), 0.0);
    }

    #[test]
    fn a_copy_still_starting_is_stopped_when_host_memory_runs_low() {
        let meminfo = |avail: u64| {
            format!("MemTotal:       100000000 kB\nMemFree:         1000 kB\nMemAvailable:   {avail} kB\n")
        };
        assert_eq!(
            memory(&meminfo(20_000_000)),
            Some((20_000_000.0, 100_000_000.0))
        );
        assert_eq!(memory_low(&meminfo(20_000_000)), None);
        assert_eq!(
            memory_low(&meminfo(10_000_000)).as_deref(),
            Some("stopped: host memory fell to 9.5 of 95.4 GB available while it started")
        );
        // Unreadable or partial: nothing is decided.
        assert_eq!(memory_low("MemTotal: 5 kB\n"), None);
        assert_eq!(memory_low(""), None);
    }
}
