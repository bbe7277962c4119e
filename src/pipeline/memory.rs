//! Memory accounting for the pipeline's blocking stages that run above the executor (`$group`,
//! a `$sort` after the leading stages, `$sample`, `$bucketAuto`, `$setWindowFields`): each may
//! hold mongod's 100 MB per stage (`internalQueryMaxBlockingSortMemoryUsageBytes`) and fails
//! past it.
//!
//! A stage is charged with what it holds decoded ([`held_row`], `query::size::held_*`: the
//! documents, their extracted keys, the accumulators' states), as mongod charges its blocking
//! stages with the approximate in-memory size of what they hold, not with BSON bytes.
//!
//! Owns: the per-stage budget and its errors (sizes come from `query::size`), and
//! [`SpillingSort`], the budgeted sort of a stage's own entries that spills through the
//! engine's external sort. Does not own: the executor's sort (its own budget, with spilling,
//! lives in `engine::exec`), nor the files (`engine::exec::spill`). Past the limit every stage
//! fails with 292 without `allowDiskUse`. With it, `$group` (and `$bucket`, a `$group`) spills
//! its groups (`group.rs`), a `$sort` its sorted runs (`sort.rs`), and `$bucketAuto`,
//! `$sample` and `$setWindowFields`'s sort their entries through a [`SpillingSort`]; a stage
//! that cannot spill (`$densify`, `$facet`'s input) fails with 146 ExceededMemoryLimit, saying
//! so.

use super::Row;
use crate::engine::cursor::{Held, HeldIter};
use crate::engine::exec::spill::{DocMerge, DocOrder, DocRun, SpillDir};
use crate::engine::exec::stages::MAX_BLOCKING_SORT_BYTES;
use crate::error::{Error, ErrorCode, Result};
use bson::{Bson, Document};

/// What every blocking stage of one pipeline shares: whether it may use the disk, and the
/// gauge of what its output holds materialised (the cursor is charged with it).
#[derive(Debug, Clone, Default)]
pub struct StageLimits {
    pub allow_disk_use: bool,
    pub held: Held,
}

impl StageLimits {
    pub fn budget(&self, stage: Blocking) -> StageMemory {
        StageMemory::new(stage, self.allow_disk_use)
    }
}

/// Which blocking stage a budget belongs to (its errors name it as mongod does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocking {
    Group,
    Sort,
    BucketAuto,
}

/// The bytes one stage holds, against its limit.
#[derive(Debug)]
pub struct StageMemory {
    stage: Blocking,
    used: usize,
    limit: usize,
    allow_disk_use: bool,
    /// Where a stage that writes its own runs (`$group`) spills: the engine's spill directory
    /// under the data directory; `None` (a bare budget): the system's temporary directory.
    spill: Option<SpillDir>,
}

impl StageMemory {
    pub fn new(stage: Blocking, allow_disk_use: bool) -> StageMemory {
        StageMemory::with_limit(stage, allow_disk_use, MAX_BLOCKING_SORT_BYTES)
    }

    pub fn with_limit(stage: Blocking, allow_disk_use: bool, limit: usize) -> StageMemory {
        StageMemory {
            stage,
            used: 0,
            limit,
            allow_disk_use,
            spill: None,
        }
    }

    /// This budget, spilling into `dir`.
    pub fn spilling_to(mut self, dir: Option<&SpillDir>) -> StageMemory {
        self.spill = dir.cloned();
        self
    }

    /// The directory this stage spills to, if the engine gave one.
    pub fn spill_dir(&self) -> Option<&SpillDir> {
        self.spill.as_ref()
    }

    /// Records `delta` more (or, negative, fewer) bytes held; fails once past the limit.
    pub fn adjust(&mut self, delta: isize) -> Result<()> {
        self.used = self.used.saturating_add_signed(delta);
        if self.used > self.limit {
            return Err(self.exceeded());
        }
        Ok(())
    }

