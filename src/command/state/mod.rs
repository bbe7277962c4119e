//! The server's state that outlives one command: logical sessions and their registry,
//! multi-document transactions, the running operations (`currentOp`, `killOp`), retryable-write
//! records, the fail point registry, who a connection is (its authenticated users, its SASL
//! conversation), the profiler's settings, the `top` table, the request-unit meter and the
//! replica-set member. `Shared` and `Connection` (`context`) hold these as fields.
//!
//! Owns the state and its rules. Does not own the steps a command goes through (`envelope`),
//! and imports nothing from it: the envelope reads and changes this state, never the reverse.

pub mod failpoint;
pub mod identity;
pub mod index_build_ops;
pub mod operation_session;
pub mod operations;
pub mod profiler;
pub mod replica_set;
pub mod request_units;
pub mod retryable;
pub mod sasl_conversation;
pub mod session_id;
pub mod session_registry;
pub mod top;
pub mod transactions;
