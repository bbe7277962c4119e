//! Memory accounting for the pipeline's blocking stages that run above the executor (`$group`,
//! a `$sort` after the leading stages, `$sample`): each may hold mongod's 100 MB per stage
//! (`internalQueryMaxBlockingSortMemoryUsageBytes`) and fails past it.
//!
//! Owns: the per-stage budget and its errors (sizes come from `query::size`). Does not own: the
//! executor's sort (its own budget, with spilling, lives in `engine::exec`). Past the limit
//! every stage fails with 292 without `allowDiskUse`. With it, `$group` (and `$bucket`, a
//! `$group`) spills its groups to disk and merges them (`group.rs`); the others (`$sort` after
//! the leading stages, `$sample`, `$bucketAuto`) do not spill and fail with 146
//! ExceededMemoryLimit, saying that this server cannot spill them.

use crate::engine::cursor::Held;
use crate::engine::exec::stages::MAX_BLOCKING_SORT_BYTES;
use crate::error::{Error, ErrorCode, Result};

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
        }
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

    pub fn charge(&mut self, bytes: usize) -> Result<()> {
        self.adjust(isize::try_from(bytes).unwrap_or(isize::MAX))
    }

    /// The error for passing the limit: 292 without `allowDiskUse`, 146 for a stage that
    /// cannot spill.
    pub fn exceeded(&self) -> Error {
        let limit = self.limit;
        if self.allow_disk_use {
            let name = match self.stage {
                Blocking::Group => "$group",
                Blocking::Sort => "$sort",
                Blocking::BucketAuto => "$bucketAuto",
            };
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
