//! Which stored documents a read sees: the one place reads decide Cosmos TTL expiry. A record
//! is live while [`Record::is_visible`] holds at the read's time (TTL-18, TTL-19); the leaves of
//! the executor and every other read of stored documents take their records through here, so
//! what lies above them (sorts, cursors, counts, change streams) only ever holds live ones.
//!
//! Owns: the read time a scan judges expiry by ([`NowCell`]) and the filtering of expired
//! records out of scans and point reads. Does not own: the expiry rule (`ttl`, through
//! [`Record::is_visible`]), or removing expired documents (the reaper and the writes'
//! `delete_if_expired`, which apply the same rule).

use crate::engine::documents::record::Record;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// The time a scan judges expiry by; a cursor moves it forward before each batch.
pub type NowCell = Arc<AtomicI64>;

/// Whether `record`, of a collection whose TTL is `collection_ttl`, is live at `now`.
pub fn is_live(record: &Record, collection_ttl: Option<i32>, now: i64) -> bool {
    record.is_visible(collection_ttl, now)
}

/// [`is_live`] at the time `now` holds when asked.
pub fn is_live_at(record: &Record, collection_ttl: Option<i32>, now: &NowCell) -> bool {
    is_live(record, collection_ttl, now.load(Ordering::Relaxed))
}
