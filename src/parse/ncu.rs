//! `ncu --import REP --csv --page raw`: a header row, a units row, then one row per profiled
//! launch. Streamed and aggregated per kernel name, so memory follows the number of distinct
//! kernels, not the file size.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::quoted::{QuotedRows, Row, Value};
use super::table::{number_bytes, Table};
use crate::error::Error;

mod mangled;
mod summary;
pub use mangled::attach_mangled;
#[cfg(test)]
use mangled::{first_ids, mangled_general, mangled_quoted};
pub(crate) use summary::read_print_summary;
pub use summary::si_ratio;

pub(crate) const COL_NAME: &str = "Kernel Name";
pub(crate) const COL_PUSHPOP: &str =
    "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg";
pub(crate) const COL_STARTEND: &str =
    "Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg";
pub(crate) const TIME: &str = "gpu__time_duration.sum";
pub(crate) const SM_PCT: &str = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
pub(crate) const DRAM_PCT: &str = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
/// What the reports' own list measures in their place: `sm__throughput` and
/// `dram__throughput` are maxima over many sub-units, each a replay pass or more; SM issue,
/// tensor-pipe activity and DRAM bytes come in the passes the roofline needs anyway.
pub(crate) const SM_ISSUE_PCT: &str = "sm__inst_issued.avg.pct_of_peak_sustained_elapsed";
pub(crate) const TENSOR_PIPE_PCT: &str =
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed";
pub(crate) const DRAM_BYTES_PCT: &str = "dram__bytes.sum.pct_of_peak_sustained_elapsed";

/// ncu's SM and DRAM figures of % of peak: `sm__throughput` and `dram__throughput` where
/// measured, else the larger of SM issue and tensor-pipe activity, and DRAM bytes.
pub(crate) fn sm_dram_pct(m: &BTreeMap<String, f64>) -> (Option<f64>, Option<f64>) {
    let sm = m.get(SM_PCT).copied().or_else(|| {
        [SM_ISSUE_PCT, TENSOR_PIPE_PCT]
            .iter()
            .filter_map(|k| m.get(*k).copied())
            .reduce(f64::max)
    });
    let dram = m.get(DRAM_PCT).or_else(|| m.get(DRAM_BYTES_PCT)).copied();
    (sm, dram)
}

/// What the reports read from ncu (bound classes, roofline, tensor use, peaks), the default
/// metric list of the ncu pass (`ncu.set: report`); ncu adds its launch and device attributes.
/// Tensor-core work is counted for BF16, FP16 and FP8 sources only: each
/// `sm__ops_path_tensor_src_<type>` costs a replay pass of its own (measured on an H100,
/// 2026-11-25: the six types took 7 passes, the rest of this list 3), so
/// TF32, INT8 and FP64 are added through `ncu.metrics` by those who run them.
pub(crate) const REPORT_METRICS: &[&str] = &[
    TIME,
    SM_ISSUE_PCT,
    DRAM_BYTES_PCT,
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "smsp__cycles_elapsed.avg.per_second",
    "sm__cycles_elapsed.avg.per_second",
    "dram__cycles_elapsed.avg.per_second",
    "dram__bytes.sum.per_second",
    "dram__bytes.sum.peak_sustained",
    TENSOR_PIPE_PCT,
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed",
    "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum.per_cycle_elapsed",
    "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum.per_cycle_elapsed",
    "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum.per_cycle_elapsed",
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum.per_cycle_elapsed",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum.per_cycle_elapsed",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum.per_cycle_elapsed",
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained",
    "sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained",
    "sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum.per_second",
    "sm__ops_path_tensor_src_fp16.sum.per_second",
    "sm__ops_path_tensor_src_fp8_sparsity_off.sum.per_second",
    "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained_elapsed.per_second",
    "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained_elapsed.per_second",
    "launch__shared_mem_per_block_dynamic",
];

/// All profiled launches of one kernel name, metrics averaged over them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NcuKernel {
    pub name: String,
    /// The mangled name, from the `--print-kernel-base mangled` import of the same report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mangled: Option<String>,
    /// The `ID` of the kernel's first profiled launch, to find it in another import.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_id: Option<String>,
    pub nvtx_range: Option<String>,
    /// The NVTX ranges around its first profiled launch, outermost first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nvtx_stack: Vec<String>,
    pub instances: u64,
    /// Mean GPU time of one launch under ncu, in ns.
    pub time_ns: Option<f64>,
    pub block: Option<String>,
    pub grid: Option<String>,
    /// Every numeric metric present, mean over the launches.
    pub metrics: BTreeMap<String, f64>,
    /// Not measured in this run: the run whose ncu pass did, from the metrics cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_from: Option<String>,
    /// Each launch configuration measured, when there are several (`metrics` is then the
    /// mean over all their launches, until the nsys durations weigh them: see
    /// `analysis::shapes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shapes: Vec<NcuShape>,
    /// Share of the kernel's nsys time (in the range ncu measured) spent in launch
    /// configurations ncu measured, in % (None: not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape_cover_pct: Option<f64>,
}

