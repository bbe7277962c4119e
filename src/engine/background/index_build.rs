//! Index builds over existing documents, in the background, and the batched removal of an
//! index's entries.
//!
//! A build starts once its indexes are in the catalog marked `building` (added by the caller's
//! own writer job): from then on every write maintains and unique-checks their entries like a
//! ready index's. A thread of its own then walks the collection in `_id` order, [`BATCH`]
//! documents per writer job; each job reads its documents as of that point in the writer, so a
//! document written, rewritten or deleted meanwhile is seen as it is now, and writes only index
//! entries (never the document, never its `_ts`). While clients write, the build leaves the
//! writer to them after each job as long as the job took (`pacing`). A last job clears
//! `building`. A failure (a duplicate key, parallel arrays, a key too long) or a concurrent
//! drop of the collection or of one of the indexes ends the build: its indexes leave the
//! catalog, and their entries are left to the sweeper (`sweep`).
//!
//! Its progress (documents read, the collection's count) is shown in `currentOp` and logged
//! while it runs (`progress`).
//!
//! Index ids are never reused, so entries of an index no longer in the catalog can only be
//! leftovers; at start, [`discard_unfinished`] removes indexes still marked `building` (a
//! build cut short by a stop) and leaves their entries, and any other leftovers, to the
//! sweeper before anything else runs.
//!
//! Does not own: parsing index specifications or conflicts between them (`command::catalog::index`).

use crate::clock::Clock;
use crate::engine::background::progress::{BuildProgress, LogPacer, ProgressReport};
use crate::engine::catalog::{Catalog, CollectionMeta};
use crate::engine::catalog_write;
use crate::engine::ddl;
use crate::engine::documents::collection;
use crate::engine::documents::index_keys;
use crate::engine::documents::record::Record;
use crate::engine::documents::record_key;
use crate::engine::writer::pacing::{self, Pace};
use crate::engine::writer::txn::Txn;
use crate::engine::writer::{Writer, WriterStats};
use crate::error::{Error, ErrorCode, Result};
use crate::storage::handle::{Db, Snap};
use crate::storage::keys;
use crate::storage::{Backend, Durability, Keyspace, Snapshot};
use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{oneshot, watch};

/// Documents read per build job. One job takes a few milliseconds, so a client's write never
/// waits long behind one.
pub const BATCH: usize = 100;

/// The builds in progress: a duplicate `createIndexes` waits for them, and the engine stops
/// them when it shuts down.
#[derive(Default)]
pub struct IndexBuilds {
    active: Mutex<Vec<ActiveBuild>>,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
    stop: AtomicBool,
    next_id: AtomicU64,
}

struct ActiveBuild {
    id: u64,
    collection_id: u64,
    done: watch::Receiver<bool>,
    progress: Arc<BuildProgress>,
}

impl IndexBuilds {
    /// Stops every build after its current job and waits for their threads. A stopped build
    /// leaves its indexes marked `building`; the next start discards them.
    pub(in crate::engine) fn shutdown(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let threads = std::mem::take(&mut *self.threads());
        for thread in threads {
            let _ = thread.join();
        }
    }

    fn waiters(&self, collection_id: u64) -> Vec<watch::Receiver<bool>> {
        self.active()
            .iter()
            .filter(|b| b.collection_id == collection_id)
            .map(|b| b.done.clone())
            .collect()
    }

    /// The builds in progress. Each change is one push or one `retain` of whole entries, so a
    /// panic cannot leave the list half updated; a poisoned lock is recovered (and counted),
    /// as an empty list would let a duplicate `createIndexes` answer before the build ends.
    fn active(&self) -> MutexGuard<'_, Vec<ActiveBuild>> {
        crate::sync::lock_recovering(&self.active, "index builds")
    }

    /// The progress of every build in progress, oldest first (`currentOp`).
    pub fn progress(&self) -> Vec<ProgressReport> {
        self.active().iter().map(|b| b.progress.report()).collect()
    }

    /// The build threads to join at shutdown; one push or `retain` at a time, as [`Self::active`].
    fn threads(&self) -> MutexGuard<'_, Vec<std::thread::JoinHandle<()>>> {
        crate::sync::lock_recovering(&self.threads, "index build threads")
    }
}

