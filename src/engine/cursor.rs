//! Open cursors: their remaining documents, when they were last used, and batching.
//!
//! A cursor keeps the lazy iterator its command built (over a snapshot, so it returns each
//! matching document at most once) and the clock cell that iterator judges expiry by; before each
//! batch the cell is moved to the current server time (TTL-18). Idle cursors expire after
//! ten minutes; an exhausted cursor is released at once.
//!
//! A cursor holds nothing materialised unless a blocking stage (a sort, `$group`) under it does;
//! such a stage reports what it holds in the cursor's [`Held`] gauge and releases it as the
//! documents leave. The registry caps what open cursors hold together, and how many
//! `noCursorTimeout` cursors are open ([`CursorLimits`]); a cursor past either is refused.
//!
//! A cursor also keeps the [`Interrupt`] its iterators check. The `maxTimeMS` of the command that
//! opened it is a budget for all its batches, as in mongod: the time left is kept while the
//! cursor is idle and becomes the deadline of the next `getMore`.

use crate::clock::{Clock, Deadline};
use crate::engine::exec::live::{is_live_until, NowCell};
use crate::engine::interrupt::Interrupt;
use crate::error::{Error, ErrorCode, Result};
use bson::{Document, RawDocumentBuf};
use std::collections::HashMap;
use std::iter::Peekable;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Documents a batch takes between two checks of the cursor's interrupt.
const CHECK_EVERY: usize = 256;

/// Idle time after which a cursor is closed (mongod's `cursorTimeoutMillis`).
pub const CURSOR_TIMEOUT_MILLIS: i64 = 10 * 60 * 1000;
/// Documents in a first batch when the client sets no `batchSize`.
pub const DEFAULT_FIRST_BATCH: usize = 101;
/// A batch stops growing once it holds this many bytes (a reply stays under 16 MiB + 16 KiB).
pub const MAX_BATCH_BYTES: usize = 16 * 1024 * 1024;

/// A document ready to return, already encoded: a stored document goes into the reply as the
/// bytes it was stored as.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub doc: RawDocumentBuf,
    /// Its encoded size, for bounding a batch's bytes.
    pub size: usize,
    /// When the stored document it comes from expires, if ever: the cursor drops the item if
    /// that time has come when a batch takes it, even if it was read ahead earlier (TTL-18).
    pub expires_at: Option<i64>,
}

impl Item {
    /// The encoded document, expiring at `expires_at` if ever.
    pub fn raw(doc: RawDocumentBuf, expires_at: Option<i64>) -> Item {
        Item {
            size: doc.as_bytes().len(),
            doc,
            expires_at,
        }
    }

    /// `doc`, encoded, expiring at `expires_at` if ever. A computed document past 16 MiB +
    /// 16 KiB cannot be returned: 10334, as mongod refuses to serialize it.
    pub fn new(doc: &Document, expires_at: Option<i64>) -> Result<Item> {
        let raw = RawDocumentBuf::from_document(doc)
            .map_err(|e| crate::error::Error::internal(format!("cannot encode a reply: {e}")))?;
        crate::query::guard::check_value_bytes(raw.as_bytes().len())?;
        Ok(Item::raw(raw, expires_at))
    }

    /// An item that does not come from an expiring document (listings, computed results).
    pub fn lasting(doc: &Document) -> Result<Item> {
        Item::new(doc, None)
    }
}

pub type Docs = Box<dyn Iterator<Item = Result<Item>> + Send>;

/// Bytes of materialised results (a blocking sort's or `$group`'s output) that a cursor's
/// iterators hold. The stages that materialise add to it and release as they hand documents
/// on; the registry charges open cursors with it against the server-wide cap.
#[derive(Debug, Clone, Default)]
pub struct Held(Arc<AtomicUsize>);

impl Held {
    pub fn add(&self, bytes: usize) {
        self.0.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn release(&self, bytes: usize) {
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_sub(bytes))
            });
    }

    pub fn bytes(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// A materialised result handed on one item at a time: each item's bytes are held until it is
/// taken, and whatever is left is released when the iterator is dropped.
pub struct HeldIter<T> {
    items: std::vec::IntoIter<(usize, T)>,
    held: Held,
    remaining: usize,
}

impl<T> HeldIter<T> {
    /// `items` with their sizes in bytes, charged to `held` from now on.
    pub fn new(items: Vec<(usize, T)>, held: Held) -> HeldIter<T> {
        let remaining = items.iter().map(|(n, _)| *n).sum();
        held.add(remaining);
        HeldIter {
            items: items.into_iter(),
            held,
            remaining,
        }
    }
}

impl<T> Iterator for HeldIter<T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        let (bytes, item) = self.items.next()?;
        self.remaining = self.remaining.saturating_sub(bytes);
        self.held.release(bytes);
        Some(item)
    }
}

