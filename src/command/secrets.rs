//! Which fields of a command are secrets, and the command as anything that records it may keep
//! it: the profiler (`system.profile`), the slow-operation line (and so `getLog`), `currentOp`
//! and the Unauthorized error that shows the command. Every one of them goes through
//! [`for_logging`]; none decides on its own what is secret.
//!
//! mongod's rule (`Command::snipForLogging` over each command's `sensitiveFieldNames`): a
//! secret field of the command's top level keeps its name and its value becomes the string
//! `"xxx"`. mongod's secret fields: `createUser`/`updateUser` `pwd`, `saslStart`/
//! `saslContinue` `payload`, and the Queryable Encryption tokens of
//! `compactStructuredEncryptionData`, `cleanupStructuredEncryptionData` and
//! `getQueryableEncryptionCountInfo`. mayfly adds, where mongod would never record the command
//! at all: `authenticate`'s `key` and `nonce` (MONGODB-CR's, redacted so by mongod up to 4.0),
//! a handshake's `speculativeAuthenticate` (a `saslStart` with its payload), `pwd` in any
//! command (a mistyped command name still carries the password it was sent with), and the
//! command inside an `explain`.
//!
//! Does not own: what the records keep beside the command (shapes, truncation).

use bson::{Bson, Document};
use std::borrow::Cow;

/// What a secret's value becomes, as mongod writes it.
pub const REDACTED: &str = "xxx";

/// Each command's secret fields (mongod's `sensitiveFieldNames`, and the additions above).
const SECRET_FIELDS: &[(&str, &[&str])] = &[
    ("createUser", &["pwd"]),
    ("updateUser", &["pwd"]),
    ("saslStart", &["payload"]),
    ("saslContinue", &["payload"]),
    ("authenticate", &["key", "nonce"]),
    ("hello", &["speculativeAuthenticate"]),
    ("isMaster", &["speculativeAuthenticate"]),
    ("ismaster", &["speculativeAuthenticate"]),
    ("compactStructuredEncryptionData", &["compactionTokens"]),
    ("cleanupStructuredEncryptionData", &["cleanupTokens"]),
    ("getQueryableEncryptionCountInfo", &["tokens"]),
];

/// Fields secret in every command, known or not.
const SECRET_IN_EVERY_COMMAND: &[&str] = &["pwd"];

/// Whether `field` of command `command` holds a secret.
pub fn is_secret(command: &str, field: &str) -> bool {
    is_secret_of(secret_fields(command), field)
}

/// The secret fields of `command` beside [`SECRET_IN_EVERY_COMMAND`].
fn secret_fields(command: &str) -> &'static [&'static str] {
    SECRET_FIELDS
        .iter()
        .find(|(name, _)| *name == command)
        .map_or(&[], |(_, fields)| fields)
}

fn is_secret_of(fields: &[&str], field: &str) -> bool {
    SECRET_IN_EVERY_COMMAND.contains(&field) || fields.contains(&field)
}

/// `body` with every secret's value replaced by `"xxx"`; borrowed when it holds none (most
/// commands: recording them costs no copy). An `explain`'s command is looked into once, not
/// recursively: an explained `explain` is no command, and client input may nest deep.
pub fn for_logging(body: &Document) -> Cow<'_, Document> {
    let mut redacted = redacted_fields(body);
    if let Some((_, Bson::Document(explained))) =
        body.iter().next().filter(|(c, _)| *c == "explain")
    {
        if let Some(explained) = redacted_fields(explained) {
            redacted
                .get_or_insert_with(|| body.clone())
                .insert("explain", explained);
        }
    }
    match redacted {
        Some(copy) => Cow::Owned(copy),
        None => Cow::Borrowed(body),
    }
}

/// `body` with its own secrets replaced (its top level only, as mongod's `snipForLogging`), or
/// `None` when it has none.
fn redacted_fields(body: &Document) -> Option<Document> {
    let fields = secret_fields(body.keys().next().map_or("", String::as_str));
    if !body.keys().any(|field| is_secret_of(fields, field)) {
        return None;
    }
    let mut copy = body.clone();
    for (field, value) in copy.iter_mut() {
        if is_secret_of(fields, field) {
            *value = Bson::String(REDACTED.to_owned());
        }
    }
    Some(copy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn secrets_become_xxx_and_everything_else_stays() {
        let payload = Bson::Binary(bson::Binary {
            subtype: bson::spec::BinarySubtype::Generic,
            bytes: b"n,,n=u,r=abcdef".to_vec(),
        });
        for (body, expected) in [
            (
                doc! {"createUser": "u", "pwd": "pw1", "roles": [], "$db": "d"},
                doc! {"createUser": "u", "pwd": "xxx", "roles": [], "$db": "d"},
            ),
            (
                doc! {"updateUser": "u", "pwd": "pw2", "customData": {"pwd": "kept"}},
                doc! {"updateUser": "u", "pwd": "xxx", "customData": {"pwd": "kept"}},
            ),
            (
                doc! {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": payload.clone()},
                doc! {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": "xxx"},
            ),
            (
                doc! {"saslContinue": 1, "conversationId": 1, "payload": "Yz1iaXdz"},
                doc! {"saslContinue": 1, "conversationId": 1, "payload": "xxx"},
            ),
            (
                doc! {"authenticate": 1, "user": "u", "nonce": "n", "key": "k"},
                doc! {"authenticate": 1, "user": "u", "nonce": "xxx", "key": "xxx"},
            ),
            (
                doc! {"hello": 1, "speculativeAuthenticate": {"saslStart": 1, "payload": payload}},
                doc! {"hello": 1, "speculativeAuthenticate": "xxx"},
            ),
            (
                doc! {"compactStructuredEncryptionData": "c", "compactionTokens": {"a": 1}},
                doc! {"compactStructuredEncryptionData": "c", "compactionTokens": "xxx"},
            ),
            (
                doc! {"createuser": "u", "pwd": "typo"},
                doc! {"createuser": "u", "pwd": "xxx"},
            ),
            (
                doc! {"explain": {"updateUser": "u", "pwd": "inner"}, "verbosity": "queryPlanner"},
                doc! {"explain": {"updateUser": "u", "pwd": "xxx"}, "verbosity": "queryPlanner"},
            ),
            (
                doc! {"explain": {"createUser": "u", "pwd": "inner"}, "pwd": "outer"},
                doc! {"explain": {"createUser": "u", "pwd": "xxx"}, "pwd": "xxx"},
            ),
        ] {
            assert_eq!(for_logging(&body).into_owned(), expected, "{body}");
        }
    }

    #[test]
    fn a_command_without_secrets_is_not_copied() {
        for body in [
            doc! {"find": "c", "filter": {"payload": 1, "key": 2}},
            doc! {"insert": "users", "documents": [{"pwd": "stored data, not a command field"}]},
            doc! {"saslStart": 1, "mechanism": "PLAIN"},
            doc! {"explain": {"find": "c"}},
        ] {
            assert!(matches!(for_logging(&body), Cow::Borrowed(_)), "{body}");
        }
    }

    #[test]
    fn fields_are_secret_only_in_their_commands() {
        assert!(is_secret("saslContinue", "payload"));
        assert!(!is_secret("find", "payload"));
        assert!(is_secret("find", "pwd"));
        assert!(!is_secret("createUser", "roles"));
    }
}
