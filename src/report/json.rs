//! summary.json: the run's figures and findings serialized, for machines (see
//! findings::document and src/findings/summary.schema.json).

use crate::findings::{document, Findings};

/// `summary.json`.
pub(crate) struct SummaryJson;

impl super::Output for SummaryJson {
    fn file(&self) -> &'static str {
        "summary.json"
    }
    fn render(&self, a: &crate::analysis::Artifacts, f: &Findings) -> Option<String> {
        let doc = document::with(a, f);
        Some(serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n")
    }
}
