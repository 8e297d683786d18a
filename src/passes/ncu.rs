//! Nsight Compute pass: `ncu` gated by an NVTX range and scoped to the nsys pass's top
//! kernels, each profiled once by default; then the raw metrics imported to CSV.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{append_cmd_txt, run_step, stopped, write_cmd_txt, Ctx};
pub use crate::analysis::select::KernelFilter;
use crate::config::{Config, Ncu};
use crate::error::Error;
use crate::exit_codes;
use crate::passes::launcher::Launcher;
use crate::passes::process::{self, Outcome};
use crate::rundir::status::{PassState, PassStatus};

pub const NO_KERNELS: &str = "No kernels were profiled";

/// `ncu ...` profile arguments (without the program).
pub fn profile_args(
    cfg: &Ncu,
    include: Option<&str>,
    filter: Option<&KernelFilter>,
    out_base: &Path,
    workload: &[String],
    exclude_nccl: bool,
) -> Vec<String> {
    let mut a: Vec<String> = vec!["--target-processes".into(), "all".into()];
    if let Some(expr) = include {
        a.extend(["--nvtx".into(), "--nvtx-include".into(), expr.to_string()]);
    }
    let per_kernel = cfg.instances_per_kernel.max(1);
    // ncu counts invocations per distinct kernel from 1: skipping N warm-up launches of each
    // kernel means profiling its invocation N+1.
    let invocation = cfg.launch_skip + 1;
    match filter.filter(|f| !f.is_empty()) {
        Some(f) => {
            let (base, names) = match f {
                KernelFilter::Mangled(n) => ("mangled", n),
                KernelFilter::Function(n) => ("function", n),
            };
            let alternatives: Vec<String> = names.iter().map(|n| escape_regex(n)).collect();
            let regex = format!("^({})$", alternatives.join("|"));
            a.extend(["--kernel-name-base".into(), base.into()]);
            if per_kernel == 1 {
                // The invocation number counts per distinct kernel: `:1` is each one's first
                // launch in the range. Every launch would take hours of replay.
                a.extend([
                    "--kernel-id".into(),
                    format!("::regex:{regex}:{invocation}"),
                ]);
            } else {
                if cfg.launch_skip > 0 {
                    a.extend(["--launch-skip".into(), cfg.launch_skip.to_string()]);
                }
                a.extend([
                    "--kernel-name".into(),
                    format!("regex:{regex}"),
                    "--launch-count".into(),
                    (u64::from(per_kernel) * names.len() as u64).to_string(),
                ]);
            }
        }
        // No filter: each distinct kernel once (distinct demangled name: with the default
        // function base, template instances would be lumped together).
        None => a.extend([
            "--kernel-name-base".into(),
            "demangled".into(),
            "--kernel-id".into(),
            if exclude_nccl {
                // NCCL kernels wait on the other ranks, which ncu's serialised replay stalls.
                format!("::regex:^(?!.*nccl).*:{invocation}")
            } else {
                format!(":::{invocation}")
            },
        ]),
    }
    a.extend(["--set".into(), cfg.set.clone()]);
    if !cfg.metrics.is_empty() {
        a.extend(["--metrics".into(), cfg.metrics.join(",")]);
    }
    if let Some(c) = cfg.clock_control {
        a.extend(["--clock-control".into(), c.as_str().to_string()]);
    }
    a.extend(cfg.extra_args.iter().cloned());
    a.extend(["-o".into(), out_base.display().to_string()]);
    a.extend(workload.iter().cloned());
    a
}

pub fn import_args(rep: &Path) -> Vec<String> {
    vec![
        "--import".into(),
        rep.display().to_string(),
        "--csv".into(),
        "--page".into(),
        "raw".into(),
    ]
}

/// The same import with mangled names: the join key shared with the nsys SQLite export.
pub fn import_mangled_args(rep: &Path) -> Vec<String> {
    let mut a = import_args(rep);
    a.extend(["--print-kernel-base".into(), "mangled".into()]);
    a
}

