//! Which ranges the range tables and summary.json list (`report.max_ranges`): decided once,
//! before the findings, whose range verdicts speak of those ranges only.

/// The file with every range's row, however many the tables and summary.json list.
pub(crate) const RANGES_CSV: &str = "ranges.csv";

/// The ranges the range tables list: all, or the `report.max_ranges` with the most range time
/// (the longer of CPU wall and GPU projection), and of those left out the longest.
pub(crate) struct Listed {
    /// None: every range.
    names: Option<std::collections::HashSet<String>>,
    pub(crate) max: usize,
}

impl Listed {
    pub(crate) fn of(ranges: &[crate::analysis::ranges::RangeStats], max: usize) -> Listed {
        if max == 0 || ranges.len() <= max {
            return Listed { names: None, max };
        }
        let mut by_time: Vec<_> = ranges.iter().collect();
        by_time.sort_by_key(|r| std::cmp::Reverse(r.wall_ns.max(r.proj_ns)));
        let names = by_time.iter().take(max).map(|r| r.name.clone()).collect();
        Listed {
            names: Some(names),
            max,
        }
    }

    /// Whether the tables list range `name`.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.names.as_ref().is_none_or(|n| n.contains(name))
    }

    /// A table's rows (each a range, by `name`): those it lists, in their order, and what is
    /// left out, with the longest left-out row's `time` (ns).
    pub(crate) fn split<'r, T>(
        &self,
        rows: &'r [T],
        name: impl Fn(&T) -> &str,
        time: impl Fn(&T) -> i64,
    ) -> (Vec<&'r T>, Option<LeftOut>) {
        let mut listed = Vec::with_capacity(rows.len().min(self.max.max(1)));
        let mut left: Option<LeftOut> = None;
        for r in rows {
            if self.has(name(r)) {
                listed.push(r);
                continue;
            }
            let l = left.get_or_insert(LeftOut {
                rows: 0,
                longest_ns: 0,
                max: self.max,
            });
            l.rows += 1;
            l.longest_ns = l.longest_ns.max(time(r));
        }
        (listed, left)
    }
}

/// The rows a range table leaves out (`report.max_ranges`).
pub(crate) struct LeftOut {
    pub(crate) rows: usize,
    /// The longest of them, in the table's own time (ns).
    pub(crate) longest_ns: i64,
    /// How many ranges the tables list.
    pub(crate) max: usize,
}
