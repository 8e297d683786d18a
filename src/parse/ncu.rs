//! `ncu --import REP --csv --page raw`: a header row, a units row, then one row per profiled
//! launch. Streamed and aggregated per kernel name, so memory follows the number of distinct
//! kernels, not the file size.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::quoted::{scan, Line, Lines, Value};
use super::table::{number_bytes, Table};
use crate::error::Error;

pub const COL_NAME: &str = "Kernel Name";
pub const COL_PUSHPOP: &str =
    "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg";
pub const COL_STARTEND: &str =
    "Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg";
pub const TIME: &str = "gpu__time_duration.sum";
pub const SM_PCT: &str = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
pub const DRAM_PCT: &str = "dram__throughput.avg.pct_of_peak_sustained_elapsed";

/// All profiled launches of one kernel name, metrics averaged over them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NcuKernel {
    pub name: String,
    /// The mangled name, from the `--print-kernel-base mangled` import of the same report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mangled: Option<String>,
    /// The `ID` of the kernel's first profiled launch, to find it in another import.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_id: Option<String>,
    pub nvtx_range: Option<String>,
    pub instances: u64,
    /// Mean GPU time of one launch under ncu, in ns.
    pub time_ns: Option<f64>,
    pub block: Option<String>,
    pub grid: Option<String>,
    /// Every numeric metric present, mean over the launches.
    pub metrics: BTreeMap<String, f64>,
}

