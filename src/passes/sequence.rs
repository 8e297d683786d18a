//! The passes a profile runs, in order: each a line of [`SEQUENCE`]. A step reads the driver
//! (status.json so far) and what start-up found (tools, the metric check), then runs its pass
//! through the driver's loop or records why it has nothing to do. A new pass is a file with a
//! [`Pass`](super::driver::Pass) and a line here.

use std::path::PathBuf;

use super::driver::Driver;
use super::ncu::{query, NcuPass};
use super::nsys::NsysPass;
use super::provenance::Env;
use super::tools::Found;
use super::Ctx;
use crate::config::Config;
use crate::error::Error;
use crate::rundir::status::{PassState, PassStatus, Status};

/// What start-up found that the passes need.
pub(crate) struct Setup<'a> {
    pub(crate) nsys: Option<PathBuf>,
    pub(crate) ncu: Option<Found>,
    pub(crate) env: &'a Env,
    /// The check of ncu's metric names, when it is still under way or still to ask.
    pub(crate) check: Option<Check>,
    /// The reports' metrics this GPU knows, when known before the passes.
    pub(crate) known: Option<Vec<String>>,
    /// Set when the ncu pass already ran beside the nsys pass (`ncu.second_gpu`).
    pub(crate) ncu_done: bool,
    /// The ncu pass's workload, started beside the nsys pass and held (`ncu.early_start`).
    pub(crate) early: Option<super::ncu::early::Held>,
    /// The run whose kernels the metrics cache is expected to answer (no early start).
    pub(crate) warm: Option<String>,
    /// The GPU-metrics set made for this run's nsys passes (see `nsys::metric_set`).
    pub(crate) metric_set: Option<super::nsys::metric_set::Derived>,
}

/// A pass's step: its name in status.json, whether this run has it (it is `pending` until it
/// runs), and how it runs.
pub(crate) struct Step {
    pub(crate) name: &'static str,
    pub(crate) wanted: fn(&Config) -> bool,
    pub(crate) run: fn(&mut Driver, &mut Setup) -> Result<(), Error>,
}

/// Every pass, in the order a profile runs them.
pub(crate) const SEQUENCE: &[Step] = &[
    Step {
        name: "nsys",
        wanted: |_| true,
        run: nsys,
    },
    Step {
        name: "nsys_repeat",
        wanted: |_| false,
        run: |d, s| repeat_nsys(d, &s.nsys, s.metric_set.clone()),
    },
    Step {
        name: "ncu",
        wanted: |_| true,
        run: ncu,
    },
    Step {
        name: "packages",
        wanted: |_| true,
        run: |d, _| d.drive(&super::packages::PackagesPass),
    },
    Step {
        name: "baseline",
        wanted: |c| c.run.baseline,
        run: baseline,
    },
    Step {
        name: "nvidia",
        wanted: |c| c.run.crosscheck,
        run: |d, s| match d.ctx.cfg.run.crosscheck {
            true => d.drive(&super::crosscheck::CrosscheckPass {
                nsys: s.nsys.clone(),
                ncu: s.ncu.as_ref().map(|t| t.path.clone()),
                dry_run: d.dry_run,
            }),
            false => Ok(()),
        },
    },
];

/// Run every step; an error that stops the run is returned (the driver has recorded it).
pub(crate) fn run(driver: &mut Driver, setup: &mut Setup) -> Result<(), Error> {
    for step in SEQUENCE.iter().filter(|s| (s.wanted)(driver.ctx.cfg)) {
        driver
            .status
            .set(step.name, PassStatus::new(PassState::Pending, None));
    }
    driver.save();
    for step in SEQUENCE {
        (step.run)(driver, setup)?;
    }
    Ok(())
}

