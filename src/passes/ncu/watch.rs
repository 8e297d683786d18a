//! While ncu runs: its output followed (kernels done, with their times, for the progress line
//! and the cost), and the pass's bound (launches over every launch configuration, or a time
//! budget), which stops ncu as a Ctrl-C would once it is reached.

use super::{cost, NcuPlan, STOPPED_EARLY};
use crate::config::{Budget, Ncu};
use crate::passes::process;
use crate::passes::progress::Progress;
use crate::rundir::status::{NcuBudget, PassState, PassStatus};

/// When a pass is stopped, keeping what ncu measured (ncu, attached or launching the workload,
/// writes what it profiled on SIGINT and exits 0: measured on an H100, 2026-11-26). Over every
/// launch configuration ncu cannot know which launch is a kernel's last configuration, so
/// without a bound the workload runs to its end under ncu (an MoE's routed experts bring new
/// grids all along); any other pass gets a time budget so that no first run waits on a workload
/// whose kernels replay slowly.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bound {
    /// Over every configuration, launches profiled: the configurations the nsys export holds
    /// (one process only: ending one rank of several would leave the others waiting), else
    /// `ncu.shapes_max_launches`. None: ncu's own `--launch-count` ends the pass.
    pub(crate) launches: Option<usize>,
    /// Whether `launches` is the export's count of configurations (else the bound).
    pub(crate) all_known: bool,
    pub(crate) budget: Option<std::time::Duration>,
    /// Where the budget comes from, as the reports say it.
    pub(crate) budget_from: String,
}

/// `ncu.budget_s=auto`: this share of the nsys pass's length. The passes then take at most
/// 1.8x the nsys pass, which ran 1.0-1.4x the bare workload on H100s; with the export and the
/// report a first run stays under 2.5x its bare run (at 1.0x, speculative decoding, whose kernels
/// replay slowest, took 2.27x and 2.57x on two H100s: docs/measured.md).
pub(crate) const AUTO_BUDGET_SHARE: f64 = 0.8;
/// The least budget `auto` gives: a short workload's attach still reaches its kernels (ncu's
/// first kernel came 2.3-11 s into an attached pass on an H100).
pub(crate) const AUTO_BUDGET_MIN_S: f64 = 10.0;

impl Bound {
    pub(crate) fn new(cfg: &Ncu, known: Option<usize>, multi: bool) -> Bound {
        let max = cfg.shapes_max_launches.max(1);
        let known = known.filter(|&k| !multi && k > 0 && k <= max);
        Bound {
            launches: Some(known.unwrap_or(max)),
            all_known: known.is_some(),
            budget: cfg.shapes_budget_s.map(std::time::Duration::from_secs),
            budget_from: "ncu.shapes_budget_s".into(),
        }
    }

    /// `ncu.budget_s` of a pass that profiles each chosen kernel's first launch: `auto` is
    /// AUTO_BUDGET_SHARE of the nsys pass's length (`pass_s`, at least AUTO_BUDGET_MIN_S), plus
    /// its time to ncu's range when ncu starts the workload again (`restart_s`: None when the
    /// workload is held, already past its start-up).
    /// Under a launcher (`multi`) `auto` sets no bound: stopping the profiled rank's ncu as a
    /// Ctrl-C would reaches the launcher and every rank, which was not measured on a GPU.
    pub(crate) fn time(
        cfg: &Ncu,
        pass_s: Option<f64>,
        restart_s: Option<f64>,
        multi: bool,
    ) -> Option<Bound> {
        let (s, from) = match cfg.budget_s? {
            Budget::Seconds(n) => (n as f64, "ncu.budget_s".to_string()),
            Budget::Auto if multi => return None,
            Budget::Auto => {
                let nsys = pass_s?;
                let share = nsys * AUTO_BUDGET_SHARE;
                let s = share.max(AUTO_BUDGET_MIN_S) + restart_s.unwrap_or(0.0);
                let least = match share < AUTO_BUDGET_MIN_S {
                    true => format!(", at least {AUTO_BUDGET_MIN_S:.0} s,"),
                    false => String::new(),
                };
                let restart = restart_s
                    .map(|r| {
                        format!(" plus its {r:.1} s to ncu's range (ncu starts the workload again)")
                    })
                    .unwrap_or_default();
                (
                    s,
                    format!("ncu.budget_s=auto: {AUTO_BUDGET_SHARE} x the nsys pass's {nsys:.1} s{least}{restart}"),
                )
            }
        };
        Some(Bound {
            launches: None,
            all_known: false,
            // A number of seconds too large for a Duration is no bound, never a panic.
            budget: std::time::Duration::try_from_secs_f64(s.ceil()).ok(),
            budget_from: from,
        })
    }

