//! A command's session fields — `lsid`, `txnNumber`, `autocommit`, `startTransaction` — checked
//! in mongod's order (`initializeOperationSessionInfo`, then the retryable-command check).
//!
//! Owns: which combinations are allowed and their errors. Retryable writes and transactions
//! need a replica set member (20 on a standalone, as mongod). Does not own which commands may
//! run in a transaction or are retryable writes (facts of the command table), the fields'
//! taking (`generic`), the sessions themselves (`session_registry`), what a retry returns
//! (`retryable`), nor the transactions (`transactions`).

use super::super::generic::GenericArgs;
use super::super::table::Fact;
use super::super::CommandName;
use super::identity::AuthenticatedUser;
use super::session_id::SessionId;
use crate::error::{Error, ErrorCode, Result};
use crate::pipeline::lite::LitePipeline;
use bson::Bson;

/// The session fields of one command, once accepted.
#[derive(Debug, Clone, Copy, Default)]
pub struct OperationSession {
    pub session: Option<SessionId>,
    /// Set only on a retryable write command or a transaction's command in a session, on a
    /// replica set member.
    pub txn_number: Option<i64>,
    /// Set on a command of a multi-document transaction (`autocommit: false`).
    pub transaction: Option<TransactionStatement>,
    /// The `uid` of the connection's user: whose sessions are the caller's own.
    pub caller: [u8; 32],
}

/// A command of a multi-document transaction: its number, and whether it starts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransactionStatement {
    pub number: i64,
    pub start: bool,
}

/// The stage of an `aggregate` a transaction may not run: one that writes (`$out`, `$merge`)
/// or streams changes.
fn stage_not_in_transaction<'p>(stages: Option<&LitePipeline<'p>>) -> Option<&'p str> {
    stages?
        .names()
        .find(|stage| matches!(*stage, "$out" | "$merge" | "$changeStream"))
}

fn invalid(message: &str) -> Error {
    Error::new(ErrorCode::InvalidOptions, message)
}

/// Checks the session fields of `generic` for command `name` (an aggregate's `stages` as its
/// parse read them) on a connection authenticated as `users`; `replica_set` says whether this
/// server is a replica set member.
pub fn parse(
    generic: &GenericArgs<'_>,
    stages: Option<&LitePipeline<'_>>,
    name: CommandName,
    users: &[AuthenticatedUser],
    replica_set: bool,
) -> Result<OperationSession> {
    let session = generic
        .lsid
        .map(|lsid| SessionId::parse(lsid, "lsid", users))
        .transpose()?;
    let txn_number = match generic.txn_number {
        None => None,
        Some(Bson::Int64(n)) => Some(*n),
        Some(other) => {
            return Err(super::super::args::wrong_type(
                "OperationSessionInfo",
                "txnNumber",
                other,
                "long",
            ))
        }
    };
    let autocommit = optional_bool(generic.autocommit, "autocommit")?;
    let start_transaction = optional_bool(generic.start_transaction, "startTransaction")?;
    if session.is_none() && txn_number.is_some() {
        return Err(invalid(
            "Transaction number requires a session ID to also be specified",
        ));
    }
    match txn_number {
        Some(n) => {
            if !replica_set {
                return Err(Error::new(
                    ErrorCode::IllegalOperation,
                    "Transaction numbers are only allowed on a replica set member or mongos",
                ));
            }
            if n < 0 {
                return Err(invalid("Transaction number cannot be negative"));
            }
        }
        None if autocommit.is_some() => {
            return Err(invalid(
                "'autocommit' field requires a transaction number to also be specified",
            ))
        }
        None => {}
    }
    match autocommit {
        Some(true) => return Err(invalid("Specifying autocommit=true is not allowed.")),
        Some(false) => {
            if start_transaction == Some(false) {
                return Err(invalid("Specifying startTransaction=false is not allowed."));
            }
            if !name.has(Fact::InTransaction) {
                return Err(Error::new(
                    ErrorCode::OperationNotSupportedInTransaction,
                    format!(
                        "Cannot run '{}' in a multi-document transaction.",
                        name.name()
                    ),
                ));
            }
            if let Some(stage) = stage_not_in_transaction(stages) {
                return Err(Error::new(
                    ErrorCode::OperationNotSupportedInTransaction,
                    format!("{stage} cannot be used in a transaction"),
                ));
            }
            return Ok(OperationSession {
                session,
                txn_number,
                transaction: txn_number.map(|number| TransactionStatement {
                    number,
                    start: start_transaction == Some(true),
                }),
                caller: super::session_id::uid_of(users),
            });
        }
        None if start_transaction.is_some() => {
            return Err(invalid(
                "'startTransaction' field requires 'autocommit' field to also be specified",
            ))
        }
        None => {}
    }
    if txn_number.is_some() && !name.has(Fact::RetryableWrite) {
        return Err(Error::new(
            ErrorCode::NotARetryableWriteCommand,
            format!(
                "txnNumber may only be provided for multi-document transactions and retryable \
                 write commands. autocommit:false was not provided, and {} is not a retryable \
                 write command.",
                name.name()
            ),
        ));
    }
    Ok(OperationSession {
        session,
        txn_number,
        transaction: None,
        caller: super::session_id::uid_of(users),
    })
}

