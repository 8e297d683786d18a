//! `nsys stats --format csv` reports: cuda_gpu_kern_sum, nvtx_sum, cuda_api_sum.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::table::{parse_number, Table};
use crate::error::Error;

/// One kernel of `cuda_gpu_kern_sum`: all launches of one kernel name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelSum {
    pub name: String,
    pub time_pct: Option<f64>,
    pub total_ns: f64,
    pub instances: u64,
    pub avg_ns: f64,
    pub med_ns: Option<f64>,
    pub min_ns: Option<f64>,
    pub max_ns: Option<f64>,
    pub stddev_ns: Option<f64>,
}

/// One NVTX range of `nvtx_sum`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RangeSum {
    /// The range as nsys prints it, `:decode` (empty domain) or `dom:decode`.
    pub range: String,
    /// `PushPop` or `StartEnd`.
    pub style: Option<String>,
    pub time_pct: Option<f64>,
    pub total_ns: f64,
    pub instances: u64,
    pub avg_ns: f64,
    pub min_ns: Option<f64>,
    pub max_ns: Option<f64>,
}

impl RangeSum {
    /// The range name without nsys's `domain:` prefix.
    pub fn name(&self) -> &str {
        self.range
            .split_once(':')
            .map(|(_, n)| n)
            .unwrap_or(&self.range)
    }
}

/// One API call of `cuda_api_sum`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiSum {
    pub name: String,
    pub time_pct: Option<f64>,
    pub total_ns: f64,
    pub calls: u64,
    pub avg_ns: f64,
}

/// Column lookups and typed cells for one table.
struct Cells<'a> {
    table: &'a Table,
    rec: &'a csv::StringRecord,
    line: u64,
}

impl Cells<'_> {
    fn text(&self, col: usize) -> &str {
        self.rec.get(col).unwrap_or("")
    }
    /// Every figure nsys stats prints here (times, counts, shares) is finite and not
    /// negative: anything else is bad input, never a number to add up.
    fn num(&self, col: usize) -> Result<Option<f64>, Error> {
        let bad = |what: &str| {
            Error::parse(
                &self.table.path,
                Some(self.line),
                format!(
                    "column `{}`: `{}` is {what}",
                    self.table.headers[col],
                    super::table::shown(self.text(col))
                ),
            )
        };
        match parse_number(self.text(col)) {
            Err(_) => Err(bad("not a number")),
            Ok(Some(v)) if !v.is_finite() || v < 0.0 => {
                Err(bad("not a finite non-negative number"))
            }
            Ok(v) => Ok(v),
        }
    }
    fn opt(&self, col: Option<usize>) -> Result<Option<f64>, Error> {
        col.map(|c| self.num(c)).transpose().map(Option::flatten)
    }
    fn req(&self, col: usize) -> Result<f64, Error> {
        self.num(col)?.ok_or_else(|| {
            Error::parse(
                &self.table.path,
                Some(self.line),
                format!("column `{}` is empty", self.table.headers[col]),
            )
        })
    }
}

/// Read every row of `table` with `f`, skipping blank lines.
fn rows<T>(
    mut table: Table,
    mut f: impl FnMut(&Cells) -> Result<T, Error>,
) -> Result<Vec<T>, Error> {
    let mut rec = csv::StringRecord::new();
    let mut out = Vec::new();
    while let Some(line) = table.next(&mut rec)? {
        if rec.iter().all(|f| f.trim().is_empty()) {
            continue;
        }
        out.push(f(&Cells {
            table: &table,
            rec: &rec,
            line,
        })?);
    }
    Ok(out)
}

pub fn read_kernels(path: &Path) -> Result<Vec<KernelSum>, Error> {
    let t = Table::open(path)?;
    let (name, total, inst, avg) = (
        t.require("Name")?,
        t.require("Total Time (ns)")?,
        t.require("Instances")?,
        t.require("Avg (ns)")?,
    );
    let (pct, med, min, max, sd) = (
        t.column("Time (%)"),
        t.column("Med (ns)"),
        t.column("Min (ns)"),
        t.column("Max (ns)"),
        t.column("StdDev (ns)"),
    );
    rows(t, |c| {
        Ok(KernelSum {
            name: c.text(name).to_string(),
            time_pct: c.opt(pct)?,
            total_ns: c.req(total)?,
            instances: c.req(inst)? as u64,
            avg_ns: c.req(avg)?,
            med_ns: c.opt(med)?,
            min_ns: c.opt(min)?,
            max_ns: c.opt(max)?,
            stddev_ns: c.opt(sd)?,
        })
    })
}

pub fn read_ranges(path: &Path) -> Result<Vec<RangeSum>, Error> {
    // `nsys stats --report nvtx_sum` of a capture without NVTX data (a workload marked only by
    // cudaProfilerStart/Stop) leaves an empty file (seen with nsys 2025.3.1 on an H200): no
    // ranges, not a broken file.
    if std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0) {
        return Ok(Vec::new());
    }
    let t = Table::open(path)?;
    let (range, total, inst, avg) = (
        t.require("Range")?,
        t.require("Total Time (ns)")?,
        t.require("Instances")?,
        t.require("Avg (ns)")?,
    );
    let (style, pct, min, max) = (
        t.column("Style"),
        t.column("Time (%)"),
        t.column("Min (ns)"),
        t.column("Max (ns)"),
    );
    rows(t, |c| {
        Ok(RangeSum {
            range: c.text(range).to_string(),
            style: style.map(|s| c.text(s).to_string()),
            time_pct: c.opt(pct)?,
            total_ns: c.req(total)?,
            instances: c.req(inst)? as u64,
            avg_ns: c.req(avg)?,
            min_ns: c.opt(min)?,
            max_ns: c.opt(max)?,
        })
    })
}