/// What a build runs with: the writer its jobs go through, the clock that judges expiry, and
/// how `currentOp` names it.
pub struct BuildContext {
    pub writer: Writer,
    pub writer_stats: Arc<WriterStats>,
    pub clock: Arc<dyn Clock>,
    /// `db.collection`.
    pub namespace: String,
    /// The `createIndexes` command the build carries out, as `currentOp` reports it.
    pub command: bson::Document,
}

impl IndexBuilds {
    /// Builds the indexes `index_ids` of collection `collection_id`, already in the catalog
    /// marked `building`, on a thread of their own. Returns once they are ready, or with the
    /// error that ended the build, after the indexes and their entries are gone. The build goes
    /// on if the caller stops waiting (a closed connection), as mongod's does.
    pub async fn build(
        self: &Arc<Self>,
        context: BuildContext,
        collection_id: u64,
        index_ids: Vec<u64>,
    ) -> Result<()> {
        let (result_tx, result_rx) = oneshot::channel();
        let (done_tx, done_rx) = watch::channel(false);
        let build_id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let BuildContext {
            writer,
            writer_stats,
            clock,
            namespace,
            command,
        } = context;
        let progress = Arc::new(BuildProgress::new(
            build_id,
            namespace,
            command,
            clock.now_datetime(),
        ));
        self.active().push(ActiveBuild {
            id: build_id,
            collection_id,
            done: done_rx,
            progress: Arc::clone(&progress),
        });
        let builds = Arc::clone(self);
        let retry_progress = Arc::clone(&progress);
        let (retry_writer, retry_stats, retry_clock) = (
            writer.clone(),
            Arc::clone(&writer_stats),
            Arc::clone(&clock),
        );
        let ids = index_ids.clone();
        let spawned = std::thread::Builder::new()
            .name("mayfly-index-build".into())
            .spawn(move || {
                let build = Build {
                    writer,
                    writer_stats,
                    clock,
                    builds: Arc::clone(&builds),
                    collection_id,
                    index_ids: ids,
                    progress,
                };
                let result = futures::executor::block_on(build.run());
                if let Err(e) = &result {
                    tracing::info!(error = %e, collection_id, "index build ended without an index");
                }
                let _ = result_tx.send(result);
                builds.active().retain(|b| b.id != build_id);
                let _ = done_tx.send(true);
            });
        match spawned {
            Ok(thread) => {
                let mut threads = self.threads();
                threads.retain(|t| !t.is_finished());
                threads.push(thread);
            }
            Err(e) => {
                let build = Build {
                    writer: retry_writer,
                    writer_stats: retry_stats,
                    clock: retry_clock,
                    builds: Arc::clone(self),
                    collection_id,
                    index_ids,
                    progress: retry_progress,
                };
                build.discard().await?;
                return Err(Error::internal(format!(
                    "cannot start an index build thread: {e}"
                )));
            }
        }
        result_rx.await.map_err(|_| {
            Error::new(
                ErrorCode::InterruptedAtShutdown,
                "index build interrupted at shutdown",
            )
        })?
    }

    /// Waits until no build of collection `collection_id` that had started when it was called
    /// is in progress. A build whose catalog entry is committed but which is not registered yet
    /// is not waited for: the caller re-checks the catalog and calls again.
    pub async fn wait_for(&self, collection_id: u64) {
        let waiters = self.waiters(collection_id);
        if waiters.is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        for mut done in waiters {
            let _ = done.wait_for(|d| *d).await;
        }
    }
}

