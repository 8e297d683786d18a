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
        use std::io::Write;
        // serde writes token by token: a buffer it knows the type of takes them, and the
        // writer behind it (the redaction step) gets blocks.
        let mut b = std::io::BufWriter::with_capacity(64 * 1024, w);
        serde_json::to_writer_pretty(&mut b, &d.document()).map_err(std::io::Error::other)?;
        b.write_all(b"\n")?;
        b.flush()?;
        Ok(true)
    }
}
