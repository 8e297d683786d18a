//! nsys GPU-metrics samples (`nsys profile --gpu-metrics-devices=...`): table `GPU_METRICS`
//! holds one row per sample and metric (`timestamp`, `typeId`: one per sampled GPU, `metricId`,
//! `value`), and `TARGET_INFO_GPU_METRICS` names each metric per GPU. Metric ids are not stable
//! between exports, so they are looked up by name.
//!
//! A 20 s capture at 50 kHz is a million samples, five to seven rows each: the rows are read in
//! one pass and packed by consecutive timestamp per GPU (nsys writes each GPU's rows in time
//! order), with no map per sample; rows out of order are sorted once at the end.

use rusqlite::types::ValueRef;
use rustc_hash::FxHashMap;

use super::NsysDb;
use crate::error::Error;

/// The share-of-peak metrics read, by the names nsys gives them (the same in every H100/H200
/// set, `gh100`).
pub const METRICS: [&str; 5] = [
    "GR Active [Throughput %]",
    "DRAM Read Bandwidth [Throughput %]",
    "DRAM Write Bandwidth [Throughput %]",
    "SM Issue [Throughput %]",
    "Tensor Active [Throughput %]",
];

/// The raw DRAM byte counters stage2's own set adds (`dram__bytes_read.sum`,
/// `dram__bytes_write.sum`: the bytes of each sample window), as the export names them. nsys
/// leaves out a counter the GPU cannot sample without a word, so they may be absent.
pub const COUNTERS: [&str; 2] = ["DRAM Read Bytes [Bytes]", "DRAM Write Bytes [Bytes]"];

/// The slots of a [`Sample`]: [`METRICS`], then [`COUNTERS`].
pub const SLOTS: usize = METRICS.len() + COUNTERS.len();

/// The name the export gives a set's metric and sub-metric: `GR Active [Throughput %]` for
/// metric `GR Active`, sub-metric `Throughput %`.
pub fn export_name(metric: &str, sub_metric: &str) -> String {
    format!("{metric} [{sub_metric}]")
}

/// One sample of one GPU: the window that starts at `t` (ns) and each metric's value in the
/// order of [`METRICS`] (in %) then [`COUNTERS`] (bytes); NaN: the GPU's set has no such metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub t: i64,
    pub v: [f32; SLOTS],
}

/// The samples of one sampled GPU, in time order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    /// nsys's id of the GPU's sample stream (`typeId`).
    pub gpu: i64,
    pub samples: Vec<Sample>,
    /// The metric names the export lists for this GPU (`TARGET_INFO_GPU_METRICS`), all of them.
    pub names: Vec<String>,
    /// Every share of peak read is a whole number (nsys writes them as whole per cents): each
    /// is within a point of the share it stands for.
    pub whole_shares: bool,
}

/// What the export holds of GPU-metrics samples.
#[derive(Debug, Clone, PartialEq)]
pub enum Samples {
    /// No GPU-metrics tables (sampling off, or an nsys without it).
    Absent,
    /// Every sampled GPU's samples.
    Read(Vec<Series>),
    /// The tables are there but cannot be read as nsys writes them: the table, the row and
    /// what is wrong with it.
    Unreadable(String),
}

/// One GPU's samples as they are packed.
struct Packer {
    gpu: i64,
    samples: Vec<Sample>,
    current: Option<Sample>,
    in_order: bool,
    whole_shares: bool,
}

impl Packer {
    fn row(&mut self, t: i64, slot: usize, value: f32) {
        if slot < METRICS.len() {
            self.whole_shares &= value.fract() == 0.0;
        }
        match &mut self.current {
            Some(c) if c.t == t => c.v[slot] = value,
            current => {
                if let Some(done) = current.take() {
                    self.in_order &= done.t < t;
                    self.samples.push(done);
                }
                let mut v = [f32::NAN; SLOTS];
                v[slot] = value;
                *current = Some(Sample { t, v });
            }
        }
    }

    /// The samples in time order, one per timestamp.
    fn finish(mut self) -> Vec<Sample> {
        self.samples.extend(self.current.take());
        if !self.in_order {
            self.samples.sort_by_key(|s| s.t);
            self.samples.dedup_by(|later, kept| {
                if later.t != kept.t {
                    return false;
                }
                for (k, v) in kept.v.iter_mut().zip(later.v) {
                    if k.is_nan() {
                        *k = v;
                    }
                }
                true
            });
        }
        self.samples
    }
}

