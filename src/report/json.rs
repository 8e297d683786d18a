//! summary.json: the run's figures and findings serialized, for machines (see
//! findings::document and src/findings/summary.schema.json).

use crate::findings::{document, Findings};

/// `summary.json`.
pub(crate) struct SummaryJson;

impl super::Output for SummaryJson {
    fn file(&self) -> &'static str {
        "summary.json"
    }
    fn stream(
        &self,
        a: &crate::analysis::Artifacts,
        f: &Findings,
        w: &mut dyn std::io::Write,
    ) -> std::io::Result<bool> {
        let doc = document::with(a, f);
        serde_json::to_writer_pretty(&mut *w, &doc).map_err(std::io::Error::other)?;
        w.write_all(b"\n")?;
        Ok(true)
    }
}
