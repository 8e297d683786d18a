//! The nsys SQLite export, read-only. Tables and columns differ between nsys versions, so each
//! query first checks that what it needs exists.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::error::Error;

mod gpu_metrics;
mod graphs;
mod nvtx;
mod raw;
mod shapes;
mod stream;
mod trace;
pub use gpu_metrics::{export_name, Sample, Samples, Series, COUNTERS, METRICS, SLOTS};
pub use graphs::GraphLaunch;
pub use shapes::ShapedLaunch;
pub use stream::{Ignore, Sink, Tee};
pub use trace::CudaTraceSeen;

pub struct NsysDb {
    conn: Connection,
    path: std::path::PathBuf,
}

/// The longest path SQLite opens: 512 bytes, less the `-journal` it appends for a name of its
/// own (measured: a 504-byte path opens, 505 does not).
pub(crate) const PATH_MAX: usize = 504;

impl NsysDb {
    pub fn open(path: &Path) -> Result<Self, Error> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| {
            let len = std::path::absolute(path).map_or(0, |p| p.as_os_str().len());
            let why = match len > PATH_MAX {
                true => format!(", its path being {len} bytes, past the {PATH_MAX} SQLite opens: move or link the run directory to a shorter path"),
                false => String::new(),
            };
            Error::parse(path, None, format!("cannot open as SQLite: {e}{why}"))
        })?;
        let db = NsysDb {
            conn,
            path: path.to_path_buf(),
        };
        // Opening is lazy: touch the schema so a file that is not a database fails here.
        db.columns("sqlite_master")?;
        Ok(db)
    }

    fn err(&self, e: impl std::fmt::Display) -> Error {
        Error::parse(&self.path, None, e.to_string())
    }

    /// The columns of `table`; empty when the table does not exist.
    pub(crate) fn columns(&self, table: &str) -> Result<Vec<String>, Error> {
        let mut stmt = self
            .conn
            .prepare("SELECT name FROM pragma_table_info(?1)")
            .map_err(|e| self.err(format!("not an nsys SQLite export: {e}")))?;
        let cols = stmt
            .query_map([table], |r| r.get::<_, String>(0))
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        Ok(cols)
    }

    /// When the capture began and ended, in ns from the start of the nsys session (the
    /// launch of `nsys profile`): `ANALYSIS_DETAILS`'s startTime and stopTime. None when the
    /// export has no such row.
    pub(crate) fn capture_window(&self) -> Result<Option<(i64, i64)>, Error> {
        if !self.has_columns("ANALYSIS_DETAILS", &["startTime", "stopTime"])? {
            return Ok(None);
        }
        let row = self
            .conn
            .query_row(
                "SELECT startTime, stopTime FROM ANALYSIS_DETAILS LIMIT 1",
                [],
                |r| Ok((r.get::<_, Option<i64>>(0)?, r.get::<_, Option<i64>>(1)?)),
            )
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(self.err(e)),
            })?;
        Ok(match row {
            Some((Some(a), Some(b))) if 0 <= a && a <= b => Some((a, b)),
            _ => None,
        })
    }

    /// Whether `table` exists with every one of `cols`.
    fn has_columns(&self, table: &str, cols: &[&str]) -> Result<bool, Error> {
        let have = self.columns(table)?;
        Ok(cols.iter().all(|c| have.iter().any(|h| h == c)))
    }

    /// The kernels launched by thread `tid`'s runtime calls in `[from, to]`, in GPU start
    /// order: (stream, demangled name, duration in ns). One step's launches: how its kernels
    /// follow each other (an FP8 scale's chain from its amax to its cast).
    pub fn launches_between(
        &self,
        tid: i64,
        from: i64,
        to: i64,
    ) -> Result<Vec<(i64, String, i64)>, Error> {
        let kernel = ["correlationId", "demangledName", "start", "end"];
        let runtime = ["correlationId", "globalTid", "start"];
        if !self.has_columns("CUPTI_ACTIVITY_KIND_KERNEL", &kernel)?
            || !self.has_columns("CUPTI_ACTIVITY_KIND_RUNTIME", &runtime)?
        {
            return Ok(Vec::new());
        }
        // An export trimmed of its streams reads as one stream.
        let stream = match self.has_columns("CUPTI_ACTIVITY_KIND_KERNEL", &["streamId"])? {
            true => "k.streamId",
            false => "0",
        };
        let sql = format!(
            "SELECT {stream}, s.value, k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k \
             JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId \
             JOIN StringIds s ON s.id = k.demangledName \
             WHERE r.globalTid = ?1 AND r.start >= ?2 AND r.start <= ?3 ORDER BY k.start"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([tid, from, to], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// The short names of the kernels launched by the calls of these correlation ids.
    pub fn kernels_of_calls(&self, corrs: &[i64]) -> Result<HashMap<i64, String>, Error> {
        let mut out = HashMap::new();
        if corrs.is_empty()
            || !self.has_columns(
                "CUPTI_ACTIVITY_KIND_KERNEL",
                &["correlationId", "shortName"],
            )?
        {
            return Ok(out);
        }
        let mut stmt = self
            .conn
            .prepare(
                "SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s \
                 ON s.id = k.shortName WHERE k.correlationId = ?1 LIMIT 1",
            )
            .map_err(|e| self.err(e))?;
        for &c in corrs {
            let name: Option<String> = stmt
                .query_row([c], |r| r.get(0))
                .map(Some)
                .or_else(|e| match e {
                    rusqlite::Error::QueryReturnedNoRows => Ok(None),
                    e => Err(e),
                })
                .map_err(|e| self.err(e))?;
            if let Some(n) = name {
                out.insert(c, n);
            }
        }
        Ok(out)
    }

    /// The streaming multiprocessors of the capture's GPUs (`TARGET_INFO_GPU.smCount`): None
    /// without the table, or where the GPUs differ in size (a launch's share of a GPU would
    /// then depend on which one ran it, which the reports do not read per launch).
    pub fn sm_count(&self) -> Result<Option<u32>, Error> {
        if !self.has_columns("TARGET_INFO_GPU", &["smCount"])? {
            return Ok(None);
        }
        let mut stmt = self
            .conn
            .prepare("SELECT DISTINCT smCount FROM TARGET_INFO_GPU WHERE smCount > 0 LIMIT 2")
            .map_err(|e| self.err(e))?;
        let counts = stmt
            .query_map([], |r| r.get::<_, i64>(0))
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        Ok(match counts[..] {
            [n] => u32::try_from(n).ok(),
            _ => None,
        })
    }

    /// The processes whose kernels ran on the GPU (a global pid's pid is its bits from 24 up),
    /// at most `limit` of them; none without the kernel table.
    pub fn kernel_pids(&self, limit: usize) -> Result<Vec<i64>, Error> {
        if !self.has_columns("CUPTI_ACTIVITY_KIND_KERNEL", &["globalPid"])? {
            return Ok(Vec::new());
        }
        let mut stmt = self
            .conn
            .prepare(
                "SELECT DISTINCT globalPid >> 24 FROM CUPTI_ACTIVITY_KIND_KERNEL \
                 WHERE globalPid IS NOT NULL LIMIT ?1",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([limit as i64], |r| r.get::<_, i64>(0))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    fn require(&self, table: &str, cols: &[&str]) -> Result<(), Error> {
        let have = self.columns(table)?;
        if have.is_empty() {
            return Err(self.err(format!(
                "table {table} is missing (is this an nsys export of a run with CUDA kernels?)"
            )));
        }
        for c in cols {
            if !have.iter().any(|h| h == c) {
                return Err(self.err(format!("table {table} has no column {c} (nsys version?)")));
            }
        }
        Ok(())
    }

    /// The first row of `table` whose interval is not a time span (end before start, or a
    /// missing start), named by table and rowid: bad input, not a negative duration to add up.
    /// (Negative timestamps are real: events before the capture started.)
    fn check_intervals(&self, table: &str) -> Result<(), Error> {
        if !self.has_columns(table, &["start", "end"])? {
            return Ok(());
        }
        // NVTX instant events and unclosed ranges have no end: only closed ones are checked.
        // nsys counts ns from the session's start; past 2^48 (78 hours) a timestamp is not one,
        // and sums of such spans would overflow.
        let sql = format!(
            "SELECT rowid, start, end FROM {table} \
             WHERE start IS NULL OR (end IS NOT NULL AND end < start) \
             OR abs(start) > {MAX_T} OR (end IS NOT NULL AND abs(end) > {MAX_T}) LIMIT 1"
        );
        let bad: Option<(i64, Option<i64>, Option<i64>)> = self
            .conn
            .query_row(&sql, [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(self.err(e)),
            })?;
        match bad {
            None => Ok(()),
            Some((row, start, end)) => Err(self.err(format!(
                "table {table}, rowid {row}: start {} and end {} are not a time span (end before start, no start, or beyond 2^48 ns)",
                start.map_or("NULL".into(), |v| v.to_string()),
                end.map_or("NULL".into(), |v| v.to_string()),
            ))),
        }
    }

    /// Demangled kernel name (as `nsys stats` prints it) -> mangled names.
    pub(crate) fn mangled_names(&self) -> Result<HashMap<String, Vec<String>>, Error> {
        self.require(
            "CUPTI_ACTIVITY_KIND_KERNEL",
            &["demangledName", "mangledName"],
        )?;
        self.require("StringIds", &["id", "value"])?;
        let mut stmt = self
            .conn
            .prepare(
                "SELECT d.value, m.value FROM (SELECT DISTINCT demangledName, mangledName \
                 FROM CUPTI_ACTIVITY_KIND_KERNEL) k \
                 JOIN StringIds d ON k.demangledName = d.id \
                 JOIN StringIds m ON k.mangledName = m.id",
            )
            .map_err(|e| self.err(e))?;
        let mut out: HashMap<String, Vec<String>> = HashMap::new();
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .map_err(|e| self.err(e))?;
        for row in rows {
            let (d, m) = row.map_err(|e| self.err(e))?;
            out.entry(d).or_default().push(m);
        }
        Ok(out)
    }
}

/// A kernel launch's configuration: `(x,y,z)` grid and block, dynamic shared memory bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct LaunchConfig {
    pub grid: String,
    pub block: String,
    pub dynamic_smem_bytes: u64,
}

impl LaunchConfig {
    /// From grid x, y, z, block x, y, z and dynamic shared memory, as [`Launch::config`].
    pub fn of(c: [i64; 7]) -> LaunchConfig {
        LaunchConfig {
            grid: format!("({},{},{})", c[0], c[1], c[2]),
            block: format!("({},{},{})", c[3], c[4], c[5]),
            dynamic_smem_bytes: c[6].max(0) as u64,
        }
    }
}

impl NsysDb {
    /// The strings of `StringIds`, by id.
    pub fn strings(&self) -> Result<HashMap<i64, String>, Error> {
        self.require("StringIds", &["id", "value"])?;
        let mut stmt = self
            .conn
            .prepare("SELECT id, value FROM StringIds")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }
}

/// One NVTX range instance.
#[derive(Debug, Clone, PartialEq)]
pub struct NvtxRange {
    /// Shared by every instance of one name: a capture holds hundreds of thousands.
    pub name: std::sync::Arc<str>,
    pub start: i64,
    pub end: i64,
    /// Push/pop ranges belong to one thread; start/end ranges to none in particular.
    pub push_pop: bool,
    pub tid: i64,
}

/// One piece of GPU work (a kernel, memcpy or memset) with the runtime call that launched it:
/// when the CPU called the API, on which thread, and when the work ran on the GPU. Kernels of
/// a CUDA graph (traced per node) carry the correlation id of their `cudaGraphLaunch`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Launch {
    pub api_start: i64,
    pub tid: i64,
    /// GPU execution start and end.
    pub start: i64,
    pub end: i64,
    /// A kernel (not a memcpy or memset).
    pub kernel: bool,
    /// Launched by a CUDA graph.
    pub graph: bool,
    /// The kernel's demangled name, as a `StringIds` id (see [`NsysDb::strings`]); -1 for a
    /// memcpy or memset.
    pub name: i64,
    /// Its mangled name's id, -1 where unknown (memcpy, memset, an export without one).
    pub mangled: i64,
    /// A kernel's grid x, y, z, block x, y, z and dynamic shared memory (zeros for a memcpy or
    /// memset, or where the export lacks them): its launch configuration. A streaming reader
    /// asked for some kernels' configurations ([`Sink::configs_of`]) reads them for those
    /// alone; the others carry their thread blocks as a grid of (blocks, 1, 1) and zeros.
    pub config: [i32; 7],
}

/// The columns of a launch configuration, in [`Launch::config`]'s order.
const CONFIG_COLUMNS: [&str; 7] = [
    "gridX",
    "gridY",
    "gridZ",
    "blockX",
    "blockY",
    "blockZ",
    "dynamicSharedMemory",
];

impl Launch {
    /// GPU time of a kernel; 0 for a memcpy or memset.
    pub(crate) fn kernel_ns(&self) -> i64 {
        if self.kernel {
            self.end - self.start
        } else {
            0
        }
    }
}

/// What a CUDA API call does to the calling thread's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ApiKind {
    /// Waits for the GPU: stream/device/event/context synchronize, blocking memcpy/memset.
    Sync,
    /// Puts work on the GPU: kernel and graph launches.
    Launch,
    /// Any other runtime or driver call (allocation, attributes, ...).
    Other,
    /// Makes an executable CUDA graph from a recorded one (`cudaGraphInstantiate`): a step
    /// that records graphs (torch.compile's reduce-overhead, a serving engine's first step).
    /// Other work for the thread's time.
    Instantiate,
    /// Loads a module of GPU code (`cuModuleLoadData`, `cuLibraryLoadData`): code loaded for
    /// its kernels' first use (CUDA's lazy loading, or kernels compiled at run time by Triton
    /// or torch.compile). Other work for the thread's time.
    Load,
}

impl ApiKind {
    /// By the call's name (`cudaStreamSynchronize_v3020`, `cuLaunchKernel`, ...).
    pub fn of(name: &str) -> ApiKind {
        let n = name.split("_v").next().unwrap_or(name);
        let blocking_copy = (n.contains("Memcpy") || n.contains("Memset")) && !n.contains("Async");
        if n.contains("Synchronize") || blocking_copy {
            ApiKind::Sync
        } else if n.contains("LaunchKernel")
            || n.contains("GraphLaunch")
            || n.contains("LaunchCooperativeKernel")
            || n == "cudaLaunch"
        {
            ApiKind::Launch
        } else if n.contains("GraphInstantiate") {
            ApiKind::Instantiate
        } else if n.starts_with("cuModuleLoad")
            || n.starts_with("cuLibraryLoad")
            || n.starts_with("cudaLibraryLoad")
        {
            ApiKind::Load
        } else {
            ApiKind::Other
        }
    }
}

/// One CUDA runtime or driver API call on a CPU thread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ApiCall {
    pub start: i64,
    pub end: i64,
    pub tid: i64,
    pub kind: ApiKind,
    /// The call's correlation id: a launch's names its kernel (-1: not known).
    pub corr: i64,
}

