//! The server's state that outlives one command: logical sessions and their registry,
//! multi-document transactions, the running operations (`currentOp`, `killOp`), retryable-write
//! records, the fail point registry, and who a connection is (its authenticated users).
//!
//! Owns the state and its rules. Does not own the steps a command goes through (`envelope`),
//! and imports nothing from it: the envelope reads and changes this state, never the reverse.

pub mod failpoint;
pub mod identity;
pub mod operation_session;
pub mod operations;
pub mod retryable;
pub mod session_id;
pub mod session_registry;
pub mod transactions;
