//! CUDA graph launches per NVTX range, read from the export whatever the config says: how many
//! graph launches each range holds, and whether the kernels inside those graphs are in the
//! export. nsys's default graph tracing (`--cuda-graph-trace=graph`) records each launch as one
//! item and none of its kernels, so a range of graph launches reads "0 ms of kernels" unless
//! this is known.

use std::collections::BTreeMap;

use serde::Serialize;

use super::nesting::{Cursor, Nesting};
use crate::parse::sqlite::{GraphLaunch, NvtxRange};

/// One range name's graph launches, over its instances.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct GraphUse {
    /// `cudaGraphLaunch`/`cuGraphLaunch` calls made inside the range (nested ranges included).
    pub(crate) launches: u64,
    /// Of those, launches nsys recorded as one whole-graph item on the GPU (graph-level trace).
    pub(crate) graph_level: u64,
    /// The GPU time of those whole-graph items (first kernel start to last kernel end of each).
    pub(crate) graph_level_gpu_ns: i64,
}

/// Graph launches by range name; ranges without any are absent.
pub(crate) fn per_range(
    ranges: &[NvtxRange],
    nest: &Nesting,
    launches: &[GraphLaunch],
) -> BTreeMap<String, GraphUse> {
    let mut out: BTreeMap<String, GraphUse> = BTreeMap::new();
    let mut cursor = Cursor::default();
    for l in launches {
        for i in nest.holding_call(&mut cursor, ranges, l.tid, l.api_start) {
            let u = out.entry(ranges[i].name.to_string()).or_default();
            u.launches += 1;
            if let Some((s, e)) = l.gpu {
                u.graph_level += 1;
                u.graph_level_gpu_ns += e - s;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::sqlite::NsysDb;

    #[test]
    fn the_graph_level_capture_puts_its_15_launches_in_decode() {
        let db = NsysDb::open(&crate::testutil::data(
            "hf/static-graphtrace/nsys/run.sqlite",
        ))
        .unwrap();
        let ranges = db.ranges().unwrap();
        let nest = Nesting::new(&ranges);
        let per = per_range(&ranges, &nest, &db.graph_launches().unwrap());
        let d = &per["decode"];
        assert_eq!((d.launches, d.graph_level), (15, 15));
        assert!(d.graph_level_gpu_ns > 0);
    }
}
