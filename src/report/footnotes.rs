//! The manager's summary cites its files as footnotes: the findings' sentences carry their
//! sources in parentheses (kernels.md keeps them there, for engineers), and a reader of the
//! summary gets the sentence without file names and the files once, at the end.

use std::collections::HashMap;

/// Sources moved out of sentences, numbered in the order they are first cited.
#[derive(Default)]
pub(crate) struct Footnotes {
    notes: Vec<String>,
    by_text: HashMap<String, usize>,
}

impl Footnotes {
    /// `text` with every parenthesised source (a part that starts with a file of the run
    /// directory) replaced by a footnote mark; table rows are left alone (their cells name
    /// no sources, and a workload's command line may hold parentheses and paths).
    pub(crate) fn cite_in(&mut self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for line in text.split_inclusive('\n') {
            match line.starts_with('|') {
                true => out.push_str(line),
                false => out.push_str(&self.line(line)),
            }
        }
        out
    }

    /// The footnotes as Markdown, or nothing when none was cited.
    pub(crate) fn render(&self) -> String {
        if self.notes.is_empty() {
            return String::new();
        }
        let mut s = String::from("## Sources\n\n");
        for (i, n) in self.notes.iter().enumerate() {
            s.push_str(&format!("[^{}]: {n}\n", i + 1));
        }
        s
    }

    fn mark(&mut self, note: &str) -> String {
        let n = match self.by_text.get(note) {
            Some(&n) => n,
            None => {
                self.notes.push(note.to_string());
                self.by_text.insert(note.to_string(), self.notes.len());
                self.notes.len()
            }
        };
        format!("[^{n}]")
    }

    /// One line: innermost parenthesised groups outside code spans are rewritten. A code
    /// span (a run of backticks to the next run of as many) and a backslash-escaped character
    /// are copied as they are: a name from the workload, quoted or escaped, is never a group.
    fn line(&mut self, line: &str) -> String {
        let mut out = String::with_capacity(line.len());
        let mut open: Option<usize> = None;
        let mut i = 0;
        while let Some(c) = line[i..].chars().next() {
            let verbatim = match c {
                '\\' => line[i + 1..].chars().next().map_or(1, |n| 1 + n.len_utf8()),
                '`' => code_span(&line[i..]),
                '(' => {
                    out.push_str(&line[open.unwrap_or(i)..i]);
                    open = Some(i);
                    i += 1;
                    continue;
                }
                ')' if open.is_some() => {
                    let o = open.take().unwrap_or(i);
                    let g = self.group(&line[o + 1..i]);
                    // A mark alone sits on the word it cites: "busy 3%[^1]".
                    if g.starts_with("[^") {
                        out.truncate(out.trim_end().len());
                    }
                    out.push_str(&g);
                    i += 1;
                    continue;
                }
                c => c.len_utf8(),
            };
            if open.is_none() {
                out.push_str(&line[i..i + verbatim]);
            }
            i += verbatim;
        }
        if let Some(o) = open {
            out.push_str(&line[o..]);
        }
        out
    }

    /// A group's text, "(…)" again, without its source parts, and their footnote.
    fn group(&mut self, inner: &str) -> String {
        let (sources, rest): (Vec<&str>, Vec<&str>) = inner.split("; ").partition(|p| is_source(p));
        if sources.is_empty() {
            return format!("({inner})");
        }
        let mark = self.mark(&sources.join("; "));
        match rest.is_empty() {
            true => mark,
            false => format!("({}){mark}", rest.join("; ")),
        }
    }
}

/// The length of the code span `text` starts with (CommonMark: a run of backticks up to the
/// next run of exactly as many), or of its run of backticks alone where none closes it.
fn code_span(text: &str) -> usize {
    let run = text.len() - text.trim_start_matches('`').len();
    let mut at = run;
    while let Some(found) = text[at..].find('`') {
        let start = at + found;
        let len = text[start..].len() - text[start..].trim_start_matches('`').len();
        if len == run {
            return start + len;
        }
        at = start + len;
    }
    run
}

/// Whether `rest`, the text after a `(`, would read as a source of the run directory: where
/// it is a workload's text, [`super::fmt::md`] escapes that `(` so no footnote is made of it.
pub(crate) fn opens_source(rest: &str) -> bool {
    is_source(rest.split([')', ';']).next().unwrap_or(rest))
}

/// A part of a citation that names a file of the run directory first ("nsys/run.sqlite",
/// "kernels.md, \"Where the wall time goes\"", "status.json `passes...`").
fn is_source(part: &str) -> bool {
    let first = part.split_whitespace().next().unwrap_or("");
    let word = first.trim_matches(|c: char| matches!(c, '`' | '"' | ',' | ':' | '.'));
    let ext = [".sqlite", ".csv", ".md", ".json", ".txt", ".svg", ".log"];
    ext.iter().any(|e| word.ends_with(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_become_numbered_footnotes_and_repeat_their_number() {
        let mut f = Footnotes::default();
        let s = f.cite_in(
            "Busy 3% (nsys/run.sqlite). Bound (rule `x`, `stage2 explain x`; ncu/decode_raw.csv).\nAgain (nsys/run.sqlite) and (CPU-bound; kernels.md, \"Where the wall time goes\").\n| a (b/c.csv) |\n",
        );
        assert_eq!(
            s,
            "Busy 3%[^1]. Bound (rule `x`, `stage2 explain x`)[^2].\nAgain[^1] and (CPU-bound)[^3].\n| a (b/c.csv) |\n"
        );
        assert_eq!(
            f.render(),
            "## Sources\n\n[^1]: nsys/run.sqlite\n[^2]: ncu/decode_raw.csv\n[^3]: kernels.md, \"Where the wall time goes\"\n"
        );
    }

    /// A range name is one opaque unit: inside its code span a "(nsys/run.sqlite)" is the
    /// name's, not a source, and the backticks it holds (its fence is longer) or an escaped one
    /// outside a code span leave the rest of the line footnoted.
    #[test]
    fn names_in_code_spans_or_escaped_are_never_sources() {
        let mut f = Footnotes::default();
        let name = crate::text::code("de`c (nsys/run.sqlite) *x*");
        let escaped = super::super::fmt::md("a` (nsys/run.sqlite)");
        let s = f.cite_in(&format!(
            "Busy in {name} 3% (nsys/run.sqlite); {escaped} ran (kernels.md, \"Per instance\").\n"
        ));
        assert_eq!(
            s,
            "Busy in ``de`c (nsys/run.sqlite) *x*`` 3%[^1]; a\\` \\(nsys/run.sqlite\\) ran[^2].\n"
        );
        assert_eq!(
            f.render(),
            "## Sources\n\n[^1]: nsys/run.sqlite\n[^2]: kernels.md, \"Per instance\"\n"
        );
        // A run of backticks that nothing closes is text: the group after it is cited.
        let mut f = Footnotes::default();
        assert_eq!(f.cite_in("a ``b (x.csv)"), "a ``b[^1]");
    }

    #[test]
    fn groups_without_a_source_and_code_spans_are_kept() {
        let mut f = Footnotes::default();
        let t = "Run `generate(x=1)` (3 kinds; \"What to look at next\") (unclosed";
        assert_eq!(f.cite_in(t), t);
        assert_eq!(f.render(), "");
    }
}
