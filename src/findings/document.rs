//! summary.json: the run's figures (analysis::summary), the capture as typed once, and every
//! finding with its evidence. The contract for scripts and agents; its JSON Schema is
//! `src/findings/summary.schema.json`.

use serde::Serialize;

use super::Findings;
use crate::analysis::summary::{self, Summary};
use crate::analysis::Artifacts;
use crate::config::Capture;

#[derive(Debug, Serialize)]
pub(crate) struct Document<'a> {
    #[serde(flatten)]
    pub(crate) summary: Summary,
    /// What the nsys pass captured (`kind`: whole_run, nvtx_range, profiler_api).
    pub(crate) capture: Capture,
    /// Borrowed: a run with 73k range names has as many findings, and a copy of them is
    /// memory the report does not need.
    pub(crate) findings: &'a Findings,
}

/// The document of a run whose findings are already derived.
pub(crate) fn with<'a>(a: &Artifacts, findings: &'a Findings) -> Document<'a> {
    Document {
        summary: summary::summary(a),
        capture: a.capture.clone(),
        findings,
    }
}
