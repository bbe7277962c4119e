//! The tokio-util codec: bytes to [`Incoming`] requests, [`Outgoing`] replies to bytes.

use super::compression::{self, Compressor};
use super::header::{check_length, Header, OpCode, HEADER_LEN};
use super::legacy::LegacyOp;
use super::op_msg::{self, OpMsg};
use super::op_query::{self, OpQuery};
use super::{WireError, MAX_MESSAGE_SIZE};
use bson::Document;
use bytes::BytesMut;
use std::sync::atomic::{AtomicI32, Ordering};
use tokio_util::codec::{Decoder, Encoder};

/// A request as the client sent it, after decompression.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Msg(OpMsg),
    Query(OpQuery),
    /// A removed or unknown opcode: framed and answered (or not) as mongod does, never run.
    Legacy(LegacyOp),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Incoming {
    pub header: Header,
    /// The compressor the request arrived with, if it came in an OP_COMPRESSED.
    pub compressor: Option<Compressor>,
    /// The length of the message before compression (`header.length` when uncompressed).
    pub original_length: usize,
    pub request: Request,
}

/// How a reply is framed: OP_MSG answers OP_MSG, OP_REPLY answers OP_QUERY.
#[derive(Debug, Clone, PartialEq)]
pub enum ReplyBody {
    Msg(Document),
    /// An OP_MSG body already encoded.
    RawMsg(bson::RawDocumentBuf),
    /// An OP_MSG reply with `moreToCome`: the request allowed exhaust, and the server sends
    /// another reply to this one without waiting for a request.
    MsgMoreToCome(Document),
    Reply(Document),
    /// An OP_REPLY with the `QueryFailure` flag: mongod's answer to a removed read opcode.
    ReplyFailure(Document),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    pub response_to: i32,
    pub body: ReplyBody,
    pub compressor: Option<Compressor>,
}

/// How far ahead of the bytes received the read buffer grows for one message. A header may
/// claim up to 48 MB; the buffer grows with what actually arrives, so a connection that
/// announces a large message and sends a few bytes holds a few bytes, not 48 MB.
pub const READ_AHEAD: usize = 64 * 1024;

/// While the process holds more than its memory limit ([`crate::allocation`]), a message
/// still arriving may hold this much before its connection is closed.
pub const PARTIAL_BYTES_UNDER_PRESSURE: usize = 1 << 20;

/// Reply request ids are unique across the server.
static NEXT_REQUEST_ID: AtomicI32 = AtomicI32::new(1);

/// Frames messages; counts the bytes of the replies it encodes (for `serverStatus.network`).
#[derive(Debug, Default, Clone, Copy)]
pub struct MessageCodec {
    /// Bytes of every reply encoded so far, as sent.
    pub bytes_encoded: u64,
    /// The last reply's length before compression.
    pub last_original_length: usize,
    /// The last reply's request id (the next reply of an exhaust stream responds to it).
    pub last_request_id: i32,
}

impl Decoder for MessageCodec {
    type Item = Incoming;
    type Error = WireError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Incoming>, WireError> {
        let Some(prefix) = src.get(..4) else {
            return Ok(None);
        };
        let mut len_bytes = [0u8; 4];
        len_bytes.copy_from_slice(prefix);
        // Checked before a single byte of the body is buffered for it.
        let len = check_length(i64::from(i32::from_le_bytes(len_bytes)))?;
        if src.len() < len {
            // Messages still arriving belong to no operation, so nothing else stops one from
            // holding memory the server no longer has: past the process's limit, a connection
            // whose message has buffered more than a little is closed.
            if src.len() > PARTIAL_BYTES_UNDER_PRESSURE && crate::allocation::over_limit() {
                return Err(WireError::OverMemoryLimit {
                    received: src.len(),
                    length: len,
                });
            }
            src.reserve((len - src.len()).min(READ_AHEAD));
            return Ok(None);
        }
        let frame = src.split_to(len);
        decode_frame(&frame).map(Some)
    }
}

/// Decodes one complete message.
pub fn decode_frame(frame: &[u8]) -> Result<Incoming, WireError> {
    let (header_bytes, payload) = frame.split_at(HEADER_LEN.min(frame.len()));
    let header = Header::parse(header_bytes)?;
    if header.op_code != OpCode::Compressed as i32 {
        return Ok(Incoming {
            header,
            compressor: None,
            original_length: frame.len(),
            request: decode_request(header.op_code, header_bytes, payload)?,
        });
    }
    let inner = compression::decompress(payload)?;
    // The checksum of a compressed OP_MSG covers the original, uncompressed message.
    let original_header = Header {
        length: i32::try_from(HEADER_LEN + inner.payload.len())
            .map_err(|_| WireError::BadLength(inner.payload.len() as i64))?,
        op_code: inner.original_op_code,
        ..header
    };
    let mut raw_header = BytesMut::with_capacity(HEADER_LEN);
    original_header.write(&mut raw_header);
    let request = decode_request(inner.original_op_code, &raw_header, &inner.payload)?;
    Ok(Incoming {
        header,
        compressor: inner.compressor,
        original_length: HEADER_LEN + inner.payload.len(),
        request,
    })
}

