//! `stage2 config`: print the resolved configuration.

use std::io::Write;

use crate::cli::SourceArgs;
use crate::config;
use crate::error::Result;

pub(crate) fn run(sources: &SourceArgs, overrides: &[String]) -> Result<i32> {
    let resolved = config::resolve(&sources.to_sources(overrides))?;
    let mut out = std::io::stdout().lock();
    // A closed pipe (`stage2 config | head`) is not an error.
    let _ = out.write_all(resolved.to_yaml().as_bytes());
    Ok(crate::exit_codes::OK)
}
