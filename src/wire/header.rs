//! The 16-byte message header every opcode starts with.

use super::{Reader, WireError, MAX_MESSAGE_SIZE};
use bytes::{BufMut, BytesMut};

pub const HEADER_LEN: usize = 16;

/// The opcodes mayfly serves or writes. Every other request opcode is a `LegacyOp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpCode {
    Reply = 1,
    Query = 2004,
    Compressed = 2012,
    Msg = 2013,
}

impl OpCode {
    pub fn from_i32(code: i32) -> Result<OpCode, WireError> {
        match code {
            1 => Ok(OpCode::Reply),
            2004 => Ok(OpCode::Query),
            2012 => Ok(OpCode::Compressed),
            2013 => Ok(OpCode::Msg),
            other => Err(WireError::UnknownOpCode(other)),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Total message length, header included.
    pub length: i32,
    pub request_id: i32,
    pub response_to: i32,
    pub op_code: i32,
}

impl Header {
    /// Reads a header and checks its length is within `16..=MAX_MESSAGE_SIZE`.
    pub fn parse(bytes: &[u8]) -> Result<Header, WireError> {
        let mut r = Reader::new(bytes, "message header");
        let header = Header {
            length: r.i32()?,
            request_id: r.i32()?,
            response_to: r.i32()?,
            op_code: r.i32()?,
        };
        check_length(i64::from(header.length))?;
        Ok(header)
    }

    pub fn write(&self, out: &mut BytesMut) {
        out.put_i32_le(self.length);
        out.put_i32_le(self.request_id);
        out.put_i32_le(self.response_to);
        out.put_i32_le(self.op_code);
    }
}

/// The one place the message-length bounds are enforced.
pub fn check_length(length: i64) -> Result<usize, WireError> {
    if length < HEADER_LEN as i64 || length > MAX_MESSAGE_SIZE as i64 {
        return Err(WireError::BadLength(length));
    }
    Ok(length as usize)
}
