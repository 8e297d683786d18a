//! Sampled figures reused from an earlier run of the same command (`nsys.gpu_metrics.reuse`):
//! that run's figures per launch configuration, kept in the run folder as
//! `nsys/gpu_metrics_reused.json`, laid over this run's launches. Sampling at 50 kHz and its
//! export are most of what a re-run costs over the traced run; a configuration's figures are
//! rates (% of peak over its launches' time), so they carry over while the kernel does the same
//! work, which its mean duration checks (`rules::SAMPLED_REUSE`). Per-instance figures need
//! this run's samples and are not given.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{Acc, KernelAcc, Sampled, SampledLaunch};
use crate::model::{SampledFigures, SampledKernel};
use crate::rules::SAMPLED_REUSE;

/// The run folder's copy of the figures reused.
pub(crate) const FILE: &str = "nsys/gpu_metrics_reused.json";

/// One sampled run's figures per launch configuration: what a later run reuses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Stored {
    /// The run that sampled them.
    pub(crate) run: String,
    /// Its GPU (figures are % of this GPU's peaks).
    pub(crate) gpu: Option<String>,
    pub(crate) frequency_hz: f64,
    pub(crate) configs: Vec<StoredConfig>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredConfig {
    pub(crate) kernel: String,
    pub(crate) grid: String,
    pub(crate) block: String,
    #[serde(flatten)]
    pub(crate) figures: SampledFigures,
}

impl Stored {
    /// Every launch configuration of `kernels` (name, sampled figures) this run sampled.
    pub(crate) fn of<'a>(
        run: &str,
        gpu: Option<&str>,
        frequency_hz: f64,
        kernels: impl Iterator<Item = (&'a str, &'a SampledKernel)>,
    ) -> Stored {
        let configs = kernels
            .flat_map(|(name, s)| {
                s.configs.iter().map(move |c| StoredConfig {
                    kernel: name.to_string(),
                    grid: c.grid.clone(),
                    block: c.block.clone(),
                    figures: c.figures,
                })
            })
            .collect();
        Stored {
            run: run.to_string(),
            gpu: gpu.map(str::to_string),
            frequency_hz,
            configs,
        }
    }
}

impl Stored {
    /// Figures a sampled run could have stored: a positive frequency of at most 1 GHz (a
    /// window of at least 1 ns), and each configuration's time, coverage and shares of peak
    /// in range. A file edited by hand or broken is refused naming the figure, not served as
    /// "500.0% covered" or "-50000 Hz".
    pub(crate) fn check(&self) -> Result<(), String> {
        let f = self.frequency_hz;
        if !(f.is_finite() && f > 0.0 && f <= 1e9) {
            return Err(format!(
                "frequency_hz = {}: a sampling frequency is above 0 and at most 1 GHz",
                crate::parse::number(f)
            ));
        }
        for c in &self.configs {
            c.figures.check().map_err(|why| {
                format!(
                    "kernel {} {} {}: {why}",
                    crate::files::shown(&c.kernel),
                    c.grid,
                    c.block
                )
            })?;
        }
        Ok(())
    }
}

/// What reusing left out: configurations and their kernel time in this run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub(crate) struct Gap {
    pub(crate) configs: usize,
    pub(crate) time_ns: f64,
}

/// Where reused figures came from, and what they did not cover.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Reused {
    pub(crate) run: String,
    pub(crate) source: String,
    /// This run's configurations the sampled run did not see.
    pub(crate) unseen: Gap,
    /// Those whose mean duration moved beyond the rule's band since.
    pub(crate) moved: Gap,
    pub(crate) rule: crate::rules::Rule,
}

impl Reused {
    /// The share of `total_ns` of kernel time left without figures, in %.
    pub(crate) fn gap_pct(&self, total_ns: f64) -> f64 {
        match total_ns > 0.0 {
            true => 100.0 * (self.unseen.time_ns + self.moved.time_ns) / total_ns,
            false => 0.0,
        }
    }

    /// Whether the next run should sample again: what took no figures holds enough of the
    /// kernel time (`rules::SAMPLED_REUSE_GAP_PCT`).
    pub(crate) fn resample(&self, total_ns: f64) -> bool {
        let gap = self.unseen.configs + self.moved.configs > 0;
        gap && self.gap_pct(total_ns) >= crate::rules::SAMPLED_REUSE_GAP_PCT
    }
}

