//! NVTX ranges from the export: push/pop and start/end ranges with their names (registered
//! strings, domains), and cudaProfilerStart/Stop windows read as one more range.

use super::*;

/// NVTX event types in the nsys schema (ENUM_NSYS_EVENT_TYPE).
const NVTX_PUSH_POP: i64 = 59;
const NVTX_START_END: i64 = 60;
const NVTX_DOMAIN_CREATE: i64 = 75;
const NVTX_MARK: i64 = 34;

impl NsysDb {
    /// Every closed NVTX range, in start order.
    pub fn ranges(&self) -> Result<Vec<NvtxRange>, Error> {
        Ok(self.ranges_and_library_names(None)?.0)
    }

    /// Every closed NVTX range, in start order, and the names of those that live only in an
    /// NVTX domain of their own (`CCCL` for CUB's `cub::DeviceRadixSort`, a library's), other
    /// than `keep` (the domain the user captured in): ranges a library emits, not steps of the
    /// workload. No names for an export without domains. One pass over the events for both.
    pub fn ranges_and_library_names(
        &self,
        keep: Option<&str>,
    ) -> Result<(Vec<NvtxRange>, std::collections::HashSet<String>), Error> {
        let cols = self.columns("NVTX_EVENTS")?;
        if cols.is_empty() {
            return Ok(Default::default());
        }
        self.check_intervals("NVTX_EVENTS")?;
        let name = self.nvtx_name_expr(&cols, "e")?;
        let kept = match cols.iter().any(|c| c == "domainId") {
            true => Some(self.domains_named(&cols, keep)?),
            false => None,
        };
        let domain = match kept {
            Some(_) => "COALESCE(e.domainId, 0)",
            None => "0",
        };
        let sql = format!(
            "SELECT {name}, e.start, e.end, e.eventType, e.globalTid, {domain} FROM NVTX_EVENTS e \
             WHERE e.eventType IN ({NVTX_PUSH_POP}, {NVTX_START_END}) AND e.end IS NOT NULL \
             ORDER BY e.start"
        );
        let count: i64 = self
            .conn
            .query_row(
                &format!(
                    "SELECT count(*) FROM NVTX_EVENTS e WHERE e.eventType IN ({NVTX_PUSH_POP}, {NVTX_START_END}) AND e.end IS NOT NULL"
                ),
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))?;
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.err(e))?;
        // Sized once: a doubling vector would hold up to twice the ranges at its peak.
        let mut ranges = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
        // Each name once (the shared string is its own key), and whether every instance of it
        // so far was in a foreign domain.
        let mut names: rustc_hash::FxHashMap<std::sync::Arc<str>, std::cell::Cell<bool>> =
            Default::default();
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let e = |e| self.err(e);
            let text: Option<&str> = match r.get_ref(0).map_err(e)? {
                rusqlite::types::ValueRef::Text(t) => std::str::from_utf8(t).ok(),
                _ => None,
            };
            let text = text.unwrap_or_default();
            let domain: i64 = r.get(5).map_err(e)?;
            let foreign = kept
                .as_ref()
                .is_some_and(|k| domain != 0 && !k.contains(&domain));
            let name = match names.get_key_value(text) {
                Some((n, all_foreign)) => {
                    all_foreign.set(all_foreign.get() & foreign);
                    n.clone()
                }
                None => {
                    let n: std::sync::Arc<str> = text.into();
                    names.insert(n.clone(), foreign.into());
                    n
                }
            };
            ranges.push(NvtxRange {
                name,
                start: r.get(1).map_err(e)?,
                end: r.get(2).map_err(e)?,
                push_pop: r.get::<_, i64>(3).map_err(e)? == NVTX_PUSH_POP,
                tid: r.get::<_, Option<i64>>(4).map_err(e)?.unwrap_or(0),
            });
        }
        drop(rows);
        let windows = self.profiler_windows()?;
        if !windows.is_empty() {
            ranges.extend(windows);
            ranges.sort_by_key(|r| r.start);
        }
        let library = names
            .into_iter()
            .filter(|(_, all_foreign)| all_foreign.get())
            .map(|(n, _)| n.to_string())
            .collect();
        Ok((ranges, library))
    }

    /// The ids of the NVTX domains named `keep` (a domain is named by its create event, type
    /// 75, whose text is the domain's name).
    fn domains_named(
        &self,
        cols: &[String],
        keep: Option<&str>,
    ) -> Result<rustc_hash::FxHashSet<i64>, Error> {
        let Some(keep) = keep else {
            return Ok(Default::default());
        };
        let domain_name = self.nvtx_name_expr(cols, "d")?;
        let sql = format!(
            "SELECT d.domainId FROM NVTX_EVENTS d \
             WHERE d.eventType = {NVTX_DOMAIN_CREATE} AND {domain_name} = ?1 AND d.domainId IS NOT NULL"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([keep], |r| r.get::<_, i64>(0))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// The SQL for an NVTX event's name (`e` is NVTX_EVENTS, `cols` its columns): older
    /// exports have only `text`; newer ones may store the name in StringIds.
    fn nvtx_name_expr(&self, cols: &[String], alias: &str) -> Result<String, Error> {
        let ids = cols.iter().any(|c| c == "textId") && !self.columns("StringIds")?.is_empty();
        Ok(match ids {
            true => format!(
                "COALESCE({alias}.text, (SELECT value FROM StringIds s WHERE s.id = {alias}.textId))"
            ),
            false => format!("{alias}.text"),
        })
    }

    /// The distinct names of the closed NVTX ranges in the export (no profiler windows).
    pub fn range_names(&self) -> Result<Vec<String>, Error> {
        let cols = self.columns("NVTX_EVENTS")?;
        if cols.is_empty() {
            return Ok(Vec::new());
        }
        let name = self.nvtx_name_expr(&cols, "e")?;
        let sql = format!(
            "SELECT DISTINCT {name} FROM NVTX_EVENTS e \
             WHERE e.eventType IN ({NVTX_PUSH_POP}, {NVTX_START_END}) AND e.end IS NOT NULL"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let names = stmt
            .query_map([], |r| r.get::<_, Option<String>>(0))
            .map_err(|e| self.err(e))?
            .filter_map(|r| r.ok().flatten())
            .collect();
        Ok(names)
    }

    /// The workload's cudaProfilerStart/Stop windows, as start/end ranges named
    /// [`PROFILER_WINDOW`]: from the end of each start call to the start of the next stop
    /// call (vLLM's and TensorRT-LLM's profiler switches make these).
    fn profiler_windows(&self) -> Result<Vec<NvtxRange>, Error> {
        if !self.has_columns("CUPTI_ACTIVITY_KIND_RUNTIME", &["start", "end", "nameId"])? {
            return Ok(Vec::new());
        }
        // The call names first (a few strings): most runs never call the profiler API, and
        // then the runtime table is not read at all.
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, value LIKE '%ProfilerStart%' FROM StringIds \
                 WHERE value LIKE 'cu%ProfilerSt%'",
            )
            .map_err(|e| self.err(e))?;
        let ids: Vec<(i64, bool)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| self.err(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.err(e))?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let starts: Vec<String> = ids
            .iter()
            .filter(|i| i.1)
            .map(|i| i.0.to_string())
            .collect();
        let all: Vec<String> = ids.iter().map(|i| i.0.to_string()).collect();
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT start, end, nameId IN ({}) FROM CUPTI_ACTIVITY_KIND_RUNTIME \
                 WHERE nameId IN ({}) AND end IS NOT NULL ORDER BY start",
                if starts.is_empty() {
                    "NULL".to_string()
                } else {
                    starts.join(",")
                },
                all.join(",")
            ))
            .map_err(|e| self.err(e))?;
        let calls = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, bool>(2)?,
                ))
            })
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        let mut open: Option<i64> = None;
        for (start, end, is_start) in calls {
            match (is_start, open) {
                (true, None) => open = Some(end),
                (false, Some(from)) => {
                    out.push(NvtxRange {
                        name: PROFILER_WINDOW.into(),
                        start: from,
                        end: start.max(from),
                        push_pop: false,
                        tid: 0,
                    });
                    open = None;
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// NVTX marks whose text starts with `prefix` (stage2's hook: `stage2:`), as (time,
    /// globalTid, text), in time order; empty without NVTX.
    pub fn marks(&self, prefix: &str) -> Result<Vec<(i64, i64, String)>, Error> {
        if !self.has_columns("NVTX_EVENTS", &["start", "text", "eventType", "globalTid"])? {
            return Ok(Vec::new());
        }
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT start, globalTid, text FROM NVTX_EVENTS \
                 WHERE eventType = {NVTX_MARK} AND substr(text, 1, ?1) = ?2 ORDER BY start"
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(rusqlite::params![prefix.len() as i64, prefix], |r| {
                Ok((
                    r.get(0)?,
                    r.get::<_, Option<i64>>(1)?.unwrap_or(0),
                    r.get(2)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }
}
