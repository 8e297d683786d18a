//! `stage2 profile`: pre-flight checks, the MAIN run directory, the nsys pass, kernel
//! selection, the ncu pass, then the reports. Every pass's outcome lands in status.json as it
//! happens, so nothing already produced is lost when a later step fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::analysis::select;
use crate::cli::ProfileArgs;
use crate::config::{self, Config};
use crate::error::{Error, Result};
use crate::exit_codes;
use crate::passes::diagnose;
use crate::passes::ncu::{self, Plan};
use crate::passes::provenance::{Env, Inputs};
use crate::passes::tools::{self, Found, Tool};
use crate::passes::workload;
use crate::passes::{nsys, Ctx};
use crate::report;
use crate::rundir::status::{PassState, PassStatus, Status};
use crate::rundir::RunDir;

pub fn run(args: &ProfileArgs, echo: bool) -> Result<i32> {
    // First, so that a Ctrl-C during start-up (a slow probe) is seen, not lost.
    crate::passes::signals::install();
    let resolved = config::resolve(&args.to_sources())?;
    let cfg = &resolved.config;
    preflight(cfg)?;
    // Validate the workload before anything is created; the real stage1 path comes below.
    workload::build(cfg, Path::new("stage1"))?;
    let nsys_tool = find_tool(
        Tool::Nsys,
        cfg.nsys.enable,
        cfg.tools.nsys.as_deref(),
        args.dry_run,
    )?;
    let ncu_tool = find_tool(
        Tool::Ncu,
        cfg.ncu.enable,
        cfg.tools.ncu.as_deref(),
        args.dry_run,
    )?;
    // Metric names are checked against this GPU's list before the ncu pass. With an nsys pass
    // first, the query runs beside it instead of delaying it.
    let mut metric_check = None;
    if let (Some(found), false) = (&ncu_tool, args.dry_run) {
        let (path, metrics) = (found.path.clone(), cfg.ncu.metrics.clone());
        if cfg.nsys.enable {
            metric_check = Some(std::thread::spawn(move || {
                check_metrics_with_ncu(&path, &metrics)
            }));
        } else {
            check_metrics_with_ncu(&path, &metrics)?;
        }
    }

    if crate::passes::signals::interrupted() {
        return Err(Error::Interrupted("during start-up, before any pass ran".into()).into());
    }
    let run = RunDir::create(Path::new(&cfg.run.root), cfg.run.id.as_deref())?;
    let io = |what: &str, e: std::io::Error| Error::io("write", run.file(what), e);
    tracing::info!("run directory {}", run.path.display());
    let workload = workload::build(cfg, &run.stage1())?;
    std::fs::write(
        run.file("config.yaml"),
        crate::passes::provenance::redact_url(&resolved.to_yaml()),
    )
    .map_err(|e| io("config.yaml", e))?;
    let mut tools_found = BTreeMap::new();
    tools_found.insert("nsys".to_string(), nsys_tool.clone());
    tools_found.insert("ncu".to_string(), ncu_tool.clone());
    let argv: Vec<String> = std::env::args().collect();
    let mut env = Env::collect(&argv, tools_found);
    env.write(&run.file("env.json"))
        .map_err(|e| io("env.json", e))?;
    let inputs = Inputs::new(&workload, cfg.inputs.manifest.as_deref())?;
    std::fs::write(
        run.file("inputs.yaml"),
        serde_yaml::to_string(&inputs).unwrap_or_default(),
    )
    .map_err(|e| io("inputs.yaml", e))?;

    let mut status = Status::new(&run.id());
    let save = |s: &Status| {
        if let Err(e) = s.write(&run.path) {
            tracing::warn!("cannot write status.json: {e}");
        }
    };
    status.set(
        "nsys",
        PassStatus::new(PassState::Pending, exit_codes::OK, None),
    );
    status.set(
        "ncu",
        PassStatus::new(PassState::Pending, exit_codes::OK, None),
    );
    save(&status);
    let ctx = Ctx {
        cfg,
        run: &run,
        workload: &workload,
        echo,
    };

    // nsys
    let nsys_status = match &nsys_tool {
        Some(t) if cfg.nsys.enable => {
            announce("nsys", args.dry_run);
            let before = guard(cfg, &run, "nsys");
            let mut st = nsys::run(&ctx, &t.path, args.dry_run)?;
            st.warnings.splice(0..0, before);
            st
        }
        _ => PassStatus::skipped("disabled (nsys.enable=false or --no-nsys)"),
    };
    let mut nsys_status = nsys_status;
    if nsys_status.state == PassState::NoData
        && nsys_status
            .reason
            .as_deref()
            .is_some_and(|r| r.contains(nsys::NO_REPORTS))
        && !crate::passes::signals::interrupted()
    {
        let wanted = cfg.nsys.nvtx_capture.clone().unwrap_or_default();
        let path = nsys_tool
            .as_ref()
            .map(|t| t.path.as_path())
            .filter(|_| cfg.nsys.diagnose);
        if let Some(ranges) = path.and_then(|p| diagnose::ungated(&ctx, p)) {
            append_reason(&mut nsys_status, &diagnose::describe(&ranges, &wanted));
        }
    }
    report_pass("nsys", &nsys_status);
    status.set("nsys", nsys_status);
    save(&status);

    // ncu
    let ncu_status = if crate::passes::signals::interrupted() {
        PassStatus::skipped("not started: the run was interrupted")
    } else {
        let refused = metric_check
            .take()
            .and_then(|h| h.join().unwrap_or(Ok(())).err());
        match (&ncu_tool, refused) {
            (Some(_), Some(e)) => PassStatus::new(
                PassState::Failed,
                e.exit_code(),
                Some(format!("not run: {e}")),
            ),
            (Some(t), None) if cfg.ncu.enable => {
                let plan = plan_ncu(cfg, &run);
                announce("ncu", args.dry_run);
                let before = guard(cfg, &run, "ncu");
                let mut st = ncu::run(&ctx, &t.path, &plan, args.dry_run)?;
                st.warnings.splice(0..0, before);
                st.ncu = Some(crate::rundir::status::NcuRecord {
                    include: plan.include.clone(),
                    base: plan.base.clone(),
                });
                st
            }
            _ => PassStatus::skipped("disabled (ncu.enable=false or --no-ncu)"),
        }
    };
    let mut ncu_status = ncu_status;
    if ncu_status.state == PassState::NoData && !crate::passes::signals::interrupted() {
        let wanted = cfg.ncu.nvtx_include.clone().unwrap_or_default();
        let path = nsys_tool.as_ref().map(|t| t.path.as_path());
        if let Some(ranges) = diagnose::ranges_for(&ctx, path, &wanted) {
            append_reason(&mut ncu_status, &diagnose::describe(&ranges, &wanted));
        }
    }
    report_pass("ncu", &ncu_status);
    status.set("ncu", ncu_status);
    save(&status);

    // The reports carry the final status of every pass, their own included: finish the run as
    // if rendering succeeds, render once, and record the failure if it does not.
    if !args.dry_run {
        status.set(
            "report",
            PassStatus::new(PassState::Ok, exit_codes::OK, None),
        );
    }
    let mut code = status.finish(args.dry_run);
    save(&status);
    env.finished = Some(crate::rundir::status::now());
    let _ = env.write(&run.file("env.json"));
    if !args.dry_run {
        let st = match report::render_all(&run, cfg.clone()) {
            Ok(_) => PassStatus::new(PassState::Ok, exit_codes::OK, None),
            Err(e) => PassStatus::new(PassState::Failed, e.exit_code(), Some(e.to_string())),
        };
        report_pass("report", &st);
        if st.state != PassState::Ok {
            status.set("report", st);
            code = status.finish(false);
            save(&status);
        }
    }
    if args.dry_run {
        crate::errln!(
            "dry run: wrote {} (config, provenance, cmd.txt); ran nothing",
            run.path.display()
        );
    } else {
        crate::errln!(
            "stage2: {} -> {}/kernels.md, stakeholder_summary.md",
            status.state,
            run.path.display()
        );
    }
    Ok(code)
}

