//! Per-range attribution: for each NVTX range, its wall time on the CPU and, on the GPU, the
//! work launched inside it (a launch API call on the range's thread for push/pop ranges, on any
//! thread for start/end ranges, matched to its kernel, memcpy or memset by correlation id).
//!
//! GPU figures are taken on the GPU's own timeline, as nsys's `nvtx_gpu_proj_sum` does: the
//! projection of an instance runs from the first start to the last end of the work launched in
//! it (work launched inside a range often runs after the range has closed), and GPU busy is the
//! union of its kernels' execution intervals, so it never exceeds the projection.

use serde::{Deserialize, Serialize};

use crate::parse::sqlite::{Launch, NvtxRange};

/// The phase ranges stage2's hook emits (and hand-marked workloads use): prefill and decode,
/// and under speculative decoding the target's verify passes and the assistant's passes.
pub(crate) const PHASES: &[&str] = &[
    "prefill",
    "decode",
    "verify",
    "draft_prefill",
    "draft_decode",
];

/// Smallest, median and largest value over a range's instances.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    /// Of the values given (all zero for none).
    pub(crate) fn of(mut v: Vec<f64>) -> Spread {
        Spread::of_slice(&mut v)
    }

    /// The same of a slice, which it sorts.
    pub(crate) fn of_slice(v: &mut [f64]) -> Spread {
        if v.is_empty() {
            return Spread::default();
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Spread {
            min: v[0],
            median,
            max: v[n - 1],
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RangeStats {
    pub name: String,
    /// PushPop or StartEnd.
    pub style: String,
    pub instances: u64,
    /// CPU wall time, summed over instances.
    pub wall_ns: i64,
    /// Kernel execution time, summed (a sum of durations: overlapping kernels count twice).
    pub kernel_ns: i64,
    /// Kernels launched (graph nodes included).
    pub launches: u64,
    /// Of `launches`, kernels launched by a CUDA graph.
    pub graph_kernels: u64,
    /// Kernels, memcpys and memsets launched; a CUDA graph launch counts once, as in nsys.
    pub gpu_ops: u64,
    /// GPU projection, summed over instances: first start to last end of the work launched.
    pub proj_ns: i64,
    /// Union of kernel execution intervals, summed over instances.
    pub busy_ns: i64,
    /// `busy_ns` over `proj_ns`, in %: how busy the GPU was while it had this range's work.
    pub gpu_busy_pct: f64,
    /// Memcpy and memset execution time, summed.
    #[serde(default)]
    pub memcpy_ns: i64,
    /// Gaps inside each instance's projection where the GPU ran none of the range's work
    /// (kernels, memcpys, memsets): how many, their total and the largest.
    #[serde(default)]
    pub idle_gaps: u64,
    #[serde(default)]
    pub idle_ns: i64,
    #[serde(default)]
    pub largest_gap_ns: i64,
    pub avg_wall_ns: f64,
    pub avg_kernel_ns: f64,
    pub avg_launches: f64,
    /// Per instance: CPU wall, GPU projection and kernels launched.
    pub wall_spread: Spread,
    pub proj_spread: Spread,
    pub launches_spread: Spread,
    /// Instances inside another instance of the same name (push/pop, on one thread): their
    /// launches count in each instance that holds them, in kernel time and launches alike.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nested_in_own_name: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Per range name, how many of its push/pop instances sit inside another of the same name.
pub(crate) fn nested_in_own_name(
    ranges: &[crate::parse::sqlite::NvtxRange],
    nest: &crate::analysis::nesting::Nesting,
) -> rustc_hash::FxHashMap<std::sync::Arc<str>, u64> {
    let mut out = rustc_hash::FxHashMap::default();
    for (i, r) in ranges.iter().enumerate().filter(|(_, r)| r.push_pop) {
        let mut up = nest.parent(i);
        while let Some(p) = up {
            if *ranges[p].name == *r.name {
                *out.entry(r.name.clone()).or_insert(0) += 1;
                break;
            }
            up = nest.parent(p);
        }
    }
    out
}

impl RangeStats {
    /// The rule the reports state: the GPU ran kernels for under half of the range's time (the
    /// longer of its CPU wall and its GPU projection), so it mostly waited on the CPU (launch
    /// overhead, Python, synchronisation), not on its own work.
    /// Busy time as a share of the range's time on either clock, in %.
    pub(crate) fn busy_of_range_pct(&self) -> f64 {
        let span = self.wall_ns.max(self.proj_ns);
        if span > 0 {
            100.0 * self.busy_ns as f64 / span as f64
        } else {
            0.0
        }
    }
}

/// One instance's GPU figures that need its own state, built from its launches in GPU start
/// order; what only adds up goes straight to its name's [`Sums`]. Kept small (48 bytes): a
/// capture can hold hundreds of thousands of range instances, all open until the stream ends
/// (work launched in a range can run any time after it).
#[derive(Clone, Copy)]
pub(crate) struct Instance {
    /// First start and last end of its work (i64::MAX / MIN before any). Work comes in start
    /// order, so `last` is also where the union of all its work ends: a start after it opens
    /// an idle gap.
    first: i64,
    last: i64,
    /// Union of kernel intervals (busy).
    busy: Union,
    /// Its kernels' summed durations (the mean kernel of a group of instances).
    kernel_ns: i64,
    launches: u32,
    /// Of `launches`, kernels of CUDA graph launches (traced per node).
    graph_kernels: u32,
}

impl Default for Instance {
    fn default() -> Self {
        Instance {
            first: i64::MAX,
            last: i64::MIN,
            busy: Union::default(),
            kernel_ns: 0,
            launches: 0,
            graph_kernels: 0,
        }
    }
}

/// The union of intervals that arrive in start order: where it ends and the time it covers.
#[derive(Clone, Copy)]
struct Union {
    end: i64,
    covered: i64,
}

impl Default for Union {
    fn default() -> Self {
        Union {
            end: i64::MIN,
            covered: 0,
        }
    }
}

impl Union {
    /// Add `[a, b)`, which starts at or after every interval added before.
    fn add(&mut self, a: i64, b: i64) {
        if self.end == i64::MIN || a > self.end {
            self.covered = self.covered.saturating_add(b.saturating_sub(a).max(0));
            self.end = b;
        } else if b > self.end {
            self.covered = self.covered.saturating_add(b.saturating_sub(self.end));
            self.end = b;
        }
    }
}

/// What adds up over a range name's instances, fed at each launch.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sums {
    kernel_ns: i64,
    memcpy_ns: i64,
    launches: u64,
    graph_kernels: u64,
    ops: u64,
    idle_gaps: u64,
    idle_ns: i64,
    largest_gap_ns: i64,
}

/// Each range's name and style as an index (first appearance order), and the names.
pub(crate) struct Keys {
    /// Per range; [`Keys::NONE`] for an operator range.
    pub(crate) of: Vec<u32>,
    pub(crate) names: Vec<(std::sync::Arc<str>, bool)>,
}

impl Keys {
    pub(crate) const NONE: u32 = u32::MAX;

    pub(crate) fn new(ranges: &[NvtxRange]) -> Keys {
        let mut index: rustc_hash::FxHashMap<(&str, bool), u32> = Default::default();
        let mut names = Vec::new();
        let of = ranges
            .iter()
            .map(|r| {
                if crate::analysis::ops::is_op(&r.name) {
                    return Keys::NONE;
                }
                *index.entry((&*r.name, r.push_pop)).or_insert_with(|| {
                    names.push((r.name.clone(), r.push_pop));
                    (names.len() - 1) as u32
                })
            })
            .collect();
        Keys { of, names }
    }
}

impl Instance {
    /// Add one launch; launches come in GPU start order. `new_op`: false for a kernel of a
    /// CUDA graph launch whose other kernels this instance already counted (nsys counts one
    /// GPU op per graph launch).
    pub(crate) fn add(&mut self, l: &Launch, sums: &mut Sums, new_op: bool) {
        sums.ops += u64::from(new_op);
        if self.first != i64::MAX && l.start > self.last {
            let gap = l.start - self.last;
            sums.idle_gaps += 1;
            sums.idle_ns = sums.idle_ns.saturating_add(gap);
            sums.largest_gap_ns = sums.largest_gap_ns.max(gap);
        }
        self.first = self.first.min(l.start);
        self.last = self.last.max(l.end);
        if l.kernel {
            sums.kernel_ns = sums.kernel_ns.saturating_add(l.kernel_ns());
            sums.launches += 1;
            sums.graph_kernels += u64::from(l.graph);
            self.launches += 1;
            self.graph_kernels += u32::from(l.graph);
            self.kernel_ns = self.kernel_ns.saturating_add(l.kernel_ns());
            self.busy.add(l.start, l.end);
        } else {
            sums.memcpy_ns = sums
                .memcpy_ns
                .saturating_add(l.end.saturating_sub(l.start).max(0));
        }
    }
    /// Its kernels' summed durations and how many there were.
    pub(crate) fn kernels(&self) -> (i64, u32) {
        (self.kernel_ns, self.launches)
    }
    /// Of its kernels, those CUDA graph launches ran (traced per node).
    pub(crate) fn graph_kernels(&self) -> u32 {
        self.graph_kernels
    }
    /// The union of its kernels' intervals.
    pub(crate) fn busy_ns(&self) -> i64 {
        self.busy.covered
    }
    pub(crate) fn proj_ns(&self) -> i64 {
        match self.first {
            i64::MAX => 0,
            f => (self.last - f).max(0),
        }
    }
}

/// The per-name figures: `sums` by key, each instance's own figures from `instance(i)`.
pub(crate) fn aggregate(
    ranges: &[NvtxRange],
    keys: &Keys,
    sums: &[Sums],
    instance: impl Fn(usize) -> Instance,
) -> Vec<RangeStats> {
    let mut out: Vec<RangeStats> = keys
        .names
        .iter()
        .zip(sums)
        .map(|((name, push_pop), s)| RangeStats {
            name: name.to_string(),
            style: if *push_pop { "PushPop" } else { "StartEnd" }.to_string(),
            instances: 0,
            wall_ns: 0,
            kernel_ns: s.kernel_ns,
            launches: s.launches,
            graph_kernels: s.graph_kernels,
            gpu_ops: s.ops,
            proj_ns: 0,
            busy_ns: 0,
            gpu_busy_pct: 0.0,
            memcpy_ns: s.memcpy_ns,
            idle_gaps: s.idle_gaps,
            idle_ns: s.idle_ns,
            largest_gap_ns: s.largest_gap_ns,
            avg_wall_ns: 0.0,
            avg_kernel_ns: 0.0,
            avg_launches: 0.0,
            wall_spread: Spread::default(),
            proj_spread: Spread::default(),
            launches_spread: Spread::default(),
            nested_in_own_name: 0,
        })
        .collect();
    let wall = |n: usize| (ranges[n].end - ranges[n].start).max(0);
    for (n, &k) in keys.of.iter().enumerate() {
        if k == Keys::NONE {
            continue;
        }
        let (e, i) = (&mut out[k as usize], instance(n));
        e.instances += 1;
        e.wall_ns = e.wall_ns.saturating_add(wall(n));
        e.proj_ns = e.proj_ns.saturating_add(i.proj_ns());
        e.busy_ns = e.busy_ns.saturating_add(i.busy.covered);
    }
    // One spread at a time: the values of all instances of one figure, not of three, in one
    // buffer with each name's together (placed by the instance counts above), not a vector per
    // name (73,000 names made three times as many vectors).
    let mut start = Vec::with_capacity(out.len() + 1);
    start.push(0usize);
    for e in &out {
        start.push(start[start.len() - 1] + e.instances as usize);
    }
    let spread = |f: &dyn Fn(usize) -> f64| -> Vec<Spread> {
        let mut flat = vec![0.0; start[start.len() - 1]];
        let mut next = start.clone();
        for (n, &k) in keys.of.iter().enumerate() {
            if k != Keys::NONE {
                flat[next[k as usize]] = f(n);
                next[k as usize] += 1;
            }
        }
        start
            .windows(2)
            .map(|w| Spread::of_slice(&mut flat[w[0]..w[1]]))
            .collect()
    };
    let walls = spread(&|n| wall(n) as f64);
    let projs = spread(&|n| instance(n).proj_ns() as f64);
    let launches = spread(&|n| f64::from(instance(n).launches));
    for (((s, w), p), l) in out.iter_mut().zip(walls).zip(projs).zip(launches) {
        let n = s.instances.max(1) as f64;
        s.gpu_busy_pct = if s.proj_ns > 0 {
            100.0 * s.busy_ns as f64 / s.proj_ns as f64
        } else {
            0.0
        };
        s.avg_wall_ns = s.wall_ns as f64 / n;
        s.avg_kernel_ns = s.kernel_ns as f64 / n;
        s.avg_launches = s.launches as f64 / n;
        s.wall_spread = w;
        s.proj_spread = p;
        s.launches_spread = l;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::scan::attribute;
    use crate::parse::sqlite::NsysDb;

    fn stats(path: &str) -> Vec<RangeStats> {
        let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path);
        let db = NsysDb::open(&p).unwrap();
        attribute(&db.ranges().unwrap(), &db.launches().unwrap())
    }

    #[test]
    fn decode_of_the_h100_capture_is_launch_bound() {
        let s = stats("tests/data/nsys/run.sqlite");
        assert_eq!(s.len(), 1);
        let d = &s[0];
        assert_eq!(
            (d.name.as_str(), d.instances, d.wall_ns),
            ("decode", 1, 715_174_939)
        );
        // Within 1% of the 2,798,262 ns of kernel time nsys reports for the capture.
        assert!(
            (d.kernel_ns as f64 - 2_798_262.0).abs() / 2_798_262.0 < 0.01,
            "{}",
            d.kernel_ns
        );
        assert_eq!(d.launches, 1464);
        assert!(d.busy_of_range_pct() < 50.0 && d.gpu_busy_pct < 1.0);
    }

    #[test]
    fn nested_ranges_of_the_sample_run() {
        let s = stats("examples/sample-run/nsys/run.sqlite");
        let names: Vec<&str> = s.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["decode", "step", "attn", "mlp"]);
        let (decode, step) = (&s[0], &s[1]);
        assert_eq!(step.instances, 8);
        assert_eq!(decode.launches, 1464);
        // Every kernel of the decode loop is launched inside one of its steps.
        assert_eq!(step.launches, decode.launches);
        assert!(step.wall_ns <= decode.wall_ns);
    }

    fn launch(api_start: i64, tid: i64, kernel_ns: i64) -> Launch {
        Launch {
            api_start,
            tid,
            start: api_start + 1,
            end: api_start + 1 + kernel_ns,
            kernel: true,
            graph: false,
            name: 1,
            mangled: -1,
            config: [0; 7],
        }
    }

    #[test]
    fn start_end_ranges_take_launches_from_any_thread() {
        let r = |push_pop| NvtxRange {
            name: "r".into(),
            start: 10,
            end: 20,
            push_pop,
            tid: 1,
        };
        let l = [launch(5, 1, 100), launch(12, 2, 7), launch(15, 1, 3)];
        assert_eq!(attribute(&[r(true)], &l)[0].kernel_ns, 3);
        assert_eq!(attribute(&[r(false)], &l)[0].kernel_ns, 10);
    }

    /// What a range instance costs while the export streams (README, "Reading large exports").
    #[test]
    fn a_range_instance_stays_small() {
        assert_eq!(std::mem::size_of::<Instance>(), 48);
        assert_eq!(std::mem::size_of::<NvtxRange>(), 48);
    }
}
