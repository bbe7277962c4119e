//! `$sample`'s selection when it must read its input: as mongod, each row gets a random key and
//! the `size` rows with the smallest keys are the sample, in key order (so in random order).
//!
//! Owns: the keys and the top-`size` selection. The selection holds at most `size` rows in a
//! heap, within the stage's 100 MB: only the rows kept count, at what they hold decoded. Past it, 292 without
//! `allowDiskUse`; with it, the heap is written, sorted, as one run of the external sort
//! (`engine::exec::spill`) and a new heap starts: the sample is the `size` smallest keys of
//! the merged runs and the last heap. Once a full heap has been written, a row whose key is
//! above that heap's largest cannot be in the sample and is dropped at once.

use super::memory::{entry_row, held_row, row_fields, Blocking, StageLimits, StageMemory};
use super::{Row, Rows};
use crate::engine::cursor::{Held, HeldIter};
use crate::engine::exec::spill::{DocMerge, DocOrder, DocRun, SpillDir};
use crate::error::Result;
use bson::{doc, Document};
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

/// A uniform sample of `size` rows, in random order.
pub(super) fn sample(
    rows: Rows,
    size: u64,
    limits: &StageLimits,
    spill: Option<&SpillDir>,
) -> Result<Rows> {
    let seed = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    sample_with(
        rows,
        size,
        limits.budget(Blocking::Sort),
        spill,
        &limits.held,
        seed,
    )
}

/// A row and its random key; ordered by key (the arrival number breaks the rare tie).
struct Keyed {
    key: i64,
    seq: u64,
    bytes: usize,
    row: Row,
}

impl PartialEq for Keyed {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Keyed {}

impl PartialOrd for Keyed {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Keyed {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.key, self.seq).cmp(&(other.key, other.seq))
    }
}

fn entry(k: Keyed) -> Document {
    let mut e = doc! {"r": k.key, "q": k.seq as i64};
    row_fields(&mut e, k.row);
    e
}

fn by_key() -> DocOrder {
    Arc::new(|a: &Document, b: &Document| {
        let key = |d: &Document| (d.get_i64("r").unwrap_or(0), d.get_i64("q").unwrap_or(0));
        key(a).cmp(&key(b))
    })
}

/// [`sample`] with a given seed: the same seed and input give the same sample, spilled or not.
fn sample_with(
    rows: Rows,
    size: u64,
    mut memory: StageMemory,
    spill: Option<&SpillDir>,
    held: &Held,
    seed: u64,
) -> Result<Rows> {
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    let mut rng = SplitMix(seed);
    let mut heap: BinaryHeap<Keyed> = BinaryHeap::new();
    let mut runs: Vec<DocRun> = Vec::new();
    // Every key above this is beaten by `size` keys already written.
    let mut ceiling: Option<i64> = None;
    for (seq, row) in rows.enumerate() {
        let row = row?;
        // 63 bits, so the key is a non-negative BSON long.
        let key = (rng.next() >> 1) as i64;
        if size == 0 || ceiling.is_some_and(|c| key > c) {
            continue;
        }
        // A row is measured only once it is kept.
        let mut keyed = Keyed {
            key,
            seq: seq as u64,
            bytes: 0,
            row,
        };
        if heap.len() < size {
            keyed.bytes = held_row(&keyed.row)?;
            memory.note(keyed.bytes);
            heap.push(keyed);
        } else if heap.peek().is_some_and(|top| keyed < *top) {
            if let Some(out) = heap.pop() {
                memory.note_delta(-(out.bytes as isize));
            }
            keyed.bytes = held_row(&keyed.row)?;
            memory.note(keyed.bytes);
            heap.push(keyed);
        } else {
            continue;
        }
        if memory.over_limit() {
            let Some(dir) = spill.filter(|_| memory.may_spill()) else {
                return Err(memory.exceeded());
            };
            if heap.len() == size {
                let top = heap.peek().map(|k| k.key);
                ceiling = match (ceiling, top) {
                    (Some(c), Some(t)) => Some(c.min(t)),
                    (c, t) => c.or(t),
                };
            }
            let sorted: Vec<Document> = std::mem::take(&mut heap)
                .into_sorted_vec()
                .into_iter()
                .map(entry)
                .collect();
            runs.push(dir.write_docs(sorted.iter())?);
            memory.reset();
        }
    }
    let sorted = heap.into_sorted_vec();
    if runs.is_empty() {
        let rows = sorted.into_iter().map(|k| (k.bytes, k.row)).collect();
        return Ok(Box::new(HeldIter::new(rows, held.clone()).map(Ok)));
    }
    let rest = sorted.into_iter().map(entry).collect();
    let merged = DocMerge::new(by_key(), runs, rest);
    Ok(Box::new(
        merged
            .take(size)
            .map(|e| e.and_then(|mut e| entry_row(&mut e))),
    ))
}

/// splitmix64: small, fast, and plenty for sampling (not for secrets). Seeded from the
/// process's hash randomness, so no clock is read.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Error, ErrorCode};
    use bson::Bson;

    fn input(n: i32) -> Rows {
        Box::new((0..n).map(|i| {
            let mut row = Row::computed(doc! {"_id": i, "pad": "x".repeat((i % 7) as usize * 10)});
            row.expires_at = (i % 3 == 0).then_some(i64::from(i) * 1000);
            Ok(row)
        }))
    }

    fn run(
        n: i32,
        size: u64,
        limit: usize,
        disk: bool,
        dir: Option<&SpillDir>,
    ) -> Result<Vec<Row>> {
        let memory = StageMemory::with_limit(Blocking::Sort, disk, limit);
        sample_with(input(n), size, memory, dir, &Held::default(), 42)?.collect()
    }

    fn ids(rows: &[Row]) -> Vec<(Bson, Option<i64>)> {
        rows.iter()
            .map(|r| (r.doc.get("_id").cloned().unwrap(), r.expires_at))
            .collect()
    }

    #[test]
    fn a_spilled_sample_is_the_sample_held_in_memory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = SpillDir::open(tmp.path()).unwrap();
        for size in [0, 1, 10, 500, 2999, 3000, 5000] {
            let held = run(3000, size, usize::MAX, false, None).unwrap();
            let spilled = run(3000, size, 2_000, true, Some(&dir)).unwrap();
            assert_eq!(held.len(), usize::try_from(size).unwrap().min(3000));
            assert_eq!(ids(&spilled), ids(&held), "size {size}");
            let mut distinct: Vec<i32> =
                held.iter().map(|r| r.doc.get_i32("_id").unwrap()).collect();
            distinct.sort_unstable();
            distinct.dedup();
            assert_eq!(distinct.len(), held.len());
        }
        assert_eq!(
            std::fs::read_dir(tmp.path().join("_tmp")).unwrap().count(),
            0
        );
    }

    #[test]
    fn past_its_budget_a_sample_needs_allow_disk_use() {
        let code = |r: Result<Vec<Row>>| r.err().map(|e: Error| e.code);
        assert_eq!(
            code(run(3000, 3000, 20_000, false, None)),
            Some(ErrorCode::QueryExceededMemoryLimitNoDiskUseAllowed)
        );
        // Only the rows kept count: a small sample of a large input fits.
        assert!(run(3000, 5, 20_000, false, None).is_ok());
    }
}
