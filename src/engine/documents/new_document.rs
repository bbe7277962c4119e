//! A document on its way into a collection, prepared before the writer's job runs: its `_id`
//! generated when missing and checked, the `_id`'s key encoding, the body encoded once into the
//! bytes the record will be stored as, its size and nesting checked, its own `ttl` read.
//!
//! Owns: everything about a new document that is the same in any collection at any moment, and
//! the `_id` rules (`storageValidIdField`). Does not own: what depends on the collection or the
//! moment of the write — the key's collection prefix, the record's `_ts`, the duplicate check
//! and the index entries (`collection::insert_new`, in the writer's group).
//!
//! Doing this work on the caller's thread keeps the writer thread, which every write of every
//! connection goes through, to what needs the group's order.
//!
//! Within the writer's group, a new document also carries its key and whether the group's
//! snapshot holds it, as `collection::probe_ids` found them for the whole batch, so that the
//! insert neither computes the key again nor reads the snapshot for a key known to be free.

use crate::engine::catalog::CollectionMeta;
use crate::engine::documents::record;
use crate::engine::documents::record_key;
use crate::error::{Error, ErrorCode, Result};
use crate::protocol::MAX_BSON_OBJECT_SIZE;
use crate::query::depth;
use crate::storage::keys;
use bson::{doc, oid::ObjectId, Bson, Document, RawDocument};
use std::borrow::Cow;

/// A document ready for [`crate::engine::documents::collection::insert_new`].
#[derive(Debug, Clone)]
pub struct NewDocument {
    id: Bson,
    /// The `_id`'s key encoding: the document key without its collection prefix.
    encoded_id: Vec<u8>,
    /// The record's stored bytes with the header left to stamp ([`record::unstamped`]).
    stored: Vec<u8>,
    own_ttl: Option<i32>,
    /// The decoded document, when it was kept for the writer ([`NewDocument::prepare`]); boxed,
    /// since most inserts keep none and every document of a batch is moved a few times.
    doc: Option<Box<Document>>,
    /// The key, computed ahead of the writer's group ([`NewDocument::key_ahead`]) or by it, and
    /// what the group learned about it ([`NewDocument::set_probed`]).
    probed: Option<Probed>,
}

/// A new document's key in one collection, and whether the snapshot of the writer's group
/// that probed it surely does not hold that key: valid only within that group.
#[derive(Debug, Clone)]
struct Probed {
    collection: u64,
    key: Vec<u8>,
    unheld: bool,
    /// Computed before the group, from the catalog as it was then: it holds for the group's
    /// collection of the same id only while that is not partitioned (a shard key given to the
    /// collection meanwhile changes its keys).
    ahead: bool,
}

impl Probed {
    fn holds_for(&self, meta: &CollectionMeta) -> bool {
        self.collection == meta.id && (!self.ahead || meta.partition_path().is_none())
    }
}

impl NewDocument {
    /// Prepares `doc` for insertion: its `_id` placed first, as mongod's `fixDocumentForInsert`
    /// places it (an ObjectId when it has none), then the checks an insert makes before
    /// looking at the collection, in mongod's order (`_id`, key size, document size, nesting).
    /// `keep` keeps the decoded document for the writer, which needs it for secondary index
    /// keys and the operation log; without it the writer decodes the body again if it turns
    /// out to need it.
    pub fn prepare(doc: &Document, keep: bool) -> Result<NewDocument> {
        if doc.contains_key("_id") && doc.keys().next().is_some_and(|first| first != "_id") {
            let mut reordered = doc! {"_id": doc.get("_id").cloned().unwrap_or(Bson::Null)};
            reordered.extend(
                doc.iter()
                    .filter(|(name, _)| *name != "_id")
                    .map(|(name, value)| (name.clone(), value.clone())),
            );
            return NewDocument::prepare(&reordered, keep);
        }
        let (id, generated) = id_or_new(doc.get("_id").cloned());
        let own_ttl = crate::ttl::document_ttl(doc);
        // The encoding's length is not known before it is written; most documents are small.
        let mut new = NewDocument::checked(id, generated, own_ttl, 128, |stored| {
            doc.to_writer(stored)
                .map_err(|e| Error::internal(format!("cannot encode document: {e}")))
        })?;
        new.doc = keep.then(|| {
            Box::new(match generated {
                Some(oid) => {
                    let mut with_id = doc! {"_id": oid};
                    with_id.extend(doc.clone());
                    with_id
                }
                None => doc.clone(),
            })
        });
        Ok(new)
    }

