//! The administrative commands: server facts and parameters, `replSet*`, the test-only ones.

mod general;
pub(super) mod introspection;
pub(super) mod replset;
pub(super) mod testing;

pub use general::{connection_status, get_log, get_parameter, ping, whats_my_uri};
