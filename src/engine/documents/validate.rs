//! `validate`: one collection's stored structure checked against itself, in one snapshot.
//!
//! Every record must decode (header and BSON body) and be stored under the key of its own
//! `_id`. Every ready secondary index must hold exactly the entries its documents give it (a
//! dangling entry is "extra", an absent one "missing"), in strictly increasing key order, and be
//! marked multikey when a document makes it so. The expiry keyspace must hold exactly one entry
//! per document that can expire (TTL-20). The stored counter must equal the records' count and
//! body bytes. Memory grows with the expected index and expiry keys of the collection.
//!
//! Owns: the check and its findings. Does not own: the reply's shape (`command::catalog::validate`).

use super::{counts, expiry, index_keys};
use crate::engine::catalog::{CollectionMeta, IndexMeta};
use crate::engine::documents::record::Record;
use crate::engine::documents::record_key;
use crate::engine::interrupt::Interrupt;
use crate::error::Result;
use crate::storage::{keys, Keyspace, Snapshot};
use bson::{Bson, Document};
use std::collections::BTreeSet;

/// How many extra or missing entries are described one by one (all are counted).
const DESCRIBED: usize = 20;

/// One secondary index's findings.
#[derive(Debug, Default)]
pub struct IndexFindings {
    pub name: String,
    /// Entries stored in the index.
    pub keys: u64,
    /// Stored entries no document gives the index (dangling).
    pub extra: u64,
    /// Entries a document gives the index that are not stored.
    pub missing: u64,
    pub errors: Vec<String>,
    /// The first extra and missing entries, described (index, key).
    pub extra_entries: Vec<Document>,
    pub missing_entries: Vec<Document>,
}

/// What `validate` found.
#[derive(Debug, Default)]
pub struct Findings {
    pub records: u64,
    /// Records whose header or body does not decode, or stored under another `_id`'s key.
    pub corrupt_records: u64,
    pub indexes: Vec<IndexFindings>,
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
    /// Entries in the expiry keys (what a `_ts` index holds), and whether they are exactly one
    /// per document that can expire.
    pub expiry_entries: u64,
    pub expiry_valid: bool,
    /// The first extra and missing entries, described (index, key).
    pub extra_entries: Vec<Document>,
    pub missing_entries: Vec<Document>,
}

impl Findings {
    pub fn valid(&self) -> bool {
        self.errors.is_empty() && self.indexes.iter().all(|i| i.errors.is_empty())
    }
}

/// Checks `meta` as stored in `snapshot`; stops with the interrupt's error when it fires.
pub fn validate<S: Snapshot>(
    snapshot: &S,
    meta: &CollectionMeta,
    interrupt: &Interrupt,
) -> Result<Findings> {
    let mut found = Findings::default();
    // A `_ts` index has no entries of its own: the expiry keys order the documents by `_ts`.
    let ready: Vec<&IndexMeta> = meta.stored_indexes().filter(|i| !i.building).collect();
    // Per ready index: the entries its documents give it, and whether one makes it multikey.
    let mut expected: Vec<(BTreeSet<Vec<u8>>, bool)> = vec![(BTreeSet::new(), false); ready.len()];
    let mut expected_expiry = BTreeSet::new();
    let mut body_bytes = 0u64;
    let prefix = keys::collection_prefix(meta.id);
    for (n, entry) in snapshot
        .prefix(Keyspace::Documents, &prefix, false)
        .enumerate()
    {
        if n.is_multiple_of(1024) {
            interrupt.check()?;
        }
        let (key, value) = entry?;
        found.records += 1;
        let Some((record, doc)) = decode(&value) else {
            found.corrupt_records += 1;
            found
                .errors
                .push(format!("record {} does not decode", hex(&key)));
            continue;
        };
        body_bytes += record.body.len() as u64;
        let id = doc.get("_id").cloned().unwrap_or(Bson::Null);
        if record_key::of_document(meta, &doc) != key {
            found.corrupt_records += 1;
            found.errors.push(format!(
                "record {} is stored under another _id's key",
                crate::query::path::render(&id)
            ));
            continue;
        }
        for (index, (set, multikey)) in ready.iter().zip(expected.iter_mut()) {
            match index_keys::keys(index, &doc) {
                Ok(k) => {
                    *multikey |= k.multikey;
                    for tuple in &k.tuples {
                        set.insert(keys::index_key(
                            meta.id,
                            index.id,
                            tuple,
                            record_key::record(&key),
                        ));
                    }
                }
                Err(e) => found.errors.push(format!(
                    "document {} has no keys in index {}: {}",
                    crate::query::path::render(&id),
                    index.name,
                    e.message
                )),
            }
        }
        if let Some(k) = expiry::key_for(&key, &record) {
            expected_expiry.insert(k);
        }
    }
    for (index, (wanted, multikey)) in ready.iter().zip(expected) {
        let checked = check_index(snapshot, interrupt, meta, index, wanted, multikey)?;
        for (all, own) in [
            (&mut found.extra_entries, &checked.extra_entries),
            (&mut found.missing_entries, &checked.missing_entries),
        ] {
            let room = DESCRIBED.saturating_sub(all.len());
            all.extend(own.iter().take(room).cloned());
        }
        found.indexes.push(checked);
    }
    check_expiry(snapshot, interrupt, meta, expected_expiry, &mut found)?;
    match counts::stored(snapshot, meta.id)? {
        Some(t) if t.count != found.records || t.size != body_bytes => found.errors.push(format!(
            "the stored count says {} documents of {} bytes; the collection holds {} of {} bytes",
            t.count, t.size, found.records, body_bytes
        )),
        Some(_) => {}
        None if found.records > 0 => found
            .warnings
            .push("the collection has no stored count yet".to_string()),
        None => {}
    }
    Ok(found)
}

