//! Who a connection is: adding the user a SASL conversation authenticated, `logout`, and the
//! `authenticate` command (MONGODB-X509, MONGODB-CR), which mayfly refuses as a mongod on
//! which those mechanisms are not enabled does.
//!
//! The conversations themselves are `sasl.rs`'s; what an authenticated user may do is the
//! roles' concern, not this module's.

use super::args::{check_fields, optional_str};
use super::auth_failures::{Attempt, Refusal, AUTHENTICATION_SUCCEEDED_LOG_ID};
use super::state::identity::AuthenticatedUser;
use super::{Connection, Request, Shared};
use crate::auth::{Mechanism, User};
use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Document};

/// Adds the user a conversation has just authenticated to the connection, with its roles as
/// they are now. mongod 7.0 allows one user per connection: authenticating again as the same
/// user changes nothing; as another user it is refused, with mongod's codes and messages (not
/// a failed authentication: the client proved the password).
pub fn authenticated(
    conn: &mut Connection,
    user: &User,
    mechanism: Mechanism,
    speculative: bool,
) -> Result<()> {
    let (db, name) = (user.db.as_str(), user.name.as_str());
    if let Some(previous) = conn.authenticated.first() {
        let previous_name = format!("{}@{}", previous.name, previous.db);
        if previous.db == db && previous.name == name {
            tracing::warn!(
                user = name,
                db,
                "Client has attempted to reauthenticate as a single user"
            );
            return Ok(());
        }
        let err = if previous.db != db {
            Error::new(
                ErrorCode::Location5626701,
                format!(
                    "Each client connection may only be authenticated once. Previously authenticated as: {previous_name}"
                ),
            )
        } else {
            Error::new(
                ErrorCode::Location5626702,
                format!(
                    "Client has attempted to authenticate on multiple databases.Already authenticated as: {previous_name}"
                ),
            )
        };
        tracing::info!(
            user = name,
            db,
            mechanism = mechanism.name(),
            remote = %conn.peer,
            error = %err.message,
            "Authentication refused: the connection is authenticated as another user"
        );
        return Err(err);
    }
    conn.authenticated.push(AuthenticatedUser {
        db: db.to_owned(),
        name: name.to_owned(),
        roles: user.roles.clone(),
    });
    tracing::info!(
        log_id = AUTHENTICATION_SUCCEEDED_LOG_ID,
        mechanism = mechanism.name(),
        speculative,
        principalName = name,
        authenticationDatabase = db,
        remote = %conn.peer,
        extraInfo = "{}",
        "Authentication succeeded"
    );
    Ok(())
}

/// `logout`: the connection is no longer authenticated as its user of this database.
pub fn logout(conn: &mut Connection, req: &Request<'_>) -> Result<Document> {
    check_fields(req.body, "logout", &[])?;
    let before = conn.authenticated.len();
    conn.authenticated.retain(|u| u.db != req.db);
    if conn.authenticated.len() != before {
        tracing::info!(db = req.db, remote = %conn.peer, "Logged out");
    }
    Ok(doc! {"ok": 1.0})
}

/// `authenticate {mechanism, user}`: mongod's command for MONGODB-X509 (and, before 6.0,
/// MONGODB-CR). mayfly enables neither; mongod answers such a request with 18, and so does
/// mayfly: a failed authentication, logged, counted and delayed as any other.
pub async fn authenticate(
    shared: &Shared,
    conn: &mut Connection,
    req: &Request<'_>,
) -> Result<Document> {
    const NAME: &str = "authenticate";
    check_fields(req.body, NAME, &["mechanism", "user"])?;
    let mechanism = optional_str(req.body, NAME, "mechanism")?.ok_or_else(|| {
        Error::new(
            ErrorCode::Location40414,
            "BSON field 'authenticate.mechanism' is missing but a required field",
        )
    })?;
    let user = optional_str(req.body, NAME, "user")?.unwrap_or("");
    conn.sasl = None;
    let attempt = Attempt {
        mechanism,
        user,
        db: req.db,
        remote: conn.peer,
        speculative: false,
    };
    let reason = Error::bad_value(format!("Unsupported mechanism: {mechanism}"));
    let delay = shared.auth_failures.record(&attempt, &reason);
    Err(Refusal::Failed(delay).into_error(&req.interrupt).await)
}