/// The nsys pass; with `ncu.second_gpu`, the ncu pass beside it on the other GPU.
fn nsys(driver: &mut Driver, s: &mut Setup) -> Result<(), Error> {
    let ctx = driver.ctx;
    let Some(gpus) = second_gpu((ctx.cfg, &ctx.scope.ncu), s.env, ctx.workload) else {
        let profiled = ask_once_profiled(&mut s.check);
        (s.early, s.warm) = hold_early(driver, s);
        let gpu = workload_gpu_name(s.env, ctx.cfg);
        let reuse = super::nsys::reuse::usable(ctx.cfg, gpu);
        if let Some(r) = &reuse {
            tracing::info!("nsys pass: not sampling GPU metrics: the sampled figures of this command's last sampled run ({}) are reused (nsys.gpu_metrics.reuse)", r.run);
        }
        match (ctx.cfg.sampling_off(), ctx.cfg.ncu.enable) {
            (Some(why), true) => tracing::info!("nsys pass: not sampling GPU metrics: {why}"),
            // Neither tool then classes a kernel: said before the run, not found after it.
            (Some(why), false) => tracing::warn!(
                "nsys pass: not sampling GPU metrics: {why}; with the ncu pass off, no kernel gets a bound class"
            ),
            (None, _) => {}
        }
        let metric_set = match (&reuse, &s.nsys, driver.dry_run) {
            (None, Some(nsys), false) if wants_metric_set(ctx.cfg) => {
                let gpus: Vec<String> = s.env.gpus.iter().map(|g| g.name.clone()).collect();
                let cache = super::nsys::metric_set::answer_cache(ctx.cfg, nsys, &gpus);
                super::nsys::metric_set::for_run(nsys, &ctx.run.path, cache.as_deref())
            }
            _ => None,
        };
        let every = super::nsys::samples_every_gpu(ctx.cfg, || s.env.gpus.len());
        if let (None, Some(every)) = (&reuse, every) {
            let keep = super::nsys::keep_to_one(ctx.cfg);
            tracing::info!("nsys pass: samples all {every} GPUs the workload can see (cuda-visible), each adding its rows to the export: {keep}");
        }
        s.metric_set = metric_set.clone();
        let ran = driver.drive(&NsysPass {
            tool: s.nsys.clone(),
            profiled,
            reuse,
            metric_set,
        });
        if let Some(held) = &s.early {
            early_notes(&mut driver.status, held.busy_until_s(), held.running());
            driver.save();
        }
        return ran;
    };
    // ncu starts now, so the names it will be given are checked first.
    let (known, refused) = checked(s.check.take(), s.known.take());
    let index = gpus.ncu.parse().unwrap_or(0);
    let on = |gpu: &str| super::workload::Workload {
        env: super::beside::pinned(&ctx.workload.env, gpu),
        ..ctx.workload.clone()
    };
    let (nsys_w, ncu_w) = (on(&gpus.nsys), on(&gpus.ncu));
    let (nsys_ctx, ncu_ctx) = (ctx.with_workload(&nsys_w), ctx.with_workload(&ncu_w));
    s.ncu_done = true;
    driver.drive_pair(
        (
            &NsysPass {
                tool: s.nsys.clone(),
                profiled: None,
                reuse: None,
                metric_set: None,
            },
            &nsys_ctx,
        ),
        (
            &NcuPass {
                device: cache_device(s.env, index, s.ncu.as_ref()),
                tool: s.ncu.as_ref().map(|t| t.path.clone()),
                refused,
                nsys: s.nsys.clone(),
                known_metrics: known,
                second_gpu: Some(gpus),
                early: std::sync::Mutex::new(None),
                warm: None,
            },
            &ncu_ctx,
        ),
    )
}

/// The ncu pass, after the nsys pass (and its repeats); not when it already ran beside it.
fn ncu(driver: &mut Driver, s: &mut Setup) -> Result<(), Error> {
    if s.ncu_done {
        return Ok(());
    }
    let (known, refused) = checked(s.check.take(), s.known.take());
    let cfg = driver.ctx.cfg;
    driver.drive(&NcuPass {
        device: cache_device(s.env, workload_gpu(cfg), s.ncu.as_ref()),
        tool: s.ncu.as_ref().map(|t| t.path.clone()),
        refused: refused.or_else(|| workload_failed(&driver.status)),
        nsys: s.nsys.clone(),
        known_metrics: known,
        second_gpu: None,
        early: std::sync::Mutex::new(s.early.take()),
        warm: s.warm.clone(),
    })
}

