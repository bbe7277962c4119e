//! The in-memory implementation of [`Backend`]: every keyspace an ordered map of multi-version
//! values, for `--storage memory` (an ephemeral server: nothing is written to disk, nothing
//! survives the process) and as the model the fjall backend is tested against.
//!
//! Owns: versioned entries, snapshot pinning and the pruning of versions no snapshot can see.
//! Does not own: key layout, what goes into a batch, durability (there is none to give).
//! Keys of any length are held as they are (the map has no bound of its own to work around).
//!
//! # MVCC
//!
//! Each key keeps its versions `(seqno, value or tombstone)` in ascending order. A commit
//! appends one version per key it writes, at the next sequence number, under the write lock, and
//! only then publishes that number, so a snapshot — a sequence number — sees exactly the batches
//! committed before it: taking one is O(1) and copies nothing. Snapshots pin their number (a
//! reference count per number); a version is pruned once no pinned snapshot, nor the latest
//! state, reads it. Pruning visits the keys a commit writes plus a few more per commit
//! in round-robin order, so versions left behind by a snapshot that has since gone are reclaimed
//! eventually without a stop-the-world pass.
//!
//! A range iterator owns its snapshot and reads the map in chunks under the read lock, resuming
//! after the last key it returned, so it can be kept by a cursor without holding the lock.

use super::{
    bounds_are_empty, Backend, Durability, KeyValue, Keyspace, Snapshot, StorageError, WriteBatch,
};
use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, Mutex, RwLock};

/// Entries a range iterator reads per lock acquisition.
const CHUNK: usize = 128;
/// Keys the round-robin pruning visits per commit, besides the keys the commit wrote.
const SWEEP_PER_COMMIT: usize = 32;

/// One version of a key: the sequence number that wrote it and its value (`None`: deleted).
type Version = (u64, Option<Vec<u8>>);
type Versions = Vec<Version>;
type Map = BTreeMap<Vec<u8>, Versions>;

#[derive(Default)]
struct Maps {
    maps: [Map; Keyspace::ALL.len()],
    /// Where the round-robin pruning resumes, per keyspace.
    sweep_from: [Option<Vec<u8>>; Keyspace::ALL.len()],
    /// Bytes of keys and values held, every version included: [`MemoryBackend::bytes_held`]
    /// kept as versions come and go, against the backend's limit.
    held: u64,
}

/// The bytes one key's versions hold: the key once per version, and each value.
fn versions_bytes(key: &[u8], versions: &[Version]) -> u64 {
    let values: usize = versions
        .iter()
        .map(|(_, v)| v.as_ref().map_or(0, Vec::len))
        .sum();
    (key.len() * versions.len() + values) as u64
}

/// Live snapshots by sequence number, and the last published sequence number.
#[derive(Default)]
struct Pins {
    published: u64,
    counts: BTreeMap<u64, usize>,
}

#[derive(Default)]
struct Shared {
    data: RwLock<Maps>,
    pins: Mutex<Pins>,
    /// Serialises commits (the write lock alone would let two commits pick one number).
    commit: Mutex<()>,
}

/// An ordered, multi-version key-value store in memory.
#[derive(Default)]
pub struct MemoryBackend {
    shared: Arc<Shared>,
    /// The bytes stored data may take (0: no limit): a batch that writes a value and would
    /// take the store past it is refused whole; a batch of deletions never is, so space can
    /// always be freed.
    limit: u64,
}

impl MemoryBackend {
    pub fn new() -> Self {
        MemoryBackend::default()
    }

    /// A store holding at most `limit` bytes of keys and values (0: no limit).
    pub fn with_limit(limit: u64) -> Self {
        MemoryBackend {
            limit,
            ..MemoryBackend::default()
        }
    }

