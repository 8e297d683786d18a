//! One live line per pass on stderr: its stage (running, finalizing, exporting), kernels
//! profiled out of those planned, elapsed time and what is left. On a terminal the line is
//! redrawn in place; elsewhere (CI logs, a pipe) a plain line is written every few seconds.
//! The profilers' own output goes to the pass's log, not here.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Nothing (`-q`, or the children's raw output is shown instead).
    Off,
    /// One line redrawn in place.
    Tty,
    /// A plain line every [`PLAIN_EVERY`].
    Plain,
}

impl Mode {
    /// The mode for stderr as it is now.
    pub(crate) fn detect(shown: bool) -> Mode {
        match (shown, std::io::IsTerminal::is_terminal(&std::io::stderr())) {
            (false, _) => Mode::Off,
            (true, true) => Mode::Tty,
            (true, false) => Mode::Plain,
        }
    }
}

const PLAIN_EVERY: Duration = Duration::from_secs(10);
const TTY_EVERY: Duration = Duration::from_millis(500);

/// What the line says.
#[derive(Debug, Clone)]
pub(crate) struct State {
    pub(crate) pass: String,
    pub(crate) stage: String,
    /// Items done and planned (ncu: kernels; None planned: not known before the pass).
    pub(crate) count: Option<(usize, Option<usize>)>,
    /// Seconds left, when they can be estimated.
    pub(crate) left_s: Option<f64>,
}

/// The line for a state after `elapsed` (None: without the time).
pub(crate) fn render(st: &State, elapsed: Option<Duration>) -> String {
    let mut line = format!("{}: {}", st.pass, st.stage);
    match st.count {
        Some((done, Some(total))) => line.push_str(&format!(" {done}/{total} kernels")),
        Some((done, None)) => line.push_str(&format!(", {done} kernels so far")),
        None => {}
    }
    if let Some(e) = elapsed {
        line.push_str(&format!(", {:.0} s elapsed", e.as_secs_f64()));
    }
    if let Some(left) = st.left_s {
        line.push_str(&format!(", about {:.0} s left", left.max(0.0)));
    }
    line
}

struct Shared {
    state: Mutex<State>,
    stop: AtomicBool,
}

/// A live progress line, drawn by a thread of its own until dropped.
pub(crate) struct Progress {
    shared: Arc<Shared>,
    ticker: Option<std::thread::JoinHandle<()>>,
    mode: Mode,
}

impl Progress {
    pub(crate) fn start(pass: &str, mode: Mode) -> Progress {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                pass: pass.to_string(),
                stage: "running".into(),
                count: None,
                left_s: None,
            }),
            stop: AtomicBool::new(false),
        });
        let ticker = (mode != Mode::Off).then(|| {
            let shared = shared.clone();
            std::thread::spawn(move || tick(&shared, mode))
        });
        Progress {
            shared,
            ticker,
            mode,
        }
    }

    /// A handle for the threads that read the child's output.
    pub(crate) fn handle(&self) -> Handle {
        Handle(self.shared.clone())
    }

    pub(crate) fn stage(&self, stage: &str) {
        self.handle().stage(stage);
    }
}

/// Changes the progress line from any thread.
#[derive(Clone)]
pub(crate) struct Handle(Arc<Shared>);

impl Handle {
    /// Change the state; tracing's debug lines say so too (`-v`).
    pub(crate) fn update(&self, f: impl FnOnce(&mut State)) {
        let mut st = self.0.state.lock().unwrap_or_else(|p| p.into_inner());
        let before = (st.stage.clone(), st.count);
        f(&mut st);
        if (st.stage.clone(), st.count) != before {
            tracing::debug!("{}", render(&st, None));
        }
    }

    pub(crate) fn stage(&self, stage: &str) {
        self.update(|s| {
            s.stage = stage.to_string();
            s.left_s = None;
        });
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
        if self.mode == Mode::Tty {
            crate::term::live(None);
        }
    }
}

fn tick(shared: &Shared, mode: Mode) {
    let t0 = Instant::now();
    let mut last = Instant::now();
    let every = if mode == Mode::Tty {
        TTY_EVERY
    } else {
        PLAIN_EVERY
    };
    while !shared.stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        if last.elapsed() < every {
            continue;
        }
        last = Instant::now();
        let line = {
            let st = shared.state.lock().unwrap_or_else(|p| p.into_inner());
            render(&st, Some(t0.elapsed()))
        };
        match mode {
            Mode::Tty => crate::term::live(Some(&format!("stage2: {line}"))),
            _ => crate::term::line(&format!("stage2: {line}\n")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_stage_count_elapsed_and_what_is_left() {
        let mut st = State {
            pass: "ncu".into(),
            stage: "profiling".into(),
            count: Some((5, Some(26))),
            left_s: Some(19.6),
        };
        assert_eq!(
            render(&st, Some(Duration::from_secs(14))),
            "ncu: profiling 5/26 kernels, 14 s elapsed, about 20 s left"
        );
        // Each distinct kernel of a range: how many is not known until ncu ends.
        st.count = Some((8, None));
        st.left_s = None;
        assert_eq!(
            render(&st, Some(Duration::from_secs(20))),
            "ncu: profiling, 8 kernels so far, 20 s elapsed"
        );
        st.count = None;
        st.stage = "finalizing".into();
        assert_eq!(
            render(&st, Some(Duration::from_millis(2500))),
            "ncu: finalizing, 2 s elapsed"
        );
    }

    #[test]
    fn off_draws_nothing_and_drops_cleanly() {
        let p = Progress::start("nsys", Mode::Off);
        p.stage("exporting");
        assert!(p.ticker.is_none());
    }
}
