//! When a pass captures nothing, say what the workload really emits: the NVTX ranges with
//! their styles and counts (from this run's nsys report, or a short ungated nsys pass), and
//! the name closest to the one asked for.

use std::path::Path;

use crate::parse::nsys::{read_ranges, RangeSum};
use crate::passes::process;
use crate::passes::{append_cmd_txt, Ctx};

/// "the workload emits these NVTX ranges: decode (PushPop, 1x), ...; closest to `decod`:
/// `decode`". `domain`: the one the capture or ncu's range names (None: the default domain).
pub(crate) fn describe(ranges: &[RangeSum], wanted: &str, domain: Option<&str>) -> String {
    if ranges.is_empty() {
        return "the workload emitted no NVTX ranges at all: mark prefill/decode with torch.cuda.nvtx.range (or nvtx.annotate)".to_string();
    }
    let listed = crate::text::listed(
        ranges.iter().map(|r| {
            let at = match domain_of(r) {
                "" => String::new(),
                d => format!(" in domain {d}"),
            };
            let style = r.style.as_deref().unwrap_or("?");
            format!("{} ({style}, {}x{at})", r.name(), r.instances)
        }),
        ", ",
    );
    let mut text = format!("the workload emits these NVTX ranges: {listed}");
    let bare = wanted
        .split('@')
        .next()
        .unwrap_or(wanted)
        .trim_end_matches('/')
        .trim_end_matches('*');
    let close = crate::analysis::nvtx::close_names(bare, ranges.iter().map(|r| r.name()));
    match close.first() {
        Some(&name) if name == bare => text.push_str(&exists(ranges, name, domain)),
        Some(name) => text.push_str(&format!("; did you mean `{name}`?")),
        None => {}
    }
    text
}

/// The domain of a range as nsys's summary names it (`dom:decode`), "" for the default one.
fn domain_of(r: &RangeSum) -> &str {
    r.range.split_once(':').map(|(d, _)| d).unwrap_or("")
}

/// What to change where a range of the name asked for exists: its domain, as the export
/// names it, where that is not the one asked for; else the expression's form.
fn exists(ranges: &[RangeSum], name: &str, wanted: Option<&str>) -> String {
    let same: Vec<&RangeSum> = ranges.iter().filter(|r| r.name() == name).collect();
    let style = same
        .first()
        .and_then(|r| r.style.clone())
        .unwrap_or_default();
    let wanted = wanted.unwrap_or("");
    let domains: Vec<&str> = same.iter().map(|r| domain_of(r)).collect();
    if wanted == "*" || domains.contains(&wanted) {
        return format!(
            "; `{name}` exists ({style}), so check the expression's form: push/pop ranges match in ncu as `{name}/`, start/end ranges as `{name}`"
        );
    }
    match domains.first() {
        Some(&"") | None => format!(
            "; `{name}` exists ({style}) in the default domain, not in domain `{wanted}`: drop `@{wanted}` from the range (and nvtx.domain)"
        ),
        Some(d) => {
            let asked = match wanted {
                "" => "the default domain".to_string(),
                w => format!("domain `{w}`"),
            };
            format!(
                "; `{name}` exists ({style}) in domain `{d}`, not in {asked}: name that domain (nvtx.domain={d}; `{name}@{d}` for nsys, `{d}@{name}/` for ncu)"
            )
        }
    }
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
        let text = describe(&real(), "decod", None);
        assert!(text.contains("decode (PushPop, 1x)"), "{text}");
        assert!(text.contains("did you mean `decode`?"), "{text}");
        let text = describe(&real(), "decode*", None);
        assert!(
            text.contains("`decode` exists (PushPop), so check"),
            "{text}"
        );
        assert!(!describe(&real(), "completely_other", None).contains("did you mean"));
        assert!(describe(&[], "x", None).contains("no NVTX ranges"));
    }

    fn range(range: String) -> RangeSum {
        RangeSum {
            range,
            style: Some("PushPop".into()),
            time_pct: None,
            total_ns: 1.0,
            instances: 1,
            avg_ns: 1.0,
            min_ns: None,
            max_ns: None,
        }
    }

    /// XLA's compiles under nsys emit thousands of ranges (domain TSL): the hint names the
    /// first and counts the rest, where it was a line of megabytes.
    #[test]
    fn thousands_of_ranges_make_one_short_line() {
        let ranges: Vec<RangeSum> = (0..40_000)
            .map(|i| range(format!("TSL:XlaCompile/module_{i:05}")))
            .collect();
        let text = describe(&ranges, "decode", None);
        assert!(text.len() < 1000, "{} bytes", text.len());
        assert!(text.ends_with("and 39988 more"), "{text}");
    }

    /// The domain hint follows the export: the domain the range has there, or none where it
    /// lives in the default domain.
    #[test]
    fn the_domain_hint_follows_the_export() {
        let text = describe(&real(), "decode", Some("TSL"));
        assert!(
            text.contains("in the default domain, not in domain `TSL`: drop `@TSL`"),
            "{text}"
        );
        let tsl = [range("TSL:step".into())];
        let text = describe(&tsl, "step", None);
        assert!(
            text.contains("in domain `TSL`, not in the default domain")
                && text.contains("`step@TSL`"),
            "{text}"
        );
        let text = describe(&tsl, "step", Some("other"));
        assert!(text.contains("not in domain `other`"), "{text}");
        let text = describe(&tsl, "step", Some("TSL"));
        assert!(text.contains("check the expression's form"), "{text}");
    }
}
