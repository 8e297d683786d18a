//! Layered configuration: embedded defaults < `--config-dir` files < each `--config FILE` <
//! overrides < flags, checked against the keys the defaults define.

mod capture;
mod checks;
mod extra;
mod launcher;
mod overrides;
mod schema;
mod tree;

use std::path::{Path, PathBuf};

use serde_yaml::Value;

pub use capture::{range_of, Capture, NcuTarget, PROFILER_WINDOW};
pub use extra::Extra;
pub use launcher::Launcher;
pub use overrides::{parse as parse_override, Op, Override};
pub use schema::*;

use crate::error::Error;

/// The default files, relative to a config dir, in merge order; embedded at build time so the
/// binary runs from any directory.
pub(crate) const DEFAULT_FILES: &[(&str, &str)] = &[
    ("config.yaml", include_str!("../../conf/config.yaml")),
    (
        "runner/stage2.yaml",
        include_str!("../../conf/runner/stage2.yaml"),
    ),
    (
        "profiling/nsys/nsys.default.yaml",
        include_str!("../../conf/profiling/nsys/nsys.default.yaml"),
    ),
    (
        "profiling/ncu/ncu.default.yaml",
        include_str!("../../conf/profiling/ncu/ncu.default.yaml"),
    ),
];

/// Maps whose keys are the user's own (environment variables), not schema keys.
const OPEN_MAPS: &[&str] = &["workload.env"];

/// Where the layers come from. `overrides` are already-parsed CLI overrides; `flags` are the
/// CLI flags turned into `key=value` sets, applied last.
#[derive(Debug, Default, Clone)]
pub struct Sources {
    pub config_dir: Option<PathBuf>,
    /// Ignore ./conf: embedded defaults, then the files and overrides given here.
    pub embedded_only: bool,
    pub files: Vec<PathBuf>,
    pub overrides: Vec<String>,
    pub flags: Vec<(String, Value)>,
}

/// The merged tree and its typed view.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub tree: Value,
    pub config: Config,
    /// Each layer that contributed, for provenance.
    pub layers: Vec<String>,
    /// Where each key's value came from (dotted key -> layer), for `stage2 config --show-origin`.
    pub origins: std::collections::BTreeMap<String, String>,
}

impl Resolved {
    /// The tree as it is shown (`stage2 config`, a run's config.yaml): the values of
    /// secret-named `workload.env` keys redacted.
    fn shown_tree(&self) -> Value {
        let mut tree = self.tree.clone();
        if let Some(Value::Mapping(env)) = tree.get_mut("workload").and_then(|w| w.get_mut("env")) {
            for (k, v) in env.iter_mut() {
                if k.as_str().is_some_and(crate::secrets::is_secret) {
                    *v = Value::String(crate::secrets::REDACTED.into());
                }
            }
        }
        tree
    }

    /// The resolved config as YAML, secrets cut (see [`crate::secrets::scrub`]).
    pub(crate) fn to_yaml(&self) -> String {
        crate::secrets::scrub(&serde_yaml::to_string(&self.shown_tree()).unwrap_or_default())
    }

    /// Every value, one `key: value  # origin` line each (values as YAML flow), as cargo's
    /// `--show-origin` does: where each setting came from. Secrets cut as in [`Self::to_yaml`].
    pub(crate) fn with_origins(&self) -> String {
        let shown = self.shown_tree();
        let mut out = String::new();
        for key in tree::key_paths(&shown) {
            let Some(v) = tree::get(&shown, &tree::split(&key)) else {
                continue;
            };
            if matches!(v, Value::Mapping(m) if !m.is_empty()) {
                continue;
            }
            let value = serde_json::to_string(v).unwrap_or_default();
            let mut origin = self
                .origins
                .get(&key)
                .map_or("embedded defaults", String::as_str)
                .to_string();
            if key == "ncu.nvtx_include" && v.is_null() {
                let t = NcuTarget::of(&self.config);
                origin += &match (t.follows_capture, t.gated) {
                    (true, true) => {
                        format!(" (null: ncu's range is the nsys capture's, `{}`)", t.name)
                    }
                    (true, false) => {
                        " (null: ncu profiles inside the captured cudaProfilerStart/Stop windows)"
                            .to_string()
                    }
                    (false, _) => format!(" (null: ncu's range is the default, `{}`)", t.name),
                };
            }
            out.push_str(&format!("{key}: {value}  # {origin}\n"));
        }
        crate::secrets::scrub(&out)
    }
}