/// Compares index `index_name` of `db.coll` with the documents of `view` at `now`: every
/// visible document must have exactly its entries, and every entry must belong to a stored
/// document that has it. For tests and diagnostics.
pub fn check_index(
    view: &Snap,
    catalog: &Catalog,
    now: i64,
    db: &str,
    coll: &str,
    index_name: &str,
) -> Result<IndexCheck> {
    let Some(meta) = catalog.get(db, coll) else {
        return Err(Error::new(
            ErrorCode::NamespaceNotFound,
            "no such collection",
        ));
    };
    let Some(index) = meta.index(index_name) else {
        return Err(Error::new(ErrorCode::IndexNotFound, "no such index"));
    };
    let mut expected = BTreeSet::new();
    let mut allowed = BTreeSet::new();
    let mut check = IndexCheck::default();
    for entry in view.prefix(
        Keyspace::Documents,
        &keys::collection_prefix(meta.id),
        false,
    ) {
        let (doc_key, bytes) = entry?;
        let record = Record::decode(&bytes)?;
        let doc = record.document()?;
        let visible = crate::engine::exec::live::is_live(&record, &meta.ttl_model(), now);
        check.documents += u64::from(visible);
        for tuple in index_keys::entries(index, &doc)? {
            let key = keys::index_key(meta.id, index.id, &tuple, record_key::record(&doc_key));
            if visible {
                expected.insert(key.clone());
            }
            allowed.insert(key);
        }
    }
    let prefix = keys::index_prefix(meta.id, index.id);
    let mut present = BTreeSet::new();
    for entry in view.prefix(Keyspace::Indexes, &prefix, false) {
        let (key, _) = entry?;
        check.entries += 1;
        if !allowed.contains(&key) {
            check.extra += 1;
        }
        present.insert(key);
    }
    check.missing = expected.difference(&present).count() as u64;
    Ok(check)
}

/// Entries of every secondary index of `db.coll` in `snapshot` (tests: nothing left of a dropped
/// index).
pub fn entry_count(snapshot: &Snap, catalog: &Catalog, db: &str, coll: &str) -> Result<u64> {
    let Some(meta) = catalog.get(db, coll) else {
        return Ok(0);
    };
    let mut count = 0;
    for entry in snapshot.prefix(Keyspace::Indexes, &keys::collection_prefix(meta.id), false) {
        entry?;
        count += 1;
    }
    Ok(count)
}

/// What [`check_index`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct IndexCheck {
    /// Visible documents.
    pub documents: u64,
    /// Entries of the index.
    pub entries: u64,
    /// Entries a visible document should have and the index lacks.
    pub missing: u64,
    /// Entries no stored document has.
    pub extra: u64,
}

impl IndexCheck {
    pub fn is_consistent(&self) -> bool {
        self.missing == 0 && self.extra == 0
    }
}

/// One build: its indexes and what it needs to run jobs.
struct Build {
    writer: Writer,
    /// The writer's job count, to see whether clients wrote while a job ran (`pacing`).
    writer_stats: Arc<WriterStats>,
    clock: Arc<dyn Clock>,
    builds: Arc<IndexBuilds>,
    collection_id: u64,
    index_ids: Vec<u64>,
    progress: Arc<BuildProgress>,
}

/// What one build job did.
enum Step {
    /// Every document below this key is indexed.
    More(Vec<u8>),
    /// The walk reached the end of the collection.
    Done,
    /// The collection, or one of the indexes, was dropped meanwhile.
    Gone,
}

/// What one build job read: its documents, and the collection's count as of it.
#[derive(Debug, Clone, Copy, Default)]
struct Scanned {
    documents: u64,
    total: u64,
}

