//! The summary's list of what bears on how sure its figures are, for the engineer: what the
//! profiling did to them and where two readings of the same thing disagree, each the finding's
//! own sentence. The opening says the gist in plain words (`brief::how_sure`).

use std::fmt::Write;

use crate::findings::Findings;
use crate::report::phrase;

/// The heading the opening points to.
pub(super) const HEADING: &str = "How sure the figures are";

/// "## How sure the figures are" and its points; nothing where no finding bears on it.
pub(super) fn section(f: &Findings, s: &mut String) {
    let points: Vec<String> = f
        .made()
        .filter(|x| x.claim.how_sure())
        .map(|x| super::by_rule_id(x, phrase::sentence(x)))
        .collect();
    if points.is_empty() {
        return;
    }
    let _ = writeln!(s, "## {HEADING}\n");
    for p in points {
        let _ = writeln!(s, "- {p}");
    }
    s.push('\n');
}