/// Mark every value `layer` sets as coming from `name`.
fn mark(origins: &mut std::collections::BTreeMap<String, String>, layer: &Value, name: &str) {
    for key in tree::key_paths(layer) {
        let leaf = !matches!(tree::get(layer, &tree::split(&key)), Some(Value::Mapping(m)) if !m.is_empty());
        if leaf {
            origins.insert(key, name.to_string());
        }
    }
}

/// The embedded defaults as one tree.
pub(crate) fn defaults() -> Value {
    let mut tree = Value::Mapping(Default::default());
    for (name, text) in DEFAULT_FILES {
        // The embedded files are part of the binary and covered by tests.
        let v: Value = serde_yaml::from_str(text)
            .unwrap_or_else(|e| panic!("embedded conf/{name} is invalid: {e}"));
        tree::merge(&mut tree, v);
    }
    tree
}

/// Every key the schema knows, dotted.
pub(crate) fn known_keys() -> Vec<String> {
    tree::key_paths(&defaults())
}

/// Resolve the configuration from all layers.
pub fn resolve(src: &Sources) -> Result<Resolved, Error> {
    let mut tree = defaults();
    let known = tree::key_paths(&tree);
    let mut layers = vec!["embedded defaults".to_string()];
    let mut origins = std::collections::BTreeMap::new();

    let dir = src.config_dir.clone().or_else(|| {
        let d = PathBuf::from("conf");
        (!src.embedded_only && d.join("config.yaml").is_file()).then_some(d)
    });
    if let Some(dir) = &dir {
        if !dir.is_dir() {
            return Err(Error::config(format!(
                "--config-dir {}: not a directory",
                dir.display()
            )));
        }
        for (name, _) in DEFAULT_FILES {
            let path = dir.join(name);
            if path.is_file() {
                let layer = merge_file(&mut tree, &path, &known)?;
                mark(&mut origins, &layer, &path.display().to_string());
                layers.push(path.display().to_string());
            }
        }
    }
    for path in &src.files {
        let layer = merge_file(&mut tree, path, &known)?;
        mark(
            &mut origins,
            &layer,
            &format!("--config {}", path.display()),
        );
        layers.push(path.display().to_string());
    }
    for arg in &src.overrides {
        let ov = overrides::parse(arg)?;
        overrides::apply(&mut tree, &ov, &known)?;
        check_known(&tree, &known, &format!("override `{arg}`"))?;
        let name = format!(
            "override `{}`",
            crate::files::shown(&crate::secrets::redact_arg(arg))
        );
        origins.retain(|k, _| k != &ov.key && !k.starts_with(&format!("{}.", ov.key)));
        if ov.op != overrides::Op::Delete {
            origins.insert(ov.key.clone(), name.clone());
            if let Some(v) = tree::get(&tree, &tree::split(&ov.key)) {
                for sub in tree::key_paths(v) {
                    origins.insert(format!("{}.{sub}", ov.key), name.clone());
                }
            }
        }
        layers.push(format!("override {arg}"));
    }
    for (key, value) in &src.flags {
        // Flags win over overrides, as documented; one that silently undid what the user
        // wrote (`--quick` with `nsys.gpu_metrics.enable=false`) would be a trap.
        let by_override = origins.get(key).filter(|o| o.starts_with("override"));
        if let (Some(o), Some(old)) = (by_override, tree::get(&tree, &tree::split(key))) {
            if old != value {
                tracing::warn!(
                    "a command-line flag sets {key} to {} over {o} ({}): flags win over overrides; drop one of them",
                    yaml_inline(value),
                    yaml_inline(old)
                );
            }
        }
        tree::set(&mut tree, &tree::split(key), value.clone()).map_err(Error::config)?;
        origins.insert(key.clone(), "a command-line flag".to_string());
    }
    let config = typed(&tree)?;
    checks::check(&config)?;
    Ok(Resolved {
        tree,
        config,
        layers,
        origins,
    })
}

