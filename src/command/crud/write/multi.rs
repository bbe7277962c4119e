//! Multi-document statements outside a transaction — `update` with `multi: true`, `delete` with
//! `limit: 0` — run in bounded batches, each its own writer job, as mongod yields between
//! documents: the statement's plan runs on one snapshot ([`TargetBatches`]), a blocking thread
//! reads the next batch of targets and computes what each becomes, and one writer job re-checks
//! every target ([`targets::recheck`]) and writes the batch, committed (and synced, for a durable
//! write) like any other job. Each job's time from the writer taking it to its commit is
//! measured and sizes the batches after it ([`BatchSizer`]), so a batch holds the writer and the
//! commit for about mongod's yield period. A batch's job starts a commit group of its own
//! ([`Joins::First`]): the writes queued before it are committed without waiting for it. Other
//! clients' writes are grouped between the batches, the server holds one or two batches of a
//! statement, not all its targets, and the operation's interrupt (`maxTimeMS`, `killOp`, a
//! closed connection) is checked between batches, after the batch in the writer has committed,
//! so a stopped statement leaves whole batches written.
//!
//! Owns: the batch loop, and splitting a command's statements into the runs that execute them.
//! Does not own what a statement writes (`update`, `delete`), the batches' sizes
//! (`batch_size`), the snapshot walk and the re-check (`engine::targets`), or transactions and
//! retryable writes, whose statements all run in one job as before (a transaction's write set is
//! one; a retryable write may not be multi).

use super::batch_size::BatchSizer;
use crate::clock::Stopwatch;
use crate::engine::catalog::CollectionMeta;
use crate::engine::exec::ReadRequest;
use crate::engine::targets::{self, BatchLimits, Recheck, TargetBatches};
use crate::engine::{documents::collection, Engine, Interrupt, Joins, StoredDoc, Txn};
use crate::error::{Error, ErrorCode, Result};
use crate::query::guard;
use bson::DateTime;
use std::sync::Arc;

/// What a multi-document statement does to each target.
pub(super) trait MultiWrite: Send + Sync + 'static {
    /// What is computed for one target off the writer's thread, from the snapshot's copy.
    type Prepared: Send + 'static;

    /// What the statement selects.
    fn query(&self) -> &ReadRequest;

    /// Checks made once, on the collection as the statement's snapshot holds it.
    fn check(&self, meta: &CollectionMeta) -> Result<()>;

    /// Computes, on a blocking thread, what `target` becomes (an update's new document).
    fn prepare(&self, target: StoredDoc, at: DateTime) -> Result<Self::Prepared>;

    /// The target a prepared value was computed from.
    fn target(prepared: &Self::Prepared) -> &StoredDoc;

    /// In the writer: writes one target that [`targets::recheck`] found still matching
    /// (`recheck` is never [`Recheck::Gone`]); returns whether the document was modified.
    fn write(
        &self,
        txn: &mut Txn<'_>,
        meta: &CollectionMeta,
        prepared: Self::Prepared,
        recheck: Recheck,
        times: (i64, DateTime),
    ) -> Result<bool>;
}

/// A multi-document statement's outcome: the sums over its batches.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Counts {
    pub matched: usize,
    pub modified: usize,
}

/// The statements of a command, in order, as the runs that execute them.
pub(super) enum Run<S> {
    /// Statements that write at most one document each, or failed to parse, with their
    /// indexes in the command: one writer job, as before.
    OneJob(Vec<(usize, Result<S>)>),
    /// One multi-document statement and its index: in batches.
    Batched(usize, S),
}

/// Splits `statements` into runs: each multi-document statement alone, the others grouped while
/// they follow one another, so a command of many single-document statements is still one job.
pub(super) fn runs<S>(statements: Vec<Result<S>>, is_multi: impl Fn(&S) -> bool) -> Vec<Run<S>> {
    let mut runs = Vec::new();
    let mut group = Vec::new();
    for (i, statement) in statements.into_iter().enumerate() {
        match statement {
            Ok(s) if is_multi(&s) => {
                if !group.is_empty() {
                    runs.push(Run::OneJob(std::mem::take(&mut group)));
                }
                runs.push(Run::Batched(i, s));
            }
            other => group.push((i, other)),
        }
    }
    if !group.is_empty() {
        runs.push(Run::OneJob(group));
    }
    runs
}