/// Checks that need no tool: they fail in seconds, not after an hour of profiling.
fn preflight(cfg: &Config) -> Result<(), Error> {
    if cfg.nsys.enable
        && cfg.nsys.gating_nvtx
        && cfg.nsys.capture_range == crate::config::CaptureRange::Nvtx
    {
        nsys::capture_expr(&cfg.nsys, cfg.nvtx.domain.as_deref())?;
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
            Ok(Some(f))
        }
        // A dry run only writes command lines: name the tool plainly.
        Err(_) if dry_run => Ok(Some(Found {
            path: PathBuf::from(tool.name()),
            how: "not found (dry run)".to_string(),
            version: None,
        })),
        Err(e) => Err(e),
    }
}

/// `ncu --query-metrics` lists the metric base names this GPU has. Where the query itself
/// fails (no GPU visible here, say), the check is skipped with a warning.
fn check_metrics_with_ncu(ncu: &Path, metrics: &[String]) -> Result<(), Error> {
    if metrics.is_empty() {
        return Ok(());
    }
    let out = crate::passes::process::probe(
        ncu,
        &["--query-metrics"],
        crate::passes::process::PROBE_TIMEOUT,
    );
    let text = match out {
        Some(text) => text,
        None => {
            tracing::warn!(
                "could not list ncu metrics; metric names are not checked before the run"
            );
            return Ok(());
        }
    };
    if !text.contains("Metric Name") {
        tracing::warn!("unexpected `ncu --query-metrics` output; metric names are not checked");
        return Ok(());
    }
    let unknown = ncu::unknown_metrics(metrics, &text);
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(Error::config(format!(
            "ncu.metrics: not known to ncu on this GPU: {} (see `ncu --query-metrics`)",
            unknown.join(", ")
        )))
    }
}

