//! The steps every command goes through around its handler, in the order `run` keeps:
//! authorization (`authz`), the Cosmos profile's gate (`cosmos`), error labels
//! (`error_labels`), and what an operation leaves behind when it ends: the profiler, the
//! per-command latencies, `top`'s counters and the request units.
//!
//! Owns those steps. Does not own the state they read and change (`state`), nor the commands
//! (the handler families); the order of the steps is `command::run`'s.

pub mod authz;
pub mod cosmos;
pub mod error_labels;
pub mod latencies;
pub mod profiler;
pub mod request_units;
pub mod run;
pub mod top;
