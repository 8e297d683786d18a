//! `stage2 config`: print the resolved configuration.

use crate::cli::SourceArgs;
use crate::config;
use crate::error::{Error, Result};

pub(crate) fn run(sources: &SourceArgs, overrides: &[String]) -> Result<i32> {
    let resolved = config::resolve(&sources.to_sources(overrides))?;
    // A closed pipe (`stage2 config | head`) is not an error; a full disk (`> /dev/full`) is.
    crate::out::stdout(&resolved.to_yaml()).map_err(|e| Error::io("write", "stdout", e))?;
    Ok(crate::exit_codes::OK)
}
