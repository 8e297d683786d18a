//! What `stage2 report` takes from the user over a run's own config.yaml: `--config` files and
//! overrides of the keys it reads (how reports look, where the tools are), nothing else.

use std::path::PathBuf;

use serde_yaml::Value;

use crate::error::Error;

/// The keys `stage2 report` reads from the config: how reports look and where the tools are.
const KEYS: &[&str] = &["report", "tools"];

/// What the user adds to the run's config: files and overrides of [`KEYS`] only.
#[derive(Debug, Default, Clone)]
pub struct Extra {
    pub flags: Vec<(String, Value)>,
    pub overrides: Vec<String>,
}

impl Extra {
    /// Checked: a key outside [`KEYS`] is refused with what to do, not ignored.
    pub fn of(files: &[PathBuf], overrides: &[String]) -> Result<Extra, Error> {
        for o in overrides {
            let key = o.trim_start_matches(['+', '~']);
            let top = key.split(['.', '=']).next().unwrap_or("");
            if !KEYS.contains(&top) {
                return Err(Error::usage(format!(
                    "`{o}`: stage2 report uses only report.* and tools.* keys; the other settings are the run's own (its config.yaml)"
                )));
            }
        }
        let mut flags = Vec::new();
        for f in files {
            // As every other subcommand says it: a config mistake (exit 2), not an I/O failure.
            let text = crate::files::read_capped(f, crate::files::RUN_FILE_CAP).map_err(|e| {
                Error::config(format!("cannot read config file {}: {e}", f.display()))
            })?;
            let tree: Value = serde_yaml::from_str(&text)
                .map_err(|e| Error::config(format!("{}: {e}", f.display())))?;
            let Value::Mapping(m) = tree else {
                return Err(Error::config(format!(
                    "{}: not a YAML mapping",
                    f.display()
                )));
            };
            for (k, v) in m {
                let k = k.as_str().unwrap_or("").to_string();
                if !KEYS.contains(&k.as_str()) {
                    return Err(Error::usage(format!(
                        "{}: key `{k}`: stage2 report uses only report.* and tools.* keys",
                        f.display()
                    )));
                }
                leaves(&k, v, &mut flags);
            }
        }
        Ok(Extra {
            flags,
            overrides: overrides.to_vec(),
        })
    }
}

/// Each leaf of a mapping as a `key.path=value` setting.
fn leaves(prefix: &str, v: Value, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Mapping(m) => {
            for (k, v) in m {
                let k = format!("{prefix}.{}", k.as_str().unwrap_or(""));
                leaves(&k, v, out);
            }
        }
        v => out.push((prefix.to_string(), v)),
    }
}
