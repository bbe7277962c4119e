//! The dump archive: a versioned, self-describing stream that `mayfly dump` writes and
//! `mayfly restore` reads, one entry at a time, so neither holds a collection in memory.
//!
//! Layout: the 12 bytes [`MAGIC`], then BSON documents back to back (each starts with its own
//! little-endian length), each with a `kind`:
//!
//! - `header`, first: `{format: "mayfly-dump", version: 1, mayflyVersion, createdAt}`;
//! - `collection`: `{db, name, options, indexes, cosmos?}`, the indexes as `listIndexes` shows
//!   them, `cosmos` the collection's Cosmos DB settings (shard key, throughput) as the catalog
//!   keeps them, when it has any (earlier archives carry none; earlier readers ignore it);
//! - `document`: `{ts, ttl?, doc}`, a stored record of the collection entry before it: its
//!   last-modified time `_ts` (epoch seconds), its own valid `ttl` when it has one, and its body;
//! - `user`: `{user}`, a user as the catalog stores it (salted SCRAM keys, never a password);
//! - `trailer`, last: `{collections, documents, users, crc32c}`: the counts of the entries
//!   before it and the CRC-32C of every byte before it, magic included. Nothing may follow it.
//!
//! A reader refuses a file without the magic, of another version, cut short (no trailer), with
//! a wrong count or checksum, or with an entry out of place. An entry is at most
//! [`MAX_ENTRY_BYTES`], checked before anything is allocated for it.
//!
//! Owns: the bytes of the format. Does not own: what is dumped (`dump`), or how entries become
//! collections and records again (`restore`).

use bson::{doc, Bson, DateTime, Document, RawDocument, RawDocumentBuf};
use std::io::{Read, Write};

/// The first bytes of every archive.
pub const MAGIC: &[u8; 12] = b"mayfly-dump\0";
/// The format version this build writes and reads.
pub const VERSION: i32 = 1;
/// The `format` field of the header.
const FORMAT: &str = "mayfly-dump";
/// The largest entry: a document body of the largest size a document may be stored at (16 MiB
/// and the 16 KiB an update may add), with room for the entry's own fields.
pub const MAX_ENTRY_BYTES: usize = crate::protocol::MAX_BSON_OBJECT_SIZE + 64 * 1024;

/// Why an archive cannot be read (or written).
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("not a mayfly dump archive (it does not start with the archive's magic bytes)")]
    NotAnArchive,
    #[error("archive format version {0} is not supported: this mayfly reads version {VERSION}")]
    UnsupportedVersion(i64),
    #[error("the archive is truncated: it ends before its trailer")]
    Truncated,
    #[error("the archive's checksum does not match its contents (stored {stored:08x}, computed {computed:08x}): it is corrupt")]
    Checksum { stored: u32, computed: u32 },
    #[error("the archive is corrupt: {0}")]
    Corrupt(String),
}

fn corrupt(what: impl Into<String>) -> ArchiveError {
    ArchiveError::Corrupt(what.into())
}

/// What the header says.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub version: i32,
    pub mayfly_version: String,
    /// When the dump was taken: documents expired at this time were left out.
    pub created_at: DateTime,
}

/// A collection: where the documents after it go.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectionEntry {
    pub db: String,
    pub name: String,
    pub options: Document,
    /// Index specifications as `listIndexes` shows them (the `_id` index is implicit).
    pub indexes: Vec<Document>,
    /// The collection's Cosmos DB settings (shard key, throughput), as the catalog keeps them.
    pub cosmos: Option<Document>,
}

/// A stored record: the document's body with its `_ts` and own `ttl`.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentEntry {
    pub ts: i64,
    pub own_ttl: Option<i32>,
    /// The BSON body, exactly as stored.
    pub body: Vec<u8>,
}

/// One entry after the header.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Collection(CollectionEntry),
    Document(DocumentEntry),
    /// A user as the catalog stores it.
    User(Document),
}

/// How many entries of each kind an archive holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub collections: u64,
    pub documents: u64,
    pub users: u64,
}

/// Writes an archive entry by entry; [`ArchiveWriter::finish`] writes the trailer.
pub struct ArchiveWriter<W: Write> {
    out: W,
    crc: u32,
    counts: Counts,
}

impl<W: Write> ArchiveWriter<W> {
    /// Writes the magic and the header of a dump taken at `created_at`.
    pub fn start(out: W, created_at: DateTime) -> Result<ArchiveWriter<W>, ArchiveError> {
        let mut writer = ArchiveWriter {
            out,
            crc: 0,
            counts: Counts::default(),
        };
        writer.write_bytes(MAGIC)?;
        let header = doc! {
            "kind": "header",
            "format": FORMAT,
            "version": VERSION,
            "mayflyVersion": env!("CARGO_PKG_VERSION"),
            "createdAt": created_at,
        };
        writer.write_document(&header)?;
        Ok(writer)
    }