/// The launches of one kernel with one launch configuration: their metrics, mean over them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NcuShape {
    pub grid: Option<String>,
    pub block: Option<String>,
    pub instances: u64,
    pub metrics: BTreeMap<String, f64>,
}

/// One kernel's figures as the metrics cache keeps them (and `ncu/cached.json` lists the ones
/// a run took from it): the figures, their units, and the run that measured them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CachedKernel {
    pub kernel: NcuKernel,
    pub units: BTreeMap<String, String>,
    pub measured_by: String,
    pub measured_at: String,
    /// The mean nsys duration of this launch configuration in the run that measured it, in
    /// ns: a later run is served the entry only when its own agrees (None: not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nsys_mean_ns: Option<f64>,
}

/// `ncu/cached.json`: the kernels a run took from the metrics cache.
pub fn read_cached(path: &Path) -> Result<Vec<CachedKernel>, Error> {
    let text = crate::files::read_capped(path, 256 << 20)
        .map_err(|e| Error::parse(path, None, format!("cannot read: {e}")))?;
    let cached: Vec<CachedKernel> = serde_json::from_str(&text).map_err(|e| {
        Error::parse(
            path,
            Some(e.line() as u64),
            format!("not a list of cached kernels: {e}"),
        )
    })?;
    check_values(cached.iter().map(|c| &c.kernel)).map_err(|why| Error::parse(path, None, why))?;
    Ok(cached)
}

/// Add cached kernels to a report (all of it when the run profiled nothing): each one that the
/// report does not hold under the same mangled name, marked with the run that measured it.
pub fn merge_cached(report: &mut NcuReport, cached: Vec<CachedKernel>) {
    for c in cached {
        let present = report
            .kernels
            .iter()
            .any(|k| k.mangled.is_some() && k.mangled == c.kernel.mangled);
        if present {
            continue;
        }
        for (k, u) in c.units {
            report.units.entry(k).or_insert(u);
        }
        let mut kernel = c.kernel;
        kernel.cached_from = Some(c.measured_by);
        report.kernels.push(kernel);
    }
}

/// One launch configuration ncu measured: grid, block and the metrics of its launches.
pub type Measured<'a> = (Option<&'a str>, Option<&'a str>, &'a BTreeMap<String, f64>);