    /// [`NewDocument::prepare`] for a document given as the bytes it came in (a valid BSON
    /// document: the wire layer checked it). They become the record's body as they are, with the
    /// `_id` element moved first (an ObjectId one put there when the document has none); only
    /// the `_id` and `ttl` fields are decoded (and the whole document when `keep`). A second
    /// `_id` field, which only bytes can carry, is refused as mongod refuses it.
    pub fn prepare_raw(bytes: &[u8], keep: bool) -> Result<NewDocument> {
        let invalid = Error::invalid_bson;
        let raw = RawDocument::from_bytes(bytes).map_err(invalid)?;
        let mut id_span: Option<std::ops::Range<usize>> = None;
        let mut given = None;
        let mut ttl = None;
        // Each top-level element's byte range: type byte, name, NUL, value.
        let mut at = 4;
        for element in raw.iter_elements() {
            let element = element.map_err(invalid)?;
            let len = 1 + element.key().len() + 1 + element.len();
            let value = || Bson::try_from(element.value()?);
            match element.key() {
                "_id" if id_span.is_some() => {
                    return Err(Error::bad_value(
                        "can't have multiple _id fields in one document",
                    ))
                }
                "_id" => {
                    id_span = Some(at..at + len);
                    given = Some(value().map_err(invalid)?);
                }
                crate::ttl::TTL_FIELD if ttl.is_none() => ttl = Some(value().map_err(invalid)?),
                _ => {}
            }
            at += len;
        }
        let (id, generated) = id_or_new(given);
        let own_ttl = ttl.as_ref().and_then(crate::ttl::own_ttl_of);
        let mut new = NewDocument::checked(id, generated, own_ttl, bytes.len(), |stored| {
            let part = |range: std::ops::Range<usize>| bytes.get(range).unwrap_or_default();
            match id_span {
                Some(span) if span.start > 4 => {
                    // The same length; the `_id` element moved in front of the others.
                    stored.extend_from_slice(part(0..4));
                    stored.extend_from_slice(part(span.clone()));
                    stored.extend_from_slice(part(4..span.start));
                    stored.extend_from_slice(part(span.end..bytes.len()));
                }
                _ => stored.extend_from_slice(bytes),
            }
            Ok(())
        })?;
        if keep {
            new.doc = Some(Box::new(new.document()?.into_owned()));
        }
        Ok(new)
    }

    /// Checks `id`, builds the record's bytes — `write_body` appends the document's encoding
    /// (`body_len` bytes, or about), after an `_id` element for `generated` when there is one —
    /// and checks their size and nesting.
    fn checked(
        id: Bson,
        generated: Option<ObjectId>,
        own_ttl: Option<i32>,
        body_len: usize,
        write_body: impl FnOnce(&mut Vec<u8>) -> Result<()>,
    ) -> Result<NewDocument> {
        check_id(&id)?;
        let mut encoded_id = Vec::with_capacity(16);
        keys::encode_value(&id, &mut encoded_id);
        let stored = encode(generated, body_len, write_body)?;
        let body = stored.get(record::HEADER_LEN..).unwrap_or_default();
        if body.len() > MAX_BSON_OBJECT_SIZE {
            return Err(Error::new(
                ErrorCode::BadValue,
                format!(
                    "object to insert too large. size in bytes: {}, max size: {MAX_BSON_OBJECT_SIZE}",
                    body.len()
                ),
            ));
        }
        depth::check_storable(body, depth::Write::Insert)?;
        Ok(NewDocument {
            id,
            encoded_id,
            stored,
            own_ttl,
            doc: None,
            probed: None,
        })
    }

    pub fn id(&self) -> &Bson {
        &self.id
    }

