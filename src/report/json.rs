//! summary.json: the run's figures and findings serialized, for machines (see
//! findings::document and src/findings/summary.schema.json).

use crate::findings::document::Decided;

/// `summary.json`.
pub(crate) struct SummaryJson;

impl super::Output for SummaryJson {
    fn file(&self) -> &'static str {
        "summary.json"
    }
    fn stream(&self, d: &Decided, w: &mut dyn std::io::Write) -> std::io::Result<bool> {
        serde_json::to_writer_pretty(&mut *w, &d.document()).map_err(std::io::Error::other)?;
        w.write_all(b"\n")?;
        Ok(true)
    }
}
