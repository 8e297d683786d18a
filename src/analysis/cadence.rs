//! The loop around a repeated range: each cycle runs from one instance's start to the next's on
//! the same thread (siblings under one enclosing range), and what the time between them holds.
//!
//! A range marks part of a step only where the workload's step does more than the range: with
//! a static cache, generate()'s host work between `decode` ranges is most of the step, and the
//! range alone would be judged GPU-bound. The cycles' kernels (launched in the range or in the
//! gap after it), their busy time and the gap's own wall-time ledger (CUDA calls, compiling,
//! other ranges, the thread's own work) are read in the one pass over the export, beside the
//! ranges' (see [`Between`]).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::analysis::ledger::{Parts, RangeLedger};
use crate::analysis::nesting::Nesting;
use crate::analysis::ranges::{Instance, Spread};
use crate::parse::sqlite::NvtxRange;

/// The name the gaps go by in their own ledger (never an export's range: NVTX names in the
/// export are the workload's, this one is made here).
const GAP: &str = "\u{0}between";

/// One cycle's figures, in ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub(crate) struct Cycle {
    /// The range instance's ordinal among its name's instances in start order (from 0): the
    /// instance groups' members.
    pub(crate) ordinal: u32,
    pub(crate) cadence_ns: i64,
    pub(crate) range_ns: i64,
    /// Kernels launched in the range instance and in the gap after it.
    pub(crate) kernel_ns: i64,
    pub(crate) launches: u32,
    /// The union of those kernels' intervals, the range's and the gap's added (each a union of
    /// its own), at most the cadence.
    pub(crate) busy_ns: i64,
}

/// A repeated range's loop.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Loop {
    pub(crate) range: String,
    /// Each cycle in start order (an instance followed by a sibling of the same name).
    pub(crate) cycles: Vec<Cycle>,
    /// The gaps' ledger, one entry per cycle in the same order: where the time between
    /// instances goes on the thread.
    #[serde(skip)]
    pub(crate) between: Option<RangeLedger>,
}

/// Figures over some cycles.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct LoopFigures {
    pub(crate) cycles: u64,
    pub(crate) median_cadence_ns: f64,
    pub(crate) median_range_ns: f64,
    /// The range's time over the cycles' time, in %.
    pub(crate) range_share_pct: f64,
    /// Kernel busy time over the cycles' time, in %.
    pub(crate) busy_pct: f64,
    pub(crate) kernel_ns_per_cycle: f64,
    pub(crate) launches_per_cycle: f64,
    /// The gaps' wall time split, summed over the cycles, and their child ranges by name.
    pub(crate) between: Parts,
    pub(crate) between_children: BTreeMap<String, i64>,
}

impl Loop {
    /// Its figures over the cycles whose instance is one of `members` (ordinals), or over every
    /// cycle; None when none is left.
    pub(crate) fn figures(&self, members: Option<&[usize]>) -> Option<LoopFigures> {
        let keep: Vec<usize> = (0..self.cycles.len())
            .filter(|&k| members.is_none_or(|m| m.contains(&(self.cycles[k].ordinal as usize))))
            .collect();
        if keep.is_empty() {
            return None;
        }
        let cyc: Vec<&Cycle> = keep.iter().map(|&k| &self.cycles[k]).collect();
        let sum = |f: fn(&Cycle) -> i64| cyc.iter().map(|c| f(c)).sum::<i64>() as f64;
        let total = sum(|c| c.cadence_ns);
        let pct = |x: f64| match total > 0.0 {
            true => 100.0 * x / total,
            false => 0.0,
        };
        let n = cyc.len() as f64;
        let between = self.between.as_ref().and_then(|l| match members {
            Some(_) => l.of_members(&keep),
            None => Some(l.clone()),
        });
        Some(LoopFigures {
            cycles: cyc.len() as u64,
            median_cadence_ns: median(cyc.iter().map(|c| c.cadence_ns)),
            median_range_ns: median(cyc.iter().map(|c| c.range_ns)),
            range_share_pct: pct(sum(|c| c.range_ns)),
            busy_pct: pct(sum(|c| c.busy_ns)),
            kernel_ns_per_cycle: sum(|c| c.kernel_ns) / n,
            launches_per_cycle: sum(|c| i64::from(c.launches)) / n,
            between: between.as_ref().map(|l| l.total).unwrap_or_default(),
            between_children: between.map(|l| l.children).unwrap_or_default(),
        })
    }
}

fn median(v: impl Iterator<Item = i64>) -> f64 {
    Spread::of(v.map(|x| x as f64).collect()).median
}

/// The gaps between one range's consecutive instances, as ranges of their own with the other
/// ranges they hold (their children in the gaps' ledger).
pub(crate) struct Between {
    pub(crate) ranges: Vec<NvtxRange>,
    pub(crate) nest: Nesting,
    /// Per cycle: the instance's index in the export's ranges, the next's, the instance's
    /// ordinal, and its gap's index in `ranges`.
    at: Vec<(usize, usize, u32, usize)>,
}