    /// Bytes of keys and values held, every version included. Walks every entry: for
    /// occasional statistics, not for hot paths.
    pub fn bytes_held(&self) -> u64 {
        // Statistics: a poisoned store (refused by every read and write) is still measured.
        let data = crate::sync::read_recovering(&self.shared.data, DATA_LOCK);
        let mut total = 0u64;
        for map in &data.maps {
            for (key, versions) in map {
                let values: usize = versions
                    .iter()
                    .map(|(_, v)| v.as_ref().map_or(0, Vec::len))
                    .sum();
                total += (key.len() * versions.len() + values) as u64;
            }
        }
        total
    }

    /// Versions stored for `key` (for tests of pruning).
    #[cfg(test)]
    fn version_count(&self, keyspace: Keyspace, key: &[u8]) -> usize {
        self.shared
            .data
            .read()
            .ok()
            .and_then(|d| d.maps.get(keyspace as usize)?.get(key).map(Vec::len))
            .unwrap_or(0)
    }
}

/// The store's locks ([`crate::sync`]): the data is changed in several steps by a commit, so a
/// poisoned data or commit lock refuses every read and write; the pins (snapshot counts and the
/// published sequence number) change one value at a time and are taken as they are.
const DATA_LOCK: &str = "memory store data";
const COMMIT_LOCK: &str = "memory store commit";
const PINS_LOCK: &str = "memory store snapshots";

fn poisoned() -> StorageError {
    StorageError::Poisoned
}

/// The value `versions` hold as of `seqno`.
fn visible_at(versions: &[Version], seqno: u64) -> Option<&Vec<u8>> {
    versions
        .iter()
        .rev()
        .find(|(s, _)| *s <= seqno)
        .and_then(|(_, v)| v.as_ref())
}

/// Drops the versions of one key that no snapshot can see: a version is kept when it is the
/// newest one at or before some live sequence number (`live`, ascending: the pinned snapshots
/// and the last published number), and a tombstone only while an older version remains for it
/// to hide. Returns whether the key has no version left.
fn prune(versions: &mut Versions, live: &[u64]) -> bool {
    let mut index = 0;
    let mut keep = Vec::with_capacity(versions.len());
    for (i, (seqno, _)) in versions.iter().enumerate() {
        let next = versions.get(i + 1).map_or(u64::MAX, |(s, _)| *s);
        // Some live number p with seqno <= p < next sees this version.
        while live.get(index).is_some_and(|p| *p < *seqno) {
            index += 1;
        }
        keep.push(live.get(index).is_some_and(|p| *p < next));
    }
    let mut flags = keep.into_iter();
    versions.retain(|_| flags.next().unwrap_or(true));
    while matches!(versions.first(), Some((_, None))) {
        versions.remove(0);
    }
    versions.is_empty()
}

/// Prunes `key`'s versions no one reads; returns the bytes freed.
fn prune_key(map: &mut Map, key: &[u8], live: &[u64]) -> u64 {
    let Some(versions) = map.get_mut(key) else {
        return 0;
    };
    let before = versions_bytes(key, versions);
    if prune(versions, live) {
        map.remove(key);
        return before;
    }
    before.saturating_sub(versions_bytes(key, versions))
}

impl Maps {
    /// Prunes every key: what the round-robin sweep would reclaim over many commits, at once
    /// (a store at its limit, before it refuses a write).
    fn prune_all(&mut self, live: &[u64]) {
        let mut freed = 0u64;
        for map in &mut self.maps {
            map.retain(|key, versions| {
                let before = versions_bytes(key, versions);
                let empty = prune(versions, live);
                let after = if empty {
                    0
                } else {
                    versions_bytes(key, versions)
                };
                freed += before.saturating_sub(after);
                !empty
            });
        }
        self.held = self.held.saturating_sub(freed);
    }

