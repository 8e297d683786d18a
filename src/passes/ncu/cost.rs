//! What the ncu pass costs: predicted before it runs, followed while it runs (from ncu's
//! `==PROF== Profiling ... - N passes` lines, one per kernel), measured after, and remembered
//! per workload and GPU so the next prediction starts from this run's figures.
//!
//! The model: the time before ncu profiles its first kernel (the workload starting under ncu,
//! ncu setting up its counters), then each kernel's replay passes at a cost per pass, then the
//! time after the last kernel (the rest of the workload unless the pass stops it early, and
//! writing the report).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Defaults before any run of this workload on this GPU was measured. From an H100 with ncu
/// 2025.3.1 and the workloads of `bench/run.sh gpu` (measured 2026-11-25): 5
/// passes per kernel for the reports' metrics (17 for the roofline set); 0.08 to 0.22 s per
/// replay pass with the workload's own progress between the chosen kernels (eager, static and
/// lead 0.09-0.10, moeworker 0.15, spec 0.22, compile 0.08); 0.2 to 0.5 s after the last
/// kernel when the pass stops the workload. Attached on an H200 (2026-11-26): 0.04 to 0.20 s
/// per pass; 0.09 s is the median of both sets.
const PRIOR_S_PER_PASS: f64 = 0.09;
const PRIOR_AFTER_STOPPED_S: f64 = 0.5;
/// The time before ncu's first kernel, without a capture start to go by: a share of the nsys
/// pass (which includes finalizing its report; 0.55 to 1.25 measured, median 0.7).
const PRIOR_BEFORE_PER_NSYS_S: f64 = 0.8;
/// With one: the workload reaches the range later under ncu than under nsys (ncu's injection
/// into every CUDA process), by this factor plus a fixed set-up. Measured (nsys capture start
/// -> ncu's first kernel, s): eager 11.8 -> 13.0, static 16.3 -> 18.8, lead 12.5 -> 17.4,
/// spec 16.3 -> 21.4, compile 17.8 -> 24.0.
const PRIOR_BEFORE_PER_CAPTURE: f64 = 1.25;
/// The same with the workload started beside the nsys pass and held at its first CUDA call
/// (`ncu.early_start`): the attach's first kernel came at 0.20 to 0.68 x the capture start,
/// median 0.31, in two runs of the nine bench variants on H100s with the copy's torch asking
/// NVML (2026-11-26, docs/measured.md: hand loop 0.20, eager, lead, large, MoE and the MoE
/// worker 0.26-0.34, static, compile and spec 0.48-0.68).
const PRIOR_BEFORE_PER_CAPTURE_HELD: f64 = 0.3;
const PRIOR_NCU_SETUP_S: f64 = 0.5;

/// What the nsys pass measured of the workload, the basis of a first prediction.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Basis {
    /// The whole profile step.
    pub(crate) pass_s: Option<f64>,
    /// When nsys's capture began and ended, from the launch of `nsys profile`.
    pub(crate) capture_start_s: Option<f64>,
    pub(crate) capture_end_s: Option<f64>,
    /// When ncu's range first began on the same clock (from the export; None: not read). It
    /// is the capture's start where nsys's range is ncu's, later where nsys captured more.
    pub(crate) range_start_s: Option<f64>,
    /// The ncu pass's workload was started beside the nsys pass and held at its first CUDA
    /// call (`ncu.early_start`): what came before is done when ncu attaches.
    pub(crate) held: bool,
}

impl Basis {
    /// When the nsys pass reached ncu's range: its first instance where the export was read
    /// for it, else the capture's start.
    pub(crate) fn range_reached_s(&self) -> Option<f64> {
        self.range_start_s.or(self.capture_start_s)
    }

