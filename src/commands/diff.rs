//! `stage2 diff RUN_A RUN_B`: per-kernel and per-range changes as Markdown on stdout (JSON
//! with `--json`; `--out FILE` writes the same to a file), and a CI gate (`--fail-above PCT`): exit 7 for a regression
//! outside the noise, 10 for one the noise could explain, 9 when the runs cannot be compared.

use std::path::Path;

use crate::analysis::diff::{self, Scope};
use crate::analysis::summary::{self, Summary};
use crate::analysis::Artifacts;
use crate::error::{Error, Result};
use crate::exit_codes;
use crate::findings::{span, Claim, Finding};
use crate::rundir::RunDir;

pub(crate) struct Args<'a> {
    pub(crate) run_a: &'a Path,
    pub(crate) run_b: &'a Path,
    pub(crate) out: Option<&'a Path>,
    pub(crate) json: bool,
    pub(crate) fail_above: Option<f64>,
    pub(crate) scope: Scope,
    pub(crate) force: bool,
}

struct Loaded {
    summary: Summary,
    groups: Vec<crate::analysis::instances::RangeGroups>,
    env: Option<serde_json::Value>,
    config: serde_yaml::Value,
    /// Whether the nsys pass sampled GPU metrics (None: not recorded).
    sampled: Option<bool>,
    /// Its phases whose instances change time over the run (instance_trend findings).
    trends: Vec<Finding>,
}

fn load(dir: &Path) -> Result<Loaded, Error> {
    let run = RunDir::open(dir)?;
    let config = super::report::run_config(&run)?;
    let recorded = crate::rundir::status::Status::read(&run.path)
        .is_some_and(|s| s.passes.get("nsys").is_some_and(|p| p.nsys.is_some()));
    let tree = serde_yaml::to_value(&config).unwrap_or_default();
    let a = Artifacts::load(&run, config)?;
    let summary = summary::summary(&a);
    check_values(&run, &summary)?;
    let trends = crate::findings::document::decide(&a)
        .findings
        .made()
        .filter(|f| matches!(f.claim, Claim::InstanceTrend { .. }))
        .cloned()
        .collect();
    Ok(Loaded {
        summary,
        groups: a.instance_groups.clone(),
        env: a.env.clone(),
        config: tree,
        sampled: recorded.then(|| {
            let s = a.record.nsys.sampling.as_ref();
            s.and_then(|s| s.sampled_devices()).is_some()
        }),
        trends,
    })
}

/// A compared phase whose instances change time over the run in one side, where the sides ran
/// different numbers of its instances: its mean per instance then differs with the length
/// alone. Each end's median from the side's instance_trend finding.
fn trend_advice(side: &str, l: &Loaded, a: &Summary, b: &Summary) -> Vec<String> {
    let count = |s: &Summary, name: &str| {
        s.ranges
            .iter()
            .find(|r| r.name == name)
            .map(|r| r.instances)
    };
    let mut out = Vec::new();
    for f in &l.trends {
        let Claim::InstanceTrend { early, late, .. } = f.claim else {
            continue;
        };
        let Some(name) = f.scope.range.as_deref() else {
            continue;
        };
        let (Some(na), Some(nb)) = (count(a, name), count(b, name)) else {
            continue;
        };
        if na == nb {
            continue;
        }
        let Some((e, m)) = f.trend_ends() else {
            continue;
        };
        out.push(format!(
            "{side}'s `{name}` changes time over the run: a median of {} over {} and {} over {} (instance_trend); RUN_A has {na} instances of it and RUN_B {nb}, so a change in its time per instance can be the runs' lengths. Runs of one length compare like with like",
            e.text,
            span(early),
            m.text,
            span(late)
        ));
    }
    out
}

/// Times that no profiler writes (negative, NaN, infinite) are bad input, not a -100% change.
fn check_values(run: &RunDir, s: &Summary) -> Result<(), Error> {
    let source = |key: &str| {
        s.sources
            .get(key)
            .map(|f| run.path.join(f).display().to_string())
            .unwrap_or_else(|| run.path.display().to_string())
    };
    let bad = |v: f64| !v.is_finite() || v < 0.0;
    if let Some(k) = s
        .kernels
        .iter()
        .find(|k| bad(k.total_time_ns) || bad(k.avg_time_ns))
    {
        return Err(Error::parse(
            source("kernels"),
            None,
            format!(
                "kernel {}: time {} ns is not a finite non-negative number",
                crate::model::display_name(&k.name),
                k.total_time_ns
            ),
        ));
    }
    if let Some(r) = s.ranges.iter().find(|r| bad(r.total_ns)) {
        return Err(Error::parse(
            source("ranges"),
            None,
            format!(
                "range {}: wall time {} ns is not a finite non-negative number",
                r.name, r.total_ns
            ),
        ));
    }
    Ok(())
}

