//! `saslStart` and `saslContinue`, and the speculative `saslStart` a `hello` may carry: the
//! SCRAM conversation of one connection, from the client's first message to the user it
//! authenticates.
//!
//! As mongod, the client learns only "Authentication failed." (18) whatever went wrong inside
//! the conversation — an unknown user, a mechanism the user has no credentials for, a
//! malformed message, a wrong password — and the reason is logged. The SCRAM arithmetic is
//! `auth::scram`'s; adding the user to the connection is [`super::auth::authenticated`].

use super::args::{check_fields, optional_bool, optional_doc, optional_str, type_name, wrong_type};
use super::{Connection, Request, Shared};
use crate::auth::scram::{self, ClientFirst, Conversation};
use crate::auth::Mechanism;
use crate::error::{Error, ErrorCode, Result};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bson::spec::BinarySubtype;
use bson::{doc, Binary, Bson, Document};

/// mongod always answers conversation id 1: one conversation per connection.
const CONVERSATION_ID: i32 = 1;

/// The conversation a connection is in, between `saslStart` and its last `saslContinue`.
#[derive(Debug)]
pub struct SaslSession {
    db: String,
    user: String,
    /// Started inside `hello`, for the logs.
    speculative: bool,
    conversation: Conversation,
}

/// `saslStart`: a new conversation replaces any unfinished one.
pub fn sasl_start(shared: &Shared, conn: &mut Connection, req: &Request<'_>) -> Result<Document> {
    let mut reply = start(shared, conn, req.db, req.body, false)?;
    reply.insert("ok", 1.0);
    Ok(reply)
}

/// `saslContinue`: the next message of the connection's conversation.
pub fn sasl_continue(
    shared: &Shared,
    conn: &mut Connection,
    req: &Request<'_>,
) -> Result<Document> {
    const NAME: &str = "saslContinue";
    let cmd = req.body;
    check_fields(cmd, NAME, &["conversationId", "payload"])?;
    let id = match cmd.get("conversationId") {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        Some(Bson::Double(d)) if d.fract() == 0.0 && d.abs() < 9.0e18 => *d as i64,
        Some(other) => return Err(wrong_type(NAME, "conversationId", other, "int")),
        None => return Err(missing(NAME, "conversationId")),
    };
    let (payload, as_base64) = payload(cmd, NAME)?;
    let Some(mut session) = conn.sasl.take() else {
        return Err(Error::new(
            ErrorCode::ProtocolError,
            "No SASL session state found",
        ));
    };
    if id != i64::from(CONVERSATION_ID) {
        return Err(Error::new(
            ErrorCode::ProtocolError,
            "sasl: Mismatched conversation id",
        ));
    }
    let mechanism = session.conversation.mechanism();
    let step = match session.conversation.step(&payload) {
        Ok(step) => step,
        Err(err) => {
            return Err(failed(
                conn,
                &session.db,
                &session.user,
                mechanism.name(),
                session.speculative,
                &err,
            ))
        }
    };
    let reply = sasl_reply(step.payload.as_bytes(), step.done, as_base64);
    if step.done {
        super::auth::authenticated(shared, conn, &session.db, &session.user, mechanism)?;
    } else {
        conn.sasl = Some(session);
    }
    Ok(with_ok(reply))
}

/// The `speculativeAuthenticate` of a `hello`: a `saslStart` document with `db` for `$db`.
/// Returns the first step's reply (`{conversationId, done, payload}`), or `None` when the
/// step failed or was not a SCRAM `saslStart`: the client then authenticates normally.
pub fn speculative_start(
    shared: &Shared,
    conn: &mut Connection,
    spec: &Document,
) -> Option<Document> {
    if spec.keys().next().map(String::as_str) != Some("saslStart") {
        return None;
    }
    let Some(Bson::String(db)) = spec.get("db") else {
        return None;
    };
    let db = db.clone();
    let body: Document = spec
        .iter()
        .filter(|(k, _)| k.as_str() != "db")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    start(shared, conn, &db, &body, true).ok()
}

