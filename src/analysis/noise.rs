//! Is a change bigger than the noise? Welch's two-sample t-test on the per-pass values of two
//! runs (`run.repeat`), two-sided, 95% confidence: the change is real when the 95% confidence
//! interval of the difference of the means excludes zero. Welch-Satterthwaite degrees of
//! freedom are rounded down to the critical-value table below (which only widens the interval).

use serde::Serialize;

use super::repeats::Stats;

/// Confidence of the test, as stated in the reports.
pub(crate) const CONFIDENCE: &str = "95%";

/// Student's t, two-sided 95% (0.975 quantile), by degrees of freedom.
const T_975: &[(f64, f64)] = &[
    (1.0, 12.706),
    (2.0, 4.303),
    (3.0, 3.182),
    (4.0, 2.776),
    (5.0, 2.571),
    (6.0, 2.447),
    (7.0, 2.365),
    (8.0, 2.306),
    (9.0, 2.262),
    (10.0, 2.228),
    (11.0, 2.201),
    (12.0, 2.179),
    (13.0, 2.160),
    (14.0, 2.145),
    (15.0, 2.131),
    (16.0, 2.120),
    (17.0, 2.110),
    (18.0, 2.101),
    (19.0, 2.093),
    (20.0, 2.086),
    (21.0, 2.080),
    (22.0, 2.074),
    (23.0, 2.069),
    (24.0, 2.064),
    (25.0, 2.060),
    (26.0, 2.056),
    (27.0, 2.052),
    (28.0, 2.048),
    (29.0, 2.045),
    (30.0, 2.042),
    (40.0, 2.021),
    (60.0, 2.000),
    (120.0, 1.980),
];

fn t_critical(df: f64) -> f64 {
    T_975
        .iter()
        .rev()
        .find(|(d, _)| *d <= df)
        .map(|(_, t)| *t)
        // Below one degree of freedom: the widest interval of the table.
        .unwrap_or(T_975[0].1)
}

/// The outcome of the test for one figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Test {
    /// Half-width of the 95% interval of `mean_b - mean_a`, in the figure's unit.
    pub(crate) half_width: f64,
    /// The interval excludes zero.
    pub(crate) significant: bool,
}

/// Welch's test of `b` against `a`; None unless both sides have at least two passes.
pub(crate) fn welch(a: &Stats, b: &Stats) -> Option<Test> {
    let (na, nb) = (a.values.len() as f64, b.values.len() as f64);
    if na < 2.0 || nb < 2.0 {
        return None;
    }
    let (va, vb) = (a.stddev.powi(2) / na, b.stddev.powi(2) / nb);
    let diff = b.mean - a.mean;
    let se2 = va + vb;
    if se2 <= 0.0 {
        // No spread on either side: any difference is outside the noise.
        return Some(Test {
            half_width: 0.0,
            significant: diff != 0.0,
        });
    }
    let df = se2.powi(2) / (va.powi(2) / (na - 1.0) + vb.powi(2) / (nb - 1.0));
    let half_width = t_critical(df) * se2.sqrt();
    Some(Test {
        half_width,
        significant: diff.abs() > half_width,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[f64]) -> Stats {
        Stats::of(v.to_vec())
    }

    #[test]
    fn a_shift_well_above_the_spread_is_significant() {
        let t = welch(&s(&[100.0, 101.0, 99.0]), &s(&[110.0, 111.0, 109.0])).unwrap();
        assert!(t.significant);
        // sd 1 each, se = sqrt(2/3), df = 4: 2.776 * 0.8165.
        assert!((t.half_width - 2.2666).abs() < 1e-3, "{t:?}");
    }

    #[test]
    fn a_shift_inside_the_spread_is_not() {
        let t = welch(&s(&[100.0, 120.0, 90.0]), &s(&[110.0, 95.0, 125.0])).unwrap();
        assert!(!t.significant);
    }

    #[test]
    fn single_passes_give_no_test_and_equal_constants_no_change() {
        assert!(welch(&s(&[1.0]), &s(&[2.0, 3.0])).is_none());
        assert!(!welch(&s(&[5.0, 5.0]), &s(&[5.0, 5.0])).unwrap().significant);
        assert!(welch(&s(&[5.0, 5.0]), &s(&[6.0, 6.0])).unwrap().significant);
    }

    #[test]
    fn critical_values_round_degrees_of_freedom_down() {
        assert_eq!(t_critical(4.9), 2.776);
        assert_eq!(t_critical(45.0), 2.021);
        assert_eq!(t_critical(1e6), 1.980);
        assert_eq!(t_critical(0.5), 12.706);
    }
}
