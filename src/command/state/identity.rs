//! Who a connection is: the users it authenticated as, and the application name its handshake
//! gave. Below the sessions, operations and fail points that judge a caller by them.

use crate::auth::RoleName;
use bson::Document;

/// A user this connection authenticated as.
#[derive(Debug, Clone)]
pub struct AuthenticatedUser {
    pub db: String,
    pub name: String,
    pub roles: Vec<RoleName>,
}

/// The application name of a handshake's `client` metadata (`application.name`).
pub fn app_name(metadata: &Document) -> Option<&str> {
    metadata
        .get_document("application")
        .and_then(|a| a.get_str("name"))
        .ok()
}
