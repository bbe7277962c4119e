//! The executor: the one read path. Every command that reads or selects documents — find and
//! getMore, count, distinct, aggregate's leading stages, and the targets of update, delete and
//! findAndModify — hands it one [`ReadRequest`] (compiled filter, sort, skip, limit, hint) and
//! gets a lazy stream of visible, matching documents, planned over the collection's indexes.
//!
//! ```text
//! ReadRequest ─ planner (bounds from the filter, candidates, race) ─> plan tree (Node)
//!             ─ stages::run over a Source (snapshot or writer txn) ─> documents + counters
//!             ─ the plan, the rejected candidates and the counters, which `engine::explain` renders
//! ```
//!
//! TTL visibility is applied inside the leaves that return documents (`stages`, TTL-18/TTL-19),
//! by the rule the reads outside the executor apply too
//! ([`live`]): a change stream's
//! `updateLookup`, `collStats`'s sample and `mayfly dump` read through `engine::read`, and
//! writes look documents up through `engine::collection`. Long work checks the operation's
//! [`Interrupt`].

pub mod bounds;
pub mod cache;
pub mod hashed;
pub mod keyed;
pub mod live;
pub mod partial;
pub mod plan;
pub mod plan_log;
pub mod planner;
pub mod source;
pub mod spill;
pub mod stages;
pub mod summary;

pub use plan::Node;
pub use planner::Choice;
pub use source::Source;
pub use stages::{DocIter, StageStats};

use super::catalog::CollectionMeta;
use super::index_usage::IndexUsage;
use super::interrupt::Interrupt;
use crate::engine::documents::record::StoredDoc;
use crate::engine::writer::txn::Txn;
use crate::error::{Error, ErrorCode, Result};
use crate::query::collation::Collation;
use crate::query::expr::Variables;
use crate::query::filter::Filter;
use crate::query::sort::SortSpec;
use bson::{Bson, Document};
use live::NowCell;
use std::sync::atomic::AtomicI64;
use std::sync::Arc;

/// An index the client asked for (`hint`).
#[derive(Debug, Clone, PartialEq)]
pub enum Hint {
    /// `{$natural: 1}` or `{$natural: -1}`: a collection scan in that direction.
    Natural {
        reverse: bool,
    },
    Name(String),
    Key(Document),
}

impl Hint {
    /// The `hint` argument of a command: an index name, a key pattern or `{$natural: ±1}`; an
    /// empty document means none.
    pub fn parse(value: Option<&Bson>) -> Result<Option<Hint>> {
        match value {
            None => Ok(None),
            Some(Bson::String(name)) => Ok(Some(Hint::Name(name.clone()))),
            Some(Bson::Document(d)) if d.is_empty() => Ok(None),
            Some(Bson::Document(d)) => match d.get("$natural") {
                Some(direction) => Ok(Some(Hint::Natural {
                    reverse: natural_reverse(direction)?,
                })),
                None => Ok(Some(Hint::Key(d.clone()))),
            },
            Some(_) => Err(Error::failed_to_parse(
                "Hint must be either a string or nested object",
            )),
        }
    }
}

fn natural_reverse(direction: &Bson) -> Result<bool> {
    match crate::query::filter::integral_value(direction) {
        Some(1) => Ok(false),
        Some(-1) => Ok(true),
        _ => Err(Error::new(
            ErrorCode::BadValue,
            "$natural hint must be 1 or -1",
        )),
    }
}