    pub fn collection(&mut self, entry: &CollectionEntry) -> Result<(), ArchiveError> {
        let indexes: Vec<Bson> = entry.indexes.iter().cloned().map(Bson::from).collect();
        let mut written = doc! {
            "kind": "collection",
            "db": entry.db.as_str(),
            "name": entry.name.as_str(),
            "options": entry.options.clone(),
            "indexes": indexes,
        };
        if let Some(cosmos) = &entry.cosmos {
            written.insert("cosmos", cosmos.clone());
        }
        self.write_document(&written)?;
        self.counts.collections += 1;
        Ok(())
    }

    /// A record of the collection written last, its body copied as it is.
    pub fn document(
        &mut self,
        ts: i64,
        own_ttl: Option<i32>,
        body: &[u8],
    ) -> Result<(), ArchiveError> {
        let body = RawDocument::from_bytes(body)
            .map_err(|e| corrupt(format!("a stored document is not BSON: {e}")))?;
        let mut entry = RawDocumentBuf::new();
        entry.append("kind", "document");
        entry.append("ts", ts);
        if let Some(ttl) = own_ttl {
            entry.append("ttl", ttl);
        }
        entry.append_ref("doc", body);
        self.write_bytes(entry.as_bytes())?;
        self.counts.documents += 1;
        Ok(())
    }

    pub fn user(&mut self, user: &Document) -> Result<(), ArchiveError> {
        self.write_document(&doc! {"kind": "user", "user": user.clone()})?;
        self.counts.users += 1;
        Ok(())
    }

    /// Writes the trailer and hands back the output (not flushed) with the counts.
    pub fn finish(mut self) -> Result<(W, Counts), ArchiveError> {
        let trailer = doc! {
            "kind": "trailer",
            "collections": count(self.counts.collections),
            "documents": count(self.counts.documents),
            "users": count(self.counts.users),
            "crc32c": i64::from(self.crc),
        };
        self.write_document(&trailer)?;
        Ok((self.out, self.counts))
    }

    fn write_document(&mut self, entry: &Document) -> Result<(), ArchiveError> {
        let mut bytes = Vec::new();
        entry
            .to_writer(&mut bytes)
            .map_err(|e| corrupt(format!("cannot encode an entry: {e}")))?;
        self.write_bytes(&bytes)
    }

    fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), ArchiveError> {
        self.crc = crc32c::crc32c_append(self.crc, bytes);
        self.out.write_all(bytes)?;
        Ok(())
    }
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Reads an archive entry by entry, checking its order, counts and checksum as it goes.
pub struct ArchiveReader<R: Read> {
    input: R,
    crc: u32,
    counts: Counts,
    /// Whether a collection entry came yet (documents belong to the one before them).
    in_collection: bool,
    finished: bool,
}

