//! `stage2 explain [RULE]`: the rules behind the findings, as the reports cite them by id.

use crate::error::{Error, Result};
use crate::rules::{Rule, ALL};

pub(crate) fn run(rule: Option<&str>) -> Result<i32> {
    let rules: Vec<&Rule> = match rule {
        None => ALL.iter().collect(),
        Some(id) => match ALL.iter().find(|r| r.id == id.trim()) {
            Some(r) => vec![r],
            None => {
                let ids: Vec<&str> = ALL.iter().map(|r| r.id).collect();
                return Err(Error::usage(format!(
                    "no rule `{}`: the rules are {}",
                    crate::files::shown(id),
                    ids.join(", ")
                ))
                .into());
            }
        },
    };
    let text: String = rules.iter().map(|r| describe(r)).collect();
    crate::out::stdout(&text).map_err(|e| Error::io("write", "stdout", e))?;
    Ok(crate::exit_codes::OK)
}

/// `id`, its words, and its threshold as a number the words use.
fn describe(r: &Rule) -> String {
    format!("{}\n  {}\n  threshold: {}\n", r.id, r.text, r.threshold)
}
