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

/// Smallest, median and largest value over a range's instances.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    fn of(mut v: Vec<f64>) -> Spread {
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

impl RangeStats {
    /// The rule the reports state: the GPU ran kernels for under half of the range's time (the
    /// longer of its CPU wall and its GPU projection), so it mostly waited on the CPU (launch
    /// overhead, Python, synchronisation), not on its own work.
    pub(crate) const LAUNCH_BOUND_RULE: &'static str =
        "GPU busy (union of kernel intervals) under 50% of the longer of CPU wall and GPU projection";

    /// Busy time as a share of the range's time on either clock, in %.
    pub(crate) fn busy_of_range_pct(&self) -> f64 {
        let span = self.wall_ns.max(self.proj_ns);
        if span > 0 {
            100.0 * self.busy_ns as f64 / span as f64
        } else {
            0.0
        }
    }

    pub(crate) fn launch_bound(&self) -> bool {
        self.busy_of_range_pct() < 50.0
    }
}

/// One instance's GPU figures, built from its launches in GPU start order. Kept small: a
/// capture can hold hundreds of thousands of range instances.
pub(crate) struct Instance {
    kernel_ns: i64,
    launches: u32,
    graph_kernels: u32,
    ops: u32,
    /// First start and last end of its work (i64::MAX / MIN before any).
    first: i64,
    last: i64,
    memcpy_ns: i64,
    /// Union of kernel intervals (busy), and of all work (for the idle gaps).
    busy: Union,
    all: Union,
    idle: Gaps,
    /// nsys counts one GPU op per graph launch, not per kernel node: the launch calls (thread,
    /// API start) whose kernels were counted. Boxed on purpose: 8 bytes in every instance
    /// instead of a Vec's 24, and most instances launch no graph.
    #[allow(clippy::box_collection)]
    graph_calls: Option<Box<Vec<(i64, i64)>>>,
}

impl Default for Instance {
    fn default() -> Self {
        Instance {
            kernel_ns: 0,
            launches: 0,
            graph_kernels: 0,
            ops: 0,
            first: i64::MAX,
            last: i64::MIN,
            memcpy_ns: 0,
            busy: Union::default(),
            all: Union::default(),
            idle: Gaps::default(),
            graph_calls: None,
        }
    }
}

/// The union of intervals that arrive in start order: the one being merged and the time
/// covered before it.
struct Union {
    start: i64,
    end: i64,
    covered: i64,
}

impl Default for Union {
    fn default() -> Self {
        Union {
            start: i64::MIN,
            end: i64::MIN,
            covered: 0,
        }
    }
}

/// Gaps between merged intervals: how many, their total and the largest.
#[derive(Default)]
struct Gaps {
    count: u64,
    total: i64,
    largest: i64,
}

impl Union {
    /// Add `[a, b)`; returns the gap before it when it starts after the merged interval.
    fn add(&mut self, a: i64, b: i64) -> Option<i64> {
        if self.start == i64::MIN {
            (self.start, self.end) = (a, b);
            return None;
        }
        if a <= self.end {
            self.end = self.end.max(b);
            return None;
        }
        self.covered += self.end - self.start;
        let gap = a - self.end;
        (self.start, self.end) = (a, b);
        Some(gap)
    }
    fn covered(&self) -> i64 {
        match self.start {
            i64::MIN => self.covered,
            s => self.covered + self.end - s,
        }
    }
}

