//! Running a plan: each stage becomes an iterator pulled by the cursor, with the counters
//! explain reports (works, keys and documents examined, documents returned, duplicates dropped,
//! sorted runs spilled). A blocking sort pulls its whole input on its first call.
//!
//! Within the executor, visibility (TTL-18/TTL-19) is judged in [`Leaf::load`]: every leaf that
//! returns documents (IDHACK, COLLSCAN, IXSCAN with its FETCH) reaches them through it, against
//! the clock cell the cursor moves forward before each batch, and applies the whole filter
//! there (an OR's input: its branch and the rest of the filter, which together are the whole
//! filter for what it finds), so index bounds only ever need to be a superset. The one exception is COUNT_SCAN,
//! whose items are index entries, not documents: the planner chooses it only for a count, on
//! a collection without TTL, when the scan's bounds are exactly the filter
//! (`planner::covered_count`), so there is neither expiry nor filter left to judge. Reads
//! outside the executor apply the same rule through [`live`](super::live) themselves
//! (`engine::read`, `engine::documents::collection`).
//!
//! Owns: running a plan tree, the blocking sort and its spilling decision, the counters.
//! Does not own: choosing the plan (`planner`), the bounds (`bounds`), the spill files
//! (`spill`), where keys are read from (`source`).

use super::live::{self, NowCell};
use super::plan::{IndexScan, Node};
use super::source::{Entries, Source};
use super::spill::{Merge, Run, SpillDir};
use crate::engine::documents::record::Record;
use crate::engine::documents::record::StoredDoc;
use crate::engine::interrupt::Interrupt;
use crate::error::{Error, ErrorCode, Result};
use crate::query::filter::Filter;
use crate::query::size::{held_document, held_keys};
use crate::storage::{keys, Keyspace};
use std::collections::HashSet;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// Documents produced by a stage.
pub type DocIter<'r> = Box<dyn Iterator<Item = Result<StoredDoc>> + Send + 'r>;

/// mongod's limit for a blocking stage's memory (`internalQueryMaxBlockingSortMemoryUsageBytes`).
pub const MAX_BLOCKING_SORT_BYTES: usize = 100 * 1024 * 1024;

/// How often (in entries examined) a leaf checks whether its operation was interrupted.
const INTERRUPT_CHECK_EVERY: u64 = 128;

/// The counters of one stage.
#[derive(Debug, Default)]
pub struct Counters {
    pub works: AtomicU64,
    pub advanced: AtomicU64,
    pub keys_examined: AtomicU64,
    pub docs_examined: AtomicU64,
    pub dups_dropped: AtomicU64,
    /// Sorted runs a sort wrote to disk.
    pub spills: AtomicU64,
}

impl Counters {
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Relaxed)
    }
}

/// Counters of a plan, shaped like the plan: one per stage, the leaf's FETCH and IXSCAN
/// separately.
#[derive(Debug, Default, Clone)]
pub struct StageStats {
    pub counters: Arc<Counters>,
    pub child: Option<Box<StageStats>>,
    /// The inputs of an OR, in order.
    pub inputs: Vec<StageStats>,
}

/// A bound on the work a plan may do, for racing candidate plans. A leaf that reaches it
/// stops, and the run is not an end of results.
#[derive(Debug)]
pub struct WorkBudget {
    limit: u64,
    used: AtomicU64,
    exhausted: AtomicBool,
}

impl WorkBudget {
    pub fn new(limit: u64) -> Arc<WorkBudget> {
        Arc::new(WorkBudget {
            limit,
            used: AtomicU64::new(0),
            exhausted: AtomicBool::new(false),
        })
    }

    pub fn is_exhausted(&self) -> bool {
        self.exhausted.load(Relaxed)
    }

    pub fn used(&self) -> u64 {
        self.used.load(Relaxed)
    }

    /// Counts one unit of work; false once the budget is spent.
    fn spend(&self) -> bool {
        if self.used.fetch_add(1, Relaxed) >= self.limit {
            self.exhausted.store(true, Relaxed);
            return false;
        }
        true
    }
}