impl Build {
    async fn run(&self) -> Result<()> {
        let mut from = keys::collection_prefix(self.collection_id).to_vec();
        let mut pacer = LogPacer::default();
        loop {
            if self.builds.stop.load(Ordering::Relaxed) {
                return Err(Error::new(
                    ErrorCode::InterruptedAtShutdown,
                    "index build interrupted at shutdown",
                ));
            }
            let (collection_id, ids) = (self.collection_id, self.index_ids.clone());
            let clock = Arc::clone(&self.clock);
            let start = from.clone();
            let pace = Pace::start(&self.writer_stats);
            let step = self
                .writer
                .run(false, move |txn| {
                    build_batch(txn, collection_id, &ids, start, clock.now_secs())
                })
                .await
                .and_then(|r| r);
            if let Ok((_, scanned)) = &step {
                self.progress.advance(scanned.documents, scanned.total);
            }
            match step.map(|(step, _)| step) {
                Ok(Step::More(next)) => from = next,
                Ok(Step::Done) => break,
                Ok(Step::Gone) => {
                    self.discard().await?;
                    return Err(aborted());
                }
                Err(e) => {
                    self.discard().await?;
                    return Err(e);
                }
            }
            if pacer.due(self.progress.elapsed()) {
                self.progress.log_meter();
            }
            if let Some(pause) = pace.pause(&self.writer_stats, &self.writer) {
                pacing::sleep(pause).await;
            }
        }
        let (collection_id, ids) = (self.collection_id, self.index_ids.clone());
        let finished = self
            .writer
            .run(true, move |txn| finish(txn, collection_id, &ids))
            .await??;
        if !finished {
            self.discard().await?;
            return Err(aborted());
        }
        self.progress.log_scan_done();
        Ok(())
    }

    /// Removes the build's indexes that are still in the catalog, and leaves their entries
    /// to the sweeper.
    async fn discard(&self) -> Result<()> {
        let (collection_id, ids) = (self.collection_id, self.index_ids.clone());
        self.writer
            .run(true, move |txn| -> Result<()> {
                for id in ids {
                    ddl::remove_index(txn, collection_id, id)?;
                    ddl::forget_index_entries(txn, collection_id, id);
                }
                Ok(())
            })
            .await??;
        Ok(())
    }
}

fn aborted() -> Error {
    Error::new(
        ErrorCode::IndexBuildAborted,
        "Index build aborted: the collection or the index was dropped during the build",
    )
}

/// The build's indexes, as of this point in the group, if the collection and every one of
/// them are still there and building.
fn building(txn: &Txn<'_>, collection_id: u64, index_ids: &[u64]) -> Option<Arc<CollectionMeta>> {
    let meta = txn.catalog.by_id(collection_id)?;
    index_ids
        .iter()
        .all(|id| meta.index_by_id(*id).is_some_and(|i| i.building))
        .then(|| Arc::clone(meta))
}

/// Inside the writer: indexes up to [`BATCH`] stored documents from `from`, read as of this
/// point in the group, in the build's indexes only (unique checks included). An expired
/// document gets no entries, as it would not if it were written now.
fn build_batch(
    txn: &mut Txn<'_>,
    collection_id: u64,
    index_ids: &[u64],
    from: Vec<u8>,
    now: i64,
) -> Result<(Step, Scanned)> {
    let Some(meta) = building(txn, collection_id, index_ids) else {
        return Ok((Step::Gone, Scanned::default()));
    };
    let indexes: Vec<_> = meta
        .indexes
        .iter()
        .filter(|i| index_ids.contains(&i.id))
        .cloned()
        .collect();
    let end = collection_end(collection_id);
    let docs = txn
        .scan_range(Keyspace::Documents, &from, &end)
        .take(BATCH)
        .collect::<Result<Vec<_>>>()?;
    let ttl = meta.ttl_model();
    let mut multikey = vec![false; indexes.len()];
    for (key, bytes) in &docs {
        let record = Record::decode(bytes)?;
        if !crate::engine::exec::live::is_live(&record, &ttl, now) {
            continue;
        }
        let doc = record.document()?;
        for (index, flag) in indexes.iter().zip(multikey.iter_mut()) {
            *flag |= collection::add_index_entries(txn, &meta, index, key, &doc, now)?;
        }
    }
    for (index, flag) in indexes.iter().zip(multikey) {
        if flag && !index.multikey {
            catalog_write::mark_multikey(txn, collection_id, index.id)?;
        }
    }
    let scanned = Scanned {
        documents: docs.len() as u64,
        total: txn.totals(collection_id)?.count,
    };
    let step = match docs.last() {
        Some((last, _)) if docs.len() == BATCH => Step::More(successor(last)),
        _ => Step::Done,
    };
    Ok((step, scanned))
}