    /// The time before ncu's first kernel, and the time after its last one when the workload
    /// runs to its end, with the words that say where they came from.
    fn prior(&self, stop_early: bool) -> (f64, f64, String) {
        let after_stopped = PRIOR_AFTER_STOPPED_S;
        let what = match self.range_start_s {
            Some(_) => "ncu's range",
            None => "its capture",
        };
        match (self.range_reached_s(), self.pass_s) {
            (Some(start), _) => {
                let (per, held) = match self.held {
                    true => (
                        PRIOR_BEFORE_PER_CAPTURE_HELD,
                        ", its workload already started and held at its first CUDA call",
                    ),
                    false => (PRIOR_BEFORE_PER_CAPTURE, ""),
                };
                let before = start * per + PRIOR_NCU_SETUP_S;
                let rest = self.capture_end_s.map_or(0.0, |e| (e - start).max(0.0));
                let after = match stop_early {
                    true => after_stopped,
                    false => rest * PRIOR_BEFORE_PER_CAPTURE + after_stopped,
                };
                let why = format!(
                    "defaults: {before:.0} s until the first kernel (the nsys pass reached {what} at {start:.0} s{held}; x{per} + {PRIOR_NCU_SETUP_S} s for ncu)"
                );
                (before, after, why)
            }
            (None, Some(s)) => {
                let after = match stop_early {
                    true => after_stopped,
                    false => s * 0.2 + after_stopped,
                };
                let why = format!(
                    "defaults: {:.0} s until the first kernel ({:.0}% of the nsys pass's {s:.0} s)",
                    s * PRIOR_BEFORE_PER_NSYS_S,
                    PRIOR_BEFORE_PER_NSYS_S * 100.0,
                );
                (s * PRIOR_BEFORE_PER_NSYS_S, after, why)
            }
            (None, None) => (
                0.0,
                after_stopped,
                "defaults (no nsys pass to time the workload)".to_string(),
            ),
        }
    }
}

fn prior_passes(set: Option<&str>) -> u32 {
    match set {
        None => 5,
        Some("roofline") => 17,
        Some("basic") => 8,
        _ => 40,
    }
}

/// The figures a prediction rests on, learned from one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Model {
    pub(crate) before_s: f64,
    pub(crate) s_per_pass: f64,
    pub(crate) passes: u32,
    pub(crate) after_s: f64,
    /// The run they were measured in.
    pub(crate) run: String,
    /// Measured attached to a workload held since the nsys pass (`ncu.early_start`): its time
    /// before the first kernel says nothing of a launch, nor a launch's of a held one.
    #[serde(default)]
    pub(crate) held: bool,
}

pub(crate) use crate::rundir::status::{NcuCostActual as Actual, NcuCostPlan as Plan};

/// Predict a pass of `kernels` kernels, from what was learned of this workload on this GPU or,
/// the first time, from what the nsys pass measured of it (`basis`).
pub(crate) fn plan(
    learned: Option<&Model>,
    kernels: usize,
    cached: usize,
    set: Option<&str>,
    basis: Basis,
    stop_early: bool,
) -> Plan {
    let (model, basis) = match learned.filter(|m| m.held == basis.held) {
        Some(m) => (m.clone(), format!("learned from run {}", m.run)),
        None => {
            let (before_s, after_s, why) = basis.prior(stop_early);
            let model = Model {
                before_s,
                s_per_pass: PRIOR_S_PER_PASS,
                passes: prior_passes(set),
                after_s,
                run: String::new(),
                held: basis.held,
            };
            let why = format!("{why}, {:.0} ms per replay pass", PRIOR_S_PER_PASS * 1e3);
            (model, why)
        }
    };
    let predicted_s = match kernels {
        0 => 0.0,
        n => model.before_s + n as f64 * f64::from(model.passes) * model.s_per_pass + model.after_s,
    };
    Plan {
        kernels,
        cached,
        passes_per_kernel: model.passes,
        predicted_s,
        basis,
        deferred: 0,
    }
}

/// How many of `kernels` a pass can profile within `budget` at the pace an earlier run of the
/// workload measured (`learned`, started the same way: `held`); None where all of them fit or
/// there is no measured pace or budget to go by. At least one: a pass that affords none is
/// still run, and stopped at its budget.
pub(crate) fn affordable(
    learned: Option<&Model>,
    held: bool,
    kernels: usize,
    budget: Option<Duration>,
) -> Option<usize> {
    let m = learned.filter(|m| m.held == held)?;
    let per_kernel = f64::from(m.passes) * m.s_per_pass;
    let room = budget?.as_secs_f64() - m.before_s - m.after_s;
    // A model read back from the cache that does not hold figures of a pass narrows nothing.
    if !(per_kernel > 0.0 && per_kernel.is_finite() && room.is_finite()) {
        return None;
    }
    let n = ((room / per_kernel).floor().max(1.0)) as usize;
    (n < kernels).then_some(n)
}

/// A prediction past the pass's time budget comes down to it: ncu is stopped there, then ends
/// the kernel it is profiling and writes its report (about 1.5 s on an H100, ncu-stop-probe).
pub(crate) fn within(mut plan: Plan, budget: Option<Duration>) -> Plan {
    const STOP_S: f64 = 1.5;
    if let Some(b) = budget.map(|b| b.as_secs_f64() + STOP_S) {
        if plan.predicted_s > b {
            plan.predicted_s = b;
            plan.basis = format!("{}; its time budget is shorter", plan.basis);
        }
    }
    plan
}