fn optional_bool(value: Option<&Bson>, field: &str) -> Result<Option<bool>> {
    match value {
        None => Ok(None),
        Some(Bson::Boolean(b)) => Ok(Some(*b)),
        Some(other) => Err(super::super::args::wrong_type(
            "OperationSessionInfo",
            field,
            other,
            "bool",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_doc(
        body: &Document,
        name: CommandName,
        users: &[AuthenticatedUser],
        replica_set: bool,
    ) -> Result<OperationSession> {
        // The bodies hold the session fields alone; an aggregate's stages, when a case has
        // them, as its parse would name them.
        let stages =
            (name == CommandName::Aggregate).then(|| LitePipeline::of(body.get("pipeline")));
        parse(
            &GenericArgs::take(body),
            stages.as_ref(),
            name,
            users,
            replica_set,
        )
    }
    use bson::spec::BinarySubtype;
    use bson::{doc, Binary, Document};

    fn lsid() -> Bson {
        Bson::Document(doc! {"id": Binary { subtype: BinarySubtype::Uuid, bytes: vec![3; 16] }})
    }

    #[test]
    fn session_fields_are_checked_in_mongods_order() {
        let insert = CommandName::Insert;
        let find = CommandName::Find;
        let cases: Vec<(Document, CommandName, bool, ErrorCode)> = vec![
            (
                doc! {"txnNumber": 1_i64},
                insert,
                true,
                ErrorCode::InvalidOptions,
            ),
            (
                doc! {"txnNumber": 1_i64},
                insert,
                false,
                ErrorCode::InvalidOptions,
            ),
            (
                doc! {"lsid": lsid(), "txnNumber": 1_i64},
                insert,
                false,
                ErrorCode::IllegalOperation,
            ),
            (
                doc! {"lsid": lsid(), "txnNumber": 1_i32},
                insert,
                true,
                ErrorCode::TypeMismatch,
            ),
            (
                doc! {"lsid": lsid(), "txnNumber": -1_i64},
                insert,
                true,
                ErrorCode::InvalidOptions,
            ),
            (
                doc! {"lsid": lsid(), "autocommit": false},
                insert,
                true,
                ErrorCode::InvalidOptions,
            ),
            (
                doc! {"lsid": lsid(), "txnNumber": 1_i64, "autocommit": true},
                insert,
                true,
                ErrorCode::InvalidOptions,
            ),
            (
                doc! {"lsid": lsid(), "txnNumber": 1_i64, "autocommit": false, "startTransaction": true},
                CommandName::Count,
                true,
                ErrorCode::OperationNotSupportedInTransaction,
            ),
            (
                doc! {"lsid": lsid(), "txnNumber": 1_i64, "startTransaction": true},
                insert,
                true,
                ErrorCode::InvalidOptions,
            ),
            (
                doc! {"lsid": lsid(), "txnNumber": 1_i64},
                find,
                true,
                ErrorCode::NotARetryableWriteCommand,
            ),
        ];
        for (body, name, replica_set, code) in cases {
            let err = parse_doc(&body, name, &[], replica_set).unwrap_err();
            assert_eq!(err.code, code, "{body}");
        }
        let ok = parse_doc(
            &doc! {"lsid": lsid(), "txnNumber": 4_i64},
            insert,
            &[],
            true,
        )
        .unwrap();
        assert_eq!(ok.txn_number, Some(4));
        assert!(ok.session.is_some());
        let plain = parse_doc(&doc! {"lsid": lsid()}, find, &[], false).unwrap();
        assert_eq!(plain.txn_number, None);
        let started = parse_doc(
            &doc! {"lsid": lsid(), "txnNumber": 2_i64, "autocommit": false, "startTransaction": true},
            insert,
            &[],
            true,
        )
        .unwrap();
        assert_eq!(
            started.transaction,
            Some(TransactionStatement {
                number: 2,
                start: true
            })
        );
        let continued = parse_doc(
            &doc! {"lsid": lsid(), "txnNumber": 2_i64, "autocommit": false},
            find,
            &[],
            true,
        )
        .unwrap();
        assert_eq!(continued.transaction.map(|t| t.start), Some(false));
    }
}