/// The first step of a conversation, shared by `saslStart` and the speculative one.
fn start(
    shared: &Shared,
    conn: &mut Connection,
    db: &str,
    cmd: &Document,
    speculative: bool,
) -> Result<Document> {
    const NAME: &str = "saslStart";
    check_fields(
        cmd,
        NAME,
        &["mechanism", "autoAuthorize", "options", "payload"],
    )?;
    let mechanism_name =
        optional_str(cmd, NAME, "mechanism")?.ok_or_else(|| missing(NAME, "mechanism"))?;
    // Ignored by mongod too: a successful conversation always authorizes the user.
    optional_bool(cmd, NAME, "autoAuthorize")?;
    let options = optional_doc(cmd, NAME, "options")?;
    let (payload, as_base64) = payload(cmd, NAME)?;
    // A new conversation ends the old one, whatever happens next.
    conn.sasl = None;
    let Some(mechanism) = Mechanism::from_name(mechanism_name) else {
        tracing::info!(
            mechanism = mechanism_name,
            db,
            remote = %conn.peer,
            speculative,
            "Authentication refused: mechanism not enabled"
        );
        return Err(Error::new(
            ErrorCode::MechanismUnavailable,
            format!("Received authentication for mechanism {mechanism_name} which is not enabled"),
        ));
    };
    let skip_empty_exchange = match options.and_then(|o| o.get("skipEmptyExchange")) {
        None => false,
        Some(Bson::Boolean(b)) => *b,
        Some(_) => return Err(Error::bad_value("skipEmptyExchange must be boolean")),
    };
    let first = match ClientFirst::parse(&payload) {
        Ok(first) => first,
        Err(err) => return Err(failed(conn, db, "", mechanism.name(), speculative, &err)),
    };
    let user = shared.engine.catalog().user(db, &first.user).cloned();
    let Some(user) = user else {
        let err = Error::new(
            ErrorCode::AuthenticationFailed,
            format!("Could not find user \"{}\" for db \"{db}\"", first.user),
        );
        return Err(failed(
            conn,
            db,
            &first.user,
            mechanism.name(),
            speculative,
            &err,
        ));
    };
    let Some(credential) = user.credentials.get(mechanism) else {
        let err = Error::new(
            ErrorCode::MechanismUnavailable,
            format!(
                "Unable to use {0} based authentication for user without any {0} credentials registered",
                mechanism.name()
            ),
        );
        return Err(failed(
            conn,
            db,
            &first.user,
            mechanism.name(),
            speculative,
            &err,
        ));
    };
    let nonce = scram::server_nonce()?;
    let user_name = first.user.clone();
    let (conversation, step) =
        Conversation::start(mechanism, first, credential, &nonce, skip_empty_exchange);
    conn.sasl = Some(SaslSession {
        db: db.to_owned(),
        user: user_name,
        speculative,
        conversation,
    });
    Ok(sasl_reply(step.payload.as_bytes(), step.done, as_base64))
}

/// Logs why a conversation failed (never a password or a proof: SCRAM carries neither in the
/// clear, and no error message repeats the proof) and returns what the client sees.
fn failed(
    conn: &mut Connection,
    db: &str,
    user: &str,
    mechanism: &str,
    speculative: bool,
    err: &Error,
) -> Error {
    conn.sasl = None;
    tracing::info!(
        user,
        db,
        mechanism,
        remote = %conn.peer,
        speculative,
        error = %err.message,
        code = err.code.name(),
        "Authentication failed"
    );
    authentication_failed()
}

/// mongod's one answer to every failed authentication.
pub fn authentication_failed() -> Error {
    Error::new(ErrorCode::AuthenticationFailed, "Authentication failed.")
}

fn missing(command: &str, field: &str) -> Error {
    Error::new(
        ErrorCode::Location40414,
        format!("BSON field '{command}.{field}' is missing but a required field"),
    )
}

/// The `payload` field: BinData (subtype 0) as is, or a base64 string, in which case the reply
/// answers in base64 too (mongod's `SaslPayload`).
fn payload(cmd: &Document, command: &str) -> Result<(Vec<u8>, bool)> {
    match cmd.get("payload") {
        None => Err(missing(command, "payload")),
        Some(Bson::Binary(Binary {
            subtype: BinarySubtype::Generic,
            bytes,
        })) => Ok((bytes.clone(), false)),
        Some(Bson::Binary(b)) => Err(Error::bad_value(format!(
            "Invalid SASLPayload subtype. Expected BinDataGeneral, got: {}",
            u8::from(b.subtype)
        ))),
        Some(Bson::String(text)) => match STANDARD.decode(text) {
            Ok(bytes) => Ok((bytes, true)),
            Err(_) if text.len() % 4 != 0 => Err(Error::new(
                ErrorCode::Location10270,
                "Failed decoding SASL payload: invalid base64",
            )),
            Err(_) => Err(Error::new(
                ErrorCode::Location40537,
                "Failed decoding SASL payload: Invalid base64 character",
            )),
        },
        Some(other) => Err(Error::bad_value(format!(
            "Invalid SASLPayload type. Expected Base64 or BinData, got: {}",
            type_name(other)
        ))),
    }
}

/// `{conversationId, done, payload}`: mongod's `SaslReply`, without `ok` (the speculative
/// reply has none).
fn sasl_reply(payload: &[u8], done: bool, as_base64: bool) -> Document {
    let payload = if as_base64 {
        Bson::String(STANDARD.encode(payload))
    } else {
        Bson::Binary(Binary {
            subtype: BinarySubtype::Generic,
            bytes: payload.to_vec(),
        })
    };
    doc! {"conversationId": CONVERSATION_ID, "done": done, "payload": payload}
}

fn with_ok(mut reply: Document) -> Document {
    reply.insert("ok", 1.0);
    reply
}
