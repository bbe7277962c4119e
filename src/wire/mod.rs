//! The MongoDB wire protocol: message framing, OP_MSG, the legacy OP_QUERY handshake with its
//! OP_REPLY, OP_COMPRESSED, and the removed legacy opcodes (told apart, never run).
//!
//! Owns: bytes to requests and replies to bytes, with every length checked before anything is
//! allocated. Does not own: what a command means (the `command` layer) or the socket (`session`).
//! BSON documents are parsed here only to frame them; their fields are never interpreted, except
//! that OP_MSG document sequences are merged into the command body, and a write batch (a
//! sequence, or a `documents`/`updates`/`deletes` array of the body) is counted before it is
//! decoded, to refuse more than `maxWriteBatchSize` statements without decoding them. Their nesting depth is checked over the raw bytes
//! (`query::depth`) before the recursive decoder sees them.

pub mod bson_check;
pub mod client;
mod codec;
mod compression;
mod header;
mod legacy;
mod op_msg;
mod op_query;

pub use codec::{Incoming, MessageCodec, Outgoing, ReplyBody, Request};
pub use compression::Compressor;
pub use header::{Header, OpCode, HEADER_LEN};
pub use legacy::LegacyOp;
pub use op_msg::{MsgFlags, OpMsg};
pub use op_query::OpQuery;

pub use crate::protocol::{MAX_BSON_OBJECT_SIZE, MAX_COMMAND_SIZE, MAX_MESSAGE_SIZE};

/// A framing error: the byte stream can no longer be trusted, so the connection is closed.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    #[error("invalid message length {0}: must be between 16 and {MAX_MESSAGE_SIZE}")]
    BadLength(i64),
    #[error("unsupported opcode {0}")]
    UnknownOpCode(i32),
    #[error("checksum mismatch: computed {computed:#010x}, message says {stated:#010x}")]
    ChecksumMismatch { computed: u32, stated: u32 },
    #[error("malformed {what}: {detail}")]
    Malformed { what: &'static str, detail: String },
    #[error("unknown compressor id {0}")]
    UnknownCompressor(u8),
    #[error("compressed message is invalid: {0}")]
    Decompression(String),
    #[error(
        "the server holds more than its memory limit, and this connection's message is still \
         arriving with {received} of its {length} bytes: the connection is closed"
    )]
    OverMemoryLimit { received: usize, length: usize },
}

impl WireError {
    pub(crate) fn malformed(what: &'static str, detail: impl Into<String>) -> Self {
        WireError::Malformed {
            what,
            detail: detail.into(),
        }
    }
}

/// A little-endian reader over a byte slice that never panics and never reads past its end.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Reader { bytes, what }
    }

    pub(crate) fn remaining(&self) -> &'a [u8] {
        self.bytes
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if n > self.bytes.len() {
            return Err(WireError::malformed(
                self.what,
                format!("needs {n} more bytes, {} left", self.bytes.len()),
            ));
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, WireError> {
        let b = self.take(1)?;
        Ok(b.first().copied().unwrap_or_default())
    }

    pub(crate) fn i32(&mut self) -> Result<i32, WireError> {
        let b = self.take(4)?;
        let mut a = [0u8; 4];
        a.copy_from_slice(b);
        Ok(i32::from_le_bytes(a))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, WireError> {
        Ok(self.i32()? as u32)
    }

    /// A NUL-terminated UTF-8 string.
    pub(crate) fn cstring(&mut self) -> Result<&'a str, WireError> {
        let end = self
            .bytes
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| WireError::malformed(self.what, "unterminated string"))?;
        let raw = self.take(end)?;
        self.take(1)?;
        std::str::from_utf8(raw).map_err(|_| WireError::malformed(self.what, "string is not UTF-8"))
    }

    /// The bytes of one BSON document (its declared length checked against `limit` and the
    /// bytes that remain). The document itself is validated by the caller.
    pub(crate) fn bson_bytes(&mut self, limit: usize) -> Result<&'a [u8], WireError> {
        let len_bytes = self
            .bytes
            .get(..4)
            .ok_or_else(|| WireError::malformed(self.what, "truncated document length"))?;
        let mut a = [0u8; 4];
        a.copy_from_slice(len_bytes);
        let len = i32::from_le_bytes(a);
        if len < 5 || len as usize > self.bytes.len() {
            return Err(WireError::malformed(
                self.what,
                format!(
                    "document length {len} does not fit in the {} bytes left",
                    self.bytes.len()
                ),
            ));
        }
        if len as usize > limit {
            return Err(WireError::malformed(
                self.what,
                format!("document of {len} bytes is larger than the limit of {limit}"),
            ));
        }
        self.take(len as usize)
    }
}

#[cfg(test)]
mod tests;