/// Inside the writer: clears `building` on the build's indexes. Returns false (and changes
/// nothing) if the collection or one of them is gone.
fn finish(txn: &mut Txn<'_>, collection_id: u64, index_ids: &[u64]) -> Result<bool> {
    if building(txn, collection_id, index_ids).is_none() {
        return Ok(false);
    }
    for id in index_ids {
        catalog_write::update_index(txn, collection_id, *id, |i| i.building = false)?;
    }
    if let Some(meta) = txn.catalog.by_id(collection_id).cloned() {
        for id in index_ids {
            ddl::log_index_ready(txn, &meta, *id)?;
        }
    }
    Ok(true)
}

/// At start, before the writer runs: removes every index still marked `building` (its build
/// was cut short), and leaves to the sweeper its entries and those of every index id the
/// catalog does not hold (left by an earlier version's drop cut short). Returns how many
/// indexes' entries it left to the sweeper.
pub(in crate::engine) fn discard_unfinished(backend: &Db, catalog: &mut Catalog) -> Result<usize> {
    let unfinished: Vec<(u64, u64)> = catalog
        .all()
        .flat_map(|m| {
            m.indexes
                .iter()
                .filter(|i| i.building)
                .map(move |i| (m.id, i.id))
        })
        .collect();
    if !unfinished.is_empty() {
        commit(backend, catalog, |txn| {
            for (collection_id, index_id) in &unfinished {
                tracing::warn!(
                    collection_id,
                    index_id,
                    "dropping an index whose build did not finish before the last stop"
                );
                ddl::remove_index(txn, *collection_id, *index_id)?;
                ddl::forget_index_entries(txn, *collection_id, *index_id);
            }
            Ok(())
        })?;
    }
    let leftovers = leftover_indexes(backend, catalog)?;
    if !leftovers.is_empty() {
        commit(backend, catalog, |txn| {
            for (collection_id, index_id) in &leftovers {
                ddl::forget_index_entries(txn, *collection_id, *index_id);
            }
            Ok(())
        })?;
    }
    Ok(leftovers.len())
}

/// (collection id, index id) of entries in `Indexes` whose index the catalog does not hold:
/// one seek per index id present, so the cost grows with the number of indexes, not entries.
fn leftover_indexes(backend: &Db, catalog: &Catalog) -> Result<Vec<(u64, u64)>> {
    let snapshot = backend.snapshot();
    let mut leftovers = Vec::new();
    for meta in catalog.all() {
        let end = collection_end(meta.id);
        let mut from = keys::collection_prefix(meta.id).to_vec();
        loop {
            let first = snapshot
                .range(
                    Keyspace::Indexes,
                    Bound::Included(&from),
                    Bound::Excluded(&end),
                    false,
                )
                .next()
                .transpose()?;
            let Some((key, _)) = first else { break };
            let Some((index_id, _)) = keys::strip_collection_prefix(&key).and_then(keys::split_id)
            else {
                break;
            };
            if meta.index_by_id(index_id).is_none() {
                leftovers.push((meta.id, index_id));
            }
            from = index_end(meta.id, index_id);
        }
    }
    Ok(leftovers)
}