/// What every stage of one run shares.
#[derive(Clone)]
pub struct RunContext<S> {
    pub source: S,
    pub collection_id: u64,
    /// Whether the collection keeps an `_id` once per shard-key value
    /// ([`record_key`](crate::engine::documents::record_key)): an `_id` then names a key prefix.
    pub partitioned: bool,
    pub ttl: crate::ttl::TtlModel,
    pub now: NowCell,
    pub filter: Filter,
    /// Within an OR's input: the `$or` branch its scan is for. Its leaf tests this and
    /// `filter`, which is then the rest of the filter without the `$or` (`Node::Or`).
    pub branch: Option<Filter>,
    /// Within an OR's input: the documents the OR has settled, which the input does not load
    /// again.
    pub settled: Option<Settled>,
    pub interrupt: Arc<Interrupt>,
    pub budget: Option<Arc<WorkBudget>>,
    /// `allowDiskUse`: a blocking sort may exceed 100 MB.
    pub allow_disk_use: bool,
    /// Whether documents are decoded; without, only their count is of use.
    pub decode: bool,
    /// Where a sort over its memory limit spills with `allowDiskUse`.
    pub spill: Option<SpillDir>,
    /// Bytes a blocking sort may hold in memory, counted decoded (documents and sort keys).
    pub sort_memory_limit: usize,
    /// Where a blocking sort reports what it holds once sorted (a cursor is charged with it).
    pub held: crate::engine::cursor::Held,
}

/// The documents an OR has settled, shared with its inputs: those it returned, and those
/// that fail the rest of the filter (which every input tests, so no branch can match them).
/// An input skips an entry whose document is settled before loading it, as mongod's OR
/// drops duplicate record ids below its FETCH; overlapping branches (thousands of ranges on
/// one field) would otherwise decode and test a document once per branch that reaches it.
#[derive(Debug, Clone)]
pub struct Settled {
    keys: Arc<Mutex<HashSet<Vec<u8>>>>,
    /// The OR's counters: a skipped entry is one of its dropped duplicates.
    counters: Arc<Counters>,
}

impl Settled {
    fn new(counters: Arc<Counters>) -> Settled {
        Settled {
            keys: Arc::default(),
            counters,
        }
    }

    fn keys(&self) -> std::sync::MutexGuard<'_, HashSet<Vec<u8>>> {
        crate::sync::lock_recovering(&self.keys, "an OR's settled documents")
    }

    /// Whether the document under `key` is settled; counted as a duplicate if so.
    fn contains(&self, key: &[u8]) -> bool {
        let settled = self.keys().contains(key);
        if settled {
            self.counters.dups_dropped.fetch_add(1, Relaxed);
        }
        settled
    }

    /// Settles the document under `key`; false (a duplicate) if it already was.
    fn insert(&self, key: &[u8]) -> bool {
        let inserted = self.keys().insert(key.to_vec());
        if !inserted {
            self.counters.dups_dropped.fetch_add(1, Relaxed);
        }
        inserted
    }
}