/// Whether this run samples with nsys's default set, which [`super::nsys::metric_set`] cuts
/// to the metrics read.
fn wants_metric_set(cfg: &Config) -> bool {
    cfg.nsys.enable
        && super::nsys::sampled_devices(cfg).is_some()
        && super::nsys::configured_set(&cfg.nsys.gpu_metrics).is_none()
}

/// Start the ncu pass's workload now, held by ncu at its first CUDA call, when this run can
/// (`ncu.early_start`, one process, both tools, a real run); not when the last run of this
/// workload said the metrics cache holds every kernel it chose (the copy would go unused):
/// that run's id instead.
fn hold_early(driver: &Driver, s: &Setup) -> (Option<super::ncu::early::Held>, Option<String>) {
    let ctx = driver.ctx;
    let able = !driver.dry_run && s.nsys.is_some() && super::ncu::early::wanted(ctx.cfg);
    let Some(ncu) = s.ncu.as_ref().filter(|_| able) else {
        return (None, None);
    };
    let warm = super::ncu::warm::path(ctx.cfg).and_then(|p| super::ncu::warm::expected(&p));
    if let Some(run) = warm {
        tracing::info!("ncu pass: not started early: the metrics cache held every kernel of this workload's last run ({run})");
        return (None, Some(run));
    }
    let port = super::ncu::early::free_ports();
    if port.is_none() {
        tracing::warn!("ncu pass: no block of free ports for the held workload; ncu's default ports are used (another run's held workload there could be attached instead)");
    }
    let args = super::ncu::early::launch_args(&ctx.workload.argv, port);
    let log = super::ncu::early::log(&ctx.run.path.join("ncu"));
    let spec = ctx.spec(&ncu.path, args, log);
    tracing::info!("ncu pass: its workload starts now, held by ncu at its first CUDA call until the kernels are chosen (ncu.early_start)");
    (Some(super::ncu::early::Held::start(spec, port)), None)
}

/// What the held workload meant for the nsys pass: CPU work of its start-up during the
/// capture, and the hint where the workload failed while its copy still ran (it may not run
/// twice at once; a copy that ended by itself failed on its own, so the hint is not given).
fn early_notes(status: &mut Status, held_at: f64, copy_running: bool) {
    let Some(nsys) = status.passes.get_mut("nsys") else {
        return;
    };
    let timing = nsys.nsys.as_ref().and_then(|r| r.timing.as_ref());
    let began = timing.and_then(|t| t.capture_start_s);
    let ended = timing.and_then(|t| t.capture_end_s);
    if let (Some(began), Some(ended)) = (began, ended) {
        let overlap = held_at.min(ended) - began;
        if overlap > 0.05 {
            nsys.warnings.push(format!(
                "the ncu pass's copy of the workload was still starting (CPU work) for {overlap:.1} s of the {:.1} s capture (ncu.early_start): the capture's CPU-side times may include that; ncu.early_start=false runs the passes one after the other",
                ended - began
            ));
        }
    }
    if nsys.state == PassState::Failed && copy_running {
        nsys.warnings.push("the ncu pass's copy of the workload was starting beside this one (ncu.early_start): a workload that cannot run twice at once (a port, a lock, a file both write) fails so; ncu.early_start=false runs the passes one after the other".to_string());
    }
}

/// The workload once more without a profiler (`run.baseline`).
fn baseline(driver: &mut Driver, _: &mut Setup) -> Result<(), Error> {
    if !driver.ctx.cfg.run.baseline {
        return Ok(());
    }
    let workload_failed = workload_failed(&driver.status).is_some();
    driver.drive(&super::baseline::BaselinePass { workload_failed })
}

/// The metric check with an nsys pass first: running beside it, or (when nsys samples the
/// GPU's counters) what to ask once its profile has ended.
pub(crate) enum Check {
    Beside(std::thread::JoinHandle<Result<Option<Vec<String>>, Error>>),
    After(query::Source, Vec<String>),
}

