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
