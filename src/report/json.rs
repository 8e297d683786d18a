//! summary.json: the analysis's summary serialized, for machines.

use crate::analysis::summary::Summary;

pub(crate) fn summary_json(summary: &Summary) -> String {
    serde_json::to_string_pretty(summary).unwrap_or_default() + "\n"
}

/// `summary.json`.
pub(crate) struct SummaryJson;

impl super::Output for SummaryJson {
    fn file(&self) -> &'static str {
        "summary.json"
    }
    fn render(&self, a: &crate::analysis::Artifacts) -> Option<String> {
        Some(summary_json(&crate::analysis::summary::summary(a)))
    }
}
