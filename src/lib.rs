//! stage2: deep-profile LLM inference on NVIDIA GPUs.
//!
//! The data flows one way, and so do the imports (each layer uses only the layers below it):
//!
//! | layer | modules |
//! |---|---|
//! | entry | [`cli`], [`commands`]; [`report`] renders beside it |
//! | passes | [`passes`]: planning and running nsys and ncu, child processes, signals |
//! | findings | [`findings`]: what the reports claim, each claim with its scope, evidence and rule |
//! | analysis | [`analysis`]: joins, selection, per-range figures, roofline, ranks, diff |
//! | run directory | [`rundir`]: every file name of a run, status.json |
//! | parsers and model | [`parse`], [`model`] |
//! | foundations | [`config`], [`error`], [`exit_codes`], [`files`], [`secrets`], [`out`], [`logging`], [`term`], [`text`] (capped lists, code spans), [`rules`] (every rule and threshold the findings and the analysis decide by, with its words) |

pub mod analysis;
pub mod cli;
pub mod commands;
pub mod config;
pub mod error;
pub(crate) mod exit_codes;
pub(crate) mod files;
pub(crate) mod findings;
pub mod logging;
pub(crate) mod model;
pub mod out;
pub mod parse;
pub(crate) mod passes;
pub(crate) mod report;
pub(crate) mod rules;
pub(crate) mod rundir;
pub(crate) mod secrets;
pub mod term;
#[cfg(test)]
mod testutil;
pub(crate) mod text;