fn decode(value: &[u8]) -> Option<(Record, Document)> {
    let record = Record::decode(value).ok()?;
    let doc = Document::from_reader(record.body.as_slice()).ok()?;
    Some((record, doc))
}

fn check_index<S: Snapshot>(
    snapshot: &S,
    interrupt: &Interrupt,
    meta: &CollectionMeta,
    index: &IndexMeta,
    mut wanted: BTreeSet<Vec<u8>>,
    multikey: bool,
) -> Result<IndexFindings> {
    let mut out = IndexFindings {
        name: index.name.clone(),
        ..IndexFindings::default()
    };
    let mut previous: Option<Vec<u8>> = None;
    for entry in snapshot.prefix(
        Keyspace::Indexes,
        &keys::index_prefix(meta.id, index.id),
        false,
    ) {
        let (key, _) = entry?;
        if out.keys.is_multiple_of(1024) {
            interrupt.check()?;
        }
        out.keys += 1;
        if previous.as_ref().is_some_and(|p| *p >= key) {
            out.errors.push(format!(
                "index {} is out of key order at {}",
                index.name,
                hex(&key)
            ));
        }
        if !wanted.remove(&key) {
            out.extra += 1;
            if out.extra_entries.len() < DESCRIBED {
                out.extra_entries
                    .push(bson::doc! {"index": &index.name, "key": hex(&key)});
            }
        }
        previous = Some(key);
    }
    out.missing = wanted.len() as u64;
    for key in wanted.iter().take(DESCRIBED) {
        out.missing_entries
            .push(bson::doc! {"index": &index.name, "key": hex(key)});
    }
    if out.extra > 0 {
        out.errors.push(format!(
            "index {} has {} entries no document gives it",
            index.name, out.extra
        ));
    }
    if out.missing > 0 {
        out.errors.push(format!(
            "index {} lacks {} entries its documents give it",
            index.name, out.missing
        ));
    }
    if multikey && !index.multikey {
        out.errors.push(format!(
            "index {} is not multikey, but a document makes it so",
            index.name
        ));
    }
    Ok(out)
}

fn check_expiry<S: Snapshot>(
    snapshot: &S,
    interrupt: &Interrupt,
    meta: &CollectionMeta,
    mut wanted: BTreeSet<Vec<u8>>,
    found: &mut Findings,
) -> Result<()> {
    let mut extra = 0u64;
    for kind in [expiry::FOLLOWS_COLLECTION, expiry::OWN_TTL] {
        for entry in snapshot.prefix(Keyspace::Expiry, &expiry::kind_prefix(meta.id, kind), false) {
            let (key, _) = entry?;
            if found.expiry_entries.is_multiple_of(1024) {
                interrupt.check()?;
            }
            found.expiry_entries += 1;
            if !wanted.remove(&key) {
                extra += 1;
            }
        }
    }
    if extra > 0 {
        found.errors.push(format!(
            "the expiry keys hold {extra} entries no document gives them"
        ));
    }
    if !wanted.is_empty() {
        found.errors.push(format!(
            "the expiry keys lack {} entries of documents that can expire",
            wanted.len()
        ));
    }
    found.expiry_valid = extra == 0 && wanted.is_empty();
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
