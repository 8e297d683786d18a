//! The passes a profile runs, in order, and what each hands the next: start-up's tools and
//! metric check go to the nsys step, which hands the repeats its GPU-metrics set and the ncu
//! pass its check and how its workload starts (held since the nsys pass began, or as usual).
//! A new pass is a file with a [`Pass`](super::driver::Pass), a line in [`PASSES`] and a call
//! in [`run`].

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::driver::Driver;
use super::ncu::early::{self, Start};
use super::ncu::query::Check;
use super::ncu::NcuPass;
use super::nsys::metric_set::Derived;
use super::nsys::NsysPass;
use super::provenance::Env;
use super::tools::Found;
use super::Ctx;
use crate::config::Config;
use crate::error::Error;
use crate::rundir::record::HeldBeside;
use crate::rundir::status::{PassState, PassStatus, SecondGpu, Status};

/// What start-up found that the passes use.
pub(crate) struct Tools<'a> {
    pub(crate) nsys: Option<PathBuf>,
    pub(crate) ncu: Option<Found>,
    pub(crate) env: &'a Env,
}

/// Every pass a run may have, in order, and whether this run has it: it is `pending` until it
/// runs. (The repeats of the nsys pass are recorded once they have run.)
const PASSES: &[(&str, Wanted)] = &[
    ("nsys", |_| true),
    ("ncu", |_| true),
    ("packages", |_| true),
    ("baseline", |c| c.run.baseline),
    ("nvidia", |c| c.run.crosscheck),
];

/// Whether this run has a pass.
type Wanted = fn(&Config) -> bool;

/// Run every pass; an error that stops the run is returned (the driver has recorded it).
pub(crate) fn run(driver: &mut Driver, tools: &Tools, check: Check) -> Result<(), Error> {
    for (name, _) in PASSES.iter().filter(|(_, wanted)| wanted(driver.ctx.cfg)) {
        driver
            .status
            .set(name, PassStatus::new(PassState::Pending, None));
    }
    driver.save();
    let after = nsys(driver, tools, check)?;
    repeat_nsys(driver, tools.nsys.as_deref(), after.metric_set.as_ref())?;
    if let Some(next) = after.ncu {
        ncu(driver, tools, next)?;
    }
    driver.drive(&super::packages::PackagesPass)?;
    baseline(driver)?;
    crosscheck(driver, tools)
}

/// What the nsys step hands on: the GPU-metrics set its pass sampled with (the repeats sample
/// with it too), and the ncu pass still to run (None: it ran beside, on the second GPU).
struct AfterNsys {
    metric_set: Option<Derived>,
    ncu: Option<NcuNext>,
}

/// The ncu pass as the nsys step leaves it: its metric check, and how its workload starts.
struct NcuNext {
    check: Check,
    start: Start,
}

/// The nsys pass; with `ncu.second_gpu`, the ncu pass beside it on the other GPU.
fn nsys(driver: &mut Driver, tools: &Tools, check: Check) -> Result<AfterNsys, Error> {
    let ctx = driver.ctx;
    match second_gpu((ctx.cfg, ctx.ncu), tools.env, ctx.workload) {
        Some(gpus) => {
            both_at_once(driver, tools, check, gpus)?;
            Ok(AfterNsys {
                metric_set: None,
                ncu: None,
            })
        }
        None => nsys_first(driver, tools, check),
    }
}

/// The nsys pass on its own, the ncu pass's workload held beside it where it can be.
fn nsys_first(driver: &mut Driver, tools: &Tools, check: Check) -> Result<AfterNsys, Error> {
    let ctx = driver.ctx;
    let (check, profiled) = check.once_profiled();
    let start = hold_early(driver, tools);
    let reuse = super::nsys::reuse::usable(ctx.cfg, workload_gpu_name(tools.env, ctx.cfg));
    if let Some(r) = &reuse {
        tracing::info!("nsys pass: not sampling GPU metrics: the sampled figures of this command's last sampled run ({}) are reused (nsys.gpu_metrics.reuse)", r.run);
    }
    let metric_set = metric_set(driver, tools, reuse.is_some());
    let ran = driver.drive(&NsysPass {
        tool: tools.nsys.clone(),
        profiled,
        reuse,
        metric_set: metric_set.clone(),
    });
    if let Start::Held(held) = &start {
        early_notes(&mut driver.status, held.busy_until_s(), held.running());
        driver.save();
    }
    ran?;
    Ok(AfterNsys {
        metric_set,
        ncu: Some(NcuNext { check, start }),
    })
}

