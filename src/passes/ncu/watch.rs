//! While ncu runs: its output followed (kernels done, with their times, for the progress line
//! and the cost), and the bound of a pass over every launch configuration, which stops ncu
//! as a Ctrl-C would once it is reached.

use super::{cost, NcuPlan, STOPPED_EARLY};
use crate::config::Ncu;
use crate::passes::process;
use crate::passes::progress::Progress;

/// When a pass that measures every launch configuration is stopped, keeping what ncu measured:
/// ncu cannot know which launch is a kernel's last configuration, so without a bound the
/// workload runs to its end under ncu (an MoE's routed experts bring new grids all along).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bound {
    /// Launches profiled: the configurations the nsys export holds (one process only: ending
    /// one rank of several would leave the others waiting), else `ncu.shapes_max_launches`.
    pub(crate) launches: usize,
    /// Whether `launches` is the export's count of configurations (else the bound).
    pub(crate) all_known: bool,
    pub(crate) budget: Option<std::time::Duration>,
}

impl Bound {
    pub(crate) fn new(cfg: &Ncu, known: Option<usize>, multi: bool) -> Bound {
        let max = cfg.shapes_max_launches.max(1);
        let known = known.filter(|&k| !multi && k > 0 && k <= max);
        Bound {
            launches: known.unwrap_or(max),
            all_known: known.is_some(),
            budget: cfg.shapes_budget_s.map(std::time::Duration::from_secs),
        }
    }

    /// Why the pass stopped, from what it profiled and how long it ran.
    pub(crate) fn reason(&self, profiled: usize, ran: std::time::Duration) -> String {
        let why = match (profiled >= self.launches, self.all_known, self.budget) {
            (true, true, _) => format!(
                "one launch of each of the {} launch configurations the nsys export holds for the chosen kernels was measured",
                self.launches
            ),
            (true, false, _) => format!(
                "it reached its bound of {} launches (ncu.shapes_max_launches)",
                self.launches
            ),
            (false, _, Some(b)) if ran >= b => format!(
                "it reached its time budget of {} s (ncu.shapes_budget_s)",
                b.as_secs()
            ),
            _ => "it reached its bound".to_string(),
        };
        format!("ncu measured {profiled} launches and was stopped: {why}; what it measured is kept")
    }
}

/// Follows ncu's output while it runs: kernels done (with their times, for the cost) on the
/// progress line.
pub(super) struct Watch {
    done: std::sync::Arc<std::sync::Mutex<Vec<cost::Done>>>,
    pub(super) hook: process::LineHook,
    /// Set once the pass's bound of launches is profiled (see [`Bound`]).
    pub(super) stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Watch {
    pub(super) fn new(progress: &Progress, plan: &NcuPlan) -> Watch {
        let done = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (sink, handle) = (done.clone(), progress.handle());
        let total = plan.cost.as_ref().map(|c| c.kernels);
        let cost = plan.cost.clone();
        let t0 = std::time::Instant::now();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (stop_at, flag) = (plan.bound.as_ref().map(|b| b.launches), stop.clone());
        let hook = process::LineHook(std::sync::Arc::new(move |line: &str| {
            if line.starts_with("==PROF== Connected") {
                handle.stage("profiling");
            } else if line.starts_with(STOPPED_EARLY) || line.starts_with("==PROF== Disconnected") {
                handle.stage("writing the report");
            } else if let Some(passes) = cost::parse_done(line) {
                let mut d = sink.lock().unwrap_or_else(|p| p.into_inner());
                d.push(cost::Done {
                    at: t0.elapsed(),
                    passes,
                });
                let k = d.len();
                if stop_at.is_some_and(|n| k >= n) {
                    flag.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                let left = cost
                    .as_ref()
                    .zip(total)
                    .map(|(c, n)| cost::left_s(c, 1.0, &d, n));
                handle.update(|s| {
                    s.stage = "profiling".into();
                    s.count = Some((k, total.map(|n| n.max(k))));
                    s.left_s = left;
                });
            }
        }));
        Watch { done, hook, stop }
    }

    pub(super) fn done(&self) -> Vec<cost::Done> {
        self.done.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
