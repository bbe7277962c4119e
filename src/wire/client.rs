//! The client side of the protocol, for tests and tools that speak raw wire messages: build
//! OP_MSG (with document sequences, flags, a checksum, compression), OP_QUERY and legacy requests,
//! and read the server's replies. The server itself never uses this module.

use super::codec::{decode_frame, write_message, Request};
use super::compression::Compressor;
use super::header::{Header, OpCode, HEADER_LEN};
use super::{legacy, op_msg, op_query, MsgFlags, WireError};
use bson::Document;
use bytes::BytesMut;

/// Options for an OP_MSG request.
#[derive(Debug, Default, Clone)]
pub struct MsgOptions<'a> {
    pub flags: u32,
    pub sequences: Vec<(&'a str, Vec<Document>)>,
    pub checksum: bool,
    pub compressor: Option<Compressor>,
}

/// Encodes an OP_MSG request.
pub fn op_msg(
    request_id: i32,
    body: &Document,
    opts: &MsgOptions<'_>,
) -> Result<Vec<u8>, WireError> {
    let mut flags = opts.flags;
    if opts.checksum {
        flags |= MsgFlags::CHECKSUM_PRESENT;
    }
    let mut payload = Vec::new();
    op_msg::encode_request_payload(MsgFlags(flags), body, &opts.sequences, &mut payload)?;
    if opts.checksum {
        let header = Header {
            length: i32::try_from(HEADER_LEN + payload.len() + 4)
                .map_err(|_| WireError::BadLength(payload.len() as i64))?,
            request_id,
            response_to: 0,
            op_code: OpCode::Msg as i32,
        };
        let mut raw = BytesMut::with_capacity(HEADER_LEN);
        header.write(&mut raw);
        let mut fixed = [0u8; HEADER_LEN];
        fixed.copy_from_slice(&raw);
        op_msg::append_checksum(&fixed, &mut payload);
    }
    let mut out = BytesMut::new();
    write_message(
        request_id,
        0,
        OpCode::Msg,
        &payload,
        opts.compressor,
        &mut out,
    )?;
    Ok(out.to_vec())
}

/// Encodes a message of any opcode around `payload` (removed legacy opcodes, unknown ones).
pub fn raw_message(request_id: i32, op_code: i32, payload: &[u8]) -> Vec<u8> {
    let length = i32::try_from(HEADER_LEN + payload.len()).unwrap_or(i32::MAX);
    let mut out = BytesMut::with_capacity(HEADER_LEN + payload.len());
    Header {
        length,
        request_id,
        response_to: 0,
        op_code,
    }
    .write(&mut out);
    out.extend_from_slice(payload);
    out.to_vec()
}

/// Encodes a message of any opcode around `payload`, inside OP_COMPRESSED.
pub fn raw_compressed(
    request_id: i32,
    op_code: i32,
    payload: &[u8],
    compressor: Compressor,
) -> Result<Vec<u8>, WireError> {
    let body = super::compression::compress(compressor, op_code, payload)?;
    Ok(raw_message(request_id, OpCode::Compressed as i32, &body))
}

/// Encodes an OP_INSERT request carrying `documents`.
pub fn op_insert(
    request_id: i32,
    namespace: &str,
    documents: &[Document],
) -> Result<Vec<u8>, WireError> {
    let mut payload = Vec::new();
    legacy::encode_insert_payload(namespace, documents, &mut payload)?;
    Ok(raw_message(request_id, 2002, &payload))
}

/// Encodes an OP_QUERY request (`numberToReturn` -1, as drivers send for commands).
pub fn op_query(request_id: i32, namespace: &str, query: &Document) -> Result<Vec<u8>, WireError> {
    let mut payload = Vec::new();
    op_query::encode_request_payload(namespace, query, &mut payload)?;
    let mut out = BytesMut::new();
    write_message(request_id, 0, OpCode::Query, &payload, None, &mut out)?;
    Ok(out.to_vec())
}

/// A reply as a client reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub header: Header,
    /// The opcode of the reply before any compression: OP_MSG (2013) or OP_REPLY (1).
    pub op_code: i32,
    pub compressed: bool,
    /// OP_REPLY's `responseFlags`, or OP_MSG's flag bits (`moreToCome` in an exhaust stream).
    pub response_flags: i32,
    pub document: Document,
}

/// Decodes one complete reply frame (OP_MSG, OP_REPLY, or either inside OP_COMPRESSED).
pub fn read_reply(frame: &[u8]) -> Result<Reply, WireError> {
    let header = Header::parse(frame)?;
    let payload = frame.get(HEADER_LEN..).unwrap_or_default();
    let inner = if header.op_code == OpCode::Compressed as i32 {
        Some(super::compression::decompress(payload)?)
    } else {
        None
    };
    let (op_code, payload) = match &inner {
        Some(d) => (d.original_op_code, d.payload.as_slice()),
        None => (header.op_code, payload),
    };
    if op_code == OpCode::Reply as i32 {
        let (response_flags, docs) = op_query::parse_reply_payload(payload)?;
        let document = docs
            .into_iter()
            .next()
            .ok_or_else(|| WireError::malformed("OP_REPLY", "no document"))?;
        return Ok(Reply {
            header,
            op_code: OpCode::Reply as i32,
            compressed: inner.is_some_and(|d| d.compressor.is_some()),
            response_flags,
            document,
        });
    }
    let incoming = decode_frame(frame)?;
    let compressed = incoming.compressor.is_some();
    match incoming.request {
        Request::Msg(msg) => Ok(Reply {
            header,
            op_code: OpCode::Msg as i32,
            compressed,
            response_flags: msg.flags.0 as i32,
            document: msg
                .body
                .map_err(|e| WireError::malformed("OP_MSG", e.message))?,
        }),
        Request::Query(_) | Request::Legacy(_) => Err(WireError::malformed(
            "reply",
            format!("opcode {} is not a reply", header.op_code),
        )),
    }
}
