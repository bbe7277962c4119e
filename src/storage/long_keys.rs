//! Keys of any length over an engine whose keys are bounded (fjall: 65,535 bytes), with the
//! order of full keys kept in every range scan.
//!
//! Owns: the stored form of a key and of its value ([`stored_key`], [`stored_value`]), telling
//! a stored entry back into its full key ([`decode`], [`value_of`]), the engine range that
//! covers a range of full keys ([`engine_bounds`]), and putting a range's entries back into
//! full-key order ([`InKeyOrder`]). Does not own: the engine (the fjall backend applies
//! these), or what keys mean.
//!
//! # Layout
//!
//! With `M` = [`PREFIX_LEN`] (the engine's limit less a 16-byte digest):
//!
//! - a key of at most `M` bytes is stored as it is, its value as it is;
//! - a longer key `K` is stored under `K[..M] ++ D(K)` (`M + 16` bytes; `D` is SHA-256 cut to
//!   16 bytes), its value as `u32 BE n ++ K[M..] (n bytes) ++ value`, so the full key can be
//!   recovered and checked against the digest.
//!
//! Every stored key longer than `M` therefore belongs to a *group*: the stored keys longer
//! than `M` that share their first `M` bytes. A group is contiguous in stored order and sits
//! exactly where its members' full keys belong among every other key: a key of at most `M`
//! bytes compares with `K[..M] ++ D(K)` as it compares with `K` (a key equal to `K[..M]` is a
//! proper prefix of both), and two keys that differ before byte `M` compare as their stored
//! forms do. Only within a group is the stored order (by digest) not the key order, so a range
//! scan buffers one group at a time, decodes its full keys and sorts them.
//!
//! # Keys written before this layout
//!
//! Keys of `M + 1` to 65,535 bytes used to be stored as they are; a data directory may still
//! hold some. They fall into the group of their first `M` bytes and decode as themselves: an
//! entry is read as a long key only when its stored key is `M + 16` bytes long and its value
//! holds a tail whose full key has that digest (which a key stored as it is matches only by a
//! SHA-256 collision). A write of such a key goes to the new form and removes the old one
//! ([`in_old_layout_window`]); a read of one looks for the new form, then the old.

use super::{KeyValue, StorageError};
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::collections::VecDeque;
use std::ops::Bound;

/// The longest key the engine accepts (fjall's limit).
pub const ENGINE_KEY_LIMIT: usize = u16::MAX as usize;
/// Bytes of the digest that ends a long key's stored form.
pub const DIGEST_LEN: usize = 16;
/// Keys up to this length are stored as they are; longer ones keep this many bytes of their
/// own, then their digest.
pub const PREFIX_LEN: usize = ENGINE_KEY_LIMIT - DIGEST_LEN;
/// Bytes of the tail length that starts a long key's stored value.
const TAIL_LEN_BYTES: usize = 4;

/// Whether `key` is stored in the long form.
pub fn is_long(key: &[u8]) -> bool {
    key.len() > PREFIX_LEN
}

/// Whether `key` is long but was storable as it is before this layout, so an old-layout entry
/// of it may exist.
pub fn in_old_layout_window(key: &[u8]) -> bool {
    is_long(key) && key.len() <= ENGINE_KEY_LIMIT
}

fn digest(key: &[u8]) -> [u8; DIGEST_LEN] {
    let full = Sha256::digest(key);
    let mut cut = [0u8; DIGEST_LEN];
    for (to, from) in cut.iter_mut().zip(full.iter()) {
        *to = *from;
    }
    cut
}

/// The engine key `key` is stored under.
pub fn stored_key(key: &[u8]) -> Cow<'_, [u8]> {
    match (key.get(..PREFIX_LEN), is_long(key)) {
        (Some(prefix), true) => {
            let mut stored = Vec::with_capacity(PREFIX_LEN + DIGEST_LEN);
            stored.extend_from_slice(prefix);
            stored.extend_from_slice(&digest(key));
            Cow::Owned(stored)
        }
        _ => Cow::Borrowed(key),
    }
}

/// The engine value `value` of `key` is stored as; refuses a key whose tail a `u32` cannot
/// measure (4 GiB: far above any key the engine builds).
pub fn stored_value<'a>(key: &[u8], value: &'a [u8]) -> Result<Cow<'a, [u8]>, StorageError> {
    let (Some(tail), true) = (key.get(PREFIX_LEN..), is_long(key)) else {
        return Ok(Cow::Borrowed(value));
    };
    let tail_len =
        u32::try_from(tail.len()).map_err(|_| StorageError::KeyTooLarge { len: key.len() })?;
    let mut stored = Vec::with_capacity(TAIL_LEN_BYTES + tail.len() + value.len());
    stored.extend_from_slice(&tail_len.to_be_bytes());
    stored.extend_from_slice(tail);
    stored.extend_from_slice(value);
    Ok(Cow::Owned(stored))
}

/// The full key and the value of a long-form entry, checked against its digest; `None` when
/// the entry is not one (a key stored as it is).
fn long_entry(stored_key: &[u8], stored_value: &[u8]) -> Option<(Vec<u8>, usize)> {
    if stored_key.len() != PREFIX_LEN + DIGEST_LEN {
        return None;
    }
    let (prefix, stored_digest) = stored_key.split_at_checked(PREFIX_LEN)?;
    let (len, rest) = stored_value.split_first_chunk::<TAIL_LEN_BYTES>()?;
    let tail_len = usize::try_from(u32::from_be_bytes(*len)).ok()?;
    let tail = rest.get(..tail_len).filter(|tail| !tail.is_empty())?;
    let mut key = Vec::with_capacity(PREFIX_LEN + tail_len);
    key.extend_from_slice(prefix);
    key.extend_from_slice(tail);
    (digest(&key) == stored_digest).then_some((key, TAIL_LEN_BYTES + tail_len))
}