/// A check to ask after the nsys pass starts now, on a thread that waits until `nsys
/// profile` has ended (or the pass is over, whatever happened to it): the query then runs
/// beside the pass's export and stats instead of after them. The sender goes to the pass.
fn ask_once_profiled(check: &mut Option<Check>) -> Option<std::sync::mpsc::Sender<()>> {
    if !matches!(check, Some(Check::After(..))) {
        return None;
    }
    let Some(Check::After(source, metrics)) = check.take() else {
        return None;
    };
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    *check = Some(Check::Beside(std::thread::spawn(move || {
        // Err: the pass ended without telling (it failed or was skipped); ask all the same.
        let _ = rx.recv();
        query::decide(source.ask_and_keep().as_deref(), &metrics)
    })));
    Some(tx)
}

/// The metric check's answer: the reports' metrics this GPU knows (or what was known before),
/// and the error that refuses the ncu pass.
fn checked(
    check: Option<Check>,
    known: Option<Vec<String>>,
) -> (Option<Vec<String>>, Option<Error>) {
    let answer = check.map(|c| match c {
        Check::Beside(h) => h.join().unwrap_or(Ok(None)),
        Check::After(source, metrics) => query::decide(source.ask_and_keep().as_deref(), &metrics),
    });
    match answer {
        Some(Ok(k)) => (k, None),
        Some(Err(e)) => (None, Some(e)),
        None => (known, None),
    }
}

/// The GPUs for `ncu.second_gpu`, when it is on and the two passes can run at once; why not
/// is a warning, and the passes run one after the other.
fn second_gpu(
    (cfg, target): (&Config, &crate::config::NcuTarget),
    env: &Env,
    workload: &crate::passes::workload::Workload,
) -> Option<crate::rundir::status::SecondGpu> {
    if !cfg.ncu.second_gpu {
        return None;
    }
    let inherited = std::env::var("CUDA_VISIBLE_DEVICES").ok();
    match crate::passes::beside::gpus(
        (cfg, target),
        &workload.env,
        inherited.as_deref(),
        &env.gpus,
    ) {
        Ok(g) => {
            tracing::info!(
                "ncu.second_gpu: the ncu pass runs on GPU {} while the nsys pass runs on GPU {} ({})",
                g.ncu,
                g.nsys,
                g.model
            );
            Some(g)
        }
        Err(why) => {
            tracing::warn!("ncu.second_gpu: the passes run one after the other: {why}");
            None
        }
    }
}

/// The index (in nvidia-smi's list) of the GPU the workload sees: `workload.device`'s
/// `cuda:N` (or `N`), else the first.
pub(crate) fn workload_gpu(cfg: &Config) -> usize {
    cfg.workload
        .device
        .as_deref()
        .and_then(|d| d.rsplit(':').next()?.parse::<usize>().ok())
        .unwrap_or(0)
}

/// The model of the GPU the workload sees, as nvidia-smi names it (None: not listed).
pub(crate) fn workload_gpu_name<'a>(env: &'a Env, cfg: &Config) -> Option<&'a str> {
    env.gpus.get(workload_gpu(cfg)).map(|g| g.name.as_str())
}

/// GPU `index`, its driver and ncu's version: what the metrics cache's keys need (None when
/// any is unknown).
pub(crate) fn cache_device(
    env: &Env,
    index: usize,
    ncu: Option<&Found>,
) -> Option<crate::passes::ncu::cache::Device> {
    let gpu = env.gpus.get(index)?;
    Some(crate::passes::ncu::cache::Device {
        gpu: gpu.name.clone(),
        driver: gpu.driver.clone(),
        ncu: ncu?.version.clone()?,
    })
}

/// A workload that failed under nsys would fail again under ncu, after minutes of replay:
/// the ncu pass is not run, for that reason.
fn workload_failed(status: &Status) -> Option<Error> {
    let nsys = status.passes.get("nsys")?;
    (nsys.state == PassState::Failed && nsys.exit_code == crate::exit_codes::WORKLOAD).then(|| {
        crate::error::WorkloadError::Failed(
            "the workload failed under nsys (see nsys/nsys.log); ncu would run it again".into(),
        )
        .into()
    })
}

