//! The Cosmos profile's rules that apply to a whole command (`--compat cosmos`): the commands
//! an account lacks and its refusal of retryable writes. The rules on indexes, sorts and
//! document sizes apply where those are decided ([`crate::profile`]).

use super::Request;
use crate::error::{ErrorCode, Result};
use crate::profile::refusal::refuse;
use crate::profile::{Profile, Rule};

/// Commands mayfly has that Cosmos DB for MongoDB (RU) does not, at every server version (the
/// feature-support tables for 3.6 to 7.0); each answers 115 `Command <name> not supported.`,
/// as Cosmos answers `collMod` and `hostInfo`.
const UNSUPPORTED: &[&str] = &[
    "collMod",
    "renameCollection",
    "killOp",
    "connectionStatus",
    "listCommands",
    "hostInfo",
    "top",
    "profile",
];

/// Cosmos's text when an account without the `EnableMongoRetryableWrites` capability gets a
/// retryable write.
pub const RETRYABLE_WRITES: &str = "Retryable writes are not supported. Please disable retryable writes by specifying \"retrywrites=false\" in the connection string or an equivalent driver specific config.";

/// Refuses `req` as the account would, before it runs.
pub fn check(profile: &Profile, req: &Request<'_>) -> Result<()> {
    if !profile.is_cosmos() {
        return Ok(());
    }
    let name = req.name.name();
    if profile.enforces(Rule::UnsupportedCommands) && UNSUPPORTED.contains(&name) {
        return Err(refuse(
            Rule::UnsupportedCommands,
            ErrorCode::CommandNotSupported,
            &format!("Command {name} not supported."),
        ));
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
