//! Ctrl-C and SIGTERM are recorded here rather than killing stage2, so the running profiler can
//! be told to finalize its report and the run directory stays consistent.

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::Once;

static COUNT: AtomicUsize = AtomicUsize::new(0);
static LAST: AtomicI32 = AtomicI32::new(0);
static INSTALL: Once = Once::new();

/// Start listening for SIGINT and SIGTERM (idempotent).
pub(crate) fn install() {
    INSTALL.call_once(|| {
        use signal_hook::consts::{SIGINT, SIGTERM};
        match signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) {
            Ok(mut signals) => {
                std::thread::spawn(move || {
                    for sig in signals.forever() {
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
