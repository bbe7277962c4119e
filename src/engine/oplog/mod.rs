//! The operation log's room: its stored state and keys (`state`), the entries writes append
//! (`entries`), and the operation times entries are keyed by (`optime`).

pub mod entries;
pub mod optime;
pub mod state;
