//! A kernel's shapes: the launch configurations (grid, block, dynamic shared memory) it ran
//! with in a range, each with its launches and GPU time, from the nsys export. One kernel is
//! often launched with several grids (one GEMM kernel for every projection, an elementwise
//! kernel for tensors of every size) whose counters differ; ncu measures launches of some of
//! them. So a kernel's figures are weighed by the time each measured shape holds in nsys, and
//! the reports state the share of kernel time whose shape ncu measured.

use std::collections::{BTreeMap, HashMap};

use crate::analysis::nesting::{Cursor, Nesting};
use crate::error::Error;
use crate::parse::ncu::{NcuReport, TIME};
use crate::parse::sqlite::{Launch, LaunchConfig, NsysDb, NvtxRange, Sink};

/// One launch configuration of a kernel in a range.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Shape {
    pub(crate) launch: LaunchConfig,
    pub(crate) launches: u64,
    pub(crate) total_ns: f64,
    /// The earliest launch call of this shape (ns).
    first_call: i64,
}

impl Shape {
    pub(crate) fn mean_ns(&self) -> f64 {
        self.total_ns / self.launches.max(1) as f64
    }
}

/// Each kernel's shapes (by mangled name), largest total first.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Shapes {
    by_kernel: HashMap<String, Vec<Shape>>,
}

/// Per (mangled name id, launch configuration as [`crate::parse::sqlite::Launch::config`]):
/// launches, GPU time and the earliest launch call, added up as the launches stream by; text
/// is made once per key, in [`ShapeTally::shapes`].
#[derive(Debug, Default)]
pub(crate) struct ShapeTally {
    by: rustc_hash::FxHashMap<(i64, [i32; 7]), (u64, f64, i64)>,
}

impl ShapeTally {
    pub(crate) fn add(&mut self, mangled: i64, config: [i32; 7], ns: i64, call: i64) {
        let s = self
            .by
            .entry((mangled, config))
            .or_insert((0, 0.0, i64::MAX));
        s.0 += 1;
        s.1 += ns as f64;
        s.2 = s.2.min(call);
    }

    pub(crate) fn clear(&mut self) {
        self.by.clear();
    }

    /// Each kernel's shapes, largest total first (then the earliest), names from the
    /// export's StringIds.
    pub(crate) fn shapes(&self, names: &HashMap<i64, String>) -> Shapes {
        let mut by_kernel: HashMap<String, Vec<Shape>> = HashMap::new();
        for (&(mangled, c), &(launches, total_ns, first_call)) in &self.by {
            let name = names.get(&mangled).cloned().unwrap_or_default();
            by_kernel.entry(name).or_default().push(Shape {
                launch: LaunchConfig::of(c.map(i64::from)),
                launches,
                total_ns,
                first_call,
            });
        }
        for v in by_kernel.values_mut() {
            v.sort_by(|a, b| {
                b.total_ns
                    .total_cmp(&a.total_ns)
                    .then(a.first_call.cmp(&b.first_call))
            });
        }
        Shapes { by_kernel }
    }
}

/// A shape as tests give it: grid, launches, total ns, first launch call.
#[cfg(test)]
pub(crate) type TestShape<'a> = (&'a str, u64, f64, i64);

/// `(128, 1, 1)` as ncu prints it, `(128,1,1)` as the export's columns make it.
pub(crate) fn dims(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The kernels' launches inside `range`'s instances (all when None), tallied by configuration.
struct InRange<'a> {
    nest: &'a Nesting,
    ranges: &'a [NvtxRange],
    range: Option<&'a str>,
    cursor: Cursor,
    tally: ShapeTally,
}

impl Sink<Launch> for InRange<'_> {
    fn take(&mut self, l: &Launch) {
        if !l.kernel || l.mangled < 0 {
            return;
        }
        if let Some(name) = self.range {
            let held =
                self.nest
                    .holding_named(&mut self.cursor, self.ranges, l.tid, l.api_start, name);
            if held.is_none() {
                return;
            }
        }
        self.tally
            .add(l.mangled, l.config, l.kernel_ns().max(0), l.api_start);
    }

    fn reset(&mut self) {
        self.tally.clear();
        self.cursor = Cursor::default();
    }
}

impl Shapes {
    /// The shapes of every kernel among the launches made inside an instance of `range` of the
    /// export's `ranges` (anywhere when None). Read by the one-pass stream the report reads
    /// (its kernel and runtime readers side by side): the ncu plan waits on this, and on a
    /// 1.5M-launch export a join of its own took 1.4 s.
    pub(crate) fn read(
        db: &NsysDb,
        ranges: &[NvtxRange],
        range: Option<&str>,
    ) -> Result<Shapes, Error> {
        Self::read_beside(db, ranges, range, &mut crate::parse::sqlite::Ignore)
    }

