//! Logical session ids as commands carry them (`lsid: {id: <UUID>}`): parsing, the owner's
//! `uid`, and mongod's rendering of a session in messages.
//!
//! A session belongs to the user who uses it: its key is the client's UUID plus the SHA-256 of
//! the authenticated user's `user@db` (of the empty string when nobody is authenticated), as in
//! mongod, so two users who send the same UUID have two sessions. Owns no state: the sessions
//! themselves live in `session_registry`.

use super::identity::AuthenticatedUser;
use crate::error::{Error, ErrorCode, Result};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bson::spec::BinarySubtype;
use bson::{doc, Binary, Bson, Document};
use sha2::{Digest, Sha256};
use std::fmt;

/// IDL struct name mongod reports in errors about an `lsid`'s fields.
const IDL: &str = "LogicalSessionFromClient";

/// A session's identity: the client's UUID and its owner's digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId {
    pub id: [u8; 16],
    pub uid: [u8; 32],
}

/// The `uid` of the connection's user: SHA-256 of `user@db`, or of "" when unauthenticated.
pub fn uid_of(users: &[AuthenticatedUser]) -> [u8; 32] {
    let name = user_name(users).unwrap_or_default();
    Sha256::digest(name.as_bytes()).into()
}

/// `user@db` of the connection's user, if it authenticated (one user a connection, as mongod).
pub fn user_name(users: &[AuthenticatedUser]) -> Option<String> {
    users.first().map(|u| format!("{}@{}", u.name, u.db))
}

/// The `uid` of a named user (`killAllSessions`' `{user, db}`).
pub fn uid_of_name(user: &str, db: &str) -> [u8; 32] {
    Sha256::digest(format!("{user}@{db}").as_bytes()).into()
}

impl SessionId {
    /// The session `lsid` names for a connection authenticated as `users`. A `uid` the client
    /// sends must be its own user's (mongod: 13 Unauthorized otherwise).
    pub fn parse(lsid: &Bson, field: &str, users: &[AuthenticatedUser]) -> Result<SessionId> {
        let Bson::Document(fields) = lsid else {
            return Err(super::super::args::wrong_type(
                "OperationSessionInfo",
                field,
                lsid,
                "object",
            ));
        };
        let mut id = None;
        let mut uid = None;
        for (name, value) in fields {
            match name.as_str() {
                "id" => id = Some(uuid_bytes(value)?),
                "uid" => uid = Some(uid_bytes(value)?),
                // An internal session's fields (mongod's own sessions for retryable writes
                // inside transactions): known to mongod, never sent by a driver.
                "txnNumber" | "txnUUID" => {
                    return Err(Error::new(
                        ErrorCode::NotImplemented,
                        format!("BSON field '{IDL}.{name}' names an internal session, which mayfly does not support"),
                    ))
                }
                other => {
                    return Err(Error::new(
                        ErrorCode::IDLUnknownField,
                        format!("BSON field '{IDL}.{other}' is an unknown field."),
                    ))
                }
            }
        }
        let id = id.ok_or_else(|| {
            Error::new(
                ErrorCode::Location40414,
                format!("BSON field '{IDL}.id' is missing but a required field"),
            )
        })?;
        let own = uid_of(users);
        if uid.is_some_and(|uid| uid != own) {
            return Err(Error::new(
                ErrorCode::Unauthorized,
                "Logical session's uid does not match the current user",
            ));
        }
        Ok(SessionId { id, uid: own })
    }

    /// `{id: <UUID>, uid: <BinData>}`, as mongod lists a session and keys `config.transactions`.
    pub fn to_document(self) -> Document {
        doc! {
            "id": Binary { subtype: BinarySubtype::Uuid, bytes: self.id.to_vec() },
            "uid": Binary { subtype: BinarySubtype::Generic, bytes: self.uid.to_vec() },
        }
    }

    /// The session a `{id, uid}` document (as [`to_document`](Self::to_document) writes it)
    /// names, if it is one.
    pub fn from_document(doc: &Document) -> Option<SessionId> {
        let binary = |field: &str| match doc.get(field) {
            Some(Bson::Binary(b)) => Some(b.bytes.as_slice()),
            _ => None,
        };
        Some(SessionId {
            id: binary("id")?.try_into().ok()?,
            uid: binary("uid")?.try_into().ok()?,
        })
    }

