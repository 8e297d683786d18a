//! A CSV table read by header name, shared by the nsys and ncu parsers.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use crate::error::Error;

/// A streaming CSV reader whose columns are looked up by header name.
pub(crate) struct Table {
    pub(crate) path: PathBuf,
    reader: csv::Reader<Box<dyn Read>>,
    pub(crate) headers: Vec<String>,
    index: HashMap<String, usize>,
    /// The profilers end every file with a newline; one that does not was cut off.
    ends_with_newline: bool,
    last_line: u64,
}

impl Table {
    /// Open `path` and read its header row. An empty file, a header-less file or binary
    /// garbage is a parse error naming the file.
    pub(crate) fn open(path: &Path) -> Result<Self, Error> {
        let mut file = crate::files::open_regular(path)
            .map_err(|e| Error::parse(path, None, format!("cannot open: {e}")))?;
        let ends_with_newline = last_byte(&mut file) == Some(b'\n');
        let reader: Box<dyn Read> = Box::new(BufReader::with_capacity(1 << 20, file));
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(reader);
        let mut first = csv::ByteRecord::new();
        let got = reader
            .read_byte_record(&mut first)
            .map_err(|e| csv_error(path, &e))?;
        if !got {
            return Err(Error::parse(path, Some(1), "empty file: no header row"));
        }
        let mut headers = Vec::with_capacity(first.len());
        for (i, field) in first.iter().enumerate() {
            let text = std::str::from_utf8(field).map_err(|_| {
                Error::parse(path, Some(1), "header row is not text (binary file?)")
            })?;
            // A UTF-8 byte-order mark sticks to the first header otherwise.
            let text = if i == 0 {
                text.trim_start_matches('\u{feff}')
            } else {
                text
            };
            headers.push(text.trim().to_string());
        }
        let mut index = HashMap::new();
        for (i, h) in headers.iter().enumerate() {
            if index.insert(h.clone(), i).is_some() && !h.is_empty() {
                return Err(Error::parse(
                    path,
                    Some(1),
                    format!("duplicate column `{h}` in the header row"),
                ));
            }
        }
        Ok(Table {
            path: path.to_path_buf(),
            reader,
            headers,
            index,
            ends_with_newline,
            last_line: 1,
        })
    }

    pub(crate) fn column(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// A column that must be there; the error lists what the file has.
    pub(crate) fn require(&self, name: &str) -> Result<usize, Error> {
        self.column(name).ok_or_else(|| {
            Error::parse(
                &self.path,
                Some(1),
                format!(
                    "missing column `{name}` (the header has: {})",
                    crate::text::listed(&self.headers, ", ")
                ),
            )
        })
    }

    /// The next record and its 1-based line number, or None at the end.
    pub(crate) fn next(&mut self, rec: &mut csv::StringRecord) -> Result<Option<u64>, Error> {
        let read = self.reader.read_record(rec);
        let line = rec.position().map(|p| p.line()).unwrap_or(0);
        self.checked(read, rec.len(), line)
    }

    /// The same as raw bytes: no UTF-8 check of fields the caller does not read as text.
    pub(crate) fn next_bytes(&mut self, rec: &mut csv::ByteRecord) -> Result<Option<u64>, Error> {
        let read = self.reader.read_byte_record(rec);
        let line = rec.position().map(|p| p.line()).unwrap_or(0);
        self.checked(read, rec.len(), line)
    }

    fn checked(
        &mut self,
        read: csv::Result<bool>,
        fields: usize,
        line: u64,
    ) -> Result<Option<u64>, Error> {
        match read {
            Ok(true) => {
                self.last_line = line;
                if fields != self.headers.len() {
                    return Err(Error::parse(
                        &self.path,
                        Some(line),
                        format!(
                            "row has {fields} fields but the header has {} (truncated file, or another delimiter?)",
                            self.headers.len()
                        ),
                    ));
                }
                Ok(Some(line))
            }
            Ok(false) if !self.ends_with_newline => Err(Error::parse(
                &self.path,
                Some(self.last_line),
                "the file ends in the middle of a row (truncated?)",
            )),
            Ok(false) => Ok(None),
            Err(e) => Err(csv_error(&self.path, &e)),
        }
    }
}

/// The file's last byte, leaving the read position at the start.
fn last_byte(file: &mut File) -> Option<u8> {
    use std::io::{Seek, SeekFrom};
    let mut b = [0u8; 1];
    file.seek(SeekFrom::End(-1)).ok()?;
    let got = file.read_exact(&mut b).ok().map(|_| b[0]);
    file.seek(SeekFrom::Start(0)).ok()?;
    got
}

fn csv_error(path: &Path, e: &csv::Error) -> Error {
    let line = e.position().map(|p| p.line());
    let msg = match e.kind() {
        csv::ErrorKind::Utf8 { .. } => "invalid UTF-8 (binary file?)".to_string(),
        _ => e.to_string(),
    };
    Error::parse(path, line, msg)
}

/// A number from raw CSV bytes, without allocating: `1,536,000,000` and `3.456000`; None for
/// anything else (`n/a`, text values such as `PolicySpread`, empty cells).
pub(crate) fn number_bytes(field: &[u8]) -> Option<f64> {
    let b = field.trim_ascii();
    if b.is_empty() {
        return None;
    }
    // Half the cells of a raw export are zero.
    if b == b"0" || b == b"0.000000" {
        return Some(0.0);
    }
    if let Some(v) = decimal_fast(b) {
        return Some(v);
    }
    if !b.contains(&b',') {
        return std::str::from_utf8(b).ok()?.parse().ok();
    }
    let mut buf = [0u8; 64];
    let mut n = 0;
    for &c in b.iter().filter(|c| **c != b',') {
        *buf.get_mut(n)? = c;
        n += 1;
    }
    std::str::from_utf8(&buf[..n]).ok()?.parse().ok()
}

/// Powers of ten that f64 holds exactly.
pub(super) const POW10: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// The common shapes of ncu's numbers (`3.456000`, `1,980,000`, `-2`) with at most 15
/// significant digits: the digits form an integer below 2^53 (exact in f64) and one division
/// by an exact power of ten rounds correctly, so the result equals `str::parse`'s. Anything
/// else (exponents, longer numbers) takes the general path. Nearly every cell of a raw export
/// is a number, so this is most of the parse time.
fn decimal_fast(b: &[u8]) -> Option<f64> {
    let (neg, s) = match b.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, b),
    };
    // Integer part (thousands separators allowed), then an optional fraction. Two tight loops
    // and one length check at the end: wrapping arithmetic is fine, long numbers are refused.
    let (mut m, mut n, mut i) = (0u64, 0usize, 0usize);
    while let Some(&c) = s.get(i) {
        let d = c.wrapping_sub(b'0');
        if d < 10 {
            m = m.wrapping_mul(10).wrapping_add(u64::from(d));
            n += 1;
        } else if c != b',' {
            break;
        }
        i += 1;
    }
    let mut frac = 0usize;
    if let Some(&c) = s.get(i) {
        if c != b'.' {
            return None;
        }
        for &c in &s[i + 1..] {
            let d = c.wrapping_sub(b'0');
            if d >= 10 {
                return None;
            }
            m = m.wrapping_mul(10).wrapping_add(u64::from(d));
            frac += 1;
        }
    }
    n += frac;
    if n == 0 || n > 15 {
        return None;
    }
    let v = m as f64 / POW10[frac];
    Some(if neg { -v } else { v })
}

