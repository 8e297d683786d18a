//! Errors, one enum per area, each message naming what and where and what to do; one `match`
//! ([`Error::exit_code`]) maps them to the documented exit codes of [`crate::exit_codes`].

use std::path::PathBuf;

use crate::exit_codes;

/// Any stage2 error: the area it comes from decides the exit code.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Usage(#[from] UsageError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Tool(#[from] ToolError),
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    #[error("{0}")]
    NoData(String),
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    #[error("interrupted: {0}")]
    Interrupted(String),
}

/// The command line asks for something that cannot be done; nothing was run.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error("{0}")]
    Invalid(String),
}

/// A config key, file or override is wrong; the message names the key and the allowed values.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config: {0}")]
    Invalid(String),
}

/// A required tool (nsys, ncu, a launcher, the workload's interpreter) is missing or unusable.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("{0}")]
    Unusable(String),
    #[error("cannot start {program}: {source}")]
    Start {
        program: String,
        source: std::io::Error,
    },
}

/// The workload itself failed.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("workload failed: {0}")]
    Failed(String),
}

/// An artifact (CSV, SQLite, YAML, JSON) could not be parsed: the file and, where known, line.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("{path}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    At {
        path: PathBuf,
        line: Option<u64>,
        message: String,
    },
}

/// The run directory (or an output the user named) could not be created or written.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    // The OS error is in the message and not a `source`: printed once, not again as a cause.
    #[error("cannot {action} {}: {err}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        err: std::io::Error,
    },
}

impl Error {
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        UsageError::Invalid(message.into()).into()
    }

    pub(crate) fn config(message: impl Into<String>) -> Self {
        ConfigError::Invalid(message.into()).into()
    }

    pub(crate) fn tool(message: impl Into<String>) -> Self {
        ToolError::Unusable(message.into()).into()
    }

    pub(crate) fn start(program: impl std::fmt::Display, source: std::io::Error) -> Self {
        ToolError::Start {
            program: program.to_string(),
            source,
        }
        .into()
    }

    pub(crate) fn parse(
        path: impl Into<PathBuf>,
        line: Option<u64>,
        message: impl Into<String>,
    ) -> Self {
        ParseError::At {
            path: path.into(),
            line,
            message: message.into(),
        }
        .into()
    }

    /// Writing `path` failed (`action`: "write", "create", ...).
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        RunDirError::Io {
            action,
            path: path.into(),
            err: source,
        }
        .into()
    }

    /// The one place an error becomes an exit code.
    pub(crate) fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) | Error::Config(_) => exit_codes::USAGE,
            Error::Tool(_) => exit_codes::TOOL,
            Error::Workload(_) => exit_codes::WORKLOAD,
            Error::NoData(_) => exit_codes::NO_DATA,
            Error::Parse(_) => exit_codes::PARSE,
            Error::RunDir(_) => exit_codes::RUN_DIR,
            Error::Interrupted(_) => exit_codes::INTERRUPTED,
        }
    }
}

/// The exit code of any error chain: the first typed [`Error`] in it decides; anything else
/// is an environment problem reported as a tool failure.
pub fn exit_code_of(err: &anyhow::Error) -> i32 {
    err.chain()
        .find_map(|e| e.downcast_ref::<Error>())
        .map(Error::exit_code)
        .unwrap_or(exit_codes::TOOL)
}

pub type Result<T, E = anyhow::Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_area_has_its_exit_code() {
        let io = || std::io::Error::from(std::io::ErrorKind::StorageFull);
        let cases = [
            (Error::usage("x"), exit_codes::USAGE),
            (Error::config("x"), exit_codes::USAGE),
            (Error::tool("x"), exit_codes::TOOL),
            (Error::start("nsys", io()), exit_codes::TOOL),
            (Error::parse("a.csv", Some(3), "x"), exit_codes::PARSE),
            (
                Error::io("write", "/r/kernels.md", io()),
                exit_codes::RUN_DIR,
            ),
        ];
        for (e, code) in cases {
            assert_eq!(e.exit_code(), code, "{e}");
        }
        let e = Error::io("write", "/r/kernels.md", io());
        assert!(
            e.to_string().starts_with("cannot write /r/kernels.md: "),
            "{e}"
        );
        assert_eq!(
            Error::parse("a.csv", Some(3), "bad").to_string(),
            "a.csv:3: bad"
        );
    }
}
