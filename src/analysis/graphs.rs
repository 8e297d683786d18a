//! CUDA graph launches per NVTX range, read from the export whatever the config says: how many
//! graph launches each range holds, and whether the kernels inside those graphs are in the
//! export. nsys's default graph tracing (`--cuda-graph-trace=graph`) records each launch as one
//! item and none of its kernels, so a range of graph launches reads "0 ms of kernels" unless
//! this is known.

use std::collections::BTreeMap;

use serde::Serialize;

use super::nesting::{Cursor, Nesting};
use crate::error::Error;
use crate::parse::sqlite::{GraphLaunch, Launch, NsysDb, NvtxRange, Sink};

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

/// What ncu counts as workloads in one instance of a range when it profiles whole graphs
/// (`--graph-profiling graph`): each graph launch call, and each kernel launched outside a
/// graph; with the GPU time of their kernels in the export.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub(crate) struct StepWork {
    pub(crate) graphs: u64,
    pub(crate) kernels: u64,
    pub(crate) kernel_ns: i64,
}

impl StepWork {
    pub(crate) fn workloads(&self) -> u64 {
        self.graphs + self.kernels
    }

    /// "1 CUDA graph launch and 3 kernels outside graphs".
    pub(crate) fn describe(&self) -> String {
        format!(
            "{} and {}",
            crate::model::graph_launches(self.graphs),
            crate::model::kernels_outside(self.kernels)
        )
    }
}

/// Per instance of range `name`, in start order: its [`StepWork`]. Launches are placed by
/// their launch call, as ncu's NVTX filter places them.
pub(crate) fn step_work(
    db: &NsysDb,
    ranges: &[NvtxRange],
    name: &str,
) -> Result<Vec<StepWork>, Error> {
    let nest = Nesting::new(ranges);
    // Range index -> position among the instances of `name`.
    let mut slot = vec![usize::MAX; ranges.len()];
    let mut n = 0;
    for (i, r) in ranges.iter().enumerate() {
        if *r.name == *name {
            slot[i] = n;
            n += 1;
        }
    }
    let mut work = vec![StepWork::default(); n];
    let mut cursor = Cursor::default();
    for l in db.graph_launches()? {
        for i in nest.holding_call(&mut cursor, ranges, l.tid, l.api_start) {
            if let Some(w) = work.get_mut(slot[i]) {
                w.graphs += 1;
            }
        }
    }
    // No instance launches a graph: nothing to measure whole, and no second read of every
    // launch (0.6 s on a 1.5M-launch export) to count the kernels beside none.
    if work.iter().all(|w| w.graphs == 0) {
        return Ok(work);
    }
    struct Kernels<'a> {
        nest: &'a Nesting,
        ranges: &'a [NvtxRange],
        slot: &'a [usize],
        work: &'a mut Vec<StepWork>,
        cursor: Cursor,
    }
    impl Sink<Launch> for Kernels<'_> {
        fn take(&mut self, l: &Launch) {
            if !l.kernel {
                return;
            }
            let holding = self
                .nest
                .holding_call(&mut self.cursor, self.ranges, l.tid, l.api_start);
            for i in holding {
                if let Some(w) = self.work.get_mut(self.slot[i]) {
                    w.kernels += u64::from(!l.graph);
                    w.kernel_ns = w.kernel_ns.saturating_add(l.kernel_ns());
                }
            }
        }
        fn reset(&mut self) {
            self.work.iter_mut().for_each(|w| {
                w.kernels = 0;
                w.kernel_ns = 0;
            });
            self.cursor = Cursor::default();
        }
    }
    db.for_each_launch(&mut Kernels {
        nest: &nest,
        ranges,
        slot: &slot,
        work: &mut work,
        cursor: Cursor::default(),
    })?;
    Ok(work)
}

