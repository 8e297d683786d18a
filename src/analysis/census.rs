//! What a pass must read by the model's own numbers: its weights once (the input embedding
//! table left out: a lookup reads rows of it) and each sequence's KV cache so far, as stage2's
//! hook writes them into each pass's tokens mark (`stage2:tokens batch=B new=N past=P
//! weights=W kv=K ...`). Set beside the DRAM bytes the nsys pass's samples measured for the
//! same steps, it tells whether a step reads what the model needs, or more.

use serde::Serialize;

use super::nesting::{Cursor, Nesting};
use crate::parse::sqlite::NvtxRange;

/// One pass's mark: its tokens and the model's figures.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Pass {
    batch: f64,
    new: f64,
    past: Option<f64>,
    weights: f64,
    kv_per_token: Option<f64>,
    window: Option<f64>,
    /// Experts per layer, experts per token, and the expert weights (bytes, part of `weights`).
    experts: Option<(f64, f64, f64)>,
}

fn parse(text: &str) -> Option<Pass> {
    // Its tokens as every reader of the mark takes them; the model's figures after them.
    let (batch, new) = super::batching::parse(text)?;
    let mut p = Pass {
        batch: batch as f64,
        new: new as f64,
        ..Pass::default()
    };
    let (mut weights, mut count, mut top_k, mut expert) = (None, None, None, None);
    for kv in text.strip_prefix("stage2:tokens ")?.split_whitespace() {
        let (k, v) = kv.split_once('=')?;
        let v: f64 = v
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)?;
        match k {
            "past" => p.past = Some(v),
            "weights" => weights = Some(v),
            "kv" => p.kv_per_token = Some(v),
            "window" => p.window = Some(v),
            "experts" => count = Some(v),
            "top_k" => top_k = Some(v),
            "expert_weights" => expert = Some(v),
            _ => {}
        }
    }
    p.weights = weights?;
    p.experts = match (count, top_k, expert) {
        (Some(e), Some(k), Some(x)) if e > 0.0 && k > 0.0 && x <= p.weights => Some((e, k, x)),
        _ => None,
    };
    (p.batch > 0.0 && p.new > 0.0).then_some(p)
}

impl Pass {
    /// KV-cache bytes the pass reads: each sequence's tokens so far and its new ones (capped by
    /// a sliding window); None where the cache's length or layout is not known.
    fn kv_read(&self) -> Option<f64> {
        let seen = self.past? + self.new;
        let seen = self.window.map_or(seen, |w| seen.min(w));
        Some(self.batch * seen * self.kv_per_token?)
    }

    /// Expert weights the pass reads: at least one token's experts in every layer, at most
    /// all of them; expected, were tokens routed uniformly, 1 - (1 - k/E)^tokens of them.
    fn experts_read(&self) -> Option<(f64, f64, f64)> {
        let (e, k, bytes) = self.experts?;
        let share = (k / e).min(1.0);
        let expected = 1.0 - (1.0 - share).powf(self.batch * self.new);
        Some((bytes * share, bytes * expected, bytes))
    }
}

/// The median pass of one range, as the model's own figures put it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Census {
    pub(crate) range: String,
    /// Passes with the model's figures (one per instance of a phase range).
    pub(crate) passes: usize,
    pub(crate) batch: f64,
    /// Median tokens per sequence in the KV cache before the pass (None: not known).
    pub(crate) past: Option<f64>,
    /// Bytes: the weights outside expert layers, the KV cache read (None: not known), the
    /// expert weights read (expected under uniform routing, and its bounds), and their sum.
    pub(crate) dense_bytes: f64,
    pub(crate) kv_bytes: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) experts: Option<ExpertBytes>,
    pub(crate) read_bytes: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct ExpertBytes {
    pub(crate) least: f64,
    pub(crate) expected: f64,
    pub(crate) most: f64,
}