/// Runs `node`: its documents, lazily, and the counters it fills as it is pulled.
pub fn run<'r, S: Source<'r>>(node: &Node, ctx: &RunContext<S>) -> (DocIter<'r>, StageStats) {
    let stats = StageStats::default();
    let counters = Arc::clone(&stats.counters);
    match node {
        Node::Eof => (Box::new(std::iter::empty()), stats),
        Node::IdHack { ids } if ctx.partitioned => {
            // Each `_id` names the documents under its key as a prefix, one per shard-key value.
            let source = ctx.source.clone();
            let prefixes: Vec<Vec<u8>> = ids
                .iter()
                .map(|id| keys::document_key(ctx.collection_id, id))
                .collect();
            let entries = prefixes.into_iter().flat_map(move |prefix| {
                let end = keys::prefix_end(&prefix).map_or(Bound::Unbounded, Bound::Excluded);
                source.range(Keyspace::Documents, Bound::Included(prefix), end, false)
            });
            let docs = Leaf::new(ctx, counters).documents(Box::new(entries), true);
            (Box::new(docs), stats)
        }
        Node::IdHack { ids } => {
            let leaf = Leaf::new(ctx, counters);
            let keys: Vec<Vec<u8>> = ids
                .iter()
                .map(|id| keys::document_key(ctx.collection_id, id))
                .collect();
            let iter = keys.into_iter().filter_map(move |key| {
                if let Err(e) = leaf.tick() {
                    return Some(Err(e));
                }
                leaf.counters.keys_examined.fetch_add(1, Relaxed);
                let bytes = match leaf.source.get(Keyspace::Documents, &key) {
                    Ok(Some(bytes)) => bytes,
                    Ok(None) => return None,
                    Err(e) => return Some(Err(e)),
                };
                leaf.load(key, bytes).transpose()
            });
            (Box::new(iter), stats)
        }
        Node::CollScan { reverse } => {
            let prefix = keys::collection_prefix(ctx.collection_id).to_vec();
            let end = keys::prefix_end(&prefix).map_or(Bound::Unbounded, Bound::Excluded);
            let entries =
                ctx.source
                    .range(Keyspace::Documents, Bound::Included(prefix), end, *reverse);
            let docs = Leaf::new(ctx, counters).documents(entries, false);
            (Box::new(docs), stats)
        }
        Node::IxScan(scan) => run_index_scan(scan, ctx, stats),
        Node::CountScan(scan) => {
            let leaf = Leaf::new(ctx, Arc::clone(&stats.counters));
            let prefix = keys::collection_prefix(ctx.collection_id);
            let entries = ranges(&ctx.source, Keyspace::Indexes, scan);
            let iter = entries.map(move |entry| {
                leaf.tick()?;
                let (_, encoded_id) = entry?;
                leaf.counters.keys_examined.fetch_add(1, Relaxed);
                leaf.counters.works.fetch_add(1, Relaxed);
                leaf.counters.advanced.fetch_add(1, Relaxed);
                let mut key = prefix.to_vec();
                key.extend_from_slice(&encoded_id);
                Ok(StoredDoc {
                    key,
                    record: Record::default(),
                    doc: bson::Document::new(),
                })
            });
            (Box::new(iter), stats)
        }
        Node::Or {
            inputs,
            branches,
            rest,
        } => {
            let mut stats = stats;
            let mut iters = Vec::with_capacity(inputs.len());
            let settled = Settled::new(Arc::clone(&counters));
            let mut branch_ctx = RunContext {
                filter: rest.clone(),
                settled: Some(settled.clone()),
                ..ctx.clone()
            };
            for (input, branch) in inputs.iter().zip(branches) {
                // Opening a branch's scan is work of its own (thousands of branches).
                if let Err(e) = crate::query::guard::tick() {
                    return (Box::new(std::iter::once(Err(e))), stats);
                }
                branch_ctx.branch = Some(branch.clone());
                let (iter, input_stats) = run(input, &branch_ctx);
                iters.push(iter);
                stats.inputs.push(input_stats);
            }
            // A document matching several branches is returned by the first only.
            let iter = iters.into_iter().flatten().filter(move |r| match r {
                Ok(d) if !settled.insert(&d.key) => false,
                Ok(_) => {
                    counters.advanced.fetch_add(1, Relaxed);
                    true
                }
                Err(_) => true,
            });
            (Box::new(iter), stats)
        }
        Node::Sort {
            input, spec, limit, ..
        } => {
            let (inner, child) = run(input, ctx);
            let sort = SortIter {
                input: Some(inner),
                spec: spec.clone(),
                limit: limit.map(|l| usize::try_from(l).unwrap_or(usize::MAX)),
                spill: ctx.spill.clone().filter(|_| ctx.allow_disk_use),
                memory_limit: ctx.sort_memory_limit,
                held: ctx.held.clone(),
                budget: ctx.budget.clone(),
                counters,
                sorted: Box::new(std::iter::empty()),
            };
            (Box::new(sort), with_child(stats, child))
        }
        Node::Skip { input, n } => {
            let (inner, child) = run(input, ctx);
            let n = usize::try_from(*n).unwrap_or(usize::MAX);
            let mut skipped = 0usize;
            let c = Arc::clone(&counters);
            let iter = inner.filter(move |r| {
                if r.is_ok() && skipped < n {
                    skipped += 1;
                    return false;
                }
                if r.is_ok() {
                    c.advanced.fetch_add(1, Relaxed);
                }
                true
            });
            (Box::new(iter), with_child(stats, child))
        }
        Node::Limit { input, n } => {
            let (inner, child) = run(input, ctx);
            let n = usize::try_from(*n).unwrap_or(usize::MAX);
            let c = Arc::clone(&counters);
            let iter = inner.take(n).inspect(move |r| {
                if r.is_ok() {
                    c.advanced.fetch_add(1, Relaxed);
                }
            });
            (Box::new(iter), with_child(stats, child))
        }
    }
}

