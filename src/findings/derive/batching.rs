//! The small-batch lever (rules::SMALL_BATCH): where a decode step's cost is mostly fixed per
//! forward pass, more sequences per pass share it. Sized per token from the step's split
//! (analysis::batching): the time the GPU waits and reading the step's DRAM bytes stay, the
//! rest of the GPU's work grows with the sequences.

use super::super::{Figure, LeverKind, Quantity};
use super::sized::{Sized, Step};
use crate::analysis::batching::StepCost;
use crate::analysis::Artifacts;
use crate::rules;

/// The lever where the captured range's steps are decode passes (every tokens mark in them of
/// one new token) and their fixed part is at least the rule's share of the step; `busy` is the
/// GPU's working share of the step, `compile_ms` its compiling per step (the compile lever's). A step of several passes of one sequence each is taken as
/// that many requests forwarded alone (the phrase says so) where it recurs over
/// rules::GROUPS_MIN_INSTANCES steps or more: one pass of a whole generation's tokens does not.
pub(super) fn lever(
    a: &Artifacts,
    step: &Step,
    busy: Option<f64>,
    compile_ms: f64,
) -> Option<Sized> {
    let f = a.forwards.filter(|f| f.decode && f.batch > 0)?;
    let passes = match f.per_step {
        1 => 1,
        n if f.batch == 1 && f.steps as usize >= rules::GROUPS_MIN_INSTANCES => n,
        _ => return None,
    };
    let gpu_ms = step.ms * busy? / 100.0;
    let name = step.scope.range.as_deref()?;
    let bytes = a.steps().filter(|s| s.range == name);
    // Of the step's bytes, only the weights are read once a pass whatever its sequences: where
    // the model's census gives them, the KV cache and the rest grow with the sequences.
    let weights = a
        .census
        .as_ref()
        .filter(|c| c.range == name && c.dense_bytes > 0.0)
        .zip(bytes)
        .map(|(c, b)| c.dense_bytes.min(b.dram_bytes));
    let floor_ms = bytes.and_then(|b| {
        let share = weights.map_or(1.0, |w| w / b.dram_bytes.max(1.0));
        Some(b.memory_floor_ms? * share)
    });
    let cost = StepCost::of(step.ms, gpu_ms, floor_ms, compile_ms);
    if 100.0 * cost.unchanging_ms() / step.ms < rules::SMALL_BATCH.threshold {
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
    if cost.per_step_ms > 0.0 {
        figures.push(fig(Quantity::CompileMsPerStep, cost.per_step_ms));
    }
    if let (Some(b), Some(ms)) = (bytes, floor_ms) {
        figures.push(fig(Quantity::StepSampledDramMb, b.dram_bytes / 1e6));
        figures.push(fig(Quantity::StepDramFloorMs, ms));
        if let Some(w) = weights {
            figures.push(fig(Quantity::CensusWeightsMb, w / 1e6));
        }
    }
    // What the GPU's memory must hold then: the KV cache grows with the sequences.
    let kv = a
        .census
        .as_ref()
        .filter(|c| c.range == name && c.batch > 0.0);
    if let Some(kv_mb) = kv.and_then(|c| Some(c.kv_bytes? / 1e6 * to as f64 / c.batch)) {
        figures.push(fig(Quantity::KvMbThen, kv_mb));
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

#[cfg(test)]
mod tests {
    use super::super::levers::tests::{kind, levers};
    use crate::findings::{LeverKind, Quantity as Q};

    /// The committed transformers decode with stage2's marks (H100, batch 4, the GPU working
    /// 3.2% of a 26.46 ms step): the fixed part is the 25.60 ms the GPU waits, the 0.86 ms of
    /// GPU work grows, so 8 sequences a pass cost (25.60 + 2 x 0.86) / 8 = 3.415 ms a token
    /// against 26.46 / 4 = 6.615 ms now.
    #[test]
    fn a_decode_step_of_four_sequences_is_sized_at_eight() {
        let all = levers("examples/sample-run-hf-auto");
        let b = all
            .iter()
            .find(|f| matches!(kind(f), LeverKind::Batch { .. }))
            .unwrap();
        let want = LeverKind::Batch {
            batch: 4,
            forwards: 1,
            to: 8,
        };
        assert_eq!(kind(b), want);
        let (now, then) = (
            b.get(Q::TokenMsNow).unwrap(),
            b.get(Q::TokenMsThen).unwrap(),
        );
        let (fixed, growing) = (
            b.get(Q::FixedMsPerStep).unwrap(),
            b.get(Q::GrowingMsPerStep).unwrap(),
        );
        let step = b.get(Q::StepMs).unwrap();
        assert!((now - step / 4.0).abs() < 1e-9 && (fixed + growing - step).abs() < 1e-9);
        assert!((then - (fixed + 2.0 * growing) / 8.0).abs() < 1e-9);
        assert_eq!(b.text(Q::TokenMsNow), "6.615 ms");
        assert_eq!(b.text(Q::TokenMsThen), "3.415 ms");
        // No bytes were sampled: none are said to be fixed.
        assert_eq!(b.figure(Q::StepSampledDramMb), None);
    }

    /// No marks, no batch: the eager decode without stage2's hook, and the serving loop that
    /// forwards each request alone but marks no tokens (tests/data/batching-loop) cannot say
    /// how many sequences a pass runs. A prefill's marks (more than one new token) are not a
    /// decode step's.
    #[test]
    fn no_batch_lever_where_the_marks_cannot_tell() {
        for run in [
            "examples/sample-run-hf-eager",
            "tests/data/batching-loop",
            "examples/sample-run-hf-prefill",
            "examples/sample-run-hf-window",
        ] {
            let all = levers(run);
            assert!(
                all.iter()
                    .all(|f| !matches!(kind(f), LeverKind::Batch { .. })),
                "{run}"
            );
        }
    }
}
