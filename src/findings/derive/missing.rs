//! A capture whose NVTX range the export never holds (`--nvtx-capture decod`): the reports say
//! so with the export's range names nearest to it, and give no advice on what was captured,
//! since none of it is the range asked for.

use super::super::{Claim, Figure, Findings, Quantity, Role, Scope};
use crate::analysis::Artifacts;

/// The range names listed where none is near the one asked for.
const LISTED: usize = 8;

pub(super) fn capture_missing(a: &Artifacts, out: &mut Findings) {
    let Some(range) = a.capture_range_missing() else {
        return;
    };
    let mut names: Vec<&str> = Vec::new();
    for r in a.range_stats.iter().filter(|r| r.instances > 0) {
        if !names.contains(&r.name.as_str()) {
            names.push(&r.name);
        }
    }
    let close: Vec<String> = crate::analysis::nvtx::close_names(range, names.iter().copied())
        .into_iter()
        .map(str::to_string)
        .collect();
    // Where no name is near, the export's own (the first few), so the reader has something.
    let near = !close.is_empty();
    let close = match near {
        true => close,
        false => names.iter().take(LISTED).map(|n| n.to_string()).collect(),
    };
    withhold_advice(range, out);
    let scope = Scope::capture();
    out.push(
        Claim::CaptureRangeMissing {
            range: range.to_string(),
            close,
            near,
        },
        scope.clone(),
        None,
        vec![
            Figure::new(Quantity::RangeInstances, 0.0, &a.sqlite_file, &scope),
            Figure::new(
                Quantity::RangeNames,
                names.len() as f64,
                &a.sqlite_file,
                &scope,
            ),
        ],
    );
}

/// Verdicts and advice on the missing range or on the whole capture are withheld: what the
/// capture holds is not the range they would be about. Other ranges' own verdicts stand.
fn withhold_advice(range: &str, out: &mut Findings) {
    for f in out.0.iter_mut().filter(|f| f.abstain.is_none()) {
        let about = f.scope.range.is_none() || f.scope.range.as_deref() == Some(range);
        if about && matches!(f.role, Role::Verdict | Role::Advice) {
            f.abstain = Some(format!(
                "the capture's range `{range}` has no instance in the export: no advice on a capture that is not that range"
            ));
        }
    }
}
