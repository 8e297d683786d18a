//! Secrets never reach a run directory: values of secret-named variables are redacted (or, in
//! a pasteable command line, taken from the user's own shell), and credentials are cut out of
//! URLs, in config.yaml, env.json, cmd.txt, the pass logs and the reports. [`scrub`] is the one
//! step every text headed for the run directory, the metrics cache or the console passes
//! through: every file by way of [`Scrubbed`] (stage2's own through `write_atomic`, a child's
//! output as it is written), the console through its writer.

use std::sync::RwLock;

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
        if v.len() >= 4 && out.contains(v) {
            out = out.replace(v, REDACTED);
        }
    }
    out
}

/// Secret values known to this process: those of secret-named variables in stage2's own
/// environment (always) and in the workload's and the profilers' (`learn`).
static KNOWN: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Remember the values of the secret-named variables among `vars` (`NAME`, `value`).
pub(crate) fn learn<'a>(vars: impl IntoIterator<Item = (&'a str, &'a str)>) {
    let mut known = KNOWN.write().unwrap_or_else(|p| p.into_inner());
    for (k, v) in vars {
        if is_secret(k) && v.len() >= 4 && !known.iter().any(|x| x == v) {
            known.push(v.to_string());
        }
    }
}

/// Learn the process environment's secrets, once.
fn learn_env() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let vars: Vec<(String, String)> = crate::files::env_vars().collect();
        learn(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    });
}

/// `text` with every secret cut: known secret values, URL credentials, the value of any
/// `NAME=value` whose NAME is secret-named (`--env-var=API_TOKEN=...`; a `${NAME...}` that
/// reads it from the user's shell is kept), and token shapes that say what they are (Hugging
/// Face `hf_...`, AWS `AKIA...`, GitHub `ghp_...`).
pub(crate) fn scrub(text: &str) -> String {
    scrub_cow(text).into_owned()
}

/// [`scrub`] without a copy of text that holds nothing to cut: the reports' lines go through
/// it one by one (millions for a large summary.json), and most hold no `=`, `://`, secret
/// value or token prefix. Each step runs only where a fast test finds its trigger.
pub(crate) fn scrub_cow(text: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    learn_env();
    let mut out = Cow::Borrowed(text);
    {
        let known = KNOWN.read().unwrap_or_else(|p| p.into_inner());
        if known
            .iter()
            .any(|v| v.len() >= 4 && out.contains(v.as_str()))
        {
            out = Cow::Owned(redact_values(&out, known.iter().map(String::as_str)));
        }
    }
    if out.contains("://") {
        out = Cow::Owned(redact_url(&out));
    }
    if out.contains('=') {
        out = Cow::Owned(redact_assignments(&out));
    }
    if SHAPES.iter().any(|(prefix, ..)| out.contains(prefix)) {
        out = Cow::Owned(redact_shapes(&out));
    }
    out
}

/// [`scrub`] of bytes: a line that is not UTF-8 is read lossily where it holds something to
/// cut, and kept as it is otherwise (output need not be text).
fn scrub_bytes(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    use std::borrow::Cow;
    let text = String::from_utf8_lossy(bytes);
    match scrub_cow(&text) {
        Cow::Borrowed(_) => Cow::Borrowed(bytes),
        Cow::Owned(clean) => Cow::Owned(clean.into_bytes()),
    }
}

/// A writer that passes what it is given through [`scrub`] a block of whole lines at a time,
/// so a secret is never cut in two: the one way text reaches a file of the run, whether stage2
/// made it (`write_atomic`) or a child printed it (the pass logs, a tool's exports). Lines end
/// in `\n`, or `\r` (a child's progress line).
pub(crate) struct Scrubbed<W: std::io::Write> {
    inner: W,
    pending: Vec<u8>,
    /// Whole lines go out once this many bytes are pending (0: as soon as they are written).
    block: usize,
    /// A line that grows past this with no end goes out as it is so far.
    longest: usize,
}

/// Whole lines of stage2's own files are scrubbed in blocks of about this many bytes: one pass
/// over a block costs what one pass over a line does.
pub(crate) const SCRUB_BLOCK: usize = 64 * 1024;

impl<W: std::io::Write> Scrubbed<W> {
    /// For a file stage2 makes: blocks of lines, a line kept whole however long (compact JSON).
    pub(crate) fn file(inner: W) -> Self {
        Scrubbed {
            inner,
            pending: Vec::new(),
            block: SCRUB_BLOCK,
            longest: usize::MAX,
        }
    }

    /// For a child's output: each line on disk as it comes (a log read while the pass runs,
    /// or left by a stage2 that was killed), and output with no line end never held whole.
    pub(crate) fn output(inner: W) -> Self {
        Scrubbed {
            inner,
            pending: Vec::new(),
            block: 0,
            longest: 1 << 20,
        }
    }

    /// Write out what is pending (the last line need not end) and flush.
    pub(crate) fn finish(&mut self) -> std::io::Result<()> {
        self.emit()?;
        self.inner.flush()
    }

    fn emit(&mut self) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        match std::str::from_utf8(&self.pending) {
            Ok(text) => self.inner.write_all(scrub_cow(text).as_bytes())?,
            // Bytes that are not UTF-8: line by line, so only a line that holds them is read
            // lossily, and only where it holds a secret.
            Err(_) => {
                for line in self.pending.split_inclusive(|&b| b == b'\n' || b == b'\r') {
                    self.inner.write_all(&scrub_bytes(line))?;
                }
            }
        }
        self.pending.clear();
        Ok(())
    }
}

