//! `--fail-above`: the changes over a threshold, split into regressions (outside the runs'
//! noise) and inconclusive ones (the noise could explain them).

use super::*;

/// What `--fail-above` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scope {
    /// Total kernel time of the run.
    Total,
    /// Any single kernel's total time; a kernel in one run only counts its whole share.
    Kernels,
    /// Any NVTX range's wall time.
    Ranges,
}

/// The gate's findings: changes above the threshold outside the noise (regressions), and
/// changes above it that the noise could explain (inconclusive).
#[derive(Debug, Default)]
pub(crate) struct Gate {
    pub(crate) regressions: Vec<String>,
    pub(crate) inconclusive: Vec<String>,
}

pub(crate) fn gate(d: &Diff, scope: Scope, threshold: f64) -> Gate {
    let mut g = Gate::default();
    let mut check = |what: String, change: Option<f64>, test: Option<Test>| {
        let Some(p) = change.filter(|p| *p > threshold) else {
            return;
        };
        match test {
            Some(t) if !t.significant => g.inconclusive.push(format!(
                "{what} {p:+.1}% (within the noise: +-{:.1}% at {})",
                t.half_width, CONFIDENCE
            )),
            _ => g.regressions.push(format!("{what} {p:+.1}%")),
        }
    };
    let rel = |t: Option<Test>, base: f64| {
        t.map(|t| Test {
            half_width: if base > 0.0 {
                100.0 * t.half_width / base
            } else {
                0.0
            },
            ..t
        })
    };
    match scope {
        Scope::Total => check(
            "total kernel time".into(),
            d.total_delta_pct,
            rel(d.total_test, d.total_kernel_time_a_ns),
        ),
        Scope::Kernels => {
            for k in &d.kernels {
                let what = match k.presence {
                    Presence::New => format!("new kernel {} (share of B)", k.label),
                    _ => k.label.clone(),
                };
                let base = if k.presence == Presence::Both {
                    k.time_a_ns
                } else {
                    k.time_b_ns
                };
                let test = rel(k.test, base).map(|t| match k.presence {
                    // A new kernel's change is its share: the interval in share points.
                    Presence::New => Test {
                        half_width: t.half_width * k.share_b_pct.unwrap_or(0.0) / 100.0,
                        ..t
                    },
                    _ => t,
                });
                check(what, k.change_pct, test);
            }
        }
        Scope::Ranges => {
            for r in &d.ranges {
                check(
                    format!("range {}", r.name),
                    r.wall_delta_pct,
                    rel(r.test, r.wall_a_ns),
                );
            }
        }
    }
    g
}
