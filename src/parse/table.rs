//! A CSV table read by header name, shared by the nsys and ncu parsers.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use crate::error::Error;

/// A streaming CSV reader whose columns are looked up by header name.
pub struct Table {
    pub path: PathBuf,
    reader: csv::Reader<Box<dyn Read>>,
    pub headers: Vec<String>,
    index: HashMap<String, usize>,
    /// The profilers end every file with a newline; one that does not was cut off.
    ends_with_newline: bool,
    last_line: u64,
}

impl Table {
    /// Open `path` and read its header row. An empty file, a header-less file or binary
    /// garbage is a parse error naming the file.
    pub fn open(path: &Path) -> Result<Self, Error> {
        let mut file =
            File::open(path).map_err(|e| Error::parse(path, None, format!("cannot open: {e}")))?;
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

    pub fn column(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// A column that must be there; the error lists what the file has.
    pub fn require(&self, name: &str) -> Result<usize, Error> {
        self.column(name).ok_or_else(|| {
            let have: Vec<&str> = self.headers.iter().take(12).map(String::as_str).collect();
            Error::parse(
                &self.path,
                Some(1),
                format!(
                    "missing column `{name}` (the header has: {}{})",
                    have.join(", "),
                    if self.headers.len() > 12 { ", ..." } else { "" }
                ),
            )
        })
    }

    /// The next record and its 1-based line number, or None at the end.
    pub fn next(&mut self, rec: &mut csv::StringRecord) -> Result<Option<u64>, Error> {
        match self.reader.read_record(rec) {
            Ok(true) => {
                self.last_line = rec.position().map(|p| p.line()).unwrap_or(0);
                if rec.len() != self.headers.len() {
                    return Err(Error::parse(
                        &self.path,
                        Some(self.last_line),
                        format!(
                            "row has {} fields but the header has {} (truncated file, or another delimiter?)",
                            rec.len(),
                            self.headers.len()
                        ),
                    ));
                }
                Ok(Some(self.last_line))
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

/// A cell that should hold a number but does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotANumber;

/// A number as the profilers print it: `1,536,000,000`, `3.456000`, `12.5%`; `n/a`, `-` and
/// the empty string are "no value".
pub fn parse_number(s: &str) -> Result<Option<f64>, NotANumber> {
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
    }
}
