//! Evidence for a range's own CPU time: the Python stack samples stage2's hook took
//! (`workload.python_sampling_hz`), placed on the nsys timeline through the hook's NVTX clock
//! marks (`stage2:clock <ns>`: the nsys time of the mark minus the clock it carries), each
//! counted in the innermost push/pop range open on its thread: that range's own time, as the
//! ledger's "rest" is.

use std::collections::HashMap;

use serde::Serialize;

use crate::analysis::nesting::{Cursor, Nesting};
use crate::parse::pysamples::PySamples;
use crate::parse::sqlite::NvtxRange;

/// Where the samples are, as a figure's source names them.
pub(crate) const SOURCE: &str = "nsys/pysamples.<pid>.txt";

/// Functions listed per range.
const TOP: usize = 8;
pub(crate) use crate::rules::PYTHON_MIN_SAMPLES as MIN_SAMPLES;

/// The samples of one range name.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PyEvidence {
    pub(crate) range: String,
    /// Samples taken while this range was the innermost one open on its thread.
    pub(crate) samples: u64,
    /// Innermost Python function of each sample (where the thread was), most first.
    pub(crate) leaf: Vec<(String, u64)>,
    /// Functions anywhere on the stack (each counted once per sample), most first.
    pub(crate) on_stack: Vec<(String, u64)>,
    /// The group of the range's instances these samples fell in (analysis::instances);
    /// None: every instance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) group: Option<String>,
}

/// The instance groups' members: (start, globalTid) of a range instance -> its range name and
/// its group's label.
pub(crate) type GroupOf = HashMap<(i64, i64), (String, String)>;

/// What the samples say, and why some could not be used.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct PyReport {
    pub(crate) files: usize,
    pub(crate) samples: u64,
    pub(crate) ranges: Vec<PyEvidence>,
    /// The same per group of a range's instances, for ranges whose instances differ.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) groups: Vec<PyEvidence>,
    /// Processes whose samples could not be placed (no clock mark in the capture).
    pub(crate) unaligned: Vec<i64>,
}

/// nsys's `globalTid` holds the process id in bits 24..48 and the thread id below.
fn pid_tid(global_tid: i64) -> (i64, i64) {
    ((global_tid >> 24) & 0xFF_FFFF, global_tid & 0xFF_FFFF)
}

/// Per process: the median of (nsys time of a clock mark - the monotonic time it carries).
pub(crate) fn offsets(marks: &[(i64, i64, String)]) -> HashMap<i64, i64> {
    let mut by: HashMap<i64, Vec<i64>> = HashMap::new();
    for (ts, gtid, text) in marks {
        if let Some(mono) = text
            .strip_prefix("stage2:clock ")
            .and_then(|v| v.trim().parse::<i64>().ok())
        {
            by.entry(pid_tid(*gtid).0).or_default().push(ts - mono);
        }
    }
    by.into_iter()
        .map(|(pid, mut v)| {
            v.sort_unstable();
            (pid, v[v.len() / 2])
        })
        .collect()
}

/// The hook's own frames say nothing about the workload.
fn is_hook(frame: &str) -> bool {
    frame.contains("/hook/sitecustomize.py")
}

#[derive(Default)]
struct Counts {
    samples: u64,
    leaf: HashMap<String, u64>,
    stack: HashMap<String, u64>,
}