/// One instance measured whole (`ncu.graph_step`, one pass per workload): ncu reaches it about
/// when the kernel pass reached its first kernel, started the same way (`held`: its own copy
/// held since the kernel pass began, or launched by the step).
pub(crate) fn step_s(learned: Option<&Model>, basis: Basis, workloads: u64, held: bool) -> f64 {
    let basis = Basis { held, ..basis };
    let before = learned
        .filter(|m| m.held == held)
        .map_or_else(|| basis.prior(true).0, |m| m.before_s);
    before + workloads as f64 * PRIOR_S_PER_PASS + PRIOR_AFTER_STOPPED_S
}

/// One kernel profiled: when (since the pass started) and in how many passes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Done {
    pub(crate) at: Duration,
    pub(crate) passes: Option<u32>,
}

/// A `==PROF== Profiling "..." - 0: 0%....50%....100% - 16 passes` line: a kernel done, with
/// its pass count (None for any other line). A line ncu broke to say something else mid-kernel
/// ends as `50%....100% - 5 passes` on a line of its own (a stop: logs/ncu_attach_budget.log).
pub(crate) fn parse_done(line: &str) -> Option<Option<u32>> {
    let rest = line.trim_end();
    let progress = rest.starts_with("==PROF== Profiling")
        || rest.starts_with(|c: char| c.is_ascii_digit()) && rest.contains("%....");
    if !progress || !rest.contains("100%") {
        return None;
    }
    // "- 1 pass" when one replay was enough.
    let passes = rest
        .strip_suffix("passes")
        .or_else(|| rest.strip_suffix("pass"))
        .and_then(|r| r.trim_end().rsplit(' ').next())
        .and_then(|n| n.parse().ok());
    Some(passes)
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// The shortest pass whose time is compared with its prediction.
pub(crate) const MIN_COMPARED_S: f64 = 1.0;

/// Seconds per kernel: the median gap between kernels done (the first kernel carries ncu's
/// set-up, so it is not one of them).
pub(crate) fn per_kernel(done: &[Done]) -> Option<f64> {
    let gaps = done
        .windows(2)
        .map(|w| (w[1].at - w[0].at).as_secs_f64())
        .collect();
    median(gaps)
}

/// Seconds left after `done` of `total` kernels: the kernels left at the pace so far (the
/// plan's pace before two are done), then the time after the last one.
pub(crate) fn left_s(plan: &Plan, model_after_s: f64, done: &[Done], total: usize) -> f64 {
    let pace = per_kernel(done).unwrap_or(f64::from(plan.passes_per_kernel) * PRIOR_S_PER_PASS);
    total.saturating_sub(done.len()) as f64 * pace + model_after_s
}

/// The measured cost of a pass that took `total` and finished `done`, against its plan, and
/// the model it teaches (None when it profiled fewer than two kernels).
pub(crate) fn measure(
    plan: &Plan,
    done: &[Done],
    total: Duration,
    run: &str,
    held: bool,
) -> (Actual, Option<Model>) {
    let s = total.as_secs_f64();
    let pace = per_kernel(done);
    let passes = median(
        done.iter()
            .filter_map(|d| d.passes.map(f64::from))
            .collect(),
    )
    .map(|p| p as u32);
    let before = done
        .first()
        .map(|d| d.at.as_secs_f64() - pace.unwrap_or(0.0));
    let after = done.last().map(|d| s - d.at.as_secs_f64());
    let actual = Actual {
        kernels: done.len(),
        passes_per_kernel: passes,
        s,
        s_per_kernel: pace,
        before_first_s: before,
        after_last_s: after,
        // A pass shorter than a second (everything cached, a replay) says nothing about the
        // plan's seconds: no error is stated for it.
        prediction_error_pct: (s >= MIN_COMPARED_S && plan.kernels > 0)
            .then(|| 100.0 * (plan.predicted_s - s) / s),
    };
    let model = match (pace, passes, before, after) {
        (Some(pace), Some(p), Some(b), Some(a)) if p > 0 => Some(Model {
            before_s: b.max(0.0),
            s_per_pass: pace / f64::from(p),
            passes: p,
            after_s: a.max(0.0),
            run: run.to_string(),
            held,
        }),
        _ => None,
    };
    (actual, model)
}

/// Where the model of one workload on one GPU with one ncu setting is kept.
pub(crate) fn model_path(cache_dir: &Path, identity: &str) -> PathBuf {
    super::cache::keyed(cache_dir, "costs", identity, "json")
}

pub(crate) fn load(path: &Path) -> Option<Model> {
    let text = crate::files::read_capped(path, 1 << 20).ok()?;
    serde_json::from_str(&text).ok()
}

pub(crate) fn save(path: &Path, model: &Model) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_vec_pretty(model).map_err(std::io::Error::other)?;
    crate::rundir::status::write_atomic(path, &text)
}