/// The GPU-metrics set made for this run's nsys passes where they sample with nsys's default
/// set (see `nsys::metric_set`; none where the last run's samples are `reused`), said with how
/// they sample: not at all (and why), or every GPU the workload can see.
fn metric_set(driver: &Driver, tools: &Tools, reused: bool) -> Option<Derived> {
    let cfg = driver.ctx.cfg;
    match (cfg.sampling_off(), cfg.ncu.enable) {
        (Some(why), true) => tracing::info!("nsys pass: not sampling GPU metrics: {why}"),
        // Neither tool then classes a kernel: said before the run, not found after it.
        (Some(why), false) => tracing::warn!(
            "nsys pass: not sampling GPU metrics: {why}; with the ncu pass off, no kernel gets a bound class"
        ),
        (None, _) => {}
    }
    if reused {
        return None;
    }
    let set = match (&tools.nsys, driver.dry_run) {
        (Some(nsys), false) if wants_metric_set(cfg) => {
            let gpus: Vec<String> = tools.env.gpus.iter().map(|g| g.name.clone()).collect();
            let cache = super::nsys::metric_set::answer_cache(cfg, nsys, &gpus);
            super::nsys::metric_set::for_run(nsys, &driver.ctx.run.path, cache.as_deref())
        }
        // The line a real run writes, its file made when that run starts.
        (Some(_), true) if wants_metric_set(cfg) => {
            Some(super::nsys::metric_set::for_dry_run(&driver.ctx.run.path))
        }
        _ => None,
    };
    if let Some(every) = super::nsys::samples_every_gpu(cfg, || tools.env.gpus.len()) {
        let keep = super::nsys::keep_to_one(cfg);
        tracing::info!("nsys pass: samples all {every} GPUs the workload can see (cuda-visible), each adding its rows to the export: {keep}");
    }
    set
}

/// `ncu.second_gpu`: both passes at once, each on its own GPU. ncu starts now, so the names
/// it will be given are checked first.
fn both_at_once(
    driver: &mut Driver,
    tools: &Tools,
    check: Check,
    gpus: SecondGpu,
) -> Result<(), Error> {
    let ctx = driver.ctx;
    let answer = check.answer();
    let index = gpus.ncu.parse().unwrap_or(0);
    let on = |gpu: &str| super::workload::Workload {
        env: super::beside::pinned(&ctx.workload.env, gpu),
        ..ctx.workload.clone()
    };
    let (nsys_w, ncu_w) = (on(&gpus.nsys), on(&gpus.ncu));
    let (nsys_ctx, ncu_ctx) = (ctx.with_workload(&nsys_w), ctx.with_workload(&ncu_w));
    let nsys = NsysPass {
        tool: tools.nsys.clone(),
        profiled: None,
        reuse: None,
        metric_set: None,
    };
    let ncu = ncu_pass(tools, index, answer, Some(gpus), Start::Usual);
    driver.drive_pair((&nsys, &nsys_ctx), (&ncu, &ncu_ctx))
}

/// The ncu pass after the nsys pass (and its repeats).
fn ncu(driver: &mut Driver, tools: &Tools, next: NcuNext) -> Result<(), Error> {
    let answer = next.check.answer();
    let mut pass = ncu_pass(
        tools,
        workload_gpu(driver.ctx.cfg),
        answer,
        None,
        next.start,
    );
    pass.refused = pass.refused.or_else(|| workload_failed(&driver.status));
    driver.drive(&pass)
}

