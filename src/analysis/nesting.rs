//! Which ranges hold a moment on a thread, without a time-ordered sweep: push/pop ranges of one
//! thread nest, so the innermost one open at `t` is found by a binary search on starts and a
//! walk up the parents; start/end ranges (any thread, may overlap) by a search bounded by the
//! latest end before each start. Lets the readers stream events in whatever order the export
//! holds them, with memory that grows with ranges, not with events.

use rustc_hash::FxHashMap as HashMap;

use crate::parse::sqlite::NvtxRange;

#[derive(Clone)]
pub(crate) struct Nesting {
    /// Each push/pop range's enclosing range on its thread, by range index.
    parent_of: Vec<u32>,
    /// Per thread: push/pop range indices by start (outer first on ties), and each one's parent
    /// (position in the same list).
    threads: HashMap<i64, Thread>,
    /// Start/end range indices by start, and the largest end up to each position.
    spans: Vec<usize>,
    spans_max_end: Vec<i64>,
}

/// Where a consumer's last lookup landed on each thread (see [`Nesting::open_at_from`]).
#[derive(Default)]
pub(crate) struct Cursor {
    at: HashMap<i64, usize>,
}

impl Cursor {
    /// The last position whose start is at or before `t`.
    fn last_start_at_or_before(&mut self, tid: i64, starts: &[i64], t: i64) -> Option<usize> {
        let hint = self.at.get(&tid).copied().unwrap_or(0).min(starts.len());
        // A few steps forward from the last answer, else a binary search.
        let mut end = hint;
        let mut found = None;
        if hint == 0 || starts.get(hint - 1).is_some_and(|&s| s <= t) {
            for _ in 0..8 {
                match starts.get(end) {
                    Some(&s) if s <= t => end += 1,
                    Some(_) => {
                        found = Some(end);
                        break;
                    }
                    None => {
                        found = Some(end);
                        break;
                    }
                }
            }
        }
        let end = found.unwrap_or_else(|| starts.partition_point(|&s| s <= t));
        self.at.insert(tid, end);
        end.checked_sub(1)
    }
}

#[derive(Clone)]
struct Thread {
    idx: Vec<u32>,
    starts: Vec<i64>,
    parent: Vec<u32>,
}

/// No parent (indices are u32: a range index per 4 bytes keeps the index small).
const NONE: u32 = u32::MAX;

fn some(i: u32) -> Option<usize> {
    (i != NONE).then_some(i as usize)
}

impl Nesting {
    pub(crate) fn new(ranges: &[NvtxRange]) -> Nesting {
        let mut by: HashMap<i64, Vec<usize>> = HashMap::default();
        let mut spans = Vec::new();
        for (i, r) in ranges.iter().enumerate() {
            match r.push_pop {
                true => by.entry(r.tid).or_default().push(i),
                false => spans.push(i),
            }
        }
        let order = |v: &mut Vec<usize>| {
            v.sort_by(|&a, &b| {
                let (x, y) = (&ranges[a], &ranges[b]);
                x.start
                    .cmp(&y.start)
                    .then(y.end.cmp(&x.end))
                    .then(a.cmp(&b))
            })
        };
        let mut parent_of = vec![NONE; ranges.len()];
        let threads = by
            .into_iter()
            .map(|(tid, mut idx)| {
                order(&mut idx);
                let mut parent = Vec::with_capacity(idx.len());
                let mut stack: Vec<usize> = Vec::new();
                for (pos, &i) in idx.iter().enumerate() {
                    while stack
                        .last()
                        .is_some_and(|&p| ranges[idx[p]].end <= ranges[i].start)
                    {
                        stack.pop();
                    }
                    parent.push(stack.last().map_or(NONE, |&p| p as u32));
                    parent_of[i] = stack.last().map_or(NONE, |&p| idx[p] as u32);
                    stack.push(pos);
                }
                let starts = idx.iter().map(|&i| ranges[i].start).collect();
                let idx = idx.into_iter().map(|i| i as u32).collect();
                (
                    tid,
                    Thread {
                        idx,
                        starts,
                        parent,
                    },
                )
            })
            .collect();
        order(&mut spans);
        let mut max_end = i64::MIN;
        let spans_max_end = spans
            .iter()
            .map(|&i| {
                max_end = max_end.max(ranges[i].end);
                max_end
            })
            .collect();
        Nesting {
            parent_of,
            threads,
            spans,
            spans_max_end,
        }
    }