impl<W: std::io::Write> std::io::Write for Scrubbed<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        // Only the bytes just written are searched: a line longer than a block (compact JSON)
        // would otherwise be searched again on every write, quadratic in its length.
        let end = self.pending.len() - buf.len();
        if self.pending.len() >= self.block {
            if let Some(i) = buf.iter().rposition(|&b| b == b'\n' || b == b'\r') {
                let rest = self.pending.split_off(end + i + 1);
                self.emit()?;
                self.pending = rest;
            }
        }
        if self.pending.len() > self.longest {
            self.emit()?;
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<W: std::io::Write> Drop for Scrubbed<W> {
    /// What is still pending goes out (a child's last line without an end); errors have
    /// nowhere to go here, and `finish` reports them where that matters.
    fn drop(&mut self) {
        let _ = self.emit();
    }
}

/// Whether `name` reads as an environment variable's name (upper case, digits, `_`): only those
/// are taken as assignments (`key=lambda ...` in code is not one).
fn env_like(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// `NAME=value` with a secret NAME: the value (to the next space or quote) cut.
fn redact_assignments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(eq) = rest.find('=') {
        let (head, tail) = rest.split_at(eq);
        let name_start = head
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let name = &head[name_start..];
        out.push_str(head);
        out.push('=');
        let value = &tail[1..];
        let end = value
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == ',')
            .unwrap_or(value.len());
        let from_shell = value.starts_with("${") || value.starts_with("\"${");
        let secret = env_like(name) && is_secret(name);
        if secret && end > 0 && !from_shell && !value[..end].starts_with(REDACTED) {
            out.push_str(REDACTED);
            rest = &value[end..];
        } else {
            rest = value;
        }
    }
    out.push_str(rest);
    out
}

/// Token prefixes that say they are credentials, with the shortest body a token has and
/// whether its body holds `_` (only GitHub's fine-grained tokens do).
const SHAPES: &[(&str, usize, bool)] = &[
    ("hf_", 20, false),
    ("AKIA", 16, false),
    ("ghp_", 30, false),
    ("github_pat_", 30, true),
];

/// A token's body is of its shape: `hf_rmsnorm_kernel_bf16_v2` (a kernel name, words of a few
/// letters) is not cut.
fn redact_shapes(text: &str) -> String {
    let mut out = text.to_string();
    for &(prefix, min, underscores) in SHAPES {
        if !out.contains(prefix) {
            continue;
        }
        let mut from = 0;
        while let Some(i) = out[from..].find(prefix).map(|i| i + from) {
            let start_ok = i == 0 || !out[..i].ends_with(|c: char| c.is_ascii_alphanumeric());
            let body = &out[i + prefix.len()..];
            let len = body
                .find(|c: char| !(c.is_ascii_alphanumeric() || underscores && c == '_'))
                .unwrap_or(body.len());
            if start_ok && len >= min {
                out.replace_range(i..i + prefix.len() + len, REDACTED);
                from = i + REDACTED.len();
            } else {
                from = i + prefix.len();
            }
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

    /// A child's output reaches its file line by line as it comes (progress lines end in
    /// `\r`), a secret split across writes cut, and output with no line end is not held.
    #[test]
    fn output_is_scrubbed_as_it_comes() {
        use std::io::Write;
        learn([("MY_API_TOKEN", "tok-output-secret-1")]);
        let mut w = Scrubbed::output(Vec::new());
        w.write_all(b"step 1%\rtok-output-").unwrap();
        assert_eq!(w.inner, b"step 1%\r");
        w.write_all(b"secret-1 \xff 50%\r").unwrap();
        assert_eq!(w.inner, b"step 1%\r<redacted> \xef\xbf\xbd 50%\r");
        w.write_all(&vec![b'x'; (1 << 20) + 1]).unwrap();
        assert!(w.pending.is_empty());
        w.write_all(b"last").unwrap();
        w.finish().unwrap();
        assert!(w.inner.ends_with(b"xlast"));
    }

    #[test]
    fn scrub_cuts_every_kind_of_secret() {
        learn([("MY_API_KEY", "s3cr3t-value")]);
        let text = "key s3cr3t-value; url https://u:pw@host/x; --env-var=API_TOKEN=abcd1234 \
                    HF_TOKEN=\"${HF_TOKEN:?set HF_TOKEN}\" hf_ABCDEFGHIJKLMNOPQRSTUVWX AKIAABCDEFGHIJKLMNOP";
        let s = scrub(text);
        for leak in ["s3cr3t-value", "u:pw", "abcd1234", "hf_ABCDEF", "AKIAABCD"] {
            assert!(!s.contains(leak), "{leak}: {s}");
        }
        // A value read from the user's own shell stays pasteable.
        assert!(s.contains("HF_TOKEN=\"${HF_TOKEN:?set HF_TOKEN}\""), "{s}");
        assert!(s.contains("--env-var=API_TOKEN=<redacted>"), "{s}");
        // Ordinary text is left alone.
        assert_eq!(
            scrub("nsys.trace=cuda,nvtx hf_x ok"),
            "nsys.trace=cuda,nvtx hf_x ok"
        );
        assert_eq!(scrub("sorted(x, key=len)"), "sorted(x, key=len)");
        // Kernel names that hold a token's prefix are not tokens.
        for name in [
            "triton_fused_hf_rmsnorm_kernel_bf16_forward_0",
            "void hf_rmsnorm_kernel_bf16_v2_forward<float>",
        ] {
            assert_eq!(scrub(name), name);
        }
        assert_eq!(
            scrub("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"),
            REDACTED
        );
    }
}