/// Runs `f` in a transaction of its own and commits it durably (start-up only: the writer is
/// not running yet).
fn commit<R>(
    backend: &Db,
    catalog: &mut Catalog,
    f: impl FnOnce(&mut Txn<'_>) -> Result<R>,
) -> Result<R> {
    let snapshot = backend.snapshot();
    let mut txn = Txn::new(&snapshot, catalog);
    let value = f(&mut txn)?;
    let (batch, _) = txn.finish()?;
    if !batch.is_empty() {
        backend.commit(batch, Durability::Buffered)?;
        backend.persist(Durability::SyncData)?;
    }
    Ok(value)
}

/// The exclusive end of a collection's keys.
fn collection_end(collection_id: u64) -> Vec<u8> {
    keys::prefix_end(&keys::collection_prefix(collection_id))
        .unwrap_or_else(|| vec![0xFF; keys::MAX_ID_LEN + 1])
}

/// The exclusive end of an index's entries.
fn index_end(collection_id: u64, index_id: u64) -> Vec<u8> {
    keys::prefix_end(&keys::index_prefix(collection_id, index_id))
        .unwrap_or_else(|| vec![0xFF; 2 * keys::MAX_ID_LEN + 1])
}

/// The smallest key greater than `key`.
fn successor(key: &[u8]) -> Vec<u8> {
    let mut next = key.to_vec();
    next.push(0);
    next
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::engine::catalog::IndexMeta;
    use crate::engine::Engine;
    use bson::doc;

    fn open(dir: &std::path::Path) -> Engine {
        Engine::open(dir, Arc::new(ManualClock::starting_at_secs(1_000))).unwrap()
    }

    /// `db.c` with `n` documents `{_id: i, a: i % 7}`, one in ten with `a` an array.
    async fn collection_of(engine: &Engine, n: i64) -> u64 {
        engine
            .write(true, move |txn, now| {
                let (meta, _) = ddl::ensure_collection(txn, "db", "c").unwrap();
                for i in 0..n {
                    let a = if i % 10 == 0 {
                        bson::bson!([i % 7, -1])
                    } else {
                        bson::Bson::Int64(i % 7)
                    };
                    collection::insert(txn, &meta, &doc! {"_id": i, "a": a}, now).unwrap();
                }
                meta.id
            })
            .await
            .unwrap()
    }

    async fn add_building(engine: &Engine, collection_id: u64, index: IndexMeta) -> u64 {
        engine
            .write(true, move |txn, _| {
                let index = IndexMeta {
                    building: true,
                    ..index
                };
                ddl::add_index(txn, collection_id, index).unwrap().1
            })
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_build_over_several_batches_indexes_every_document() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path());
        let n = (BATCH * 2 + 17) as i64;
        let id = collection_of(&engine, n).await;
        let index = add_building(&engine, id, IndexMeta::new("a_1", doc! {"a": 1})).await;
        engine.build_indexes(id, vec![index]).await.unwrap();
        let check = engine.check_index("db", "c", "a_1").unwrap();
        assert!(check.is_consistent(), "{check:?}");
        assert_eq!(check.documents, n as u64);
        let meta = engine.catalog().unwrap().get("db", "c").cloned().unwrap();
        let built = meta.index("a_1").unwrap();
        assert!(!built.building);
        assert!(built.multikey, "some documents hold arrays");
    }

    #[tokio::test]
    async fn a_unique_build_over_a_duplicate_leaves_no_index_and_no_entry() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path());
        engine.sweeper.pause();
        let id = collection_of(&engine, (BATCH + 10) as i64).await;
        let unique = IndexMeta {
            unique: true,
            ..IndexMeta::new("a_1", doc! {"a": 1})
        };
        let index = add_building(&engine, id, unique).await;
        let err = engine.build_indexes(id, vec![index]).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::DuplicateKey);
        assert!(engine
            .catalog()
            .unwrap()
            .get("db", "c")
            .unwrap()
            .indexes
            .is_empty());
        // The entries written before the duplicate are left to the sweeper.
        assert_eq!(engine.sweeper.pending_ranges().unwrap(), 1);
        engine.sweeper.run_pass().await.unwrap();
        assert_eq!(engine.index_entry_count("db", "c").unwrap(), 0);
    }

    /// A build cut short by a stop, and entries a drop left behind, are gone after a restart;
    /// a new index never reuses their ids.
    #[tokio::test]
    async fn nothing_half_built_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path());
        let id = collection_of(&engine, 50).await;
        let building = add_building(&engine, id, IndexMeta::new("a_1", doc! {"a": 1})).await;
        engine
            .write(true, move |txn, now| {
                let meta = txn.catalog.by_id(id).cloned().unwrap();
                let index = meta.index_by_id(building).cloned().unwrap();
                let docs: Vec<_> = collection::scan(txn, &meta, &keys::collection_prefix(id), now)
                    .take(20)
                    .collect::<Result<_>>()
                    .unwrap();
                for d in &docs {
                    collection::add_index_entries(txn, &meta, &index, &d.key, &d.doc, now).unwrap();
                }
                // A dropped index whose entries were not deleted yet.
                let meta = ddl::create_index(txn, &meta, IndexMeta::new("b", doc! {"a": -1}), now)
                    .unwrap();
                ddl::remove_index(txn, id, meta.index("b").unwrap().id).unwrap();
            })
            .await
            .unwrap();
        // 20 documents (two with a two-element array) in `a_1`, all 50 (five arrays) in `b`.
        assert_eq!(engine.index_entry_count("db", "c").unwrap(), 22 + 55);
        drop(engine);
        let engine = open(dir.path());
        let meta = engine.catalog().unwrap().get("db", "c").cloned().unwrap();
        assert!(meta.indexes.is_empty(), "{:?}", meta.indexes);
        // Both indexes' entries were left to the sweeper at the start.
        engine.sweeper.run_pass().await.unwrap();
        assert_eq!(engine.sweeper.pending_ranges().unwrap(), 0);
        assert_eq!(engine.index_entry_count("db", "c").unwrap(), 0);
        let fresh = add_building(&engine, id, IndexMeta::new("a_1", doc! {"a": 1})).await;
        assert!(fresh > building + 1);
        engine.build_indexes(id, vec![fresh]).await.unwrap();
        assert!(engine
            .check_index("db", "c", "a_1")
            .unwrap()
            .is_consistent());
    }

    #[tokio::test]
    async fn dropping_the_collection_ends_a_build() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path());
        let id = collection_of(&engine, 10).await;
        let index = add_building(&engine, id, IndexMeta::new("a_1", doc! {"a": 1})).await;
        engine
            .write(true, |txn, _| ddl::drop_collection(txn, "db", "c").unwrap())
            .await
            .unwrap();
        let err = engine.build_indexes(id, vec![index]).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::IndexBuildAborted);
    }

    /// The reaper deletes the entries a building index already has for the documents it
    /// reaps, and the build gives expired documents none.
    #[tokio::test]
    async fn the_reaper_maintains_a_building_index() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::starting_at_secs(1_000));
        let engine = Engine::open(dir.path(), clock.clone()).unwrap();
        engine.reaper.pause();
        let n = (BATCH * 2) as i64;
        let id = collection_of(&engine, n).await;
        engine
            .write(true, move |txn, now| {
                let meta = txn.catalog.by_id(id).cloned().unwrap();
                let ttl = IndexMeta {
                    expire_after_seconds: Some(10),
                    ..IndexMeta::new("_ts_1", doc! {"_ts": 1})
                };
                ddl::create_index(txn, &meta, ttl, now).unwrap();
            })
            .await
            .unwrap();
        let index = add_building(&engine, id, IndexMeta::new("a_1", doc! {"a": 1})).await;
        let first = engine
            .write(false, move |txn, now| {
                let from = keys::collection_prefix(id).to_vec();
                build_batch(txn, id, &[index], from, now).unwrap().0
            })
            .await
            .unwrap();
        assert!(matches!(first, Step::More(_)));
        assert!(engine.index_entry_count("db", "c").unwrap() > BATCH as u64);
        clock.advance(std::time::Duration::from_secs(10));
        assert_eq!(engine.reaper.run_pass().await.unwrap(), n as u64);
        assert_eq!(engine.index_entry_count("db", "c").unwrap(), 0);
        engine
            .write(true, |txn, now| {
                let meta = ddl::collection(txn, "db", "c").unwrap();
                collection::insert(txn, &meta, &doc! {"_id": "new", "a": 1}, now).unwrap();
            })
            .await
            .unwrap();
        engine.build_indexes(id, vec![index]).await.unwrap();
        let check = engine.check_index("db", "c", "a_1").unwrap();
        assert!(check.is_consistent(), "{check:?}");
        assert_eq!((check.documents, check.entries), (1, 1));
    }
}
