//! CUDA graph launches: each `cudaGraphLaunch`/`cuGraphLaunch` call, and, where nsys traced
//! graphs as whole graphs (`--cuda-graph-trace=graph`, its default), the graph's execution on
//! the GPU (CUPTI_ACTIVITY_KIND_GRAPH_TRACE, matched by correlation id within the process).

use super::NsysDb;
use crate::error::Error;

/// One graph launch call and, when the export has it, its execution as one item on the GPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GraphLaunch {
    pub api_start: i64,
    pub tid: i64,
    /// GPU start and end of the whole graph (graph-level trace only).
    pub gpu: Option<(i64, i64)>,
}

const GRAPH_TRACE: &str = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE";

impl NsysDb {
    /// Every graph launch call in start order (none when the export has no runtime table).
    pub fn graph_launches(&self) -> Result<Vec<GraphLaunch>, Error> {
        if !self.has_columns(
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            &["start", "globalTid", "correlationId", "nameId"],
        )? || !self.has_columns("StringIds", &["id", "value"])?
        {
            return Ok(Vec::new());
        }
        let sql =
            "SELECT r.start, r.globalTid, r.correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME r \
             WHERE r.nameId IN (SELECT id FROM StringIds WHERE value LIKE 'cudaGraphLaunch%' \
             OR value LIKE 'cuGraphLaunch%') ORDER BY r.start";
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.err(e))?;
        let calls = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, Option<i64>>(1)?.unwrap_or(0),
                    r.get::<_, Option<i64>>(2)?.unwrap_or(-1),
                ))
            })
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        self.with_graph_spans(calls)
    }

    /// The graph launch calls (start, tid, correlation id) with their whole-graph GPU spans
    /// where the export has them: matched by correlation id within the process.
    pub(super) fn with_graph_spans(
        &self,
        calls: Vec<(i64, i64, i64)>,
    ) -> Result<Vec<GraphLaunch>, Error> {
        let traced = !calls.is_empty()
            && self.has_columns(GRAPH_TRACE, &["start", "end", "correlationId", "globalPid"])?;
        let mut spans = rustc_hash::FxHashMap::default();
        if traced {
            let sql = format!(
                "SELECT globalPid / 16777216, correlationId, start, end FROM {GRAPH_TRACE}"
            );
            let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
            let rows = stmt
                .query_map([], |r| {
                    let key: (Option<i64>, Option<i64>) = (r.get(0)?, r.get(1)?);
                    let span: (Option<i64>, Option<i64>) = (r.get(2)?, r.get(3)?);
                    Ok((key, span))
                })
                .map_err(|e| self.err(e))?;
            for row in rows {
                if let ((Some(pid), Some(corr)), (Some(s), Some(e))) =
                    row.map_err(|e| self.err(e))?
                {
                    spans.insert((pid, corr), (s, e));
                }
            }
        }
        Ok(calls
            .into_iter()
            .map(|(api_start, tid, corr)| GraphLaunch {
                api_start,
                tid,
                gpu: spans
                    .get(&(tid / 16_777_216, corr))
                    .copied()
                    .filter(|(s, e)| e >= s),
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The static-cache capture traced with nsys's default graph-level tracing: 15 graph
    /// launches, each one item on the GPU.
    #[test]
    fn a_graph_level_capture_gives_each_launch_its_gpu_span() {
        let p = crate::testutil::data("hf/static-graphtrace/nsys/run.sqlite");
        let g = NsysDb::open(&p).unwrap().graph_launches().unwrap();
        assert_eq!(g.len(), 15);
        assert!(g.iter().all(|l| l.gpu.is_some_and(|(s, e)| e > s)));
    }

    /// A node-level capture has graph launches and no graph-level items.
    #[test]
    fn a_node_level_capture_has_launches_without_graph_items() {
        let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("examples/sample-run-hf-static/nsys/run.sqlite");
        let g = NsysDb::open(&p).unwrap().graph_launches().unwrap();
        assert!(!g.is_empty());
        assert!(g.iter().all(|l| l.gpu.is_none()));
    }
}
