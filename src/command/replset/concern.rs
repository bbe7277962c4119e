//! The read and write concerns of a one-member replica set, as mongod 7.0 judges them.
//!
//! Read concern: every level is honoured by the one member's latest snapshot — what it has
//! committed is majority-committed, and no other member can be ahead of it, so `majority` and
//! `linearizable` reads see exactly what `local` sees, and a command reads one snapshot
//! (`snapshot`). Which commands take which levels, `afterClusterTime` and the messages are
//! mongod's (`ReadConcernArgs::parse`, each command's `supportsReadConcern`). `atClusterTime`
//! (a read in the past) is refused: mayfly keeps no history.
//!
//! Write concern: `w: 1`, `"majority"`, `j` and `wtimeout` are satisfied by the durable commit
//! itself; `w` above 1 or a tag cannot be satisfied by one member, and, as on mongod, the write
//! is still applied and the reply carries a `writeConcernError`.

use crate::command::generic::GenericArgs;
use crate::command::{CommandName, Fact};
use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Bson, Document, Timestamp};

const LEVELS: &[&str] = &["local", "majority", "linearizable", "available", "snapshot"];

/// Checks a command's `readConcern` against the member's cluster time `now`.
pub fn check_read_concern(
    command: CommandName,
    generic: &GenericArgs<'_>,
    now: Timestamp,
) -> Result<()> {
    let Some(value) = generic.read_concern else {
        return Ok(());
    };
    let Bson::Document(rc) = value else {
        return Err(Error::failed_to_parse(
            "readConcern field should be an object",
        ));
    };
    let mut level = None;
    let mut after = None;
    for (field, value) in rc {
        match field.as_str() {
            "level" => {
                let Bson::String(name) = value else {
                    return Err(wrong_type("level", "string", value));
                };
                if !LEVELS.contains(&name.as_str()) {
                    return Err(Error::failed_to_parse(
                        "readConcern.level must be either 'local', 'majority', 'linearizable', 'available', or 'snapshot'",
                    ));
                }
                level = Some(name.as_str());
            }
            "afterClusterTime" => {
                let Bson::Timestamp(ts) = value else {
                    return Err(wrong_type("afterClusterTime", "timestamp", value));
                };
                after = Some(*ts);
            }
            "atClusterTime" => {
                if !matches!(value, Bson::Timestamp(_)) {
                    return Err(wrong_type("atClusterTime", "timestamp", value));
                }
                return Err(Error::new(
                    ErrorCode::InvalidOptions,
                    "readConcern atClusterTime is not supported: mayfly reads only its latest snapshot",
                ));
            }
            "afterOpTime" => {
                return Err(Error::new(
                    ErrorCode::InvalidOptions,
                    "readConcern afterOpTime is for replica-set members' internal use and is not supported",
                ))
            }
            "provenance" => {
                if !matches!(value, Bson::String(_)) {
                    return Err(wrong_type("provenance", "string", value));
                }
            }
            other => {
                return Err(Error::new(
                    ErrorCode::InvalidOptions,
                    format!("Unrecognized option in readConcern: {other}"),
                ))
            }
        }
    }
    let effective = level.unwrap_or("local");
    if let Some(ts) = after {
        if !matches!(effective, "majority" | "local" | "snapshot") {
            return Err(Error::new(
                ErrorCode::InvalidOptions,
                "afterClusterTime field can be set only if level is equal to majority, local, or snapshot",
            ));
        }
        if ts
            == (Timestamp {
                time: 0,
                increment: 0,
            })
        {
            return Err(Error::new(
                ErrorCode::InvalidOptions,
                "afterClusterTime cannot be a null timestamp",
            ));
        }
    }
    if effective != "local" && !supports(command, effective) {
        let mut shown = Document::new();
        if let Some(level) = level {
            shown.insert("level", level);
        }
        if let Some(ts) = after {
            shown.insert("afterClusterTime", ts);
        }
        shown.insert("provenance", "clientSupplied");
        return Err(Error::new(
            ErrorCode::InvalidOptions,
            format!(
                "Command {} does not support {} :: caused by :: read concern not supported",
                command.name(),
                shell_form(&doc! {"readConcern": shown})
            ),
        ));
    }
    if let Some(ts) = after {
        // Every committed write is visible to the next read: a time the member has reached
        // needs no wait, and one it has not reached is in the future.
        if pack(ts) > pack(now) {
            return Err(Error::new(
                ErrorCode::InvalidOptions,
                format!(
                    "readConcern afterClusterTime value must not be greater than the current clusterTime. Requested clusterTime: {}; current clusterTime: {}",
                    timestamp_text(ts),
                    timestamp_text(now)
                ),
            ));
        }
    }
    Ok(())
}

/// Whether `command` takes read concern `level` (other than `local`) outside a transaction.
fn supports(command: CommandName, level: &str) -> bool {
    use CommandName as C;
    match command {
        C::Find | C::Aggregate | C::Distinct => true,
        C::Count => level != "snapshot",
        _ => false,
    }
}

