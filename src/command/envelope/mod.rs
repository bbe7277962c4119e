//! The steps every command goes through around its handler, in the order `run` keeps: the
//! `failCommand` hooks (`fail_command`), authorization (`authz`), the Cosmos profile's gate
//! (`cosmos`), error labels (`error_labels`), and what an operation leaves behind when it ends:
//! the profiler, the per-command latencies, `top`'s counters and the request units.
//!
//! Owns those steps and their order (`run`). Does not own the state they read and change
//! (`state`), nor the commands (the handler families, reached through `command::dispatch`).

pub mod authz;
pub mod cosmos;
pub mod error_labels;
pub mod fail_command;
pub mod latencies;
pub mod profiler;
pub mod request_units;
pub mod run;
pub mod top;