/// Escape a kernel name for ncu's (ECMAScript) regex.
pub fn escape_regex(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if "\\^$.|?*+()[]{}/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Metric names as ncu knows them: `unit__counter[.rollup...]`. nvprof-era names such as
/// `flop_count_sp` make ncu 2025 fail and kill the application, so they are refused up front.
pub fn check_metric_names(metrics: &[String]) -> Result<(), Error> {
    for m in metrics {
        let ok = m.contains("__")
            && m.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        if !ok {
            return Err(Error::config(format!(
                "ncu.metrics: `{m}` is not an Nsight Compute metric name (names look like sm__throughput.avg.pct_of_peak_sustained_elapsed; nvprof names such as flop_count_sp were replaced, see `ncu --query-metrics`)"
            )));
        }
    }
    Ok(())
}

/// Check metrics against `ncu --query-metrics` output: each metric's base name (before the
/// first `.`) must be listed. Returns the unknown ones.
pub fn unknown_metrics(metrics: &[String], query_output: &str) -> Vec<String> {
    // Plain `--query-metrics` lists base names; the suffix mode lists `base.suffix`.
    let known: std::collections::HashSet<&str> = query_output
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(|name| name.split('.').next().unwrap_or(name))
        .collect();
    metrics
        .iter()
        .filter(|m| {
            let base = m.split('.').next().unwrap_or(m);
            !known.contains(base)
        })
        .cloned()
        .collect()
}

/// What the profile step's outcome means.
pub fn classify(out: &Outcome, report: bool, filtered: bool) -> PassStatus {
    if let Some(st) = stopped(out, "ncu") {
        return st;
    }
    let error_lines: Vec<&str> = out
        .tail
        .lines()
        .filter(|l| l.contains("==ERROR=="))
        .collect();
    if out.tail.contains(NO_KERNELS) && !report {
        let warning = out
            .tail
            .lines()
            .find(|l| l.contains(NO_KERNELS))
            .unwrap_or(NO_KERNELS)
            .trim();
        return PassStatus::new(
            PassState::NoData,
            exit_codes::NO_DATA,
            Some(format!(
                "ncu profiled nothing{}: \"{warning}\". Check ncu.nvtx_include against the ranges in nsys/summary_nvtx_sum.csv (push/pop ranges match only as NAME/)",
                if filtered { " (even without the kernel filter)" } else { "" }
            )),
        );
    }
    match (report, out.code) {
        (true, Some(0)) => PassStatus::new(PassState::Ok, exit_codes::OK, None),
        (true, _) => PassStatus::new(
            PassState::Failed,
            exit_codes::WORKLOAD,
            Some(format!(
                "the workload under ncu ended with {}; the report was kept and imported. Last output:\n{}",
                out.describe(),
                out.tail_lines(8)
            )),
        ),
        (false, _) if !error_lines.is_empty() => PassStatus::new(
            PassState::Failed,
            if error_lines.iter().any(|l| l.contains("ERR_NVGPUCTRPERM")) {
                exit_codes::TOOL
            } else {
                exit_codes::WORKLOAD
            },
            Some(format!("ncu failed ({}): {}", out.describe(), error_lines.join(" | "))),
        ),
        (false, Some(0)) => PassStatus::new(
            PassState::NoData,
            exit_codes::NO_DATA,
            Some("ncu exited 0 but wrote no report; see ncu/ncu.log".to_string()),
        ),
        (false, _) => PassStatus::new(
            PassState::Failed,
            exit_codes::WORKLOAD,
            Some(format!(
                "ncu or the workload failed ({}) and no report was written. Last output:\n{}",
                out.describe(),
                out.tail_lines(10)
            )),
        ),
    }
}

pub struct Plan {
    pub include: Option<String>,
    pub base: String,
    pub filter: Option<KernelFilter>,
}

impl Plan {
    pub fn report(&self, ctx: &Ctx) -> PathBuf {
        ctx.run.ncu_report(&self.base)
    }
    pub fn raw_csv(&self, ctx: &Ctx) -> PathBuf {
        ctx.run.ncu_raw(&self.base)
    }
    pub fn raw_mangled_csv(&self, ctx: &Ctx) -> PathBuf {
        ctx.run.ncu_raw_mangled(&self.base)
    }
}

/// Environment the ncu pass adds for every rank (see `ncu.nccl_p2p_disable` in conf/).
pub fn rank_env(cfg: &Config) -> Vec<(String, String)> {
    const P2P: &str = "NCCL_P2P_DISABLE";
    if cfg.workload.launcher == Launcher::None
        || !cfg.ncu.nccl_p2p_disable
        || cfg.workload.env.contains_key(P2P)
    {
        return Vec::new();
    }
    vec![(P2P.to_string(), "1".to_string())]
}

/// `argv` as cmd.txt shows it: behind `env NAME=VALUE ...` when the pass adds variables, so
/// that pasting the line runs the same thing.
fn with_env(env: &[(String, String)], argv: Vec<String>) -> Vec<String> {
    if env.is_empty() {
        return argv;
    }
    std::iter::once("env".to_string())
        .chain(env.iter().map(|(k, v)| format!("{k}={v}")))
        .chain(argv)
        .collect()
}

/// Run the whole pass.
pub fn run(ctx: &Ctx, ncu: &Path, plan: &Plan, dry_run: bool) -> Result<PassStatus, Error> {
    let launcher = ctx.cfg.workload.launcher;
    let multi = launcher != Launcher::None;
    let ranks = if ctx.cfg.ncu.ranks.is_empty() {
        vec![0]
    } else {
        ctx.cfg.ncu.ranks.clone()
    };
    // One profiled rank keeps the plain name; several get a report each.
    let out_base = if multi && ranks.len() > 1 {
        ctx.run
            .ncu(&format!("{}.rank{}", plan.base, launcher.rank_macro()))
    } else {
        ctx.run.ncu(&plan.base)
    };
    let rep = if multi && ranks.len() > 1 {
        ctx.run
            .ncu(&format!("{}.rank{}.ncu-rep", plan.base, ranks[0]))
    } else {
        plan.report(ctx)
    };
    let prog = ncu.display().to_string();
    let with_prog = |a: Vec<String>| std::iter::once(prog.clone()).chain(a).collect::<Vec<_>>();
    let exclude_nccl = multi && !ctx.cfg.ncu.include_nccl;
    let stage2 = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "stage2".to_string());
    let env = rank_env(ctx.cfg);
    // Everything the ranks get set, for launchers that forward variables by name.
    let rank_vars: Vec<(String, String)> = ctx.workload.env.iter().chain(&env).cloned().collect();
    // The full argv: ncu on the workload, or, under a launcher, `stage2 __rank-exec` per rank
    // that runs ncu on the chosen ranks and the bare workload on the others.
    let args = |filter: Option<&KernelFilter>| -> Vec<String> {
        let profiled = with_prog(profile_args(
            &ctx.cfg.ncu,
            plan.include.as_deref(),
            filter,
            &out_base,
            &ctx.workload.argv,
            exclude_nccl,
        ));
        if multi {
            let per_rank = crate::passes::launcher::rank_exec_args(
                &stage2,
                launcher,
                &ranks,
                ctx.workload.argv.len(),
                profiled,
            );
            launcher.wrap(&ctx.cfg.workload, per_rank, &rank_vars)
        } else {
            profiled
        }
    };
    let cmd_txt = ctx.run.ncu("cmd.txt");
    write_cmd_txt(
        &cmd_txt,
        &[
            with_env(&env, args(plan.filter.as_ref())),
            with_prog(import_args(&rep)),
            with_prog(import_mangled_args(&rep)),
            with_prog(vec!["--list-sections".into()]),
        ],
    )
    .map_err(|e| Error::io("write", &cmd_txt, e))?;
    if dry_run {
        return Ok(PassStatus::new(PassState::Planned, exit_codes::OK, None));
    }
    let log = ctx.run.ncu("ncu.log");
    if multi {
        crate::passes::launcher::find(launcher)?;
    }
    let profile = |filter: Option<&KernelFilter>| -> Result<Outcome, Error> {
        let argv = args(filter);
        let mut spec = ctx.spec(Path::new(&argv[0]), argv[1..].to_vec(), log.clone());
        spec.env.extend(env.iter().cloned());
        spec.timeout = ctx.cfg.ncu_timeout();
        process::run(&spec).map_err(|e| Error::start(&argv[0], e))
    };
    let mut out = profile(plan.filter.as_ref())?;
    let mut duration = out.duration;
    let mut warnings = Vec::new();
    let filtered = plan.filter.as_ref().is_some_and(|f| !f.is_empty());
    if filtered
        && out.tail.contains(NO_KERNELS)
        && !process::nonempty(&rep)
        && stopped(&out, "ncu").is_none()
    {
        let why = "ncu profiled no kernel with the top-kernel filter; profiling again without it";
        tracing::warn!("{why}");
        warnings.push(why.to_string());
        let _ = append_cmd_txt(&cmd_txt, &with_env(&env, args(None)));
        out = profile(None)?;
        duration += out.duration;
    }
    let have_report = process::nonempty(&rep);
    let mut st = classify(&out, have_report, filtered);
    st.duration_s = Some(duration.as_secs_f64());
    st.warnings.extend(warnings);
    if have_report {
        let step = |args: Vec<String>, stdout: PathBuf| {
            let mut s = ctx.spec(ncu, args, log.clone());
            s.echo = false;
            s.stdout_file = Some(stdout);
            s.timeout = Some(Duration::from_secs(3600));
            run_step(&s)
        };
        // Three independent reads of one report: run them side by side.
        let (raw, mangled, sections) = std::thread::scope(|scope| {
            let raw = scope.spawn(|| step(import_args(&rep), plan.raw_csv(ctx)));
            let mangled =
                scope.spawn(|| step(import_mangled_args(&rep), plan.raw_mangled_csv(ctx)));
            let sections =
                scope.spawn(|| step(vec!["--list-sections".into()], ctx.run.ncu("sections.txt")));
            let join = |h: std::thread::ScopedJoinHandle<'_, Result<Outcome, String>>| {
                h.join()
                    .unwrap_or_else(|_| Err("import thread panicked".to_string()))
            };
            (join(raw), join(mangled), join(sections))
        });
        if let Err(why) = raw {
            if st.state == PassState::Ok {
                st.state = PassState::Failed;
                st.exit_code = exit_codes::TOOL;
                st.reason = Some(why);
            } else {
                st.warnings.push(why);
            }
        }
        st.warnings.extend(mangled.err());
        st.warnings.extend(sections.err());
    }
    Ok(st)
}

#[cfg(test)]
mod tests;
