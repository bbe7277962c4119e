//! The session commands: `startSession`, `endSessions`, `refreshSessions`, `killSessions` and
//! `killAllSessions`, over the server's [`SessionRegistry`](super::session_registry).
//!
//! `endSessions` forgets sessions and closes their cursors; `killSessions` and `killAllSessions`
//! kill the operations running in them and close their cursors, leaving the sessions known, as
//! mongod does. A session's retryable-write record (`config.transactions`) outlives all of them,
//! as on mongod, where only its expiry removes it.

use super::args::{optional_array, wrong_type};
use super::session_id::{uid_of, uid_of_name, user_name, SessionId};
use super::session_registry::Selector;
use super::{Connection, Request, Shared};
use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Bson, Document, Uuid};

pub fn start_session(shared: &Shared, conn: &Connection) -> Result<Document> {
    let uuid = Uuid::new();
    let id = SessionId {
        id: uuid.bytes(),
        uid: uid_of(&conn.authenticated),
    };
    shared.sessions.touch(
        &[id],
        user_name(&conn.authenticated),
        shared.clock.now_millis(),
    )?;
    Ok(doc! {
        "id": {"id": uuid},
        "timeoutMinutes": super::session_registry::LOGICAL_SESSION_TIMEOUT_MINUTES,
        "ok": 1.0,
    })
}

/// The sessions an `endSessions`/`refreshSessions`/`killSessions` array names, as the
/// connection's user's.
fn named_sessions(req: &Request<'_>, conn: &Connection) -> Result<Vec<SessionId>> {
    let name = req.name.name();
    let items = optional_array(req.body, name, name)?.ok_or_else(|| {
        Error::new(
            ErrorCode::Location40414,
            format!("BSON field '{name}.{name}' is missing but a required field"),
        )
    })?;
    items
        .iter()
        .map(|item| SessionId::parse(item, name, &conn.authenticated))
        .collect()
}

pub fn end_sessions(shared: &Shared, conn: &Connection, req: &Request<'_>) -> Result<Document> {
    let ids = named_sessions(req, conn)?;
    shared.sessions.end(&ids, &shared.engine.cursors)?;
    shared.transactions.end_sessions(&ids)?;
    Ok(doc! {"ok": 1.0})
}

pub fn refresh_sessions(shared: &Shared, conn: &Connection, req: &Request<'_>) -> Result<Document> {
    let ids = named_sessions(req, conn)?;
    shared.sessions.touch(
        &ids,
        user_name(&conn.authenticated),
        shared.clock.now_millis(),
    )?;
    Ok(doc! {"ok": 1.0})
}

/// `killSessions: [lsid, ...]`; an empty array kills every session of the connection's user.
pub fn kill_sessions(shared: &Shared, conn: &Connection, req: &Request<'_>) -> Result<Document> {
    let ids = named_sessions(req, conn)?;
    if ids.is_empty() {
        let own = [uid_of(&conn.authenticated)];
        kill(shared, &Selector::Owners(&own))?;
    } else {
        kill(shared, &Selector::Ids(&ids))?;
    }
    Ok(doc! {"ok": 1.0})
}

/// `killAllSessions: [{user, db}, ...]`; an empty array kills every session.
pub fn kill_all_sessions(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let users = user_list(req.body, "killAllSessions")?;
    if users.is_empty() {
        kill(shared, &Selector::All)?;
    } else {
        let uids: Vec<[u8; 32]> = users.iter().map(|(u, d)| uid_of_name(u, d)).collect();
        kill(shared, &Selector::Owners(&uids))?;
    }
    Ok(doc! {"ok": 1.0})
}

/// `killAllSessionsByPattern: [pattern, ...]`: a session matching any pattern is killed. A
/// pattern is `{}` (every session), `{uid: <BinData>}` (a user's sessions) or
/// `{lsid: {id, uid}}` (one session); `users` and `roles` (impersonation) are not supported.
/// An empty array kills every session.
pub fn kill_all_sessions_by_pattern(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    const COMMAND: &str = "killAllSessionsByPattern";
    const IDL: &str = "KillAllSessionsByPattern";
    let items =
        optional_array(req.body, COMMAND, COMMAND)?.ok_or_else(|| missing(COMMAND, COMMAND))?;
    let mut selectors = Vec::new();
    for item in items {
        let Bson::Document(pattern) = item else {
            return Err(wrong_type(COMMAND, COMMAND, item, "object"));
        };
        let mut selector = Pattern::All;
        for (field, value) in pattern {
            selector = match (field.as_str(), value) {
                ("uid", value) => Pattern::Owner(sha256_block(value, IDL, "uid")?),
                ("lsid", Bson::Document(lsid)) => Pattern::Session(full_session_id(lsid)?),
                ("lsid", other) => return Err(wrong_type(IDL, "lsid", other, "object")),
                ("users" | "roles", _) => {
                    return Err(Error::new(
                        ErrorCode::NotImplemented,
                        format!("{COMMAND} with '{field}' is not supported by this server"),
                    ))
                }
                (other, _) => {
                    return Err(Error::new(
                        ErrorCode::IDLUnknownField,
                        format!("BSON field '{IDL}.{other}' is an unknown field."),
                    ))
                }
            };
        }
        selectors.push(selector);
    }
    if selectors.is_empty() {
        selectors.push(Pattern::All);
    }
    for selector in selectors {
        match selector {
            Pattern::All => kill(shared, &Selector::All)?,
            Pattern::Owner(uid) => kill(shared, &Selector::Owners(&[uid]))?,
            Pattern::Session(id) => kill(shared, &Selector::Ids(&[id]))?,
        }
    }
    Ok(doc! {"ok": 1.0})
}

