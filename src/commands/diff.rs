//! `stage2 diff RUN_A RUN_B`: per-kernel and per-range changes, diff.md and diff.json, and a
//! CI gate (`--fail-above PCT`, exit 7).

use std::path::{Path, PathBuf};

use crate::analysis::diff::{self, Scope};
use crate::analysis::summary::{self, Summary};
use crate::analysis::Artifacts;
use crate::error::{Error, Result};
use crate::exit_codes;
use crate::rundir::RunDir;

pub(crate) struct Args<'a> {
    pub(crate) run_a: &'a Path,
    pub(crate) run_b: &'a Path,
    pub(crate) out: Option<&'a Path>,
    pub(crate) fail_above: Option<f64>,
    pub(crate) scope: Scope,
}

struct Loaded {
    summary: Summary,
    env: Option<serde_json::Value>,
    config: serde_yaml::Value,
}

fn load(dir: &Path) -> Result<Loaded, Error> {
    let run = RunDir::open(dir)?;
    let config = super::report::run_config(&run)?;
    let tree = serde_yaml::to_value(&config).unwrap_or_default();
    let a = Artifacts::load(&run, config)?;
    Ok(Loaded {
        summary: summary::summary(&a),
        env: a.env.clone(),
        config: tree,
    })
}

pub(crate) fn run(args: &Args) -> Result<i32> {
    let (a, b) = (load(args.run_a)?, load(args.run_b)?);
    let d = diff::diff(
        &a.summary,
        &b.summary,
        a.env.as_ref(),
        b.env.as_ref(),
        &a.config,
        &b.config,
    );
    let out: PathBuf = args
        .out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| args.run_b.to_path_buf());
    std::fs::create_dir_all(&out).map_err(|e| Error::io("create", &out, e))?;
    let write = |name: &str, text: String| {
        crate::rundir::status::write_atomic(&out.join(name), text.as_bytes())
            .map_err(|e| Error::io("write", out.join(name), e))
    };
    write("diff.md", crate::report::diff::to_markdown(&d, 30))?;
    write(
        "diff.json",
        serde_json::to_string_pretty(&d).unwrap_or_default() + "\n",
    )?;
    for w in &d.warnings {
        tracing::warn!("runs may not be comparable: {w}");
    }
    let change = d
        .total_delta_pct
        .map(|p| format!("{p:+.1}%"))
        .unwrap_or_else(|| "n/a".into());
    crate::outln!(
        "total kernel time {change}; largest change: {}; wrote {}/diff.md and diff.json",
        d.kernels
            .first()
            .filter(|k| k.delta_ns != 0.0)
            .map(|k| crate::model::display_name(&k.name))
            .unwrap_or_else(|| "none".into()),
        out.display()
    );
    if let Some(limit) = args.fail_above {
        let bad = diff::regressions(&d, args.scope, limit);
        if !bad.is_empty() {
            crate::errln!("stage2: regression above {limit}%: {}", bad.join("; "));
            return Ok(exit_codes::REGRESSION);
        }
    }
    Ok(exit_codes::OK)
}
