//! Parsers of the profilers' artifacts into typed rows: streaming, columns found by name,
//! errors naming file and line.

pub mod baseline;
pub mod ncu;
pub mod nsys;
pub mod pysamples;
mod quoted;
pub mod sqlite;
mod table;

/// A value read, as an error message shows it: as written where it is of a usual size,
/// else in scientific notation (a 300-digit number is `1e300`, not 300 digits).
pub(crate) fn number(v: f64) -> String {
    match v.abs() < 1e12 {
        true => format!("{v}"),
        false => format!("{v:e}"),
    }
}