/// A metric's value, range-checked as nsys writes it: a share of peak is 0-100%, a byte count
/// at least -2^23 (nsys writes a byte counter modulo 2^24 on some runs, as a signed 24-bit
/// value: the analysis unwraps it by its share) and at most 1e18. Err says what is wrong.
fn checked(value: Option<f64>, slot: usize) -> Result<f32, String> {
    let Some(v) = value else {
        return Err("its value is NULL, not a number".into());
    };
    let (lo, hi, what) = match slot < METRICS.len() {
        true => (
            0.0,
            100.0,
            "a share of peak is never below 0% or above 100%",
        ),
        false => (
            -8_388_608.0,
            1e18,
            "a byte count is never below -2^23 (a 24-bit counter's wrap) or beyond 1e18",
        ),
    };
    match v.is_finite() && (lo..=hi).contains(&v) {
        true => Ok(v as f32),
        false => Err(format!("its value is {}: {what}", crate::parse::number(v))),
    }
}

fn kind(v: ValueRef) -> String {
    match v {
        ValueRef::Null => "NULL".into(),
        ValueRef::Integer(i) => format!("the integer {i}"),
        ValueRef::Real(f) => format!("the real number {}", crate::parse::number(f)),
        ValueRef::Text(t) => format!(
            "the text '{}'",
            String::from_utf8_lossy(&t[..t.len().min(40)])
        ),
        ValueRef::Blob(_) => "a blob".into(),
    }
}

/// The metrics read of each sampled GPU.
struct Slots {
    /// Each GPU's stream id and every metric name the export lists for it.
    gpus: Vec<(i64, Vec<String>)>,
    /// `(typeId, metricId)` of a metric read -> (its GPU's place in `gpus`, its slot).
    of: FxHashMap<(i64, i64), (usize, usize)>,
}

/// The row's `rowid` (the first column of the query), for the words of a row that is wrong.
fn rowid(r: &rusqlite::Row) -> String {
    match r.get_ref(0) {
        Ok(ValueRef::Integer(i)) => i.to_string(),
        _ => "?".into(),
    }
}

/// A whole number column (`timestamp`, `typeId`, `metricId`).
fn whole(value: ValueRef, col: &str) -> Result<i64, String> {
    match value {
        ValueRef::Integer(i) => Ok(i),
        other => Err(format!("its {col} is {}, not a whole number", kind(other))),
    }
}