    /// [`Shapes::read`], with `beside` fed the same launches from the same read of the
    /// export (the ncu plan's kernel choice: one stream instead of two).
    pub(crate) fn read_beside(
        db: &NsysDb,
        ranges: &[NvtxRange],
        range: Option<&str>,
        beside: &mut impl Sink<Launch>,
    ) -> Result<Shapes, Error> {
        let nest = Nesting::new(ranges);
        let mut sink = InRange {
            nest: &nest,
            ranges,
            range,
            cursor: Cursor::default(),
            tally: ShapeTally::default(),
        };
        db.for_each_launch(&mut crate::parse::sqlite::Tee(&mut sink, beside))?;
        Ok(sink.tally.shapes(&db.strings()?))
    }

    /// Shapes given directly (kernel -> its shapes), for tests.
    #[cfg(test)]
    pub(crate) fn of_list(list: &[(&str, &[TestShape])]) -> Shapes {
        let shape = |&(grid, launches, total_ns, first_call): &TestShape| Shape {
            launch: LaunchConfig {
                grid: grid.to_string(),
                block: "(128,1,1)".into(),
                dynamic_smem_bytes: 0,
            },
            launches,
            total_ns,
            first_call,
        };
        Shapes {
            by_kernel: list
                .iter()
                .map(|(k, v)| (k.to_string(), v.iter().map(shape).collect()))
                .collect(),
        }
    }

    pub(crate) fn of(&self, mangled: &str) -> &[Shape] {
        self.by_kernel.get(mangled).map_or(&[], Vec::as_slice)
    }

    /// The shape of the kernel's first launch in the range: the one ncu profiles when it
    /// measures one launch per kernel.
    pub(crate) fn first(&self, mangled: &str) -> Option<&Shape> {
        self.of(mangled).iter().min_by_key(|s| s.first_call)
    }

    /// The shape with this configuration.
    pub(crate) fn get(&self, mangled: &str, launch: &LaunchConfig) -> Option<&Shape> {
        self.of(mangled).iter().find(|s| s.launch == *launch)
    }

    /// Of these kernels' time: the share in their first launch's shape, in %, and how many
    /// shapes they have in all (None: none of them is in the export).
    pub(crate) fn first_shape_share(&self, kernels: &[String]) -> Option<(f64, usize)> {
        let (mut first, mut total, mut count) = (0.0, 0.0, 0);
        for k in kernels {
            total += self.of(k).iter().map(|s| s.total_ns).sum::<f64>();
            first += self.first(k).map_or(0.0, |s| s.total_ns);
            count += self.of(k).len();
        }
        (total > 0.0).then(|| (100.0 * first / total, count))
    }
}

/// What the weighing found over a report's kernels: nsys time in shapes ncu measured, and in
/// all shapes of the measured kernels.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct Cover {
    pub(crate) measured_ns: f64,
    pub(crate) total_ns: f64,
    /// Kernels with more than one shape measured.
    pub(crate) multi_shape: usize,
}

impl Cover {
    pub(crate) fn pct(&self) -> Option<f64> {
        (self.total_ns > 0.0).then(|| 100.0 * self.measured_ns / self.total_ns)
    }
}

/// Weigh each kernel's measured shapes by the nsys time each holds in the range: rates and
/// percentages by time (so a rate times the kernel's time is the sum over its shapes), the
/// launch duration by launches. Records each kernel's share of time in measured shapes.
pub(crate) fn weigh(report: &mut NcuReport, shapes: &Shapes) -> Cover {
    let mut cover = Cover::default();
    for k in &mut report.kernels {
        let Some(all) = k.mangled.as_deref().map(|m| shapes.of(m)) else {
            continue;
        };
        let total: f64 = all.iter().map(|s| s.total_ns).sum();
        if total <= 0.0 {
            continue;
        }
        let find = |grid: &Option<String>, block: &Option<String>| {
            let (g, b) = (dims(grid.as_deref()?), dims(block.as_deref()?));
            all.iter()
                .find(|s| s.launch.grid == g && s.launch.block == b)
        };
        // (nsys shape, its measured metrics)
        let measured: Vec<(&Shape, &BTreeMap<String, f64>)> = match k.shapes.is_empty() {
            true => find(&k.grid, &k.block)
                .map(|s| (s, &k.metrics))
                .into_iter()
                .collect(),
            false => k
                .shapes
                .iter()
                .filter_map(|m| Some((find(&m.grid, &m.block)?, &m.metrics)))
                .collect(),
        };
        let covered: f64 = measured.iter().map(|(s, _)| s.total_ns).sum();
        k.shape_cover_pct = Some(100.0 * covered / total);
        cover.measured_ns += covered;
        cover.total_ns += total;
        if measured.len() < 2 {
            continue;
        }
        cover.multi_shape += 1;
        let weighed = weighed_metrics(&measured);
        let scale = k.time_ns.zip(k.metrics.get(TIME)).map(|(ns, v)| ns / v);
        k.time_ns = weighed.get(TIME).zip(scale).map(|(v, s)| v * s);
        k.metrics = weighed;
    }
    cover
}

