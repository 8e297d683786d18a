//! The terminal: whether stderr gets colour (`--color`, `NO_COLOR`, `CLICOLOR_FORCE`), and one
//! discipline for every line stage2 writes there. A live progress line may be on screen; any
//! other line clears it first and redraws it after, so the two never share a row.

use std::io::Write;
use std::sync::{Mutex, OnceLock};

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour on a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it anywhere.
    #[default]
    Auto,
    Always,
    Never,
}

static COLOR: OnceLock<bool> = OnceLock::new();
/// The live line on screen (a terminal only), and the lock every stderr write takes.
static LIVE: Mutex<Option<String>> = Mutex::new(None);

/// What `auto` means here: the environment's wishes, then whether stderr is a terminal.
pub fn decide(choice: ColorChoice, env: impl Fn(&str) -> Option<String>, tty: bool) -> bool {
    let set = |k: &str| env(k).is_some_and(|v| !v.is_empty());
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto if set("NO_COLOR") => false,
        ColorChoice::Auto if env("CLICOLOR_FORCE").is_some_and(|v| !v.is_empty() && v != "0") => {
            true
        }
        ColorChoice::Auto => tty,
    }
}

/// Settle the colour choice once, at start-up.
pub fn init(choice: ColorChoice) {
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let on = decide(choice, |k| std::env::var(k).ok(), tty);
    let _ = COLOR.set(on);
}

pub fn color() -> bool {
    *COLOR.get().unwrap_or(&false)
}

/// `text` in `style` (an SGR code such as "1;31") when colour is on.
pub fn paint(text: &str, style: &str) -> String {
    match color() {
        true => format!("\x1b[{style}m{text}\x1b[0m"),
        false => text.to_string(),
    }
}

/// `text` with control characters other than newline and tab written out (`\u{1b}`): a name
/// from the workload (an NVTX range, a kernel) cannot drive the terminal or a viewer.
pub fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    if !text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return std::borrow::Cow::Borrowed(text);
    }
    text.chars()
        .map(|c| match c.is_control() && c != '\n' && c != '\t' {
            true => c.escape_unicode().to_string(),
            false => c.to_string(),
        })
        .collect::<String>()
        .into()
}

/// Write `text` (one or more whole lines, ending in '\n') to stderr: the live line cleared
/// first and redrawn after. Errors are ignored: there is nowhere left to report them.
pub fn line(text: &str) {
    let text = crate::secrets::scrub(text);
    let live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    let mut err = std::io::stderr().lock();
    if live.is_some() {
        let _ = err.write_all(b"\r\x1b[2K");
    }
    let _ = err.write_all(text.as_bytes());
    if let Some(l) = live.as_deref() {
        let _ = err.write_all(l.as_bytes());
    }
    let _ = err.flush();
}

/// Show `text` as the live line (redrawn in place), or clear it (None).
pub fn live(text: Option<&str>) {
    let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(b"\r\x1b[2K");
    if let Some(t) = text {
        let _ = err.write_all(t.as_bytes());
    }
    let _ = err.flush();
    *live = text.map(str::to_string);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_follows_the_flag_then_the_environment_then_the_terminal() {
        let none = |_: &str| None;
        let no_color = |k: &str| (k == "NO_COLOR").then(|| "1".to_string());
        let force = |k: &str| (k == "CLICOLOR_FORCE").then(|| "1".to_string());
        let force0 = |k: &str| (k == "CLICOLOR_FORCE").then(|| "0".to_string());
        assert!(decide(ColorChoice::Auto, none, true));
        assert!(!decide(ColorChoice::Auto, none, false));
        assert!(!decide(ColorChoice::Auto, no_color, true));
        assert!(decide(ColorChoice::Auto, force, false));
        assert!(!decide(ColorChoice::Auto, force0, false));
        assert!(decide(ColorChoice::Always, no_color, false));
        assert!(!decide(ColorChoice::Never, force, true));
    }
}
