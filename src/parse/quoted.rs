//! A fast reader for CSV in which every field is quoted, as `ncu --csv` writes it. A raw
//! export is ~1,300 short quoted numbers per row, so per-cell cost is what matters: this reader
//! splits a row and parses each number in the same pass over its bytes (the csv crate's state
//! machine and then a separate number parse were 2.5x slower; simd-csv's tokenizer alone only
//! ~1.2x faster, since cells are ~7 bytes). It accepts only that one shape: any other
//! (an unquoted field, text after a closing quote, a newline inside quotes, no final newline)
//! makes it give up, and the caller reads the file with the general parser, which also
//! reports what is wrong with it.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fs::File;
use std::io::Read;

use super::table::POW10;

/// What a cell holds, as far as the fast pass could tell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value {
    /// A number in one of ncu's plain shapes (`3.456000`, `1,980,000`, `-2`), equal to what
    /// `table::number_bytes` gives for it.
    Number(f64),
    Empty,
    /// Anything else (text, exponents, long numbers, spaces): ask `number_bytes`.
    Other,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Cell {
    start: u32,
    end: u32,
    /// Holds a doubled quote (`""`), so its text needs unescaping.
    escaped: bool,
    pub(crate) value: Value,
}

impl Cell {
    /// The cell's bytes inside the quotes, escapes undone.
    pub(crate) fn text<'a>(&self, line: &'a [u8]) -> Cow<'a, [u8]> {
        let raw = &line[self.start as usize..self.end as usize];
        if !self.escaped {
            return Cow::Borrowed(raw);
        }
        let mut out = Vec::with_capacity(raw.len());
        let mut i = 0;
        while i < raw.len() {
            out.push(raw[i]);
            // Inside a cell a quote only comes doubled.
            i += if raw[i] == b'"' { 2 } else { 1 };
        }
        Cow::Owned(out)
    }

    pub(crate) fn raw<'a>(&self, line: &'a [u8]) -> &'a [u8] {
        &line[self.start as usize..self.end as usize]
    }
}

/// Split one line (without its line end) into `cells`; false when the line is not a row of
/// quoted fields.
fn scan(line: &[u8], cells: &mut Vec<Cell>) -> bool {
    cells.clear();
    if line.len() >= u32::MAX as usize {
        return false;
    }
    let mut i = 0;
    loop {
        if line.get(i) != Some(&b'"') {
            return false;
        }
        i += 1;
        let start = i;
        // The number grammar of `table::decimal_fast`: an optional leading '-', digits with
        // thousands separators, an optional '.' and fraction digits; at most 15 digits.
        let neg = line.get(i) == Some(&b'-');
        if neg {
            i += 1;
        }
        let (mut m, mut digits, mut frac) = (0u64, 0usize, 0usize);
        let (mut in_frac, mut plain, mut escaped) = (false, true, false);
        loop {
            let Some(&c) = line.get(i) else {
                return false; // the quote never closes on this line
            };
            let d = c.wrapping_sub(b'0');
            if d < 10 {
                m = m.wrapping_mul(10).wrapping_add(u64::from(d));
                digits += 1;
                frac += usize::from(in_frac);
            } else if c == b'"' {
                if line.get(i + 1) != Some(&b'"') {
                    break;
                }
                escaped = true;
                plain = false;
                i += 1;
            } else if c == b',' && !in_frac {
            } else if c == b'.' && !in_frac {
                in_frac = true;
            } else {
                plain = false;
            }
            i += 1;
        }
        let end = i;
        let value = if end == start {
            Value::Empty
        } else if plain && digits > 0 && digits <= 15 {
            let v = m as f64 / POW10[frac];
            Value::Number(if neg { -v } else { v })
        } else {
            Value::Other
        };
        cells.push(Cell {
            start: start as u32,
            end: end as u32,
            escaped,
            value,
        });
        i += 1; // the closing quote
        match line.get(i) {
            None => return true,
            Some(b',') => i += 1,
            Some(_) => return false,
        }
    }
}

/// Lines of a file, read in large blocks; memory stays at one block (or the longest line).
struct Lines {
    file: File,
    buf: Vec<u8>,
    pos: usize,
    filled: usize,
    eof: bool,
}

/// Lines longer than this are left to the general parser, which streams them.
const MAX_LINE: usize = 32 << 20;

enum Line<'a> {
    Row(&'a [u8]),
    End,
    /// The last line has no newline, or a line is longer than `MAX_LINE`.
    Unusual,
}

impl Lines {
    fn new(file: File) -> Self {
        Lines {
            file,
            buf: vec![0; 1 << 20],
            pos: 0,
            filled: 0,
            eof: false,
        }
    }