/// Runs `write` on `db.coll` batch by batch; returns the sums of the batches' counts. An error
/// ends the statement there: the batches before it stay written (as the documents before a
/// failing one stay written in mongod). An interruption surfaces as the interrupt's error.
///
/// A durable statement is synced once, when it ends, however it ends, as mongod waits for the
/// journal once for a command's write concern and not at each yield: the batches are committed
/// without a sync of their own, and the sync that follows the last one covers them all (the
/// journal is written in order). So a client's write queued behind a batch waits for that
/// batch's job and commit and then its own group's sync, not for a sync of the batch as well,
/// and a statement of a million targets costs one sync, not one per batch.
pub(super) async fn run<W: MultiWrite>(
    engine: &Engine,
    target: (&str, &str),
    write: Arc<W>,
    durable: bool,
    interrupt: &Arc<Interrupt>,
) -> Result<Counts> {
    let mut committed = false;
    let outcome = run_batches(engine, target, write, interrupt, &mut committed).await;
    if durable && committed {
        let synced = engine.write(true, |_: &mut Txn<'_>, _: i64| ()).await;
        if outcome.is_ok() {
            synced?;
        }
    }
    outcome
}

/// The batches of [`run`], each committed without a sync; `committed` tells whether any was.
async fn run_batches<W: MultiWrite>(
    engine: &Engine,
    (db, coll): (&str, &str),
    write: Arc<W>,
    interrupt: &Arc<Interrupt>,
    committed: &mut bool,
) -> Result<Counts> {
    let mut counts = Counts::default();
    interrupt.check()?;
    let view = engine.read()?;
    let Some(meta) = view.collection(db, coll) else {
        return Ok(counts);
    };
    write.check(&meta)?;
    let clock = Arc::clone(engine.clock());
    let mut reader = {
        let (write, clock, selecting) = (
            Arc::clone(&write),
            Arc::clone(&clock),
            Arc::clone(interrupt),
        );
        blocking(interrupt, move || {
            // Planning reads storage (a race of candidate plans).
            let batches = TargetBatches::start(&view, &meta, write.query(), selecting)?;
            Ok(Reader {
                batches,
                write,
                clock,
            })
        })
        .await?
    };
    let collection_id = reader.batches.collection_id();
    let mut sizer = BatchSizer::default();
    let limits = sizer.limits();
    let (back, first) = blocking(interrupt, move || Ok(reader.next(limits))).await?;
    reader = back;
    let mut batch = first?;
    while !batch.is_empty() {
        let job = {
            let (write, clock) = (Arc::clone(&write), Arc::clone(&clock));
            let (db, coll) = (db.to_owned(), coll.to_owned());
            move |txn: &mut Txn<'_>, now: i64| -> Result<(Counts, usize, Stopwatch)> {
                // Started when the writer takes the job, read once its group has committed:
                // what a write queued behind it waits for.
                let timer = Stopwatch::start();
                let meta = collection::existing_collection(txn, &db, &coll)
                    .filter(|m| m.id == collection_id)
                    .ok_or_else(collection_gone)?;
                let size = batch.len();
                let counts = write_batch(
                    txn,
                    &meta,
                    write.as_ref(),
                    batch,
                    (now, clock.now_datetime()),
                )?;
                Ok((counts, size, timer))
            }
        };
        // The next batch is read while this one is written and committed: the snapshot does
        // not see the writes, so the two cannot disturb each other. Its size is therefore set
        // by the batch before this one.
        let limits = sizer.limits();
        let written = async {
            let written = engine.write_joining(Joins::First, false, job).await;
            written.map(|done| done.map(|(counts, size, timer)| (counts, size, timer.elapsed())))
        };
        let (written, read) = tokio::join!(
            written,
            blocking(interrupt, move || Ok(reader.next(limits)))
        );
        let (done, size, took) = written??;
        *committed = true;
        sizer.observe(size, took);
        counts.matched += done.matched;
        counts.modified += done.modified;
        interrupt.check()?;
        let (back, next) = read?;
        reader = back;
        batch = next?;
    }
    Ok(counts)
}

