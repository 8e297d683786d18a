//! Dotted-path operations on a YAML tree: merge, get, set, delete, list known keys.

use serde_yaml::{Mapping, Value};

/// Deep-merge `over` into `base`: maps merge key by key, anything else (lists too) replaces.
pub(crate) fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Mapping(b), Value::Mapping(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

pub(crate) fn split(path: &str) -> Vec<&str> {
    path.split('.').collect()
}

pub(crate) fn get<'a>(root: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter()
        .try_fold(root, |node, key| node.as_mapping()?.get(*key))
}

/// Set `path` to `value`, creating intermediate maps. Fails (with the offending prefix) when a
/// prefix of the path is a scalar or list.
pub(crate) fn set(root: &mut Value, path: &[&str], value: Value) -> Result<(), String> {
    let mut node = root;
    for (i, key) in path.iter().enumerate() {
        if node.is_null() {
            *node = Value::Mapping(Mapping::new());
        }
        let map = node
            .as_mapping_mut()
            .ok_or_else(|| format!("`{}` is not a mapping", path[..i].join(".")))?;
        let k = Value::String((*key).to_string());
        if i + 1 == path.len() {
            map.insert(k, value);
            return Ok(());
        }
        node = map.entry(k).or_insert(Value::Null);
    }
    Ok(())
}

/// Remove `path`; returns whether it was there.
pub(crate) fn delete(root: &mut Value, path: &[&str]) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut node = root;
    for key in parents {
        match node.as_mapping_mut().and_then(|m| m.get_mut(*key)) {
            Some(n) => node = n,
            None => return false,
        }
    }
    node.as_mapping_mut()
        .map(|m| m.remove(*last).is_some())
        .unwrap_or(false)
}

/// Every dotted key path in the tree (maps only; list items are values, not keys).
pub(crate) fn key_paths(root: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect(root, String::new(), &mut out);
    out
}

fn collect(node: &Value, prefix: String, out: &mut Vec<String>) {
    if let Value::Mapping(m) = node {
        for (k, v) in m {
            let key = key_text(k);
            let path = if prefix.is_empty() {
                key
            } else {
                format!("{prefix}.{key}")
            };
            out.push(path.clone());
            collect(v, path, out);
        }
    }
}

pub(crate) fn key_text(k: &Value) -> String {
    match k {
        Value::String(s) => s.clone(),
        other => serde_yaml::to_string(other)
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
    }
}

/// The known key closest to `path`, when it is close enough to be a likely typo.
pub(crate) fn closest<'a>(path: &str, known: &'a [String]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(path, k), k))
        .filter(|(d, k)| *d <= 3.max(k.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn y(s: &str) -> Value {
        serde_yaml::from_str(s).unwrap()
    }

    #[test]
    fn merge_is_deep_for_maps_and_replaces_lists() {
        let mut base = y("a: {b: 1, c: [1, 2]}\nd: x");
        merge(&mut base, y("a: {c: [3]}\ne: 2"));
        assert_eq!(base, y("a: {b: 1, c: [3]}\nd: x\ne: 2"));
    }

    #[test]
    fn set_get_delete_round_trip() {
        let mut t = y("a: {b: 1}");
        set(&mut t, &["a", "c", "d"], Value::from(5)).unwrap();
        assert_eq!(get(&t, &["a", "c", "d"]), Some(&Value::from(5)));
        assert!(delete(&mut t, &["a", "b"]));
        assert!(!delete(&mut t, &["a", "b"]));
        assert!(set(&mut y("a: 1"), &["a", "b"], Value::Null).is_err());
    }

    #[test]
    fn closest_finds_typos_only() {
        let known = vec!["nsys.enable".to_string(), "ncu.top_n".to_string()];
        assert_eq!(closest("nsys.enabel", &known), Some("nsys.enable"));
        assert_eq!(closest("ncu.topn", &known), Some("ncu.top_n"));
        assert_eq!(closest("completely.different.thing", &known), None);
    }
}