impl NcuKernel {
    pub fn metric(&self, name: &str) -> Option<f64> {
        self.metrics.get(name).copied()
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct NcuReport {
    /// In order of first appearance (ncu's launch order).
    pub kernels: Vec<NcuKernel>,
    pub units: BTreeMap<String, String>,
    /// Launch rows read.
    pub rows: u64,
}

/// What each column of a raw export is: identity text or a metric.
struct Columns {
    headers: Vec<String>,
    id: Option<usize>,
    pushpop: Option<usize>,
    startend: Option<usize>,
    block: Option<usize>,
    grid: Option<usize>,
    is_metric: Vec<bool>,
}

impl Columns {
    fn new(headers: Vec<String>) -> Self {
        let col = |n: &str| headers.iter().position(|h| h == n);
        // Identity columns are text, not metrics.
        let is_metric = headers
            .iter()
            .map(|h| {
                !(matches!(
                    h.as_str(),
                    "ID" | "Process ID"
                        | "Process Name"
                        | "Host Name"
                        | "Context"
                        | "Stream"
                        | "Device"
                        | "CC"
                        | COL_NAME
                        | COL_PUSHPOP
                        | COL_STARTEND
                        | "Block Size"
                        | "Grid Size"
                ) || h.starts_with("device__attribute"))
            })
            .collect();
        Columns {
            id: col("ID"),
            pushpop: col(COL_PUSHPOP),
            startend: col(COL_STARTEND),
            block: col("Block Size"),
            grid: col("Grid Size"),
            is_metric,
            headers,
        }
    }
}

/// All launches of one kernel name so far: metric sums and how many cells each sum has.
struct Acc {
    name: String,
    first_id: Option<String>,
    nvtx: Option<String>,
    block: Option<String>,
    grid: Option<String>,
    count: u64,
    sums: Vec<(f64, u32)>,
}

/// The per-kernel aggregation both readers feed, row by row.
struct Kernels {
    cols: Columns,
    units: BTreeMap<String, String>,
    index: HashMap<String, usize>,
    accs: Vec<Acc>,
    rows: u64,
}

impl Kernels {
    fn new(cols: Columns) -> Self {
        Kernels {
            cols,
            units: BTreeMap::new(),
            index: HashMap::new(),
            accs: Vec::new(),
            rows: 0,
        }
    }

    /// The units row: `us`, `%`, `Gbyte`, ... under each metric.
    fn set_units<'a>(&mut self, cells: impl Iterator<Item = Cow<'a, [u8]>>) {
        for (h, u) in self.cols.headers.iter().zip(cells) {
            if !u.is_empty() {
                self.units
                    .insert(h.clone(), String::from_utf8_lossy(&u).into_owned());
            }
        }
    }

    /// The accumulator of the row's kernel, made from the row's identity cells on first sight.
    fn launch(&mut self, name: &str, text: impl Fn(usize) -> String) -> &mut Acc {
        self.rows += 1;
        let i = match self.index.get(name) {
            Some(i) => *i,
            None => {
                let c = &self.cols;
                self.accs.push(Acc {
                    name: name.to_string(),
                    first_id: c.id.map(&text),
                    nvtx: c
                        .pushpop
                        .and_then(|col| range_of(&text(col)))
                        .or_else(|| c.startend.and_then(|col| range_of(&text(col)))),
                    block: c.block.map(&text),
                    grid: c.grid.map(&text),
                    count: 0,
                    sums: vec![(0.0, 0); c.headers.len()],
                });
                self.index.insert(name.to_string(), self.accs.len() - 1);
                self.accs.len() - 1
            }
        };
        let acc = &mut self.accs[i];
        acc.count += 1;
        acc
    }

    fn finish(self) -> NcuReport {
        let headers = self.cols.headers;
        let time_scale = self.units.get(TIME).map(|u| ns_per(u)).unwrap_or(Some(1.0));
        let kernels = self
            .accs
            .into_iter()
            .map(|a| {
                let metrics: BTreeMap<String, f64> = a
                    .sums
                    .iter()
                    .enumerate()
                    .filter(|(_, (_, n))| *n > 0)
                    .map(|(c, (s, n))| (headers[c].clone(), s / f64::from(*n)))
                    .collect();
                let time_ns = metrics.get(TIME).zip(time_scale).map(|(v, k)| v * k);
                NcuKernel {
                    name: a.name,
                    mangled: None,
                    first_id: a.first_id,
                    nvtx_range: a.nvtx,
                    instances: a.count,
                    time_ns,
                    block: a.block,
                    grid: a.grid,
                    metrics,
                }
            })
            .collect();
        NcuReport {
            kernels,
            units: self.units,
            rows: self.rows,
        }
    }
}

fn add(sum: &mut (f64, u32), v: f64) {
    sum.0 += v;
    sum.1 += 1;
}

const NO_UNITS: &str =
    "no units row after the header: is this `ncu --import REPORT --csv --page raw` output?";

/// Read a raw export: the fast reader when the file has ncu's all-quoted shape, else the
/// general one (which also names what is wrong with a broken file).
pub fn read_raw(path: &Path) -> Result<NcuReport, Error> {
    let file =
        File::open(path).map_err(|e| Error::parse(path, None, format!("cannot open: {e}")))?;
    match read_quoted(file) {
        Ok(Some(report)) => Ok(report),
        Ok(None) => read_general(path),
        Err(e) => Err(Error::parse(path, None, format!("cannot read: {e}"))),
    }
}

/// The fast path (see `quoted`); None where the file strays from ncu's shape or from what the
/// general reader accepts, so that it reads the file again and reports the problem.
fn read_quoted(file: File) -> std::io::Result<Option<NcuReport>> {
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
        let Ok(h) = String::from_utf8(c.text(header).into_owned()) else {
            return Ok(None);
        };
        let h = h.trim().to_string();
        if !h.is_empty() && !seen.insert(h.clone()) {
            return Ok(None);
        }
        headers.push(h);
    }
    let Some(name_col) = headers.iter().position(|h| h == COL_NAME) else {
        return Ok(None);
    };
    let width = headers.len();
    let mut k = Kernels::new(Columns::new(headers));
    let is_metric = k.cols.is_metric.clone();
    let mut first = true;
    loop {
        let line = match lines.next_line()? {
            Line::Row(l) => l,
            Line::End => return Ok(Some(k.finish())),
            Line::Unusual => return Ok(None),
        };
        if !scan(line, &mut cells) || cells.len() != width {
            return Ok(None);
        }
        let name = cells[name_col].text(line);
        let Ok(name) = std::str::from_utf8(&name) else {
            return Ok(None);
        };
        if first != name.is_empty() {
            return Ok(None); // no units row, or an empty name: the general reader says which
        }
        if first {
            k.set_units(cells.iter().map(|c| c.text(line)));
            first = false;
            continue;
        }
        let acc = k.launch(name, |c| {
            String::from_utf8_lossy(&cells[c].text(line)).into_owned()
        });
        for ((cell, sum), metric) in cells.iter().zip(acc.sums.iter_mut()).zip(&is_metric) {
            if *metric {
                match cell.value {
                    Value::Number(v) => add(sum, v),
                    Value::Empty => {}
                    Value::Other => {
                        if let Some(v) = number_bytes(cell.raw(line)) {
                            add(sum, v)
                        }
                    }
                }
            }
        }
    }
}

