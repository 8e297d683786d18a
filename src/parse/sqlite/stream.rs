//! Launches and API calls streamed from the export in one pass, with memory that does not
//! grow with them. The kernel, memcpy and memset tables are merged by start as the export
//! stores them (GPU start order); each piece of work is matched to its launch call by a merge
//! join on the runtime table, also in start order: a call is read once the GPU work being
//! matched has started after it, and kept only until its work is matched (a CUDA graph
//! launch for the whole capture: its kernels share its correlation id). Every runtime row
//! read goes to the API-call consumer too (the ledger), so the largest table is read once. An
//! export whose rows are not in start order is read with the sorting join instead, which is
//! correct at any order but holds every launch.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::{ApiCall, ApiKind, GraphLaunch, Launch, NsysDb};
use crate::error::Error;

mod ops;

const RUNTIME: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";

/// GPU work may carry a timestamp slightly before its call's (clock conversion); calls this
/// much later than the work are read before it is matched.
const SKEW_NS: i64 = 1_000_000;
/// Calls waiting for their work beyond which the sorting join takes over (bounded memory).
const MAX_PENDING: usize = 4_000_000;

/// What consumes a stream of launches or calls; `reset` drops what it took so far, when the
/// export turns out not to be in start order and the rows come again, sorted.
pub trait Sink<T> {
    fn take(&mut self, item: &T);
    fn reset(&mut self);
    /// Of launches: the kernels (mangled name ids) whose launch configuration this consumer
    /// reads; the others' come with their thread blocks alone from the one-pass stream (six
    /// columns fewer to read per launch), as a grid of (blocks, 1, 1). None: every launch's.
    fn configs_of(&self) -> Option<&HashSet<i64>> {
        None
    }
}

/// A consumer that wants nothing.
pub struct Ignore;

impl<T> Sink<T> for Ignore {
    fn take(&mut self, _: &T) {}
    fn reset(&mut self) {}
}

/// Two consumers of one stream (each reads every launch once, the export is read once);
/// configurations are read for every launch unless both name theirs alike (or one names none).
pub struct Tee<'a, A, B>(pub &'a mut A, pub &'a mut B);

impl<T, A: Sink<T>, B: Sink<T>> Sink<T> for Tee<'_, A, B> {
    fn take(&mut self, item: &T) {
        self.0.take(item);
        self.1.take(item);
    }
    fn reset(&mut self) {
        self.0.reset();
        self.1.reset();
    }
    fn configs_of(&self) -> Option<&HashSet<i64>> {
        match (self.0.configs_of(), self.1.configs_of()) {
            (Some(a), Some(b)) if a == b || b.is_empty() => Some(a),
            (Some(a), Some(b)) if a.is_empty() => Some(b),
            _ => None,
        }
    }
}

/// What the runtime reader thread sends: the launch calls (start, tid, correlation id, graph
/// launch) in export order, or why it stopped.
enum FromReader {
    Calls(Vec<LaunchCall>),
    Failed(String),
    OutOfOrder,
}

/// Rows per batch from the reader thread, and batches in flight (bounds the memory).
const BATCH: usize = 8192;
const IN_FLIGHT: usize = 4;

/// A launch call: start, tid, correlation id, whether it launches a CUDA graph.
type LaunchCall = (i64, i64, i64, bool);

/// What the reader needs to know of one call name.
#[derive(Clone, Copy)]
struct Name {
    kind: ApiKind,
    /// It puts work on the GPU (launch, copy, set).
    launching: bool,
    /// It launches a CUDA graph.
    graph: bool,
}

const UNKNOWN: Name = Name {
    kind: ApiKind::Other,
    launching: false,
    graph: false,
};

/// What the reader needs to know of the call names, by string id: a table indexed by id where
/// the ids are dense (nsys numbers its strings from 0), one lookup per runtime row instead of
/// three hash lookups (perf: a tenth of the reader's time on a 1.5M-launch export).
struct Names {
    dense: Vec<Name>,
    sparse: HashMap<i64, Name>,
}

impl Names {
    /// Ids up to this many are kept in the table.
    const DENSE_MAX: i64 = 1 << 22;

    fn new(kinds: HashMap<i64, ApiKind>, launching: &HashSet<i64>, graph: &HashSet<i64>) -> Names {
        let mut names = Names {
            dense: Vec::new(),
            sparse: HashMap::default(),
        };
        for (id, kind) in kinds {
            let n = Name {
                kind,
                launching: launching.contains(&id),
                graph: graph.contains(&id),
            };
            match usize::try_from(id).ok().filter(|_| id < Self::DENSE_MAX) {
                Some(i) => {
                    if names.dense.len() <= i {
                        names.dense.resize(i + 1, UNKNOWN);
                    }
                    names.dense[i] = n;
                }
                None => {
                    names.sparse.insert(id, n);
                }
            }
        }
        names
    }