    fn next_line(&mut self) -> std::io::Result<Line<'_>> {
        loop {
            if let Some(n) = memchr::memchr(b'\n', &self.buf[self.pos..self.filled]) {
                let start = self.pos;
                self.pos += n + 1;
                let line = &self.buf[start..start + n];
                return Ok(Line::Row(line.strip_suffix(b"\r").unwrap_or(line)));
            }
            if self.eof {
                return Ok(if self.pos == self.filled {
                    Line::End
                } else {
                    Line::Unusual
                });
            }
            // Keep the partial line, then read more behind it.
            self.buf.copy_within(self.pos..self.filled, 0);
            self.filled -= self.pos;
            self.pos = 0;
            if self.filled == self.buf.len() {
                if self.buf.len() >= MAX_LINE {
                    return Ok(Line::Unusual);
                }
                self.buf.resize(self.buf.len() * 2, 0);
            }
            let n = self.file.read(&mut self.buf[self.filled..])?;
            self.filled += n;
            self.eof = n == 0;
        }
    }
}

/// A file of quoted rows: a header of unique names, then rows of its width.
pub(crate) struct QuotedRows {
    lines: Lines,
    pub(crate) headers: Vec<String>,
}

pub(crate) enum Row<'a> {
    /// The line; its cells are in the `cells` passed to `next`.
    Cells(&'a [u8]),
    End,
    /// Not the shape this reader takes: read the file with the general parser.
    GiveUp,
}

impl QuotedRows {
    /// None where the header row is not quoted UTF-8 text of unique names (the general
    /// parser says what is wrong with it).
    pub(crate) fn open(file: File) -> std::io::Result<Option<Self>> {
        let mut lines = Lines::new(file);
        let mut cells = Vec::new();
        let Line::Row(header) = lines.next_line()? else {
            return Ok(None);
        };
        if !scan(header, &mut cells) {
            return Ok(None);
        }
        let mut headers = Vec::with_capacity(cells.len());
        let mut seen = HashSet::new();
        for c in &cells {
            let Ok(h) = std::str::from_utf8(&c.text(header)).map(|h| h.trim().to_string()) else {
                return Ok(None);
            };
            if !h.is_empty() && !seen.insert(h.clone()) {
                return Ok(None);
            }
            headers.push(h);
        }
        Ok(Some(QuotedRows { lines, headers }))
    }

    pub(crate) fn column(&self, name: &str) -> Option<usize> {
        self.headers.iter().position(|h| h == name)
    }

    pub(crate) fn next(&mut self, cells: &mut Vec<Cell>) -> std::io::Result<Row<'_>> {
        let width = self.headers.len();
        Ok(match self.lines.next_line()? {
            Line::Row(l) if scan(l, cells) && cells.len() == width => Row::Cells(l),
            Line::End => Row::End,
            _ => Row::GiveUp,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::table::number_bytes;

    fn cells(line: &str) -> Option<Vec<(String, Value)>> {
        let mut c = Vec::new();
        scan(line.as_bytes(), &mut c).then(|| {
            c.iter()
                .map(|c| {
                    let t = String::from_utf8(c.text(line.as_bytes()).into_owned()).unwrap();
                    (t, c.value)
                })
                .collect()
        })
    }

    #[test]
    fn quoted_rows_split_and_parse() {
        let got =
            cells(r#""1,980,000","3.456000","","PolicySpread","a ""b"" c","-2","1e3""#).unwrap();
        let want = [
            ("1,980,000", Value::Number(1_980_000.0)),
            ("3.456000", Value::Number(3.456)),
            ("", Value::Empty),
            ("PolicySpread", Value::Other),
            (r#"a "b" c"#, Value::Other),
            ("-2", Value::Number(-2.0)),
            ("1e3", Value::Other),
        ];
        assert_eq!(got.len(), want.len());
        for ((t, v), (wt, wv)) in got.iter().zip(want) {
            assert_eq!((t.as_str(), *v), (wt, wv));
        }
        assert_eq!(cells(r#""""""#).unwrap()[0].0, "\"");
    }

    #[test]
    fn other_shapes_are_refused() {
        for line in [
            "a,b",
            r#""a",b"#,
            r#""a"x,"b""#,
            r#""a","#,
            r#""unclosed"#,
            "",
            "\u{feff}\"a\"",
        ] {
            assert!(cells(line).is_none(), "{line:?}");
        }
    }

    proptest::proptest! {
        /// Every cell the fast pass calls a number is the number `number_bytes` reads, and a
        /// cell it cannot read is one it hands to `number_bytes`.
        #[test]
        fn numbers_agree_with_number_bytes(text in "[-0-9,.]{0,18}|[-0-9,. eE+]{0,8}") {
            let line = format!("\"{text}\"");
            let mut c = Vec::new();
            proptest::prop_assert!(scan(line.as_bytes(), &mut c));
            match c[0].value {
                Value::Number(v) => proptest::prop_assert_eq!(
                    Some(v.to_bits()), number_bytes(text.as_bytes()).map(f64::to_bits)),
                Value::Empty => proptest::prop_assert!(text.is_empty()),
                Value::Other => {}
            }
        }
    }
}