/// Why the two runs cannot be compared, naming the side; empty when they can.
fn refusals(args: &Args, a: &Summary, b: &Summary) -> Vec<String> {
    let mut out = Vec::new();
    for (side, path, s) in [("RUN_A", args.run_a, a), ("RUN_B", args.run_b, b)] {
        if let Some(why) = diff::incomplete(s) {
            out.push(format!("{side} {}: {why}", path.display()));
        }
    }
    if out.is_empty() {
        out.extend(diff::different_basis(a, b));
    }
    out
}

pub(crate) fn run(args: &Args) -> Result<i32> {
    let (a, b) = (load(args.run_a)?, load(args.run_b)?);
    let refused = refusals(args, &a.summary, &b.summary);
    if !refused.is_empty() && !args.force {
        tracing::error!(
            "cannot compare these runs (--force compares anyway):\n  {}",
            crate::text::listed(&refused, "\n  ")
        );
        if args.json {
            super::result::refusal(
                exit_codes::NOT_COMPARABLE,
                "not-comparable",
                &crate::text::listed(&refused, "; "),
            );
        }
        return Ok(exit_codes::NOT_COMPARABLE);
    }
    let mut warnings: Vec<String> = refused
        .into_iter()
        .map(|r| format!("{r} (compared with --force)"))
        .collect();
    warnings.extend(diff::comparability(
        a.env.as_ref(),
        b.env.as_ref(),
        &a.config,
        &b.config,
    ));
    let (ia, ib) = (&a.summary.ncu_include, &b.summary.ncu_include);
    if ia != ib {
        let show = |i: &Option<String>| i.clone().unwrap_or_else(|| "(not gated)".into());
        warnings.push(format!(
            "ncu's NVTX include differs: {} vs {}",
            show(ia),
            show(ib)
        ));
    }
    let reused = |l: &Loaded| -> Option<String> {
        Some(l.summary.gpu_metrics.as_ref()?.reused.as_ref()?.run.clone())
    };
    let (ra, rb) = (reused(&a), reused(&b));
    warnings.extend(diff::sampling(
        [a.sampled, b.sampled],
        [ra.as_deref(), rb.as_deref()],
    ));
    let mut d = diff::diff(&a.summary, &b.summary, warnings);
    d.advice = [("RUN_A", &a), ("RUN_B", &b)]
        .into_iter()
        .flat_map(|(side, l)| diff::warm_ups(side, &l.summary, &l.groups, &d.ranges))
        .collect();
    for (side, l) in [("RUN_A", &a), ("RUN_B", &b)] {
        d.advice
            .extend(trend_advice(side, l, &a.summary, &b.summary));
    }
    let markdown = crate::report::diff::to_markdown(&d, 30);
    let json = serde_json::to_string_pretty(&d).unwrap_or_default() + "\n";
    // stdout is the Markdown, or the JSON with `--json`; a closed pipe (`| head`) is not an
    // error. `--out -` is stdout, where it goes anyway.
    let shown = if args.json { &json } else { &markdown };
    let _ = crate::out::stdout(shown);
    if let Some(p) = args.out.filter(|p| *p != Path::new("-")) {
        crate::rundir::status::write_atomic(p, shown.as_bytes())
            .map_err(|e| Error::io("write", p, e))?;
    }
    for w in &d.warnings {
        tracing::warn!("runs may not be comparable: {w}");
    }
    for a in &d.advice {
        tracing::warn!("{a}");
    }
    if d.passes_a < 2 || d.passes_b < 2 {
        tracing::warn!(
            "noise unknown: {} timed pass(es) in RUN_A, {} in RUN_B; `stage2 profile --repeat N` (N >= 2 on both) lets the gate test changes against the noise",
            d.passes_a,
            d.passes_b
        );
    }
    let (new, removed) = diff::one_sided(&d);
    tracing::info!(
        "diff: total kernel time {}; largest change: {}; {new} new and {removed} removed kernels",
        d.total_delta_pct
            .map(|p| format!("{p:+.1}%"))
            .unwrap_or_else(|| "n/a".into()),
        d.kernels
            .first()
            .filter(|k| k.delta_ns != 0.0)
            .map(|k| k.label.clone())
            .unwrap_or_else(|| "none".into()),
    );
    let Some(limit) = args.fail_above else {
        return Ok(exit_codes::OK);
    };
    let g = diff::gate(&d, args.scope, limit);
    if !g.regressions.is_empty() {
        let listed = crate::text::listed(&g.regressions, "; ");
        tracing::error!("regression above {limit}%: {listed}");
        return Ok(exit_codes::REGRESSION);
    }
    if !g.inconclusive.is_empty() {
        tracing::warn!(
            "inconclusive: above {limit}% but within the noise: {}",
            crate::text::listed(&g.inconclusive, "; ")
        );
        return Ok(exit_codes::INCONCLUSIVE);
    }
    Ok(exit_codes::OK)
}
