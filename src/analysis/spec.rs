//! Speculative decoding: how many draft tokens the target accepted, and what a step of drafting
//! and verifying costs against plain decode. stage2's hook marks each verify step of an
//! assisted `generate()` with `stage2:spec proposed=K accepted=A` (the candidate tokens the
//! draft proposed, and how many of them the target kept), and names the passes `draft` (the
//! assistant's generate() call), `verify` (the target's pass over the candidates) and `decode`
//! (the target's pass over one token); the figures are over the whole capture.

use serde::Serialize;

use super::ranges::RangeStats;

/// The NVTX mark of one verify step, as stage2's hook writes it.
pub(crate) const MARK: &str = "stage2:spec ";

/// The ranges the figures read, as the hook names them.
pub(crate) const DRAFT: &str = "draft";
pub(crate) const VERIFY: &str = "verify";
pub(crate) const DECODE: &str = "decode";

/// Wall and kernel time of one range name, summed over its instances.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub(crate) struct Time {
    pub(crate) instances: u64,
    pub(crate) wall_ns: i64,
    pub(crate) kernel_ns: i64,
}

/// The speculative decoding a capture holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Speculation {
    /// Verify steps (marks), draft tokens proposed and accepted over them (all 0: the export
    /// has the draft's and verify passes' ranges but no mark, as before the hook wrote them).
    pub(crate) steps: u64,
    pub(crate) proposed: u64,
    pub(crate) accepted: u64,
    /// The draft's and the verify passes' time (None: the export has no such range).
    pub(crate) draft: Option<Time>,
    pub(crate) verify: Option<Time>,
    /// The median wall time of the target's plain decode step (None: no `decode` range), and
    /// how many such steps it is the median of.
    pub(crate) decode_median_ns: Option<f64>,
    pub(crate) decode_steps: u64,
}

impl Speculation {
    /// Accepted over proposed, in %.
    pub(crate) fn acceptance_pct(&self) -> Option<f64> {
        (self.proposed > 0).then(|| 100.0 * self.accepted as f64 / self.proposed as f64)
    }

    /// Tokens the verify steps yield: their accepted draft tokens and the target's own next
    /// one each (None without marks).
    pub(crate) fn tokens(&self) -> Option<u64> {
        (self.steps > 0).then_some(self.accepted + self.steps)
    }

    /// The draft's and the verify passes' wall time per token they yield, in ms.
    pub(crate) fn ms_per_token(&self) -> Option<f64> {
        let (d, v, tokens) = (self.draft?, self.verify?, self.tokens()?);
        Some((d.wall_ns + v.wall_ns) as f64 / 1e6 / tokens as f64)
    }

    /// The draft's share of the draft's and verify passes' time: (wall, kernel), in %.
    pub(crate) fn draft_share_pct(&self) -> Option<(f64, Option<f64>)> {
        let (d, v) = (self.draft?, self.verify?);
        let share = |a: i64, b: i64| (a + b > 0).then(|| 100.0 * a as f64 / (a + b) as f64);
        Some((
            share(d.wall_ns, v.wall_ns)?,
            share(d.kernel_ns, v.kernel_ns),
        ))
    }
}

/// `proposed=K accepted=A` -> (K, A); None for another text or A above K.
fn parse(text: &str) -> Option<(u64, u64)> {
    let (mut k, mut a) = (None, None);
    for kv in text.strip_prefix(MARK)?.split_whitespace() {
        match kv.split_once('=')? {
            ("proposed", v) => k = v.parse().ok(),
            ("accepted", v) => a = v.parse().ok(),
            _ => {}
        }
    }
    let (k, a) = (k?, a?);
    (a <= k).then_some((k, a))
}

/// The speculation of a capture from its marks (time, thread, text) and its ranges' figures;
/// None without a well-formed mark and without both the draft's and the verify passes' ranges.
pub(crate) fn of(marks: &[(i64, i64, String)], stats: &[RangeStats]) -> Option<Speculation> {
    let steps: Vec<(u64, u64)> = marks.iter().filter_map(|(_, _, t)| parse(t)).collect();
    let time = |name: &str| {
        stats
            .iter()
            .filter(|s| s.name == name && s.instances > 0)
            .fold(None, |t: Option<Time>, s| {
                let t = t.unwrap_or_default();
                Some(Time {
                    instances: t.instances + s.instances,
                    wall_ns: t.wall_ns + s.wall_ns,
                    kernel_ns: t.kernel_ns + s.kernel_ns,
                })
            })
    };
    let (draft, verify) = (time(DRAFT), time(VERIFY));
    if steps.is_empty() && (draft.is_none() || verify.is_none()) {
        return None;
    }
    let decode = stats.iter().find(|s| s.name == DECODE && s.instances > 0);
    Some(Speculation {
        steps: steps.len() as u64,
        proposed: steps.iter().map(|s| s.0).sum(),
        accepted: steps.iter().map(|s| s.1).sum(),
        draft,
        verify,
        decode_median_ns: decode.map(|s| s.wall_spread.median),
        decode_steps: decode.map_or(0, |s| s.instances),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(name: &str, instances: u64, wall_ns: i64, kernel_ns: i64) -> RangeStats {
        RangeStats {
            name: name.into(),
            instances,
            wall_ns,
            kernel_ns,
            wall_spread: crate::analysis::ranges::Spread {
                min: 0.0,
                median: wall_ns as f64 / instances.max(1) as f64,
                max: 0.0,
            },
            ..Default::default()
        }
    }

    #[test]
    fn acceptance_and_cost_from_the_marks_and_ranges() {
        let m = |t: &str| (0, 1, t.to_string());
        let marks = [
            m("stage2:spec proposed=5 accepted=3"),
            m("stage2:spec proposed=5 accepted=1"),
            m("stage2:spec proposed=2 accepted=3"), // more accepted than proposed: not read
            m("stage2:spec accepted=1"),
        ];
        let stats = [
            st("draft", 2, 6_000_000, 1_000_000),
            st("verify", 2, 14_000_000, 3_000_000),
            st("decode", 1, 10_000_000, 2_000_000),
        ];
        let s = of(&marks, &stats).unwrap();
        assert_eq!((s.steps, s.proposed, s.accepted), (2, 10, 4));
        assert_eq!(s.acceptance_pct(), Some(40.0));
        assert_eq!(s.tokens(), Some(6));
        // (6 + 14) ms over 6 tokens, against a 10 ms decode step.
        assert!((s.ms_per_token().unwrap() - 20.0 / 6.0).abs() < 1e-9);
        assert_eq!(s.decode_median_ns, Some(10_000_000.0));
        let (wall, kernel) = s.draft_share_pct().unwrap();
        assert!((wall - 30.0).abs() < 1e-9 && (kernel.unwrap() - 25.0).abs() < 1e-9);
        // No mark (a capture from before the hook wrote them): the two models' shares alone.
        let s = of(&[m("stage2:tokens batch=1 new=1")], &stats).unwrap();
        assert_eq!(
            (s.steps, s.acceptance_pct(), s.ms_per_token()),
            (0, None, None)
        );
        assert!(s.draft_share_pct().is_some());
        assert!(of(&[], &stats[2..]).is_none());
    }
}