/// The census of range `name`: the median over the passes whose mark's innermost enclosing
/// range is an instance of it; None where no mark there carries the model's figures.
pub(crate) fn of(ranges: &[NvtxRange], marks: &[(i64, i64, String)], name: &str) -> Option<Census> {
    let nest = Nesting::new(ranges);
    let mut cursor = Cursor::default();
    let mut passes = Vec::new();
    for (t, tid, text) in marks {
        let Some(p) = parse(text) else { continue };
        let inner = nest.holding_mark(&mut cursor, ranges, *tid, *t);
        if inner.is_some_and(|i| &*ranges[i].name == name) {
            passes.push(p);
        }
    }
    if passes.is_empty() {
        return None;
    }
    let median =
        |f: &dyn Fn(&Pass) -> f64| super::ranges::Spread::of(passes.iter().map(f).collect()).median;
    let known = |f: &dyn Fn(&Pass) -> Option<f64>| match passes.iter().all(|p| f(p).is_some()) {
        true => Some(median(&|p| f(p).unwrap_or(0.0))),
        false => None,
    };
    let expert = |i: usize| known(&|p| p.experts_read().map(|x| [x.0, x.1, x.2][i]));
    let experts = match (expert(0), expert(1), expert(2)) {
        (Some(least), Some(expected), Some(most)) => Some(ExpertBytes {
            least,
            expected,
            most,
        }),
        _ => None,
    };
    let dense = median(&|p| p.weights - p.experts.map_or(0.0, |x| x.2));
    let kv = known(&|p| p.kv_read());
    Some(Census {
        range: name.to_string(),
        passes: passes.len(),
        batch: median(&|p| p.batch),
        past: known(&|p| p.past),
        dense_bytes: dense,
        kv_bytes: kv,
        experts,
        read_bytes: dense + kv.unwrap_or(0.0) + experts.map_or(0.0, |x| x.expected),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::push_pop as r;

    #[test]
    fn a_decode_step_reads_its_weights_and_each_sequences_cache() {
        let ranges = [
            r("prefill", 0, 100),
            r("decode", 200, 210),
            r("decode", 300, 310),
        ];
        let m = |t, text: &str| (t, 1, text.to_string());
        let marks = [
            m(1, "stage2:tokens batch=2 new=100 past=0 weights=1000 kv=10"),
            m(
                201,
                "stage2:tokens batch=2 new=1 past=100 weights=1000 kv=10",
            ),
            m(
                301,
                "stage2:tokens batch=2 new=1 past=101 weights=1000 kv=10",
            ),
        ];
        let c = of(&ranges, &marks, "decode").unwrap();
        assert_eq!(c.passes, 2);
        // 2 sequences x (100 + 1, then 101 + 1) tokens x 10 bytes: the median of the two steps.
        assert_eq!(c.kv_bytes, Some(2.0 * 101.5 * 10.0));
        assert_eq!(c.read_bytes, 1000.0 + 2030.0);
        // A window caps the cache read; a mark without the cache's length leaves it unknown.
        let w = [m(
            201,
            "stage2:tokens batch=1 new=1 past=500 weights=1000 kv=10 window=64",
        )];
        assert_eq!(of(&ranges, &w, "decode").unwrap().kv_bytes, Some(640.0));
        let u = [m(201, "stage2:tokens batch=1 new=1 weights=1000 kv=10")];
        let u = of(&ranges, &u, "decode").unwrap();
        assert_eq!((u.kv_bytes, u.read_bytes), (None, 1000.0));
        // Marks of the hook before it wrote the model's figures: no census.
        assert_eq!(
            of(&ranges, &[m(201, "stage2:tokens batch=1 new=1")], "decode"),
            None
        );
    }

    #[test]
    fn expert_weights_read_are_bounded_by_one_tokens_experts_and_all() {
        let ranges = [r("decode", 0, 10)];
        let marks = [(
            1,
            1,
            "stage2:tokens batch=4 new=1 past=10 weights=9000 experts=8 top_k=2 expert_weights=8000"
                .to_string(),
        )];
        let c = of(&ranges, &marks, "decode").unwrap();
        let x = c.experts.unwrap();
        assert_eq!((x.least, x.most), (2000.0, 8000.0));
        // 4 tokens, each in 2 of 8 experts: 1 - 0.75^4 of them expected.
        assert!((x.expected - 8000.0 * (1.0 - 0.75f64.powi(4))).abs() < 1e-9);
        assert_eq!(c.dense_bytes, 1000.0);
        assert_eq!(c.read_bytes, 1000.0 + x.expected);
    }
}
