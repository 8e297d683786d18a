//! Ctrl-C, SIGTERM and SIGHUP (a closed terminal or SSH session, handled as SIGTERM) are
//! recorded here rather than killing stage2, so the running profiler can be told to finalize
//! its report and the run directory stays consistent.

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::Once;

static COUNT: AtomicUsize = AtomicUsize::new(0);
static LAST: AtomicI32 = AtomicI32::new(0);
static INSTALL: Once = Once::new();

/// Start listening for SIGINT, SIGTERM and SIGHUP (idempotent).
pub(crate) fn install() {
    INSTALL.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
            Ok(mut signals) => {
                std::thread::spawn(move || {
                    for sig in signals.forever() {
                        // The terminal is gone: stopped as by SIGTERM (forwarded as SIGTERM).
                        let sig = if sig == SIGHUP { SIGTERM } else { sig };
                        LAST.store(sig, Ordering::SeqCst);
                        COUNT.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
            Err(e) => tracing::warn!("cannot listen for Ctrl-C: {e}"),
        }
    });
}

/// How many signals arrived so far.
pub(crate) fn count() -> usize {
    COUNT.load(Ordering::SeqCst)
}

/// The last signal received (SIGINT or SIGTERM), 0 when none.
pub(crate) fn last() -> i32 {
    LAST.load(Ordering::SeqCst)
}

/// Whether the user asked to stop.
pub(crate) fn interrupted() -> bool {
    count() > 0
}
