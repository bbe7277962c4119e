//! The opcodes mongod no longer serves: the write, getMore and killCursors opcodes removed in
//! MongoDB 6.0 (2001, 2002, 2005, 2006, 2007), and any opcode a server never served (2003,
//! OP_COMMAND 2010, OP_REPLY sent as a request, an unassigned number).
//!
//! Owns: telling them apart and reading the one thing the server needs from a body, the number
//! of documents an OP_INSERT carries (mongod counts them in `opcounters.deprecated.insert`).
//! Nothing else of a body is read. Does not own: how each is answered (`session`).

use super::{Reader, WireError, MAX_MESSAGE_SIZE};

/// A request with an opcode mongod answers without running anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegacyOp {
    /// OP_UPDATE (2001).
    Update,
    /// OP_INSERT (2002) with the number of documents it frames, or `None` when its body is
    /// malformed or carries no document (mongod's parse fails before it counts).
    Insert { documents: Option<u64> },
    /// OP_GET_MORE (2005).
    GetMore,
    /// OP_DELETE (2006).
    Delete,
    /// OP_KILL_CURSORS (2007).
    KillCursors,
    /// Any other opcode, as sent.
    Unsupported(i32),
}

impl LegacyOp {
    /// Classifies a request opcode that is neither OP_MSG, OP_QUERY nor OP_COMPRESSED.
    pub fn from_request(op_code: i32, payload: &[u8]) -> LegacyOp {
        match op_code {
            2001 => LegacyOp::Update,
            2002 => LegacyOp::Insert {
                documents: insert_documents(payload),
            },
            2005 => LegacyOp::GetMore,
            2006 => LegacyOp::Delete,
            2007 => LegacyOp::KillCursors,
            other => LegacyOp::Unsupported(other),
        }
    }

    /// The name mongod gives the opcode (`networkOpToString`), used in logs.
    pub fn name(self) -> &'static str {
        match self {
            LegacyOp::Update => "update",
            LegacyOp::Insert { .. } => "insert",
            LegacyOp::GetMore => "getmore",
            LegacyOp::Delete => "remove",
            LegacyOp::KillCursors => "killcursors",
            LegacyOp::Unsupported(_) => "unsupported",
        }
    }
}

/// OP_INSERT: `int32 flags, cstring fullCollectionName, document+`. Each document is framed by
/// its declared length only (the message length already bounds them all); none is decoded.
fn insert_documents(payload: &[u8]) -> Option<u64> {
    let mut r = Reader::new(payload, "OP_INSERT");
    r.i32().ok()?;
    r.cstring().ok()?;
    let mut documents = 0u64;
    while !r.is_empty() {
        r.bson_bytes(MAX_MESSAGE_SIZE).ok()?;
        documents += 1;
    }
    (documents > 0).then_some(documents)
}

/// Builds an OP_INSERT payload (tests and tools).
pub fn encode_insert_payload(
    namespace: &str,
    documents: &[bson::Document],
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
    out.extend_from_slice(&0i32.to_le_bytes());
    out.extend_from_slice(namespace.as_bytes());
    out.push(0);
    for d in documents {
        d.to_writer(&mut *out)
            .map_err(|e| WireError::malformed("request", e.to_string()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::client;
    use super::super::codec::{decode_frame, Request};
    use super::*;
    use bson::doc;

    fn decoded(op_code: i32, payload: &[u8]) -> Result<Request, WireError> {
        decode_frame(&client::raw_message(7, op_code, payload)).map(|i| i.request)
    }

    #[test]
    fn removed_and_unknown_opcodes_decode_as_legacy_requests() {
        let table = [
            (2001, LegacyOp::Update),
            (2005, LegacyOp::GetMore),
            (2006, LegacyOp::Delete),
            (2007, LegacyOp::KillCursors),
            (2003, LegacyOp::Unsupported(2003)),
            (2010, LegacyOp::Unsupported(2010)),
            (1, LegacyOp::Unsupported(1)),
            (0, LegacyOp::Unsupported(0)),
            (-1, LegacyOp::Unsupported(-1)),
            (9999, LegacyOp::Unsupported(9999)),
        ];
        for (op_code, expected) in table {
            // Bodies are never read, whatever they hold.
            for payload in [&[][..], &[0xff; 9][..]] {
                assert_eq!(
                    decoded(op_code, payload).unwrap(),
                    Request::Legacy(expected),
                    "opcode {op_code}"
                );
            }
        }
    }

    #[test]
    fn an_op_insert_counts_the_documents_it_frames() {
        let docs = [doc! {"a": 1}, doc! {"b": "x"}, doc! {}];
        let mut ok = Vec::new();
        encode_insert_payload("test.c", &docs, &mut ok).unwrap();
        let mut none = Vec::new();
        encode_insert_payload("test.c", &[], &mut none).unwrap();
        let truncated = ok.get(..ok.len() - 1).unwrap().to_vec();
        let mut overlong = ok.clone();
        overlong.extend_from_slice(&100i32.to_le_bytes());
        let unterminated = b"\0\0\0\0test.c".to_vec();
        let table: [(&[u8], Option<u64>); 6] = [
            (&ok, Some(3)),
            (&none, None),
            (&truncated, None),
            (&overlong, None),
            (&unterminated, None),
            (&[1, 2], None),
        ];
        for (payload, documents) in table {
            assert_eq!(
                decoded(2002, payload).unwrap(),
                Request::Legacy(LegacyOp::Insert { documents }),
                "{payload:?}"
            );
        }
    }

    #[test]
    fn a_legacy_opcode_inside_op_compressed_decodes_as_legacy() {
        let mut payload = 2005i32.to_le_bytes().to_vec();
        payload.extend_from_slice(&4i32.to_le_bytes());
        payload.push(0); // noop compressor
        payload.extend_from_slice(&[0; 4]);
        let incoming = decode_frame(&client::raw_message(3, 2012, &payload)).unwrap();
        assert_eq!(incoming.request, Request::Legacy(LegacyOp::GetMore));
    }
}
