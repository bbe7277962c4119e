//! OP_QUERY (opcode 2004), which drivers still use for the first handshake, and the OP_REPLY
//! (opcode 1) that answers it.

use super::op_msg::parse_document;
use super::{Reader, WireError, MAX_COMMAND_SIZE, MAX_MESSAGE_SIZE};
use crate::error::Error;
use bson::Document;

/// A decoded OP_QUERY. Flags are read and ignored, as mongod does for commands.
#[derive(Debug, Clone, PartialEq)]
pub struct OpQuery {
    pub flags: i32,
    pub full_collection_name: String,
    pub number_to_skip: i32,
    pub number_to_return: i32,
    /// The query document, or why it is not a valid one.
    pub query: Result<Document, Error>,
}

impl OpQuery {
    /// The database part of `fullCollectionName` and whether it names `<db>.$cmd`.
    pub fn command_database(&self) -> Option<&str> {
        self.full_collection_name
            .strip_suffix(".$cmd")
            .filter(|db| !db.is_empty())
    }
}

pub fn parse(payload: &[u8]) -> Result<OpQuery, WireError> {
    let mut r = Reader::new(payload, "OP_QUERY");
    let flags = r.i32()?;
    let full_collection_name = r.cstring()?.to_owned();
    let number_to_skip = r.i32()?;
    let number_to_return = r.i32()?;
    let query_bytes = r.bson_bytes(MAX_MESSAGE_SIZE)?;
    // An optional returnFieldsSelector may follow; commands ignore it, but it must be framed.
    if !r.is_empty() {
        r.bson_bytes(MAX_MESSAGE_SIZE)?;
    }
    if !r.is_empty() {
        return Err(WireError::malformed(
            "OP_QUERY",
            "trailing bytes after the documents",
        ));
    }
    Ok(OpQuery {
        flags,
        full_collection_name,
        number_to_skip,
        number_to_return,
        query: parse_document(query_bytes, MAX_COMMAND_SIZE),
    })
}

/// OP_REPLY's `QueryFailure` flag: the one document is an error with `$err`.
pub const QUERY_FAILURE: i32 = 1 << 1;

/// Encodes an OP_REPLY payload carrying one document: `response_flags`, cursorID 0,
/// startingFrom 0, numberReturned 1.
pub fn encode_reply_payload(
    doc: &Document,
    response_flags: i32,
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
    out.extend_from_slice(&response_flags.to_le_bytes());
    out.extend_from_slice(&0i64.to_le_bytes());
    out.extend_from_slice(&0i32.to_le_bytes());
    out.extend_from_slice(&1i32.to_le_bytes());
    doc.to_writer(out)
        .map_err(|e| WireError::malformed("reply", e.to_string()))
}

/// Encodes an OP_QUERY payload (used by tests and tools).
pub fn encode_request_payload(
    full_collection_name: &str,
    query: &Document,
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
    out.extend_from_slice(&0i32.to_le_bytes());
    out.extend_from_slice(full_collection_name.as_bytes());
    out.push(0);
    out.extend_from_slice(&0i32.to_le_bytes());
    out.extend_from_slice(&(-1i32).to_le_bytes());
    query
        .to_writer(out)
        .map_err(|e| WireError::malformed("request", e.to_string()))
}

/// Parses an OP_REPLY payload into its response flags and documents (used by tests and tools).
pub fn parse_reply_payload(payload: &[u8]) -> Result<(i32, Vec<Document>), WireError> {
    let mut r = Reader::new(payload, "OP_REPLY");
    let flags = r.i32()?;
    r.take(8)?;
    let _starting_from = r.i32()?;
    let count = r.i32()?;
    let mut docs = Vec::new();
    for _ in 0..count.max(0) {
        let bytes = r.bson_bytes(MAX_MESSAGE_SIZE)?;
        docs.push(
            parse_document(bytes, MAX_MESSAGE_SIZE)
                .map_err(|e| WireError::malformed("OP_REPLY", e.message))?,
        );
    }
    Ok((flags, docs))
}
