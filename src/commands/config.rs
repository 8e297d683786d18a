//! `stage2 config`: print the resolved configuration.

use crate::cli::SourceArgs;
use crate::config;
use crate::error::{Error, Result};

pub(crate) fn run(sources: &SourceArgs, overrides: &[String], show_origin: bool) -> Result<i32> {
    let resolved = config::resolve(&sources.to_sources(overrides))?;
    let text = match show_origin {
        true => resolved.with_origins(),
        false => resolved.to_yaml(),
    };
    // A closed pipe (`stage2 config | head`) is not an error; a full disk (`> /dev/full`) is.
    crate::out::stdout(&text).map_err(|e| Error::io("write", "stdout", e))?;
    Ok(crate::exit_codes::OK)
}