/// The ncu plan: the NVTX include and the kernel filter from the nsys pass's top kernels.
fn plan_ncu(cfg: &Config, run: &RunDir) -> Plan {
    let (include, base, warning) =
        crate::analysis::nvtx::include_and_base(cfg, crate::analysis::nvtx::style_for(cfg, run));
    if let Some(w) = warning {
        tracing::warn!("{w}");
    }
    Plan {
        include,
        base,
        filter: select::kernel_filter(cfg, run),
    }
}

/// Disk and trace-size warnings before a pass, also logged now.
fn guard(cfg: &Config, run: &RunDir, pass: &str) -> Vec<String> {
    let w = crate::passes::guards::warnings(cfg, pass, crate::passes::guards::free_gb(&run.path));
    for x in &w {
        tracing::warn!("{pass}: {x}");
    }
    w
}

fn append_reason(st: &mut PassStatus, more: &str) {
    let reason = st.reason.take().unwrap_or_default();
    st.reason = Some(format!("{reason}\n{more}"));
}

fn announce(pass: &str, dry_run: bool) {
    if dry_run {
        tracing::info!("{pass} pass: writing its command lines (dry run)");
    } else {
        tracing::info!("{pass} pass: running");
    }
}

fn report_pass(pass: &str, st: &PassStatus) {
    let state = serde_json::to_value(st.state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let took = st
        .duration_s
        .map(|d| format!(" in {d:.1} s"))
        .unwrap_or_default();
    match &st.reason {
        Some(r) if st.exit_code != exit_codes::OK => {
            tracing::error!("{pass} pass: {state}{took}: {r}")
        }
        Some(r) => tracing::info!("{pass} pass: {state}{took} ({r})"),
        None => tracing::info!("{pass} pass: {state}{took}"),
    }
    for w in &st.warnings {
        tracing::warn!("{pass}: {w}");
    }
}