impl<T> Drop for HeldIter<T> {
    fn drop(&mut self) {
        self.held.release(self.remaining);
    }
}

/// A source that may produce more documents later (a change stream): running dry does not end
/// it, and a `getMore` may wait for more (`awaitData`).
pub trait Tail: Send {
    /// Up to `max_docs` documents ready now (possibly none), about `max_bytes` at most, and
    /// whether the source has ended for good (a change stream after its invalidate event).
    fn poll(&mut self, max_docs: usize, max_bytes: usize) -> Result<(Vec<RawDocumentBuf>, bool)>;

    /// The token to resume after the last batch (`postBatchResumeToken`).
    fn resume_token(&self) -> Document;
}

pub struct Cursor {
    /// `"db.collection"` as getMore must name it.
    pub ns: String,
    docs: Peekable<Docs>,
    /// A tailing source, read instead of `docs`.
    tail: Option<Box<dyn Tail>>,
    now: NowCell,
    last_used_ms: i64,
    pub no_timeout: bool,
    /// Documents the cursor may still return (`limit`), if limited.
    pub remaining: Option<u64>,
    interrupt: Arc<Interrupt>,
    /// The `maxTimeMS` budget left while the cursor is idle; `None` when unlimited.
    time_left: Option<Duration>,
    /// What its blocking stages hold materialised.
    held: Held,
}

impl Cursor {
    pub fn new(ns: String, docs: Docs, now: NowCell, remaining: Option<u64>) -> Cursor {
        Cursor {
            ns,
            docs: docs.peekable(),
            tail: None,
            now,
            last_used_ms: 0,
            no_timeout: false,
            remaining,
            interrupt: Interrupt::none(),
            time_left: None,
            held: Held::default(),
        }
    }

    /// A cursor over a tailing source: it stays open when the source runs dry.
    pub fn tailing(ns: String, tail: Box<dyn Tail>, now: NowCell) -> Cursor {
        let mut cursor = Cursor::new(ns, Box::new(std::iter::empty()), now, None);
        cursor.tail = Some(tail);
        cursor
    }

    /// Whether the cursor tails a source that may produce more later.
    pub fn is_tailable(&self) -> bool {
        self.tail.is_some()
    }

    /// The tailing source's resume token after the last batch.
    pub fn resume_token(&self) -> Option<Document> {
        self.tail.as_ref().map(|t| t.resume_token())
    }

    /// The gauge of what the cursor's blocking stages hold (charged while the cursor is open).
    pub fn with_held(mut self, held: Held) -> Cursor {
        self.held = held;
        self
    }

    pub fn held_bytes(&self) -> usize {
        self.held.bytes()
    }

    /// The interrupt the cursor's iterators check (the one of the command that built them).
    pub fn with_interrupt(mut self, interrupt: Arc<Interrupt>) -> Cursor {
        self.interrupt = interrupt;
        self
    }

    pub fn interrupt(&self) -> &Arc<Interrupt> {
        &self.interrupt
    }

    /// Prepares a `getMore` run by operation `op`: the time budget left becomes the deadline,
    /// and killing `op` kills the cursor's work.
    pub fn resume(&mut self, op: &Interrupt) {
        self.interrupt
            .set_deadline(self.time_left.map(Deadline::after));
        op.link(&self.interrupt);
    }

    /// Keeps the time budget left while the cursor waits for its next `getMore`.
    fn suspend(&mut self) {
        if let Some(left) = self.interrupt.remaining() {
            self.time_left = Some(left);
        }
        self.interrupt.set_deadline(None);
    }

