//! The `errorLabels` a replica set member gives an error reply (mongod's `getErrorLabels`):
//! `TransientTransactionError` and `UnknownTransactionCommitResult` on a transaction's
//! commands, `RetryableWriteError` on a retryable write (and on `commitTransaction`/
//! `abortTransaction`) that failed with a retryable code or write concern error,
//! `NonResumableChangeStreamError` on a change stream's fatal errors. A standalone
//! gives none. A reply that already names its labels (a fail point's `errorLabels`) keeps them.
//!
//! Owns: the rules. Does not own the errors.

use super::super::generic::GenericArgs;
use super::super::CommandName;
use crate::error::ErrorCode;
use bson::{Bson, Document};

const RETRYABLE_WRITE: &str = "RetryableWriteError";

/// mongod's `isRetriableError`: codes after which a retried write is safe.
fn is_retryable(code: i32) -> bool {
    matches!(
        code,
        6 | 7 | 89 | 91 | 134 | 189 | 262 | 9001 | 10107 | 11600 | 11602 | 13435 | 13436
    )
}

/// mongod's `isResumableChangeStreamError` codes: a change stream whose `getMore` failed with
/// one may resume (`ResumableChangeStreamError`): the retryable and network codes, those of a
/// stale shard, `RetryChangeStream` and `FailedToSatisfyReadPreference`.
pub fn is_resumable_change_stream_error(code: i32) -> bool {
    is_retryable(code) || matches!(code, 63 | 133 | 150 | 202 | 234 | 249 | 330 | 13388)
}

/// Adds the labels the rules give to `reply`, an answer to command `name` with the generic
/// fields `generic`, on a replica set member, unless it has labels already.
pub fn add(name: CommandName, generic: &GenericArgs<'_>, reply: &mut Document) {
    if reply.contains_key("errorLabels") {
        return;
    }
    let failed = !matches!(reply.get("ok"), Some(Bson::Double(ok)) if *ok == 1.0)
        && !matches!(reply.get("ok"), Some(Bson::Int32(1) | Bson::Int64(1)));
    let code = failed.then(|| reply.get_i32("code").ok()).flatten();
    let concern_code = reply
        .get_document("writeConcernError")
        .ok()
        .and_then(|wce| wce.get_i32("code").ok());
    if code.is_none() && concern_code.is_none() {
        return;
    }
    // A change stream that cannot go on says so (mongod's `NonResumableChangeStreamError`).
    if matches!(name, CommandName::GetMore | CommandName::Aggregate)
        && matches!(code, Some(280 | 286))
    {
        reply.insert("errorLabels", vec!["NonResumableChangeStreamError"]);
        return;
    }
    let in_transaction = generic.in_transaction();
    let commit_or_abort = matches!(
        name,
        CommandName::CommitTransaction | CommandName::AbortTransaction
    );
    let mut labels: Vec<&str> = Vec::new();
    if in_transaction && !commit_or_abort {
        if let Some(code) = code.and_then(ErrorCode::from_code) {
            labels.extend(super::super::transactions::labels(name, code));
        }
    } else if commit_or_abort {
        if let Some(code) = code {
            if is_retryable(code) {
                labels.push(RETRYABLE_WRITE);
            } else if let Some(code) = ErrorCode::from_code(code) {
                labels.extend(super::super::transactions::labels(name, code));
            }
        }
        if concern_code.is_some_and(is_retryable) {
            labels.push(RETRYABLE_WRITE);
        }
        // Unless the concern can never be met (100 UnsatisfiableWriteConcern, 79
        // UnknownReplWriteConcern): retrying will not help.
        let unknown_outcome = concern_code.is_some_and(|c| c != 100 && c != 79);
        if name == CommandName::CommitTransaction
            && (unknown_outcome || code.is_some_and(is_retryable))
            && !labels.contains(&"UnknownTransactionCommitResult")
        {
            labels.push("UnknownTransactionCommitResult");
        }
    } else if generic.txn_number.is_some()
        && (code.is_some_and(is_retryable) || concern_code.is_some_and(is_retryable))
    {
        labels.push(RETRYABLE_WRITE);
    }
    labels.dedup();
    if !labels.is_empty() {
        reply.insert("errorLabels", labels);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn error(code: i32) -> Document {
        doc! {"ok": 0.0, "errmsg": "x", "code": code}
    }

    #[test]
    fn labels_follow_mongods_rules() {
        let txn = doc! {"insert": "c", "txnNumber": 1_i64, "autocommit": false};
        let retryable = doc! {"insert": "c", "txnNumber": 1_i64};
        let plain = doc! {"insert": "c"};
        let commit = doc! {"commitTransaction": 1, "txnNumber": 1_i64, "autocommit": false};
        let cases: Vec<(CommandName, &Document, Document, Option<Vec<&str>>)> = vec![
            (
                CommandName::Insert,
                &txn,
                error(112),
                Some(vec!["TransientTransactionError"]),
            ),
            (CommandName::Insert, &txn, error(11000), None),
            (
                CommandName::Insert,
                &retryable,
                error(91),
                Some(vec![RETRYABLE_WRITE]),
            ),
            (CommandName::Insert, &retryable, error(11000), None),
            (CommandName::Insert, &plain, error(91), None),
            (
                CommandName::CommitTransaction,
                &commit,
                error(91),
                Some(vec![RETRYABLE_WRITE, "UnknownTransactionCommitResult"]),
            ),
            (
                CommandName::CommitTransaction,
                &commit,
                error(251),
                Some(vec!["TransientTransactionError"]),
            ),
            (
                CommandName::CommitTransaction,
                &commit,
                doc! {"ok": 1.0, "writeConcernError": {"code": 64, "errmsg": "x"}},
                Some(vec!["UnknownTransactionCommitResult"]),
            ),
            (
                CommandName::CommitTransaction,
                &commit,
                doc! {"ok": 1.0, "writeConcernError": {"code": 100, "errmsg": "x"}},
                None,
            ),
            (
                CommandName::Insert,
                &retryable,
                doc! {"ok": 1.0, "writeConcernError": {"code": 91, "errmsg": "x"}},
                Some(vec![RETRYABLE_WRITE]),
            ),
            (
                CommandName::Aggregate,
                &plain,
                error(280),
                Some(vec!["NonResumableChangeStreamError"]),
            ),
            (
                CommandName::Insert,
                &txn,
                doc! {"ok": 0.0, "code": 112, "errorLabels": ["Given"]},
                Some(vec!["Given"]),
            ),
        ];
        for (name, body, mut reply, expected) in cases {
            add(name, &GenericArgs::take(body), &mut reply);
            let got: Option<Vec<String>> = reply.get_array("errorLabels").ok().map(|labels| {
                labels
                    .iter()
                    .filter_map(|l| l.as_str().map(str::to_owned))
                    .collect()
            });
            let expected: Option<Vec<String>> =
                expected.map(|l| l.into_iter().map(str::to_owned).collect());
            assert_eq!(got, expected, "{name:?} {body} {reply}");
        }
    }
}