#[cfg(test)]
mod tests {
    /// A budget the learned pace says the kernels overrun affords the ones that fit, never
    /// fewer than one; no narrowing without a learned pace of the same start, or a budget.
    #[test]
    fn a_budget_affords_the_kernels_the_learned_pace_fits() {
        let m = Model {
            before_s: 8.8,
            s_per_pass: 0.23,
            passes: 5,
            after_s: 0.5,
            run: "r".into(),
            held: true,
        };
        let b = |s| Some(Duration::from_secs(s));
        // 14 - 8.8 - 0.5 = 4.7 s at 1.15 s a kernel: 4 of 9.
        assert_eq!(affordable(Some(&m), true, 9, b(14)), Some(4));
        assert_eq!(affordable(Some(&m), true, 4, b(14)), None);
        assert_eq!(affordable(Some(&m), true, 9, b(5)), Some(1));
        assert_eq!(affordable(Some(&m), false, 9, b(14)), None);
        assert_eq!(affordable(None, true, 9, b(14)), None);
        assert_eq!(affordable(Some(&m), true, 9, None), None);
        let broken = Model {
            s_per_pass: 0.0,
            ..m.clone()
        };
        assert_eq!(affordable(Some(&broken), true, 9, b(14)), None);
    }

    use super::*;

    fn at(s: f64, p: u32) -> Done {
        Done {
            at: Duration::from_secs_f64(s),
            passes: Some(p),
        }
    }

