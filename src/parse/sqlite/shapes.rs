//! Each kernel launch's configuration with its launch call: what tells a kernel's shapes
//! apart (the same mangled name launched with several grids) and which range each ran in.

use super::{LaunchConfig, NsysDb};
use crate::error::Error;

/// One kernel launch: its mangled name, configuration, GPU time and the call that launched it.
#[derive(Debug, Clone, PartialEq)]
pub struct ShapedLaunch {
    pub mangled: String,
    pub launch: LaunchConfig,
    pub ns: i64,
    pub api_start: i64,
    pub tid: i64,
    /// GPU execution start (ns) and the demangled name, as `nsys stats` prints it.
    pub start: i64,
    pub demangled: String,
}

impl NsysDb {
    /// Every launch of the kernels named in `mangled` (all kernels when None), with its call.
    /// Calls and kernels pair up by correlation id within one process, as nsys pairs them.
    pub fn shaped_launches(
        &self,
        mangled: Option<&[String]>,
        mut each: impl FnMut(ShapedLaunch),
    ) -> Result<(), Error> {
        self.require(
            "CUPTI_ACTIVITY_KIND_KERNEL",
            &[
                "mangledName",
                "start",
                "end",
                "correlationId",
                "globalPid",
                "gridX",
                "gridY",
                "gridZ",
                "blockX",
                "blockY",
                "blockZ",
                "dynamicSharedMemory",
                "demangledName",
            ],
        )?;
        self.require(
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            &["start", "correlationId", "globalTid"],
        )?;
        // The names go in as parameters of a temporary list: no quoting of kernel names.
        let (filter, params): (String, Vec<&str>) = match mangled {
            Some(names) => (
                format!(
                    " WHERE m.value IN ({})",
                    vec!["?"; names.len().max(1)].join(",")
                ),
                names.iter().map(String::as_str).collect(),
            ),
            None => (String::new(), Vec::new()),
        };
        if params.is_empty() && mangled.is_some() {
            return Ok(());
        }
        let sql = format!(
            "SELECT m.value, k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ, \
             k.dynamicSharedMemory, k.end - k.start, r.start, r.globalTid, k.start, d.value \
             FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds m ON k.mangledName = m.id \
             LEFT JOIN StringIds d ON k.demangledName = d.id \
             JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId \
             AND r.globalTid / 16777216 = k.globalPid / 16777216{filter}"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let mut rows = stmt
            .query(rusqlite::params_from_iter(params))
            .map_err(|e| self.err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let d = |i: usize| r.get::<_, Option<i64>>(i).map(|v| v.unwrap_or(0));
            let row = (|| -> rusqlite::Result<ShapedLaunch> {
                Ok(ShapedLaunch {
                    mangled: r.get(0)?,
                    launch: LaunchConfig {
                        grid: format!("({},{},{})", d(1)?, d(2)?, d(3)?),
                        block: format!("({},{},{})", d(4)?, d(5)?, d(6)?),
                        dynamic_smem_bytes: d(7)?.max(0) as u64,
                    },
                    ns: d(8)?.max(0),
                    api_start: d(9)?,
                    tid: d(10)?,
                    start: d(11)?,
                    demangled: r.get::<_, Option<String>>(12)?.unwrap_or_default(),
                })
            })()
            .map_err(|e| self.err(e))?;
            each(row);
        }
        Ok(())
    }
}
