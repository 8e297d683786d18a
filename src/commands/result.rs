//! What `profile` and `report` leave on stdout for scripts: the run directory as the one line
//! (`RUN=$(stage2 profile ...)`), or with `--json` one object: the run directory, its state and
//! exit code, the reports written, and the findings from its summary.json. Human lines go to
//! stderr.

use std::path::Path;

use serde::Serialize;

use crate::rundir::RunDir;

#[derive(Serialize)]
struct Result<'a> {
    run_dir: String,
    state: &'a str,
    exit_code: i32,
    reports: Vec<&'static str>,
    /// summary.json's findings; null when it could not be read, with why beside it.
    findings: serde_json::Value,
    /// summary.json's `rules`: the words and threshold of each rule a finding cites, by id.
    rules: serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    findings_error: Option<String>,
}

/// The reports the run directory holds now.
pub(crate) fn written(dir: &Path) -> Vec<&'static str> {
    crate::report::file_names()
        .filter(|f| dir.join(f).is_file())
        .collect()
}

/// Print the result on stdout, and the human line on stderr.
pub(crate) fn announce(run: &RunDir, state: &str, code: i32, json: bool) {
    let reports = written(&run.path);
    let where_ = match reports.is_empty() {
        true => "no reports written".to_string(),
        false => format!("{}/{}", run.path.display(), reports.join(", ")),
    };
    if let Some(h) = headline(&run.file("stakeholder_summary.md")) {
        tracing::info!("{h}");
    }
    tracing::info!("{state}: {where_}");
    if !json {
        crate::outln!("{}", run.path.display());
        return;
    }
    let ((findings, rules), findings_error) = match findings(&run.file("summary.json")) {
        Ok(f) => (f, None),
        Err(why) => (
            (serde_json::Value::Null, serde_json::Value::Null),
            Some(why),
        ),
    };
    let r = Result {
        run_dir: run.path.display().to_string(),
        state,
        exit_code: code,
        reports,
        findings,
        rules,
        findings_error,
    };
    crate::outln!("{}", serde_json::to_string(&r).unwrap_or_default());
}

/// The stakeholder summary's headline as console text (its Markdown escapes undone), so the
/// answer is on the console as `nsys --stats` users expect, not only in the files.
fn headline(summary: &Path) -> Option<String> {
    let text = crate::files::read_capped(summary, 1 << 20).ok()?;
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("**Headline:** "))?;
    // A replayed capture's headline is not this workload's: said on the same line.
    let replayed = match text.contains("**Replayed capture:**") {
        true => "a replayed capture's figures, not this workload's; ",
        false => "",
    };
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            // A footnote mark ("[^2]") points into the file; the console line points to the
            // file as a whole.
            '[' if chars.peek() == Some(&'^') => {
                for d in chars.by_ref() {
                    if d == ']' {
                        break;
                    }
                }
            }
            c => out.push(c),
        }
    }
    Some(format!(
        "headline ({replayed}sources: stakeholder_summary.md): {}",
        crate::term::visible(&out.replace("**", ""))
    ))
}

pub(crate) use crate::out::json_refusal as refusal;

/// summary.json's findings and the rules they cite: none when the run wrote no summary; an
/// error, never an empty list, when it is there and cannot be read (too large, not JSON).
fn findings(path: &Path) -> std::result::Result<(serde_json::Value, serde_json::Value), String> {
    use serde_json::{json, Value};
    if !path.exists() {
        return Ok((json!([]), json!({})));
    }
    let text = crate::files::read_capped(path, crate::files::RUN_FILE_CAP)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut v: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
    let mut part = |key: &str, empty: Value| v.get_mut(key).map_or(empty, Value::take);
    Ok((part("findings", json!([])), part("rules", json!({}))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_that_cannot_be_read_is_an_error_never_an_empty_list() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("summary.json");
        let none = (serde_json::json!([]), serde_json::json!({}));
        assert_eq!(findings(&p), Ok(none), "no summary: no findings");
        std::fs::write(
            &p,
            r#"{"findings": [{"kind": "x", "rule": "r"}], "rules": {"r": {"text": "t"}}}"#,
        )
        .unwrap();
        let (f, rules) = findings(&p).unwrap();
        assert_eq!(f, serde_json::json!([{"kind": "x", "rule": "r"}]));
        assert_eq!(rules, serde_json::json!({"r": {"text": "t"}}));
        // Over the cap (a sparse file of 65 MiB of zeros): said, not [].
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(65 << 20).unwrap();
        let e = findings(&p).unwrap_err();
        assert!(e.contains("larger than 64 MiB"), "{e}");
        std::fs::write(&p, "{").unwrap();
        assert!(findings(&p).unwrap_err().contains("not JSON"));
    }
}