impl NsysDb {
    /// Whether the export holds GPU-metrics samples.
    pub fn has_gpu_metrics(&self) -> Result<bool, Error> {
        if !self.has_columns("GPU_METRICS", &["timestamp", "typeId", "metricId", "value"])? {
            return Ok(false);
        }
        let any: Option<i64> = self
            .conn
            .query_row("SELECT 1 FROM GPU_METRICS LIMIT 1", [], |r| r.get(0))
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(self.err(e)),
            })?;
        Ok(any.is_some())
    }

    /// Each sampled GPU's metric names, and which of them are read. Err: what is wrong with
    /// the table.
    fn metric_slots(&self) -> Result<Result<Slots, String>, Error> {
        let mut stmt = self
            .conn
            .prepare("SELECT rowid, typeId, metricId, metricName FROM TARGET_INFO_GPU_METRICS")
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.err(e))?;
        let mut s = Slots {
            gpus: Vec::new(),
            of: FxHashMap::default(),
        };
        let read: Vec<&str> = METRICS.iter().chain(COUNTERS.iter()).copied().collect();
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let cell = |i| r.get_ref(i).map_err(|e| self.err(e));
            let bad = |why: String| format!("TARGET_INFO_GPU_METRICS row {}: {why}", rowid(r));
            let (ty, id) = match (whole(cell(1)?, "typeId"), whole(cell(2)?, "metricId")) {
                (Ok(ty), Ok(id)) => (ty, id),
                (Err(why), _) | (_, Err(why)) => return Ok(Err(bad(why))),
            };
            let name = match cell(3)? {
                ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                other => return Ok(Err(bad(format!("its metricName is {}", kind(other))))),
            };
            let g = match s.gpus.iter().position(|g| g.0 == ty) {
                Some(g) => g,
                None => {
                    s.gpus.push((ty, Vec::new()));
                    s.gpus.len() - 1
                }
            };
            if let Some(i) = read.iter().position(|m| *m == name) {
                s.of.insert((ty, id), (g, i));
            }
            s.gpus[g].1.push(name);
        }
        Ok(Ok(s))
    }

    /// Every sampled GPU's samples between `from` and `to` (ns), each value range-checked.
    pub fn gpu_metric_samples(&self, from: i64, to: i64) -> Result<Samples, Error> {
        let info = ["typeId", "metricId", "metricName"];
        if !self.has_columns("TARGET_INFO_GPU_METRICS", &info)?
            || !self.has_columns("GPU_METRICS", &["timestamp", "typeId", "metricId", "value"])?
        {
            return Ok(Samples::Absent);
        }
        let Slots { gpus, of: slot } = match self.metric_slots()? {
            Ok(s) => s,
            Err(why) => return Ok(Samples::Unreadable(why)),
        };
        let mut packers: Vec<Packer> = gpus
            .iter()
            .map(|(gpu, _)| Packer {
                gpu: *gpu,
                samples: Vec::new(),
                current: None,
                in_order: true,
                whole_shares: true,
            })
            .collect();
        if !slot.is_empty() {
            if let Err(why) = self.pack(&slot, (from, to), &mut packers)? {
                return Ok(Samples::Unreadable(why));
            }
        }
        let mut out: Vec<Series> = packers
            .into_iter()
            .zip(gpus)
            .map(|(p, (_, names))| Series {
                gpu: p.gpu,
                whole_shares: p.whole_shares,
                samples: p.finish(),
                names,
            })
            .filter(|s| !s.samples.is_empty())
            .collect();
        out.sort_by_key(|s| s.gpu);
        Ok(Samples::Read(out))
    }

    /// The rows of the metrics read, into each GPU's packer. Err: the row that cannot be read.
    fn pack(
        &self,
        slot: &FxHashMap<(i64, i64), (usize, usize)>,
        (from, to): (i64, i64),
        packers: &mut [Packer],
    ) -> Result<Result<(), String>, Error> {
        // Rows come in time order as nsys writes them; no ORDER BY over millions of rows.
        // Through SQLite's C API (see raw.rs): a 20 s capture at 50 kHz is millions of rows.
        // The metrics not read are passed over here: SQLite's test of a metric id list cost a
        // third of its scan (20M rows: 3.0 s against 2.1 s).
        let sql = format!(
            "SELECT rowid, timestamp, typeId, metricId, value FROM GPU_METRICS \
             WHERE timestamp BETWEEN {from} AND {to}"
        );
        let mut rows = super::raw::RawRows::prepare(&self.conn, &sql).map_err(|e| self.err(e))?;
        while rows.step().map_err(|e| self.err(e))? {
            let row = rows.int(0).ok().flatten().unwrap_or(0);
            let bad = |why: String| Ok(Err(format!("GPU_METRICS row {row}: {why}")));
            let (t, ty, id) = match (rows.need(1), rows.need(2), rows.need(3)) {
                (Ok(t), Ok(ty), Ok(id)) => (t, ty, id),
                (Err(why), ..) | (_, Err(why), _) | (.., Err(why)) => return bad(why),
            };
            let Some(&(g, i)) = slot.get(&(ty, id)) else {
                continue;
            };
            let metric = || METRICS.iter().chain(COUNTERS.iter()).nth(i).copied();
            let value = match rows.number(4) {
                Ok(v) => checked(v, i),
                Err(_) => Err("its value is text or a blob, not a number".into()),
            };
            match value {
                Ok(v) => packers[g].row(t, i, v),
                Err(why) => return bad(format!("{} at {t} ns: {why}", metric().unwrap_or(""))),
            }
        }
        Ok(Ok(()))
    }

    /// The devices the export's kernels ran on (`deviceId`), each once. A kernel runs in a
    /// context on its device, so where every CUDA context is on one device (the common case)
    /// that is the kernels' one, without a pass over every launch (0.16 s at 1.5M launches);
    /// only contexts on several devices are checked against the kernels themselves. The two
    /// tables number devices alike in every committed export, rank 1's device 1 included.
    pub fn kernel_devices(&self) -> Result<Vec<i64>, Error> {
        if !self.has_columns("CUPTI_ACTIVITY_KIND_KERNEL", &["deviceId"])? {
            return Ok(Vec::new());
        }
        if self.has_columns("TARGET_INFO_CUDA_CONTEXT_INFO", &["deviceId"])? {
            let contexts =
                self.distinct("SELECT DISTINCT deviceId FROM TARGET_INFO_CUDA_CONTEXT_INFO")?;
            if contexts.len() == 1 {
                return Ok(contexts);
            }
        }
        self.distinct("SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL")
    }

    fn distinct(&self, sql: &str) -> Result<Vec<i64>, Error> {
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.err(e))?;
        let rows = stmt.query_map([], |r| r.get(0)).map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests;