    /// Keeps the document's key in the collection `collection`, and whether the snapshot of
    /// the writer's group surely does not hold it (`unheld`), for [`NewDocument::probed_key`]
    /// later in the same group.
    pub(in crate::engine) fn set_probed(&mut self, collection: u64, key: Vec<u8>, unheld: bool) {
        self.probed = Some(Probed {
            collection,
            key,
            unheld,
            ahead: false,
        });
    }

    /// Computes the document's key in the collection `meta` before the writer's group runs (on
    /// the thread that prepares the insert, not on the writer's), for the group to use if the
    /// collection is still the same one, unpartitioned. A partitioned collection's keys, and a
    /// key that cannot be stored, are left to the group.
    pub fn key_ahead(&mut self, meta: &CollectionMeta) {
        if meta.partition_path().is_some() {
            return;
        }
        if let Ok(key) = self.key(meta) {
            self.probed = Some(Probed {
                collection: meta.id,
                key,
                unheld: false,
                ahead: true,
            });
        }
    }

    /// The document's key in the collection `meta`: the one computed ahead when it holds for
    /// `meta`, else computed now.
    pub(in crate::engine) fn take_key(&mut self, meta: &CollectionMeta) -> Result<Vec<u8>> {
        self.probed_key(meta).map(|(key, _)| key)
    }

    /// The document's key in the collection `meta` and whether the group's snapshot surely
    /// does not hold it: as [`NewDocument::set_probed`] kept them, or computed (and not known
    /// to be unheld) when they were not kept for this collection.
    pub(in crate::engine) fn probed_key(
        &mut self,
        meta: &CollectionMeta,
    ) -> Result<(Vec<u8>, bool)> {
        match self.probed.take() {
            Some(probed) if probed.holds_for(meta) => Ok((probed.key, probed.unheld)),
            _ => Ok((self.key(meta)?, false)),
        }
    }

    /// The document's key in the collection `meta` ([`record_key`]).
    pub fn key(&self, meta: &CollectionMeta) -> Result<Vec<u8>> {
        let body = self.stored.get(record::HEADER_LEN..).unwrap_or_default();
        let body = RawDocument::from_bytes(body)
            .map_err(|e| Error::internal(format!("cannot read a new document: {e}")))?;
        record_key::of_new(meta, &self.encoded_id, body)
    }

    pub fn own_ttl(&self) -> Option<i32> {
        self.own_ttl
    }

    /// Whether the document has a root field `name` (valid or not), read from its body.
    pub fn has_root_field(&self, name: &str) -> bool {
        if let Some(doc) = &self.doc {
            return doc.contains_key(name);
        }
        let body = self.stored.get(record::HEADER_LEN..).unwrap_or_default();
        RawDocument::from_bytes(body).is_ok_and(|raw| matches!(raw.get(name), Ok(Some(_))))
    }

    pub fn body_len(&self) -> usize {
        self.stored.len().saturating_sub(record::HEADER_LEN)
    }

    /// The document as it will be stored (decoded again from its body when it was not kept).
    pub fn document(&self) -> Result<Cow<'_, Document>> {
        if let Some(doc) = &self.doc {
            return Ok(Cow::Borrowed(doc));
        }
        let body = self.stored.get(record::HEADER_LEN..).unwrap_or_default();
        let corrupt =
            |e: bson::raw::Error| Error::internal(format!("cannot decode a document: {e}"));
        let doc = RawDocument::from_bytes(body)
            .map_err(corrupt)?
            .try_into()
            .map_err(corrupt)?;
        Ok(Cow::Owned(doc))
    }

    /// The document, taken out (decoded from its body when it was not kept).
    pub fn take_document(&mut self) -> Result<Document> {
        match self.doc.take() {
            Some(doc) => Ok(*doc),
            None => self.document().map(Cow::into_owned),
        }
    }

    /// The record's stored bytes, written at `ts`.
    pub fn into_record(mut self, ts: i64) -> Vec<u8> {
        record::stamp(&mut self.stored, ts, self.own_ttl);
        self.stored
    }
}

/// The `_id` given, or a new ObjectId and the same ObjectId as generated.
fn id_or_new(given: Option<Bson>) -> (Bson, Option<ObjectId>) {
    match given {
        Some(id) => (id, None),
        None => {
            let oid = ObjectId::new();
            (Bson::ObjectId(oid), Some(oid))
        }
    }
}