/// The blocking side of a statement: its plan, and what it needs to prepare targets.
struct Reader<W: MultiWrite> {
    batches: TargetBatches,
    write: Arc<W>,
    clock: Arc<dyn crate::clock::Clock>,
}

impl<W: MultiWrite> Reader<W> {
    /// The next batch, prepared; empty once the plan is done. The reader comes back either way,
    /// so the statement can go on with it.
    fn next(mut self, limits: BatchLimits) -> (Self, Result<Vec<W::Prepared>>) {
        let at = self.clock.now_datetime();
        let prepared = self.batches.next_batch(limits).and_then(|targets| {
            targets
                .into_iter()
                .map(|target| self.write.prepare(target, at))
                .collect::<Result<Vec<_>>>()
        });
        (self, prepared)
    }
}

/// One batch in the writer: each target re-checked, then written.
fn write_batch<W: MultiWrite>(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    write: &W,
    batch: Vec<W::Prepared>,
    times: (i64, DateTime),
) -> Result<Counts> {
    let query = write.query().for_collection(meta)?;
    let mut counts = Counts::default();
    for prepared in batch {
        let recheck = targets::recheck(txn, meta, W::target(&prepared), &query.filter, times.0)?;
        if matches!(recheck, Recheck::Gone) {
            continue;
        }
        counts.matched += 1;
        if write.write(txn, meta, prepared, recheck, times)? {
            counts.modified += 1;
        }
    }
    Ok(counts)
}

/// mongod's error when a yielded plan's collection is dropped (or renamed) under it.
fn collection_gone() -> Error {
    Error::new(
        ErrorCode::QueryPlanKilled,
        "collection dropped or renamed while the statement ran",
    )
}

/// Runs `work` on the blocking pool, its loops and expressions (planning the statement,
/// reading and preparing its targets) checking the operation's `interrupt` ([`guard`]).
async fn blocking<T: Send + 'static>(
    interrupt: &Arc<Interrupt>,
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    let interrupt = Arc::clone(interrupt);
    tokio::task::spawn_blocking(move || {
        let _current = guard::install(interrupt as Arc<dyn guard::Checkpoint>);
        work()
    })
    .await
    .map_err(|e| Error::internal(format!("a write's reading thread failed: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(runs: &[Run<u32>]) -> Vec<String> {
        runs.iter()
            .map(|run| match run {
                Run::OneJob(group) => {
                    format!("job{:?}", group.iter().map(|(i, _)| *i).collect::<Vec<_>>())
                }
                Run::Batched(i, _) => format!("batched{i}"),
            })
            .collect()
    }

    #[test]
    fn multi_statements_run_alone_and_the_others_together() {
        // Statements > 100 are multi; an Err is a statement that failed to parse.
        let is_multi = |s: &u32| *s > 100;
        let bad = || Err(Error::bad_value("x"));
        let cases: Vec<(Vec<Result<u32>>, Vec<&str>)> = vec![
            (vec![Ok(1), Ok(2)], vec!["job[0, 1]"]),
            (vec![Ok(101)], vec!["batched0"]),
            (
                vec![Ok(1), Ok(101), Ok(2), bad(), Ok(102), Ok(103)],
                vec!["job[0]", "batched1", "job[2, 3]", "batched4", "batched5"],
            ),
            (
                vec![bad(), Ok(101), Ok(3)],
                vec!["job[0]", "batched1", "job[2]"],
            ),
        ];
        for (statements, expected) in cases {
            assert_eq!(shape(&runs(statements, is_multi)), expected);
        }
    }
}
