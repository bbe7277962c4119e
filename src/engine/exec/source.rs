//! Where the executor reads keys from: a committed snapshot (reads, cursors) or a writer
//! transaction (the documents an update or delete selects, seeing the group's earlier writes).
//!
//! Owns nothing but the two adapters; both give the executor the same point reads and ordered
//! range scans, so one plan runs unchanged in either place.

use crate::engine::writer::txn::Txn;
use crate::error::Result;
use crate::storage::handle::Snap;
use crate::storage::{KeyValue, Keyspace, Snapshot};
use std::ops::Bound;

/// Entries of a range scan, in the order asked for.
pub type Entries<'r> = Box<dyn Iterator<Item = Result<KeyValue>> + Send + 'r>;

/// Point reads and range scans over one consistent state. Cheap to clone: a plan's stages each
/// keep their own handle.
pub trait Source<'r>: Clone + Send + 'r {
    fn get(&self, keyspace: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>>;

    fn range(
        &self,
        keyspace: Keyspace,
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
        reverse: bool,
    ) -> Entries<'r>;
}

impl Source<'static> for Snap {
    fn get(&self, keyspace: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(Snapshot::get(self, keyspace, key)?)
    }

    fn range(
        &self,
        keyspace: Keyspace,
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
        reverse: bool,
    ) -> Entries<'static> {
        let entries = Snapshot::range(
            self,
            keyspace,
            start.as_ref().map(Vec::as_slice),
            end.as_ref().map(Vec::as_slice),
            reverse,
        );
        Box::new(entries.map(|e| e.map_err(Into::into)))
    }
}

impl<'r> Source<'r> for &'r Txn<'_> {
    fn get(&self, keyspace: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Txn::get(self, keyspace, key)
    }

    fn range(
        &self,
        keyspace: Keyspace,
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
        reverse: bool,
    ) -> Entries<'r> {
        Box::new(Txn::range(self, keyspace, start, end, reverse))
    }
}
