//! Error kinds, one variant per area; each maps to exactly one exit code.

use std::path::PathBuf;

use crate::exit_codes;

/// An error that knows which exit code it stands for. Messages name the key, flag, file or line
/// and say what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Usage(String),
    #[error("config: {0}")]
    Config(String),
    #[error("{0}")]
    Tool(String),
    #[error("workload failed: {0}")]
    Workload(String),
    #[error("{0}")]
    NoData(String),
    #[error("{path}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Parse {
        path: PathBuf,
        line: Option<u64>,
        message: String,
    },
    #[error("interrupted: {0}")]
    Interrupted(String),
}

impl Error {
    pub fn parse(path: impl Into<PathBuf>, line: Option<u64>, message: impl Into<String>) -> Self {
        Error::Parse {
            path: path.into(),
            line,
            message: message.into(),
        }
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) | Error::Config(_) => exit_codes::USAGE,
            Error::Tool(_) => exit_codes::TOOL,
            Error::Workload(_) => exit_codes::WORKLOAD,
            Error::NoData(_) => exit_codes::NO_DATA,
            Error::Parse { .. } => exit_codes::PARSE,
            Error::Interrupted(_) => exit_codes::INTERRUPTED,
        }
    }
}

/// The exit code of any error chain: the first typed [`Error`] in it decides; anything else
/// (I/O on the run directory, say) is an environment problem reported as a tool failure.
pub fn exit_code_of(err: &anyhow::Error) -> i32 {
    err.chain()
        .find_map(|e| e.downcast_ref::<Error>())
        .map(Error::exit_code)
        .unwrap_or(exit_codes::TOOL)
}

pub type Result<T, E = anyhow::Error> = std::result::Result<T, E>;
