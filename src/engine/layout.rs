//! The key layout a data directory was written with, and the one-time rewrite of the earlier
//! one at start.
//!
//! Layout 1 began every `Documents`, `Indexes` and `Expiry` key with the collection id as eight
//! big-endian bytes (and index entries with the index id as eight more). Layout 2 writes both
//! ids compactly ([`keys::encode_id`]: one byte for the first 247), which makes every key of
//! a small collection seven bytes shorter (fifteen for index entries). The layout is recorded
//! in the catalog; a directory without the record is a new one or a layout-1 one, and is
//! rewritten before anything reads it.
//!
//! The rewrite is restartable: every layout-1 key starts with `00` (ids below 2^56) and no
//! layout-2 key does (catalog ids start at 1), so each step moves the next layout-1 keys in one
//! durable batch (deleting each and writing it under its new key), and a rewrite cut short by
//! a crash goes on from where it was at the next start. The record is written last.
//!
//! Layout 3 adds partitioned collections, whose document keys carry the shard-key value after
//! the `_id` (`record_key`); every other key is as in layout 2, so a layout-2 directory needs
//! no rewrite, only the new record. The record keeps an earlier mayfly, which would look a
//! partitioned collection's documents up by `_id` alone and miss them, from opening it.
//!
//! Layout 4 adds sweep markers (`sweep`): a dropped collection's or index's entries stay
//! until the sweeper deletes them, and its id must not be reused meanwhile. An earlier mayfly
//! would ignore the markers, leave the entries for ever, and could give a new collection the
//! dropped one's id and documents; the record keeps it from opening the directory. Keys are as
//! in layout 3, so a layout-2 or layout-3 directory needs only the new record.
//!
//! Owns: the layout record and the rewrite. Does not own: the layout itself (`storage::keys`).

use crate::error::{Error, Result};
use crate::storage::handle::Db;
use crate::storage::keys;
use crate::storage::{Backend, Durability, Keyspace, Snapshot, WriteBatch};
use std::ops::Bound;

/// The `Catalog` key of the layout record.
const LAYOUT_KEY: &[u8] = b"layout\0";
/// The layout this version writes.
const CURRENT: u32 = 4;
/// The layouts whose keys are this one's, less partitioned collections (2) or sweep markers
/// (2 and 3): they need only the new record.
const LAYOUT_2: u32 = 2;
const LAYOUT_3: u32 = 3;
/// Entries moved by one durable step of the rewrite.
const STEP_ENTRIES: usize = 20_000;
/// Where layout-1 keys lie: those starting with `00`.
const LAYOUT_1_START: &[u8] = &[0x00];
const LAYOUT_1_END: &[u8] = &[0x01];

/// Brings the data directory to the current layout, rewriting layout-1 keys; returns how many
/// entries were rewritten. Refuses a directory written by a newer layout.
pub fn upgrade(backend: &Db) -> Result<u64> {
    match recorded(&backend.snapshot())? {
        Some(CURRENT) => return Ok(0),
        Some(LAYOUT_2 | LAYOUT_3) => {
            record_current(backend)?;
            return Ok(0);
        }
        Some(newer) => {
            return Err(Error::internal(format!(
                "the data directory's keys are in layout {newer}, written by a newer mayfly; \
                 this version reads layout {CURRENT} and earlier"
            )))
        }
        None => {}
    }
    let mut rewritten = 0u64;
    for keyspace in [Keyspace::Documents, Keyspace::Indexes, Keyspace::Expiry] {
        loop {
            let moved = step(backend, keyspace)?;
            if moved == 0 {
                break;
            }
            rewritten += moved;
        }
    }
    record_current(backend)?;
    if rewritten > 0 {
        tracing::info!(
            entries = rewritten,
            "rewrote the data directory's keys in layout {CURRENT}"
        );
    }
    Ok(rewritten)
}

fn record_current(backend: &Db) -> Result<()> {
    let mut batch = WriteBatch::new();
    batch.put(
        Keyspace::Catalog,
        LAYOUT_KEY,
        CURRENT.to_be_bytes().to_vec(),
    );
    backend.commit(batch, Durability::SyncData)?;
    Ok(())
}