impl Between {
    /// The gaps of `name`'s instances in `all` (push/pop, same thread, same enclosing range).
    pub(crate) fn of(all: &[NvtxRange], nest: &Nesting, name: Option<&str>) -> Between {
        let mut own: Vec<usize> = match name {
            Some(n) => (0..all.len())
                .filter(|&i| all[i].push_pop && *all[i].name == *n)
                .collect(),
            None => Vec::new(),
        };
        own.sort_by_key(|&i| (all[i].start, i));
        let mut pairs = Vec::new();
        for (ord, &i) in own.iter().enumerate() {
            let next = own[ord + 1..].iter().find(|&&j| all[j].tid == all[i].tid);
            if let Some(&j) = next.filter(|&&j| siblings(all, nest, i, j)) {
                pairs.push((i, j, ord as u32));
            }
        }
        let mut ranges: Vec<NvtxRange> = pairs
            .iter()
            .map(|&(i, j, _)| NvtxRange {
                name: GAP.into(),
                start: all[i].end,
                end: all[j].start.max(all[i].end),
                push_pop: true,
                tid: all[i].tid,
            })
            .collect();
        let at = pairs
            .iter()
            .enumerate()
            .map(|(k, &(i, j, o))| (i, j, o, k))
            .collect();
        ranges.extend(children(all, &ranges));
        let nest = Nesting::new(&ranges);
        Between { ranges, nest, at }
    }

    /// The loop from the cycles' instances (`inst`: an export range's figures by index) and the
    /// gaps' (`gap`: by index in `ranges`), with the gaps' ledger.
    pub(crate) fn finish(
        &self,
        all: &[NvtxRange],
        inst: impl Fn(usize) -> Instance,
        gap: impl Fn(usize) -> Instance,
        ledger: Vec<RangeLedger>,
    ) -> Option<Loop> {
        let &(first, ..) = self.at.first()?;
        let cycles = self
            .at
            .iter()
            .map(|&(i, j, ordinal, g)| {
                let cadence_ns = (all[j].start - all[i].start).max(0);
                let (a, b) = (inst(i), gap(g));
                let (ka, na) = a.kernels();
                let (kb, nb) = b.kernels();
                Cycle {
                    ordinal,
                    cadence_ns,
                    range_ns: (all[i].end - all[i].start).max(0),
                    kernel_ns: ka.saturating_add(kb),
                    launches: na.saturating_add(nb),
                    busy_ns: a.busy_ns().saturating_add(b.busy_ns()).min(cadence_ns),
                }
            })
            .collect();
        Some(Loop {
            range: all[first].name.to_string(),
            cycles,
            between: ledger.into_iter().find(|l| l.name == GAP),
        })
    }
}

/// Two instances are steps of one loop when one range holds both, or each is held by a range
/// of the same name (a `step` holding each `decode`), or neither is held.
fn siblings(all: &[NvtxRange], nest: &Nesting, i: usize, j: usize) -> bool {
    match (nest.parent(i), nest.parent(j)) {
        (None, None) => true,
        (Some(p), Some(q)) => p == q || all[p].name == all[q].name,
        _ => false,
    }
}

/// The push/pop ranges of `all` that lie wholly inside one of `gaps` on its thread.
fn children(all: &[NvtxRange], gaps: &[NvtxRange]) -> Vec<NvtxRange> {
    let mut by_tid: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
    for g in gaps {
        by_tid.entry(g.tid).or_default().push((g.start, g.end));
    }
    for v in by_tid.values_mut() {
        v.sort_unstable();
    }
    all.iter()
        .filter(|r| r.push_pop)
        .filter(|r| {
            by_tid.get(&r.tid).is_some_and(|v| {
                let k = v.partition_point(|g| g.0 <= r.start);
                k > 0 && v[k - 1].1 >= r.end && r.end > r.start
            })
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testutil::push_pop as r;

    #[test]
    fn cycles_run_start_to_start_and_the_gap_holds_the_ranges_between() {
        let all = vec![
            r("generate", 0, 100),
            r("decode", 10, 20),
            r("sample", 22, 25),
            r("decode", 40, 50),
            r("decode", 70, 80),
        ];
        let nest = Nesting::new(&all);
        let b = Between::of(&all, &nest, Some("decode"));
        assert_eq!(b.at.len(), 2);
        // Two gaps, and `sample` inside the first as its child.
        assert_eq!(b.ranges.len(), 3);
        assert_eq!((b.ranges[0].start, b.ranges[0].end), (20, 40));
        assert_eq!(&*b.ranges[2].name, "sample");
        let lp = b
            .finish(
                &all,
                |_| Instance::default(),
                |_| Instance::default(),
                vec![],
            )
            .unwrap();
        let f = lp.figures(None).unwrap();
        assert_eq!(f.cycles, 2);
        assert_eq!(f.median_cadence_ns, 30.0);
        assert_eq!(f.median_range_ns, 10.0);
        assert!((f.range_share_pct - 100.0 / 3.0).abs() < 1e-9);
        // The steady members only: the second cycle.
        assert_eq!(lp.figures(Some(&[1])).unwrap().cycles, 1);
        assert!(lp.figures(Some(&[2])).is_none());
    }

    #[test]
    fn instances_under_unlike_parents_make_no_cycle() {
        let all = vec![
            r("req", 0, 30),
            r("decode", 5, 10),
            r("warmup", 40, 70),
            r("decode", 45, 50),
        ];
        let nest = Nesting::new(&all);
        assert!(Between::of(&all, &nest, Some("decode")).at.is_empty());
        let one = vec![r("decode", 0, 10)];
        let nest = Nesting::new(&one);
        let b = Between::of(&one, &nest, Some("decode"));
        assert!(b
            .finish(
                &one,
                |_| Instance::default(),
                |_| Instance::default(),
                vec![]
            )
            .is_none());
    }
}
