//! NVTX expressions: what the user names (a range such as `decode`) turned into what each
//! profiler matches, and the file base name a range gives.

use crate::config::{Config, NcuTarget, NvtxStyle};
use crate::rundir::RunDir;

/// How a workload marks its ranges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// `nvtxRangePush`/`Pop`, what `torch.cuda.nvtx.range` emits.
    PushPop,
    /// `nvtxRangeStart`/`End`.
    StartEnd,
}

/// The ncu `--nvtx-include` expression for a user's range.
///
/// ncu matches push/pop ranges only as `NAME/`; `decode*` and `regex:decode` profile nothing
/// there. Start/end ranges match as the plain `NAME`. An expression that already has `/`, `@`
/// or a `regex:` prefix passes through.
pub(crate) fn ncu_include(
    name: &str,
    style: Style,
    domain: Option<&str>,
) -> (String, Option<String>) {
    let n = name.trim();
    if n.contains('/') || n.contains('@') || n.starts_with("regex:") {
        return (n.to_string(), None);
    }
    let prefix = domain
        .filter(|d| !d.is_empty())
        .map(|d| format!("{d}@"))
        .unwrap_or_default();
    let plain = |stem: &str| match style {
        Style::PushPop => format!("{prefix}{stem}/"),
        Style::StartEnd => format!("{prefix}{stem}"),
    };
    if let Some(stem) = n.strip_suffix('*').filter(|_| style == Style::PushPop) {
        let expr = plain(stem);
        let warning = format!(
            "ncu NVTX include `{n}` matches only start/end ranges and profiles nothing for push/pop ranges; using `{expr}`"
        );
        return (expr, Some(warning));
    }
    (plain(n), None)
}

