//! `$sort` after the pipeline's leading stages (a leading `$sort` goes to the executor). It
//! holds at most 100 MB of rows and their sort keys, counted decoded (`memory::held_row`); past that, with `allowDiskUse`, it writes sorted runs through
//! the engine's external sort (`engine::exec::spill`, unlinked files under `<dbpath>/_tmp`)
//! and merges them, as the executor's own sort does; without it, 292.
//!
//! A spilled row keeps its expiry (TTL-18) in the run's key: eight bytes of `expires_at`, or
//! none for a computed row.

use super::memory::{held_row, Blocking};
use super::{Env, Row, Rows};
use crate::engine::cursor::HeldIter;
use crate::engine::exec::spill::{Merge, Run};
use crate::engine::{Record, StoredDoc};
use crate::error::Result;
use crate::query::size::held_keys;
use crate::query::sort::SortSpec;
use bson::Bson;

pub fn sort(rows: Rows, spec: SortSpec, env: &Env) -> Result<Rows> {
    let mut keyed: Vec<(Vec<Bson>, (usize, Row))> = Vec::new();
    let mut memory = env.limits.budget(Blocking::Sort);
    let mut runs: Vec<Run> = Vec::new();
    for row in rows {
        let row = row?;
        let size = held_row(&row)?;
        let keys = spec.keys_of(&row.doc);
        memory.note(size.saturating_add(held_keys(&keys)?));
        keyed.push((keys, (size, row)));
        if memory.over_limit() {
            let Some(dir) = env.view.spill().filter(|_| memory.may_spill()) else {
                return Err(memory.exceeded());
            };
            keyed.sort_by(|a, b| spec.compare_keys(&a.0, &b.0));
            let docs = std::mem::take(&mut keyed)
                .into_iter()
                .map(|(_, (_, row))| stored(row))
                .collect::<Result<Vec<_>>>()?;
            runs.push(dir.write_run(docs.into_iter())?);
            memory.reset();
        }
    }
    keyed.sort_by(|a, b| spec.compare_keys(&a.0, &b.0));
    if runs.is_empty() {
        let sorted = keyed.into_iter().map(|(_, row)| row).collect();
        return Ok(Box::new(
            HeldIter::new(sorted, env.limits.held.clone()).map(Ok),
        ));
    }
    let rest = keyed
        .into_iter()
        .map(|(keys, (_, row))| Ok((keys, stored(row)?)))
        .collect::<Result<Vec<_>>>()?;
    let merged = Merge::new(spec, runs, rest);
    Ok(Box::new(merged.map(|doc| doc.map(row_of))))
}

/// A row as the external sort stores documents.
fn stored(row: Row) -> Result<StoredDoc> {
    let key = row
        .expires_at
        .map_or_else(Vec::new, |at| at.to_be_bytes().to_vec());
    Ok(StoredDoc {
        record: Record::new(0, &row.doc)?,
        key,
        doc: row.doc,
    })
}

fn row_of(doc: StoredDoc) -> Row {
    let expires_at = <[u8; 8]>::try_from(doc.key.as_slice())
        .ok()
        .map(i64::from_be_bytes);
    Row {
        doc: doc.doc,
        size: None,
        expires_at,
    }
}