/// Place every sample in the innermost push/pop range open on its thread at its time.
pub(crate) fn attribute(
    ranges: &[NvtxRange],
    marks: &[(i64, i64, String)],
    files: &[PySamples],
    group_of: &GroupOf,
) -> PyReport {
    let offsets = offsets(marks);
    let mut report = PyReport {
        files: files.len(),
        ..Default::default()
    };
    // Samples name a process and a Linux thread; the ranges, nsys's globalTid.
    let global_tid: HashMap<(i64, i64), i64> = ranges
        .iter()
        .filter(|r| r.push_pop)
        .map(|r| (pid_tid(r.tid), r.tid))
        .collect();
    let nest = Nesting::new(ranges);
    let mut cursor = Cursor::default();
    let mut counts: HashMap<&str, Counts> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    let mut per_group: HashMap<&(String, String), Counts> = HashMap::new();
    let mut group_order: Vec<&(String, String)> = Vec::new();
    for f in files {
        report.samples += f.samples.len() as u64;
        let Some(offset) = offsets.get(&f.pid) else {
            if !f.samples.is_empty() {
                report.unaligned.push(f.pid);
            }
            continue;
        };
        let mut samples: Vec<_> = f.samples.iter().collect();
        samples.sort_by_key(|s| (s.tid, s.t));
        for s in samples {
            let Some(&gtid) = global_tid.get(&(f.pid, s.tid)) else {
                continue;
            };
            let open = nest.open_at_from(&mut cursor, ranges, gtid, s.t + offset, false);
            let Some(inner) = open.map(|i| &ranges[i]).next() else {
                continue;
            };
            let c = counts.entry(&*inner.name).or_insert_with(|| {
                order.push(&*inner.name);
                Counts::default()
            });
            count(c, f, &s.stack);
            if let Some(g) = group_of.get(&(inner.start, inner.tid)) {
                let c = per_group.entry(g).or_insert_with(|| {
                    group_order.push(g);
                    Counts::default()
                });
                count(c, f, &s.stack);
            }
        }
    }
    report.groups = group_order
        .into_iter()
        .map(|g| {
            let c = per_group.remove(g).unwrap_or_default();
            PyEvidence {
                range: g.0.clone(),
                samples: c.samples,
                leaf: top(c.leaf),
                on_stack: top(c.stack),
                group: Some(g.1.clone()),
            }
        })
        .collect();
    report.ranges = order
        .into_iter()
        .map(|name| {
            let c = counts.remove(name).unwrap_or_default();
            PyEvidence {
                range: name.to_string(),
                samples: c.samples,
                leaf: top(c.leaf),
                on_stack: top(c.stack),
                group: None,
            }
        })
        .collect();
    report
}

fn count(c: &mut Counts, f: &PySamples, stack: &[u32]) {
    c.samples += 1;
    let names: Vec<&str> = stack
        .iter()
        .filter_map(|&i| f.frames.get(i as usize).map(String::as_str))
        .filter(|n| !is_hook(n))
        .collect();
    if let Some(leaf) = names.first() {
        *c.leaf.entry(leaf.to_string()).or_default() += 1;
    }
    let mut seen: Vec<&str> = Vec::new();
    for n in names {
        if !seen.contains(&n) {
            seen.push(n);
            *c.stack.entry(n.to_string()).or_default() += 1;
        }
    }
}

fn top(m: HashMap<String, u64>) -> Vec<(String, u64)> {
    let mut v: Vec<_> = m.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(TOP);
    v
}

impl PyReport {
    /// The function most samples of `range` were in, with its share of them; None below
    /// [`MIN_SAMPLES`] samples.
    pub(crate) fn top_of(&self, range: &str) -> Option<(&str, f64, u64)> {
        top_in(&self.ranges, range, None)
    }

    /// [`PyReport::top_of`] for one group of the range's instances.
    pub(crate) fn top_of_group(&self, range: &str, label: &str) -> Option<(&str, f64, u64)> {
        top_in(&self.groups, range, Some(label))
    }
}

