//! OP_MSG (opcode 2013): flag bits, one kind-0 body, kind-1 document sequences merged into the
//! body, and the optional CRC-32C checksum. One sequence is not merged: an `insert`'s
//! `documents` stay the bytes they came in ([`RawDocuments`], validated as any document is),
//! because they go to storage as they are; decoding them only to encode them again was a
//! quarter of a bulk insert's server CPU.

use super::{bson_check, Reader, WireError, HEADER_LEN, MAX_COMMAND_SIZE, MAX_MESSAGE_SIZE};
use crate::error::{Error, ErrorCode};
use crate::protocol::RawDocuments;
use bson::{Bson, Document};
use std::sync::Arc;

/// OP_MSG flag bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MsgFlags(pub u32);

impl MsgFlags {
    pub const CHECKSUM_PRESENT: u32 = 1;
    pub const MORE_TO_COME: u32 = 1 << 1;
    pub const EXHAUST_ALLOWED: u32 = 1 << 16;
    /// The low 16 bits are "required": a receiver must reject ones it does not know.
    const REQUIRED_MASK: u32 = 0xffff;
    const KNOWN_REQUIRED: u32 = Self::CHECKSUM_PRESENT | Self::MORE_TO_COME;

    pub fn checksum_present(self) -> bool {
        self.0 & Self::CHECKSUM_PRESENT != 0
    }

    pub fn more_to_come(self) -> bool {
        self.0 & Self::MORE_TO_COME != 0
    }

    pub fn exhaust_allowed(self) -> bool {
        self.0 & Self::EXHAUST_ALLOWED != 0
    }
}

/// A decoded OP_MSG. Framing problems are [`WireError`]s; a well-framed message whose content
/// is not a valid command (garbage BSON, no body, a duplicate sequence) carries the error in
/// `body`, so the client gets an error reply and the connection stays open.
#[derive(Debug, Clone, PartialEq)]
pub struct OpMsg {
    pub flags: MsgFlags,
    pub body: Result<Document, Error>,
    /// An `insert`'s `documents` sequence, kept as bytes; the body then has no `documents`.
    pub documents: Option<Arc<RawDocuments>>,
}

const SECTION_BODY: u8 = 0;
/// Most documents a kind-1 section may carry: each is a write batch.
const MAX_SEQUENCE_DOCS: usize = crate::protocol::MAX_WRITE_BATCH_SIZE as usize;
const SECTION_SEQUENCE: u8 = 1;

/// Parses an OP_MSG payload (everything after the header). `header` is the raw header the
/// checksum covers.
pub fn parse(header: &[u8], payload: &[u8]) -> Result<OpMsg, WireError> {
    let mut r = Reader::new(payload, "OP_MSG");
    let flags = MsgFlags(r.u32()?);
    let unknown_required = flags.0 & MsgFlags::REQUIRED_MASK & !MsgFlags::KNOWN_REQUIRED;
    if unknown_required != 0 {
        return Err(WireError::malformed(
            "OP_MSG",
            format!("unknown required flag bits {unknown_required:#x}"),
        ));
    }
    let sections = if flags.checksum_present() {
        let split = payload
            .len()
            .checked_sub(4)
            .filter(|&n| n >= 4)
            .ok_or_else(|| WireError::malformed("OP_MSG", "too short for its checksum"))?;
        let (covered, stated) = payload.split_at(split);
        let mut stated_bytes = [0u8; 4];
        stated_bytes.copy_from_slice(stated);
        let stated = u32::from_le_bytes(stated_bytes);
        let computed = crc32c::crc32c_append(crc32c::crc32c(header), covered);
        if computed != stated {
            return Err(WireError::ChecksumMismatch { computed, stated });
        }
        covered.get(4..).unwrap_or_default()
    } else {
        r.remaining()
    };
    let raw = read_sections(sections)?;
    let (body, documents) = match raw.into_command() {
        Ok((body, documents)) => (Ok(body), documents.map(Arc::new)),
        Err(e) => (Err(e), None),
    };
    Ok(OpMsg {
        flags,
        body,
        documents,
    })
}