/// A `writeConcernError` for a write concern one member cannot satisfy, or `None`.
pub fn write_concern_error(command: CommandName, generic: &GenericArgs<'_>) -> Option<Document> {
    if !command.has(Fact::WriteConcern) {
        return None;
    }
    let Some(Bson::Document(wc)) = generic.write_concern else {
        return None;
    };
    let (code, message) = match wc.get("w")? {
        Bson::String(mode) if mode == "majority" => return None,
        Bson::String(mode) => (
            ErrorCode::UnknownReplWriteConcern,
            format!("No write concern mode named '{mode}' found in replica set configuration"),
        ),
        w => {
            let n = match w {
                Bson::Int32(n) => f64::from(*n),
                Bson::Int64(n) => *n as f64,
                Bson::Double(d) => *d,
                _ => return None,
            };
            if n.trunc() <= 1.0 {
                return None;
            }
            (
                ErrorCode::UnsatisfiableWriteConcern,
                "Not enough data-bearing nodes".to_owned(),
            )
        }
    };
    let mut shown = doc! {"w": wc.get("w").cloned().unwrap_or(Bson::Null)};
    if let Some(j) = wc.get("j") {
        shown.insert("j", j.clone());
    }
    shown.insert(
        "wtimeout",
        wc.get("wtimeout").cloned().unwrap_or(Bson::Int32(0)),
    );
    shown.insert("provenance", "clientSupplied");
    Some(doc! {
        "code": code.code(),
        "codeName": code.name(),
        "errmsg": message,
        "errInfo": {"writeConcern": shown},
    })
}

fn pack(t: Timestamp) -> u64 {
    (u64::from(t.time) << 32) | u64::from(t.increment)
}

fn timestamp_text(t: Timestamp) -> String {
    format!("Timestamp({}, {})", t.time, t.increment)
}

/// mongod's `BSONObj::toString` of a small document: `{ level: "majority" }`.
fn shell_form(doc: &Document) -> String {
    let fields: Vec<String> = doc
        .iter()
        .map(|(k, v)| {
            let value = match v {
                Bson::String(s) => format!("\"{s}\""),
                Bson::Timestamp(t) => timestamp_text(*t),
                Bson::Document(d) => shell_form(d),
                other => other.to_string(),
            };
            format!("{k}: {value}")
        })
        .collect();
    format!("{{ {} }}", fields.join(", "))
}

fn wrong_type(field: &str, expected: &str, found: &Bson) -> Error {
    Error::type_mismatch(format!(
        "\"{field}\" had the wrong type. Expected {expected}, found {}",
        crate::command::args::type_name(found)
    ))
}

/// The concerns of a multi-document transaction's command: only its first command may name a
/// read concern, of level `local`, `majority` or `snapshot` (every read of the transaction is
/// from its snapshot whichever it names); only `commitTransaction` and `abortTransaction` may
/// name a write concern.
pub fn check_transaction_concerns(
    command: CommandName,
    generic: &GenericArgs<'_>,
    statement: crate::command::operation_session::TransactionStatement,
) -> Result<()> {
    let ends = matches!(
        command,
        CommandName::CommitTransaction | CommandName::AbortTransaction
    );
    if generic.write_concern.is_some() && !ends {
        return Err(Error::new(
            ErrorCode::InvalidOptions,
            "writeConcern is not allowed within a multi-statement transaction",
        ));
    }
    let Some(value) = generic.read_concern else {
        return Ok(());
    };
    if !statement.start {
        return Err(Error::new(
            ErrorCode::InvalidOptions,
            "Only the first command in a transaction may specify a readConcern",
        ));
    }
    let Bson::Document(rc) = value else {
        return Err(Error::failed_to_parse(
            "readConcern field should be an object",
        ));
    };
    for (field, value) in rc {
        match field.as_str() {
            "level" => {
                match value {
                    Bson::String(level)
                        if matches!(level.as_str(), "local" | "majority" | "snapshot") => {}
                    Bson::String(_) => return Err(Error::new(
                        ErrorCode::InvalidOptions,
                        "The readConcern level must be either 'local' (default), 'majority' or \
                         'snapshot' in order to run in a transaction",
                    )),
                    other => return Err(wrong_type("level", "string", other)),
                }
            }
            "afterClusterTime" => {
                if !matches!(value, Bson::Timestamp(_)) {
                    return Err(wrong_type("afterClusterTime", "timestamp", value));
                }
            }
            "provenance" => {}
            "atClusterTime" => return Err(Error::new(
                ErrorCode::InvalidOptions,
                "readConcern atClusterTime is not supported: mayfly reads only its latest snapshot",
            )),
            other => {
                return Err(Error::new(
                    ErrorCode::InvalidOptions,
                    format!("Unrecognized option in readConcern: {other}"),
                ))
            }
        }
    }
    Ok(())
}
