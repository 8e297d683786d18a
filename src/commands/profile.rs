//! `stage2 profile`: pre-flight checks, the MAIN run directory, the nsys pass, kernel
//! selection, the ncu pass, then the reports. Every pass's outcome lands in status.json as it
//! happens, so nothing already produced is lost when a later step fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::cli::ProfileArgs;
use crate::config::{self, Config};
use crate::error::{Error, Result};
use crate::exit_codes;
use crate::passes::driver::Driver;
use crate::passes::ncu::query::Check;
use crate::passes::ncu::{self, query};
use crate::passes::nsys;
use crate::passes::provenance::{Env, Inputs};
use crate::passes::sequence::{self, cache_device, workload_gpu, Tools};
use crate::passes::tools::{self, Found, Tool};
use crate::passes::workload;
use crate::passes::Ctx;
use crate::rundir::status::{Cause, PassState, PassStatus, Status};
use crate::rundir::RunDir;

pub(crate) fn run(args: &ProfileArgs, quiet: bool) -> Result<i32> {
    // First, so that a Ctrl-C during start-up (a slow probe) is seen, not lost.
    crate::passes::signals::install();
    let resolved = config::resolve(&args.to_sources())?;
    let cfg = &resolved.config;
    crate::passes::process::set_probe_limit(std::time::Duration::from_secs(
        cfg.run.probe_timeout_s.max(1),
    ));
    preflight(cfg)?;
    // Validate the workload before anything is created; the real stage1 path comes below.
    workload::build(cfg, Path::new("stage1"))?;
    let (nsys_tool, ncu_tool, known) = find_tools(cfg, args.dry_run)?;
    if crate::passes::signals::interrupted() {
        return Err(Error::Interrupted("during start-up, before any pass ran".into()).into());
    }
    let run = RunDir::create(Path::new(&cfg.run.root), cfg.run.id.as_deref())?;
    tracing::info!("run directory {}", run.path.display());
    let mut workload = workload::build(cfg, &run.stage1())?;
    // The workload's own secret-named variables join the ones the redaction step cuts.
    crate::secrets::learn(workload.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    crate::passes::hook::install(cfg, &run, &mut workload)?;
    let tools_found = BTreeMap::from([
        ("nsys".to_string(), nsys_tool.clone()),
        ("ncu".to_string(), ncu_tool.clone()),
    ]);
    let mut env = provenance(&run, &resolved, &workload, tools_found)?;
    let check = match (&ncu_tool, args.dry_run, cfg.nsys.enable) {
        (Some(found), false, true) => metric_check(cfg, &env, found)?,
        _ => Check::Settled(known),
    };

    let ncu = crate::config::NcuTarget::of(cfg);
    let ctx = Ctx {
        cfg,
        ncu: &ncu,
        run: &run,
        workload: &workload,
        echo: args.show_output && !quiet,
        progress: crate::passes::progress::Mode::detect(!quiet && !args.show_output),
    };
    let mut driver = Driver {
        ctx: &ctx,
        status: Status::new(&run.id()),
        dry_run: args.dry_run,
    };
    let tools = Tools {
        nsys: nsys_tool.map(|t| t.path),
        ncu: ncu_tool,
        env: &env,
    };
    sequence::run(&mut driver, &tools, check)?;

    let code = finish(&mut driver, &mut env, cfg);
    match cfg.run.private {
        true => run.close_up(),
        false => run.open_up(),
    }
    if args.dry_run {
        tracing::info!(
            "dry run: wrote {} (config, provenance, cmd.txt); ran nothing",
            run.path.display()
        );
    }
    let state = serde_json::to_value(driver.status.state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    super::result::announce(&run, &state, code, args.json);
    Ok(code)
}

/// nsys and ncu as this run will use them (None: disabled), and the reports' metrics ncu
/// knows where that is settled before any pass: a dry run's full list, or ncu's answer when
/// no nsys pass runs first (then a bad name fails before anything is created).
type FoundTools = (Option<Found>, Option<Found>, Option<Vec<String>>);

fn find_tools(cfg: &Config, dry_run: bool) -> Result<FoundTools, Error> {
    let nsys_tool = find_tool(
        Tool::Nsys,
        cfg.nsys.enable,
        cfg.tools.nsys.as_deref(),
        dry_run,
    )?;
    let ncu_tool = find_tool(Tool::Ncu, cfg.ncu.enable, cfg.tools.ncu.as_deref(), dry_run)?;
    let mut known = None;
    if dry_run && cfg.ncu.enable {
        // Nothing runs, ncu's query neither: cmd.txt shows the list a real run asks for, of
        // which it drops what this GPU's `ncu --query-metrics` does not list (the ncu pass's
        // dry-run notes say so).
        known = Some(
            crate::parse::ncu::REPORT_METRICS
                .iter()
                .map(|m| m.to_string())
                .collect(),
        );
    }
    if let (Some(found), false, false) = (&ncu_tool, dry_run, cfg.nsys.enable) {
        let source = query::Source {
            ncu: found.path.clone(),
            kept_in: None,
        };
        known = query::decide(source.ask_and_keep().as_deref(), &cfg.ncu.metrics)?;
    }
    Ok((nsys_tool, ncu_tool, known))
}

/// The run's provenance, written before any pass: the resolved config (secrets redacted),
/// env.json (returned: its end time is written when the run finishes) and inputs.yaml.
fn provenance(
    run: &RunDir,
    resolved: &config::Resolved,
    workload: &workload::Workload,
    tools_found: BTreeMap<String, Option<Found>>,
) -> Result<Env, Error> {
    let io = |what: &str, e: std::io::Error| Error::io("write", run.file(what), e);
    crate::rundir::status::write_atomic(&run.file("config.yaml"), resolved.to_yaml().as_bytes())
        .map_err(|e| io("config.yaml", e))?;
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let env = Env::collect(&argv, tools_found);
    env.write(&run.file("env.json"))
        .map_err(|e| io("env.json", e))?;
    let inputs = Inputs::new(workload, resolved.config.inputs.manifest.as_deref())?;
    crate::rundir::status::write_atomic(
        &run.file("inputs.yaml"),
        serde_yaml::to_string(&inputs)
            .unwrap_or_default()
            .as_bytes(),
    )
    .map_err(|e| io("inputs.yaml", e))?;
    Ok(env)
}

/// With an nsys pass first, metric names are checked against this GPU's list before the ncu
/// pass: the list kept for this GPU, driver and ncu (settled now), else ncu's answer, asked
/// beside the nsys pass, or once its profile has ended when nsys samples the GPU's counters
/// (ncu's query then answers without its list; seen on an H100), beside the export.
fn metric_check(cfg: &Config, env: &Env, ncu: &Found) -> Result<Check, Error> {
    let source = query_source(cfg, env, ncu);
    let metrics = cfg.ncu.metrics.clone();
    let sampling = crate::passes::nsys::sampled_devices(cfg).is_some();
    Ok(match source.cached() {
        Some(names) => Check::Settled(query::decide(Some(&names), &metrics)?),
        None if sampling => Check::After(source, metrics),
        None => Check::Beside(std::thread::spawn(move || {
            query::decide(source.ask_and_keep().as_deref(), &metrics)
        })),
    })
}

/// Finish the run: status.json's final state, env.json's end time, and the reports, which
/// carry the final status of every pass, their own included: the run is finished as if
/// rendering succeeds, rendered once, and the failure recorded if it does not. Returns the
/// exit code.
fn finish(driver: &mut Driver, env: &mut Env, cfg: &Config) -> i32 {
    let (run, dry_run) = (driver.ctx.run, driver.dry_run);
    if !dry_run {
        driver
            .status
            .set("report", PassStatus::new(PassState::Ok, None));
    }
    let mut code = driver.status.finish(dry_run);
    driver.save();
    env.finished = Some(crate::rundir::status::now());
    let _ = env.write(&run.file("env.json"));
    if dry_run {
        return code;
    }
    // A signal before the reports: an earlier pass already says where it came.
    let earlier = crate::passes::signals::interrupted();
    let st = match super::report::render_all(run, cfg.clone()) {
        Ok(summary) => {
            let gpu = sequence::workload_gpu_name(env, cfg);
            crate::passes::nsys::reuse::keep(cfg, gpu, &summary);
            PassStatus::new(PassState::Ok, None)
        }
        // An export refused as holding no data (launch calls without kernels) is no data.
        Err(e) if e.exit_code() == exit_codes::NO_DATA => {
            PassStatus::new(PassState::NoData, Some(e.to_string()))
        }
        Err(e) => PassStatus::failed(Cause::of(&e), Some(e.to_string())),
    };
    // A signal while the reports were rendered: they are written, and the run still ends
    // interrupted, never `ok`.
    let st = match (st.state, crate::passes::signals::interrupted() && !earlier) {
        (PassState::Ok, true) => PassStatus::new(
            PassState::Interrupted,
            Some("a signal arrived while the reports were rendered; they were written".into()),
        ),
        _ => st,
    };
    crate::passes::driver::report_pass("report", &st);
    if st.state != PassState::Ok {
        driver.status.set("report", st);
        code = driver.status.finish(false);
        driver.save();
    }
    code
}

/// Checks that need no tool: they fail in seconds, not after an hour of profiling.
fn preflight(cfg: &Config) -> Result<(), Error> {
    // A bad run id is a usage error whatever tools are installed: checked before they are found.
    if let Some(id) = cfg.run.id.as_deref() {
        crate::rundir::validate_id(id)?;
    }
    let root = std::env::current_dir()
        .unwrap_or_default()
        .join(&cfg.run.root);
    crate::passes::hook::check_root(cfg, &root)?;
    if !cfg.nsys.enable && !cfg.ncu.enable {
        return Err(Error::usage(
            "both passes are off (--no-nsys and --no-ncu, or nsys.enable/ncu.enable=false): nothing to run",
        ));
    }
    if cfg.nsys.enable {
        nsys::capture_args(&cfg.nsys, cfg.nvtx.domain.as_deref())?;
    }
    if cfg.ncu.enable {
        ncu::check_metric_names(&cfg.ncu.metrics)?;
    }
    Ok(())
}

fn find_tool(
    tool: Tool,
    enabled: bool,
    configured: Option<&str>,
    dry_run: bool,
) -> Result<Option<Found>, Error> {
    if !enabled {
        return Ok(None);
    }
    match tools::find(tool, configured) {
        Ok(f) => {
            tracing::info!(
                "{} {} ({}, found via {})",
                tool.name(),
                f.version.as_deref().unwrap_or("?"),
                f.path.display(),
                f.how
            );
            if f.replay {
                tracing::warn!(
                    "{} at {} is a test double: it runs the workload, then replays a recorded H100 capture, so the reports show that capture's figures, not this workload's",
                    tool.name(),
                    f.path.display()
                );
            }
            Ok(Some(f))
        }
        // A dry run only writes command lines: name the tool plainly, and say a real run
        // would stop here.
        Err(e) if dry_run => {
            tracing::warn!(
                "dry run: {e}; cmd.txt names plain `{}`, a real run would exit 3",
                tool.name()
            );
            Ok(Some(Found {
                path: PathBuf::from(tool.name()),
                how: "not found (dry run)".to_string(),
                version: None,
                replay: false,
            }))
        }
        Err(e) => Err(e),
    }
}

/// Where the metric names come from: kept per GPU, driver and ncu version in the metrics
/// cache when the cache is on (`ncu.cache.enable`) and the device is known, else asked.
fn query_source(cfg: &Config, env: &Env, ncu: &Found) -> query::Source {
    let device = cache_device(env, workload_gpu(cfg), Some(ncu));
    let dir = crate::passes::ncu::cache::default_dir(cfg.ncu.cache.dir.as_deref());
    query::Source {
        ncu: ncu.path.clone(),
        kept_in: match (cfg.ncu.cache.enable, dir, device) {
            (true, Some(dir), Some(device)) => Some((dir, device)),
            _ => None,
        },
    }
}
