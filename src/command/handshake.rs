//! `hello` / `isMaster` / `ismaster`: mayfly presents itself as a mongod 7.0 — a standalone, or
//! with `--replSet` the primary of a one-member replica set.
//!
//! The handshake also names a user's SASL mechanisms (`saslSupportedMechs`) and runs the first
//! step of a speculative SCRAM conversation (`speculativeAuthenticate`, left out of the reply
//! whenever that step fails, so the client authenticates the ordinary way).
//!
//! A standalone sends no `setName`, `msg: "isdbgrid"` or `topologyVersion`: drivers then treat
//! it as a standalone, send no `$readPreference` or `txnNumber`, and poll `hello` every 10
//! seconds. A replica-set member adds the set's fields and `topologyVersion` (`replset`), so
//! drivers discover it by its advertised host and monitor it with awaitable `hello`s: one that
//! names the current topology version waits up to `maxAwaitTimeMS` (on a timer, never holding
//! an async worker; shutdown and a closed connection end the wait) before it replies.

use super::args::{optional_array, optional_str};
use super::session_registry::LOGICAL_SESSION_TIMEOUT_MINUTES;
use super::{CommandName, Connection, Request, Shared};
use crate::error::{Error, ErrorCode, Result};
use crate::protocol::{Compressor, MAX_BSON_OBJECT_SIZE, MAX_MESSAGE_SIZE};
use bson::{doc, Bson, Document};

pub const MIN_WIRE_VERSION: i32 = 0;
/// `maxWriteBatchSize` in the Cosmos profile.
pub const COSMOS_MAX_WRITE_BATCH_SIZE: i32 = 1000;
pub use crate::protocol::MAX_WRITE_BATCH_SIZE;

pub async fn hello(shared: &Shared, conn: &mut Connection, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    let name = req.name.name();
    if let Some(rs) = &shared.replica_set {
        if let Some(wait) = rs.awaitable(cmd, name)? {
            tokio::select! {
                () = rs.wait(wait) => {}
                err = req.interrupt.interrupted() => return Err(err),
            }
        }
    }
    if let Some(client) = cmd.get("client") {
        if conn.client_metadata.is_some() {
            return Err(Error::new(
                ErrorCode::ClientMetadataCannotBeMutated,
                "The client metadata document may only be sent in the first hello",
            ));
        }
        let Bson::Document(meta) = client else {
            return Err(super::args::wrong_type(name, "client", client, "object"));
        };
        conn.client_metadata = Some(meta.clone());
        // The connection's open and close lines name the client; the whole document is detail.
        tracing::debug!(
            conn = conn.id,
            remote = %conn.peer,
            client = %conn.client_summary(),
            metadata = %meta,
            "client metadata"
        );
    }
    let legacy = req.name != CommandName::Hello;
    let mut reply = match &shared.replica_set {
        Some(rs) => rs.hello_fields(shared.engine.optimes(), legacy),
        None if legacy => doc! {"ismaster": true},
        None => doc! {"isWritablePrimary": true},
    };
    if cmd.get("helloOk").is_some_and(super::args::is_truthy) {
        reply.insert("helloOk", true);
    }
    reply.insert("maxBsonObjectSize", MAX_BSON_OBJECT_SIZE as i32);
    reply.insert("maxMessageSizeBytes", MAX_MESSAGE_SIZE as i32);
    let profile = &shared.config.profile;
    // A Cosmos account reports 1,000 (the one published `isMaster` reply of an account).
    let batch = if profile.is_cosmos() {
        COSMOS_MAX_WRITE_BATCH_SIZE
    } else {
        MAX_WRITE_BATCH_SIZE
    };
    reply.insert("maxWriteBatchSize", batch);
    reply.insert("localTime", shared.clock.now_datetime());
    reply.insert(
        "logicalSessionTimeoutMinutes",
        LOGICAL_SESSION_TIMEOUT_MINUTES,
    );
    reply.insert("connectionId", conn.id);
    reply.insert("minWireVersion", MIN_WIRE_VERSION);
    reply.insert("maxWireVersion", profile.max_wire_version());
    reply.insert("readOnly", false);
    if let Some(requested) = optional_array(cmd, name, "compression")? {
        conn.compressors = negotiate(requested);
        if !conn.compressors.is_empty() {
            let names: Vec<Bson> = conn
                .compressors
                .iter()
                .map(|c| Bson::from(c.name()))
                .collect();
            reply.insert("compression", names);
        }
    }
    if let Some(principal) = optional_str(cmd, name, "saslSupportedMechs")? {
        if let Some(mechanisms) = supported_mechanisms(shared, principal)? {
            reply.insert("saslSupportedMechs", mechanisms);
        }
    }
    if let Some(Bson::Document(spec)) = cmd.get("speculativeAuthenticate") {
        if let Some(first_step) = super::sasl::speculative_start(shared, conn, spec) {
            reply.insert("speculativeAuthenticate", first_step);
        }
    }
    reply.insert("ok", 1.0);
    Ok(reply)
}

/// The mechanisms the user `"<db>.<user>"` has credentials for; `None` (the field is left
/// out, as mongod does) for a user that does not exist.
fn supported_mechanisms(shared: &Shared, principal: &str) -> Result<Option<Vec<Bson>>> {
    let Some((db, user)) = principal.split_once('.') else {
        return Err(Error::bad_value(
            "UserName must contain a '.' separated database.user pair",
        ));
    };
    let catalog = shared.engine.catalog()?;
    let Some(user) = catalog.user(db, user) else {
        tracing::info!(
            user,
            db,
            "Supported SASL mechanisms requested for unknown user"
        );
        return Ok(None);
    };
    Ok(Some(
        user.credentials
            .mechanisms()
            .into_iter()
            .map(|m| Bson::from(m.name()))
            .collect(),
    ))
}

/// The client's compressors that mayfly supports, in the client's order of preference.
fn negotiate(requested: &[Bson]) -> Vec<Compressor> {
    let mut agreed = Vec::new();
    for name in requested.iter().filter_map(Bson::as_str) {
        if let Some(c) = Compressor::from_name(name) {
            if !agreed.contains(&c) {
                agreed.push(c);
            }
        }
    }
    agreed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_keeps_client_order_and_drops_unknown() {
        let requested = vec![
            Bson::from("zstd"),
            Bson::from("lz4"),
            Bson::from("snappy"),
            Bson::from("zstd"),
        ];
        assert_eq!(
            negotiate(&requested),
            vec![Compressor::Zstd, Compressor::Snappy]
        );
    }

    #[test]
    fn nothing_agreed_for_an_empty_list() {
        assert!(negotiate(&[]).is_empty());
    }
}
