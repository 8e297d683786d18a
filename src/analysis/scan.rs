//! One pass over a capture's launches, in GPU start order as the export streams them
//! ([`crate::parse::sqlite::NsysDb::for_each_launch`]): each launch goes to the ranges open
//! at its launch call (found through [`Nesting`], not a sweep), feeding at once the per-range
//! GPU figures, the captured range's kernel durations and the operators' GPU time. Memory
//! grows with ranges, distinct kernels and distinct durations, not with launches.

use std::collections::{BTreeMap, HashMap};

use crate::analysis::nesting::Nesting;
use crate::analysis::ops::OpsGpu;
use crate::analysis::ranges::{aggregate, Instance, Keys, RangeStats, Sums};
use crate::parse::nsys::KernelSum;
use crate::parse::sqlite::{Launch, NvtxRange, Sink};

pub(crate) struct Scan<'a> {
    ranges: &'a [NvtxRange],
    nest: std::borrow::Cow<'a, Nesting>,
    /// Per range: its name's index (operator ranges: none) and its instance figures; per name:
    /// what adds up.
    keys: Keys,
    inst: Vec<Instance>,
    sums: Vec<Sums>,
    /// The CUDA graph launch calls (range, thread, API start) whose kernels a range instance
    /// counted already as one GPU op.
    graph_calls: rustc_hash::FxHashSet<(u32, i64, i64)>,
    /// Per name key: it is the captured range, whose kernels make the kernel table (a flag
    /// read per launch and range, not a string comparison).
    captured_keys: Vec<bool>,
    /// Per kernel name id of the captured range: its mangled names and durations.
    durations: rustc_hash::FxHashMap<i64, Captured>,
    pub(crate) ops: OpsGpu,
    cursor: crate::analysis::nesting::Cursor,
    /// The launch configurations of chosen kernels in one range, tallied as the launches go
    /// by (the shapes ncu's figures are weighed by), instead of a second pass over the export.
    pub(crate) shapes: Option<ShapeScope>,
    /// No kernel: the configurations read without a shape scope.
    no_configs: rustc_hash::FxHashSet<i64>,
    /// Kernels whose time is tallied per range name (attention kernels: which one each phase
    /// ran), as the launches go by.
    pub(crate) watched: Option<Watched>,
}

/// Kernels (demangled name ids) whose time and launches a scan tallies per range name.
#[derive(Debug, Default)]
pub(crate) struct Watched {
    kernels: rustc_hash::FxHashSet<i64>,
    /// (range name key, kernel name id) -> (ns, launches).
    tally: rustc_hash::FxHashMap<(u32, i64), (i64, u64)>,
}

impl Watched {
    /// A watch on the kernels of these name ids.
    pub(crate) fn of(kernels: rustc_hash::FxHashSet<i64>) -> Watched {
        Watched {
            kernels,
            tally: Default::default(),
        }
    }
}

/// One watched kernel's time in one range name (every instance, push/pop or start/end alike).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RangeKernel {
    pub(crate) range: std::sync::Arc<str>,
    pub(crate) kernel: i64,
    pub(crate) ns: i64,
    pub(crate) launches: u64,
}

/// Which kernels' launch configurations a scan tallies (mangled name ids), in which range.
#[derive(Debug, Default)]
pub(crate) struct ShapeScope {
    pub(crate) range: String,
    pub(crate) kernels: rustc_hash::FxHashSet<i64>,
    pub(crate) tally: crate::analysis::shapes::ShapeTally,
}

