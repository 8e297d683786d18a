//! The rules applied to a run's figures: one function per subject, each adding the findings
//! its figures support (and the ones it abstains from) in the order the reports read them.

mod coverage;
mod cycle;
mod groups;
mod kernels;
mod ranges;
mod run;

use super::{Claim, Findings, Role};
use crate::analysis::Artifacts;

/// Every finding; range verdicts for the ranges `listed` (the tables' rows: a run with 73k
/// range names would otherwise carry 73k verdicts nobody reads).
pub(super) fn all(a: &Artifacts, listed: &super::listed::Listed) -> Findings {
    let mut out = Findings::default();
    kernels::totals(a, &mut out);
    ranges::captured(a, &mut out);
    ranges::phases(a, &mut out);
    ranges::per_token(a, &mut out);
    cycle::cycle(a, &mut out);
    groups::instances(a, &mut out);
    ranges::verdicts(a, listed, &mut out);
    run::ranks(a, &mut out);
    kernels::launch_calls(a, &mut out);
    coverage::coverage(a, &mut out);
    coverage::shapes(a, &mut out);
    ranges::measurement_cost(a, &mut out);
    kernels::launch_size(a, &mut out);
    kernels::bounds(a, &mut out);
    run::passes(a, &mut out);
    run::nvidia(a, &mut out);
    run::nvidia_ncu(a, &mut out);
    let decided = out.made().any(|f| {
        matches!(f.role, Role::Verdict | Role::Advice | Role::Caveat)
            && !matches!(f.claim, Claim::RangeVerdict { .. })
    });
    if !decided {
        out.push(
            Claim::NothingStandsOut,
            super::Scope::capture(),
            None,
            vec![],
        );
    }
    out
}
