//! Protocol vocabulary every layer shares: the size limits a server advertises and enforces, the
//! names and ids of the wire compressors, and a write batch's documents as the bytes they came
//! in ([`RawDocuments`]). No I/O: framing and the compression codecs themselves live in `wire`.

/// Largest message a client may send or the server may reply with (`maxMessageSizeBytes`).
pub const MAX_MESSAGE_SIZE: usize = 48_000_000;
/// Largest user document (`maxBsonObjectSize`).
pub const MAX_BSON_OBJECT_SIZE: usize = 16 * 1024 * 1024;
/// Largest command document: a user document plus room for the command's own fields.
pub const MAX_COMMAND_SIZE: usize = MAX_BSON_OBJECT_SIZE + 16 * 1024;
/// Most statements one `insert`, `update` or `delete` may carry (`maxWriteBatchSize`).
pub const MAX_WRITE_BATCH_SIZE: i32 = 100_000;

/// A wire compressor, by the name `hello.compression` negotiates and the id OP_COMPRESSED carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compressor {
    Snappy,
    Zlib,
    Zstd,
}

impl Compressor {
    pub const ALL: [Compressor; 3] = [Compressor::Snappy, Compressor::Zlib, Compressor::Zstd];

    pub fn id(self) -> u8 {
        match self {
            Compressor::Snappy => 1,
            Compressor::Zlib => 2,
            Compressor::Zstd => 3,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Compressor::Snappy => "snappy",
            Compressor::Zlib => "zlib",
            Compressor::Zstd => "zstd",
        }
    }

    pub fn from_name(name: &str) -> Option<Compressor> {
        Compressor::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// A command's reply: a document built field by field, or one already encoded (a cursor batch
/// of stored documents goes into the reply as the bytes it was stored as).
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Document(bson::Document),
    Raw(bson::RawDocumentBuf),
}

impl Reply {
    /// Whether the reply is `{ok: 0, ...}`.
    pub fn is_error(&self) -> bool {
        match self {
            Reply::Document(d) => d.get("ok") == Some(&bson::Bson::Double(0.0)),
            Reply::Raw(r) => matches!(r.get_f64("ok"), Ok(ok) if ok == 0.0),
        }
    }

    /// The reply's error code when it is `{ok: 0, ...}` (0 when it has none).
    pub fn error_code(&self) -> Option<i32> {
        if !self.is_error() {
            return None;
        }
        Some(match self {
            Reply::Document(d) => d.get_i32("code").unwrap_or(0),
            Reply::Raw(r) => r.get_i32("code").unwrap_or(0),
        })
    }

    /// Documents in the reply's cursor batch (`cursor.firstBatch` or `cursor.nextBatch`),
    /// counted without decoding them: a batch can hold 16 MB of documents.
    pub fn batch_len(&self) -> Option<usize> {
        match self {
            Reply::Document(d) => {
                let cursor = d.get_document("cursor").ok()?;
                cursor
                    .get_array("firstBatch")
                    .or_else(|_| cursor.get_array("nextBatch"))
                    .ok()
                    .map(Vec::len)
            }
            Reply::Raw(r) => {
                let cursor = r.get_document("cursor").ok()?;
                let batch = cursor
                    .get_array("firstBatch")
                    .or_else(|_| cursor.get_array("nextBatch"))
                    .ok()?;
                Some(batch.into_iter().count())
            }
        }
    }

    /// Bytes of the reply's BSON (encoding a document reply; a raw one is measured).
    pub fn byte_len(&self) -> usize {
        match self {
            Reply::Document(d) => bson::to_vec(d).map_or(0, |b| b.len()),
            Reply::Raw(r) => r.as_bytes().len(),
        }
    }

    /// The reply as a document (decoding a raw one).
    pub fn into_document(self) -> bson::Document {
        match self {
            Reply::Document(d) => d,
            Reply::Raw(r) => r.to_document().unwrap_or_default(),
        }
    }
}

impl From<bson::Document> for Reply {
    fn from(d: bson::Document) -> Reply {
        Reply::Document(d)
    }
}

impl From<bson::RawDocumentBuf> for Reply {
    fn from(r: bson::RawDocumentBuf) -> Reply {
        Reply::Raw(r)
    }
}

/// The documents of a kind-1 sequence as the bytes they came in, each a valid BSON document no
/// deeper than a request may be.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RawDocuments {
    bytes: Vec<u8>,
    /// Where each document ends in `bytes`.
    ends: Vec<usize>,
}

impl RawDocuments {
    /// Appends a document (the wire layer appends only documents it validated).
    pub fn push(&mut self, document: &[u8]) {
        self.bytes.extend_from_slice(document);
        self.ends.push(self.bytes.len());
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// The documents' bytes together.
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Each document's bytes, in order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(self.ends.iter().copied())
            .map(|(start, end)| self.bytes.get(start..end).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, rawdoc};

    /// The slow-operation line and the profiler read replies in place: a raw batch is counted
    /// without being decoded, and both kinds of reply answer alike.
    #[test]
    fn replies_are_read_in_place_alike_raw_or_built() {
        let built =
            doc! {"cursor": {"id": 0i64, "nextBatch": [{"a": 1}, {"a": 2}, {"a": 3}]}, "ok": 1.0};
        let raw = bson::RawDocumentBuf::from_document(&built).unwrap();
        for reply in [Reply::Document(built.clone()), Reply::Raw(raw.clone())] {
            assert_eq!(reply.batch_len(), Some(3));
            assert_eq!(reply.error_code(), None);
            assert_eq!(reply.byte_len(), raw.as_bytes().len());
        }
        let first = Reply::Raw(rawdoc! {"cursor": {"firstBatch": [], "id": 0i64}, "ok": 1.0});
        assert_eq!(first.batch_len(), Some(0));
        let failed = doc! {"ok": 0.0, "errmsg": "no", "code": 2, "codeName": "BadValue"};
        for reply in [
            Reply::Document(failed.clone()),
            Reply::Raw(bson::RawDocumentBuf::from_document(&failed).unwrap()),
        ] {
            assert_eq!(reply.batch_len(), None, "no cursor");
            assert_eq!(reply.error_code(), Some(2));
        }
    }
}
