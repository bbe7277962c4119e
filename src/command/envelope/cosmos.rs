//! The Cosmos profile's rules that apply to a whole command (`--compat cosmos`): which commands
//! exist (the command table's `CosmosOnly` and `NotInCosmos` facts: Cosmos's own only in its
//! profile, mayfly's that an account lacks refused), the
//! aggregation stages of the account's version, the refusal of retryable writes, transactions
//! on sharded collections, and Cosmos's words for a transaction that is no longer open. The
//! rules on indexes, sorts, documents and shard keys apply where those are decided
//! ([`crate::profile`]).

use super::super::table::Fact;
use super::super::{Request, Shared};
use crate::error::{Error, ErrorCode, Result};
use crate::profile::refusal::refuse;
use crate::profile::{Profile, Rule};

/// Cosmos's text when an account without the `EnableMongoRetryableWrites` capability gets a
/// retryable write.
pub const RETRYABLE_WRITES: &str = "Retryable writes are not supported. Please disable retryable writes by specifying \"retrywrites=false\" in the connection string or an equivalent driver specific config.";

/// Refuses `req` as the account would, before it runs.
pub fn check(profile: &Profile, req: &Request<'_>) -> Result<()> {
    if !profile.is_cosmos() {
        return Ok(());
    }
    let name = req.name.name();
    if profile.enforces(Rule::UnsupportedCommands) && req.name.has(Fact::NotInCosmos) {
        return Err(refuse(
            Rule::UnsupportedCommands,
            ErrorCode::CommandNotSupported,
            &format!("Command {name} not supported."),
        ));
    }
    if profile.enforces(Rule::UnsupportedOperators) {
        // A parsed command's filters and expressions; a command without a spec, its document.
        match req.parsed.expressions() {
            Some(documents) => {
                crate::profile::operators::check_documents(profile.version, documents)?
            }
            None => crate::profile::operators::check(profile.version, req.body)?,
        }
    }
    if profile.enforces(Rule::UnsupportedStages) {
        if let Ok(aggregate) = req.parsed.aggregate() {
            crate::profile::stages::check_stages(profile.version, &aggregate.pipeline)?;
        }
    }
    let retryable_write = req.session.txn_number.is_some() && req.session.transaction.is_none();
    if profile.enforces(Rule::RetryableWrites) && retryable_write {
        return Err(refuse(
            Rule::RetryableWrites,
            ErrorCode::BadValue,
            RETRYABLE_WRITES,
        ));
    }
    Ok(())
}

/// mongod's error as the account words it where they differ: a transaction that is no longer
/// open (timed out after 5 seconds, or aborted) is "not active" to Cosmos.
pub fn translate(profile: &Profile, err: Error) -> Error {
    if err.code == ErrorCode::NoSuchTransaction && profile.enforces(Rule::TransactionLimits) {
        return crate::profile::transactions::not_active();
    }
    err
}

/// A transaction's statement on a sharded collection: Cosmos runs none (50841); on a second
/// collection: Cosmos keeps a transaction to one.
pub fn check_in_transaction(shared: &Shared, req: &Request<'_>) -> Result<()> {
    if !shared.config.profile.enforces(Rule::TransactionLimits) {
        return Ok(());
    }
    let Some(collection) = super::profiler::collection_of(req.body, Some(&req.parsed)) else {
        return Ok(());
    };
    let sharded = shared
        .engine
        .catalog()?
        .get(req.db, collection)
        .is_some_and(|meta| meta.shard_key().is_some());
    if sharded {
        return Err(crate::profile::transactions::on_sharded_collection());
    }
    let (Some(session), Some(statement)) = (req.session.session, req.session.transaction) else {
        return Ok(());
    };
    let namespace = format!("{}.{collection}", req.db);
    match shared
        .transactions
        .claim_namespace(session, statement.number, &namespace)?
    {
        Some(first) => Err(crate::profile::transactions::on_second_collection(
            &first, &namespace,
        )),
        None => Ok(()),
    }
}
