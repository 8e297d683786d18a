//! NVIDIA's own reading of an ncu report: `ncu --import --print-summary per-kernel --csv`, and
//! the SI-prefix ratio between its units and the raw page's.

use std::path::Path;

use super::Table;
use crate::error::Error;

/// One row of `ncu --import --print-summary per-kernel --csv`: a metric's Average over the
/// launches of one kernel name, block and grid, in the summary's own unit.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SummaryRow {
    pub(crate) kernel: String,
    pub(crate) block: String,
    pub(crate) grid: String,
    pub(crate) metric: String,
    pub(crate) unit: String,
    pub(crate) average: f64,
}

pub(crate) fn read_print_summary(path: &Path) -> Result<Vec<SummaryRow>, Error> {
    let mut t = Table::open(path)?;
    let (kernel, block, grid) = (
        t.require("Kernel Name")?,
        t.require("Block Size")?,
        t.require("Grid Size")?,
    );
    let (metric, unit, average) = (
        t.require("Metric Name")?,
        t.require("Metric Unit")?,
        t.require("Average")?,
    );
    let mut rec = csv::StringRecord::new();
    let mut out = Vec::new();
    while let Some(line) = t.next(&mut rec)? {
        let get = |i: usize| rec.get(i).unwrap_or_default().to_string();
        let Ok(Some(v)) = crate::parse::table::parse_number(&get(average)) else {
            return Err(Error::parse(path, Some(line), "`Average` is not a number"));
        };
        out.push(SummaryRow {
            kernel: get(kernel),
            block: get(block),
            grid: get(grid),
            metric: get(metric),
            unit: get(unit),
            average: v,
        });
    }
    Ok(out)
}

/// How many `to` one `from` is, where the two units differ by an SI prefix only
/// (`Gbyte/s` to `Tbyte/s`: 0.001); 1 otherwise. The summary scales a value to its own unit,
/// the raw page keeps one unit per metric.
pub fn si_ratio(from: &str, to: &str) -> f64 {
    let split = |u: &str| -> (f64, String) {
        let mut c = u.chars();
        let f = match c.next() {
            Some('K') => 1e3,
            Some('M') => 1e6,
            Some('G') => 1e9,
            Some('T') => 1e12,
            Some('m') if u.len() > 1 => 1e-3,
            Some('u') if u.len() > 1 => 1e-6,
            Some('n') if u.len() > 1 => 1e-9,
            _ => return (1.0, u.to_string()),
        };
        (f, c.as_str().to_string())
    };
    let ((fa, a), (fb, b)) = (split(from), split(to));
    if from == to || a != b {
        return 1.0;
    }
    fa / fb
}
