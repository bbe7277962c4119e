//! `saslStart` and `saslContinue`, and the speculative `saslStart` a `hello` may carry: the
//! SCRAM conversation of one connection, from the client's first message to the user it
//! authenticates.
//!
//! As mongod, the client learns only "Authentication failed." (18) whatever went wrong inside
//! the conversation — an unknown user, a mechanism the user has no credentials for, a
//! malformed message, a wrong password — and the reason is logged, counted and, past the
//! address's allowance, the reply delayed (`auth_failures`). The SCRAM arithmetic is
//! `auth::scram`'s; adding the user to the connection is [`super::auth::authenticated`].

use super::args::{check_fields, optional_bool, optional_doc, optional_str, type_name, wrong_type};
use super::auth_failures::{Attempt, Refusal};
use super::state::sasl_conversation::SaslSession;
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

/// `saslStart`: a new conversation replaces any unfinished one.
pub async fn sasl_start(
    shared: &Shared,
    conn: &mut Connection,
    req: &Request<'_>,
) -> Result<Document> {
    match start(shared, conn, req.db, req.body, false) {
        Ok(reply) => Ok(with_ok(reply)),
        Err(refusal) => Err(refusal.into_error(&req.interrupt).await),
    }
}

/// `saslContinue`: the next message of the connection's conversation.
pub async fn sasl_continue(
    shared: &Shared,
    conn: &mut Connection,
    req: &Request<'_>,
) -> Result<Document> {
    match next_step(shared, conn, req) {
        Ok(reply) => Ok(with_ok(reply)),
        Err(refusal) => Err(refusal.into_error(&req.interrupt).await),
    }
}

fn next_step(
    shared: &Shared,
    conn: &mut Connection,
    req: &Request<'_>,
) -> std::result::Result<Document, Refusal> {
    const NAME: &str = "saslContinue";
    let cmd = req.body;
    check_fields(cmd, NAME, &["conversationId", "payload"])?;
    let id = match cmd.get("conversationId") {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        Some(Bson::Double(d)) if d.fract() == 0.0 && d.abs() < 9.0e18 => *d as i64,
        Some(other) => return Err(wrong_type(NAME, "conversationId", other, "int").into()),
        None => return Err(missing(NAME, "conversationId").into()),
    };
    let (payload, as_base64) = payload(cmd, NAME)?;
    let Some(mut session) = conn.sasl.take() else {
        return Err(Error::new(ErrorCode::ProtocolError, "No SASL session state found").into());
    };
    if id != i64::from(CONVERSATION_ID) {
        return Err(
            Error::new(ErrorCode::ProtocolError, "sasl: Mismatched conversation id").into(),
        );
    }
    let mechanism = session.conversation.mechanism();
    let attempt = Attempt {
        mechanism: mechanism.name(),
        user: &session.user,
        db: &session.db,
        remote: conn.peer,
        speculative: session.speculative,
    };
    let step = match session.conversation.step(&payload) {
        Ok(step) => step,
        Err(err) => return Err(failed(shared, conn, &attempt, &err, false)),
    };
    let reply = sasl_reply(step.payload.as_bytes(), step.done, as_base64);
    if !step.done {
        conn.sasl = Some(session);
        return Ok(reply);
    }
    let Some(user) = shared
        .engine
        .catalog()?
        .user(&session.db, &session.user)
        .cloned()
    else {
        // Dropped while the conversation ran.
        let err = user_not_found(&session.user, &session.db);
        return Err(failed(shared, conn, &attempt, &err, false));
    };
    super::auth::authenticated(conn, &user, mechanism, session.speculative)?;
    Ok(reply)
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
) -> std::result::Result<Document, Refusal> {
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
        )
        .into());
    };
    let skip_empty_exchange = match options.and_then(|o| o.get("skipEmptyExchange")) {
        None => false,
        Some(Bson::Boolean(b)) => *b,
        Some(_) => return Err(Error::bad_value("skipEmptyExchange must be boolean").into()),
    };
    let mut attempt = Attempt {
        mechanism: mechanism.name(),
        user: "",
        db,
        remote: conn.peer,
        speculative,
    };
    let first = match ClientFirst::parse(&payload) {
        Ok(first) => first,
        Err(err) => return Err(failed(shared, conn, &attempt, &err, speculative)),
    };
    attempt.user = &first.user;
    let user = shared.engine.catalog()?.user(db, &first.user).cloned();
    let Some(user) = user else {
        return Err(failed(
            shared,
            conn,
            &attempt,
            &user_not_found(&first.user, db),
            speculative,
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
        return Err(failed(shared, conn, &attempt, &err, speculative));
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

/// Ends the conversation and records its failure (logged with the reason, which never holds a
/// password or a proof: SCRAM carries neither in the clear and no message repeats the proof).
/// A failed first step inside `hello` is only logged, as mongod logs it: the handshake answers
/// without it and the driver starts the conversation again, whose failure is the one counted
/// and delayed. A speculative conversation failing at `saslContinue` counts as any other.
fn failed(
    shared: &Shared,
    conn: &mut Connection,
    attempt: &Attempt<'_>,
    reason: &Error,
    in_handshake: bool,
) -> Refusal {
    conn.sasl = None;
    if in_handshake {
        shared.auth_failures.log(attempt, reason);
        return Refusal::Failed(None);
    }
    Refusal::Failed(shared.auth_failures.record(attempt, reason))
}

/// mongod's reason (11) when the user does not exist.
fn user_not_found(user: &str, db: &str) -> Error {
    Error::new(
        ErrorCode::UserNotFound,
        format!("Could not find user \"{user}\" for db \"{db}\""),
    )
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