    /// The next batch: at most `max_docs` documents (if given) and about 16 MiB, and at least
    /// one document when any remain. Returns whether the cursor is exhausted afterwards.
    ///
    /// A batch that reaches `max_docs` does not look for a next document, as mongod does not:
    /// behind a selective filter that look could scan the rest of the collection before the
    /// reply. Such a cursor stays open, and a later batch may find nothing and close it.
    pub fn next_batch(
        &mut self,
        now_secs: i64,
        max_docs: Option<usize>,
    ) -> Result<(Vec<RawDocumentBuf>, bool)> {
        self.now.store(now_secs, Ordering::Relaxed);
        if let Some(tail) = self.tail.as_mut() {
            self.interrupt.check()?;
            return tail.poll(max_docs.unwrap_or(usize::MAX), MAX_BATCH_BYTES);
        }
        let mut batch = Vec::new();
        let mut bytes = 0usize;
        let cap = max_docs.unwrap_or(usize::MAX);
        let mut ended = false;
        let remaining = self
            .remaining
            .map_or(usize::MAX, |r| usize::try_from(r).unwrap_or(usize::MAX));
        while batch.len() < cap && batch.len() < remaining {
            if batch.len() % CHECK_EVERY == CHECK_EVERY - 1 {
                self.interrupt.check()?;
            }
            let Some(peeked) = self.docs.peek() else {
                ended = true;
                break;
            };
            let (size, expired) = match peeked {
                Ok(item) => (item.size, !is_live_until(item.expires_at, now_secs)),
                Err(_) => (0, false),
            };
            if expired {
                self.docs.next();
                continue;
            }
            if !batch.is_empty() && bytes + size > MAX_BATCH_BYTES {
                break;
            }
            let Some(next) = self.docs.next() else { break };
            let item = next?;
            bytes += item.size;
            batch.push(item.doc);
        }
        if let Some(remaining) = self.remaining.as_mut() {
            *remaining = remaining.saturating_sub(batch.len() as u64);
        }
        let exhausted = ended || self.remaining == Some(0);
        Ok((batch, exhausted))
    }
}

/// Server-wide caps on open cursors (`--cursorMemoryLimitMB`, `--maxNoTimeoutCursors`).
#[derive(Debug)]
pub struct CursorLimits {
    /// Bytes of materialised results all open cursors may hold together.
    pub held_bytes: AtomicUsize,
    /// Open cursors with `noCursorTimeout`, which only their client can close.
    pub no_timeout: AtomicUsize,
}

/// Default cap on what open cursors hold materialised: five blocking stages at their limit.
pub const DEFAULT_CURSOR_MEMORY_BYTES: usize = 512 * 1024 * 1024;
/// Default cap on open `noCursorTimeout` cursors.
pub const DEFAULT_MAX_NO_TIMEOUT_CURSORS: usize = 1000;

impl Default for CursorLimits {
    fn default() -> Self {
        CursorLimits {
            held_bytes: AtomicUsize::new(DEFAULT_CURSOR_MEMORY_BYTES),
            no_timeout: AtomicUsize::new(DEFAULT_MAX_NO_TIMEOUT_CURSORS),
        }
    }
}

pub struct CursorRegistry {
    clock: Arc<dyn Clock>,
    cursors: Mutex<HashMap<i64, Cursor>>,
    /// Cursors taken out by a running `getMore`, and whether `killCursors` killed them
    /// meanwhile (they are closed instead of put back).
    checked_out: Mutex<HashMap<i64, bool>>,
    next_id: AtomicI64,
    pub limits: CursorLimits,
}

