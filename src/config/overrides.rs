//! Hydra-style overrides: `a.b=v` (key must exist), `+a.b=v` (must not), `++a.b=v` (either
//! way), `~a.b` (delete). Values are YAML: `x=[1,2]`, `y=null`, `z=` is the empty string.

use serde_yaml::Value;

use super::tree;
use crate::error::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Set,
    Add,
    Force,
    Delete,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    pub op: Op,
    pub key: String,
    pub value: Value,
}

/// Parse one override argument.
pub fn parse(arg: &str) -> Result<Override, Error> {
    let bad = |why: &str| {
        Error::config(format!(
            "bad override `{}`: {why} (grammar: a.b=v, +a.b=v, ++a.b=v, ~a.b)",
            crate::files::shown(arg)
        ))
    };
    let (op, rest) = if let Some(r) = arg.strip_prefix("++") {
        (Op::Force, r)
    } else if let Some(r) = arg.strip_prefix('+') {
        (Op::Add, r)
    } else if let Some(r) = arg.strip_prefix('~') {
        (Op::Delete, r)
    } else {
        (Op::Set, arg)
    };
    let (key, raw) = match rest.split_once('=') {
        Some((k, v)) => (k, Some(v)),
        None => (rest, None),
    };
    if op == Op::Set && raw.is_none() {
        // A word with no `=` is most often the workload given without the `--` before it.
        return Err(bad(
            "missing `=value`; if this is the workload, put `--` before it: `stage2 profile [OVERRIDES] -- python3 w.py ...`",
        ));
    }
    if !valid_key(key) {
        return Err(bad("the key must be dotted words such as nsys.trace"));
    }
    let value = match (op, raw) {
        (Op::Delete, _) => Value::Null,
        (_, None) => return Err(bad("missing `=value`")),
        (_, Some("")) => Value::String(String::new()),
        (_, Some(v)) if super::too_deep(v).is_some() => {
            return Err(bad(&format!(
                "the value nests deeper than {} levels",
                super::MAX_DEPTH
            )))
        }
        (_, Some(v)) => serde_yaml::from_str(v)
            .map_err(|e| bad(&format!("the value is not valid YAML: {e}")))?,
    };
    Ok(Override {
        op,
        key: key.to_string(),
        value,
    })
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.split('.').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
}

/// Apply one override to `tree`. `known` lists every key the schema knows, for suggestions.
pub fn apply(tree: &mut Value, ov: &Override, known: &[String]) -> Result<(), Error> {
    let path = tree::split(&ov.key);
    let exists = tree::get(tree, &path).is_some();
    let key = &ov.key;
    match ov.op {
        Op::Set if !exists => {
            let hint = match tree::closest(key, known) {
                Some(k) => format!("did you mean `{k}`?"),
                None => format!("to add a new key use `+{key}=...`"),
            };
            return Err(Error::config(format!(
                "override `{key}=...`: unknown key `{key}`; {hint} (`stage2 config` lists the keys)"
            )));
        }
        Op::Add if exists => {
            return Err(Error::config(format!(
                "override `+{key}=...`: key `{key}` already exists; use `{key}=...` to change it or `++{key}=...` to set it either way"
            )));
        }
        Op::Delete => {
            if !tree::delete(tree, &path) {
                return Err(Error::config(format!(
                    "override `~{key}`: no key `{key}` to delete"
                )));
            }
            return Ok(());
        }
        _ => {}
    }
    tree::set(tree, &path, ov.value.clone())
        .map_err(|why| Error::config(format!("override `{key}`: {why}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn y(s: &str) -> Value {
        serde_yaml::from_str(s).unwrap()
    }

    #[test]
    fn parses_each_form() {
        let o = parse("nsys.trace=cuda,nvtx").unwrap();
        assert_eq!((o.op, o.key.as_str()), (Op::Set, "nsys.trace"));
        assert_eq!(o.value, Value::from("cuda,nvtx"));
        assert_eq!(parse("+a.b=[1,2]").unwrap().value, y("[1, 2]"));
        assert_eq!(parse("++a.b=null").unwrap().op, Op::Force);
        assert_eq!(parse("++a.b=null").unwrap().value, Value::Null);
        assert_eq!(parse("~a.b").unwrap().op, Op::Delete);
        assert_eq!(parse("a=").unwrap().value, Value::from(""));
        assert_eq!(parse("a.b=3").unwrap().value, Value::from(3));
    }

    #[test]
    fn rejects_bad_grammar() {
        for bad in ["", "=1", "a..b=1", "a.b", "a b=1", "a.b=[1,", "+=x"] {
            let err = parse(bad).unwrap_err().to_string();
            assert!(err.contains("bad override"), "{bad}: {err}");
        }
    }

    #[test]
    fn set_requires_existing_key_and_suggests_the_closest() {
        let mut t = y("nsys: {enable: true}");
        let known = vec!["nsys".to_string(), "nsys.enable".to_string()];
        let err = apply(&mut t, &parse("nsys.enabel=false").unwrap(), &known)
            .unwrap_err()
            .to_string();
        assert!(err.contains("did you mean `nsys.enable`"), "{err}");
        apply(&mut t, &parse("nsys.enable=false").unwrap(), &known).unwrap();
        assert_eq!(t, y("nsys: {enable: false}"));
    }

    #[test]
    fn add_refuses_existing_key_and_force_sets_either_way() {
        let mut t = y("a: {b: 1}");
        let err = apply(&mut t, &parse("+a.b=2").unwrap(), &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("use `a.b=...`") && err.contains("`++a.b=...`"),
            "{err}"
        );
        apply(&mut t, &parse("+a.c=2").unwrap(), &[]).unwrap();
        apply(&mut t, &parse("++a.b=5").unwrap(), &[]).unwrap();
        apply(&mut t, &parse("++a.d=6").unwrap(), &[]).unwrap();
        apply(&mut t, &parse("~a.c").unwrap(), &[]).unwrap();
        assert_eq!(t, y("a: {b: 5, d: 6}"));
        assert!(apply(&mut t, &parse("~a.zz").unwrap(), &[]).is_err());
    }
}
