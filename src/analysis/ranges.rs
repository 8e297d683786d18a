//! Per-range attribution: for each NVTX range, its wall time and the GPU time of the kernels
//! launched inside it (a launch API call on the range's thread for push/pop ranges, on any
//! thread for start/end ranges, matched to its kernel by correlation id).

use serde::{Deserialize, Serialize};

use crate::parse::sqlite::{Launch, NvtxRange};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RangeStats {
    pub name: String,
    /// PushPop or StartEnd.
    pub style: String,
    pub instances: u64,
    pub wall_ns: i64,
    pub kernel_ns: i64,
    pub launches: u64,
    /// Kernel time over wall time, in %: how busy the GPU kept while the range was open.
    pub gpu_busy_pct: f64,
    pub avg_wall_ns: f64,
    pub avg_kernel_ns: f64,
    pub avg_launches: f64,
}

impl RangeStats {
    /// The rule the reports state: under half the range's wall time in kernels means the GPU
    /// waits on the CPU (launch overhead, Python, synchronisation), not on its own work.
    pub const LAUNCH_BOUND_RULE: &'static str =
        "GPU busy (kernel time / range wall time) below 50%";

    pub fn launch_bound(&self) -> bool {
        self.gpu_busy_pct < 50.0
    }
}

/// Attribute launches to ranges and aggregate by range name, in order of first appearance.
pub fn attribute(ranges: &[NvtxRange], launches: &[Launch]) -> Vec<RangeStats> {
    // `launches` is sorted by API start time (the query orders it): each range is a window.
    let mut out: Vec<RangeStats> = Vec::new();
    for r in ranges {
        let lo = launches.partition_point(|l| l.api_start < r.start);
        let hi = launches.partition_point(|l| l.api_start <= r.end);
        let (mut kernel_ns, mut count) = (0i64, 0u64);
        for l in &launches[lo..hi] {
            if !r.push_pop || l.tid == r.tid {
                kernel_ns += l.kernel_ns;
                count += 1;
            }
        }
        let style = if r.push_pop { "PushPop" } else { "StartEnd" };
        let entry = match out
            .iter_mut()
            .position(|s| s.name == r.name && s.style == style)
        {
            Some(i) => &mut out[i],
            None => {
                out.push(RangeStats {
                    name: r.name.clone(),
                    style: style.to_string(),
                    instances: 0,
                    wall_ns: 0,
                    kernel_ns: 0,
                    launches: 0,
                    gpu_busy_pct: 0.0,
                    avg_wall_ns: 0.0,
                    avg_kernel_ns: 0.0,
                    avg_launches: 0.0,
                });
                out.last_mut().expect("just pushed")
            }
        };
        entry.instances += 1;
        entry.wall_ns += r.end - r.start;
        entry.kernel_ns += kernel_ns;
        entry.launches += count;
    }
    for s in &mut out {
        let n = s.instances.max(1) as f64;
        s.gpu_busy_pct = if s.wall_ns > 0 {
            100.0 * s.kernel_ns as f64 / s.wall_ns as f64
        } else {
            0.0
        };
        s.avg_wall_ns = s.wall_ns as f64 / n;
        s.avg_kernel_ns = s.kernel_ns as f64 / n;
        s.avg_launches = s.launches as f64 / n;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
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

    #[test]
    fn start_end_ranges_take_launches_from_any_thread() {
        let r = |push_pop| NvtxRange {
            name: "r".into(),
            start: 10,
            end: 20,
            push_pop,
            tid: 1,
        };
        let l = [
            Launch {
                api_start: 5,
                tid: 1,
                kernel_ns: 100,
            },
            Launch {
                api_start: 12,
                tid: 2,
                kernel_ns: 7,
            },
            Launch {
                api_start: 15,
                tid: 1,
                kernel_ns: 3,
            },
        ];
        assert_eq!(attribute(&[r(true)], &l)[0].kernel_ns, 3);
        assert_eq!(attribute(&[r(false)], &l)[0].kernel_ns, 10);
    }
}