pub(crate) use crate::files::shown;

/// A cell that should hold a number but does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NotANumber;

/// A number as the profilers print it: `1,536,000,000`, `3.456000`, `12.5%`; `n/a`, `-` and
/// the empty string are "no value".
pub(crate) fn parse_number(s: &str) -> Result<Option<f64>, NotANumber> {
    let t = s.trim();
    if t.is_empty() || t.eq_ignore_ascii_case("n/a") || t == "-" || t == "N/A" {
        return Ok(None);
    }
    let cleaned: String = t
        .trim_end_matches('%')
        .chars()
        .filter(|c| *c != ',')
        .collect();
    cleaned.parse::<f64>().map(Some).map_err(|_| NotANumber)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_with_separators_and_gaps() {
        assert_eq!(parse_number("1,536,000,000"), Ok(Some(1.536e9)));
        assert_eq!(parse_number(" 3.5 "), Ok(Some(3.5)));
        assert_eq!(parse_number("n/a"), Ok(None));
        assert_eq!(parse_number(""), Ok(None));
        assert_eq!(parse_number("12%"), Ok(Some(12.0)));
        assert!(parse_number("PolicySpread").is_err());
        assert_eq!(number_bytes(b"1,536,000,000"), Some(1.536e9));
        assert_eq!(number_bytes(b" 3.456000 "), Some(3.456));
        assert_eq!(number_bytes(b"n/a"), None);
        assert_eq!(number_bytes(b""), None);
        assert_eq!(number_bytes(b"PolicySpread"), None);
        assert_eq!(number_bytes(b"-0.5"), Some(-0.5));
        assert_eq!(number_bytes(b"1e3"), Some(1000.0));
        assert_eq!(
            number_bytes(b"1,056,841,481,481,481.62"),
            Some(1_056_841_481_481_481.6)
        );
        assert_eq!(number_bytes(b"."), None);
        assert_eq!(number_bytes(b"1.2.3"), None);
    }

    proptest::proptest! {
        #[test]
        fn the_fast_path_equals_std_parse(m in 0u64..1_000_000_000_000_000, frac in 0usize..15, neg: bool) {
            let digits = m.to_string();
            let text = if frac == 0 || frac >= digits.len() {
                digits.clone()
            } else {
                format!("{}.{}", &digits[..digits.len() - frac], &digits[digits.len() - frac..])
            };
            let text = if neg { format!("-{text}") } else { text };
            proptest::prop_assert_eq!(number_bytes(text.as_bytes()), text.parse::<f64>().ok());
        }
    }
}