    /// Records `bytes` more held without failing; the caller checks [`StageMemory::over_limit`]
    /// and spills or fails (a spilling stage).
    pub fn note(&mut self, bytes: usize) {
        self.used = self.used.saturating_add(bytes);
    }

    /// As [`StageMemory::note`], for a change that may be negative.
    pub fn note_delta(&mut self, delta: isize) {
        self.used = self.used.saturating_add_signed(delta);
    }

    pub fn over_limit(&self) -> bool {
        self.used > self.limit
    }

    /// Whether the client allowed this stage to use the disk.
    pub fn may_spill(&self) -> bool {
        self.allow_disk_use
    }

    /// Forgets what was held (it went to disk).
    pub fn reset(&mut self) {
        self.used = 0;
    }

    /// An empty budget with the same limit, for a later phase of the stage.
    pub fn fresh(&self) -> StageMemory {
        StageMemory::with_limit(self.stage, self.allow_disk_use, self.limit)
            .spilling_to(self.spill.as_ref())
    }

    /// A single merged group that alone passes the limit cannot spill further.
    pub fn exceeded_merging(&self) -> Error {
        Error::new(
            ErrorCode::ExceededMemoryLimit,
            format!(
                "a single $group result exceeded the memory limit of {} bytes while merging \
                 the groups spilled to disk",
                self.limit
            ),
        )
    }

    /// One result that alone passes the limit (a bucket's accumulators): spilling cannot
    /// help it; without `allowDiskUse`, the stage's 292.
    pub fn exceeded_by_one(&self) -> Error {
        if !self.allow_disk_use {
            return self.exceeded();
        }
        Error::new(
            ErrorCode::ExceededMemoryLimit,
            format!(
                "a single {} result exceeded the memory limit of {} bytes",
                self.name(),
                self.limit
            ),
        )
    }

    fn name(&self) -> &'static str {
        match self.stage {
            Blocking::Group => "$group",
            Blocking::Sort => "$sort",
            Blocking::BucketAuto => "$bucketAuto",
        }
    }

    pub fn charge(&mut self, bytes: usize) -> Result<()> {
        self.adjust(isize::try_from(bytes).unwrap_or(isize::MAX))
    }

    /// The error for passing the limit: 292 without `allowDiskUse`, 146 for a stage that
    /// cannot spill.
    pub fn exceeded(&self) -> Error {
        let limit = self.limit;
        if self.allow_disk_use {
            let name = self.name();
            return Error::new(
                ErrorCode::ExceededMemoryLimit,
                format!(
                    "{name} exceeded its memory limit of {limit} bytes; this server does not spill \
                     a {name} stage to disk, so allowDiskUse cannot help it. Filter, project or \
                     limit the documents before the stage."
                ),
            );
        }
        let reason = match self.stage {
            Blocking::Group => "Exceeded memory limit for $group, but didn't allow external sort. \
                                Pass allowDiskUse:true to opt in."
                .to_owned(),
            Blocking::BucketAuto => "Exceeded memory limit for $bucketAuto, but didn't allow \
                                     external sort. Pass allowDiskUse:true to opt in."
                .to_owned(),
            Blocking::Sort => format!(
                "Sort exceeded memory limit of {limit} bytes, but did not opt in to external \
                 sorting."
            ),
        };
        Error::new(
            ErrorCode::QueryExceededMemoryLimitNoDiskUseAllowed,
            format!("PlanExecutor error during aggregation :: caused by :: {reason}"),
        )
    }
}

/// A blocking stage's entries (documents it builds: a sort key beside a row, say) sorted
/// by the stage's order within its budget. Past the budget, with `allowDiskUse`, the entries
/// held are sorted (stably) and written as one run, and memory starts afresh; at the end the
/// runs and the rest are merged, ties going to the earlier entry, so the result is exactly the
/// stable in-memory sort of the same entries. Without `allowDiskUse`, the stage's error.
pub struct SpillingSort {
    memory: StageMemory,
    order: DocOrder,
    entries: Vec<(usize, Document)>,
    runs: Vec<DocRun>,
    dir: Option<SpillDir>,
    count: u64,
}