    pub fn uuid(&self) -> bson::Uuid {
        bson::Uuid::from_bytes(self.id)
    }
}

/// mongod's rendering in messages: `<UUID> - <base64 uid> -  - `.
impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} - {} -  - ", self.uuid(), STANDARD.encode(self.uid))
    }
}

fn uuid_bytes(value: &Bson) -> Result<[u8; 16]> {
    match value {
        Bson::Binary(Binary {
            subtype: BinarySubtype::Uuid,
            bytes,
        }) => <[u8; 16]>::try_from(bytes.as_slice()).map_err(|_| {
            Error::new(
                ErrorCode::InvalidUuid,
                "uuid must be a 16-byte binary field with UUID (4) subtype",
            )
        }),
        other => Err(super::super::args::wrong_type(IDL, "id", other, "binData")),
    }
}

fn uid_bytes(value: &Bson) -> Result<[u8; 32]> {
    match value {
        Bson::Binary(Binary { bytes, .. }) => <[u8; 32]>::try_from(bytes.as_slice())
            .map_err(|_| Error::bad_value("Unsupported SHA256Block hash length")),
        other => Err(super::super::args::wrong_type(IDL, "uid", other, "binData")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lsid(id: [u8; 16]) -> Bson {
        Bson::Document(doc! {"id": Binary { subtype: BinarySubtype::Uuid, bytes: id.to_vec() }})
    }

    #[test]
    fn an_unauthenticated_session_renders_as_mongod_renders_it() {
        let id = SessionId::parse(&lsid([7; 16]), "lsid", &[]).unwrap();
        assert_eq!(SessionId::from_document(&id.to_document()), Some(id));
        assert_eq!(
            id.to_string(),
            "07070707-0707-0707-0707-070707070707 - \
             47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU= -  - "
        );
    }

    #[test]
    fn malformed_lsids_are_refused_with_mongods_codes() {
        let cases: Vec<(Bson, ErrorCode)> = vec![
            (Bson::Int32(1), ErrorCode::TypeMismatch),
            (Bson::Document(doc! {}), ErrorCode::Location40414),
            (Bson::Document(doc! {"id": 1}), ErrorCode::TypeMismatch),
            (
                Bson::Document(
                    doc! {"id": Binary { subtype: BinarySubtype::Uuid, bytes: vec![1] }},
                ),
                ErrorCode::InvalidUuid,
            ),
            (
                Bson::Document(
                    doc! {"id": Binary { subtype: BinarySubtype::Uuid, bytes: vec![0; 16] }, "x": 1},
                ),
                ErrorCode::IDLUnknownField,
            ),
            (
                Bson::Document(
                    doc! {"id": Binary { subtype: BinarySubtype::Uuid, bytes: vec![0; 16] }, "txnNumber": 1_i64},
                ),
                ErrorCode::NotImplemented,
            ),
            (
                Bson::Document(
                    doc! {"id": Binary { subtype: BinarySubtype::Uuid, bytes: vec![0; 16] }, "txnUUID": Binary { subtype: BinarySubtype::Uuid, bytes: vec![0; 16] }},
                ),
                ErrorCode::NotImplemented,
            ),
            (
                Bson::Document(doc! {
                    "id": Binary { subtype: BinarySubtype::Uuid, bytes: vec![0; 16] },
                    "uid": Binary { subtype: BinarySubtype::Generic, bytes: vec![0; 32] },
                }),
                ErrorCode::Unauthorized,
            ),
        ];
        for (value, code) in cases {
            let err = SessionId::parse(&value, "lsid", &[]).unwrap_err();
            assert_eq!(err.code, code, "{value}");
        }
    }

    #[test]
    fn the_uid_names_the_user() {
        let alice = AuthenticatedUser {
            db: "admin".into(),
            name: "alice".into(),
            roles: Vec::new(),
        };
        let id = SessionId::parse(&lsid([1; 16]), "lsid", &[alice]).unwrap();
        assert_eq!(id.uid, uid_of_name("alice", "admin"));
        assert_ne!(id.uid, uid_of(&[]));
    }
}
