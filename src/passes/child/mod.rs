//! Running a child process: the one runner every pass and probe goes through (timeouts,
//! process groups, output drained and teed), the signals it forwards, and the live progress
//! line a pass shows while its child runs.

pub(crate) mod process;
pub(crate) mod progress;
pub(crate) mod signals;
