//! Secrets never reach a run directory: values of secret-named variables are redacted (or, in
//! a pasteable command line, taken from the user's own shell), and credentials are cut out of
//! URLs, in config.yaml, env.json, cmd.txt, the pass logs and the reports.

const SECRET_MARKERS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "KEY",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "AUTH",
];
pub(crate) const REDACTED: &str = "<redacted>";

pub(crate) fn is_secret(name: &str) -> bool {
    let up = name.to_ascii_uppercase();
    SECRET_MARKERS.iter().any(|m| up.contains(m))
}

/// `https://user:pass@host/x` -> `https://<redacted>@host/x`, anywhere in the text.
pub(crate) fn redact_url(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| c == '/' || c.is_whitespace())
            .unwrap_or(tail.len());
        match tail[..end].rfind('@') {
            Some(at) => {
                out.push_str(REDACTED);
                out.push_str(&tail[at..end]);
            }
            None => out.push_str(&tail[..end]),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// A command-line argument with secrets cut: URL credentials, and the value of an override
/// that sets a secret-named variable (`+workload.env.HF_TOKEN=...`).
pub(crate) fn redact_arg(arg: &str) -> String {
    let key = arg.trim_start_matches(['+', '~']);
    if let Some((k, _)) = key.split_once('=') {
        if let Some(name) = k.strip_prefix("workload.env.") {
            if is_secret(name) {
                return format!("{}={REDACTED}", &arg[..arg.len() - key.len() + k.len()]);
            }
        }
    }
    redact_url(arg)
}

/// `text` with every occurrence of the given secret values replaced (values shorter than 4
/// characters are left: they would redact ordinary text).
pub(crate) fn redact_values<'a>(text: &str, values: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = text.to_string();
    for v in values {
        if v.len() >= 4 {
            out = out.replace(v, REDACTED);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_overrides_of_secret_names_lose_their_values() {
        assert_eq!(
            redact_arg("+workload.env.HF_TOKEN=hf_abc"),
            "+workload.env.HF_TOKEN=<redacted>"
        );
        assert_eq!(
            redact_arg("workload.env.OMP_NUM_THREADS=4"),
            "workload.env.OMP_NUM_THREADS=4"
        );
        assert_eq!(redact_arg("https://u:p@h/x"), "https://<redacted>@h/x");
        assert_eq!(
            redact_values("tok=hf_abcdef ok", ["hf_abcdef"]),
            "tok=<redacted> ok"
        );
    }
}