    fn of(&self, id: i64) -> Name {
        match usize::try_from(id).ok().and_then(|i| self.dense.get(i)) {
            Some(n) => *n,
            None => self.sparse.get(&id).copied().unwrap_or(UNKNOWN),
        }
    }
}

/// Read the runtime table in export order on a thread of its own (its own connection): every
/// call goes to `calls` (the ledger) there, and the launch calls to the join, in batches. So
/// the largest table is read once, and its decoding and the ledger run beside the join.
fn read_runtime(
    path: &std::path::Path,
    names: &Names,
    calls: &mut impl Sink<ApiCall>,
    tx: std::sync::mpsc::SyncSender<FromReader>,
) {
    let mut read = || -> Result<Option<FromReader>, String> {
        let conn = rusqlite::Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| e.to_string())?;

        let mut rows = super::raw::RawRows::prepare(
            &conn,
            "SELECT rowid, start, end, globalTid, correlationId, nameId \
             FROM CUPTI_ACTIVITY_KIND_RUNTIME",
        )?;
        let mut batch = Vec::with_capacity(BATCH);
        let mut last = i64::MIN;
        while rows.step()? {
            let r = &rows;
            // A value of the wrong type, named with its row.
            let at = |e: String| match r.int(0) {
                Ok(Some(rowid)) => format!("table CUPTI_ACTIVITY_KIND_RUNTIME, rowid {rowid}: {e}"),
                _ => format!("table CUPTI_ACTIVITY_KIND_RUNTIME: {e}"),
            };
            let int = |i| r.int(i).map_err(at);
            let (start, end) = (int(1)?, int(2)?);
            let Some(start) = start.filter(|&s| end.is_none_or(|e| e >= s)) else {
                let rowid = int(0)?.unwrap_or(-1);
                return Ok(Some(FromReader::Failed(format!(
                    "table CUPTI_ACTIVITY_KIND_RUNTIME, rowid {rowid}: start {} and end {} are not a time span (end before start, or no start)",
                    start.map_or("NULL".into(), |v| v.to_string()),
                    end.map_or("NULL".into(), |v| v.to_string())
                ))));
            };
            if start < last {
                return Ok(Some(FromReader::OutOfOrder));
            }
            last = start;
            let tid = int(3)?.unwrap_or(0);
            let name = names.of(int(5)?.unwrap_or(-1));
            if let Some(end) = end {
                calls.take(&ApiCall {
                    start,
                    end,
                    tid,
                    kind: name.kind,
                    corr: int(4)?.unwrap_or(-1),
                });
            }
            if name.launching {
                let corr = int(4)?.unwrap_or(-1);
                batch.push((start, tid, corr, name.graph));
                if batch.len() == BATCH {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                    if tx.send(FromReader::Calls(full)).is_err() {
                        return Ok(None); // the join stopped listening: it fell back
                    }
                }
            }
        }
        Ok(Some(FromReader::Calls(batch)))
    };
    let last = read().unwrap_or_else(|e| Some(FromReader::Failed(e)));
    if let Some(m) = last {
        let _ = tx.send(m);
    }
}

/// The launch calls as the join consumes them.
struct Calls {
    rx: std::sync::mpsc::Receiver<FromReader>,
    batch: std::vec::IntoIter<LaunchCall>,
}

impl Calls {
    /// The next launch call (None at the end); Err(None) when the runtime rows are out of
    /// start order.
    fn next(&mut self, db: &NsysDb) -> Result<Option<LaunchCall>, Option<Error>> {
        loop {
            if let Some(c) = self.batch.next() {
                return Ok(Some(c));
            }
            match self.rx.recv() {
                Ok(FromReader::Calls(b)) => self.batch = b.into_iter(),
                Ok(FromReader::Failed(e)) => return Err(Some(db.err(e))),
                Ok(FromReader::OutOfOrder) => return Err(None),
                Err(_) => return Ok(None),
            }
        }
    }
}

