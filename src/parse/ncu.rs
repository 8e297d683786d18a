//! `ncu --import REP --csv --page raw`: a header row, a units row, then one row per profiled
//! launch. Streamed and aggregated per kernel name, so memory follows the number of distinct
//! kernels, not the file size.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};

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

#[derive(Default)]
struct Acc {
    name: String,
    first_id: Option<String>,
    nvtx: Option<String>,
    block: Option<String>,
    grid: Option<String>,
    count: u64,
    sums: Vec<(f64, u32)>,
}

pub fn read_raw(path: &Path) -> Result<NcuReport, Error> {
    let mut t = Table::open(path)?;
    let name_col = t.require(COL_NAME)?;
    let id_col = t.column("ID");
    let pushpop = t.column(COL_PUSHPOP);
    let startend = t.column(COL_STARTEND);
    let block_col = t.column("Block Size");
    let grid_col = t.column("Grid Size");
    let width = t.headers.len();
    // Identity columns are text, not metrics.
    let skip: Vec<bool> = t
        .headers
        .iter()
        .map(|h| {
            matches!(
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
            ) || h.starts_with("device__attribute")
        })
        .collect();

    let is_metric: Vec<bool> = skip.iter().map(|s| !s).collect();
    let text = |rec: &csv::ByteRecord, col: usize| -> String {
        String::from_utf8_lossy(rec.get(col).unwrap_or_default()).into_owned()
    };

    let mut units = BTreeMap::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut accs: Vec<Acc> = Vec::new();
    let mut rec = csv::ByteRecord::new();
    let mut rows = 0u64;
    let mut first = true;
    // The hot loop: bytes, not strings; one lookup per row; only metric columns parsed.
    while let Some(line) = t.next_bytes(&mut rec)? {
        let name = std::str::from_utf8(rec.get(name_col).unwrap_or_default())
            .map_err(|_| Error::parse(path, Some(line), "`Kernel Name` is not UTF-8"))?;
        if first && !name.is_empty() {
            return Err(Error::parse(
                path,
                Some(line),
                "no units row after the header: is this `ncu --import REPORT --csv --page raw` output?",
            ));
        }
        if first {
            // The units row: `us`, `%`, `Gbyte`, ...
            for (i, u) in rec.iter().enumerate() {
                if !u.is_empty() {
                    units.insert(
                        t.headers[i].clone(),
                        String::from_utf8_lossy(u).into_owned(),
                    );
                }
            }
            first = false;
            continue;
        }
        if name.is_empty() {
            return Err(Error::parse(path, Some(line), "empty `Kernel Name`"));
        }
        rows += 1;
        let i = match index.get(name) {
            Some(i) => *i,
            None => {
                accs.push(Acc {
                    name: name.to_string(),
                    first_id: id_col.map(|c| text(&rec, c)),
                    nvtx: pushpop
                        .and_then(|c| range_of(&text(&rec, c)))
                        .or_else(|| startend.and_then(|c| range_of(&text(&rec, c)))),
                    block: block_col.map(|c| text(&rec, c)),
                    grid: grid_col.map(|c| text(&rec, c)),
                    count: 0,
                    sums: vec![(0.0, 0); width],
                });
                index.insert(name.to_string(), accs.len() - 1);
                accs.len() - 1
            }
        };
        let acc = &mut accs[i];
        acc.count += 1;
        for ((field, sum), metric) in rec.iter().zip(acc.sums.iter_mut()).zip(&is_metric) {
            // Text-valued metrics (e.g. PolicySpread) are not numbers and are left out.
            if *metric {
                if let Some(v) = number_bytes(field) {
                    sum.0 += v;
                    sum.1 += 1;
                }
            }
        }
    }
    let time_scale = units.get(TIME).map(|u| ns_per(u)).unwrap_or(Some(1.0));
    let kernels = accs
        .into_iter()
        .map(|a| {
            let metrics: BTreeMap<String, f64> = a
                .sums
                .iter()
                .enumerate()
                .filter(|(_, (_, n))| *n > 0)
                .map(|(c, (s, n))| (t.headers[c].clone(), s / f64::from(*n)))
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
    Ok(NcuReport {
        kernels,
        units,
        rows,
    })
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

    #[test]
    fn range_cells() {
        assert_eq!(
            range_of(r#"641  "<default domain>:decode:none:none:none:none:none:none" "#).as_deref(),
            Some("decode")
        );
        assert_eq!(range_of(""), None);
    }
}