impl<'a> Scan<'a> {
    pub(crate) fn new(ranges: &'a [NvtxRange], captured: Option<&'a str>) -> Scan<'a> {
        Scan::with(
            ranges,
            std::borrow::Cow::Owned(Nesting::new(ranges)),
            captured,
        )
    }

    /// A scan over ranges whose nesting is already built (shared with the ledger).
    pub(crate) fn with(
        ranges: &'a [NvtxRange],
        nest: std::borrow::Cow<'a, Nesting>,
        captured: Option<&'a str>,
    ) -> Scan<'a> {
        let keys = Keys::new(ranges);
        let captured_keys = keys
            .names
            .iter()
            .map(|(n, _)| captured == Some(&**n))
            .collect();
        Scan {
            ranges,
            nest,
            inst: vec![Instance::default(); ranges.len()],
            sums: vec![Sums::default(); keys.names.len()],
            keys,
            graph_calls: Default::default(),
            captured_keys,
            durations: Default::default(),
            ops: OpsGpu::default(),
            cursor: Default::default(),
            shapes: None,
            no_configs: Default::default(),
            watched: None,
        }
    }

    /// A scan fed from launches in memory (any order).
    pub(crate) fn over(
        ranges: &'a [NvtxRange],
        captured: Option<&'a str>,
        launches: &[Launch],
    ) -> Scan<'a> {
        let mut s = Scan::new(ranges, captured);
        let mut sorted: Vec<&Launch> = launches.iter().collect();
        sorted.sort_by_key(|l| (l.start, l.api_start));
        sorted.into_iter().for_each(|l| s.take(l));
        s
    }

    /// One range instance's own figures (by its index in the ranges).
    pub(crate) fn instance(&self, i: usize) -> crate::analysis::ranges::Instance {
        self.inst[i]
    }

    /// The watched kernels' time per range name, by range and kernel id (empty without a watch).
    pub(crate) fn watched_by_range(&self) -> Vec<RangeKernel> {
        let Some(w) = &self.watched else {
            return Vec::new();
        };
        let mut out: Vec<RangeKernel> = w
            .tally
            .iter()
            .map(|(&(key, kernel), &(ns, launches))| RangeKernel {
                range: self.keys.names[key as usize].0.clone(),
                kernel,
                ns,
                launches,
            })
            .collect();
        out.sort_by(|a, b| a.range.cmp(&b.range).then(a.kernel.cmp(&b.kernel)));
        out
    }

    /// The per-range figures (operator ranges left out).
    pub(crate) fn stats(&self) -> Vec<RangeStats> {
        aggregate(self.ranges, &self.keys, &self.sums, |i| self.inst[i])
    }

    /// The captured range's kernels' mangled names by demangled name, as
    /// [`NsysDb::mangled_names`](crate::parse::sqlite::NsysDb::mangled_names) gives them for
    /// the whole export: read while streaming instead of in a second pass over the kernels.
    pub(crate) fn mangled_names(
        &self,
        strings: &HashMap<i64, String>,
    ) -> HashMap<String, Vec<String>> {
        let name = |id: &i64| strings.get(id).cloned();
        self.durations
            .iter()
            .filter(|(_, k)| !k.mangled.is_empty())
            .filter_map(|(d, k)| {
                let mut m = k.mangled.clone();
                m.sort_unstable();
                Some((name(d)?, m.iter().filter_map(name).collect()))
            })
            .collect()
    }

    /// The captured range's kernels' launches by thread blocks, by demangled name (the kernel
    /// table's).
    pub(crate) fn kernel_blocks(
        &self,
        strings: &HashMap<i64, String>,
    ) -> HashMap<String, Vec<Blocks>> {
        self.durations
            .iter()
            .filter(|(_, k)| !k.blocks.is_empty())
            .filter_map(|(id, k)| Some((strings.get(id)?.clone(), k.blocks.clone())))
            .collect()
    }

    /// The captured range's kernels, largest total first, as `nvtx_kern_sum` lists them.
    pub(crate) fn kernel_rows(&self, strings: &HashMap<i64, String>) -> Vec<KernelSum> {
        let total: f64 = self
            .durations
            .values()
            .flat_map(|k| k.durations.iter().map(|(ns, n)| *ns as f64 * *n as f64))
            .sum();
        let mut rows: Vec<KernelSum> = self
            .durations
            .iter()
            .map(|(id, k)| {
                let name = strings.get(id).cloned().unwrap_or_else(|| format!("#{id}"));
                crate::analysis::durations::summarize_counts(name, &k.durations, total)
            })
            .collect();
        rows.sort_by(|a, b| b.total_ns.total_cmp(&a.total_ns).then(a.name.cmp(&b.name)));
        rows
    }
}

/// A kernel of the captured range: its mangled name ids (one, unless template instances
/// demangle alike) and its durations (ns -> launches).
#[derive(Default)]
struct Captured {
    mangled: Vec<i64>,
    durations: BTreeMap<i64, u64>,
    /// Its launches by thread blocks (a kernel runs with a few grids: a short list).
    blocks: Vec<Blocks>,
}

impl Captured {
    /// A launch of `blocks` thread blocks (0: the export has no grid) that ran `ns`.
    fn add_blocks(&mut self, blocks: i64, ns: i64) {
        if blocks <= 0 {
            return;
        }
        match self.blocks.iter_mut().find(|b| b.blocks == blocks) {
            Some(b) => {
                b.launches += 1;
                b.ns += ns;
            }
            None => self.blocks.push(Blocks {
                blocks,
                launches: 1,
                ns,
            }),
        }
    }
}

/// The launches of one kernel of the captured range with one number of thread blocks (its
/// grid's x * y * z): how many of the GPU's SMs it could use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Blocks {
    pub(crate) blocks: i64,
    pub(crate) launches: u64,
    pub(crate) ns: i64,
}

/// One kernel's time in launches of at most `bound` thread blocks.
pub(crate) fn time_within(by: &[Blocks], bound: i64) -> i64 {
    by.iter().filter(|b| b.blocks <= bound).map(|b| b.ns).sum()
}

/// Of one kernel's launches by thread blocks, `(blocks, ns)`: the number of blocks at most
/// `bound` that holds most of its time (ties: the fewer blocks), as the small_grids finding
/// names it and its comparison with NVIDIA's grid summary reads it.
pub(crate) fn most_time_within(by: impl Iterator<Item = (i64, i64)>, bound: i64) -> Option<i64> {
    by.filter(|&(blocks, _)| blocks <= bound)
        .max_by_key(|&(blocks, ns)| (ns, std::cmp::Reverse(blocks)))
        .map(|(blocks, _)| blocks)
}