/// Timed nsys passes 2..=`run.repeat`, each in `repeats/<i>/` with its own status.json; the
/// main status records how many succeeded as the `nsys_repeat` pass. They run only after a
/// good first pass (a capture that found nothing once finds nothing again).
fn repeat_nsys(
    driver: &mut Driver,
    nsys: &Option<PathBuf>,
    metric_set: Option<super::nsys::metric_set::Derived>,
) -> Result<(), Error> {
    let dry_run = driver.dry_run;
    let (ctx, n) = (driver.ctx, driver.ctx.cfg.run.repeat);
    let first_ok = driver
        .status
        .passes
        .get("nsys")
        .is_some_and(|p| matches!(p.state, PassState::Ok | PassState::Planned));
    if n < 2 || !first_ok {
        return Ok(());
    }
    let mut failed = Vec::new();
    for i in 2..=n {
        let sub = ctx.run.repeat(i, true)?;
        let sub_ctx = Ctx { run: &sub, ..*ctx };
        let mut d = Driver {
            ctx: &sub_ctx,
            status: Status::new(&ctx.run.id()),
            dry_run,
        };
        tracing::info!("nsys pass {i} of {n}");
        d.drive(&NsysPass {
            tool: nsys.clone(),
            profiled: None,
            reuse: None,
            metric_set: metric_set.clone(),
        })?;
        d.status.finish(dry_run);
        d.save();
        let st = &d.status.passes["nsys"];
        if !matches!(st.state, PassState::Ok | PassState::Planned) {
            failed.push((i, st.clone()));
        }
        if crate::passes::signals::interrupted() {
            break;
        }
    }
    let st = match failed.first() {
        None if dry_run => PassStatus::new(PassState::Planned, None),
        None => PassStatus::new(
            PassState::Ok,
            Some(format!("{n} timed nsys passes (repeats/2..{n})")),
        ),
        Some((i, st)) => {
            let mut st = st.clone();
            st.reason = Some(format!(
                "{} of {} repeated nsys passes failed; first: repeats/{i}: {}",
                failed.len(),
                n - 1,
                st.reason.clone().unwrap_or_default()
            ));
            st
        }
    };
    driver.status.set("nsys_repeat", st);
    driver.save();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rundir::record::{NsysRecord, NsysTiming};

    fn nsys_ran(state: PassState, window: (f64, f64)) -> Status {
        let mut status = Status::new("r");
        let mut st = PassStatus::new(state, None);
        let rec = NsysRecord {
            capture: crate::config::Capture::WholeRun,
            sampling: None,
            sampling_off: None,
            trace: None,
            timing: Some(NsysTiming {
                capture_start_s: Some(window.0),
                capture_end_s: Some(window.1),
                post_steps_s: None,
            }),
        };
        st.nsys = Some(rec);
        status.set("nsys", st);
        status
    }

    #[test]
    fn a_held_copy_still_starting_during_the_capture_is_said_with_its_overlap() {
        let mut status = nsys_ran(PassState::Ok, (10.0, 12.0));
        early_notes(&mut status, 11.5, true);
        let w = &status.passes["nsys"].warnings;
        assert_eq!(w.len(), 1);
        assert!(
            w[0].contains("still starting (CPU work) for 1.5 s of the 2.0 s capture"),
            "{w:?}"
        );
        // Held before the capture began: nothing to say.
        let mut quiet = nsys_ran(PassState::Ok, (10.0, 12.0));
        early_notes(&mut quiet, 9.0, true);
        assert!(quiet.passes["nsys"].warnings.is_empty());
        // A failed nsys pass gets the hint that the copy may be why.
        let mut failed = nsys_ran(PassState::Failed, (10.0, 12.0));
        early_notes(&mut failed, 2.0, true);
        assert!(failed.passes["nsys"].warnings[0].contains("ncu.early_start=false"));
        // A copy that ended by itself failed on its own: no hint.
        let mut both = nsys_ran(PassState::Failed, (10.0, 12.0));
        early_notes(&mut both, 2.0, false);
        assert!(both.passes["nsys"].warnings.is_empty());
    }
}