/// The sections of one message, framed but not yet validated as BSON.
struct RawSections<'a> {
    bodies: Vec<&'a [u8]>,
    sequences: Vec<RawSequence<'a>>,
}

/// A kind-1 section: its documents are kept up to `maxWriteBatchSize`, and only counted past it,
/// so a 48 MB sequence of empty documents costs a count, not millions of slices.
struct RawSequence<'a> {
    identifier: &'a str,
    docs: Vec<&'a [u8]>,
    count: usize,
}

fn read_sections(bytes: &[u8]) -> Result<RawSections<'_>, WireError> {
    let mut r = Reader::new(bytes, "OP_MSG section");
    let mut raw = RawSections {
        bodies: Vec::new(),
        sequences: Vec::new(),
    };
    while !r.is_empty() {
        match r.u8()? {
            SECTION_BODY => raw.bodies.push(r.bson_bytes(MAX_MESSAGE_SIZE)?),
            SECTION_SEQUENCE => {
                let size = r.i32()?;
                let len = usize::try_from(size)
                    .ok()
                    .and_then(|s| s.checked_sub(4))
                    .ok_or_else(|| {
                        WireError::malformed("OP_MSG section", format!("bad sequence size {size}"))
                    })?;
                let mut seq = Reader::new(r.take(len)?, "OP_MSG document sequence");
                let identifier = seq.cstring()?;
                let mut docs = Vec::new();
                let mut count = 0usize;
                while !seq.is_empty() {
                    let doc = seq.bson_bytes(MAX_MESSAGE_SIZE)?;
                    if count < MAX_SEQUENCE_DOCS {
                        docs.push(doc);
                    }
                    count += 1;
                }
                raw.sequences.push(RawSequence {
                    identifier,
                    docs,
                    count,
                });
            }
            kind => {
                return Err(WireError::malformed(
                    "OP_MSG section",
                    format!("unknown section kind {kind}"),
                ))
            }
        }
    }
    Ok(raw)
}

impl RawSections<'_> {
    /// The command, and an `insert`'s `documents` sequence as bytes.
    fn into_command(self) -> Result<(Document, Option<RawDocuments>), Error> {
        let body = match self.bodies.as_slice() {
            [body] => *body,
            [] => {
                return Err(Error::failed_to_parse(
                    "OP_MSG requires exactly one body section, got none",
                ))
            }
            _ => {
                return Err(Error::failed_to_parse(
                    "OP_MSG requires exactly one body section, got several",
                ))
            }
        };
        if body.len() <= MAX_COMMAND_SIZE {
            check_body_batch(body)?;
        }
        let mut command = parse_document(body, MAX_COMMAND_SIZE)?;
        let is_insert = command.keys().next().map(String::as_str) == Some("insert");
        let mut raw_documents: Option<RawDocuments> = None;
        for RawSequence {
            identifier,
            docs,
            count,
        } in self.sequences
        {
            // Every document sequence is a write batch (`documents`, `updates`, `deletes`).
            if count > MAX_SEQUENCE_DOCS {
                return Err(Error::write_batch_size(count));
            }
            let kept_raw = identifier == "documents" && raw_documents.is_some();
            if command.contains_key(identifier) || kept_raw {
                return Err(Error::bad_value(format!(
                    "field '{identifier}' appears both in the command body and as a document sequence"
                )));
            }
            if is_insert && identifier == "documents" {
                let mut kept = RawDocuments::default();
                for doc in docs {
                    validate_document(doc, MAX_COMMAND_SIZE)?;
                    kept.push(doc);
                }
                raw_documents = Some(kept);
                continue;
            }
            let values = docs
                .into_iter()
                .map(|d| parse_document(d, MAX_COMMAND_SIZE).map(Bson::Document))
                .collect::<Result<Vec<_>, _>>()?;
            command.insert(identifier, Bson::Array(values));
        }
        Ok((command, raw_documents))
    }
}

