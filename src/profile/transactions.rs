//! Transactions as Cosmos DB has them ([`Rule::TransactionLimits`]): a fixed 5-second
//! lifetime, after which the transaction's statements and its commit answer 2 "Transaction is
//! not active" (the service's error, Substatus 1101); none on a sharded collection (50841);
//! one collection per transaction. No source gives Cosmos's error for a statement on a second
//! collection: mayfly answers mongod's code for an operation a transaction does not allow
//! (263), in its own words.

use super::refusal::{refuse, refuse_from_service, ServiceFailure};
use super::Rule;
use crate::error::{Error, ErrorCode};
use std::time::Duration;

/// The lifetime of a Cosmos transaction.
pub const LIFETIME: Duration = Duration::from_secs(5);

/// The service's text for a transaction that timed out or was aborted.
pub const NOT_ACTIVE: &str = "Transaction is not active";

/// Cosmos's text for a transaction on a sharded collection.
pub const SHARDED: &str = "Multi-document transactions cannot be run in a sharded collection";

/// Cosmos's answer where mongod answers 251 NoSuchTransaction.
pub fn not_active() -> Error {
    refuse_from_service(
        Rule::TransactionLimits,
        ErrorCode::BadValue,
        ServiceFailure {
            status: "BadRequest (400)",
            substatus: 1101,
            message: NOT_ACTIVE,
        },
    )
}

/// A transaction's statement on a sharded collection.
pub fn on_sharded_collection() -> Error {
    refuse(Rule::TransactionLimits, ErrorCode::Location50841, SHARDED)
}

/// A transaction's statement on `namespace` after statements on `first`.
pub fn on_second_collection(first: &str, namespace: &str) -> Error {
    refuse(
        Rule::TransactionLimits,
        ErrorCode::OperationNotSupportedInTransaction,
        &format!(
            "Cosmos DB runs a multi-document transaction within one collection: this \
             transaction is on {first}, not {namespace}"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosmos_words_them_so() {
        let err = not_active();
        assert_eq!(err.code.code(), 2);
        assert!(err.message.starts_with(
            "Error=2, Details='Response status code does not indicate success: BadRequest (400); Substatus: 1101; ActivityId: "
        ));
        assert!(err
            .message
            .contains(r#"{"Errors":["Transaction is not active"]}"#));
        assert_eq!(on_sharded_collection().code.code(), 50841);
        let second = on_second_collection("db.a", "db.b");
        assert_eq!(second.code.code(), 263);
        assert!(second.message.starts_with(
            "Cosmos DB runs a multi-document transaction within one collection: this transaction is on db.a, not db.b\n"
        ));
    }
}
