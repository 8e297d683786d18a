//! The GPU work of the export (kernels, memcpys, memsets), merged by start across its tables,
//! read on a thread of its own with its own connection and handed to the join in batches: the
//! join, the runtime reader and this reader each keep a core busy (on a 1.5M-launch export the
//! thread doing all three of reading, joining and scanning held 64% of the samples).

use std::sync::mpsc::{Receiver, SyncSender};

use rustc_hash::FxHashSet as HashSet;

use super::super::raw::RawRows;
use super::{BATCH, IN_FLIGHT};

/// One GPU op row: start, end, correlation id, pid, kernel, graph, name, mangled name, launch
/// configuration.
pub(super) type Op = (i64, i64, i64, i64, bool, bool, i64, i64, [i32; 7]);

/// What the reader sends: ops in start order, or why it stopped.
enum FromOps {
    Ops(Vec<Op>),
    Failed(String),
    OutOfOrder,
}

struct Table<'s> {
    table: &'static str,
    /// Its rows are kernels (not memcpys or memsets): known from the table, not read per row.
    kernel: bool,
    rows: RawRows<'s>,
    next: Option<Op>,
    last_start: i64,
    /// The kernels whose launch configuration is read (None: every one's).
    wanted: Option<&'s HashSet<i64>>,
}

impl Table<'_> {
    /// The next row; false when it starts before the previous one (not in start order).
    fn advance(&mut self) -> Result<bool, String> {
        self.next = match self.rows.step()? {
            false => None,
            true => {
                let (r, table) = (&self.rows, self.table);
                // A value of the wrong type, named with its table and row.
                let at = |e: String| match r.int(6) {
                    Ok(Some(rowid)) => format!("table {table}, rowid {rowid}: {e}"),
                    _ => format!("table {table}: {e}"),
                };
                let int = |i| r.int(i).map_err(at);
                let (start, end) = (int(0)?, int(1)?.unwrap_or(i64::MIN));
                let plausible = |t: i64| t.abs() <= super::super::MAX_T;
                let Some(start) = start.filter(|&s| end >= s && plausible(s) && plausible(end))
                else {
                    let rowid = int(6)?.unwrap_or(-1);
                    let end = match end {
                        i64::MIN => "NULL".to_string(),
                        v => v.to_string(),
                    };
                    return Err(format!(
                        "table {}, rowid {rowid}: start {} and end {end} are not a time span (end before start, no start, or beyond 2^48 ns)",
                        self.table,
                        start.map_or("NULL".into(), |v| v.to_string())
                    ));
                };
                let mangled = int(7)?.unwrap_or(-1);
                // Every kernel's thread blocks (how many SMs it can use: the grid's product,
                // taken here, not by SQLite, which would compute it for every row), the whole
                // configuration only for the kernels whose shapes are tallied.
                let config = match self.wanted {
                    Some(w) if self.kernel && !w.contains(&mangled) => {
                        let mut blocks = 1i64;
                        for i in 8..11 {
                            blocks = blocks.saturating_mul(int(i)?.unwrap_or(0));
                        }
                        let blocks = blocks.clamp(0, i64::from(i32::MAX));
                        [blocks as i32, 1, 1, 0, 0, 0, 0]
                    }
                    Some(_) if !self.kernel => [0; 7],
                    _ => r.config(8).map_err(at)?,
                };
                let op: Op = (
                    start,
                    end,
                    int(2)?.unwrap_or(-1),
                    int(3)?.unwrap_or(0) >> 24,
                    self.kernel,
                    int(4)?.unwrap_or(0) != 0,
                    int(5)?.unwrap_or(-1),
                    mangled,
                    config,
                );
                if op.0 < self.last_start {
                    return Ok(false);
                }
                self.last_start = op.0;
                Some(op)
            }
        };
        Ok(true)
    }
}

/// Read every query's rows (one per GPU work table) merged by start, in batches, until the
/// end, an error, rows out of start order, or the join hanging up.
fn read(
    path: &std::path::Path,
    queries: &[(&'static str, String)],
    wanted: Option<&HashSet<i64>>,
    tx: &SyncSender<FromOps>,
) {
    let read = || -> Result<Option<FromOps>, String> {
        let conn = rusqlite::Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| e.to_string())?;

        let mut tables = Vec::new();
        for (table, sql) in queries {
            let mut t = Table {
                table,
                kernel: *table == "CUPTI_ACTIVITY_KIND_KERNEL",
                rows: RawRows::prepare(&conn, sql)?,
                next: None,
                last_start: i64::MIN,
                wanted,
            };
            t.advance()?;
            tables.push(t);
        }
        let mut batch = Vec::with_capacity(BATCH);
        // The op that started first among the tables, until all are read.
        while let Some(k) = (0..tables.len())
            .filter(|&k| tables[k].next.is_some())
            .min_by_key(|&k| tables[k].next.map(|o| o.0))
        {
            batch.push(tables[k].next.expect("chosen for having one"));
            if batch.len() == BATCH {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                if tx.send(FromOps::Ops(full)).is_err() {
                    return Ok(None); // the join stopped listening
                }
            }
            if !tables[k].advance()? {
                return Ok(Some(FromOps::OutOfOrder));
            }
        }
        Ok(Some(FromOps::Ops(batch)))
    };
    let last = read().unwrap_or_else(|e| Some(FromOps::Failed(e)));
    if let Some(m) = last {
        let _ = tx.send(m);
    }
}

/// The ops as the join consumes them, from the reader thread.
pub(super) struct OpsRx {
    rx: Receiver<FromOps>,
    batch: std::vec::IntoIter<Op>,
}

/// What the join gets from [`OpsRx::next`] when the reader stopped early.
pub(super) enum Stop {
    Failed(String),
    OutOfOrder,
}

impl OpsRx {
    /// Start the reader on `scope`.
    pub(super) fn spawn<'scope>(
        scope: &'scope std::thread::Scope<'scope, '_>,
        path: &'scope std::path::Path,
        queries: &'scope [(&'static str, String)],
        wanted: Option<&'scope HashSet<i64>>,
    ) -> OpsRx {
        let (tx, rx) = std::sync::mpsc::sync_channel(IN_FLIGHT);
        scope.spawn(move || read(path, queries, wanted, &tx));
        OpsRx {
            rx,
            batch: Vec::new().into_iter(),
        }
    }

    /// The next op in start order (None at the end).
    pub(super) fn next(&mut self) -> Result<Option<Op>, Stop> {
        loop {
            if let Some(op) = self.batch.next() {
                return Ok(Some(op));
            }
            match self.rx.recv() {
                Ok(FromOps::Ops(b)) if b.is_empty() => return Ok(None),
                Ok(FromOps::Ops(b)) => self.batch = b.into_iter(),
                Ok(FromOps::Failed(e)) => return Err(Stop::Failed(e)),
                Ok(FromOps::OutOfOrder) => return Err(Stop::OutOfOrder),
                Err(_) => return Ok(None),
            }
        }
    }
}