/// The general path: any CSV the csv crate reads, every error with its line.
fn read_general(path: &Path) -> Result<NcuReport, Error> {
    let mut t = Table::open(path)?;
    let name_col = t.require(COL_NAME)?;
    let mut k = Kernels::new(Columns::new(t.headers.clone()));
    let is_metric = k.cols.is_metric.clone();
    let mut rec = csv::ByteRecord::new();
    let mut first = true;
    while let Some(line) = t.next_bytes(&mut rec)? {
        let name = std::str::from_utf8(rec.get(name_col).unwrap_or_default())
            .map_err(|_| Error::parse(path, Some(line), "`Kernel Name` is not UTF-8"))?;
        if first && !name.is_empty() {
            return Err(Error::parse(path, Some(line), NO_UNITS));
        }
        if first {
            k.set_units(rec.iter().map(Cow::Borrowed));
            first = false;
            continue;
        }
        if name.is_empty() {
            return Err(Error::parse(path, Some(line), "empty `Kernel Name`"));
        }
        let acc = k.launch(name, |c| {
            String::from_utf8_lossy(rec.get(c).unwrap_or_default()).into_owned()
        });
        for ((field, sum), metric) in rec.iter().zip(acc.sums.iter_mut()).zip(&is_metric) {
            // Text-valued metrics (e.g. PolicySpread) are not numbers and are left out.
            if *metric {
                if let Some(v) = number_bytes(field) {
                    add(sum, v);
                }
            }
        }
    }
    Ok(k.finish())
}

/// Give each kernel its mangled name from the `--print-kernel-base mangled` import of the same
/// report: rows there carry the same `ID`s.
pub fn attach_mangled(report: &mut NcuReport, mangled_csv: &Path) -> Result<(), Error> {
    let mut t = Table::open(mangled_csv)?;
    let id_col = t.require("ID")?;
    let name_col = t.require(COL_NAME)?;
    let wanted: HashMap<String, usize> = report
        .kernels
        .iter()
        .enumerate()
        .filter_map(|(i, k)| Some((k.first_id.clone()?, i)))
        .collect();
    let mut rec = csv::StringRecord::new();
    while t.next(&mut rec)?.is_some() {
        let id = rec.get(id_col).unwrap_or("");
        if let Some(i) = wanted.get(id) {
            report.kernels[*i].mangled = rec.get(name_col).map(str::to_string);
        }
    }
    Ok(())
}

/// Nanoseconds per unit of a time metric.
fn ns_per(unit: &str) -> Option<f64> {
    match unit.trim() {
        "ns" | "nsecond" => Some(1.0),
        "us" | "usecond" => Some(1e3),
        "ms" | "msecond" => Some(1e6),
        "s" | "second" => Some(1e9),
        _ => None,
    }
}