fn decode_request(op_code: i32, header: &[u8], payload: &[u8]) -> Result<Request, WireError> {
    match op_code {
        c if c == OpCode::Msg as i32 => Ok(Request::Msg(op_msg::parse(header, payload)?)),
        c if c == OpCode::Query as i32 => Ok(Request::Query(op_query::parse(payload)?)),
        // One compression layer only: a compressed message inside another cannot be framed.
        c if c == OpCode::Compressed as i32 => Err(WireError::UnknownOpCode(c)),
        other => Ok(Request::Legacy(LegacyOp::from_request(other, payload))),
    }
}

impl Encoder<Outgoing> for MessageCodec {
    type Error = WireError;

    fn encode(&mut self, item: Outgoing, dst: &mut BytesMut) -> Result<(), WireError> {
        let (op, payload) = match &item.body {
            ReplyBody::Msg(doc) => {
                let mut p = Vec::new();
                op_msg::encode_payload(doc, &mut p)?;
                (OpCode::Msg, p)
            }
            ReplyBody::MsgMoreToCome(doc) => {
                let mut p = Vec::new();
                op_msg::encode_payload_with_flags(
                    op_msg::MsgFlags(op_msg::MsgFlags::MORE_TO_COME),
                    doc,
                    &mut p,
                )?;
                (OpCode::Msg, p)
            }
            ReplyBody::RawMsg(raw) => {
                let mut p = Vec::new();
                op_msg::encode_raw_payload(raw.as_bytes(), &mut p);
                (OpCode::Msg, p)
            }
            ReplyBody::Reply(doc) => {
                let mut p = Vec::new();
                op_query::encode_reply_payload(doc, 0, &mut p)?;
                (OpCode::Reply, p)
            }
            ReplyBody::ReplyFailure(doc) => {
                let mut p = Vec::new();
                op_query::encode_reply_payload(doc, op_query::QUERY_FAILURE, &mut p)?;
                (OpCode::Reply, p)
            }
        };
        let request_id = NEXT_REQUEST_ID.fetch_add(1, Ordering::Relaxed);
        self.last_original_length = HEADER_LEN + payload.len();
        self.last_request_id = request_id;
        let before = dst.len();
        write_message(
            request_id,
            item.response_to,
            op,
            &payload,
            item.compressor,
            dst,
        )?;
        self.bytes_encoded += (dst.len() - before) as u64;
        Ok(())
    }
}

/// Frames `payload` as a message of opcode `op`, compressed if `compressor` is given.
pub fn write_message(
    request_id: i32,
    response_to: i32,
    op: OpCode,
    payload: &[u8],
    compressor: Option<Compressor>,
    dst: &mut BytesMut,
) -> Result<(), WireError> {
    let (op_code, body) = match compressor {
        Some(c) => (
            OpCode::Compressed as i32,
            compression::compress(c, op as i32, payload)?,
        ),
        None => (op as i32, payload.to_vec()),
    };
    let length = HEADER_LEN + body.len();
    if length > MAX_MESSAGE_SIZE {
        return Err(WireError::BadLength(length as i64));
    }
    let header = Header {
        length: length as i32,
        request_id,
        response_to,
        op_code,
    };
    dst.reserve(length);
    header.write(dst);
    dst.extend_from_slice(&body);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header announcing `len` bytes, followed by `body` (not a whole message).
    fn announced(len: i32, body: &[u8]) -> BytesMut {
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&len.to_le_bytes());
        buf.extend_from_slice(&1i32.to_le_bytes());
        buf.extend_from_slice(&0i32.to_le_bytes());
        buf.extend_from_slice(&(OpCode::Msg as i32).to_le_bytes());
        buf.extend_from_slice(body);
        buf
    }

    #[test]
    fn a_header_claiming_48_mb_reserves_only_a_bounded_read_ahead() {
        let mut buf = announced(MAX_MESSAGE_SIZE as i32, &[0; 8]);
        let mut codec = MessageCodec::default();
        assert!(codec.decode(&mut buf).unwrap().is_none());
        assert!(
            buf.capacity() <= buf.len() + READ_AHEAD,
            "capacity {} for {} bytes received",
            buf.capacity(),
            buf.len()
        );
        // More bytes arrive: still nothing reserved beyond them plus the read-ahead.
        buf.extend_from_slice(&[0; 100_000]);
        assert!(codec.decode(&mut buf).unwrap().is_none());
        assert!(buf.capacity() <= 2 * (buf.len() + READ_AHEAD));
        assert!(buf.capacity() < 1024 * 1024, "{}", buf.capacity());
    }

    #[test]
    fn a_length_over_48_mb_is_still_refused_before_any_body_is_read() {
        let mut buf = announced(MAX_MESSAGE_SIZE as i32 + 1, &[]);
        assert!(matches!(
            MessageCodec::default().decode(&mut buf),
            Err(WireError::BadLength(_))
        ));
    }
}