impl NsysDb {
    /// Hand every kernel, memcpy and memset with its launch call to `launches` (in GPU start
    /// order: the pairs [`NsysDb::launches`] returns) and every CUDA API call to `calls` (in
    /// start order), in one pass over the export where its rows are in start order. Returns
    /// the CUDA graph launches ([`NsysDb::graph_launches`]), seen on the way: the runtime table
    /// is the largest, and a query of its own for them read it a second time.
    pub fn stream(
        &self,
        launches: &mut impl Sink<Launch>,
        calls: &mut (impl Sink<ApiCall> + Send),
    ) -> Result<Vec<GraphLaunch>, Error> {
        let mut graph_calls = Vec::new();
        if self.stream_both(launches, calls, &mut graph_calls)? {
            return self.with_graph_spans(graph_calls);
        }
        tracing::debug!("export rows not in start order (or too many pending calls): sorting join");
        launches.reset();
        calls.reset();
        let mut all = self.launches()?;
        all.sort_by_key(|l| (l.start, l.api_start));
        all.iter().for_each(|l| launches.take(l));
        self.for_each_api_call(calls)?;
        self.graph_launches()
    }

    /// [`NsysDb::stream`] of the launches alone.
    pub fn for_each_launch(&self, sink: &mut impl Sink<Launch>) -> Result<(), Error> {
        self.stream(sink, &mut Ignore).map(drop)
    }

    /// Every CUDA API call in start order, sorted by SQLite where the export is not (on
    /// disk, not in memory). Nothing without the runtime table.
    pub fn for_each_api_call(&self, sink: &mut impl Sink<ApiCall>) -> Result<(), Error> {
        if !self.has_columns(RUNTIME, &["start", "end", "globalTid", "nameId"])? {
            return Ok(());
        }
        self.check_intervals("CUPTI_ACTIVITY_KIND_RUNTIME")?;
        let kinds = self.api_kinds()?;
        let mut stmt = self
            .conn
            .prepare(
                "SELECT start, end, globalTid, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME \
                 WHERE end IS NOT NULL ORDER BY start",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let name = r.get::<_, Option<i64>>(3).map_err(|e| self.err(e))?;
            sink.take(&ApiCall {
                start: r.get(0).map_err(|e| self.err(e))?,
                end: r.get(1).map_err(|e| self.err(e))?,
                tid: r
                    .get::<_, Option<i64>>(2)
                    .map_err(|e| self.err(e))?
                    .unwrap_or(0),
                kind: name
                    .and_then(|n| kinds.get(&n).copied())
                    .unwrap_or(ApiKind::Other),
                // The correlation id is read where the join needs it, not here.
                corr: -1,
            });
        }
        Ok(())
    }

    /// The runtime table with what the one-pass join and the ledger read.
    fn has_runtime(&self) -> Result<bool, Error> {
        self.has_columns(
            RUNTIME,
            &["start", "end", "globalTid", "nameId", "correlationId"],
        )
    }

    /// What each call name does to the calling thread (see [`ApiKind::of`]), by string id.
    fn api_kinds(&self) -> Result<HashMap<i64, ApiKind>, Error> {
        Ok(self
            .strings()?
            .into_iter()
            .map(|(id, n)| (id, ApiKind::of(&n)))
            .collect())
    }

    /// False when the rows are not in start order: the caller falls back.
    fn stream_both(
        &self,
        launches: &mut impl Sink<Launch>,
        calls: &mut (impl Sink<ApiCall> + Send),
        graph_calls: &mut Vec<(i64, i64, i64)>,
    ) -> Result<bool, Error> {
        self.require(
            "CUPTI_ACTIVITY_KIND_KERNEL",
            &["start", "end", "correlationId", "globalPid"],
        )?;
        self.require(
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            &["start", "correlationId", "globalTid"],
        )?;
        if !self.has_runtime()? {
            return Ok(false);
        }
        let (launching, graph) = self.launch_names()?;
        let names = Names::new(self.api_kinds()?, &launching, &graph);
        let queries = self.op_queries()?;
        let wanted = launches.configs_of().cloned();
        let (tx, rx) = std::sync::mpsc::sync_channel(IN_FLIGHT);
        let path = self.path.clone();
        std::thread::scope(|scope| {
            let names = &names;
            scope.spawn(move || read_runtime(&path, names, calls, tx));
            let mut ops = ops::OpsRx::spawn(scope, &self.path, &queries, wanted.as_ref());
            let mut rt = Calls {
                rx,
                batch: Vec::new().into_iter(),
            };
            let joined = self.join(&mut ops, &mut rt, launches, graph_calls);
            // The reader owns the ledger's calls: let it read to the end (or stop it by
            // hanging up when the join falls back).
            if matches!(joined, Ok(true)) {
                loop {
                    match rt.next(self) {
                        Ok(Some((start, tid, corr, true))) => graph_calls.push((start, tid, corr)),
                        Ok(Some(_)) => {}
                        Ok(None) => break,
                        Err(None) => return Ok(false),
                        Err(Some(e)) => return Err(e),
                    }
                }
            }
            joined
        })
    }