/// Merge one file over `tree`; returns the file's own layer (for the origins).
fn merge_file(tree: &mut Value, path: &Path, known: &[String]) -> Result<Value, Error> {
    let text = crate::files::read_capped(path, crate::files::CONFIG_CAP)
        .map_err(|e| Error::config(format!("cannot read config file {}: {e}", path.display())))?;
    let layer = parse_layer(&text)
        .map_err(|e| Error::config(format!("config file {}: {e}", path.display())))?;
    check_known(&layer, known, &format!("config file {}", path.display()))?;
    tree::merge(tree, layer.clone());
    Ok(layer)
}

/// Deeper nesting than any config needs; the YAML parser's time grows steeply with the depth
/// of flow collections (`[[[[...`), so deeper input is refused before parsing.
pub(crate) const MAX_DEPTH: usize = 64;

/// The line of the first place where flow collections (`[`, `{`) or block indentation nest
/// deeper than `MAX_DEPTH`. Quoted text and comments are skipped roughly (a bracket inside a
/// quoted string may count): the limit is far above what a config uses.
pub(crate) fn too_deep(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (n, line) in text.lines().enumerate() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        if indent / 2 > MAX_DEPTH {
            return Some(n + 1);
        }
        let mut quote = None;
        for c in line.chars() {
            match (quote, c) {
                (None, '#') => break,
                (None, '\'' | '"') => quote = Some(c),
                (Some(q), c) if c == q => quote = None,
                (None, '[' | '{') => {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return Some(n + 1);
                    }
                }
                (None, ']' | '}') => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
    }
    None
}

/// Parse one YAML layer; an empty file is an empty layer. A UTF-8 byte-order mark is skipped.
fn parse_layer(text: &str) -> Result<Value, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if let Some(line) = too_deep(text) {
        return Err(format!(
            "line {line}: nested deeper than {MAX_DEPTH} levels; a stage2 config is a few levels deep"
        ));
    }
    if text.contains('\t') {
        if let Some(line) = text
            .lines()
            .position(|l| l.trim_start_matches(' ').starts_with('\t'))
        {
            return Err(format!(
                "line {}: indentation with a tab; YAML indents with spaces",
                line + 1
            ));
        }
    }
    let mut v: Value =
        serde_yaml::from_str(text).map_err(|e| duplicate_line(text, e.to_string()))?;
    // YAML merge keys (`<<: *base`) mean what YAML says, not a key named `<<`.
    v.apply_merge().map_err(|e| format!("merge key: {e}"))?;
    match v {
        Value::Null => Ok(Value::Mapping(Default::default())),
        Value::Mapping(_) => Ok(v),
        _ => Err("the top level must be a mapping of keys such as `nsys:`".to_string()),
    }
}

/// The YAML parser places a duplicate key at the first of the two; the user needs the second.
fn duplicate_line(text: &str, msg: String) -> String {
    let Some(rest) = msg.split("duplicate entry with key \"").nth(1) else {
        return msg;
    };
    let key = rest.split('"').next().unwrap_or_default();
    let at = |s: &str, word: &str| {
        s.split(word)
            .nth(1)?
            .split_whitespace()
            .next()?
            .parse::<usize>()
            .ok()
    };
    let (Some(line), Some(col)) = (at(&msg, " line "), at(&msg, " column ")) else {
        return msg;
    };
    let is_key = |l: &str| {
        l.len() > col.saturating_sub(1)
            && l[..col - 1].trim().is_empty()
            && l[col - 1..].starts_with(&format!("{key}:"))
    };
    match text.lines().enumerate().skip(line).find(|(_, l)| is_key(l)) {
        Some((n, _)) => format!(
            "line {}: duplicate key `{key}` (first at line {line})",
            n + 1
        ),
        None => msg,
    }
}

