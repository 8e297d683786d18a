//! Findings about speculative decoding (analysis::spec): how many of the draft's tokens the
//! target accepted, the draft's share of the two models' time, and what a token costs against
//! the target's plain decode step; a verdict where speculation is the slower of the two.

use super::super::{Claim, Figure, Findings, LeverKind, Quantity, Scope};
use super::sized::{Sized, Step};
use crate::analysis::Artifacts;
use crate::rules;

pub(super) fn speculation(a: &Artifacts, out: &mut Findings) {
    let Some(s) = &a.speculation else { return };
    // The marks and the ranges are the whole capture's.
    let scope = Scope::capture();
    let fig = |q, v| Figure::new(q, v, &a.sqlite_file, &scope);
    let mut ev = Vec::new();
    if let Some(tokens) = s.tokens() {
        ev.push(fig(Quantity::VerifySteps, s.steps as f64));
        if let Some(v) = s.verify {
            ev.push(fig(Quantity::VerifyPasses, v.instances as f64));
        }
        ev.push(fig(Quantity::DraftTokensProposed, s.proposed as f64));
        ev.push(fig(Quantity::DraftTokensAccepted, s.accepted as f64));
        if let Some(p) = s.acceptance_pct() {
            ev.push(fig(Quantity::AcceptancePct, p));
        }
        ev.push(fig(
            Quantity::TokensPerVerify,
            tokens as f64 / s.steps as f64,
        ));
    }
    if let Some((wall, kernel)) = s.draft_share_pct() {
        ev.push(fig(Quantity::DraftShareOfWallPct, wall));
        if let Some(k) = kernel {
            ev.push(fig(Quantity::DraftShareOfKernelPct, k));
        }
    }
    let per_token = s.ms_per_token();
    if let Some(ms) = per_token {
        ev.push(fig(Quantity::SpeculativeMsPerToken, ms));
    }
    let decode = s.decode_median_ns.map(|ns| ns / 1e6).filter(|ms| *ms > 0.0);
    let ratio = per_token.zip(decode).map(|(p, d)| 100.0 * p / d);
    if let (Some(d), Some(r)) = (decode, ratio) {
        ev.push(fig(Quantity::DecodeMsPerToken, d));
        ev.push(fig(Quantity::DecodeSteps, s.decode_steps as f64));
        ev.push(fig(Quantity::SpeculativeOfDecodePct, r));
    }
    out.push(Claim::Speculation, scope.clone(), None, ev.clone());
    if ratio.is_some_and(|r| r >= rules::SPECULATION_SLOWER.threshold) {
        out.push(
            Claim::SpeculationSlower,
            scope,
            Some(rules::SPECULATION_SLOWER),
            ev,
        );
    }
}

/// Plain decode as a lever, per token: where speculation's tokens cost more than the target's
/// own decode step, dropping the draft saves the difference on each token.
pub(super) fn lever(a: &Artifacts, step: &Step) -> Option<Sized> {
    let s = a.speculation.as_ref()?;
    let now = s.ms_per_token()?;
    let then = s
        .decode_median_ns
        .map(|ns| ns / 1e6)
        .filter(|ms| *ms > 0.0)?;
    if now <= 0.0 || 100.0 * now / then < rules::SPECULATION_SLOWER.threshold {
        return None;
    }
    let fig = |q, v| Figure::new(q, v, &a.sqlite_file, &step.scope);
    Some(Sized {
        kind: LeverKind::PlainDecode,
        pct: 100.0 * (now - then) / now,
        figures: vec![
            fig(Quantity::SavingMsPerToken, now - then),
            fig(Quantity::SavingOfTokenPct, 100.0 * (now - then) / now),
            fig(Quantity::TokenMsNow, now),
            fig(Quantity::TokenMsThen, then),
        ],
    })
}