/// The ncu pass on GPU `index`, with the metric check's answer and how its workload starts.
fn ncu_pass(
    tools: &Tools,
    index: usize,
    answer: Result<Option<Vec<String>>, Error>,
    second_gpu: Option<SecondGpu>,
    start: Start,
) -> NcuPass {
    let (known_metrics, refused) = match answer {
        Ok(known) => (known, None),
        Err(e) => (None, Some(e)),
    };
    NcuPass {
        device: cache_device(tools.env, index, tools.ncu.as_ref()),
        tool: tools.ncu.as_ref().map(|t| t.path.clone()),
        refused,
        nsys: tools.nsys.clone(),
        known_metrics,
        second_gpu,
        start: Mutex::new(start),
    }
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
/// workload said the metrics cache holds every kernel it chose (the copy would go unused).
fn hold_early(driver: &Driver, tools: &Tools) -> Start {
    let ctx = driver.ctx;
    // A dry run starts nothing: its plan writes the lines a real run's start would.
    if driver.dry_run {
        return Start::Dry(early::Dry::of(ctx.cfg, tools.nsys.is_some()));
    }
    let able = !driver.dry_run && tools.nsys.is_some() && early::wanted(ctx.cfg);
    let Some(ncu) = tools.ncu.as_ref().filter(|_| able) else {
        return Start::Usual;
    };
    let warm = super::ncu::warm::path(ctx.cfg).and_then(|p| super::ncu::warm::expected(&p));
    if let Some(run) = warm {
        tracing::info!("ncu pass: not started early: the metrics cache held every kernel of this workload's last run ({run})");
        return Start::Warm(run);
    }
    let port = early::free_ports();
    if port.is_none() {
        tracing::warn!("ncu pass: no block of free ports for the held workload; ncu's default ports are used (another run's held workload there could be attached instead)");
    }
    let args = early::launch_args(&ctx.workload.argv, port);
    let log = early::log(&ctx.run.path.join("ncu"));
    let spec = ctx.spec(&ncu.path, args, log);
    tracing::info!("ncu pass: its workload starts now, held by ncu at its first CUDA call until the kernels are chosen (ncu.early_start)");
    Start::Held(early::Held::start(spec, port))
}

/// What the held workload meant for the nsys pass: its start-up's CPU work beside the capture,
/// recorded in the nsys record for the reports and warned of where it overlapped the capture;
/// and the hint where the workload failed while its copy still ran (it may not run twice at
/// once; a copy that ended by itself failed on its own, so the hint is not given).
fn early_notes(status: &mut Status, held_at: f64, copy_running: bool) {
    let Some(nsys) = status.passes.get_mut("nsys") else {
        return;
    };
    let beside = nsys.nsys.as_mut().map(|r| {
        let b = HeldBeside::of(held_at, r.timing.as_ref());
        r.held_beside = Some(b);
        b
    });
    let overlap = beside.and_then(|b| Some((b.in_capture_s?, b.capture_s?)));
    if let Some((overlap, capture)) = overlap {
        if overlap >= crate::rules::EARLY_START_BESIDE.threshold {
            nsys.warnings.push(format!(
                "the ncu pass's copy of the workload was still starting (CPU work) for {overlap:.1} s of the {capture:.1} s capture (ncu.early_start): the capture's CPU-side times may include that; ncu.early_start=false runs the passes one after the other"
            ));
        }
    }
    if nsys.state == PassState::Failed && copy_running {
        nsys.warnings.push("the ncu pass's copy of the workload was starting beside this one (ncu.early_start), so the workload's start ran twice at once: one that binds a port, takes a lock or writes a fixed file before its first CUDA call fails so; ncu.early_start=false runs the passes one after the other".to_string());
    }
}

/// The workload once more without a profiler (`run.baseline`).
fn baseline(driver: &mut Driver) -> Result<(), Error> {
    if !driver.ctx.cfg.run.baseline {
        return Ok(());
    }
    let workload_failed = workload_failed(&driver.status).is_some();
    driver.drive(&super::baseline::BaselinePass { workload_failed })
}

/// NVIDIA's own summaries of the captures, compared (`run.crosscheck`).
fn crosscheck(driver: &mut Driver, tools: &Tools) -> Result<(), Error> {
    if !driver.ctx.cfg.run.crosscheck {
        return Ok(());
    }
    driver.drive(&super::crosscheck::CrosscheckPass {
        nsys: tools.nsys.clone(),
        ncu: tools.ncu.as_ref().map(|t| t.path.clone()),
        dry_run: driver.dry_run,
    })
}

/// The GPUs for `ncu.second_gpu`, when it is on and the two passes can run at once; why not
/// is a warning, and the passes run one after the other.
fn second_gpu(
    (cfg, target): (&Config, &crate::config::NcuTarget),
    env: &Env,
    workload: &crate::passes::workload::Workload,
) -> Option<SecondGpu> {
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
    nsys: Option<&Path>,
    metric_set: Option<&Derived>,
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
            tool: nsys.map(Path::to_path_buf),
            profiled: None,
            reuse: None,
            metric_set: metric_set.cloned(),
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
            held_beside: None,
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
        // The record keeps the figures the reports say it with.
        let rec = status.passes["nsys"].nsys.as_ref().unwrap();
        let b = rec.held_beside.unwrap();
        assert_eq!(
            (b.busy_s, b.in_capture_s, b.capture_s),
            (11.5, Some(1.5), Some(2.0))
        );
        // Held before the capture began: nothing to say, and an overlap of none recorded.
        let mut quiet = nsys_ran(PassState::Ok, (10.0, 12.0));
        early_notes(&mut quiet, 9.0, true);
        assert!(quiet.passes["nsys"].warnings.is_empty());
        let rec = quiet.passes["nsys"].nsys.as_ref().unwrap();
        assert_eq!(rec.held_beside.unwrap().in_capture_s, Some(0.0));
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