/// One parsed `killAllSessionsByPattern` pattern.
enum Pattern {
    All,
    Owner([u8; 32]),
    Session(SessionId),
}

/// `{id: <UUID>, uid: <BinData>}`, both required (mongod's `LogicalSessionId`).
fn full_session_id(lsid: &Document) -> Result<SessionId> {
    const IDL: &str = "LogicalSessionId";
    if let Some(other) = lsid.keys().find(|k| *k != "id" && *k != "uid") {
        return Err(Error::new(
            ErrorCode::IDLUnknownField,
            format!("BSON field '{IDL}.{other}' is an unknown field."),
        ));
    }
    let id = match lsid.get("id") {
        Some(Bson::Binary(b)) if b.subtype == bson::spec::BinarySubtype::Uuid => {
            <[u8; 16]>::try_from(b.bytes.as_slice()).map_err(|_| {
                Error::new(
                    ErrorCode::InvalidUuid,
                    "uuid must be a 16-byte binary field with UUID (4) subtype",
                )
            })?
        }
        Some(other) => return Err(wrong_type(IDL, "id", other, "binData")),
        None => return Err(missing(IDL, "id")),
    };
    let uid = match lsid.get("uid") {
        Some(value) => sha256_block(value, IDL, "uid")?,
        None => return Err(missing(IDL, "uid")),
    };
    Ok(SessionId { id, uid })
}

fn sha256_block(value: &Bson, idl: &str, field: &str) -> Result<[u8; 32]> {
    match value {
        Bson::Binary(b) => <[u8; 32]>::try_from(b.bytes.as_slice())
            .map_err(|_| Error::bad_value("Unsupported SHA256Block hash length")),
        other => Err(wrong_type(idl, field, other, "binData")),
    }
}

/// An array of `{user, db}` (mongod's `KillAllSessionsUser`, also `$listLocalSessions`'
/// `users`), read from `field` of `body`.
pub fn user_list(body: &Document, field: &str) -> Result<Vec<(String, String)>> {
    let items = optional_array(body, field, field)?.ok_or_else(|| {
        Error::new(
            ErrorCode::Location40414,
            format!("BSON field '{field}.{field}' is missing but a required field"),
        )
    })?;
    users_of(items)
}

/// `[{user, db}, ...]` as `(user, db)` pairs.
pub fn users_of(items: &[Bson]) -> Result<Vec<(String, String)>> {
    const IDL: &str = "KillAllSessionsUser";
    items
        .iter()
        .map(|item| {
            let Bson::Document(d) = item else {
                return Err(wrong_type(IDL, "user", item, "object"));
            };
            let mut user = None;
            let mut db = None;
            for (k, v) in d {
                let slot = match k.as_str() {
                    "user" => &mut user,
                    "db" => &mut db,
                    other => {
                        return Err(Error::new(
                            ErrorCode::IDLUnknownField,
                            format!("BSON field '{IDL}.{other}' is an unknown field."),
                        ))
                    }
                };
                match v {
                    Bson::String(s) => *slot = Some(s.clone()),
                    other => return Err(wrong_type(IDL, k, other, "string")),
                }
            }
            match (user, db) {
                (Some(u), Some(d)) => Ok((u, d)),
                (None, _) => Err(missing(IDL, "user")),
                (_, None) => Err(missing(IDL, "db")),
            }
        })
        .collect()
}

fn missing(idl: &str, field: &str) -> Error {
    Error::new(
        ErrorCode::Location40414,
        format!("BSON field '{idl}.{field}' is missing but a required field"),
    )
}

/// Kills what runs in the selected sessions: their operations, cursors and transactions.
fn kill(shared: &Shared, selector: &Selector<'_>) -> Result<()> {
    shared.sessions.kill(selector, &shared.engine.cursors)?;
    shared.transactions.abort_killed(selector)
}