fn top_in<'a>(
    evidence: &'a [PyEvidence],
    range: &str,
    group: Option<&str>,
) -> Option<(&'a str, f64, u64)> {
    let e = evidence
        .iter()
        .find(|e| e.range == range && e.group.as_deref() == group && e.samples >= MIN_SAMPLES)?;
    let (f, n) = e.leaf.first()?;
    Some((f, 100.0 * *n as f64 / e.samples.max(1) as f64, e.samples))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::pysamples::PySample;

    fn range(name: &str, start: i64, end: i64) -> NvtxRange {
        NvtxRange {
            name: name.into(),
            start,
            end,
            push_pop: true,
            tid: (7 << 24) | 70,
        }
    }

    #[test]
    fn samples_are_counted_per_group_of_instances_too() {
        let ranges = [range("decode", 1000, 2000), range("decode", 3000, 4000)];
        let gtid = (7 << 24) | 71;
        let marks = vec![(1000, gtid, "stage2:clock 1000".to_string())];
        let group_of: GroupOf = [((3000, (7 << 24) | 70), ("decode".into(), "slow".into()))].into();
        let samples = (0..30)
            .map(|k| PySample {
                t: 1100 + k,
                tid: 70,
                stack: vec![0],
            })
            .chain((0..25).map(|k| PySample {
                t: 3100 + k,
                tid: 70,
                stack: vec![1],
            }))
            .collect();
        let files = [PySamples {
            pid: 7,
            frames: vec!["fast_fn (a.py:1)".into(), "slow_fn (b.py:2)".into()],
            samples,
        }];
        let r = attribute(&ranges, &marks, &files, &group_of);
        assert_eq!(r.ranges[0].samples, 55);
        assert_eq!(r.groups.len(), 1);
        assert_eq!(
            r.top_of_group("decode", "slow"),
            Some(("slow_fn (b.py:2)", 100.0, 25))
        );
        assert_eq!(r.top_of_group("decode", "other"), None);
    }

    #[test]
    fn samples_land_in_the_innermost_range_after_the_clock_offset() {
        let ranges = [range("decode", 1000, 2000), range("attn", 1200, 1300)];
        // nsys time = monotonic + 900 (two marks, one noisy by 2 ns: the median wins).
        let gtid = (7 << 24) | 71;
        let marks = vec![
            (1000, gtid, "stage2:clock 100".to_string()),
            (1002, gtid, "stage2:clock 100".to_string()),
            (1500, gtid, "stage2:clock 600".to_string()),
            (5, gtid, "stage2:tokens batch=1 new=1".to_string()),
        ];
        let s = |t, stack: Vec<u32>| PySample { t, tid: 70, stack };
        let files = [PySamples {
            pid: 7,
            frames: vec![
                "f (a.py:1)".into(),
                "g (b.py:2)".into(),
                "__call__ (/r/hook/sitecustomize.py:9)".into(),
            ],
            samples: vec![
                s(50, vec![0]),
                s(150, vec![0, 2, 1]),
                s(350, vec![1, 2]),
                s(360, vec![1]),
                s(1200, vec![0]),
            ],
        }];
        let r = attribute(&ranges, &marks, &files, &GroupOf::default());
        assert_eq!(r.samples, 5);
        let names: Vec<_> = r
            .ranges
            .iter()
            .map(|e| (e.range.as_str(), e.samples))
            .collect();
        // t=50 -> 950 (before decode), 150 -> 1050 decode, 350/360 -> 1250/1260 attn, 1200 -> 2100 none.
        assert_eq!(names, [("decode", 1), ("attn", 2)]);
        assert_eq!(
            r.ranges[0].on_stack,
            [("f (a.py:1)".to_string(), 1), ("g (b.py:2)".to_string(), 1)]
        );
        // Two samples are listed but too few for a verdict to name a function.
        assert_eq!(r.ranges[1].leaf, [("g (b.py:2)".to_string(), 2)]);
        assert_eq!(r.top_of("attn"), None);
        // Another process without a clock mark cannot be placed, and says so.
        let other = PySamples {
            pid: 8,
            frames: vec![],
            samples: vec![s(1, vec![])],
        };
        assert_eq!(
            attribute(&ranges, &marks, &[other], &GroupOf::default()).unaligned,
            [8]
        );
    }
}