/// The names of `names` close to `wanted` (a typo's distance: at most 3 edits, or a third of
/// its length), nearest first, each once; `wanted` itself first where it is there.
pub(crate) fn close_names<'a>(wanted: &str, names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let limit = 3.max(wanted.chars().count() / 3);
    let mut near: Vec<(usize, &str)> = names
        .map(|n| (strsim::damerau_levenshtein(wanted, n), n))
        .filter(|(d, _)| *d <= limit)
        .collect();
    // Stable: of equal distance, the order given.
    near.sort_by_key(|(d, _)| *d);
    let mut out: Vec<&str> = Vec::new();
    for (_, n) in near {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// The nsys `--nvtx-capture` expression: `NAME`, or `NAME@DOMAIN` with a domain.
pub(crate) fn nsys_capture(name: &str, domain: Option<&str>) -> String {
    let n = name.trim();
    match domain.filter(|d| !d.is_empty()) {
        Some(d) if !n.contains('@') => format!("{n}@{d}"),
        _ => n.to_string(),
    }
}

/// The style of `name` in nsys's nvtx_sum `Style` column; when `name` is not there (nsys
/// captured another range), the one style all captured ranges share.
pub(crate) fn style_from_nsys(
    ranges: &[crate::parse::nsys::RangeSum],
    name: &str,
) -> Option<Style> {
    let parse = |s: &str| match s {
        "PushPop" => Some(Style::PushPop),
        "StartEnd" => Some(Style::StartEnd),
        _ => None,
    };
    if let Some(r) = ranges.iter().find(|r| r.name() == name) {
        return r.style.as_deref().and_then(parse);
    }
    let styles: Vec<Style> = ranges
        .iter()
        .filter_map(|r| r.style.as_deref().and_then(parse))
        .collect();
    let first = *styles.first()?;
    styles.iter().all(|s| *s == first).then_some(first)
}

/// A file-system-safe base name for a range expression: `decode/` -> `decode`,
/// `dom@prefill/*/attn/` -> `prefill_attn`.
pub(crate) fn base_name(expr: &str) -> String {
    let e = expr.trim().trim_start_matches("regex:");
    let e = e.rsplit_once('@').map(|(_, r)| r).unwrap_or(e);
    let parts: Vec<String> = e
        .split('/')
        .map(|p| {
            p.chars()
                .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
                .collect::<String>()
        })
        .filter(|p| !p.is_empty() && p != "." && p != "..")
        .collect();
    if parts.is_empty() {
        "range".to_string()
    } else {
        parts.join("_")
    }
}

/// The NVTX style ncu's include expression is written for: configured, or (auto) the style
/// the nsys pass of this run saw, else push/pop (what `torch.cuda.nvtx.range` emits).
pub(crate) fn style_for(cfg: &Config, target: &NcuTarget, run: &RunDir) -> Style {
    match cfg.nvtx.style {
        NvtxStyle::Pushpop => Style::PushPop,
        NvtxStyle::Startend => Style::StartEnd,
        NvtxStyle::Auto => {
            let name = target.name.trim_end_matches('/');
            // One process writes summary_nvtx_sum.csv; a multi-rank run one per rank, of which
            // the first profiled rank's decides (the ranks run the same code).
            std::iter::once(run.nvtx_sum())
                .chain(
                    run.ranks()
                        .into_iter()
                        .map(|r| run.nsys_stats("nvtx_sum", Some(r))),
                )
                .find(|p| p.is_file())
                .and_then(|p| crate::parse::nsys::read_ranges(&p).ok())
                .and_then(|ranges| style_from_nsys(&ranges, name))
                .unwrap_or(Style::PushPop)
        }
    }
}

/// The NVTX include expression, the file base name it gives (`decode/` -> `decode`), and a
/// warning when the user's expression was changed.
pub(crate) fn include_and_base(
    target: &NcuTarget,
    style: Style,
) -> (Option<String>, String, Option<String>) {
    if !target.gated {
        return (None, "all".to_string(), None);
    }
    if let Some(raw) = &target.raw {
        return (Some(raw.clone()), base_name(raw), None);
    }
    let (expr, warning) = ncu_include(&target.name, style, target.domain.as_deref());
    let base = base_name(&expr);
    (Some(expr), base, warning)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_names_are_a_typo_away_nearest_first() {
        let names = ["step", "decode", "prefill", "decode_step", "decode"];
        assert_eq!(close_names("decod", names.into_iter()), ["decode"]);
        assert_eq!(close_names("decode", names.into_iter()), ["decode"]);
        assert_eq!(
            close_names("decodestep", names.into_iter()),
            ["decode_step"]
        );
        assert_eq!(
            close_names("decod", ["decoder", "decode"].into_iter()),
            ["decode", "decoder"]
        );
        assert!(close_names("generate", names.into_iter()).is_empty());
    }

    #[test]
    fn a_multi_rank_run_reads_the_style_from_its_first_rank() {
        let tmp = tempfile::tempdir().unwrap();
        let run = RunDir {
            path: tmp.path().to_path_buf(),
        };
        std::fs::create_dir(tmp.path().join("nsys")).unwrap();
        let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/nsys");
        let nvtx = std::fs::read_to_string(data.join("summary_nvtx_sum.csv"))
            .unwrap()
            .replace("PushPop", "StartEnd");
        std::fs::write(run.nsys_stats("nvtx_sum", Some(0)), nvtx).unwrap();
        std::fs::copy(
            data.join("summary_cuda_gpu_kern_sum.csv"),
            run.kern_sum(Some(0)),
        )
        .unwrap();
        let cfg = crate::config::resolve(&crate::config::Sources {
            embedded_only: true,
            ..Default::default()
        })
        .unwrap()
        .config;
        let target = crate::config::NcuTarget::of(&cfg);
        assert_eq!(style_for(&cfg, &target, &run), Style::StartEnd);
    }

    #[test]
    fn plain_names_become_push_pop_expressions() {
        let pp = Style::PushPop;
        assert_eq!(
            ncu_include("decode", pp, None),
            ("decode/".to_string(), None)
        );
        assert_eq!(
            ncu_include("decode", Style::StartEnd, None),
            ("decode".to_string(), None)
        );
        assert_eq!(ncu_include("decode", pp, Some("llm")).0, "llm@decode/");
        assert_eq!(
            ncu_include("decode", Style::StartEnd, Some("llm")).0,
            "llm@decode"
        );
        assert_eq!(ncu_include("decode/", pp, None).0, "decode/");
        assert_eq!(ncu_include("dom@decode/", pp, None).0, "dom@decode/");
        assert_eq!(
            ncu_include("prefill/*/attn/", pp, None).0,
            "prefill/*/attn/"
        );
        assert_eq!(ncu_include("regex:dec.*", pp, None).0, "regex:dec.*");
        let (expr, warn) = ncu_include("decode*", pp, None);
        assert_eq!(expr, "decode/");
        assert!(warn.unwrap().contains("decode/"));
        assert_eq!(
            ncu_include("decode*", Style::StartEnd, None),
            ("decode*".to_string(), None)
        );
    }

    #[test]
    fn nsys_capture_adds_the_domain() {
        assert_eq!(nsys_capture("decode", None), "decode");
        assert_eq!(nsys_capture("decode", Some("llm")), "decode@llm");
        assert_eq!(nsys_capture("decode@x", Some("llm")), "decode@x");
    }

    #[test]
    fn style_comes_from_the_nsys_summary() {
        let data = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/nsys/summary_nvtx_sum.csv");
        let ranges = crate::parse::nsys::read_ranges(&data).unwrap();
        assert_eq!(style_from_nsys(&ranges, "decode"), Some(Style::PushPop));
        assert_eq!(style_from_nsys(&ranges, "prefill"), Some(Style::PushPop));
        assert_eq!(style_from_nsys(&[], "decode"), None);
    }

    #[test]
    fn base_names_are_safe() {
        assert_eq!(base_name("decode/"), "decode");
        for (expr, range) in [
            ("decode/", Some("decode")),
            ("decode", Some("decode")),
            ("prefill/*/attn/", Some("attn")),
            ("prefill/attn/", Some("attn")),
            ("dom@prefill/attn/", Some("attn")),
            ("[step/", Some("step")),
            ("step/]", Some("step")),
            ("layer*", None),
            ("prefill/*/", None),
            ("regex:dec.*/", None),
        ] {
            assert_eq!(crate::config::range_of(expr).as_deref(), range, "{expr}");
        }
        assert_eq!(base_name("decode"), "decode");
        assert_eq!(base_name("dom@prefill/*/attn/"), "prefill_attn");
        assert_eq!(base_name("../../etc"), "etc");
        assert_eq!(base_name("*"), "range");
    }
}
