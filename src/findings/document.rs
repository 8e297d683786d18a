//! The decided document: a run's parsed data, its findings, its summary figures and the few
//! figures only the tables print (stragglers, tensor-core types, ncu's range), built once per
//! render. The renderers in `report/` read only this; they decide nothing. summary.json is
//! its serialized part ([`Document`]), whose JSON Schema is `src/findings/summary.schema.json`.
//!
//! The tables' rows stay the analysis's typed rows, borrowed, not copied: a run with 73k range
//! names has as many rows, and a second copy of them is memory the report does not need. They
//! are named here for the renderers.

use std::collections::BTreeMap;

use serde::Serialize;

pub(crate) use super::listed::{LeftOut, Listed, RANGES_CSV};
use super::Findings;
pub(crate) use crate::analysis::instances::Group;
pub(crate) use crate::analysis::ledger::{Parts, RangeLedger};
pub(crate) use crate::analysis::repeats::Repeats;
pub(crate) use crate::analysis::roofline::Peaks;
pub(crate) use crate::analysis::sampled::reuse::{Reused, FILE as REUSED_FIGURES};
pub(crate) use crate::analysis::sampled::Agreement;
pub(crate) use crate::analysis::summary::{GpuMetrics, RangesLeftOut, Summary};
pub(crate) use crate::analysis::tokens::PhaseCost;
pub(crate) use crate::analysis::Artifacts;
use crate::config::Capture;

/// What the renderers read: the run's data (through `Deref`), and what was decided from it.
pub(crate) struct Decided<'a> {
    run: &'a Artifacts,
    pub(crate) findings: Findings,
    pub(crate) summary: Summary,
    /// Per range name of a multi-rank run: the median rank's wall time, the slowest rank and
    /// its wall time (see analysis::ranks::straggler).
    pub(crate) stragglers: BTreeMap<String, (f64, u32, f64)>,
    /// The tensor-core source types ncu measured (BF16, FP16, ...), from its metric names.
    pub(crate) tensor_sources: Vec<String>,
    /// The ranges kernels.md's range tables list (`report.max_ranges`).
    pub(crate) listed: Listed,
}

impl std::ops::Deref for Decided<'_> {
    type Target = Artifacts;
    fn deref(&self) -> &Artifacts {
        self.run
    }
}

/// Decide everything the reports say about a run, once.
pub(crate) fn decide(a: &Artifacts) -> Decided<'_> {
    let mut stragglers = BTreeMap::new();
    if a.rank_data.len() > 1 {
        for name in a.rank_data.iter().flat_map(|r| r.ranges.keys()) {
            if stragglers.contains_key(name) {
                continue;
            }
            if let Some(s) = crate::analysis::ranks::straggler(&a.rank_data, name) {
                stragglers.insert(name.clone(), s);
            }
        }
    }
    let mut tensor_sources: Vec<String> = a
        .records
        .iter()
        .chain(&a.ncu_records)
        .flat_map(|r| r.metrics.keys())
        .filter_map(|k| crate::analysis::roofline::tensor_source(k))
        .map(|k| k.split('_').next().unwrap_or(k).to_ascii_uppercase())
        .collect();
    tensor_sources.sort_unstable();
    tensor_sources.dedup();
    let listed = Listed::of_run(a);
    // summary.json holds what the tables list; ranges.csv every range.
    let mut summary = crate::analysis::summary::summary_of(a, &|name| listed.has(name));
    let (_, left) = listed.split(&a.range_stats, |r| &r.name, |r| r.wall_ns.max(r.proj_ns));
    summary.ranges_left_out = left.map(|l| RangesLeftOut {
        ranges: l.rows,
        listed: l.max,
        longest_ns: l.longest_ns,
        file: RANGES_CSV,
    });
    Decided {
        run: a,
        findings: super::derive::all(a, &listed),
        summary,
        stragglers,
        tensor_sources,
        listed,
    }
}

/// summary.json: the run's figures, the capture as typed once, and every finding with its
/// evidence. The contract for scripts and agents.
#[derive(Debug, Serialize)]
pub(crate) struct Document<'a> {
    #[serde(flatten)]
    pub(crate) summary: &'a Summary,
    /// What the nsys pass captured (`kind`: whole_run, nvtx_range, profiler_api).
    pub(crate) capture: &'a Capture,
    /// Borrowed: a run with 73k range names has as many findings, and a copy of them is
    /// memory the report does not need.
    pub(crate) findings: &'a Findings,
    /// The words and threshold of every rule the findings cite, by id.
    pub(crate) rules: std::collections::BTreeMap<&'static str, crate::rules::Words>,
}

impl Decided<'_> {
    /// The serialized part of the document.
    pub(crate) fn document(&self) -> Document<'_> {
        Document {
            summary: &self.summary,
            capture: self.run.capture(),
            findings: &self.findings,
            rules: crate::rules::table(self.findings.0.iter().filter_map(|f| f.rule.as_ref())),
        }
    }
}