impl<R: Read> ArchiveReader<R> {
    /// Reads and checks the magic and the header.
    pub fn open(mut input: R) -> Result<(ArchiveReader<R>, Header), ArchiveError> {
        let mut magic = [0u8; MAGIC.len()];
        match input.read_exact(&mut magic) {
            Ok(()) if magic == *MAGIC => {}
            Ok(()) => return Err(ArchiveError::NotAnArchive),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(ArchiveError::NotAnArchive)
            }
            Err(e) => return Err(e.into()),
        }
        let mut reader = ArchiveReader {
            input,
            crc: crc32c::crc32c(MAGIC),
            counts: Counts::default(),
            in_collection: false,
            finished: false,
        };
        let raw = reader.read_raw()?.ok_or(ArchiveError::Truncated)?;
        let header = header_of(&raw)?;
        Ok((reader, header))
    }

    /// The next entry; `None` once the trailer has been read and checked.
    pub fn next_entry(&mut self) -> Result<Option<Entry>, ArchiveError> {
        if self.finished {
            return Ok(None);
        }
        let before = self.crc;
        let raw = self.read_raw()?.ok_or(ArchiveError::Truncated)?;
        let kind = raw
            .get_str("kind")
            .map_err(|_| corrupt("an entry has no kind"))?;
        match kind {
            "collection" => {
                let entry = collection_of(&raw)?;
                self.in_collection = true;
                self.counts.collections += 1;
                Ok(Some(Entry::Collection(entry)))
            }
            "document" if self.in_collection => {
                let entry = document_of(&raw)?;
                self.counts.documents += 1;
                Ok(Some(Entry::Document(entry)))
            }
            "document" => Err(corrupt("a document comes before any collection")),
            "user" => {
                let user = raw
                    .get_document("user")
                    .ok()
                    .and_then(|u| Document::try_from(u).ok())
                    .ok_or_else(|| corrupt("a user entry has no user"))?;
                self.counts.users += 1;
                Ok(Some(Entry::User(user)))
            }
            "trailer" => {
                self.check_trailer(&raw, before)?;
                self.finished = true;
                Ok(None)
            }
            other => Err(corrupt(format!("unknown entry kind {other:?}"))),
        }
    }

    /// The counts of the entries read so far.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    fn check_trailer(&mut self, raw: &RawDocument, crc_before: u32) -> Result<(), ArchiveError> {
        let stored = raw
            .get_i64("crc32c")
            .ok()
            .and_then(|c| u32::try_from(c).ok())
            .ok_or_else(|| corrupt("the trailer has no checksum"))?;
        if stored != crc_before {
            return Err(ArchiveError::Checksum {
                stored,
                computed: crc_before,
            });
        }
        for (field, seen) in [
            ("collections", self.counts.collections),
            ("documents", self.counts.documents),
            ("users", self.counts.users),
        ] {
            let said = raw
                .get_i64(field)
                .map_err(|_| corrupt(format!("the trailer has no {field} count")))?;
            if said != count(seen) {
                return Err(corrupt(format!(
                    "the trailer counts {said} {field}, the archive holds {seen}"
                )));
            }
        }
        let mut extra = [0u8; 1];
        if self.input.read(&mut extra)? != 0 {
            return Err(corrupt("bytes follow the trailer"));
        }
        Ok(())
    }

    /// The next entry's bytes, added to the checksum; `None` at a clean end of the input.
    fn read_raw(&mut self) -> Result<Option<RawDocumentBuf>, ArchiveError> {
        let mut len = [0u8; 4];
        let mut got = 0;
        while got < len.len() {
            let Some(rest) = len.get_mut(got..) else {
                break;
            };
            match self.input.read(rest)? {
                0 if got == 0 => return Ok(None),
                0 => return Err(ArchiveError::Truncated),
                n => got += n,
            }
        }
        let declared = i32::from_le_bytes(len);
        let size = usize::try_from(declared)
            .ok()
            .filter(|n| (5..=MAX_ENTRY_BYTES).contains(n))
            .ok_or_else(|| corrupt(format!("an entry declares {declared} bytes")))?;
        let mut bytes = Vec::with_capacity(size);
        bytes.extend_from_slice(&len);
        let body_len = u64::try_from(size - len.len()).unwrap_or(u64::MAX);
        (&mut self.input).take(body_len).read_to_end(&mut bytes)?;
        if bytes.len() != size {
            return Err(ArchiveError::Truncated);
        }
        self.crc = crc32c::crc32c_append(self.crc, &bytes);
        RawDocumentBuf::from_bytes(bytes)
            .map(Some)
            .map_err(|e| corrupt(format!("an entry is not BSON: {e}")))
    }
}

fn header_of(raw: &RawDocument) -> Result<Header, ArchiveError> {
    if raw.get_str("kind").ok() != Some("header") || raw.get_str("format").ok() != Some(FORMAT) {
        return Err(corrupt("the first entry is not the archive's header"));
    }
    let version = match raw.get("version") {
        Ok(Some(bson::RawBsonRef::Int32(v))) => i64::from(v),
        Ok(Some(bson::RawBsonRef::Int64(v))) => v,
        _ => return Err(corrupt("the header has no version")),
    };
    if version != i64::from(VERSION) {
        return Err(ArchiveError::UnsupportedVersion(version));
    }
    Ok(Header {
        version: VERSION,
        mayfly_version: raw.get_str("mayflyVersion").unwrap_or_default().to_owned(),
        created_at: raw
            .get_datetime("createdAt")
            .map_err(|_| corrupt("the header has no creation time"))?,
    })
}

fn collection_of(raw: &RawDocument) -> Result<CollectionEntry, ArchiveError> {
    let entry = Document::try_from(raw).map_err(|e| corrupt(format!("a collection entry: {e}")))?;
    let bad = || corrupt(format!("a collection entry lacks a field: {entry}"));
    let indexes = entry
        .get_array("indexes")
        .map_err(|_| bad())?
        .iter()
        .map(|i| i.as_document().cloned().ok_or_else(bad))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(CollectionEntry {
        db: entry.get_str("db").map_err(|_| bad())?.to_owned(),
        name: entry.get_str("name").map_err(|_| bad())?.to_owned(),
        options: entry.get_document("options").map_err(|_| bad())?.clone(),
        indexes,
        cosmos: match entry.get("cosmos") {
            None => None,
            Some(Bson::Document(cosmos)) => Some(cosmos.clone()),
            Some(_) => return Err(bad()),
        },
    })
}

fn document_of(raw: &RawDocument) -> Result<DocumentEntry, ArchiveError> {
    let ts = raw
        .get_i64("ts")
        .map_err(|_| corrupt("a document entry has no ts"))?;
    let own_ttl = match raw.get("ttl") {
        Ok(None) => None,
        Ok(Some(bson::RawBsonRef::Int32(ttl))) => Some(ttl),
        _ => return Err(corrupt("a document entry's ttl is not an int")),
    };
    let body = raw
        .get_document("doc")
        .map_err(|_| corrupt("a document entry has no doc"))?;
    Ok(DocumentEntry {
        ts,
        own_ttl,
        body: body.as_bytes().to_vec(),
    })
}

#[cfg(test)]
#[path = "archive_tests.rs"]
mod tests;
