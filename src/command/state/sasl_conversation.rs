//! The SASL conversation a connection is in, between `saslStart` (or a `hello`'s speculative
//! one) and its last `saslContinue`: one per connection, as mongod keeps it.
//!
//! Owns the conversation's state. Does not own its steps (`sasl`), nor the SCRAM arithmetic
//! (`auth::scram`).

use crate::auth::scram::Conversation;

/// The conversation a connection is in, between `saslStart` and its last `saslContinue`.
#[derive(Debug)]
pub struct SaslSession {
    /// The database the user is defined in.
    pub db: String,
    pub user: String,
    /// Started inside `hello`, for the logs.
    pub speculative: bool,
    pub conversation: Conversation,
}