/// Attribute launches (any order) to ranges and aggregate by range name, in order of first
/// appearance (what [`Scan`] does while streaming the export).
pub fn attribute(ranges: &[NvtxRange], launches: &[Launch]) -> Vec<RangeStats> {
    Scan::over(ranges, None, launches).stats()
}

impl Sink<Launch> for Scan<'_> {
    fn take(&mut self, l: &Launch) {
        let ranges = self.ranges;
        let holding = self
            .nest
            .holding_call(&mut self.cursor, ranges, l.tid, l.api_start);
        let mut innermost_op = None;
        let mut tallied = false;
        // One lookup per launch, not per range holding it.
        let watched = l.kernel
            && self
                .watched
                .as_ref()
                .is_some_and(|w| w.kernels.contains(&l.name));
        for i in holding {
            let key = self.keys.of[i];
            if key == Keys::NONE {
                innermost_op.get_or_insert(i);
                continue;
            }
            if let Some(t) = self.shapes.as_mut().filter(|t| {
                !tallied
                    && l.kernel
                    && *ranges[i].name == *t.range
                    && t.kernels.contains(&l.mangled)
            }) {
                tallied = true;
                t.tally
                    .add(l.mangled, l.config, l.end - l.start, l.api_start);
            }
            if let Some(w) = self.watched.as_mut().filter(|_| watched) {
                let t = w.tally.entry((key, l.name)).or_default();
                t.0 += l.end - l.start;
                t.1 += 1;
            }
            let new_op = !l.graph || self.graph_calls.insert((i as u32, l.tid, l.api_start));
            self.inst[i].add(l, &mut self.sums[key as usize], new_op);
            if l.kernel && self.captured_keys[key as usize] {
                let k = self.durations.entry(l.name).or_default();
                if l.mangled >= 0 && !k.mangled.contains(&l.mangled) {
                    k.mangled.push(l.mangled);
                }
                *k.durations.entry(l.end - l.start).or_default() += 1;
                let blocks = l.config[..3]
                    .iter()
                    .fold(1i64, |p, &d| p.saturating_mul(i64::from(d)));
                k.add_blocks(blocks, l.end - l.start);
            }
        }
        if let (Some(i), true) = (innermost_op, l.kernel) {
            self.ops.add(&ranges[i].name, l);
        }
    }

    /// Only the shape scope's kernels' configurations are tallied; without one, none.
    fn configs_of(&self) -> Option<&rustc_hash::FxHashSet<i64>> {
        Some(
            self.shapes
                .as_ref()
                .map_or(&self.no_configs, |t| &t.kernels),
        )
    }

    fn reset(&mut self) {
        if let Some(t) = self.shapes.as_mut() {
            t.tally.clear();
        }
        self.inst.iter_mut().for_each(|i| *i = Instance::default());
        self.sums.iter_mut().for_each(|s| *s = Sums::default());
        self.graph_calls.clear();
        self.durations.clear();
        self.ops = OpsGpu::default();
        if let Some(w) = self.watched.as_mut() {
            w.tally.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::sqlite::{Ignore, NsysDb};

    /// An export whose rows are out of start order (hand-made from the sample's: one kernel
    /// moved a second later) is read through the sorting join, with the same figures.
    #[test]
    fn out_of_order_rows_fall_back_to_the_sorting_join() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("out_of_order_hand_made.sqlite");
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/sample-run/nsys/run.sqlite");
        std::fs::copy(src, &p).unwrap();
        rusqlite::Connection::open(&p)
            .unwrap()
            .execute_batch(
                "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + 1000000000, \
                 end = end + 1000000000 WHERE rowid = 5",
            )
            .unwrap();
        let db = NsysDb::open(&p).unwrap();
        let ranges = db.ranges().unwrap();
        let mut streamed = Scan::new(&ranges, Some("decode"));
        db.stream(&mut streamed, &mut Ignore).unwrap();
        let joined = Scan::over(&ranges, Some("decode"), &db.launches().unwrap());
        assert_eq!(streamed.stats(), joined.stats());
        let names = db.strings().unwrap();
        assert_eq!(streamed.kernel_rows(&names), joined.kernel_rows(&names));
        assert_eq!(streamed.stats()[0].launches, 1464);
    }

    /// The mangled names read while streaming are the export's own for every kernel of the
    /// captured range (what a second pass over the kernel table gave).
    #[test]
    fn mangled_names_while_streaming_match_the_export() {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/sample-run-hf-eager/nsys/run.sqlite");
        let db = NsysDb::open(&p).unwrap();
        let ranges = db.ranges().unwrap();
        let mut scan = Scan::new(&ranges, Some("decode"));
        db.stream(&mut scan, &mut Ignore).unwrap();
        let strings = db.strings().unwrap();
        let streamed = scan.mangled_names(&strings);
        let all = db.mangled_names().unwrap();
        let rows = scan.kernel_rows(&strings);
        assert!(rows.len() > 10);
        for r in &rows {
            assert_eq!(streamed.get(&r.name), all.get(&r.name), "{}", r.name);
        }
    }
}
