//! How many sequences each step of the captured range runs per forward pass, from the tokens
//! marks (`stage2:tokens batch=B new=N`) inside its instances at any depth, and what a step
//! would cost with more sequences per pass: the figures the small-batch lever is sized from.
//!
//! The cost model, stated where the lever is phrased too: a step is a fixed part (the time
//! the GPU waits for the host, and reading the DRAM bytes of a step at the ceiling bandwidth:
//! at small batches mostly the weights, read once a step whatever the batch) and a growing
//! part (the rest of the GPU's work, taken to grow in proportion to the sequences). Compiling
//! in the step stays once a step however its passes are merged.

use serde::Serialize;

use crate::parse::sqlite::NvtxRange;

/// The forward passes of the captured range's steps, by their tokens marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Forwards {
    /// Sequences per forward pass: the largest `batch=` of the marks.
    pub(crate) batch: u64,
    /// Forward passes per step: the median count of marks per instance holding any.
    pub(crate) per_step: u64,
    /// Instances holding marks.
    pub(crate) steps: u64,
    /// Every mark is of one new token per sequence: the passes are decode passes.
    pub(crate) decode: bool,
}

/// `batch=B new=N` -> (B, N).
pub(crate) fn parse(text: &str) -> Option<(u64, u64)> {
    let mut b = None;
    let mut n = None;
    for kv in text.strip_prefix("stage2:tokens ")?.split_whitespace() {
        match kv.split_once('=')? {
            ("batch", v) => b = v.parse().ok(),
            ("new", v) => n = v.parse().ok(),
            _ => {}
        }
    }
    Some((b?, n?))
}

/// The forward passes of `captured`'s instances: each instance counts the marks inside it (on
/// its thread for a push/pop range); None where no instance holds one. `marks` are sorted by
/// time, as the export reads them.
pub(crate) fn of(
    ranges: &[NvtxRange],
    marks: &[(i64, i64, String)],
    captured: &str,
) -> Option<Forwards> {
    let parsed: Vec<(i64, i64, u64, u64)> = marks
        .iter()
        .filter_map(|(t, tid, text)| parse(text).map(|(b, n)| (*t, *tid, b, n)))
        .collect();
    let (mut counts, mut batch, mut decode) = (Vec::new(), 0, true);
    for r in ranges.iter().filter(|r| &*r.name == captured) {
        let first = parsed.partition_point(|m| m.0 < r.start);
        let inside: Vec<_> = parsed[first..]
            .iter()
            .take_while(|m| m.0 <= r.end)
            .filter(|m| !r.push_pop || m.1 == r.tid)
            .collect();
        if inside.is_empty() {
            continue;
        }
        counts.push(inside.len() as u64);
        for m in inside {
            batch = batch.max(m.2);
            decode &= m.3 == 1;
        }
    }
    if counts.is_empty() {
        return None;
    }
    counts.sort_unstable();
    Some(Forwards {
        batch,
        per_step: counts[counts.len() / 2],
        steps: counts.len() as u64,
        decode,
    })
}

/// A step's cost split by what grows with the sequences, in ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct StepCost {
    /// The whole step now.
    pub(crate) step_ms: f64,
    /// What stays once a step whatever its passes: the GPU code it compiles.
    pub(crate) per_step_ms: f64,
    /// What stays per forward pass whatever its sequences: the rest of the host work the GPU
    /// waits for, and reading the step's bytes at the ceiling.
    pub(crate) fixed_ms: f64,
    /// The rest of the GPU's work, taken to grow in proportion to the sequences.
    pub(crate) growing_ms: f64,
}

impl StepCost {
    /// The split of a step of `step_ms` whose GPU works `gpu_ms` of it, `bytes_ms` of which is
    /// reading the step's bytes at the ceiling (None: not sampled, all of it grows), and whose
    /// host spends `compile_ms` of the time the GPU waits compiling.
    pub(crate) fn of(
        step_ms: f64,
        gpu_ms: f64,
        bytes_ms: Option<f64>,
        compile_ms: f64,
    ) -> StepCost {
        let gpu_ms = gpu_ms.clamp(0.0, step_ms);
        let bytes_ms = bytes_ms.unwrap_or(0.0).clamp(0.0, gpu_ms);
        let per_step_ms = compile_ms.clamp(0.0, step_ms - gpu_ms);
        StepCost {
            step_ms,
            per_step_ms,
            fixed_ms: step_ms - gpu_ms - per_step_ms + bytes_ms,
            growing_ms: gpu_ms - bytes_ms,
        }
    }