    /// The push/pop ranges of `tid` open at `t` (start <= t, and `t` before the end, or at it
    /// when `end_inclusive`), innermost first, as indices into the ranges.
    #[cfg(test)]
    pub(crate) fn open_at<'a>(
        &'a self,
        ranges: &'a [NvtxRange],
        tid: i64,
        t: i64,
        end_inclusive: bool,
    ) -> impl Iterator<Item = usize> + 'a {
        self.open_at_from(&mut Cursor::default(), ranges, tid, t, end_inclusive)
    }

    /// [`Nesting::open_at`] for a consumer whose times mostly grow: `cursor` remembers where
    /// the last lookup on each thread landed, so the next one is a step or two from it rather
    /// than a binary search.
    pub(crate) fn open_at_from<'a>(
        &'a self,
        cursor: &mut Cursor,
        ranges: &'a [NvtxRange],
        tid: i64,
        t: i64,
        end_inclusive: bool,
    ) -> impl Iterator<Item = usize> + 'a {
        let th = self.threads.get(&tid);
        let mut pos = th.and_then(|th| cursor.last_start_at_or_before(tid, &th.starts, t));
        let holds = move |end: i64| if end_inclusive { end >= t } else { end > t };
        std::iter::from_fn(move || {
            let th = th?;
            // A range that closed before `t` holds it only through an ancestor.
            while let Some(p) = pos {
                if holds(ranges[th.idx[p] as usize].end) {
                    break;
                }
                pos = some(th.parent[p]);
            }
            let p = pos?;
            pos = some(th.parent[p]);
            Some(th.idx[p] as usize)
        })
    }

    /// Every range that holds a CUDA call made at `t` on thread `tid`: its thread's push/pop
    /// ranges open then (innermost first, a range ending at `t` included), then the start/end
    /// ranges that hold `t`. What a call launched counts for each of them.
    pub(crate) fn holding_call<'a>(
        &'a self,
        cursor: &mut Cursor,
        ranges: &'a [NvtxRange],
        tid: i64,
        t: i64,
    ) -> impl Iterator<Item = usize> + 'a {
        self.open_at_from(cursor, ranges, tid, t, true)
            .chain(self.spans_at(ranges, t))
    }

    /// The innermost range that holds an NVTX mark made at `t` on thread `tid`: the latest to
    /// start of the thread's innermost push/pop range open then (its end included) and the
    /// start/end ranges that hold `t`.
    pub(crate) fn holding_mark(
        &self,
        cursor: &mut Cursor,
        ranges: &[NvtxRange],
        tid: i64,
        t: i64,
    ) -> Option<usize> {
        self.open_at_from(cursor, ranges, tid, t, true)
            .next()
            .into_iter()
            .chain(self.spans_at(ranges, t))
            .max_by_key(|&i| ranges[i].start)
    }

    /// The innermost instance of range `name` that holds a CUDA call made at `t` on thread
    /// `tid` (see [`Nesting::holding_call`]), if any.
    pub(crate) fn holding_named(
        &self,
        cursor: &mut Cursor,
        ranges: &[NvtxRange],
        tid: i64,
        t: i64,
        name: &str,
    ) -> Option<usize> {
        self.holding_call(cursor, ranges, tid, t)
            .find(|&i| *ranges[i].name == *name)
    }

    /// The push/pop range that encloses push/pop range `i` on its thread.
    pub(crate) fn parent(&self, i: usize) -> Option<usize> {
        self.parent_of.get(i).copied().and_then(some)
    }

    /// The start/end ranges that hold `t` (start <= t <= end), any thread.
    pub(crate) fn spans_at<'a>(
        &'a self,
        ranges: &'a [NvtxRange],
        t: i64,
    ) -> impl Iterator<Item = usize> + 'a {
        let hi = self.spans.partition_point(|&i| ranges[i].start <= t);
        (0..hi)
            .rev()
            .take_while(move |&k| self.spans_max_end[k] >= t)
            .map(move |k| self.spans[k])
            .filter(move |&i| ranges[i].end >= t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(name: &str, start: i64, end: i64, push_pop: bool) -> NvtxRange {
        NvtxRange {
            name: name.into(),
            start,
            end,
            push_pop,
            tid: 1,
        }
    }

    #[test]
    fn innermost_first_then_parents_and_overlapping_spans() {
        let ranges = [
            r("decode", 0, 100, true),
            r("step", 10, 40, true),
            r("attn", 12, 20, true),
            r("step", 50, 90, true),
            r("w", 5, 60, false),
            r("w", 30, 200, false),
        ];
        let n = Nesting::new(&ranges);
        let at = |t, inc| n.open_at(&ranges, 1, t, inc).collect::<Vec<_>>();
        assert_eq!(at(15, false), [2, 1, 0]);
        assert_eq!(at(25, false), [1, 0]);
        assert_eq!(at(45, false), [0]);
        assert_eq!(at(40, false), [0]);
        assert_eq!(at(40, true), [1, 0]);
        assert_eq!(at(150, false), Vec::<usize>::new());
        assert_eq!(n.open_at(&ranges, 2, 15, false).count(), 0);
        // The same answers through a cursor, times going back and forth.
        let mut c = Cursor::default();
        for (t, want) in [
            (15, vec![2, 1, 0]),
            (45, vec![0]),
            (15, vec![2, 1, 0]),
            (150, vec![]),
            (25, vec![1, 0]),
        ] {
            let got: Vec<_> = n.open_at_from(&mut c, &ranges, 1, t, false).collect();
            assert_eq!(got, want, "t={t}");
        }
        let spans = |t| {
            let mut v: Vec<_> = n.spans_at(&ranges, t).collect();
            v.sort();
            v
        };
        assert_eq!(spans(55), [4, 5]);
        assert_eq!(spans(100), [5]);
        assert_eq!(spans(2), Vec::<usize>::new());
    }
}