impl NcuKernel {
    /// Each launch configuration ncu measured: its shapes where it measured several, else the
    /// kernel's own.
    pub fn measured(&self) -> Vec<Measured<'_>> {
        match self.shapes.is_empty() {
            true => vec![(self.grid.as_deref(), self.block.as_deref(), &self.metrics)],
            false => self
                .shapes
                .iter()
                .map(|s| (s.grid.as_deref(), s.block.as_deref(), &s.metrics))
                .collect(),
        }
    }

    #[cfg(test)]
    pub(crate) fn metric(&self, name: &str) -> Option<f64> {
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
    nvtx: Vec<String>,
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

    /// The accumulator of the row's kernel and launch configuration, made from the row's
    /// identity cells on first sight.
    fn launch(&mut self, name: &str, text: impl Fn(usize) -> String) -> &mut Acc {
        self.rows += 1;
        let c = &self.cols;
        let shape = format!(
            "{name}\u{1f}{}\u{1f}{}",
            c.grid.map(&text).unwrap_or_default(),
            c.block.map(&text).unwrap_or_default()
        );
        let i = match self.index.get(&shape) {
            Some(i) => *i,
            None => {
                self.accs.push(Acc {
                    name: name.to_string(),
                    first_id: c.id.map(&text),
                    nvtx: Some(
                        c.pushpop
                            .map(|col| stack_of(&text(col)))
                            .unwrap_or_default(),
                    )
                    .filter(|s| !s.is_empty())
                    .or_else(|| c.startend.map(|col| stack_of(&text(col))))
                    .unwrap_or_default(),
                    block: c.block.map(&text),
                    grid: c.grid.map(&text),
                    count: 0,
                    sums: vec![(0.0, 0); c.headers.len()],
                });
                self.index.insert(shape, self.accs.len() - 1);
                self.accs.len() - 1
            }
        };
        let acc = &mut self.accs[i];
        acc.count += 1;
        acc
    }

    fn finish(self) -> NcuReport {
        let headers = &self.cols.headers;
        let time_scale = self.units.get(TIME).map(|u| ns_per(u)).unwrap_or(Some(1.0));
        let mean = |sums: &[(f64, u32)]| -> BTreeMap<String, f64> {
            sums.iter()
                .enumerate()
                .filter(|(_, (_, n))| *n > 0)
                .map(|(c, (s, n))| (headers[c].clone(), s / f64::from(*n)))
                .collect()
        };
        // The shapes of one name, in order of first appearance.
        let mut names: Vec<(String, Vec<Acc>)> = Vec::new();
        let mut at: HashMap<String, usize> = HashMap::new();
        for a in self.accs {
            match at.get(&a.name) {
                Some(&i) => names[i].1.push(a),
                None => {
                    at.insert(a.name.clone(), names.len());
                    names.push((a.name.clone(), vec![a]));
                }
            }
        }
        let kernels = names
            .into_iter()
            .map(|(name, accs)| {
                let mut all = vec![(0.0, 0u32); headers.len()];
                for a in &accs {
                    for (t, s) in all.iter_mut().zip(&a.sums) {
                        t.0 += s.0;
                        t.1 += s.1;
                    }
                }
                let metrics = mean(&all);
                let time_ns = metrics.get(TIME).zip(time_scale).map(|(v, k)| v * k);
                let shapes = match accs.len() {
                    1 => Vec::new(),
                    _ => accs
                        .iter()
                        .map(|a| NcuShape {
                            grid: a.grid.clone(),
                            block: a.block.clone(),
                            instances: a.count,
                            metrics: mean(&a.sums),
                        })
                        .collect(),
                };
                let first = &accs[0];
                NcuKernel {
                    name,
                    mangled: None,
                    first_id: first.first_id.clone(),
                    nvtx_range: first.nvtx.last().cloned(),
                    nvtx_stack: first.nvtx.clone(),
                    instances: accs.iter().map(|a| a.count).sum(),
                    time_ns,
                    block: first.block.clone(),
                    grid: first.grid.clone(),
                    metrics,
                    cached_from: None,
                    shapes,
                    shape_cover_pct: None,
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
    let file = crate::files::open_regular(path)
        .map_err(|e| Error::parse(path, None, format!("cannot open: {e}")))?;
    let report = match read_quoted(file) {
        Ok(Some(report)) => report,
        Ok(None) => read_general(path)?,
        Err(e) => return Err(Error::parse(path, None, format!("cannot read: {e}"))),
    };
    check_values(&report.kernels).map_err(|why| Error::parse(path, None, why))?;
    Ok(report)
}

/// ncu's figures are never negative, infinite or beyond 1e18 (no counter of one kernel
/// launch reaches it): a kernel with such a value (a broken export, a tampered cache entry) is
/// refused, naming the kernel and the metric, rather than turned into a negative GFLOP/s or an
/// "inf% of peak".
pub(crate) fn check_values<'a>(
    kernels: impl IntoIterator<Item = &'a NcuKernel>,
) -> Result<(), String> {
    for k in kernels {
        let plausible = |v: f64| v.is_finite() && (0.0..=1e18).contains(&v);
        if let Some((m, v)) = k.metrics.iter().find(|(_, v)| !plausible(**v)) {
            return Err(format!(
                "kernel {}: metric {m} = {v}: ncu's figures are never negative, infinite or beyond 1e18",
                crate::files::shown(&k.name)
            ));
        }
    }
    Ok(())
}

/// The fast path (see `quoted`); None where the file strays from ncu's shape or from what the
/// general reader accepts, so that it reads the file again and reports the problem.
fn read_quoted(file: File) -> std::io::Result<Option<NcuReport>> {
    let Some(mut rows) = QuotedRows::open(file)? else {
        return Ok(None);
    };
    let Some(name_col) = rows.column(COL_NAME) else {
        return Ok(None);
    };
    let mut k = Kernels::new(Columns::new(rows.headers.clone()));
    let is_metric = k.cols.is_metric.clone();
    let mut cells = Vec::new();
    let mut first = true;
    loop {
        let line = match rows.next(&mut cells)? {
            Row::Cells(l) => l,
            Row::End => return Ok(Some(k.finish())),
            Row::GiveUp => return Ok(None),
        };
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

/// Nanoseconds per unit of a time metric.
pub(crate) fn ns_per(unit: &str) -> Option<f64> {
    match unit.trim() {
        "ns" | "nsecond" => Some(1.0),
        "us" | "usecond" => Some(1e3),
        "ms" | "msecond" => Some(1e6),
        "s" | "second" => Some(1e9),
        _ => None,
    }
}

/// The range name in ncu's NVTX column: `641  "<default domain>:decode:none:..." ` -> decode.
/// The ranges of an NVTX context cell, outermost first: ncu quotes each range of the stack
/// (`"dom:generate:..."  "dom:decode:..."`); the kernel ran in the last one.
fn stack_of(cell: &str) -> Vec<String> {
    cell.split('"')
        .skip(1)
        .step_by(2)
        .filter_map(|quoted| {
            let mut fields = quoted.split(':');
            let _domain = fields.next()?;
            fields
                .find(|f| !f.is_empty() && *f != "none")
                .map(str::to_string)
        })
        .collect()
}

#[cfg(test)]
mod tests;
