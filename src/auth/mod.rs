//! Authentication and authorization, as pure functions: users and their salted SCRAM
//! credentials, the SCRAM-SHA-1 and SCRAM-SHA-256 server conversations, and the built-in roles
//! with the actions they grant, and the back-off of a source address after failed
//! authentications.
//!
//! Imports nothing with I/O: where users are stored is the engine's catalog; which command
//! needs which action, and the per-connection authentication state, are the command layer's.

pub mod backoff;
pub mod credentials;
pub mod roles;
pub mod scram;
pub mod user;

pub use credentials::{Mechanism, ScramCredential};
pub use user::{Credentials, RoleName, User};