/// The largest timestamp taken as one, in ns from the session's start (2^48: 78 hours).
pub(super) const MAX_T: i64 = 1 << 48;

/// The name of the ranges that stand for cudaProfilerStart/Stop windows.
pub const PROFILER_WINDOW: &str = crate::config::PROFILER_WINDOW;

impl NsysDb {
    /// Durations of the NCCL kernels (name containing "nccl", any case), in start order.
    pub(crate) fn nccl_durations(&self) -> Result<Vec<i64>, Error> {
        self.require("CUPTI_ACTIVITY_KIND_KERNEL", &["start", "end", "shortName"])?;
        let mut stmt = self
            .conn
            .prepare(
                "SELECT k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k \
                 JOIN StringIds s ON s.id = k.shortName \
                 WHERE lower(s.value) LIKE '%nccl%' ORDER BY k.start",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt.query_map([], |r| r.get(0)).map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// Every kernel, memcpy and memset with the runtime call that launched it (matched by
    /// correlation id within the process), in launch order.
    pub fn launches(&self) -> Result<Vec<Launch>, Error> {
        self.require(
            "CUPTI_ACTIVITY_KIND_KERNEL",
            &["start", "end", "correlationId", "globalPid"],
        )?;
        self.require(
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            &["start", "correlationId", "globalTid"],
        )?;
        for table in [
            "CUPTI_ACTIVITY_KIND_KERNEL",
            "CUPTI_ACTIVITY_KIND_MEMCPY",
            "CUPTI_ACTIVITY_KIND_MEMSET",
            "CUPTI_ACTIVITY_KIND_RUNTIME",
        ] {
            self.check_intervals(table)?;
        }
        let ops = self.op_queries()?;
        // Correlation ids are unique within a process: match the process too (globalTid holds
        // the globalPid in its upper bits; comparing the pid part is enough).
        let sql = format!(
            "SELECT r.start, r.globalTid, o.start, o.end, o.kernel, o.graph, o.name, o.mangled, \
             o.c0, o.c1, o.c2, o.c3, o.c4, o.c5, o.c6 FROM ({}) o \
             JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = o.correlationId \
             AND (r.globalTid / 16777216) = (o.globalPid / 16777216) ORDER BY r.start, o.start",
            ops.iter()
                .map(|(table, q)| format!(
                    "SELECT {} AS kernel, q.* FROM ({q}) q",
                    i32::from(*table == "CUPTI_ACTIVITY_KIND_KERNEL")
                ))
                .collect::<Vec<_>>()
                .join(" UNION ALL ")
        );
        let mut rows = raw::RawRows::prepare(&self.conn, &sql).map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        while rows.step().map_err(|e| self.err(e))? {
            let launch = || -> Result<Launch, String> {
                Ok(Launch {
                    api_start: rows.need(0)?,
                    tid: rows.need(1)?,
                    start: rows.need(2)?,
                    end: rows.need(3)?,
                    kernel: rows.need(4)? != 0,
                    graph: rows.need(5)? != 0,
                    name: rows.int(6)?.unwrap_or(-1),
                    mangled: rows.int(7)?.unwrap_or(-1),
                    config: rows.config(8)?,
                })
            };
            out.push(launch().map_err(|e| self.err(e))?);
        }
        Ok(out)
    }
}

impl NsysDb {
    /// One query per GPU work table (kernels, then memcpys and memsets where the export has
    /// them), each row: start, end, correlation id, pid, graph node, kernel name id, rowid,
    /// mangled name id, the seven launch configuration columns (named: the sorting join reads
    /// them by name). Whether a row is a kernel is known from its table.
    fn op_queries(&self) -> Result<Vec<(&'static str, String)>, Error> {
        let cols = self.columns("CUPTI_ACTIVITY_KIND_KERNEL")?;
        let has = |c: &str| cols.iter().any(|x| x == c);
        let graph = match has("graphNodeId") {
            true => "k.graphNodeId IS NOT NULL",
            false => "0",
        };
        let name = match has("demangledName") {
            true => "k.demangledName",
            false => "-1",
        };
        let mangled = match has("mangledName") {
            true => "k.mangledName",
            false => "-1",
        };
        let config: Vec<String> = CONFIG_COLUMNS
            .iter()
            .enumerate()
            .map(|(i, c)| match has(c) {
                true => format!("k.{c} AS c{i}"),
                false => format!("0 AS c{i}"),
            })
            .collect();
        let config = config.join(", ");
        let mut ops = vec![(
            "CUPTI_ACTIVITY_KIND_KERNEL",
            format!(
                "SELECT k.start, k.end, k.correlationId, k.globalPid, {graph} AS graph, \
                 {name} AS name, k.rowid, {mangled} AS mangled, {config} \
                 FROM CUPTI_ACTIVITY_KIND_KERNEL k"
            ),
        )];
        for table in ["CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"] {
            if self.has_columns(table, &["start", "end", "correlationId", "globalPid"])? {
                ops.push((
                    table,
                    format!(
                        "SELECT start, end, correlationId, globalPid, 0, -1, rowid, -1, 0, 0, 0, 0, 0, 0, 0 FROM {table}"
                    ),
                ));
            }
        }
        Ok(ops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SM count of the capture's GPUs: one size, or none to go by where they differ.
    #[test]
    fn sm_count_is_the_gpus_size_only_where_they_agree() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("gpus_hand_made.sqlite");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE TARGET_INFO_GPU (id INTEGER, smCount INTEGER); INSERT INTO TARGET_INFO_GPU VALUES (0, 132), (1, 132);")
            .unwrap();
        let db = NsysDb::open(&path).unwrap();
        assert_eq!(db.sm_count().unwrap(), Some(132));
        conn.execute("INSERT INTO TARGET_INFO_GPU VALUES (2, 108)", [])
            .unwrap();
        assert_eq!(db.sm_count().unwrap(), None);
        conn.execute_batch("DROP TABLE TARGET_INFO_GPU").unwrap();
        assert_eq!(db.sm_count().unwrap(), None);
    }

    /// NCCL's own `ncclAllReduce` ranges live in its `NCCL` domain (a real 2-GPU export): a
    /// library's ranges, unless the capture names that domain; the workload's own are not.
    #[test]
    fn ranges_in_a_library_domain_are_told_apart() {
        let db = NsysDb::open(
            &std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("examples/sample-run-2gpu/nsys/run.rank0.sqlite"),
        )
        .unwrap();
        let (ranges, lib) = db.ranges_and_library_names(None).unwrap();
        assert_eq!(lib.into_iter().collect::<Vec<_>>(), ["ncclAllReduce"]);
        assert_eq!(ranges, db.ranges().unwrap());
        assert!(db
            .ranges_and_library_names(Some("NCCL"))
            .unwrap()
            .1
            .is_empty());
        // An export without domains has no library ranges.
        let plain = NsysDb::open(
            &std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data/nsys/run.sqlite"),
        )
        .unwrap();
        assert!(plain.ranges_and_library_names(None).unwrap().1.is_empty());
    }

    #[test]
    fn maps_every_summary_kernel_to_its_mangled_name() {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/nsys");
        let db = NsysDb::open(&dir.join("run.sqlite")).unwrap();
        let map = db.mangled_names().unwrap();
        let kernels =
            crate::parse::nsys::read_kernels(&dir.join("summary_cuda_gpu_kern_sum.csv")).unwrap();
        for k in &kernels {
            assert!(map.contains_key(&k.name), "{}", k.name);
        }
        assert_eq!(
            map["nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN"],
            ["nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN"]
        );
    }

    #[test]
    fn the_capture_window_is_read_from_analysis_details() {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/nsys");
        let db = NsysDb::open(&dir.join("run.sqlite")).unwrap();
        // The gated capture began 14.0 s after nsys launched the workload and lasted 0.73 s
        // (the export's own ANALYSIS_DETAILS row).
        assert_eq!(
            db.capture_window().unwrap(),
            Some((13_997_603_196, 14_725_441_293))
        );
    }

    #[test]
    fn ranges_and_launches_of_the_real_capture() {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/nsys");
        let db = NsysDb::open(&dir.join("run.sqlite")).unwrap();
        let ranges = db.ranges().unwrap();
        assert_eq!(ranges.len(), 1);
        assert_eq!(&*ranges[0].name, "decode");
        assert_eq!(ranges[0].end - ranges[0].start, 715_174_939);
        assert!(ranges[0].push_pop);
        let launches = db.launches().unwrap();
        assert_eq!(launches.iter().filter(|l| l.kernel).count(), 1464);
        assert_eq!(
            launches.iter().map(Launch::kernel_ns).sum::<i64>(),
            2_798_262
        );
    }

    /// The limit is SQLite's own: an export at a path of PATH_MAX bytes opens, one byte
    /// longer does not, and the error says why.
    #[test]
    fn the_longest_path_sqlite_opens_is_path_max() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("a.sqlite");
        Connection::open(&src)
            .unwrap()
            .execute_batch("CREATE TABLE t(a);")
            .unwrap();
        for len in [PATH_MAX, PATH_MAX + 1] {
            // Folders until the file's path is `len` bytes: "/" and a name each.
            let mut dir = tmp.path().join(len.to_string());
            loop {
                match len - dir.as_os_str().len() - "/run.sqlite".len() {
                    0 => break,
                    room if room > 200 => dir.push("d".repeat(99)),
                    room => dir.push("d".repeat(room - 1)),
                }
            }
            std::fs::create_dir_all(&dir).unwrap();
            let p = dir.join("run.sqlite");
            assert_eq!(p.as_os_str().len(), len);
            std::fs::copy(&src, &p).unwrap();
            match (len, NsysDb::open(&p)) {
                (PATH_MAX, r) => assert!(r.is_ok(), "{:?}", r.err()),
                (_, r) => assert!(r.err().unwrap().to_string().contains("past the 504")),
            }
        }
    }

    #[test]
    fn a_file_that_is_not_a_database_is_a_parse_error() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("x.sqlite");
        std::fs::write(&p, vec![0x42u8; 4096]).unwrap();
        let err = NsysDb::open(&p)
            .and_then(|d| d.mangled_names())
            .err()
            .unwrap();
        assert_eq!(err.exit_code(), crate::exit_codes::PARSE);
        assert!(err.to_string().contains("x.sqlite"));
        let empty = tmp.path().join("empty.sqlite");
        Connection::open(&empty)
            .unwrap()
            .execute_batch("CREATE TABLE t(a);")
            .unwrap();
        let err = NsysDb::open(&empty).unwrap().mangled_names().unwrap_err();
        assert!(
            err.to_string().contains("CUPTI_ACTIVITY_KIND_KERNEL"),
            "{err}"
        );
    }
}