    /// Prunes up to [`SWEEP_PER_COMMIT`] keys of each keyspace after where the last sweep ended.
    fn sweep(&mut self, live: &[u64]) {
        for (map, from) in self.maps.iter_mut().zip(self.sweep_from.iter_mut()) {
            let start = match from.take() {
                Some(key) => Bound::Excluded(key),
                None => Bound::Unbounded,
            };
            let keys: Vec<Vec<u8>> = map
                .range((start, Bound::Unbounded))
                .take(SWEEP_PER_COMMIT)
                .map(|(k, _)| k.clone())
                .collect();
            if keys.len() == SWEEP_PER_COMMIT {
                *from = keys.last().cloned();
            }
            for key in keys {
                self.held = self.held.saturating_sub(prune_key(map, &key, live));
            }
        }
    }
}

impl Backend for MemoryBackend {
    type Snapshot = MemorySnapshot;

    fn snapshot(&self) -> MemorySnapshot {
        let seqno = {
            let mut pins = crate::sync::lock_recovering(&self.shared.pins, PINS_LOCK);
            let seqno = pins.published;
            *pins.counts.entry(seqno).or_default() += 1;
            seqno
        };
        MemorySnapshot {
            pin: Arc::new(Pin {
                shared: Arc::clone(&self.shared),
                seqno,
            }),
        }
    }

    fn commit(&self, batch: WriteBatch, _durability: Durability) -> Result<(), StorageError> {
        if batch.is_empty() {
            return Ok(());
        }
        batch.check_keys()?;
        let _commit =
            crate::sync::lock(&self.shared.commit, COMMIT_LOCK).map_err(|_| poisoned())?;
        let mut data = crate::sync::write(&self.shared.data, DATA_LOCK).map_err(|_| poisoned())?;
        if self.limit > 0 && batch.writes().any(|(_, _, value)| value.is_some()) {
            let needed = batch.approximate_size() as u64;
            if data.held.saturating_add(needed) > self.limit {
                // Versions of deleted or rewritten keys that no snapshot reads any more may
                // still wait for the sweep: reclaim them all before refusing.
                let live: Vec<u64> = {
                    let pins =
                        crate::sync::lock(&self.shared.pins, PINS_LOCK).map_err(|_| poisoned())?;
                    pins.counts
                        .keys()
                        .copied()
                        .chain(std::iter::once(pins.published))
                        .collect()
                };
                data.prune_all(&live);
            }
            if data.held.saturating_add(needed) > self.limit {
                return Err(StorageError::MemoryFull {
                    held: data.held,
                    needed,
                    limit: self.limit,
                });
            }
        }
        let seqno = crate::sync::lock(&self.shared.pins, PINS_LOCK)
            .map_err(|_| poisoned())?
            .published
            + 1;
        let mut written: Vec<(Keyspace, Vec<u8>)> = Vec::with_capacity(batch.len());
        for (keyspace, key, value) in batch.into_writes() {
            let Some(map) = data.maps.get_mut(keyspace as usize) else {
                continue;
            };
            let versions = map.entry(key.clone()).or_default();
            let before = versions_bytes(&key, versions);
            match versions.last_mut() {
                // A later operation of the same batch on the same key wins.
                Some((s, v)) if *s == seqno => *v = value,
                _ => versions.push((seqno, value)),
            }
            let after = versions_bytes(&key, versions);
            data.held = (data.held + after).saturating_sub(before);
            written.push((keyspace, key));
        }
        // Publish only once every version is in place: a snapshot taken from now on sees all.
        let live: Vec<u64> = {
            let mut pins =
                crate::sync::lock(&self.shared.pins, PINS_LOCK).map_err(|_| poisoned())?;
            pins.published = seqno;
            pins.counts
                .keys()
                .copied()
                .chain(std::iter::once(seqno))
                .collect()
        };
        for (keyspace, key) in written {
            if let Some(map) = data.maps.get_mut(keyspace as usize) {
                let freed = prune_key(map, &key, &live);
                data.held = data.held.saturating_sub(freed);
            }
        }
        data.sweep(&live);
        Ok(())
    }

    fn persist(&self, _durability: Durability) -> Result<(), StorageError> {
        Ok(())
    }
}