    #[test]
    fn the_real_log_lines_are_kernels_done_with_their_passes() {
        let log = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/logs/ncu_stop_early.log"
        ))
        .unwrap();
        let done: Vec<Option<u32>> = log.lines().filter_map(parse_done).collect();
        assert_eq!(done.len(), 34);
        assert!(done.iter().all(|p| *p == Some(16)), "{done:?}");
        assert_eq!(parse_done("==PROF== Connected to process 722"), None);
        // One replay was enough: "1 pass".
        let one = "==PROF== Profiling \"k\" - 0: 0%....50%....100% - 1 pass";
        assert_eq!(parse_done(one), Some(Some(1)));
        // Stopped at its budget (an H100, `ncu.budget_s=6`): the second kernel's line was
        // broken by ncu's "Trying to shutdown" and still counts.
        let log = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/logs/ncu_attach_budget.log"
        ))
        .unwrap();
        let done: Vec<Option<u32>> = log.lines().filter_map(parse_done).collect();
        assert_eq!(done, vec![Some(5), Some(5)]);
    }

    /// A prediction past the budget comes down to it, with ncu's stop, and says why; one
    /// within it, or without a budget, is left alone.
    #[test]
    fn a_prediction_never_runs_past_the_time_budget() {
        let plan = |s: f64| Plan {
            kernels: 13,
            cached: 0,
            passes_per_kernel: 5,
            predicted_s: s,
            basis: "defaults".into(),
            deferred: 0,
        };
        let capped = within(plan(40.0), Some(Duration::from_secs(19)));
        assert_eq!(capped.predicted_s, 20.5);
        assert_eq!(capped.basis, "defaults; its time budget is shorter");
        assert_eq!(
            within(plan(12.0), Some(Duration::from_secs(19))),
            plan(12.0)
        );
        assert_eq!(within(plan(40.0), None), plan(40.0));
    }

    #[test]
    fn a_measured_pass_teaches_the_next_prediction() {
        let nsys = Basis {
            pass_s: Some(20.0),
            ..Basis::default()
        };
        let p = plan(None, 3, 2, None, nsys, true);
        assert_eq!((p.kernels, p.cached, p.passes_per_kernel), (3, 2, 5));
        let expected =
            20.0 * PRIOR_BEFORE_PER_NSYS_S + 3.0 * 5.0 * PRIOR_S_PER_PASS + PRIOR_AFTER_STOPPED_S;
        assert!((p.predicted_s - expected).abs() < 1e-9, "{}", p.predicted_s);
        assert!(p.basis.starts_with("defaults"));
        // Kernels done at 25, 25.6 and 26.2 s; the pass ended at 28 s.
        let done = [at(25.0, 16), at(25.6, 16), at(26.2, 16)];
        let (actual, model) = measure(&p, &done, Duration::from_secs(28), "r1", false);
        let model = model.unwrap();
        assert!((actual.s_per_kernel.unwrap() - 0.6).abs() < 1e-9);
        assert!((model.before_s - 24.4).abs() < 1e-9);
        assert!((model.after_s - 1.8).abs() < 1e-9);
        let again = plan(Some(&model), 3, 0, None, nsys, true);
        assert!(
            (again.predicted_s - 28.0).abs() < 1e-9,
            "{}",
            again.predicted_s
        );
        assert_eq!(again.basis, "learned from run r1");
        assert_eq!(
            plan(Some(&model), 0, 5, None, Basis::default(), true).predicted_s,
            0.0
        );
        assert!((left_s(&again, 1.8, &done[..2], 3) - 2.4).abs() < 1e-9);
    }

    #[test]
    fn the_capture_start_is_the_first_prediction_s_basis() {
        let nsys = Basis {
            pass_s: Some(30.0),
            capture_start_s: Some(10.0),
            capture_end_s: Some(14.0),
            range_start_s: None,
            held: false,
        };
        let stopped = plan(None, 2, 0, None, nsys, true);
        let before = 10.0 * PRIOR_BEFORE_PER_CAPTURE + PRIOR_NCU_SETUP_S;
        let replay = 2.0 * 5.0 * PRIOR_S_PER_PASS;
        assert!((stopped.predicted_s - (before + replay + PRIOR_AFTER_STOPPED_S)).abs() < 1e-9);
        assert!(
            stopped.basis.contains("capture at 10 s"),
            "{}",
            stopped.basis
        );
        // Run to its end, the workload's 4 s after the capture start come after the kernels.
        let to_end = plan(None, 2, 0, None, nsys, false);
        let after = 4.0 * PRIOR_BEFORE_PER_CAPTURE + PRIOR_AFTER_STOPPED_S;
        assert!((to_end.predicted_s - (before + replay + after)).abs() < 1e-9);
        // Where ncu's range begins later than the capture (nsys captured the whole run), the
        // prior goes by the range: 12 s in, 2 s before the capture's end.
        let whole = Basis {
            capture_start_s: Some(0.5),
            range_start_s: Some(12.0),
            ..nsys
        };
        let p = plan(None, 2, 0, None, whole, false);
        let before = 12.0 * PRIOR_BEFORE_PER_CAPTURE + PRIOR_NCU_SETUP_S;
        let after = 2.0 * PRIOR_BEFORE_PER_CAPTURE + PRIOR_AFTER_STOPPED_S;
        assert!((p.predicted_s - (before + replay + after)).abs() < 1e-9);
        assert!(
            p.basis.contains("reached ncu's range at 12 s"),
            "{}",
            p.basis
        );
    }

    #[test]
    fn a_model_round_trips_through_its_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = model_path(tmp.path(), "gpu|ncu|workload");
        assert_eq!(load(&path), None);
        let m = Model {
            before_s: 1.0,
            s_per_pass: 0.04,
            passes: 16,
            after_s: 2.0,
            run: "r".into(),
            held: true,
        };
        save(&path, &m).unwrap();
        assert_eq!(load(&path), Some(m));
    }

    #[test]
    fn a_model_learned_attached_predicts_only_attached_passes_and_held_graph_steps() {
        let held = Model {
            before_s: 4.0,
            s_per_pass: 0.1,
            passes: 5,
            after_s: 0.5,
            run: "early".into(),
            held: true,
        };
        let basis = Basis {
            pass_s: Some(30.0),
            capture_start_s: Some(20.0),
            capture_end_s: Some(22.0),
            range_start_s: None,
            held: true,
        };
        let attached = plan(Some(&held), 2, 0, None, basis, true);
        assert_eq!(attached.basis, "learned from run early");
        // The next run launches the workload itself: the launch's prior, not the held 4 s.
        let launched = Basis {
            held: false,
            ..basis
        };
        let own = plan(Some(&held), 2, 0, None, launched, true);
        assert!(own.basis.starts_with("defaults"), "{}", own.basis);
        let before = 20.0 * PRIOR_BEFORE_PER_CAPTURE + PRIOR_NCU_SETUP_S;
        let rest = PRIOR_S_PER_PASS + PRIOR_AFTER_STOPPED_S;
        assert!((step_s(Some(&held), basis, 1, false) - (before + rest)).abs() < 1e-9);
        // A step with its own held copy uses the held model.
        assert!((step_s(Some(&held), basis, 1, true) - (4.0 + rest)).abs() < 1e-9);
        // A model file written before the field existed reads as launched.
        let old: Model = serde_json::from_str(
            r#"{"before_s":1.0,"s_per_pass":0.1,"passes":5,"after_s":0.5,"run":"r"}"#,
        )
        .unwrap();
        assert!(!old.held);
    }
}
