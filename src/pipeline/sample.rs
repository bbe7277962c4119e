//! `$sample`'s selection: a uniform random sample by reservoir sampling.

use super::memory::{Blocking, StageLimits};
use super::{Row, Rows};
use crate::error::Result;
use crate::query::size::document_size;
use std::hash::{BuildHasher, Hasher};

/// A uniform random sample of `size` rows (reservoir sampling), in random order.
/// A uniform sample of `size` rows (with their sizes), held within one stage's memory limit
/// (mongod samples with a sort on random keys, and fails as a sort does).
pub(super) fn sample(rows: Rows, size: u64, limits: &StageLimits) -> Result<Vec<(usize, Row)>> {
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    let mut rng = SplitMix(
        std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish(),
    );
    let mut reservoir: Vec<(usize, Row)> = Vec::new();
    let mut memory = limits.budget(Blocking::Sort);
    for (seen, row) in rows.enumerate() {
        let row = row?;
        let bytes = row.size.unwrap_or_else(|| document_size(&row.doc));
        if reservoir.len() < size {
            memory.charge(bytes)?;
            reservoir.push((bytes, row));
        } else if let Some(slot) = reservoir.get_mut(rng.below(seen as u64 + 1) as usize) {
            memory.adjust(bytes as isize - slot.0 as isize)?;
            *slot = (bytes, row);
        }
    }
    for i in (1..reservoir.len()).rev() {
        reservoir.swap(i, rng.below(i as u64 + 1) as usize);
    }
    Ok(reservoir)
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

    /// Uniform in `0..n` (n > 0); the modulo bias is negligible for sample sizes.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}