/// Keeps a sequence number's versions from being pruned while any snapshot clone holds it.
struct Pin {
    shared: Arc<Shared>,
    seqno: u64,
}

impl Drop for Pin {
    fn drop(&mut self) {
        {
            let mut pins = crate::sync::lock_recovering(&self.shared.pins, PINS_LOCK);
            if let Some(count) = pins.counts.get_mut(&self.seqno) {
                *count -= 1;
                if *count == 0 {
                    pins.counts.remove(&self.seqno);
                }
            }
        }
    }
}

/// A point-in-time view of a [`MemoryBackend`]: a pinned sequence number.
#[derive(Clone)]
pub struct MemorySnapshot {
    pin: Arc<Pin>,
}

impl MemorySnapshot {
    fn seqno(&self) -> u64 {
        self.pin.seqno
    }
}

impl Snapshot for MemorySnapshot {
    type Iter = MemoryIter;

    fn get(&self, keyspace: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        if key.is_empty() {
            return Ok(None);
        }
        let data = crate::sync::read(&self.pin.shared.data, DATA_LOCK).map_err(|_| poisoned())?;
        Ok(data
            .maps
            .get(keyspace as usize)
            .and_then(|map| map.get(key))
            .and_then(|versions| visible_at(versions, self.seqno()))
            .cloned())
    }

    fn range(
        &self,
        keyspace: Keyspace,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> MemoryIter {
        let done = bounds_are_empty(start, end);
        MemoryIter {
            snapshot: self.clone(),
            keyspace,
            lower: start.map(<[u8]>::to_vec),
            upper: end.map(<[u8]>::to_vec),
            reverse,
            buffer: VecDeque::new(),
            done,
        }
    }
}

/// Range iterator over a [`MemorySnapshot`]; reads [`CHUNK`] visible entries at a time.
pub struct MemoryIter {
    snapshot: MemorySnapshot,
    keyspace: Keyspace,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    reverse: bool,
    buffer: VecDeque<KeyValue>,
    done: bool,
}

impl MemoryIter {
    fn refill(&mut self) -> Result<(), StorageError> {
        let shared = Arc::clone(&self.snapshot.pin.shared);
        let data = crate::sync::read(&shared.data, DATA_LOCK).map_err(|_| poisoned())?;
        let Some(map) = data.maps.get(self.keyspace as usize) else {
            self.done = true;
            return Ok(());
        };
        let seqno = self.snapshot.seqno();
        let range = map.range::<[u8], _>((
            self.lower.as_ref().map(Vec::as_slice),
            self.upper.as_ref().map(Vec::as_slice),
        ));
        let entries: Box<dyn Iterator<Item = (&Vec<u8>, &Versions)>> = if self.reverse {
            Box::new(range.rev())
        } else {
            Box::new(range)
        };
        let mut last = None;
        for (key, versions) in entries {
            last = Some(key);
            if let Some(value) = visible_at(versions, seqno) {
                self.buffer.push_back((key.clone(), value.clone()));
                if self.buffer.len() == CHUNK {
                    break;
                }
            }
        }
        match last {
            Some(key) if self.buffer.len() == CHUNK => {
                let resume = Bound::Excluded(key.clone());
                if self.reverse {
                    self.upper = resume;
                } else {
                    self.lower = resume;
                }
                self.done = bounds_are_empty(
                    self.lower.as_ref().map(Vec::as_slice),
                    self.upper.as_ref().map(Vec::as_slice),
                );
            }
            _ => self.done = true,
        }
        Ok(())
    }
}

impl Iterator for MemoryIter {
    type Item = Result<KeyValue, StorageError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buffer.is_empty() && !self.done {
            if let Err(e) = self.refill() {
                self.done = true;
                return Some(Err(e));
            }
        }
        self.buffer.pop_front().map(Ok)
    }
}

#[cfg(test)]
#[path = "memory_tests.rs"]
mod tests;