/// Sorted entries, streamed.
pub type Entries = Box<dyn Iterator<Item = Result<Document>> + Send>;

impl SpillingSort {
    pub fn new(memory: StageMemory, order: DocOrder, dir: Option<&SpillDir>) -> SpillingSort {
        SpillingSort {
            memory,
            order,
            entries: Vec::new(),
            runs: Vec::new(),
            dir: dir.cloned(),
            count: 0,
        }
    }

    /// Adds an entry, charged with what it holds decoded (its key, and the row it carries).
    pub fn push(&mut self, entry: Document) -> Result<()> {
        let bytes = crate::query::size::held_document(&entry)?;
        self.memory.note(bytes);
        self.entries.push((bytes, entry));
        self.count += 1;
        if !self.memory.over_limit() {
            return Ok(());
        }
        let Some(dir) = self.dir.as_ref().filter(|_| self.memory.may_spill()) else {
            return Err(self.memory.exceeded());
        };
        let order = &self.order;
        self.entries.sort_by(|a, b| order(&a.1, &b.1));
        self.runs
            .push(dir.write_docs(self.entries.iter().map(|(_, d)| d))?);
        self.entries.clear();
        self.memory.reset();
        Ok(())
    }

    /// How many entries were added.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// How many runs went to disk.
    pub fn spills(&self) -> usize {
        self.runs.len()
    }

    /// The entries in order: from memory (charged to `held` until consumed), or merged from
    /// the runs on disk and the rest.
    pub fn finish(mut self, held: &Held) -> Entries {
        let order = &self.order;
        self.entries.sort_by(|a, b| order(&a.1, &b.1));
        if self.runs.is_empty() {
            return Box::new(HeldIter::new(self.entries, held.clone()).map(Ok));
        }
        let rest = self.entries.into_iter().map(|(_, d)| d).collect();
        Box::new(DocMerge::new(self.order, self.runs, rest))
    }
}

/// The bytes `row` holds in memory: its document decoded, and the row around it.
pub fn held_row(row: &Row) -> Result<usize> {
    let document = crate::query::size::held_document(&row.doc)?;
    Ok(std::mem::size_of::<Row>() - std::mem::size_of::<Document>() + document)
}

/// A row as a spilled entry's fields: the document under `d`, its expiry (TTL-18) under `x`.
pub fn row_fields(entry: &mut Document, row: Row) {
    if let Some(at) = row.expires_at {
        entry.insert("x", at);
    }
    entry.insert("d", row.doc);
}

/// The row a spilled entry holds (see [`row_fields`]).
pub fn entry_row(entry: &mut Document) -> Result<Row> {
    let doc = match entry.remove("d") {
        Some(Bson::Document(doc)) => doc,
        _ => return Err(Error::internal("a spilled row is malformed")),
    };
    let expires_at = match entry.get("x") {
        Some(Bson::Int64(at)) => Some(*at),
        _ => None,
    };
    Ok(Row {
        doc,
        size: None,
        expires_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_limit_a_stage_fails_with_mongods_error() {
        let mut m = StageMemory::with_limit(Blocking::Group, false, 100);
        m.charge(60).unwrap();
        m.adjust(-30).unwrap();
        m.charge(70).unwrap();
        let err = m.charge(1).unwrap_err();
        assert_eq!(
            err.code,
            ErrorCode::QueryExceededMemoryLimitNoDiskUseAllowed
        );
        assert!(err.message.ends_with(
            "Exceeded memory limit for $group, but didn't allow external sort. Pass allowDiskUse:true to opt in."
        ));
        let mut m = StageMemory::with_limit(Blocking::Sort, true, 10);
        assert_eq!(
            m.charge(11).unwrap_err().code,
            ErrorCode::ExceededMemoryLimit
        );
    }
}