/// Whether an engine entry is a long key in the long form (not a key stored as it is).
pub fn is_long_entry(stored_key: &[u8], stored_value: &[u8]) -> bool {
    long_entry(stored_key, stored_value).is_some()
}

/// The full key and value of an engine entry.
pub fn decode(stored_key: Vec<u8>, stored_value: Vec<u8>) -> KeyValue {
    if !is_long(&stored_key) {
        return (stored_key, stored_value);
    }
    match long_entry(&stored_key, &stored_value) {
        Some((key, header)) => {
            let value = stored_value.get(header..).unwrap_or_default().to_vec();
            (key, value)
        }
        // An old-layout key stored as it is.
        None => (stored_key, stored_value),
    }
}

/// The value of the long key `key`, read from the entry under [`stored_key`]`(key)`: `None`
/// when that entry belongs to another key (a digest collision) or is not in the long form.
pub fn value_of(key: &[u8], stored_value: &[u8]) -> Option<Vec<u8>> {
    let stored = stored_key(key);
    let (full, header) = long_entry(&stored, stored_value)?;
    (full == key).then(|| stored_value.get(header..).unwrap_or_default().to_vec())
}

/// An engine range covering every stored entry whose full key may lie within `start..end`.
/// A bound of at most [`PREFIX_LEN`] bytes compares with stored keys as with full keys, so it
/// is kept; a longer bound becomes its group's edge, and [`InKeyOrder`] filters the group.
pub fn engine_bounds(start: Bound<&[u8]>, end: Bound<&[u8]>) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let start = match start {
        Bound::Included(k) | Bound::Excluded(k) if is_long(k) => {
            // Every stored key above `k[..M]` either is in `k`'s group or differs from `k`
            // before byte M and is above it.
            Bound::Excluded(k.get(..PREFIX_LEN).unwrap_or(k).to_vec())
        }
        other => other.map(<[u8]>::to_vec),
    };
    let end = match end {
        Bound::Included(k) | Bound::Excluded(k) if is_long(k) => {
            match super::keys::prefix_end(k.get(..PREFIX_LEN).unwrap_or(k)) {
                Some(after_group) => Bound::Excluded(after_group),
                None => Bound::Unbounded,
            }
        }
        other => other.map(<[u8]>::to_vec),
    };
    (start, end)
}

/// A range of engine entries, in full-key order: each group's entries are decoded and sorted
/// before any of them is returned, and filtered by the range's long bounds (short bounds the
/// engine range applied exactly).
///
/// A group is held in memory whole while it is returned: a range that crosses `n` keys longer
/// than [`PREFIX_LEN`] sharing their first [`PREFIX_LEN`] bytes holds those `n` entries.
pub struct InKeyOrder<I> {
    inner: I,
    reverse: bool,
    /// The range's bounds when they are long (only a group can straddle them), else unbounded.
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    /// The entry after the last group, read to find the group's end.
    next: Option<KeyValue>,
    /// The rest of the current group, in the order they are returned.
    group: VecDeque<KeyValue>,
    failed: bool,
}

impl<I: Iterator<Item = Result<KeyValue, StorageError>>> InKeyOrder<I> {
    /// `inner` walks the [`engine_bounds`] of `start..end`, in reverse when `reverse`.
    pub fn new(inner: I, start: Bound<&[u8]>, end: Bound<&[u8]>, reverse: bool) -> Self {
        let long = |bound: Bound<&[u8]>| match bound {
            Bound::Included(k) | Bound::Excluded(k) if is_long(k) => bound.map(<[u8]>::to_vec),
            _ => Bound::Unbounded,
        };
        InKeyOrder {
            inner,
            reverse,
            start: long(start),
            end: long(end),
            next: None,
            group: VecDeque::new(),
            failed: false,
        }
    }

    fn within(&self, key: &[u8]) -> bool {
        std::ops::RangeBounds::<[u8]>::contains(
            &(
                self.start.as_ref().map(Vec::as_slice),
                self.end.as_ref().map(Vec::as_slice),
            ),
            key,
        )
    }

    /// Reads the rest of the group `first` opens, then sorts and filters it into `group`.
    fn read_group(&mut self, first: KeyValue) -> Result<(), StorageError> {
        let prefix = first.0.get(..PREFIX_LEN).unwrap_or_default().to_vec();
        let mut members = vec![decode(first.0, first.1)];
        for entry in self.inner.by_ref() {
            let (key, value) = entry?;
            if is_long(&key) && key.starts_with(&prefix) {
                members.push(decode(key, value));
            } else {
                self.next = Some((key, value));
                break;
            }
        }
        members.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        if self.reverse {
            members.reverse();
        }
        members.retain(|(key, _)| self.within(key));
        self.group = members.into();
        Ok(())
    }
}

impl<I: Iterator<Item = Result<KeyValue, StorageError>>> Iterator for InKeyOrder<I> {
    type Item = Result<KeyValue, StorageError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(entry) = self.group.pop_front() {
                return Some(Ok(entry));
            }
            if self.failed {
                return None;
            }
            let entry = match self.next.take() {
                Some(entry) => entry,
                None => match self.inner.next()? {
                    Ok(entry) => entry,
                    Err(e) => {
                        self.failed = true;
                        return Some(Err(e));
                    }
                },
            };
            if !is_long(&entry.0) {
                return Some(Ok(entry));
            }
            if let Err(e) = self.read_group(entry) {
                self.failed = true;
                return Some(Err(e));
            }
        }
    }
}

#[cfg(test)]
#[path = "long_keys_tests.rs"]
mod tests;