/// What a command asks of the executor.
#[derive(Debug, Clone)]
pub struct ReadRequest {
    pub filter: Filter,
    /// The filter as the client sent it (explain's `parsedQuery`).
    pub filter_doc: Document,
    pub sort: SortSpec,
    pub sort_pattern: Document,
    /// `sort: {$natural: ±1}`: scan order instead of a sort.
    pub natural_sort: Option<bool>,
    pub skip: u64,
    pub limit: Option<u64>,
    pub hint: Option<Hint>,
    /// A blocking sort may use more than 100 MB.
    pub allow_disk_use: bool,
    /// `false` when the caller does not need decoded documents (a count, or a find that returns
    /// documents as stored): the stream's documents are then left empty (records are there).
    pub decode: bool,
    /// The caller only counts: the items need not even be records, so the plan may count
    /// index entries (COUNT_SCAN).
    pub count_only: bool,
    /// `min`/`max`: explicit key bounds of the hinted index (inclusive, exclusive).
    pub min: Option<Document>,
    pub max: Option<Document>,
    /// `returnKey`: each document is replaced by the index key it was found by.
    pub return_key: bool,
    /// Bytes a blocking sort may hold in memory, counted decoded: its documents and their sort
    /// keys (mongod's `internalQueryMaxBlockingSortMemoryUsageBytes`, 100 MB).
    pub sort_memory_limit: usize,
    /// Where a blocking sort reports the bytes it holds materialised, for the cursor that keeps
    /// its result.
    pub held: crate::engine::cursor::Held,
    /// The collation the filter and sort compare strings under (`None`: simple); an index is
    /// used for string bounds or order only when its collation is this one.
    pub collation: Option<Collation>,
    /// The command named a collation; otherwise the collection's default applies
    /// ([`ReadRequest::for_collection`]).
    pub collation_given: bool,
    /// What the filter's `$expr`s see: the command's `let` variables and `$$NOW`.
    pub vars: Variables,
    /// The Cosmos profile's rule: a sort no index serves is refused
    /// ([`crate::profile::sort`]), however it would run here.
    pub sort_needs_index: bool,
}

impl ReadRequest {
    /// Every document matching `filter`, in no particular order.
    pub fn new(filter_doc: Document) -> Result<ReadRequest> {
        ReadRequest::with_variables(filter_doc, Variables::default())
    }

    /// As [`ReadRequest::new`], with the filter's `$expr`s seeing `vars`.
    pub fn with_variables(filter_doc: Document, vars: Variables) -> Result<ReadRequest> {
        Ok(ReadRequest {
            filter: Filter::compile_full(&filter_doc, None, &vars)?,
            vars,
            filter_doc,
            sort: SortSpec::default(),
            sort_pattern: Document::new(),
            natural_sort: None,
            skip: 0,
            limit: None,
            hint: None,
            allow_disk_use: false,
            decode: true,
            count_only: false,
            min: None,
            max: None,
            return_key: false,
            sort_memory_limit: stages::MAX_BLOCKING_SORT_BYTES,
            held: Default::default(),
            collation: None,
            collation_given: false,
            sort_needs_index: false,
        })
    }

    /// The command's `collation` argument: `None` when it gave none (the collection's default
    /// applies), else its collation (`Some(None)`: simple, which overrides a default).
    pub fn requested_collation(mut self, arg: Option<Option<Collation>>) -> Result<ReadRequest> {
        if let Some(collation) = arg {
            self = self.collated(collation)?;
            self.collation_given = true;
        }
        Ok(self)
    }

    /// The request as it runs on `meta`: under the collection's default collation when the
    /// command named none.
    pub fn for_collection(
        &self,
        meta: &CollectionMeta,
    ) -> Result<std::borrow::Cow<'_, ReadRequest>> {
        if self.collation_given {
            return Ok(std::borrow::Cow::Borrowed(self));
        }
        match meta.default_collation()? {
            None => Ok(std::borrow::Cow::Borrowed(self)),
            Some(c) => Ok(std::borrow::Cow::Owned(self.clone().collated(Some(c))?)),
        }
    }

    /// Compares strings under `collation` (`None`: simple): the filter is compiled again with
    /// it and the sort (set before or after) orders by it.
    pub fn collated(mut self, collation: Option<Collation>) -> Result<ReadRequest> {
        if collation != self.collation {
            self.filter = Filter::compile_full(&self.filter_doc, collation.as_ref(), &self.vars)?;
            self.sort = std::mem::take(&mut self.sort).with_collation(collation.as_ref());
            self.collation = collation;
        }
        Ok(self)
    }

    /// Planned under `profile`'s rules (the Cosmos profile refuses a sort no index serves).
    pub fn under(mut self, profile: &crate::profile::Profile) -> ReadRequest {
        self.sort_needs_index = profile.enforces(crate::profile::Rule::SortWithoutIndex);
        self
    }

    /// In `pattern`'s order; `{$natural: ±1}` asks for scan order.
    pub fn sorted(mut self, pattern: Document) -> Result<ReadRequest> {
        if let (1, Some(direction)) = (pattern.len(), pattern.get("$natural")) {
            self.natural_sort = Some(natural_reverse(direction)?);
        } else {
            self.sort = SortSpec::compile_with(&pattern, self.collation.as_ref())?;
        }
        self.sort_pattern = pattern;
        Ok(self)
    }
}