impl Instance {
    /// Add one launch; launches come in GPU start order.
    pub(crate) fn add(&mut self, l: &Launch) {
        let call = (l.tid, l.api_start);
        if !l.graph {
            self.ops += 1;
        } else {
            let calls = self.graph_calls.get_or_insert_with(Default::default);
            if !calls.contains(&call) {
                self.ops += 1;
                calls.push(call);
            }
        }
        self.first = self.first.min(l.start);
        self.last = self.last.max(l.end);
        if let Some(gap) = self.all.add(l.start, l.end) {
            self.idle.count += 1;
            self.idle.total += gap;
            self.idle.largest = self.idle.largest.max(gap);
        }
        if l.kernel {
            self.kernel_ns += l.kernel_ns();
            self.launches += 1;
            self.graph_kernels += u32::from(l.graph);
            self.busy.add(l.start, l.end);
        } else {
            self.memcpy_ns += (l.end - l.start).max(0);
        }
    }
    fn proj_ns(&self) -> i64 {
        match self.first {
            i64::MAX => 0,
            f => (self.last - f).max(0),
        }
    }
}

/// Aggregate each instance's figures by range name (and style), in order of first appearance;
/// `instance(i)` is range `i`'s, None for a range left out (operator ranges).
pub(crate) fn aggregate<'a>(
    ranges: &[NvtxRange],
    instance: impl Fn(usize) -> Option<&'a Instance>,
) -> Vec<RangeStats> {
    let empty = Instance::default();
    let mut out: Vec<RangeStats> = Vec::new();
    let mut per: Vec<(Vec<f64>, Vec<f64>, Vec<f64>)> = Vec::new();
    let mut index: std::collections::HashMap<(&str, bool), usize> = Default::default();
    for (n, r) in ranges.iter().enumerate() {
        if crate::analysis::ops::is_op(&r.name) {
            continue;
        }
        let i = instance(n).unwrap_or(&empty);
        let style = if r.push_pop { "PushPop" } else { "StartEnd" };
        let k = *index
            .entry((r.name.as_str(), r.push_pop))
            .or_insert_with(|| {
                out.push(RangeStats {
                    name: r.name.clone(),
                    style: style.to_string(),
                    instances: 0,
                    wall_ns: 0,
                    kernel_ns: 0,
                    launches: 0,
                    graph_kernels: 0,
                    gpu_ops: 0,
                    proj_ns: 0,
                    busy_ns: 0,
                    gpu_busy_pct: 0.0,
                    memcpy_ns: 0,
                    idle_gaps: 0,
                    idle_ns: 0,
                    largest_gap_ns: 0,
                    avg_wall_ns: 0.0,
                    avg_kernel_ns: 0.0,
                    avg_launches: 0.0,
                    wall_spread: Spread::default(),
                    proj_spread: Spread::default(),
                    launches_spread: Spread::default(),
                });
                per.push(Default::default());
                out.len() - 1
            });
        let (e, p) = (&mut out[k], &mut per[k]);
        let wall = (r.end - r.start).max(0);
        e.instances += 1;
        e.wall_ns += wall;
        e.kernel_ns += i.kernel_ns;
        e.launches += u64::from(i.launches);
        e.graph_kernels += u64::from(i.graph_kernels);
        e.gpu_ops += u64::from(i.ops);
        e.proj_ns += i.proj_ns();
        e.busy_ns += i.busy.covered();
        e.memcpy_ns += i.memcpy_ns;
        e.idle_gaps += i.idle.count;
        e.idle_ns += i.idle.total;
        e.largest_gap_ns = e.largest_gap_ns.max(i.idle.largest);
        p.0.push(wall as f64);
        p.1.push(i.proj_ns() as f64);
        p.2.push(i.launches as f64);
    }
    for (s, (wall, proj, launches)) in out.iter_mut().zip(per) {
        let n = s.instances.max(1) as f64;
        s.gpu_busy_pct = if s.proj_ns > 0 {
            100.0 * s.busy_ns as f64 / s.proj_ns as f64
        } else {
            0.0
        };
        s.avg_wall_ns = s.wall_ns as f64 / n;
        s.avg_kernel_ns = s.kernel_ns as f64 / n;
        s.avg_launches = s.launches as f64 / n;
        s.wall_spread = Spread::of(wall);
        s.proj_spread = Spread::of(proj);
        s.launches_spread = Spread::of(launches);
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
        assert!(d.launch_bound() && d.gpu_busy_pct < 1.0);
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
}