/// Every key in `layer` must be one the defaults define (or sit inside an open map).
fn check_known(layer: &Value, known: &[String], origin: &str) -> Result<(), Error> {
    for key in tree::key_paths(layer) {
        let open = OPEN_MAPS.iter().any(|m| key.starts_with(&format!("{m}.")));
        if open || known.contains(&key) {
            continue;
        }
        let hint = tree::closest(&key, known)
            .map(|k| format!("; did you mean `{k}`?"))
            .unwrap_or_default();
        // An empty key ("": 1) would print as `` or `report.`: say it in words.
        let (what, hint) = match key.split('.').any(str::is_empty) {
            true if key.is_empty() => (
                "an empty key name at the top level".to_string(),
                String::new(),
            ),
            true => (
                format!("an empty key name under `{}`", key.trim_end_matches('.')),
                String::new(),
            ),
            false => (format!("unknown key `{key}`"), hint),
        };
        return Err(Error::config(format!(
            "{origin}: {what}{hint} (`stage2 config` prints every key)"
        )));
    }
    Ok(())
}

fn typed(tree: &Value) -> Result<Config, Error> {
    serde_path_to_error::deserialize(tree.clone()).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.inner().to_string();
        match inner.strip_prefix("missing field `") {
            // A `~key` override (or a file) removed a key the schema needs; at the top level
            // serde's path is ".", which is no part of a key's name.
            Some(f) => Error::config(format!(
                "key `{}{}` is required: it cannot be deleted (`~`), set a value instead (`stage2 config` shows the defaults)",
                match path.as_str() {
                    "." => String::new(),
                    p => format!("{p}."),
                },
                f.trim_end_matches('`')
            )),
            None => Error::config(format!("key `{path}`: {}", plain_types(&inner))),
        }
    })
}

/// serde's words in a type error, said for a user: "invalid type: unit value, expected usize"
/// reads "got no value (empty or null), expected a whole number (0 or more)".
fn plain_types(msg: &str) -> String {
    let Some(at) = msg.rfind("expected ") else {
        return msg.to_string();
    };
    let (head, want) = msg.split_at(at + "expected ".len());
    let head = head.trim_end_matches("expected ").trim_end_matches(", ");
    let head = match head
        .strip_prefix("invalid type: ")
        .or_else(|| head.strip_prefix("invalid value: "))
    {
        Some(found) => format!("got {}", plain_found(found)),
        None if head == "unknown variant ``" => "got an empty value".to_string(),
        None => head.replace("unknown variant ", "got "),
    };
    let words = match want {
        "usize" | "u64" | "u32" | "u16" | "u8" => "a whole number (0 or more)",
        "i64" | "i32" | "i16" | "i8" | "isize" => "a whole number",
        "f64" | "f32" => "a number",
        "a boolean" => "true or false",
        // An enum key given a list or a map (yaml_serde's name for it).
        "a Value::Tagged enum" => "one word (`stage2 config` shows the key's values)",
        // A YAML tag (`!nvtx x`) on an enum key.
        "unit" => "no value after the tag: write the word alone",
        "a sequence" => "a list",
        "a map" => "a mapping",
        // A section (`report`) given a value.
        w if w.starts_with("struct ") => "a mapping of its keys (`stage2 config` shows them)",
        other => other,
    };
    match head.is_empty() {
        true => format!("expected {words}"),
        false => format!("{head}, expected {words}"),
    }
}

/// What serde found, in a user's words: "unit value" is no value, "sequence" a list.
fn plain_found(found: &str) -> String {
    let value = |kind: &str| found.strip_prefix(kind).map(|v| v.trim_matches('`'));
    match found {
        "unit value" => "no value (empty or null)".to_string(),
        "sequence" => "a list".to_string(),
        "map" => "a mapping".to_string(),
        _ => match (
            value("integer "),
            value("floating point "),
            value("boolean "),
        ) {
            (Some(v), _, _) | (_, Some(v), _) => format!("the number {v}"),
            (_, _, Some(v)) => v.to_string(),
            _ => found.replace("string ", "the text "),
        },
    }
}

#[cfg(test)]
mod tests;

/// A YAML value on one line, as a warning quotes it.
fn yaml_inline(v: &Value) -> String {
    serde_yaml::to_string(v)
        .unwrap_or_default()
        .trim()
        .replace('\n', " ")
}
