//! The small-batch lever (rules::SMALL_BATCH): where a decode step's cost is mostly fixed per
//! forward pass, more sequences per pass share it. Sized per token from the step's split
//! (analysis::batching): the time the GPU waits and reading the step's DRAM bytes stay, the
//! rest of the GPU's work grows with the sequences.

use super::super::{Figure, LeverKind, Quantity};
use super::levers::{Sized, Step};
use crate::analysis::batching::StepCost;
use crate::analysis::Artifacts;
use crate::rules;

/// The lever where the captured range's steps are decode passes (every tokens mark in them of
/// one new token) and their fixed part is at least the rule's share of the step; `busy` is the
/// GPU's working share of the step. A step of several passes of one sequence each is taken as
/// that many requests forwarded alone (the phrase says so) where it recurs over
/// rules::GROUPS_MIN_INSTANCES steps or more: one pass of a whole generation's tokens does not.
pub(super) fn lever(a: &Artifacts, step: &Step, busy: Option<f64>) -> Option<Sized> {
    let f = a.forwards.filter(|f| f.decode && f.batch > 0)?;
    let passes = match f.per_step {
        1 => 1,
        n if f.batch == 1 && f.steps as usize >= rules::GROUPS_MIN_INSTANCES => n,
        _ => return None,
    };
    let gpu_ms = step.ms * busy? / 100.0;
    let name = step.scope.range.as_deref()?;
    let bytes = a.steps().filter(|s| s.range == name);
    let floor_ms = bytes.and_then(|b| b.memory_floor_ms);
    let cost = StepCost::of(step.ms, gpu_ms, floor_ms);
    if 100.0 * cost.fixed_ms / step.ms < rules::SMALL_BATCH.threshold {
        return None;
    }
    let to = match passes {
        1 => 2 * f.batch,
        n => n * f.batch,
    };
    let (now, then) = cost.per_token(passes, f.batch, to);
    let saving = now - then;
    let fig = |q, v| Figure::new(q, v, &a.sqlite_file, &step.scope);
    let mut figures = vec![
        fig(Quantity::SavingMsPerToken, saving),
        fig(Quantity::SavingOfTokenPct, 100.0 * saving / now),
        fig(Quantity::TokenMsNow, now),
        fig(Quantity::TokenMsThen, then),
        fig(Quantity::StepMsThen, then * to as f64),
        fig(Quantity::FixedMsPerStep, cost.fixed_ms),
        fig(Quantity::GrowingMsPerStep, cost.growing_ms),
        fig(Quantity::BatchSequences, f.batch as f64),
        fig(Quantity::BatchThen, to as f64),
        fig(Quantity::PassesPerStep, passes as f64),
    ];
    if let (Some(b), Some(ms)) = (bytes, floor_ms) {
        figures.push(fig(Quantity::StepSampledDramMb, b.dram_bytes / 1e6));
        figures.push(fig(Quantity::StepDramFloorMs, ms));
    }
    Some(Sized {
        kind: LeverKind::Batch {
            batch: f.batch,
            forwards: passes,
            to,
        },
        pct: 100.0 * saving / now,
        figures,
    })
}