/// The range name in ncu's NVTX column: `641  "<default domain>:decode:none:..." ` -> decode.
fn range_of(cell: &str) -> Option<String> {
    let start = cell.find('"')?;
    let rest = &cell[start + 1..];
    let quoted = &rest[..rest.find('"').unwrap_or(rest.len())];
    let mut fields = quoted.split(':');
    let _domain = fields.next()?;
    fields
        .find(|f| !f.is_empty() && *f != "none")
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::data;

    #[test]
    fn reads_the_real_raw_export() {
        let r = read_raw(&data("ncu/decode_raw.csv")).unwrap();
        assert_eq!(r.rows, 29);
        assert_eq!(r.units.get(TIME).map(String::as_str), Some("us"));
        let first = &r.kernels[0];
        assert!(first
            .name
            .starts_with("void at::<unnamed>::indexSelectSmallIndex<"));
        assert_eq!(first.nvtx_range.as_deref(), Some("decode"));
        assert_eq!(first.time_ns, Some(3456.0));
        assert_eq!(first.block.as_deref(), Some("(128, 1, 1)"));
        assert!(first.metric(SM_PCT).is_some() && first.metric(DRAM_PCT).is_some());
        // Thousands separators: 1,980,000 kHz.
        assert_eq!(first.metric("launch__grid_size"), Some(4.0));
        // Three launches of one nvjet kernel aggregate into one record.
        let nvjet = r
            .kernels
            .iter()
            .find(|k| k.name == "nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN")
            .unwrap();
        assert_eq!(nvjet.instances, 3);
        assert_eq!(r.kernels.iter().map(|k| k.instances).sum::<u64>(), 29);
    }

    #[test]
    fn mangled_names_come_from_the_second_import() {
        let mut r = read_raw(&data("ncu/decode_raw.csv")).unwrap();
        attach_mangled(&mut r, &data("ncu/decode_raw_mangled.csv")).unwrap();
        assert!(r.kernels.iter().all(|k| k.mangled.is_some()));
        assert!(r.kernels[0].mangled.as_deref().unwrap().starts_with(
            "_ZN2at6native44_GLOBAL__N__50c743a2_11_Indexing_cu_89862edb21indexSelectSmallIndex"
        ));
    }

    fn both_readers(path: &Path) -> (Option<String>, String) {
        let fast = read_quoted(File::open(path).unwrap()).unwrap();
        (
            fast.map(|r| format!("{r:?}")),
            format!("{:?}", read_general(path)),
        )
    }

    #[test]
    fn the_fast_reader_takes_real_exports_and_agrees_with_the_general_one() {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        for p in [
            "tests/data/ncu/decode_raw.csv",
            "tests/data/ncu/decode_raw_mangled.csv",
            "examples/sample-run/ncu/decode_raw.csv",
            "examples/sample-run-2gpu/ncu/decode_raw.csv",
        ] {
            let (fast, general) = both_readers(&root.join(p));
            let fast = fast.unwrap_or_else(|| panic!("{p}: fast reader gave up"));
            assert_eq!(format!("Ok({fast})"), general, "{p}");
        }
    }

    /// Cells of the shapes ncu writes, and some it does not.
    fn cell() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            "-?[0-9]{1,3}(,[0-9]{3}){0,6}(\\.[0-9]{1,6})?",
            "[0-9]{16,20}\\.[0-9]{2}",
            "[0-9]\\.[0-9]e[+-][0-9]{2}",
            Just(String::new()),
            "[A-Za-z (),:<>]{1,12}",
            Just("a \"quoted\" name".to_string()),
            Just("n/a".to_string()),
            Just(" 1.5 ".to_string()),
        ]
    }

    proptest::proptest! {
        #[test]
        fn both_readers_agree_on_generated_exports(
            rows in proptest::collection::vec(
                (0usize..4, proptest::collection::vec(cell(), 5)), 0..12),
            crlf: bool,
            unquote in proptest::option::of((0usize..12, 0usize..7)),
        ) {
            let headers = ["ID", "Kernel Name", "gpu__time_duration.sum", "m1", "m2", "Block Size", "m3"];
            let q = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
            let mut lines = vec![
                headers.iter().map(|h| q(h)).collect::<Vec<_>>(),
                ["", "", "us", "%", "", "", "byte"].iter().map(|h| q(h)).collect(),
            ];
            for (i, (k, cells)) in rows.iter().enumerate() {
                let mut l = vec![q(&i.to_string()), q(&format!("kernel {k}"))];
                l.extend(cells.iter().map(|c| q(c)));
                lines.push(l);
            }
            if let Some((r, c)) = unquote {
                if let Some(cell) = lines.get_mut(r).and_then(|l| l.get_mut(c)) {
                    *cell = cell.trim_matches('"').to_string();
                }
            }
            let end = if crlf { "\r\n" } else { "\n" };
            let text: String = lines.iter().map(|l| l.join(",") + end).collect();
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("raw.csv");
            std::fs::write(&path, text).unwrap();
            let (fast, general) = both_readers(&path);
            // All quoted: the fast reader must take it; otherwise it may give up, never differ.
            proptest::prop_assert!(fast.is_some() || unquote.is_some());
            if let Some(fast) = fast {
                proptest::prop_assert_eq!(&format!("Ok({fast})"), &general);
            }
            proptest::prop_assert_eq!(format!("{:?}", read_raw(&path)), general);
        }
    }

    #[test]
    fn range_cells() {
        assert_eq!(
            range_of(r#"641  "<default domain>:decode:none:none:none:none:none:none" "#).as_deref(),
            Some("decode")
        );
        assert_eq!(range_of(""), None);
    }
}
