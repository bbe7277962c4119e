//! The client side of the protocol, for tests and tools that speak raw wire messages: build
//! OP_MSG (with document sequences, flags, a checksum, compression) and OP_QUERY requests, and
//! read the server's replies. The server itself never uses this module.

use super::codec::{decode_frame, write_message, Request};
use super::compression::Compressor;
use super::header::{Header, OpCode, HEADER_LEN};
use super::{op_msg, op_query, MsgFlags, WireError};
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
    pub document: Document,
}

/// Decodes one complete reply frame (OP_MSG, OP_REPLY, or either inside OP_COMPRESSED).
pub fn read_reply(frame: &[u8]) -> Result<Reply, WireError> {
    let header = Header::parse(frame)?;
    let payload = frame.get(HEADER_LEN..).unwrap_or_default();
    if header.op_code == OpCode::Reply as i32 {
        let docs = op_query::parse_reply_payload(payload)?;
        let document = docs
            .into_iter()
            .next()
            .ok_or_else(|| WireError::malformed("OP_REPLY", "no document"))?;
        return Ok(Reply {
            header,
            op_code: OpCode::Reply as i32,
            compressed: false,
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
            document: msg
                .body
                .map_err(|e| WireError::malformed("OP_MSG", e.message))?,
        }),
        Request::Query(_) => Err(WireError::malformed("reply", "OP_QUERY is not a reply")),
    }
}
