//! Logical time on the wire: the `$clusterTime` and `operationTime` every reply of a
//! replica-set member carries (success and error alike, as mongod adds them), and the
//! `$clusterTime` clients gossip back.
//!
//! The cluster time is the member's last operation time (`ReplicaSet::last_op_time`): a one-member set has no other
//! member whose time could be ahead. It is signed with mongod's dummy signature (a zero hash,
//! key id 0), what a member without a keyfile sends. A gossiped cluster time is checked for
//! shape and otherwise not adopted: nothing in the set can issue times past the member's own.

use super::ReplicaSet;
use crate::command::Shared;
use crate::error::{Error, ErrorCode, Result};
use crate::protocol::Reply;
use bson::spec::BinarySubtype;
use bson::{doc, Binary, Bson, Document, Timestamp};

/// Appends `$clusterTime` and `operationTime` to a reply, after `ok`.
pub fn decorate(rs: &ReplicaSet, shared: &Shared, reply: &mut Reply) {
    let now = rs.last_op_time(shared.engine.optimes());
    let cluster_time = cluster_time(now);
    match reply {
        Reply::Document(d) => {
            d.insert("$clusterTime", cluster_time);
            d.insert("operationTime", now);
        }
        Reply::Raw(raw) => {
            if let Ok(cluster_time) = bson::RawDocumentBuf::from_document(&cluster_time) {
                raw.append("$clusterTime", cluster_time);
                raw.append("operationTime", now);
            }
        }
    }
}

/// `{clusterTime, signature: {hash: 20 zero bytes, keyId: 0}}`.
pub fn cluster_time(ts: Timestamp) -> Document {
    doc! {
        "clusterTime": ts,
        "signature": {
            "hash": Binary { subtype: BinarySubtype::Generic, bytes: vec![0; 20] },
            "keyId": 0i64,
        },
    }
}

/// Checks a gossiped `$clusterTime` (its generic field) as mongod reads it (`LogicalTimeMetadata`): an object
/// with a Timestamp `clusterTime` and a `signature` holding a BinData `hash` and an integer
/// `keyId`.
pub fn check_gossip(cluster_time: Option<&Bson>) -> Result<()> {
    let Some(value) = cluster_time else {
        return Ok(());
    };
    let Bson::Document(gossip) = value else {
        return Err(wrong_type("$clusterTime", "object", value));
    };
    match gossip.get("clusterTime") {
        Some(Bson::Timestamp(_)) => {}
        Some(other) => return Err(wrong_type("clusterTime", "timestamp", other)),
        None => return Err(missing("clusterTime")),
    }
    let signature = match gossip.get("signature") {
        Some(Bson::Document(s)) => s,
        Some(other) => return Err(wrong_type("signature", "object", other)),
        None => return Err(missing("signature")),
    };
    match signature.get("hash") {
        Some(Bson::Binary(_)) => {}
        Some(other) => return Err(wrong_type("hash", "binData", other)),
        None => return Err(missing("hash")),
    }
    match signature.get("keyId") {
        Some(Bson::Int32(_) | Bson::Int64(_)) => Ok(()),
        Some(Bson::Double(d)) if d.fract() == 0.0 => Ok(()),
        Some(other) => Err(wrong_type("keyId", "long", other)),
        None => Err(missing("keyId")),
    }
}

/// mongod's `bsonExtractTypedField` refusal of a field of another type.
fn wrong_type(field: &str, expected: &str, found: &Bson) -> Error {
    Error::type_mismatch(format!(
        "\"{field}\" had the wrong type. Expected {expected}, found {}",
        crate::command::args::type_name(found)
    ))
}

fn missing(field: &str) -> Error {
    Error::new(
        ErrorCode::NoSuchKey,
        format!("Missing expected field \"{field}\""),
    )
}
