//! Steps told apart by the work they do: a serving loop's step that also runs a request's
//! prefill launches other kernels than a decode-only one, and its time is of another kind.
//! Each instance of the captured range is keyed by the ranges directly inside it and by its
//! kernel launches; instances of one key are one kind, with its median wall time
//! (rules::WORK_KINDS says when the launches are left out of the key).

use serde::Serialize;

use super::nesting::Nesting;
use super::ranges::Spread;
use crate::parse::sqlite::NvtxRange;

/// One instance of a range and the work it did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Work {
    /// Its index in the export's ranges, and its 1-based ordinal among the range's instances.
    pub(crate) range: usize,
    pub(crate) ordinal: u64,
    pub(crate) wall_ns: f64,
    pub(crate) launches: u64,
    /// The names of the ranges directly inside it, sorted, each once.
    pub(crate) children: Vec<String>,
}

/// Instances that did the same work.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct WorkKind {
    /// The ranges directly inside each of them (empty: none).
    pub(crate) children: Vec<String>,
    /// Their fewest and most kernel launches (equal where the launches are in the key).
    pub(crate) launches: [u64; 2],
    pub(crate) instances: u64,
    /// Their 1-based ordinals among every instance of the range (start order), and the first
    /// and last of them.
    #[serde(skip)]
    pub(crate) ordinals: Vec<u64>,
    pub(crate) first: u64,
    pub(crate) last: u64,
    pub(crate) median_wall_ns: f64,
}

/// The work of every instance of `name` (push/pop or start/end), in start order; `launches`
/// gives an instance's kernel launches by its index; `step_like` says which ranges count as
/// child ranges (not PyTorch's operator ranges nor a library's own: they name calls, not work
/// of a kind).
pub(crate) fn of_range(
    ranges: &[NvtxRange],
    nest: &Nesting,
    name: &str,
    launches: impl Fn(usize) -> u64,
    step_like: impl Fn(&str) -> bool,
) -> Vec<Work> {
    let mut out: Vec<Work> = ranges
        .iter()
        .enumerate()
        .filter(|(_, r)| &*r.name == name && r.end >= r.start)
        .map(|(i, r)| Work {
            range: i,
            ordinal: 0,
            wall_ns: (r.end - r.start) as f64,
            launches: launches(i),
            children: Vec::new(),
        })
        .collect();
    if out.is_empty() {
        return out;
    }
    let at: rustc_hash::FxHashMap<usize, usize> =
        out.iter().enumerate().map(|(k, w)| (w.range, k)).collect();
    for (j, r) in ranges
        .iter()
        .enumerate()
        .filter(|(_, r)| r.push_pop && step_like(&r.name))
    {
        if let Some(&k) = nest.parent(j).and_then(|p| at.get(&p)) {
            let c = &mut out[k].children;
            if !c.iter().any(|n| **n == *r.name) {
                c.push(r.name.to_string());
            }
        }
    }
    for w in &mut out {
        w.children.sort_unstable();
    }
    out.sort_by_key(|w| ranges[w.range].start);
    for (k, w) in out.iter_mut().enumerate() {
        w.ordinal = k as u64 + 1;
    }
    out
}

/// The kinds of work among `work` (in start order): keyed by the child ranges and the
/// launches, or by the child ranges alone where that gives more than `max_kinds` kinds; none
/// where even those are more (the instances are not a few kinds of step). Kinds in order of
/// their first instance; one kind when the instances do not differ.
pub(crate) fn kinds(work: &[Work], max_kinds: usize) -> Vec<WorkKind> {
    let exact = group(work, true);
    if exact.len() <= max_kinds {
        return exact;
    }
    let by_children = group(work, false);
    match by_children.len() <= max_kinds {
        true => by_children,
        false => Vec::new(),
    }
}

fn group(work: &[Work], by_launches: bool) -> Vec<WorkKind> {
    let mut keys: Vec<(&[String], u64)> = Vec::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    for (i, w) in work.iter().enumerate() {
        let key = (
            w.children.as_slice(),
            if by_launches { w.launches } else { 0 },
        );
        match keys.iter().position(|k| *k == key) {
            Some(p) => members[p].push(i),
            None => {
                keys.push(key);
                members.push(vec![i]);
            }
        }
    }
    keys.iter()
        .zip(members)
        .map(|((children, _), m)| {
            let launches = m.iter().map(|&i| work[i].launches);
            let ordinals: Vec<u64> = m.iter().map(|&i| work[i].ordinal).collect();
            WorkKind {
                children: children.to_vec(),
                launches: [
                    launches.clone().min().unwrap_or(0),
                    launches.max().unwrap_or(0),
                ],
                instances: m.len() as u64,
                first: ordinals.first().copied().unwrap_or(0),
                last: ordinals.last().copied().unwrap_or(0),
                ordinals,
                median_wall_ns: Spread::of(m.iter().map(|&i| work[i].wall_ns).collect()).median,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testutil::push_pop as r;

    /// A serving loop: every fifth step also runs a prefill, and launches more.
    #[test]
    fn mixed_and_decode_only_steps_are_two_kinds() {
        let mut ranges = Vec::new();
        for k in 0..10i64 {
            let t = k * 1_000;
            let mixed = k % 5 == 0;
            ranges.push(r("step", t, t + if mixed { 700 } else { 500 }));
            if mixed {
                ranges.push(r("prefill", t + 1, t + 100));
            }
            ranges.push(r("decode", t + 200, t + 400));
        }
        let nest = Nesting::new(&ranges);
        let launches = |i: usize| match ranges[i].end - ranges[i].start {
            700 => 337,
            _ => 288,
        };
        let work = of_range(&ranges, &nest, "step", launches, |_| true);
        assert_eq!(work.len(), 10);
        assert_eq!(work[0].children, ["decode", "prefill"]);
        let k = kinds(&work, 6);
        assert_eq!(k.len(), 2);
        assert_eq!(
            (k[0].instances, k[0].launches, k[0].first),
            (2, [337, 337], 1)
        );
        assert_eq!(k[0].median_wall_ns, 700.0);
        assert_eq!((k[1].instances, k[1].children.len()), (8, 1));
        // More kinds of launches than allowed: by the child ranges alone.
        let varied = |i: usize| ranges[i].start as u64 / 1_000;
        let work = of_range(&ranges, &nest, "step", varied, |_| true);
        let k = kinds(&work, 6);
        assert_eq!(k.len(), 2);
        assert_eq!(k[1].launches, [1, 9]);
        // A child range left out (as operator ranges are): one kind.
        let work = of_range(&ranges, &nest, "step", varied, |n| n != "prefill");
        assert_eq!(kinds(&work, 6).len(), 1);
        // Steps that each hold a child range of their own name (operator ranges named by
        // their op id): too many kinds to be kinds of step, none.
        let mut own = Vec::new();
        for k in 0..10i64 {
            own.push(r("step", k * 100, k * 100 + 50));
            own.push(r(&format!("op {k}"), k * 100 + 1, k * 100 + 2));
        }
        let nest = Nesting::new(&own);
        let work = of_range(&own, &nest, "step", |_| 1, |_| true);
        assert!(kinds(&work, 6).is_empty());
    }
}
