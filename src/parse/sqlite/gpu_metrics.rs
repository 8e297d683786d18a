//! nsys GPU-metrics samples (`nsys profile --gpu-metrics-devices=...`): table `GPU_METRICS`
//! holds one row per sample and metric (`timestamp`, `typeId`: one per sampled GPU, `metricId`,
//! `value`), and `TARGET_INFO_GPU_METRICS` names each metric per GPU. Metric ids are not stable
//! between exports, so they are looked up by name.

use std::collections::HashMap;

use super::NsysDb;
use crate::error::Error;

/// The metrics read, by the names nsys gives them (the same in every H100/H200 set, `gh100`).
pub const METRICS: [&str; 5] = [
    "GR Active [Throughput %]",
    "DRAM Read Bandwidth [Throughput %]",
    "DRAM Write Bandwidth [Throughput %]",
    "SM Issue [Throughput %]",
    "Tensor Active [Throughput %]",
];

/// One sample of one GPU: the window that starts at `t` (ns) and each metric's value in %, in
/// the order of [`METRICS`] (NaN: the GPU's set has no such metric).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub t: i64,
    pub v: [f32; 5],
}

/// The samples of one sampled GPU, in time order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    /// nsys's id of the GPU's sample stream (`typeId`).
    pub gpu: i64,
    pub samples: Vec<Sample>,
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

    /// Every sampled GPU's samples between `from` and `to` (ns); None when the export has no
    /// GPU metrics (sampling off, or an nsys without it).
    pub fn gpu_metric_samples(&self, from: i64, to: i64) -> Result<Option<Vec<Series>>, Error> {
        let info = ["typeId", "metricId", "metricName"];
        if !self.has_columns("TARGET_INFO_GPU_METRICS", &info)?
            || !self.has_columns("GPU_METRICS", &["timestamp", "typeId", "metricId", "value"])?
        {
            return Ok(None);
        }
        let mut slot: HashMap<(i64, i64), usize> = HashMap::new();
        let mut stmt = self
            .conn
            .prepare("SELECT typeId, metricId, metricName FROM TARGET_INFO_GPU_METRICS")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        for row in rows {
            let (ty, id, name) = row.map_err(|e| self.err(e))?;
            if let Some(i) = METRICS.iter().position(|m| *m == name) {
                slot.insert((ty, id), i);
            }
        }
        if slot.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let ids: Vec<String> = {
            let mut v: Vec<i64> = slot.keys().map(|k| k.1).collect();
            v.sort_unstable();
            v.dedup();
            v.iter().map(i64::to_string).collect()
        };
        // Rows come in time order as nsys writes them; no ORDER BY over millions of rows.
        let sql = format!(
            "SELECT timestamp, typeId, metricId, value FROM GPU_METRICS \
             WHERE metricId IN ({}) AND timestamp BETWEEN ?1 AND ?2",
            ids.join(",")
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let mut rows = stmt.query([from, to]).map_err(|e| self.err(e))?;
        let mut by_gpu: HashMap<i64, HashMap<i64, [f32; 5]>> = HashMap::new();
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let e = |e| self.err(e);
            let (t, ty, id): (i64, i64, i64) = (
                r.get(0).map_err(e)?,
                r.get(1).map_err(e)?,
                r.get(2).map_err(e)?,
            );
            let value: f64 = r.get(3).map_err(e)?;
            let Some(&i) = slot.get(&(ty, id)) else {
                continue;
            };
            let at = by_gpu
                .entry(ty)
                .or_default()
                .entry(t)
                .or_insert([f32::NAN; 5]);
            at[i] = value as f32;
        }
        let mut out: Vec<Series> = by_gpu
            .into_iter()
            .map(|(gpu, at)| {
                let mut samples: Vec<Sample> =
                    at.into_iter().map(|(t, v)| Sample { t, v }).collect();
                samples.sort_by_key(|s| s.t);
                Series { gpu, samples }
            })
            .collect();
        out.sort_by_key(|s| s.gpu);
        Ok(Some(out))
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