    /// How the pass that ran under this bound ended (`profiled`: kernels ncu said it did).
    pub(crate) fn stop(&self, out: &process::Outcome, report: bool, profiled: usize) -> Stop {
        let ours = out.soft_stopped && !out.interrupted && !out.timed_out;
        let budget = self.budget.map(|s| NcuBudget {
            s: s.as_secs_f64(),
            from: self.budget_from.clone(),
            reached: ours && out.duration >= s,
        });
        Stop {
            bounded: (ours && report).then(|| self.reason(profiled, out.duration)),
            budget,
            report,
        }
    }

    /// Why the pass stopped, from what it profiled and how long it ran.
    pub(crate) fn reason(&self, profiled: usize, ran: std::time::Duration) -> String {
        let reached = self.launches.is_some_and(|n| profiled >= n);
        let why = match (reached, self.all_known, self.budget) {
            (true, true, _) => format!(
                "one launch of each of the {} launch configurations the nsys export holds for the chosen kernels was measured",
                self.launches.unwrap_or(profiled)
            ),
            (true, false, _) => format!(
                "it reached its bound of {} launches (ncu.shapes_max_launches)",
                self.launches.unwrap_or(profiled)
            ),
            (false, _, Some(b)) if ran >= b => format!(
                "it reached its time budget of {} s ({})",
                b.as_secs(),
                self.budget_from
            ),
            _ => "it reached its bound".to_string(),
        };
        format!("ncu measured {profiled} launches and was stopped: {why}; what it measured is kept")
    }
}

/// How the pass's bound ended it: why ncu was stopped (None: it was not stopped at its
/// bound) and the time budget it ran under.
#[derive(Debug, Default)]
pub(crate) struct Stop {
    pub(crate) bounded: Option<String>,
    pub(crate) budget: Option<NcuBudget>,
    /// Whether ncu wrote a report before it stopped.
    report: bool,
}

impl Stop {
    /// The pass's status where its bound decided it: ok with the reason where ncu was stopped
    /// and wrote what it measured; no-data where the budget came before any kernel.
    /// `graph_launches`: the CUDA graph launches of the nsys capture, asked only then.
    pub(crate) fn status(&self, graph_launches: impl FnOnce() -> usize) -> Option<PassStatus> {
        if let Some(why) = &self.bounded {
            tracing::info!("{why}");
            return Some(PassStatus::new(PassState::Ok, Some(why.clone())));
        }
        let b = self.budget.as_ref().filter(|b| b.reached && !self.report)?;
        // Seen on a real run: a JAX workload whose kernels all ran in CUDA graphs, given
        // `ncu.budget_s=null`, ran 80 s under ncu without a kernel and then crashed.
        let then = match graph_launches() {
            0 => "ncu.budget_s=SECONDS (or null) gives it longer".to_string(),
            n => format!(
                "the nsys capture launched CUDA graphs ({n} graph launches), whose kernels this pass profiles one graph node at a time (ncu's `--graph-profiling node`) once a graph launches in the range under ncu, so a longer budget is no promise of reaching them; ncu.graph_step measures an instance of a range that launches graphs whole (`--graph-profiling graph`)"
            ),
        };
        Some(PassStatus::new(
            PassState::NoData,
            Some(format!(
                "ncu reached its time budget of {:.0} s ({}) before it profiled a kernel (the workload had not reached a chosen kernel in the range under ncu, or the range never came): {then}",
                b.s, b.from
            )),
        ))
    }
}

/// The CUDA graph launches the nsys export at `sqlite` holds (0 where it cannot be read).
pub(super) fn graph_launches(sqlite: &std::path::Path) -> usize {
    crate::parse::sqlite::NsysDb::open(sqlite)
        .and_then(|db| db.graph_launches())
        .map_or(0, |g| g.len())
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
        let (stop_at, flag) = (plan.bound.as_ref().and_then(|b| b.launches), stop.clone());
        let budget = plan.bound.as_ref().and_then(|b| b.budget);
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
                // Never past the time budget, where ncu is stopped.
                let budget_left = budget.map(|b| b.saturating_sub(t0.elapsed()).as_secs_f64());
                let left = cost
                    .as_ref()
                    .zip(total)
                    .map(|(c, n)| cost::left_s(c, 1.0, &d, n))
                    .map(|l| budget_left.map_or(l, |b| l.min(b)));
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
