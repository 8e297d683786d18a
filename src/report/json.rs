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
    fn stream(
        &self,
        a: &crate::analysis::Artifacts,
        f: &Findings,
        w: &mut dyn std::io::Write,
    ) -> Option<std::io::Result<()>> {
        let doc = document::with(a, f);
        Some(
            serde_json::to_writer_pretty(&mut *w, &doc)
                .map_err(std::io::Error::other)
                .and_then(|()| w.write_all(b"\n")),
        )
    }
    fn streams(&self) -> bool {
        true
    }
}