/// Bytes a generated `_id` element adds to a document: type, `_id\0`, the ObjectId.
const GENERATED_ID_LEN: usize = 1 + 4 + 12;

/// The record bytes of the document `write_body` appends (`body_len` bytes, or about), with the
/// header left to stamp; with `generated` as an `_id` field placed first.
fn encode(
    generated: Option<ObjectId>,
    body_len: usize,
    write_body: impl FnOnce(&mut Vec<u8>) -> Result<()>,
) -> Result<Vec<u8>> {
    let mut stored = record::unstamped(match generated {
        // The document's own length prefix is written, then removed.
        Some(_) => body_len + GENERATED_ID_LEN + 4,
        None => body_len,
    });
    let Some(oid) = generated else {
        write_body(&mut stored)?;
        return Ok(stored);
    };
    // `{_id: oid}` followed by `doc`'s elements: the `_id` element, then `doc` encoded in place
    // with its own length prefix removed, then the whole body's length written in front.
    let start = stored.len();
    stored.extend_from_slice(&[0; 4]);
    stored.push(0x07);
    stored.extend_from_slice(b"_id\0");
    stored.extend_from_slice(&oid.bytes());
    let inner = stored.len();
    write_body(&mut stored)?;
    if stored.len() < inner + 5 {
        return Err(Error::internal("a document's encoding is too short"));
    }
    stored.drain(inner..inner + 4);
    let len = i32::try_from(stored.len() - start)
        .map_err(|_| Error::internal("document too large to encode"))?;
    if let Some(prefix) = stored.get_mut(start..start + 4) {
        prefix.copy_from_slice(&len.to_le_bytes());
    }
    Ok(stored)
}

/// Gives `doc` an ObjectId `_id` placed first when it has none, and checks it may be stored.
pub fn prepare_for_insert(mut doc: Document) -> Result<Document> {
    if !doc.contains_key("_id") {
        let mut with_id = doc! {"_id": ObjectId::new()};
        with_id.extend(doc);
        doc = with_id;
    }
    check_id(doc.get("_id").unwrap_or(&Bson::Null))?;
    Ok(doc)
}

/// mongod's `storageValidIdField`: no array, regex or undefined `_id` (53 InvalidIdField), and
/// no `$`-prefixed field anywhere inside a document `_id` (52 DollarPrefixedFieldName).
fn check_id(id: &Bson) -> Result<()> {
    match id {
        Bson::Array(_) | Bson::RegularExpression(_) | Bson::Undefined => Err(Error::new(
            ErrorCode::InvalidIdField,
            format!(
                "The '_id' value cannot be of type {}",
                crate::query::path::type_name(id)
            ),
        )),
        Bson::Document(d) => match dollar_prefixed_field(d) {
            Some(name) => Err(Error::new(
                ErrorCode::DollarPrefixedFieldName,
                format!(
                    "_id fields may not contain '$'-prefixed fields: {name} is not valid for storage."
                ),
            )),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// The first `$`-prefixed field name in `doc` or the documents nested in it, in document
/// order, walked with an explicit stack rather than recursion.
fn dollar_prefixed_field(doc: &Document) -> Option<String> {
    type Fields<'a> = Box<dyn Iterator<Item = (Option<&'a str>, &'a Bson)> + 'a>;
    let mut stack: Vec<Fields<'_>> = vec![Box::new(doc.iter().map(|(k, v)| (Some(k.as_str()), v)))];
    while let Some(top) = stack.last_mut() {
        let Some((name, value)) = top.next() else {
            stack.pop();
            continue;
        };
        if let Some(name) = name.filter(|n| n.starts_with('$')) {
            return Some(name.to_owned());
        }
        match value {
            Bson::Document(d) => stack.push(Box::new(d.iter().map(|(k, v)| (Some(k.as_str()), v)))),
            Bson::Array(items) => stack.push(Box::new(items.iter().map(|v| (None, v)))),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
#[path = "new_document_tests.rs"]
mod tests;
