//! stage2: deep-profile LLM inference on NVIDIA GPUs.
//!
//! The data flows one way: [`cli`] -> [`config`] -> [`rundir`] -> [`profilers`] (nsys, then
//! ncu, each a child [`process`]) -> [`parse`] -> [`model`] -> [`report`].

pub mod cli;
pub mod config;
pub mod error;
pub mod exit_codes;
pub mod model;
pub mod nvtx;
pub mod parse;
pub mod process;
pub mod rundir;
pub mod signals;
pub mod tools;
pub mod workload;
