//! Text for messages and reports: a list from the input capped with a count of the rest, and
//! a name quoted as a Markdown code span that nothing inside it can break.

use std::fmt::Display;

/// At most this many items of one list in a message; the rest are counted.
pub(crate) const LISTED: usize = 12;
/// Each item of such a list at most this many characters: a name from the workload can be
/// megabytes.
const ITEM_CHARS: usize = 200;

/// `items` joined with `sep`, the first [`LISTED`] of them, then "and N more": a workload
/// with thousands of NVTX ranges (XLA's compiles) made error lines of megabytes. For lists
/// from the input; a list stage2 holds itself (a key's allowed values) is shown whole.
pub(crate) fn listed<T: Display>(items: impl IntoIterator<Item = T>, sep: &str) -> String {
    let mut shown = Vec::new();
    let mut rest = 0usize;
    for item in items {
        match shown.len() < LISTED {
            true => shown.push(cut(&item.to_string())),
            false => rest += 1,
        }
    }
    let mut out = shown.join(sep);
    if rest > 0 {
        out.push_str(&format!(" and {rest} more"));
    }
    out
}

fn cut(s: &str) -> String {
    match s.char_indices().nth(ITEM_CHARS) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// `s` as a Markdown code span, shown as it is: fenced with one backtick more than its longest
/// run of them, padded where a backtick or a space at its edges would join the fence or be
/// stripped. A code span takes no backslash escapes, so none are added; line breaks become
/// spaces and other control characters are written out (`\u{1b}`). In a table cell a `|`
/// still needs `\|` (GitHub's tables split on it first).
pub(crate) fn code(s: &str) -> String {
    let mut text = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' | '\r' => text.push(' '),
            c if c.is_control() => text.extend(c.escape_unicode()),
            c => text.push(c),
        }
    }
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    if text.is_empty() {
        return "` `".to_string();
    }
    let pad = text.starts_with('`')
        || text.ends_with('`')
        || (text.starts_with(' ') && text.ends_with(' ') && !text.trim().is_empty());
    match pad {
        true => format!("{fence} {text} {fence}"),
        false => format!("{fence}{text}{fence}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_list_shows_its_first_items_and_counts_the_rest() {
        let names: Vec<String> = (0..5000).map(|i| format!("r{i}")).collect();
        let text = listed(&names, ", ");
        assert!(text.starts_with("r0, r1, "), "{text}");
        assert!(text.ends_with("r11 and 4988 more"), "{text}");
        assert_eq!(listed(["a", "b"], "; "), "a; b");
        assert_eq!(listed(Vec::<String>::new(), ", "), "");
        let huge = "x".repeat(1_000_000);
        assert!(listed([&huge], ", ").chars().count() <= ITEM_CHARS + 1);
    }

    #[test]
    fn a_code_span_holds_any_name_as_it_is() {
        assert_eq!(code("decode"), "`decode`");
        // No backslash escapes: inside a code span they would show.
        assert_eq!(code("a*b [c] <d> & e\\f"), "`a*b [c] <d> & e\\f`");
        assert_eq!(code("de`c"), "``de`c``");
        assert_eq!(code("a``b`"), "``` a``b` ```");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code(" x "), "`  x  `");
        assert_eq!(code("a\nb\u{1b}"), "`a b\\u{1b}`");
        assert_eq!(code(""), "` `");
    }
}