/// The instance a graph-level profile measures, and the workloads ncu skips to reach it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub(crate) struct StepChoice {
    /// Its position among the range's instances, from 1.
    pub(crate) instance: usize,
    pub(crate) skip: u64,
    pub(crate) work: StepWork,
}

/// The instance a graph-level profile measures: where the range's instances are of several
/// kinds, the first with graph launches among `typical` (the 0-based ordinals of its most
/// numerous group: a steady step, not the warm-up that recorded the graphs, which the floor
/// would be set against), the range's first with graph launches left out; otherwise the second
/// instance with graph launches (the first often records or warms the graphs up), or the only
/// one. None when no instance launches a graph.
pub(crate) fn choose_step(per_instance: &[StepWork], typical: &[usize]) -> Option<StepChoice> {
    let graphs = |i: usize| per_instance.get(i).is_some_and(|w| w.graphs > 0);
    let with: Vec<usize> = (0..per_instance.len()).filter(|&i| graphs(i)).collect();
    // Never the range's first instance with graphs where another will do, group or not.
    let pick = match typical
        .iter()
        .copied()
        .find(|&i| graphs(i) && Some(&i) != with.first())
    {
        Some(i) => i,
        None => *with.get(1).or(with.first())?,
    };
    Some(StepChoice {
        instance: pick + 1,
        skip: per_instance[..pick].iter().map(StepWork::workloads).sum(),
        work: per_instance[pick],
    })
}

/// One instance as ncu measured it whole: DRAM bytes and GPU time summed over its workloads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct MeasuredStep {
    pub(crate) range: String,
    pub(crate) choice: StepChoice,
    /// Results ncu wrote (graph launches and kernels): equal to the choice's workloads when it
    /// measured the whole instance.
    pub(crate) results: u64,
    pub(crate) dram_bytes: f64,
    pub(crate) gpu_ns: f64,
}

/// Sum a graph-level import (`ncu --csv --page raw`) into one step. None without DRAM bytes.
pub(crate) fn measured_step(
    report: &crate::parse::ncu::NcuReport,
    range: &str,
    choice: StepChoice,
) -> Option<MeasuredStep> {
    use crate::parse::ncu::{ns_per, TIME};
    let unit = |m: &str| report.units.get(m).map(String::as_str).unwrap_or("");
    // Each result's value times its launches (one per result here), summed.
    let total = |m: &str| -> Option<f64> {
        let per: Vec<f64> = report
            .kernels
            .iter()
            .filter_map(|k| Some(k.metrics.get(m)? * k.instances as f64))
            .collect();
        (!per.is_empty()).then(|| per.iter().sum::<f64>())
    };
    let bytes = |m: &str| total(m).map(|v| v * super::roofline::unit_scale(unit(m)));
    Some(MeasuredStep {
        range: range.to_string(),
        choice,
        results: report.rows,
        dram_bytes: bytes(DRAM_READ)? + bytes(DRAM_WRITE).unwrap_or(0.0),
        gpu_ns: total(TIME)
            .zip(ns_per(unit(TIME)))
            .map_or(0.0, |(v, k)| v * k),
    })
}

