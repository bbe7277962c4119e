//! `hello` / `isMaster` / `ismaster`: mayfly presents itself as a standalone mongod 7.0.
//!
//! No `setName`, `msg: "isdbgrid"` or `topologyVersion`: drivers then treat the server as a
//! standalone, send no `$readPreference` or `txnNumber`, and poll `hello` every 10 seconds.

use super::args::{optional_array, optional_str};
use super::{CommandName, Connection, Request, Shared};
use crate::error::{Error, ErrorCode, Result};
use crate::protocol::{Compressor, MAX_BSON_OBJECT_SIZE, MAX_MESSAGE_SIZE};
use bson::{Bson, Document};

pub const MIN_WIRE_VERSION: i32 = 0;
/// MongoDB 7.0.
pub const MAX_WIRE_VERSION: i32 = 21;
pub use crate::protocol::MAX_WRITE_BATCH_SIZE;
pub const LOGICAL_SESSION_TIMEOUT_MINUTES: i32 = 30;

pub fn hello(shared: &Shared, conn: &mut Connection, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    let name = req.name.name();
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
        tracing::info!(
            conn = conn.id,
            remote = %conn.peer,
            client = %conn.client_summary(),
            metadata = %meta,
            "client metadata"
        );
    }
    let mut reply = Document::new();
    if req.name == CommandName::Hello {
        reply.insert("isWritablePrimary", true);
    } else {
        reply.insert("ismaster", true);
    }
    if cmd.get("helloOk").is_some_and(super::args::is_truthy) {
        reply.insert("helloOk", true);
    }
    reply.insert("maxBsonObjectSize", MAX_BSON_OBJECT_SIZE as i32);
    reply.insert("maxMessageSizeBytes", MAX_MESSAGE_SIZE as i32);
    reply.insert("maxWriteBatchSize", MAX_WRITE_BATCH_SIZE);
    reply.insert("localTime", shared.clock.now_datetime());
    reply.insert(
        "logicalSessionTimeoutMinutes",
        LOGICAL_SESSION_TIMEOUT_MINUTES,
    );
    reply.insert("connectionId", conn.id);
    reply.insert("minWireVersion", MIN_WIRE_VERSION);
    reply.insert("maxWireVersion", MAX_WIRE_VERSION);
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
    if optional_str(cmd, name, "saslSupportedMechs")?.is_some() {
        // mayfly has no users, so no mechanism can authenticate the named user.
        reply.insert("saslSupportedMechs", Bson::Array(Vec::new()));
    }
    reply.insert("ok", 1.0);
    Ok(reply)
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