/// The metrics of several shapes as one: by each shape's nsys time, the duration by launches.
fn weighed_metrics(measured: &[(&Shape, &BTreeMap<String, f64>)]) -> BTreeMap<String, f64> {
    let mut sums: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for (shape, metrics) in measured {
        for (name, v) in metrics.iter() {
            let w = match name.as_str() {
                TIME => shape.launches as f64,
                _ => shape.total_ns,
            };
            let e = sums.entry(name.clone()).or_default();
            e.0 += w * v;
            e.1 += w;
        }
    }
    sums.into_iter()
        .filter(|(_, (_, w))| *w > 0.0)
        .map(|(k, (s, w))| (k, s / w))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::ncu::{NcuKernel, NcuShape};

    fn shape(grid: &str, launches: u64, total_ns: f64, first_call: i64) -> Shape {
        Shape {
            launch: LaunchConfig {
                grid: grid.into(),
                block: "(128,1,1)".into(),
                dynamic_smem_bytes: 0,
            },
            launches,
            total_ns,
            first_call,
        }
    }

    fn metrics(time_us: f64, dram_bps: f64) -> BTreeMap<String, f64> {
        [
            (TIME.to_string(), time_us),
            ("dram__bytes.sum.per_second".to_string(), dram_bps),
        ]
        .into()
    }

    #[test]
    fn shapes_are_weighed_by_their_nsys_time_and_the_cover_is_stated() {
        // Two grids: 10 launches of 3 us (30 us) and 30 launches of 1 us (30 us); a third
        // shape (40 us) ncu did not measure.
        let shapes = Shapes {
            by_kernel: [(
                "k".to_string(),
                vec![
                    shape("(96,1,1)", 10, 30_000.0, 5),
                    shape("(32,1,1)", 30, 30_000.0, 1),
                    shape("(8,1,1)", 4, 40_000.0, 9),
                ],
            )]
            .into(),
        };
        let mut report = NcuReport {
            kernels: vec![NcuKernel {
                name: "k".into(),
                mangled: Some("k".into()),
                time_ns: Some(2000.0),
                metrics: metrics(2.0, 1.0),
                shapes: vec![
                    NcuShape {
                        grid: Some("(96, 1, 1)".into()),
                        block: Some("(128, 1, 1)".into()),
                        instances: 1,
                        metrics: metrics(3.0, 4e11),
                    },
                    NcuShape {
                        grid: Some("(32, 1, 1)".into()),
                        block: Some("(128, 1, 1)".into()),
                        instances: 1,
                        metrics: metrics(1.0, 2e11),
                    },
                ],
                ..Default::default()
            }],
            ..Default::default()
        };
        let cover = weigh(&mut report, &shapes);
        let k = &report.kernels[0];
        assert_eq!(cover.pct(), Some(60.0));
        assert_eq!(k.shape_cover_pct, Some(60.0));
        // Equal times: the rate is the plain mean; bytes = rate x time sum over the shapes.
        assert_eq!(k.metrics["dram__bytes.sum.per_second"], 3e11);
        // Duration by launches: (10 x 3 + 30 x 1) / 40 = 1.5 us.
        assert_eq!(k.metrics[TIME], 1.5);
        assert_eq!(k.time_ns, Some(1500.0));
        assert_eq!(shapes.first("k").map(|s| s.launches), Some(30));
        let (pct, count) = shapes.first_shape_share(&["k".to_string()]).unwrap();
        assert_eq!((pct, count), (30.0, 3));
    }

    #[test]
    fn one_measured_shape_keeps_its_figures_and_says_its_share() {
        let shapes = Shapes {
            by_kernel: [(
                "k".to_string(),
                vec![shape("(4,1,1)", 1, 100.0, 0), shape("(8,1,1)", 1, 300.0, 1)],
            )]
            .into(),
        };
        let mut report = NcuReport {
            kernels: vec![NcuKernel {
                mangled: Some("k".into()),
                grid: Some("(4, 1, 1)".into()),
                block: Some("(128, 1, 1)".into()),
                metrics: metrics(1.0, 5.0),
                ..Default::default()
            }],
            ..Default::default()
        };
        let before = report.kernels[0].metrics.clone();
        assert_eq!(weigh(&mut report, &shapes).pct(), Some(25.0));
        assert_eq!(report.kernels[0].metrics, before);
    }
}