/// A running plan: its documents, the choice that produced it and the counters it fills.
pub struct Execution<'r> {
    pub docs: DocIter<'r>,
    pub choice: Choice,
    pub stats: StageStats,
}

/// Plans `req` over `meta` (none: the collection does not exist) and starts it on `source`.
/// Documents are judged visible against `now` as they are pulled.
pub fn execute<'r, S: Source<'r>>(
    source: S,
    meta: Option<&CollectionMeta>,
    req: &ReadRequest,
    now: NowCell,
    interrupt: Arc<Interrupt>,
    cache: Option<&cache::PlanCache>,
    spill: Option<&spill::SpillDir>,
) -> Result<Execution<'r>> {
    let Some(meta) = meta else {
        return Ok(Execution {
            docs: Box::new(std::iter::empty()),
            choice: Choice {
                winner: Node::Eof,
                winner_trial: None,
                rejected: Vec::new(),
            },
            stats: StageStats::default(),
        });
    };
    if req.sort_needs_index {
        // Cosmos indexes the shard key as it indexes `_id`.
        let shard_key = meta
            .cosmos
            .as_ref()
            .and_then(|settings| settings.shard_key.as_deref())
            .map(|path| bson::doc! {path: 1});
        let keys = meta.indexes.iter().map(|i| &i.key).chain(shard_key.iter());
        crate::profile::sort::check(&req.sort_pattern, keys)?;
    }
    let req = req.for_collection(meta)?;
    let req = req.as_ref();
    let ctx = stages::RunContext {
        source,
        collection_id: meta.id,
        partitioned: meta.partition_path().is_some(),
        ttl: meta.ttl_model(),
        now,
        filter: req.filter.clone(),
        branch: None,
        settled: None,
        interrupt,
        budget: None,
        allow_disk_use: req.allow_disk_use,
        // A sort needs the documents to order them.
        decode: req.decode || !req.sort.is_empty(),
        spill: spill.cloned(),
        sort_memory_limit: req.sort_memory_limit,
        held: req.held.clone(),
    };
    let choice = planner::choose(meta, req, &ctx, cache)?;
    let (docs, stats) = stages::run(&choice.winner, &ctx);
    let (winner, counters) = (choice.winner.clone(), stats.clone());
    ctx.interrupt.plans.record(
        summary::summary(&choice.winner),
        Box::new(move || summary::totals(&winner, &counters)),
    );
    let docs: DocIter<'r> = if req.return_key {
        let (leaf, collection) = (choice.winner.leaf().clone(), meta.id);
        Box::new(docs.map(move |d| {
            let mut d = d?;
            d.doc = keyed::index_key(&leaf, collection, &d)?;
            Ok(d)
        }))
    } else {
        docs
    };
    Ok(Execution {
        docs,
        choice,
        stats,
    })
}

/// Inside a write: the documents `req` selects as of this point in the group, judged at `now`.
pub fn select_in_txn(
    txn: &Txn<'_>,
    meta: &CollectionMeta,
    req: &ReadRequest,
    now: i64,
    interrupt: Arc<Interrupt>,
) -> Result<Vec<StoredDoc>> {
    let now = Arc::new(AtomicI64::new(now));
    // Writes race their candidates every time: the cache belongs to the readers' views.
    let execution = execute(txn, Some(meta), req, now, interrupt, None, None)?;
    count_index_use(txn.index_usage(), Some(meta), &execution.choice);
    execution.docs.collect()
}

/// Counts one operation that runs `choice` on `meta` in the accesses of the indexes it uses
/// (`$indexStats`). Commands count what they run; `explain` does not.
pub fn count_index_use(usage: Option<&IndexUsage>, meta: Option<&CollectionMeta>, choice: &Choice) {
    if let (Some(usage), Some(meta)) = (usage, meta) {
        usage.record(meta, &choice.winner);
    }
}
