//! Parsers of the profilers' artifacts into typed rows: streaming, columns found by name,
//! errors naming file and line.

pub mod baseline;
pub mod ncu;
pub mod nsys;
pub mod pysamples;
mod quoted;
pub mod sqlite;
mod table;
