//! Which ranges the range tables and summary.json list (`report.max_ranges`): decided once,
//! before the findings, whose range verdicts speak of those ranges only.

/// The file with every range's row, however many the tables and summary.json list.
pub(crate) const RANGES_CSV: &str = "ranges.csv";

/// The ranges the range tables list: all, or the `report.max_ranges` with the most range time
/// (the longer of CPU wall and GPU projection), and of those left out the longest. The range
/// nsys captured and the one ncu profiled are listed whatever their time: the reports speak of
/// them.
pub(crate) struct Listed {
    /// None: every range.
    names: Option<std::collections::HashSet<String>>,
    pub(crate) max: usize,
}

impl Listed {
    /// The listed ranges of a run's figures.
    pub(crate) fn of_run(a: &crate::analysis::Artifacts) -> Listed {
        let ncu = a.ncu_range();
        let always: Vec<&str> = a.focus.range().into_iter().chain(ncu.as_deref()).collect();
        Listed::of(&a.range_stats, a.config.report.max_ranges, &always)
    }

    pub(crate) fn of(
        ranges: &[crate::analysis::ranges::RangeStats],
        max: usize,
        always: &[&str],
    ) -> Listed {
        if max == 0 || ranges.len() <= max {
            return Listed { names: None, max };
        }
        let mut by_time: Vec<_> = ranges.iter().collect();
        by_time.sort_by_key(|r| std::cmp::Reverse(r.wall_ns.max(r.proj_ns)));
        let mut names: std::collections::HashSet<String> =
            by_time.iter().take(max).map(|r| r.name.clone()).collect();
        names.extend(
            always
                .iter()
                .filter(|n| ranges.iter().any(|r| r.name == **n))
                .map(|n| n.to_string()),
        );
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::ranges::RangeStats;

    fn range(name: &str, wall_ns: i64, proj_ns: i64) -> RangeStats {
        RangeStats {
            name: name.into(),
            wall_ns,
            proj_ns,
            ..RangeStats::default()
        }
    }

    /// The longest ranges by the longer of wall and projection, and the captured ones however
    /// short; a captured name the run does not hold adds nothing.
    #[test]
    fn the_longest_and_the_captured_ranges_are_listed() {
        let ranges = [
            range("step", 900, 10),
            range("decode", 5, 5),
            range("attn", 100, 800),
            range("mlp", 50, 60),
        ];
        let l = Listed::of(&ranges, 2, &["decode", "absent"]);
        let listed: Vec<&str> = ranges
            .iter()
            .map(|r| r.name.as_str())
            .filter(|n| l.has(n))
            .collect();
        assert_eq!(listed, ["step", "decode", "attn"]);
        let (rows, left) = l.split(&ranges, |r| &r.name, |r| r.wall_ns);
        assert_eq!(rows.len(), 3);
        let left = left.expect("mlp is left out");
        assert_eq!((left.rows, left.longest_ns, left.max), (1, 50, 2));
        assert!(Listed::of(&ranges, 0, &[]).has("mlp"));
        assert!(Listed::of(&ranges, 4, &[])
            .split(&ranges, |r| &r.name, |r| r.wall_ns)
            .1
            .is_none());
    }
}