impl CursorRegistry {
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        // Ids start from the clock so they are not reused across restarts.
        let seed = (clock.now_millis() & 0x7fff_ffff_ffff) << 16;
        CursorRegistry {
            clock,
            cursors: Mutex::new(HashMap::new()),
            checked_out: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(seed.max(1)),
            limits: CursorLimits::default(),
        }
    }

    /// Keeps `cursor` open and returns its id (a positive int64), unless that would pass a
    /// server-wide cap: then the cursor is closed and the caller gets the error.
    pub fn register(&self, mut cursor: Cursor) -> Result<i64> {
        cursor.last_used_ms = self.clock.now_millis();
        cursor.suspend();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut map = self.open_cursors();
        self.sweep(&mut map);
        self.check_limits(&map, &cursor)?;
        map.insert(id, cursor);
        Ok(id)
    }

    fn check_limits(&self, open: &HashMap<i64, Cursor>, cursor: &Cursor) -> Result<()> {
        let max_no_timeout = self.limits.no_timeout.load(Ordering::Relaxed);
        if cursor.no_timeout {
            let n = open.values().filter(|c| c.no_timeout).count();
            if n >= max_no_timeout {
                return Err(Error::new(
                    ErrorCode::OperationFailed,
                    format!(
                        "cannot open another noCursorTimeout cursor: {n} are open, the server's \
                         limit (maxNoTimeoutCursors). Exhaust or kill some with killCursors."
                    ),
                ));
            }
        }
        let own = cursor.held_bytes();
        if own > 0 {
            let max_held = self.limits.held_bytes.load(Ordering::Relaxed);
            let total = open.values().map(Cursor::held_bytes).sum::<usize>() + own;
            if total > max_held {
                return Err(Error::new(
                    ErrorCode::ExceededMemoryLimit,
                    format!(
                        "cannot keep this cursor open: with its {own} bytes of sorted or grouped \
                         results, open cursors would hold {total} bytes, more than the server's \
                         limit of {max_held} bytes (cursorMemoryLimitMB). Exhaust or kill other \
                         cursors, or ask for fewer documents."
                    ),
                ));
            }
        }
        Ok(())
    }

    /// What open cursors hold materialised, in bytes (`serverStatus`, tests).
    pub fn held_bytes(&self) -> usize {
        self.open_cursors().values().map(Cursor::held_bytes).sum()
    }

    /// Takes cursor `id` out for a getMore; `None` if unknown or timed out.
    pub fn take(&self, id: i64) -> Option<Cursor> {
        let mut map = self.open_cursors();
        self.sweep(&mut map);
        let cursor = map.remove(&id)?;
        self.out_cursors().insert(id, false);
        Some(cursor)
    }

    /// Returns a cursor after a getMore that did not exhaust it (unless it was killed while
    /// the getMore ran: then it is closed).
    pub fn put_back(&self, id: i64, mut cursor: Cursor) {
        let killed = self.release(id);
        if killed {
            return;
        }
        cursor.last_used_ms = self.clock.now_millis();
        cursor.suspend();
        self.open_cursors().insert(id, cursor);
    }

    /// Forgets that cursor `id` is out (its getMore ended it); whether it was killed meanwhile.
    pub fn release(&self, id: i64) -> bool {
        self.out_cursors().remove(&id).unwrap_or(false)
    }

    /// Closes cursor `id`; whether it was open. A cursor a getMore has out is closed when that
    /// getMore ends.
    pub fn kill(&self, id: i64) -> bool {
        let removed = self.open_cursors().remove(&id).is_some();
        if removed {
            return true;
        }
        self.out_cursors()
            .get_mut(&id)
            .map(|killed| *killed = true)
            .is_some()
    }

    /// Closes every open cursor (the engine is shutting down, or reopening its storage).
    pub fn close_all(&self) {
        let closed: Vec<Cursor> = self.open_cursors().drain().map(|(_, c)| c).collect();
        drop(closed);
    }

    /// Whether open cursor `id` tails a source (a change stream).
    pub fn is_tailable(&self, id: i64) -> bool {
        self.open_cursors()
            .get(&id)
            .is_some_and(Cursor::is_tailable)
    }

    /// The namespace of an open cursor.
    pub fn namespace_of(&self, id: i64) -> Option<String> {
        self.open_cursors().get(&id).map(|c| c.ns.clone())
    }

    pub fn open_count(&self) -> usize {
        self.open_cursors().len()
    }

    /// Open `noCursorTimeout` cursors (`serverStatus.metrics.cursor.open.noTimeout`).
    pub fn no_timeout_count(&self) -> usize {
        self.open_cursors()
            .values()
            .filter(|c| c.no_timeout)
            .count()
    }

    /// The open cursors. Every holder inserts or removes whole entries, so a panic while one
    /// held the lock can at worst have lost a cursor (its getMore then answers 43, as for any
    /// closed cursor): a poisoned registry is taken as it is, counted and logged
    /// ([`crate::sync`]), rather than making every cursor unreachable.
    fn open_cursors(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Cursor>> {
        crate::sync::lock_recovering(&self.cursors, "cursor registry")
    }

    /// The cursors a getMore has out, and whether each was killed meanwhile; recovered when
    /// poisoned, as [`CursorRegistry::open_cursors`].
    fn out_cursors(&self) -> std::sync::MutexGuard<'_, HashMap<i64, bool>> {
        crate::sync::lock_recovering(&self.checked_out, "checked-out cursors")
    }

    fn sweep(&self, map: &mut HashMap<i64, Cursor>) {
        let now = self.clock.now_millis();
        map.retain(|_, c| c.no_timeout || now - c.last_used_ms < CURSOR_TIMEOUT_MILLIS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use bson::doc;

    fn docs(n: i32, size: usize) -> Docs {
        Box::new((0..n).map(move |i| {
            let mut item = Item::lasting(&doc! {"_id": i})?;
            item.size = size;
            Ok(item)
        }))
    }

    fn item(doc: Document, expires_at: Option<i64>) -> Item {
        let mut item = Item::new(&doc, expires_at).unwrap();
        item.size = 1;
        item
    }

    fn decoded(batch: Vec<RawDocumentBuf>) -> Vec<Document> {
        batch.iter().map(|d| d.to_document().unwrap()).collect()
    }

    #[test]
    fn an_item_read_ahead_is_dropped_if_it_expired_before_its_batch() {
        let items = vec![
            item(doc! {"_id": 1}, None),
            item(doc! {"_id": 2}, Some(10)),
            item(doc! {"_id": 3}, None),
        ];
        let mut c = Cursor::new(
            "d.c".into(),
            Box::new(items.into_iter().map(Ok)),
            Arc::new(AtomicI64::new(0)),
            None,
        );
        let (first, done) = c.next_batch(5, Some(1)).unwrap();
        assert_eq!((decoded(first), done), (vec![doc! {"_id": 1}], false));
        let (rest, done) = c.next_batch(10, None).unwrap();
        assert_eq!((decoded(rest), done), (vec![doc! {"_id": 3}], true));
    }

    #[test]
    fn a_full_batch_does_not_read_ahead_and_a_later_empty_batch_closes_the_cursor() {
        let mut c = Cursor::new("d.c".into(), docs(2, 1), Arc::new(AtomicI64::new(0)), None);
        let (first, done) = c.next_batch(0, Some(2)).unwrap();
        assert_eq!((first.len(), done), (2, false));
        let (rest, done) = c.next_batch(0, Some(2)).unwrap();
        assert_eq!((rest.len(), done), (0, true));
    }

    #[test]
    fn batches_respect_counts_bytes_and_limits() {
        let mut c = Cursor::new(
            "d.c".into(),
            docs(250, 10),
            Arc::new(AtomicI64::new(0)),
            None,
        );
        let (first, done) = c.next_batch(0, Some(DEFAULT_FIRST_BATCH)).unwrap();
        assert_eq!((first.len(), done), (101, false));
        let (rest, done) = c.next_batch(0, None).unwrap();
        assert_eq!((rest.len(), done), (149, true));

        let mut big = Cursor::new(
            "d.c".into(),
            docs(10, 6 * 1024 * 1024),
            Arc::new(AtomicI64::new(0)),
            None,
        );
        assert_eq!(big.next_batch(0, None).unwrap().0.len(), 2, "16 MiB bound");

        let mut limited = Cursor::new(
            "d.c".into(),
            docs(10, 1),
            Arc::new(AtomicI64::new(0)),
            Some(3),
        );
        let (b, done) = limited.next_batch(0, Some(2)).unwrap();
        assert_eq!((b.len(), done), (2, false));
        let (b, done) = limited.next_batch(0, None).unwrap();
        assert_eq!((b.len(), done), (1, true));
    }

    #[test]
    fn a_batch_stops_when_its_interrupt_fires_and_the_budget_survives_idle_time() {
        let mut c = Cursor::new(
            "d.c".into(),
            docs(1000, 1),
            Arc::new(AtomicI64::new(0)),
            None,
        )
        .with_interrupt(Interrupt::with_deadline(Some(Deadline::after_millis(0))));
        let err = c.next_batch(0, None).unwrap_err();
        assert_eq!(err.code, crate::error::ErrorCode::MaxTimeMSExpired);

        let mut c = Cursor::new(
            "d.c".into(),
            docs(1000, 1),
            Arc::new(AtomicI64::new(0)),
            None,
        )
        .with_interrupt(Interrupt::with_deadline(Some(Deadline::after_millis(
            60_000,
        ))));
        c.suspend();
        assert!(
            c.interrupt().deadline().is_none(),
            "no clock runs while idle"
        );
        let op = Interrupt::none();
        c.resume(&op);
        assert!(c.interrupt().remaining().unwrap() > Duration::from_secs(50));
        op.kill(crate::engine::KillReason::Killed);
        let err = c.next_batch(0, None).unwrap_err();
        assert_eq!(err.code, crate::error::ErrorCode::Interrupted);
    }

    #[test]
    fn idle_cursors_time_out_after_ten_minutes() {
        let clock = Arc::new(ManualClock::starting_at_secs(1_000));
        let registry = CursorRegistry::new(clock.clone());
        let id = registry
            .register(Cursor::new(
                "d.c".into(),
                docs(5, 1),
                Arc::new(AtomicI64::new(0)),
                None,
            ))
            .unwrap();
        assert!(id > 0);
        clock.advance(std::time::Duration::from_secs(599));
        let c = registry.take(id).unwrap();
        registry.put_back(id, c);
        clock.advance(std::time::Duration::from_secs(600));
        assert!(registry.take(id).is_none());
    }
}
