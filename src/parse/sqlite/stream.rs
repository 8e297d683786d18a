//! Launches streamed in GPU start order, with memory that does not grow with them: the
//! kernel, memcpy and memset tables are merged by start as the export stores them, and each
//! piece of work is matched to its launch call by a merge join on the runtime table (also in
//! start order): a call is read once the GPU work being matched has started after it, and
//! kept only until its work is matched (a CUDA graph launch until the capture ends: its
//! kernels share its correlation id). An export whose rows are not in start order is read
//! with the sorting join instead, which is correct at any order but holds every launch.

use std::collections::{HashMap, HashSet};

use rusqlite::Rows;

use super::{Launch, NsysDb};
use crate::error::Error;

/// GPU work may carry a timestamp slightly before its call's (clock conversion); calls this
/// much later than the work are read before it is matched.
const SKEW_NS: i64 = 1_000_000;
/// Calls waiting for their work beyond which the sorting join takes over (bounded memory).
const MAX_PENDING: usize = 4_000_000;

/// One GPU op row: start, end, correlation id, pid, kernel, graph, name.
type Op = (i64, i64, i64, i64, bool, bool, i64);

struct Ops<'s> {
    rows: Rows<'s>,
    next: Option<Op>,
    last_start: i64,
}

impl Ops<'_> {
    fn advance(&mut self, db: &NsysDb) -> Result<bool, Error> {
        self.next = match self.rows.next().map_err(|e| db.err(e))? {
            None => None,
            Some(r) => {
                let op: Op = (
                    r.get(0).map_err(|e| db.err(e))?,
                    r.get(1).map_err(|e| db.err(e))?,
                    r.get(2).map_err(|e| db.err(e))?,
                    r.get::<_, i64>(3).map_err(|e| db.err(e))? >> 24,
                    r.get::<_, i64>(4).map_err(|e| db.err(e))? != 0,
                    r.get::<_, i64>(5).map_err(|e| db.err(e))? != 0,
                    r.get::<_, Option<i64>>(6)
                        .map_err(|e| db.err(e))?
                        .unwrap_or(-1),
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

/// What consumes a stream of launches or calls; `reset` drops what it took so far, when the
/// export turns out not to be in start order and the rows come again, sorted.
pub trait Sink<T> {
    fn take(&mut self, item: &T);
    fn reset(&mut self);
}

impl NsysDb {
    /// Hand every kernel, memcpy and memset with its launch call to `sink`, in GPU start order
    /// (the pairs [`NsysDb::launches`] returns, in another order).
    pub fn for_each_launch(&self, sink: &mut impl Sink<Launch>) -> Result<(), Error> {
        if self.stream_launches(|l| sink.take(l))? {
            return Ok(());
        }
        tracing::debug!("export rows not in start order (or too many pending calls): sorting join");
        sink.reset();
        let mut all = self.launches()?;
        all.sort_by_key(|l| (l.start, l.api_start));
        all.iter().for_each(|l| sink.take(l));
        Ok(())
    }

    /// False when the rows are not in start order: the caller falls back.
    fn stream_launches(&self, mut f: impl FnMut(&Launch)) -> Result<bool, Error> {
        self.require(
            "CUPTI_ACTIVITY_KIND_KERNEL",
            &["start", "end", "correlationId", "globalPid"],
        )?;
        self.require(
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            &["start", "correlationId", "globalTid", "nameId"],
        )?;
        for table in [
            "CUPTI_ACTIVITY_KIND_KERNEL",
            "CUPTI_ACTIVITY_KIND_MEMCPY",
            "CUPTI_ACTIVITY_KIND_MEMSET",
            "CUPTI_ACTIVITY_KIND_RUNTIME",
        ] {
            self.check_intervals(table)?;
        }
        let (launching, graph_calls) = self.launch_names()?;
        let mut stmts = Vec::new();
        for sql in self.op_queries()? {
            stmts.push(self.conn.prepare(&sql).map_err(|e| self.err(e))?);
        }
        let mut streams = Vec::new();
        for s in &mut stmts {
            let mut o = Ops {
                rows: s.query([]).map_err(|e| self.err(e))?,
                next: None,
                last_start: i64::MIN,
            };
            if !o.advance(self)? {
                return Ok(false);
            }
            streams.push(o);
        }
        let mut calls_stmt = self
            .conn
            .prepare(
                "SELECT start, globalTid, correlationId, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME \
                 WHERE correlationId IS NOT NULL",
            )
            .map_err(|e| self.err(e))?;
        let mut calls = calls_stmt.query([]).map_err(|e| self.err(e))?;
        let mut call_next: Option<(i64, i64, i64, i64)> = None;
        let mut calls_done = false;
        let mut last_call = i64::MIN;
        // (pid, correlation id) -> (call start, tid, graph launch)
        let mut pending: HashMap<(i64, i64), (i64, i64, bool)> = HashMap::new();
        loop {
            // The op that started first among the three tables.
            let Some(k) = (0..streams.len())
                .filter(|&k| streams[k].next.is_some())
                .min_by_key(|&k| streams[k].next.map(|o| o.0))
            else {
                return Ok(true);
            };
            let op = streams[k].next.expect("chosen for having one");
            while !calls_done {
                if call_next.is_none() {
                    call_next = match calls.next().map_err(|e| self.err(e))? {
                        None => {
                            calls_done = true;
                            None
                        }
                        Some(r) => Some((
                            r.get(0).map_err(|e| self.err(e))?,
                            r.get::<_, Option<i64>>(1)
                                .map_err(|e| self.err(e))?
                                .unwrap_or(0),
                            r.get(2).map_err(|e| self.err(e))?,
                            r.get::<_, Option<i64>>(3)
                                .map_err(|e| self.err(e))?
                                .unwrap_or(-1),
                        )),
                    };
                }
                let Some((start, tid, corr, name)) = call_next else {
                    break;
                };
                if start > op.0 + SKEW_NS {
                    break;
                }
                if start < last_call {
                    return Ok(false);
                }
                last_call = start;
                if launching.contains(&name) {
                    pending.insert((tid >> 24, corr), (start, tid, graph_calls.contains(&name)));
                    if pending.len() > MAX_PENDING {
                        return Ok(false);
                    }
                }
                call_next = None;
            }
            let key = (op.3, op.2);
            if let Some(&(api_start, tid, graph_call)) = pending.get(&key) {
                f(&Launch {
                    api_start,
                    tid,
                    start: op.0,
                    end: op.1,
                    kernel: op.4,
                    graph: op.5,
                    name: op.6,
                });
                if !graph_call {
                    pending.remove(&key);
                }
            }
            if !streams[k].advance(self)? {
                return Ok(false);
            }
        }
    }

    /// The runtime/driver call names that put work on the GPU (launches, copies, sets), and of
    /// those the CUDA graph launches.
    fn launch_names(&self) -> Result<(HashSet<i64>, HashSet<i64>), Error> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, value LIKE '%GraphLaunch%' FROM StringIds \
                 WHERE value LIKE 'cu%Launch%' OR value LIKE 'cu%Memcpy%' OR value LIKE 'cu%Memset%'",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, bool>(1)?)))
            .map_err(|e| self.err(e))?;
        let (mut all, mut graph) = (HashSet::new(), HashSet::new());
        for row in rows {
            let (id, g) = row.map_err(|e| self.err(e))?;
            all.insert(id);
            if g {
                graph.insert(id);
            }
        }
        Ok((all, graph))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(l: &Launch) -> (i64, i64, i64, i64, bool, bool, i64) {
        (
            l.start,
            l.end,
            l.api_start,
            l.tid,
            l.kernel,
            l.graph,
            l.name,
        )
    }

    #[test]
    fn the_stream_holds_exactly_the_joined_launches_in_gpu_order() {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let mut dbs: Vec<_> = std::fs::read_dir(root.join("examples"))
            .unwrap()
            .flatten()
            .map(|e| e.path().join("nsys/run.sqlite"))
            .filter(|p| p.is_file())
            .collect();
        dbs.push(root.join("tests/data/nsys/run.sqlite"));
        dbs.push(root.join("examples/sample-run-2gpu/nsys/run.rank1.sqlite"));
        for p in dbs.iter().filter(|p| p.is_file()) {
            let db = NsysDb::open(p).unwrap();
            let mut want: Vec<_> = db.launches().unwrap().iter().map(key).collect();
            let mut got = Vec::new();
            assert!(
                db.stream_launches(|l| got.push(key(l))).unwrap(),
                "{}",
                p.display()
            );
            assert!(got.windows(2).all(|w| w[0].0 <= w[1].0), "{}", p.display());
            want.sort();
            got.sort();
            assert_eq!(got.len(), want.len(), "{}", p.display());
            assert_eq!(got, want, "{}", p.display());
        }
    }
}
