//! Replica-set mode (`--replSet NAME`): mayfly is the one member of a replica set, its primary,
//! as a one-member mongod 7.0 set answers. This module owns the member's advertised host, the
//! exhaust stream of an awaitable `hello`, the `$clusterTime` / `operationTime` reply fields,
//! and the read and write concerns a replica set accepts.
//!
//! Does not own: the member's state (`state::replica_set`: identity, topology version,
//! election, `hello`'s fields, the awaitable wait; re-exported here), operation times
//! (`engine::oplog::optime`), sessions, transactions, retryable writes or the operation log,
//! nor the `replSet*` commands (`admin::replset`). In a standalone server (no `--replSet`)
//! nothing here is consulted.
pub(in crate::command) mod concern;
mod times;

pub use super::state::replica_set::{op_time, ReplicaSet, CONFIG_VERSION, TERM};
pub use concern::{check_read_concern, check_transaction_concerns, write_concern_error};
pub use times::{check_gossip, decorate};

use bson::{Bson, Document};
use std::net::SocketAddr;

/// The `host:port` the member advertises: `--advertise-host` if given, else the first bind
/// address (`localhost` for a wildcard such as 0.0.0.0, which no client can reach) and the port
/// the server actually listens on.
pub fn advertised_host(
    configured: Option<&str>,
    first_bind: &str,
    listening: SocketAddr,
) -> String {
    if let Some(host) = configured {
        return host.to_owned();
    }
    let host = match first_bind.parse::<std::net::IpAddr>() {
        Ok(ip) if ip.is_unspecified() => "localhost".to_owned(),
        Ok(std::net::IpAddr::V6(ip)) => format!("[{ip}]"),
        _ => first_bind.to_owned(),
    };
    format!("{host}:{}", listening.port())
}

/// Whether a command is an awaitable `hello` (one that may wait `maxAwaitTimeMS`): its
/// duration is not logged as a slow command, as mongod leaves it out of latency statistics.
pub fn is_awaitable_hello(body: &Document) -> bool {
    body.keys()
        .next()
        .is_some_and(|name| matches!(name.as_str(), "hello" | "isMaster" | "ismaster"))
        && body.contains_key("maxAwaitTimeMS")
}

/// What an exhaust `hello` asks to run next: the same command, unless the reply is an error.
/// mongod streams (replies with `moreToCome` and runs the command again, without waiting for
/// a request) only an awaitable `hello` whose request allowed exhaust. The next invocation
/// carries the topology version this reply gave.
pub fn exhaust_next(shared: &super::Shared, body: &Document, reply: &Document) -> Option<Document> {
    shared.replica_set.as_ref()?;
    let name = body.keys().next()?;
    if !matches!(name.as_str(), "hello" | "isMaster" | "ismaster") {
        return None;
    }
    if reply.get("ok") != Some(&Bson::Double(1.0))
        || !body.contains_key("maxAwaitTimeMS")
        || !body.contains_key("topologyVersion")
    {
        return None;
    }
    let current = reply.get_document("topologyVersion").ok()?;
    let mut next = body.clone();
    next.insert("topologyVersion", current.clone());
    Some(next)
}

#[cfg(test)]
mod tests;
