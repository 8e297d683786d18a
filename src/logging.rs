//! Progress and diagnostics on stderr, in one voice: every line is `stage2: MESSAGE`, or
//! `stage2: warning: ...` / `stage2: error: ...` / `stage2: debug: ...` for the other levels,
//! written through [`crate::term::line`] so a live progress line is cleared first.

use std::fmt::Write as _;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

pub fn init(quiet: bool, verbose: u8) {
    let level = match (quiet, verbose) {
        (true, _) => "warn",
        (false, 0) => "info",
        (false, 1) => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_env("STAGE2_LOG").unwrap_or_else(|_| EnvFilter::new(level));
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(Lines)
        .try_init();
}

/// `stage2: ` and, for every level but info, the level's word.
pub fn prefix(level: Level) -> String {
    let word = match level {
        Level::ERROR => crate::term::paint("error:", "1;31"),
        Level::WARN => crate::term::paint("warning:", "1;33"),
        Level::INFO => return "stage2: ".to_string(),
        Level::DEBUG => crate::term::paint("debug:", "2"),
        Level::TRACE => crate::term::paint("trace:", "2"),
    };
    format!("stage2: {word} ")
}

/// An error line as every command ends one: `stage2: error: ...`.
pub fn error(message: &str) {
    let message = crate::term::visible(message);
    crate::term::line(&format!("{}{message}\n", prefix(Level::ERROR)));
}

/// Each event as one line (or a message's own lines) through the terminal's discipline.
struct Lines;

impl<S: Subscriber> Layer<S> for Lines {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let mut m = Message(String::new());
        event.record(&mut m);
        let text = crate::term::visible(&m.0);
        crate::term::line(&format!("{}{text}\n", prefix(*event.metadata().level())));
    }
}

/// The event's message, then any other fields as `name=value`.
struct Message(String);

impl Visit for Message {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.0.insert_str(0, value),
            name => {
                let _ = write!(self.0, " {name}={value}");
            }
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.0.insert_str(0, &format!("{value:?}")),
            name => {
                let _ = write!(self.0, " {name}={value:?}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_level_has_one_form() {
        assert_eq!(prefix(Level::INFO), "stage2: ");
        assert_eq!(prefix(Level::WARN), "stage2: warning: ");
        assert_eq!(prefix(Level::ERROR), "stage2: error: ");
    }
}