fn with_child(mut stats: StageStats, child: StageStats) -> StageStats {
    stats.child = Some(Box::new(child));
    stats
}

/// A blocking sort: pulls its whole input on the first call, then returns it in order. Past
/// its memory limit it fails (292), or with `allowDiskUse` writes sorted runs to disk and
/// merges them. Its memory is what it holds decoded ([`Entry::bytes`]), as mongod's sorter
/// counts the approximate in-memory size of its documents and sort keys, not their BSON.
struct SortIter<'r> {
    input: Option<DocIter<'r>>,
    spec: crate::query::sort::SortSpec,
    limit: Option<usize>,
    spill: Option<SpillDir>,
    memory_limit: usize,
    held: crate::engine::cursor::Held,
    budget: Option<Arc<WorkBudget>>,
    counters: Arc<Counters>,
    sorted: Box<dyn Iterator<Item = Result<StoredDoc>> + Send>,
}

/// One document a sort holds, with its extracted sort keys and what each holds.
struct Entry {
    keys: Vec<bson::Bson>,
    doc: StoredDoc,
    /// The document: its storage key, its stored bytes and, when decoded, the document.
    doc_bytes: usize,
    /// The row of sort keys (as wide as the sort specification).
    key_bytes: usize,
}

impl Entry {
    fn new(spec: &crate::query::sort::SortSpec, doc: StoredDoc) -> Result<Entry> {
        let keys = spec.keys_of(&doc.doc);
        let doc_bytes = std::mem::size_of::<StoredDoc>()
            + doc.key.capacity()
            + doc.record.body.capacity()
            + held_document(&doc.doc)?;
        Ok(Entry {
            key_bytes: held_keys(&keys)?,
            keys,
            doc,
            doc_bytes,
        })
    }

    fn bytes(&self) -> usize {
        self.doc_bytes.saturating_add(self.key_bytes)
    }
}

impl SortIter<'_> {
    fn fill(&mut self, input: DocIter<'_>) -> Result<()> {
        let mut keyed: Vec<Entry> = Vec::new();
        let mut runs: Vec<Run> = Vec::new();
        let mut bytes = 0usize;
        for doc in input {
            let entry = Entry::new(&self.spec, doc?)?;
            self.counters.works.fetch_add(1, Relaxed);
            bytes = bytes.saturating_add(entry.bytes());
            keyed.push(entry);
            if let Some(limit) = self.limit {
                // Top-k: keep at most twice the limit between trims, so memory follows the
                // limit; trim too before judging the memory limit, which only the kept count.
                if keyed.len() >= limit.saturating_mul(2).max(64) || bytes > self.memory_limit {
                    self.trim(&mut keyed, limit);
                    bytes = keyed.iter().map(Entry::bytes).sum();
                }
            }
            if bytes > self.memory_limit {
                let Some(spill) = &self.spill else {
                    return Err(Error::new(
                        ErrorCode::QueryExceededMemoryLimitNoDiskUseAllowed,
                        format!(
                            "Executor error during find command :: caused by :: Sort exceeded memory limit of {} bytes, but did not opt in to external sorting.",
                            self.memory_limit
                        ),
                    ));
                };
                self.trim(&mut keyed, self.limit.unwrap_or(usize::MAX));
                runs.push(spill.write_run(keyed.drain(..).map(|e| e.doc))?);
                self.counters.spills.fetch_add(1, Relaxed);
                bytes = 0;
            }
        }
        // A trial run cut short by its budget has not seen all documents: it returns none.
        if self.budget.as_ref().is_some_and(|b| b.is_exhausted()) {
            return Ok(());
        }
        self.trim(&mut keyed, self.limit.unwrap_or(usize::MAX));
        self.sorted = if runs.is_empty() {
            // The sort keys are dropped here; the cursor is charged with what the sorted
            // documents hold until they leave.
            let sized = keyed.into_iter().map(|e| (e.doc_bytes, e.doc)).collect();
            Box::new(crate::engine::cursor::HeldIter::new(sized, self.held.clone()).map(Ok))
        } else {
            let rest = keyed.into_iter().map(|e| (e.keys, e.doc)).collect();
            let merged = Merge::new(self.spec.clone(), runs, rest);
            match self.limit {
                Some(limit) => Box::new(merged.take(limit)),
                None => Box::new(merged),
            }
        };
        Ok(())
    }

    /// Sorts (stably: ties keep their input order) and keeps the first `limit`.
    fn trim(&self, keyed: &mut Vec<Entry>, limit: usize) {
        keyed.sort_by(|a, b| self.spec.compare_keys(&a.keys, &b.keys));
        keyed.truncate(limit);
    }
}