    /// The part of the step that does not grow with the sequences.
    pub(crate) fn unchanging_ms(&self) -> f64 {
        self.per_step_ms + self.fixed_ms
    }

    /// The time per token now, of a step of `forwards` passes of `batch` sequences each; and
    /// with one pass of `to` sequences: the compiling once, the fixed part of one pass, the
    /// growing part scaled from the step's `forwards * batch` sequences to `to`.
    pub(crate) fn per_token(&self, forwards: u64, batch: u64, to: u64) -> (f64, f64) {
        let rows = (forwards * batch).max(1) as f64;
        let then = self.per_step_ms
            + self.fixed_ms / forwards.max(1) as f64
            + self.growing_ms * to as f64 / rows;
        (self.step_ms / rows, then / to.max(1) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::push_pop;

    fn m(t: i64, tid: i64, text: &str) -> (i64, i64, String) {
        (t, tid, text.to_string())
    }

    /// A serving step that forwards each of its requests alone: three passes of one sequence
    /// in the step, counted at any depth; a mark on another thread or between steps is not.
    #[test]
    fn a_steps_passes_are_its_marks_at_any_depth() {
        let ranges = [
            push_pop("step", 0, 100),
            push_pop("decode", 10, 20),
            push_pop("step", 200, 300),
        ];
        let marks = [
            m(11, 1, "stage2:tokens batch=1 new=1"),
            m(31, 1, "stage2:tokens batch=1 new=1"),
            m(41, 9, "stage2:tokens batch=1 new=1"),
            m(51, 1, "stage2:tokens batch=1 new=1"),
            m(150, 1, "stage2:tokens batch=1 new=1"),
            m(210, 1, "stage2:tokens batch=1 new=1"),
            m(220, 1, "stage2:tokens batch=1 new=1"),
            m(230, 1, "stage2:tokens batch=1 new=1"),
        ];
        let f = of(&ranges, &marks, "step").unwrap();
        assert_eq!((f.batch, f.per_step, f.steps, f.decode), (1, 3, 2, true));
        assert_eq!(of(&ranges, &marks, "prefill"), None);
        let prefill = [m(11, 1, "stage2:tokens batch=4 new=128")];
        assert!(!of(&ranges, &prefill, "step").unwrap().decode);
    }

    /// The bench's check (bench/runs/2026-11-28-h200-levers.md): eager qwen2 at batch 1, a
    /// 10.56 ms step with the GPU working 7.3% of it, measured 12.98 ms at batch 8 (1.62 ms a
    /// token). With nothing sampled all of the GPU's work grows: 9.79 + 8 x 0.77 ms over 8.
    #[test]
    fn the_step_at_more_sequences_keeps_its_fixed_part() {
        let c = StepCost::of(10.56, 10.56 * 0.073, None, 0.0);
        assert!((c.fixed_ms - 9.789).abs() < 1e-3, "{c:?}");
        let (now, then) = c.per_token(1, 1, 8);
        assert_eq!(now, 10.56);
        assert!((then - (9.789 + 8.0 * 0.771) / 8.0).abs() < 1e-3, "{then}");
        // The step's bytes at the ceiling are fixed too, never more than the GPU's work.
        let c = StepCost::of(10.56, 0.771, Some(5.0), 0.0);
        assert_eq!((c.fixed_ms, c.growing_ms), (10.56, 0.0));
        // Three passes of one sequence made one pass of three: one pass's fixed part.
        let c = StepCost::of(3.0, 0.3, None, 0.0);
        let (now, then) = c.per_token(3, 1, 3);
        assert!((now - 1.0).abs() < 1e-12 && (then - (0.9 + 0.3) / 3.0).abs() < 1e-12);
        // Compiling in the step stays once a step, not once a pass.
        let c = StepCost::of(3.0, 0.3, None, 1.5);
        assert_eq!((c.per_step_ms, c.unchanging_ms()), (1.5, 2.7));
        let (_, then) = c.per_token(3, 1, 3);
        assert!(
            (then - (1.5 + 1.2 / 3.0 + 0.3) / 3.0).abs() < 1e-12,
            "{then}"
        );
    }
}