/// Whether `snapshot` can be read as it is, without the rewrite a start does: its layout is the
/// current one or layout 2, or it holds no key of layout 1. For the tools that read a
/// directory without starting the server on it.
pub fn is_current<S: Snapshot>(snapshot: &S) -> Result<bool> {
    match recorded(snapshot)? {
        Some(layout) => Ok(matches!(layout, CURRENT | LAYOUT_2 | LAYOUT_3)),
        None => {
            for keyspace in [Keyspace::Documents, Keyspace::Indexes, Keyspace::Expiry] {
                let mut old = snapshot.range(
                    keyspace,
                    Bound::Included(LAYOUT_1_START),
                    Bound::Excluded(LAYOUT_1_END),
                    false,
                );
                if old.next().transpose()?.is_some() {
                    return Ok(false);
                }
            }
            Ok(true)
        }
    }
}

/// Refuses a directory marked initialised (`storage::integrity`) whose catalog lacks the
/// layout record every first start writes: its catalog's records are lost, and opening it
/// would forget its collections.
pub fn check_catalog(backend: &crate::storage::FjallBackend, dir: &std::path::Path) -> Result<()> {
    if backend.preflight().marked && recorded(&backend.snapshot())?.is_none() {
        return Err(crate::storage::StorageError::Damaged {
            path: dir.join("keyspaces"),
            detail: "the catalog has lost its records (the layout record every initialised \
                     directory has): its collections would be forgotten"
                .to_owned(),
        }
        .into());
    }
    Ok(())
}

/// The recorded layout; `None` for a directory without the record.
fn recorded<S: Snapshot>(snapshot: &S) -> Result<Option<u32>> {
    let Some(value) = snapshot.get(Keyspace::Catalog, LAYOUT_KEY)? else {
        return Ok(None);
    };
    let bytes: [u8; 4] = value
        .as_slice()
        .try_into()
        .map_err(|_| Error::internal("corrupt layout record"))?;
    Ok(Some(u32::from_be_bytes(bytes)))
}

/// Moves up to [`STEP_ENTRIES`] layout-1 entries of `keyspace` to their layout-2 keys in one
/// durable batch; returns how many it moved.
fn step(backend: &Db, keyspace: Keyspace) -> Result<u64> {
    let snapshot = backend.snapshot();
    let mut batch = WriteBatch::new();
    let mut moved = 0u64;
    let entries = snapshot.range(
        keyspace,
        Bound::Included(LAYOUT_1_START),
        Bound::Excluded(LAYOUT_1_END),
        false,
    );
    for entry in entries.take(STEP_ENTRIES) {
        let (old, value) = entry?;
        let new = relaid(keyspace, &old).ok_or_else(|| {
            Error::internal(format!("corrupt {} key {old:02x?}", keyspace.name()))
        })?;
        batch.delete(keyspace, old);
        batch.put(keyspace, new, value);
        moved += 1;
    }
    if moved > 0 {
        backend.commit(batch, Durability::SyncData)?;
    }
    Ok(moved)
}

/// A layout-1 key in layout 2: its leading ids (the collection's; an index entry's also the
/// index's) compact, the rest as it was.
fn relaid(keyspace: Keyspace, old: &[u8]) -> Option<Vec<u8>> {
    let (collection_id, rest) = split_layout_1_id(old)?;
    let mut new = Vec::with_capacity(old.len());
    new.extend_from_slice(&keys::encode_id(collection_id));
    let rest = match keyspace {
        Keyspace::Indexes => {
            let (index_id, rest) = split_layout_1_id(rest)?;
            new.extend_from_slice(&keys::encode_id(index_id));
            rest
        }
        _ => rest,
    };
    new.extend_from_slice(rest);
    Some(new)
}

fn split_layout_1_id(key: &[u8]) -> Option<(u64, &[u8])> {
    let (id, rest) = key.split_first_chunk::<8>()?;
    Some((u64::from_be_bytes(*id), rest))
}

#[cfg(test)]
#[path = "layout_tests.rs"]
mod tests;
