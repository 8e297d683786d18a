//! summary.json: the analysis's summary serialized, for machines.

use crate::analysis::summary::Summary;

pub(crate) fn summary_json(summary: &Summary) -> String {
    serde_json::to_string_pretty(summary).unwrap_or_default() + "\n"
}
