//! stage2: deep-profile LLM inference on NVIDIA GPUs.
//!
//! The data flows one way: [`cli`] -> [`config`] -> [`rundir`] -> [`profilers`] (nsys, then
//! ncu, each a child [`process`]) -> [`parse`] -> [`model`] -> [`report`].

pub mod cli;
pub mod commands;
pub mod config;
pub mod diagnose;
pub mod diff;
pub mod error;
pub mod exit_codes;
pub mod guards;
pub mod launcher;
pub mod logging;
pub mod model;
pub mod nvtx;
pub mod parse;
pub mod process;
pub mod profilers;
pub mod provenance;
pub mod ranges;
pub mod report;
pub mod roofline;
pub mod rundir;
pub mod select;
pub mod signals;
pub mod status;
#[cfg(test)]
mod testutil;
pub mod tools;
pub mod workload;
