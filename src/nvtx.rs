//! NVTX expressions: what the user names (a range such as `decode`) turned into what each
//! profiler matches, and the file base name a range gives.

/// The ncu `--nvtx-include` expression for a user's range.
///
/// ncu matches push/pop ranges (what `torch.cuda.nvtx.range` emits) only as `NAME/`; `decode*`
/// and `regex:decode` profile nothing there. A plain name becomes `NAME/`; an expression that
/// already has `/`, `@` or a `regex:` prefix passes through.
pub fn ncu_include(name: &str) -> (String, Option<String>) {
    let n = name.trim();
    if n.contains('/') || n.contains('@') || n.starts_with("regex:") {
        return (n.to_string(), None);
    }
    if let Some(stem) = n.strip_suffix('*') {
        let expr = format!("{stem}/");
        let warning = format!(
            "ncu NVTX include `{n}` matches only start/end ranges and profiles nothing for push/pop ranges; using `{expr}`"
        );
        return (expr, Some(warning));
    }
    (format!("{n}/"), None)
}

/// A file-system-safe base name for a range expression: `decode/` -> `decode`,
/// `dom@prefill/*/attn/` -> `prefill_attn`.
pub fn base_name(expr: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_become_push_pop_expressions() {
        assert_eq!(ncu_include("decode"), ("decode/".to_string(), None));
        assert_eq!(ncu_include("decode/").0, "decode/");
        assert_eq!(ncu_include("dom@decode/").0, "dom@decode/");
        assert_eq!(ncu_include("regex:dec.*").0, "regex:dec.*");
        let (expr, warn) = ncu_include("decode*");
        assert_eq!(expr, "decode/");
        assert!(warn.unwrap().contains("decode/"));
    }

    #[test]
    fn base_names_are_safe() {
        assert_eq!(base_name("decode/"), "decode");
        assert_eq!(base_name("decode"), "decode");
        assert_eq!(base_name("dom@prefill/*/attn/"), "prefill_attn");
        assert_eq!(base_name("../../etc"), "etc");
        assert_eq!(base_name("*"), "range");
    }
}