/// The DRAM metrics of a graph-level profile (besides ncu's time).
pub(crate) const DRAM_READ: &str = "dram__bytes_read.sum";
pub(crate) const DRAM_WRITE: &str = "dram__bytes_write.sum";

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

    /// The compiled static-cache decode (CUDA graphs traced per node): each `decode` step is
    /// graph launches plus a few kernels outside them; the measured step is the second with
    /// graphs, after every workload of the instances before it.
    #[test]
    fn a_graph_step_is_chosen_after_the_instance_that_records_the_graphs() {
        let db = NsysDb::open(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("examples/sample-run-hf-static/nsys/run.sqlite"),
        )
        .unwrap();
        let ranges = db.ranges().unwrap();
        let work = step_work(&db, &ranges, "decode").unwrap();
        let c = choose_step(&work, &[]).unwrap();
        let first = work.iter().position(|w| w.graphs > 0).unwrap();
        assert!(c.instance > first + 1);
        let before: u64 = work[..c.instance - 1].iter().map(StepWork::workloads).sum();
        assert_eq!(c.skip, before);
        assert!(c.work.graphs > 0);
        assert_eq!(choose_step(&[StepWork::default(); 3], &[]), None);
        let one = [
            StepWork::default(),
            StepWork {
                graphs: 2,
                kernels: 3,
                kernel_ns: 9,
            },
        ];
        assert_eq!(
            choose_step(&one, &[]).map(|c| (c.instance, c.skip)),
            Some((2, 0))
        );
        // A steady group named: its first instance with graphs, after every workload before.
        let steady = [
            StepWork {
                graphs: 1,
                kernels: 4,
                kernel_ns: 9,
            },
            StepWork {
                graphs: 1,
                kernels: 0,
                kernel_ns: 9,
            },
            StepWork {
                graphs: 1,
                kernels: 2,
                kernel_ns: 9,
            },
            StepWork {
                graphs: 1,
                kernels: 2,
                kernel_ns: 9,
            },
        ];
        let c = choose_step(&steady, &[2, 3]).unwrap();
        assert_eq!((c.instance, c.skip), (3, 6));
        assert_eq!(choose_step(&steady, &[7]).map(|c| c.instance), Some(2));
        // A group holding the recording instance (grouped by their parent, say): the next.
        assert_eq!(
            choose_step(&steady, &[0, 1, 2]).map(|c| c.instance),
            Some(2)
        );
    }

    /// NVIDIA's `--print-summary per-kernel` of a graph-level report: the DRAM bytes of every
    /// result (average x invocations, in the printed unit), summed.
    fn nvidia_dram_bytes(summary: &str) -> f64 {
        let mut total = 0.0;
        let mut invocations = 0.0;
        for line in summary.lines() {
            if let Some(n) = line.split("Invocations ").nth(1) {
                invocations = n.trim().parse().unwrap();
            }
            let cols: Vec<&str> = line.split_whitespace().collect();
            if let [metric, unit, _, _, avg] = cols[..] {
                if metric == DRAM_READ || metric == DRAM_WRITE {
                    let scale = match unit {
                        "Mbyte" => 1e6,
                        "Kbyte" => 1e3,
                        "byte" => 1.0,
                        u => panic!("unit {u}"),
                    };
                    total += avg.parse::<f64>().unwrap() * scale * invocations;
                }
            }
        }
        total
    }

    /// The DRAM bytes of a step measured whole equal NVIDIA's own reading of the same report:
    /// the static-cache decode (one graph) and a hand-written loop (two graph launches and three
    /// kernels between them, in Mbyte, Kbyte and byte), both real captures.
    #[test]
    fn a_measured_step_is_what_nvidias_summary_of_the_report_sums_to() {
        for (csv, summary, results) in [
            ("ncu/graph_step_raw.csv", "ncu/graph_step_summary.txt", 1),
            (
                "ncu/graph_step_mixed_raw.csv",
                "ncu/graph_step_mixed_summary.txt",
                5,
            ),
        ] {
            let report = crate::parse::ncu::read_raw(&crate::testutil::data(csv)).unwrap();
            let choice = StepChoice {
                instance: 2,
                skip: 0,
                work: StepWork::default(),
            };
            let m = measured_step(&report, "step", choice).unwrap();
            let nvidia = nvidia_dram_bytes(
                &std::fs::read_to_string(crate::testutil::data(summary)).unwrap(),
            );
            assert_eq!(m.results, results, "{csv}");
            // The summary prints two decimals of its unit: 0.01 MB per result at most.
            assert!(
                (m.dram_bytes - nvidia).abs() < 0.01e6 * results as f64,
                "{csv}: {} vs NVIDIA's {nvidia}",
                m.dram_bytes
            );
            assert!(m.gpu_ns > 0.0);
        }
    }
}
