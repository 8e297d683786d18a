//! Helpers shared by the unit tests.

use std::path::PathBuf;

use crate::config::{resolve, Config, Sources};

/// The embedded defaults with `overrides` applied.
pub(crate) fn config(overrides: &[&str]) -> Config {
    resolve(&Sources {
        embedded_only: true,
        overrides: overrides.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    })
    .expect("test overrides are valid")
    .config
}

/// A file of the real captures under tests/data.
pub(crate) fn data(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(path)
}

/// A push/pop range on thread 1.
pub(crate) fn push_pop(name: &str, start: i64, end: i64) -> crate::parse::sqlite::NvtxRange {
    crate::parse::sqlite::NvtxRange {
        name: name.into(),
        start,
        end,
        push_pop: true,
        tid: 1,
    }
}

/// A committed run (`examples/...` or `tests/data/...`, from the repository root) loaded as
/// `stage2 report` loads it, with its own config.yaml.
pub(crate) fn artifacts(path: &str) -> crate::analysis::Artifacts {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path);
    let run = crate::rundir::RunDir::open(&dir).expect("a committed run");
    let config = crate::commands::report::run_config(&run).expect("its config");
    crate::analysis::Artifacts::load(&run, config).expect("it loads")
}