pub fn read_api(path: &Path) -> Result<Vec<ApiSum>, Error> {
    let t = Table::open(path)?;
    let (name, total, calls, avg) = (
        t.require("Name")?,
        t.require("Total Time (ns)")?,
        t.require("Num Calls")?,
        t.require("Avg (ns)")?,
    );
    let pct = t.column("Time (%)");
    rows(t, |c| {
        Ok(ApiSum {
            name: c.text(name).to_string(),
            time_pct: c.opt(pct)?,
            total_ns: c.req(total)?,
            calls: c.req(calls)? as u64,
            avg_ns: c.req(avg)?,
        })
    })
}

/// Per range (as nsys prints it, `domain:name`), named figures.
pub(crate) type RangeColumns = BTreeMap<String, BTreeMap<&'static str, f64>>;

/// The rows of NVIDIA's `cuda_gpu_kern_gb_sum` (one per kernel name, grid and block): the
/// name as the report writes it (`range/kernel` with `:nvtx-name`), the grid's thread blocks
/// (x * y * z of `GridXYZ`, written as `   8    1    1`) and the total time (ns).
pub(crate) fn read_grid_rows(path: &Path) -> Result<Vec<(String, i64, f64)>, Error> {
    let t = Table::open(path)?;
    let (name, grid, total) = (
        t.require("Name")?,
        t.require("GridXYZ")?,
        t.require("Total Time (ns)")?,
    );
    rows(t, |c| {
        let dims: Vec<i64> = c
            .text(grid)
            .split_whitespace()
            .filter_map(|d| d.parse().ok())
            .collect();
        let [x, y, z] = dims[..] else {
            return Err(Error::parse(
                &c.table.path,
                Some(c.line),
                format!(
                    "column `GridXYZ`: `{}` is not three whole numbers",
                    super::table::shown(c.text(grid))
                ),
            ));
        };
        let blocks = x.saturating_mul(y).saturating_mul(z);
        Ok((c.text(name).to_string(), blocks, c.req(total)?))
    })
}

/// Per range (as nsys prints it, `domain:name`), the named columns of an NVTX report:
/// nvtx_gpu_proj_sum (one row per range) or nvtx_kern_sum with `sum` (one row per range and
/// kernel, added up; rows of kernels outside every range, with no range, left out).
pub(crate) fn read_range_columns(
    path: &Path,
    key: &str,
    wanted: &[&'static str],
    sum: bool,
) -> Result<RangeColumns, Error> {
    let t = Table::open(path)?;
    let k = t.require(key)?;
    let cols: Vec<(&'static str, usize)> = wanted
        .iter()
        .map(|w| t.require(w).map(|i| (*w, i)))
        .collect::<Result<_, _>>()?;
    let rows = rows(t, |c| {
        let values: Vec<(&'static str, f64)> = cols
            .iter()
            .map(|(name, i)| c.req(*i).map(|v| (*name, v)))
            .collect::<Result<_, _>>()?;
        Ok((c.text(k).to_string(), values))
    })?;
    let mut out = RangeColumns::new();
    for (range, values) in rows.into_iter().filter(|(r, _)| !r.is_empty()) {
        let row = out.entry(range).or_default();
        for (name, v) in values {
            let e = row.entry(name).or_insert(0.0);
            *e = if sum { *e + v } else { v };
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::data;

    #[test]
    fn reads_the_real_kernel_summary() {
        let k = read_kernels(&data("nsys/summary_cuda_gpu_kern_sum.csv")).unwrap();
        assert_eq!(k.len(), 26);
        assert_eq!(k[0].name, "nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN");
        assert_eq!((k[0].total_ns, k[0].instances), (526214.0, 160));
        assert!(k[1]
            .name
            .starts_with("void at::native::elementwise_kernel<(int)128, (int)4,"));
        let total: f64 = k.iter().map(|r| r.total_ns).sum();
        assert_eq!(k.iter().map(|r| r.instances).sum::<u64>(), 1464);
        assert!((total - 2_798_262.0).abs() < 1.0, "{total}");
    }

    #[test]
    fn an_empty_nvtx_summary_is_no_ranges() {
        // What nsys stats writes for a capture without NVTX data (real, nsys 2025.3.1).
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("summary_nvtx_sum.csv");
        std::fs::write(&p, "").unwrap();
        assert!(read_ranges(&p).unwrap().is_empty());
    }

    #[test]
    fn reads_ranges_and_api_calls() {
        let r = read_ranges(&data("nsys/summary_nvtx_sum.csv")).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(
            (r[0].name(), r[0].style.as_deref()),
            ("decode", Some("PushPop"))
        );
        assert_eq!(r[0].total_ns, 715_174_939.0);
        let a = read_api(&data("nsys/summary_cuda_api_sum.csv")).unwrap();
        assert_eq!(a[1].name, "cudaLaunchKernel");
        assert_eq!(a[1].calls, 1192);
    }
}