impl Iterator for SortIter<'_> {
    type Item = Result<StoredDoc>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(input) = self.input.take() {
            if let Err(e) = self.fill(input) {
                return Some(Err(e));
            }
        }
        let doc = self.sorted.next()?;
        if doc.is_ok() {
            self.counters.advanced.fetch_add(1, Relaxed);
        }
        Some(doc)
    }
}

fn run_index_scan<'r, S: Source<'r>>(
    scan: &IndexScan,
    ctx: &RunContext<S>,
    mut stats: StageStats,
) -> (DocIter<'r>, StageStats) {
    let Some(index_id) = scan.index.id else {
        // The `_id` index is the documents keyspace: its entries are the documents.
        let leaf = Leaf::new(ctx, Arc::clone(&stats.counters));
        let entries = ranges(&ctx.source, Keyspace::Documents, scan);
        return (Box::new(leaf.documents(entries, true)), stats);
    };
    // FETCH above IXSCAN: the IXSCAN's counters are the child's.
    let ixscan = StageStats::default();
    let keys_counter = Arc::clone(&ixscan.counters);
    stats.child = Some(Box::new(ixscan));
    let leaf = Leaf::new(ctx, Arc::clone(&stats.counters));
    let prefix = keys::collection_prefix(ctx.collection_id);
    let mut seen: Option<HashSet<Vec<u8>>> = scan.index.multikey.then(HashSet::new);
    let _ = index_id;
    let entries = ranges(&ctx.source, Keyspace::Indexes, scan);
    let iter = entries.filter_map(move |entry| {
        if let Err(e) = leaf.tick() {
            return Some(Err(e));
        }
        let (_, encoded_id) = match entry {
            Ok(e) => e,
            Err(e) => return Some(Err(e)),
        };
        keys_counter.keys_examined.fetch_add(1, Relaxed);
        keys_counter.works.fetch_add(1, Relaxed);
        // A multikey index holds a document once per element: return it once.
        if let Some(seen) = seen.as_mut() {
            if !seen.insert(encoded_id.clone()) {
                keys_counter.dups_dropped.fetch_add(1, Relaxed);
                return None;
            }
        }
        keys_counter.advanced.fetch_add(1, Relaxed);
        let mut key = Vec::with_capacity(prefix.len() + encoded_id.len());
        key.extend_from_slice(&prefix);
        key.extend_from_slice(&encoded_id);
        let bytes = match leaf.source.get(Keyspace::Documents, &key) {
            Ok(Some(bytes)) => bytes,
            // An entry without its document cannot be committed; skip rather than fail a read.
            Ok(None) => return None,
            Err(e) => return Some(Err(e)),
        };
        leaf.load(key, bytes).transpose()
    });
    (Box::new(iter), stats)
}

/// The entries of every range of `scan`, in scan order.
fn ranges<'r, S: Source<'r>>(source: &S, keyspace: Keyspace, scan: &IndexScan) -> Entries<'r> {
    let source = source.clone();
    let reverse = scan.reverse;
    let mut ranges = scan.ranges.clone();
    if reverse {
        ranges.reverse();
    }
    Box::new(ranges.into_iter().flat_map(move |(start, end)| {
        source.range(
            keyspace,
            Bound::Included(start),
            Bound::Excluded(end),
            reverse,
        )
    }))
}

