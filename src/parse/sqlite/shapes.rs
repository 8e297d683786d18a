//! Each kernel launch's configuration with its launch call: what tells a kernel's shapes
//! apart (the same mangled name launched with several grids) and which range each ran in.

use super::{LaunchConfig, NsysDb};
use crate::error::Error;

/// One kernel launch: its mangled name, configuration, GPU time and the call that launched it.
/// Names are StringIds ids ([`NsysDb::string`] gives the text): a capture holds millions of
/// launches of a few dozen names and configurations, so text is made per distinct key, not
/// per launch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShapedLaunch {
    pub mangled: i64,
    /// The demangled name as `nsys stats` prints it (None: the export has none).
    pub demangled: Option<i64>,
    /// Its launch configuration, as [`super::Launch::config`].
    pub config: [i32; 7],
    pub ns: i64,
    pub api_start: i64,
    pub tid: i64,
    /// GPU execution start (ns).
    pub start: i64,
    /// The CUDA device it ran on (0 where the export does not say).
    pub device: i64,
}

impl ShapedLaunch {
    /// Its configuration as the reports and the metrics cache key it.
    pub fn launch(&self) -> LaunchConfig {
        LaunchConfig::of(self.config.map(i64::from))
    }
}

impl NsysDb {
    /// Every kernel launch with its call. Calls and kernels pair up by correlation id within
    /// one process, as nsys pairs them.
    pub fn shaped_launches(&self, mut each: impl FnMut(ShapedLaunch)) -> Result<(), Error> {
        let mut columns = vec![
            "mangledName",
            "demangledName",
            "start",
            "end",
            "correlationId",
            "globalPid",
        ];
        columns.extend(super::CONFIG_COLUMNS);
        self.require("CUPTI_ACTIVITY_KIND_KERNEL", &columns)?;
        self.require(
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            &["start", "correlationId", "globalTid"],
        )?;
        let kernels = self.kernel_rows()?;
        // Calls and kernels pair up by (process, correlation id): joined here rather than by
        // SQLite, which would build an index over the whole runtime table for every query.
        let wanted: rustc_hash::FxHashSet<(i64, i64)> =
            kernels.iter().map(|k| (k.pid, k.correlation)).collect();
        let calls = self.calls_of(&wanted)?;
        for k in &kernels {
            let Some(&(api_start, tid)) = calls.get(&(k.pid, k.correlation)) else {
                continue;
            };
            each(ShapedLaunch {
                mangled: k.mangled,
                demangled: k.demangled,
                config: k.config,
                ns: k.ns.max(0),
                api_start,
                tid,
                start: k.start,
                device: k.device,
            });
        }
        Ok(())
    }
}

/// (process, correlation id) -> (call start, thread) of launch calls.
type Calls = rustc_hash::FxHashMap<(i64, i64), (i64, i64)>;

/// One kernel launch as read for [`NsysDb::shaped_launches`], names as their ids.
struct KernelRow {
    mangled: i64,
    demangled: Option<i64>,
    config: [i32; 7],
    ns: i64,
    start: i64,
    correlation: i64,
    pid: i64,
    device: i64,
}

impl NsysDb {
    /// The ids of `values` in StringIds (those present).
    pub fn string_ids(&self, values: &[String]) -> Result<Vec<i64>, Error> {
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM StringIds WHERE value = ?1")
            .map_err(|e| self.err(e))?;
        let mut ids = Vec::new();
        for v in values {
            let mut rows = stmt.query([v]).map_err(|e| self.err(e))?;
            while let Some(r) = rows.next().map_err(|e| self.err(e))? {
                ids.push(r.get(0).map_err(|e| self.err(e))?);
            }
        }
        Ok(ids)
    }

    /// Every kernel launch with a mangled name.
    fn kernel_rows(&self) -> Result<Vec<KernelRow>, Error> {
        let device = match self.has_columns("CUPTI_ACTIVITY_KIND_KERNEL", &["deviceId"])? {
            true => "deviceId",
            false => "0",
        };
        let sql = format!(
            "SELECT mangledName, demangledName, {}, end - start, start, correlationId, globalPid, \
             {device} FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE mangledName IS NOT NULL",
            super::CONFIG_COLUMNS.join(", ")
        );
        // Through SQLite's C API (see raw.rs): every launch of the export.
        let mut rows = super::raw::RawRows::prepare(&self.conn, &sql).map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        let at = |e: String| self.err(format!("table CUPTI_ACTIVITY_KIND_KERNEL: {e}"));
        while rows.step().map_err(|e| self.err(e))? {
            let d = |i: usize| rows.int(i).map(|v| v.unwrap_or(0)).map_err(at);
            out.push(KernelRow {
                mangled: d(0)?,
                demangled: rows.int(1).map_err(at)?,
                config: rows.config(2).map_err(at)?,
                ns: d(9)?,
                start: d(10)?,
                correlation: d(11)?,
                pid: d(12)? / 16_777_216,
                device: d(13)?,
            });
        }
        Ok(out)
    }

    /// The launch calls of `wanted` (process, correlation id): their start and thread.
    fn calls_of(&self, wanted: &rustc_hash::FxHashSet<(i64, i64)>) -> Result<Calls, Error> {
        let mut rows = super::raw::RawRows::prepare(
            &self.conn,
            "SELECT correlationId, globalTid, start FROM CUPTI_ACTIVITY_KIND_RUNTIME",
        )
        .map_err(|e| self.err(e))?;
        let at = |e: String| self.err(format!("table CUPTI_ACTIVITY_KIND_RUNTIME: {e}"));
        let mut out = rustc_hash::FxHashMap::default();
        while rows.step().map_err(|e| self.err(e))? {
            let (Some(corr), Some(tid)) = (rows.int(0).map_err(at)?, rows.int(1).map_err(at)?)
            else {
                continue;
            };
            let key = (tid / 16_777_216, corr);
            if wanted.contains(&key) {
                out.insert(key, (rows.int(2).map_err(at)?.unwrap_or(0), tid));
            }
        }
        Ok(out)
    }
}