/// The fields that carry a write batch in a command body (the same batches a document sequence
/// carries). One with more than `maxWriteBatchSize` elements is refused before the body is
/// decoded, so a 16 MiB body of a million empty documents costs a count, not a million
/// documents. Malformed bytes are left to [`parse_document`] to report.
const BATCH_FIELDS: &[&str] = &["documents", "updates", "deletes"];

fn check_body_batch(body: &[u8]) -> Result<(), Error> {
    let Ok(raw) = bson::RawDocument::from_bytes(body) else {
        return Ok(());
    };
    for field in BATCH_FIELDS {
        if let Ok(items) = raw.get_array(field) {
            let count = items.into_iter().count();
            if count > MAX_SEQUENCE_DOCS {
                return Err(Error::write_batch_size(count));
            }
        }
    }
    Ok(())
}

/// Checks one framed BSON document as [`parse_document`] does, without decoding it
/// ([`bson_check`]).
fn validate_document(bytes: &[u8], limit: usize) -> Result<(), Error> {
    check_size(bytes, limit)?;
    bson_check::check(bytes)
}

fn check_size(bytes: &[u8], limit: usize) -> Result<(), Error> {
    if bytes.len() > limit {
        return Err(Error::new(
            ErrorCode::BSONObjectTooLarge,
            format!(
                "BSONObj size: {} ({:#x}) is invalid. Size must be between 0 and {limit}(16MB)",
                bytes.len(),
                bytes.len()
            ),
        ));
    }
    Ok(())
}

/// Validates one framed BSON document.
pub(crate) fn parse_document(bytes: &[u8], limit: usize) -> Result<Document, Error> {
    check_size(bytes, limit)?;
    // Before the recursive decoder sees it: a deeply nested request must not exhaust the stack.
    crate::query::depth::check_request(bytes)?;
    let raw = bson::RawDocument::from_bytes(bytes).map_err(Error::invalid_bson)?;
    raw.try_into().map_err(Error::invalid_bson)
}

/// Encodes a reply payload: flag bits 0 (no checksum, never moreToCome) and one kind-0 section.
pub fn encode_payload(body: &Document, out: &mut Vec<u8>) -> Result<(), WireError> {
    encode_payload_with_flags(MsgFlags::default(), body, out)
}

/// Encodes a reply with flag bits (`moreToCome` on the replies of an exhaust stream).
pub fn encode_payload_with_flags(
    flags: MsgFlags,
    body: &Document,
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
    out.extend_from_slice(&flags.0.to_le_bytes());
    out.push(SECTION_BODY);
    body.to_writer(out)
        .map_err(|e| WireError::malformed("reply", e.to_string()))
}

/// Encodes a reply whose body is already BSON.
pub fn encode_raw_payload(body: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&0u32.to_le_bytes());
    out.push(SECTION_BODY);
    out.extend_from_slice(body);
}

/// Encodes a request (used by tests and tools): the body, then each sequence as a kind-1 section.
pub fn encode_request_payload(
    flags: MsgFlags,
    body: &Document,
    sequences: &[(&str, Vec<Document>)],
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
    let err = |e: bson::ser::Error| WireError::malformed("request", e.to_string());
    out.extend_from_slice(&flags.0.to_le_bytes());
    out.push(SECTION_BODY);
    body.to_writer(&mut *out).map_err(err)?;
    for (identifier, docs) in sequences {
        let mut section = Vec::new();
        section.extend_from_slice(identifier.as_bytes());
        section.push(0);
        for doc in docs {
            doc.to_writer(&mut section).map_err(err)?;
        }
        out.push(SECTION_SEQUENCE);
        let size = i32::try_from(section.len() + 4)
            .map_err(|_| WireError::malformed("request", "sequence too large"))?;
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&section);
    }
    Ok(())
}

/// Appends a CRC-32C checksum over `header ++ payload` to `payload` (request side only).
pub fn append_checksum(header: &[u8; HEADER_LEN], payload: &mut Vec<u8>) {
    let crc = crc32c::crc32c_append(crc32c::crc32c(header), payload);
    payload.extend_from_slice(&crc.to_le_bytes());
}