/// One configuration's launches in this run.
#[derive(Default)]
struct Tally {
    launches: u64,
    time_ns: f64,
}

/// Lay `stored` over this run's `launches`: each configuration the sampled run saw, with a
/// mean duration within the band, takes its figures over this run's launches and time.
pub(crate) fn attribute(launches: &[SampledLaunch], stored: &Stored, source: &str) -> Sampled {
    let mut tallies: HashMap<(&str, &str, &str), Tally> = HashMap::new();
    for l in launches {
        let t = tallies.entry((&*l.name, &*l.grid, &*l.block)).or_default();
        t.launches += 1;
        t.time_ns += (l.end - l.start).max(0) as f64;
    }
    let known: HashMap<(&str, &str, &str), &SampledFigures> = stored
        .configs
        .iter()
        .map(|c| ((&*c.kernel, &*c.grid, &*c.block), &c.figures))
        .collect();
    let mut reused = Reused {
        run: stored.run.clone(),
        source: source.to_string(),
        unseen: Gap::default(),
        moved: Gap::default(),
        rule: SAMPLED_REUSE,
    };
    let mut kernels: HashMap<String, KernelAcc> = HashMap::new();
    let mut whole = Acc::default();
    // The sampled run's window: this run's launches are held against it as they would have
    // been had this run sampled at that rate.
    let window_ns = (1e9 / stored.frequency_hz).round() as i64;
    for (key @ (name, grid, block), t) in tallies {
        let acc = match known.get(&key) {
            None => {
                reused.unseen.configs += 1;
                reused.unseen.time_ns += t.time_ns;
                Acc::unsampled(&t)
            }
            Some(f) if !within_band(f, &t) => {
                reused.moved.configs += 1;
                reused.moved.time_ns += t.time_ns;
                Acc::unsampled(&t)
            }
            Some(f) => Acc::reused(f, &t, window_ns),
        };
        whole.merge(&acc);
        let k = kernels.entry(name.to_string()).or_default();
        k.all.merge(&acc);
        k.configs.insert((grid.to_string(), block.to_string()), acc);
    }
    Sampled {
        frequency_hz: stored.frequency_hz,
        whole: Some(whole.figures()),
        kernels,
        reused: Some(reused),
        ..Sampled::default()
    }
}

/// This run's mean launch duration within the rule's band of the sampled run's.
fn within_band(f: &SampledFigures, t: &Tally) -> bool {
    if f.launches == 0 || t.launches == 0 || f.time_ns <= 0.0 {
        return false;
    }
    let then = f.time_ns / f.launches as f64;
    let now = t.time_ns / t.launches as f64;
    (100.0 * (now - then).abs() / then) <= SAMPLED_REUSE.threshold
}

impl Acc {
    /// Launches with no figures: their time is uncovered.
    fn unsampled(t: &Tally) -> Acc {
        Acc {
            launches: t.launches,
            time_ns: t.time_ns,
            ..Acc::default()
        }
    }

    /// This run's launches at `f`'s rates and coverage, read in windows of `window_ns`: the
    /// means and coverage of `figures()` are `f`'s, the launches and time this run's, so sums
    /// over kernels weigh by this run.
    fn reused(f: &SampledFigures, t: &Tally, window_ns: i64) -> Acc {
        let share = f.coverage_pct / 100.0;
        let covered = t.time_ns * share;
        let mut acc = Acc {
            launches: t.launches,
            time_ns: t.time_ns,
            covered_ns: covered,
            windows: match f.time_ns > 0.0 {
                true => (f.samples as f64 * t.time_ns / f.time_ns).round() as u64,
                false => 0,
            },
            window_ns,
            ..Acc::default()
        };
        for (k, v) in [f.dram_pct, f.sm_issue_pct, f.tensor_pct]
            .into_iter()
            .enumerate()
        {
            if let Some(v) = v {
                acc.sums[k] = v * covered;
                acc.seen[k] = covered;
            }
        }
        acc
    }
}