    /// The merge join of the GPU work (in start order) with the launch calls.
    /// The graph launch calls it reads go to `graph_calls`.
    fn join(
        &self,
        ops: &mut ops::OpsRx,
        rt: &mut Calls,
        launches: &mut impl Sink<Launch>,
        graph_calls: &mut Vec<(i64, i64, i64)>,
    ) -> Result<bool, Error> {
        let mut call_next: Option<LaunchCall> = None;
        let mut calls_done = false;
        // (pid, correlation id) -> (call start, tid, graph launch)
        let mut pending: HashMap<(i64, i64), (i64, i64, bool)> = HashMap::default();
        loop {
            let op = match ops.next() {
                Ok(Some(op)) => op,
                Ok(None) => {
                    // The call read ahead of the work is the caller's to drain after.
                    if let Some((start, tid, corr, true)) = call_next {
                        graph_calls.push((start, tid, corr));
                    }
                    return Ok(true);
                }
                Err(ops::Stop::Failed(e)) => return Err(self.err(e)),
                Err(ops::Stop::OutOfOrder) => return Ok(false),
            };
            while !calls_done {
                if call_next.is_none() {
                    call_next = match rt.next(self) {
                        Ok(None) => {
                            calls_done = true;
                            None
                        }
                        Ok(c) => c,
                        Err(Some(e)) => return Err(e),
                        Err(None) => return Ok(false),
                    };
                }
                let Some((start, tid, corr, graph_call)) = call_next else {
                    break;
                };
                if start > op.0 + SKEW_NS {
                    break;
                }
                pending.insert((tid >> 24, corr), (start, tid, graph_call));
                if graph_call {
                    graph_calls.push((start, tid, corr));
                }
                if pending.len() > MAX_PENDING {
                    return Ok(false);
                }
                call_next = None;
            }
            let key = (op.3, op.2);
            if let Some(&(api_start, tid, graph_call)) = pending.get(&key) {
                launches.take(&Launch {
                    api_start,
                    tid,
                    start: op.0,
                    end: op.1,
                    kernel: op.4,
                    graph: op.5,
                    name: op.6,
                    mangled: op.7,
                    config: op.8,
                });
                if !graph_call {
                    pending.remove(&key);
                }
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
        let (mut all, mut graph) = (HashSet::default(), HashSet::default());
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

    struct Got(Vec<(i64, i64, i64, i64, bool, bool, i64)>);
    impl Sink<Launch> for Got {
        fn take(&mut self, l: &Launch) {
            self.0.push(key(l));
        }
        fn reset(&mut self) {
            panic!("every committed export streams in start order");
        }
    }
    struct Count(usize);
    impl Sink<ApiCall> for Count {
        fn take(&mut self, _: &ApiCall) {
            self.0 += 1;
        }
        fn reset(&mut self) {
            self.0 = 0;
        }
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
        // Traced as whole graphs: each launch with its graph's GPU span.
        dbs.push(root.join("tests/data/hf/static-graphtrace/nsys/run.sqlite"));
        for p in dbs.iter().filter(|p| p.is_file()) {
            let db = NsysDb::open(p).unwrap();
            let mut want: Vec<_> = db.launches().unwrap().iter().map(key).collect();
            let mut sink = Got(Vec::new());
            let mut calls = Count(0);
            let mut graph_calls = Vec::new();
            assert!(
                db.stream_both(&mut sink, &mut calls, &mut graph_calls)
                    .unwrap(),
                "{}",
                p.display()
            );
            // The graph launches seen on the way are those the query of their own finds.
            let order = |g: &GraphLaunch| (g.api_start, g.tid);
            let mut streamed = db.with_graph_spans(graph_calls).unwrap();
            let mut queried = db.graph_launches().unwrap();
            streamed.sort_by_key(order);
            queried.sort_by_key(order);
            assert_eq!(streamed, queried, "{}", p.display());
            // Every runtime row with an end reached the call consumer.
            let mut all_calls = Count(0);
            db.for_each_api_call(&mut all_calls).unwrap();
            assert_eq!(calls.0, all_calls.0, "{}", p.display());
            let mut got = sink.0;
            assert!(got.windows(2).all(|w| w[0].0 <= w[1].0), "{}", p.display());
            want.sort();
            got.sort();
            assert_eq!(got.len(), want.len(), "{}", p.display());
            assert_eq!(got, want, "{}", p.display());
        }
    }
}