/// What a leaf needs to turn stored bytes into a returned document.
struct Leaf<S> {
    source: S,
    ttl: crate::ttl::TtlModel,
    now: NowCell,
    filter: Filter,
    branch: Option<Filter>,
    settled: Option<Settled>,
    interrupt: Arc<Interrupt>,
    budget: Option<Arc<WorkBudget>>,
    counters: Arc<Counters>,
    ticks: std::cell::Cell<u64>,
    decode: bool,
}

impl<'r, S: Source<'r>> Leaf<S> {
    fn new(ctx: &RunContext<S>, counters: Arc<Counters>) -> Self {
        Leaf {
            source: ctx.source.clone(),
            ttl: ctx.ttl.clone(),
            now: Arc::clone(&ctx.now),
            filter: ctx.filter.clone(),
            branch: ctx.branch.clone(),
            settled: ctx.settled.clone(),
            interrupt: Arc::clone(&ctx.interrupt),
            budget: ctx.budget.clone(),
            counters,
            ticks: std::cell::Cell::new(0),
            decode: ctx.decode,
        }
    }

    /// One unit of work: checks the interrupt every so often and spends the trial budget.
    fn tick(&self) -> Result<()> {
        let ticks = self.ticks.get() + 1;
        self.ticks.set(ticks);
        if ticks.is_multiple_of(INTERRUPT_CHECK_EVERY) {
            self.interrupt.check()?;
        }
        // The thread's count too: a `$or` plan runs a leaf per branch, and thousands of
        // branches of a few entries each would never reach a leaf's own check.
        crate::query::guard::tick()?;
        if let Some(budget) = &self.budget {
            if !budget.spend() {
                return Err(Error::new(ErrorCode::Interrupted, "trial budget spent"));
            }
        }
        Ok(())
    }

    /// The stored document under `key` if it is visible now and matches the filter (TTL-18).
    fn load(&self, key: Vec<u8>, bytes: Vec<u8>) -> Result<Option<StoredDoc>> {
        if self.settled.as_ref().is_some_and(|s| s.contains(&key)) {
            return Ok(None);
        }
        self.counters.docs_examined.fetch_add(1, Relaxed);
        self.counters.works.fetch_add(1, Relaxed);
        let Some(record) = live::live_record_owned(bytes, &self.ttl, self.now.load(Relaxed))?
        else {
            return Ok(None);
        };
        let raw = bson::RawDocument::from_bytes(&record.body)
            .map_err(|e| Error::internal(format!("corrupt stored document: {e}")))?;
        if let Some(branch) = &self.branch {
            if !branch.matches_raw(raw)? {
                return Ok(None);
            }
        }
        if !self.filter.matches_raw(raw)? {
            if let Some(settled) = &self.settled {
                // The rest of the filter, which every branch of the OR tests: no branch can
                // return this document.
                settled.insert(&key);
            }
            return Ok(None);
        }
        let doc = if self.decode {
            record.document()?
        } else {
            bson::Document::new()
        };
        self.counters.advanced.fetch_add(1, Relaxed);
        Ok(Some(StoredDoc { key, record, doc }))
    }

    /// Documents read straight from `entries` of the documents keyspace.
    /// Documents read straight from `entries` of the documents keyspace; `as_keys` when they
    /// are the entries of the `_id` index (counted as keys examined too).
    fn documents(
        self,
        entries: Entries<'r>,
        as_keys: bool,
    ) -> impl Iterator<Item = Result<StoredDoc>> + Send + 'r {
        entries.filter_map(move |entry| {
            if let Err(e) = self.tick() {
                return Some(Err(e));
            }
            match entry {
                Ok((key, bytes)) => {
                    if as_keys {
                        self.counters.keys_examined.fetch_add(1, Relaxed);
                    }
                    self.load(key, bytes).transpose()
                }
                Err(e) => Some(Err(e)),
            }
        })
    }
}
