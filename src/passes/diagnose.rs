//! When a pass captures nothing, say what the workload really emits: the NVTX ranges with
//! their styles and counts (from this run's nsys report, or a short ungated nsys pass), and
//! the name closest to the one asked for.

use std::path::Path;

use crate::parse::nsys::{read_ranges, RangeSum};
use crate::passes::process;
use crate::passes::{append_cmd_txt, Ctx};

/// "the workload emits these NVTX ranges: decode (PushPop, 1x), ...; closest to `decod`: `decode`".
pub(crate) fn describe(ranges: &[RangeSum], wanted: &str) -> String {
    if ranges.is_empty() {
        return "the workload emitted no NVTX ranges at all: mark prefill/decode with torch.cuda.nvtx.range (or nvtx.annotate)".to_string();
    }
    let listed: Vec<String> = ranges
        .iter()
        .map(|r| {
            let domain = r.range.split_once(':').map(|(d, _)| d).unwrap_or("");
            let at = if domain.is_empty() {
                String::new()
            } else {
                format!(" in domain {domain}")
            };
            format!(
                "{} ({}, {}x{at})",
                r.name(),
                r.style.as_deref().unwrap_or("?"),
                r.instances
            )
        })
        .collect();
    let mut text = format!(
        "the workload emits these NVTX ranges: {}",
        listed.join(", ")
    );
    let bare = wanted
        .split('@')
        .next()
        .unwrap_or(wanted)
        .trim_end_matches('/')
        .trim_end_matches('*');
    let closest = ranges
        .iter()
        .map(|r| (strsim::damerau_levenshtein(bare, r.name()), r.name()))
        .min_by_key(|(d, _)| *d);
    match closest {
        Some((0, name)) => {
            let style = ranges
                .iter()
                .find(|r| r.name() == name)
                .and_then(|r| r.style.clone());
            text.push_str(&format!(
                "; `{name}` exists ({}), so check the expression's form: push/pop ranges match in ncu as `{name}/`, start/end ranges as `{name}`, and a named domain needs NAME@DOMAIN (nsys) or DOMAIN@NAME/ (ncu)",
                style.unwrap_or_default()
            ));
        }
        Some((d, name)) if d <= 3.max(bare.len() / 3) => {
            text.push_str(&format!("; did you mean `{name}`?"));
        }
        _ => {}
    }
    text
}

/// The ranges in this run's nsys summary, when it has one.
pub(crate) fn from_run(ctx: &Ctx) -> Option<Vec<RangeSum>> {
    read_ranges(&ctx.run.nvtx_sum()).ok()
}

/// The ranges this run's diagnosis found (the ungated pass of a capture that never opened),
/// when none of them, in any domain, is named `range`: a whole run of the workload never
/// opened it. None without a diagnosis, or where one of them is.
pub(crate) fn diagnosed_without(ctx: &Ctx, range: &str) -> Option<Vec<RangeSum>> {
    let ranges = read_ranges(&ctx.run.nsys("diagnose_nvtx_sum.csv")).ok()?;
    (!holds(&ranges, range)).then_some(ranges)
}

/// Whether `ranges` hold one named `wanted` (in any domain, in any of ncu's forms).
fn holds(ranges: &[RangeSum], wanted: &str) -> bool {
    let bare = crate::analysis::nvtx::base_name(wanted);
    ranges
        .iter()
        .any(|r| crate::analysis::nvtx::base_name(r.name()) == bare)
}

/// A short ungated nsys pass (NVTX only) that lists every range the workload emits.
pub(crate) fn ungated(ctx: &Ctx, nsys_path: &Path) -> Option<Vec<RangeSum>> {
    let base = ctx.run.nsys("diagnose");
    let csv = ctx.run.nsys("diagnose_nvtx_sum.csv");
    if csv.is_file() {
        return read_ranges(&csv).ok();
    }
    let prog = nsys_path.display().to_string();
    let mut profile = vec![
        "profile".to_string(),
        "--trace=nvtx".to_string(),
        "--sample=none".to_string(),
        "--cpuctxsw=none".to_string(),
        "-o".to_string(),
        base.display().to_string(),
    ];
    profile.extend(ctx.workload.argv.iter().cloned());
    tracing::info!(
        "diagnosis: a short ungated nsys pass to list the NVTX ranges the workload emits"
    );
    let cmd_txt = ctx.run.nsys("cmd.txt");
    let log = ctx.run.nsys("diagnose.log");
    let mut spec = ctx.spec(nsys_path, profile.clone(), log.clone());
    spec.echo = false;
    spec.timeout = ctx.cfg.nsys_timeout();
    let _ = append_cmd_txt(
        &ctx.workload.env,
        &cmd_txt,
        &[vec![prog.clone()], profile].concat(),
    );
    process::run(&spec).ok()?;
    let rep = crate::rundir::find_nsys_report(&base)?;
    let stats = vec![
        "stats".to_string(),
        "--report".to_string(),
        "nvtx_sum".to_string(),
        "--format".to_string(),
        "csv".to_string(),
        "--force-export=true".to_string(),
        "-o".to_string(),
        base.display().to_string(),
        rep.display().to_string(),
    ];
    let _ = append_cmd_txt(
        &ctx.workload.env,
        &cmd_txt,
        &[vec![prog], stats.clone()].concat(),
    );
    let mut spec = ctx.spec(nsys_path, stats, log);
    spec.echo = false;
    process::run(&spec).ok()?;
    read_ranges(&csv).ok()
}

/// The ranges to show: this run's nsys summary when it has `wanted`, else (when allowed) an
/// ungated nsys pass.
pub(crate) fn ranges_for(
    ctx: &Ctx,
    nsys_path: Option<&Path>,
    wanted: &str,
) -> Option<Vec<RangeSum>> {
    from_run(ctx).filter(|r| holds(r, wanted)).or_else(|| {
        let path = nsys_path.filter(|_| ctx.cfg.nsys.diagnose)?;
        ungated(ctx, path)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn real() -> Vec<RangeSum> {
        let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/nsys/summary_nvtx_sum.csv");
        read_ranges(&p).unwrap()
    }

    #[test]
    fn lists_ranges_and_suggests_the_closest() {
        let text = describe(&real(), "decod");
        assert!(text.contains("decode (PushPop, 1x)"), "{text}");
        assert!(text.contains("did you mean `decode`?"), "{text}");
        let text = describe(&real(), "decode*");
        assert!(text.contains("`decode` exists (PushPop)"), "{text}");
        assert!(!describe(&real(), "completely_other").contains("did you mean"));
        assert!(describe(&[], "x").contains("no NVTX ranges"));
    }
}
