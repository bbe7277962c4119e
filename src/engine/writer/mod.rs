//! The group-commit writer: one thread through which every write of every connection goes.
//!
//! It takes the first queued job, drains whatever else is queued (bounded by count and bytes),
//! runs the jobs one after another in one [`Txn`], and hands the group to the committer thread,
//! which commits it atomically — synced to disk (fdatasync) within the commit when any job asked
//! for durability, so the group becomes visible only once it is durable — publishes its catalog
//! and operation times, and acknowledges every job. Many concurrent clients thus share one sync:
//! durability and throughput together.
//!
//! # Two groups at once
//!
//! While the committer commits a group, the writer runs the next one's jobs, so the core has work
//! while the sync waits for the disk. The next group reads the snapshot with the writes of the
//! group being committed laid over it ([`crate::storage::StoreSnapshot::overlaid`]): it sees what
//! it would see had the group before it been committed already, and no other reader sees either
//! group before it is committed. The next group stays open, taking queued jobs, until the committer
//! has the outcome, and is handed over only then: one group commits at a time, in order, and one is
//! prepared beside it. A group whose earlier group failed to commit fails with the same error (it
//! read writes that do not exist; after a failure that left the earlier group's fate unknown, with
//! the read-only error, as it was surely not applied), and the catalog goes back to before the
//! failed group. The operation log's size bound is checked against the committed groups' size, so
//! the log may pass it by the writes of the group in flight until the next group truncates it.
//!
//! # Storage failures
//!
//! A commit refused before anything of it was applied (a full disk, an I/O error) fails every job
//! of its group, and of the group prepared on it, and rolls back their catalog changes; nothing of
//! either is visible, and the next group tries again. A failure after which the group's fate is
//! unknown (the journal write or sync failed: the batch may be durable, or visible) puts the writer
//! in read-only mode, as PostgreSQL stops after a failed fsync: the group's jobs get an error
//! saying their outcome is unknown, every later write is refused with `IllegalOperation` until a
//! restart (which recovers from the journal), and reads keep working. Both are logged at error
//! level and counted in [`WriterStats`] (`serverStatus.writer`).
//!
//! A failed background flush or compaction stops the on-disk engine without touching the
//! journal ([`crate::storage::fjall_recovery`]): the group that meets it is refused whole, as
//! a full disk is. Before running the next group, with no group in flight, the writer reopens
//! the engine: it closes every open cursor (the reopen needs every snapshot released), then
//! reopens from the journal, waiting at most [`REOPEN_WAIT`] for the readers left; if that
//! fails (no room yet, a reader still busy) the group is refused with the reason and the next
//! one tries again.

mod commit_time;
pub mod locks;
pub mod pacing;
mod timing;
pub mod transaction;
pub mod txn;

use crate::clock::{Clock, Stopwatch};
use crate::engine::catalog::Catalog;
use crate::engine::oplog::entries as oplog;
use crate::engine::oplog::optime::OpClock;
use crate::engine::oplog::state::{GroupLog, OplogState};
use crate::engine::published::Published;
use crate::engine::writer::txn::Txn;
use crate::error::{Error, ErrorCode, Result};
use crate::storage::handle::Db;
use crate::storage::overlay::Overlay;
use crate::storage::{Backend, Durability, StorageError, WriteBatch};
use bson::Timestamp;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// Jobs drained into one group at most.
const MAX_GROUP_JOBS: usize = 4096;
/// Pending bytes after which a group stops taking jobs.
const MAX_GROUP_BYTES: usize = 64 * 1024 * 1024;
/// Queued jobs before submitters wait (backpressure).
const QUEUE_DEPTH: usize = 8192;
/// How long a reopen of the stopped engine waits for running reads to release its snapshots.
pub const REOPEN_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Releases what holds snapshots and can be released (open cursors) before a reopen.
pub(in crate::engine) type ReleaseSnapshots = Box<dyn Fn() + Send>;

/// Called once the group's commit (and, for durable jobs, its sync) has finished.
type Completion = Box<dyn FnOnce(Result<()>) + Send>;
type Job = Box<dyn FnOnce(&mut Txn<'_>) -> Completion + Send>;

pub(in crate::engine) struct Submission {
    job: Job,
    durable: bool,
    joins: Joins,
    /// Since the job was queued.
    queued: Stopwatch,
}

/// Which commit group a job may join.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Joins {
    /// The group being built when the writer takes it.
    Any,
    /// Only as a group's first job: a batch of a multi-document statement. A group's jobs are
    /// acknowledged together once it is committed, so a batch taken into a group behind a
    /// client's single write would make that write wait for the batch's job and its memtable
    /// inserts too; starting a group of its own, the batch lets the writes queued before it
    /// commit first, as mongod's yield between batches lets them run.
    First,
}

/// Whether a job that joins as `joins` is taken into a group that already holds `jobs` jobs.
fn takes(jobs: usize, joins: Joins) -> bool {
    jobs == 0 || joins == Joins::Any
}

/// Handle for submitting jobs; cheap to clone.
#[derive(Clone)]
pub struct Writer {
    queue: mpsc::Sender<Submission>,
}

/// Counters of the writer's work and its storage failures, for `serverStatus`.
#[derive(Debug, Default)]
pub struct WriterStats {
    pub groups: std::sync::atomic::AtomicU64,
    pub jobs: std::sync::atomic::AtomicU64,
    pub syncs: std::sync::atomic::AtomicU64,
    /// Groups whose commit failed, whatever the cause.
    pub failed_commits: std::sync::atomic::AtomicU64,
    /// Groups refused because the disk was full.
    pub out_of_space: std::sync::atomic::AtomicU64,
    /// How long each durable group's commit took, its sync included.
    pub sync_latency: crate::latency::Latency,
    /// Why the writer refuses writes, once a storage failure left a group's fate unknown.
    read_only: Mutex<Option<String>>,
    /// The last commit failure, for `serverStatus`.
    last_error: Mutex<Option<String>>,
}

/// The names of the writer's status locks ([`crate::sync`]); each holds one value assigned
/// whole, so a poisoned one is taken as it is.
const READ_ONLY_LOCK: &str = "writer read-only reason";
const LAST_ERROR_LOCK: &str = "writer last error";

impl WriterStats {
    /// Why writes are refused, or `None` while the writer takes them.
    pub fn read_only_reason(&self) -> Option<String> {
        crate::sync::lock_recovering(&self.read_only, READ_ONLY_LOCK).clone()
    }

    /// The last commit failure's message.
    pub fn last_error(&self) -> Option<String> {
        crate::sync::lock_recovering(&self.last_error, LAST_ERROR_LOCK).clone()
    }

    fn enter_read_only(&self, reason: String) {
        crate::sync::lock_recovering(&self.read_only, READ_ONLY_LOCK).get_or_insert(reason);
    }

    /// The error a failed commit gives its jobs; a failure that leaves the group's fate unknown
    /// makes the writer read-only.
    fn commit_failed(&self, error: StorageError) -> Error {
        use std::sync::atomic::Ordering::Relaxed;
        self.failed_commits.fetch_add(1, Relaxed);
        *crate::sync::lock_recovering(&self.last_error, LAST_ERROR_LOCK) = Some(error.to_string());
        if error.outcome_unknown() {
            tracing::error!(
                error = %error,
                "storage failure after a commit began; refusing writes until restarted"
            );
            self.enter_read_only(error.to_string());
            return Error::internal(format!(
                "{error}; this write may or may not have been applied (it may be present after \
                 a restart), and the server refuses writes until it is restarted"
            ));
        }
        if error.is_out_of_space() {
            self.out_of_space.fetch_add(1, Relaxed);
        }
        tracing::error!(error = %error, "commit failed; the group's writes are rolled back");
        Error::from(error)
    }
}

/// The error every write gets while the writer is read-only.
fn read_only_error(reason: &str) -> Error {
    Error::new(
        ErrorCode::IllegalOperation,
        format!(
            "the server is read-only after a storage failure ({reason}); restart it to accept \
             writes"
        ),
    )
}

impl Writer {
    /// Starts the writer thread. It stops when every `Writer` handle is dropped.
    pub(in crate::engine) fn start(
        backend: Arc<Db>,
        catalog: Catalog,
        published: Arc<Published>,
        stats: Arc<WriterStats>,
        clocks: Clocks,
        release: ReleaseSnapshots,
    ) -> Result<(Writer, std::thread::JoinHandle<()>)> {
        let (queue, receiver) = mpsc::channel(QUEUE_DEPTH);
        let thread = std::thread::Builder::new()
            .name("mayfly-writer".into())
            .spawn(move || {
                let ends = Ends { receiver, release };
                run(backend, catalog, published, stats, clocks, ends)
            })
            .map_err(|e| Error::internal(format!("cannot start the writer thread: {e}")))?;
        Ok((Writer { queue }, thread))
    }

    /// Whether jobs are waiting for the writer (clients are busy).
    pub fn has_queued_jobs(&self) -> bool {
        self.queue.capacity() < self.queue.max_capacity()
    }

    /// A handle on an existing queue (used to close the real one on shutdown).
    pub(in crate::engine) fn from_sender(queue: mpsc::Sender<Submission>) -> Writer {
        Writer { queue }
    }

    /// Runs `job` in the next commit group and returns its result once the group is committed
    /// (and synced to disk when `durable`).
    pub async fn run<R, F>(&self, durable: bool, job: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut Txn<'_>) -> R + Send + 'static,
    {
        self.run_joining(Joins::Any, durable, job).await
    }

    /// [`Writer::run`] for a job that joins a group as `joins` says.
    pub async fn run_joining<R, F>(&self, joins: Joins, durable: bool, job: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut Txn<'_>) -> R + Send + 'static,
    {
        let (tx, rx) = oneshot::channel::<Result<R>>();
        let job: Job = Box::new(move |txn| {
            let value = job(txn);
            Box::new(move |committed: Result<()>| {
                let _ = tx.send(committed.map(|()| value));
            })
        });
        self.queue
            .send(Submission {
                job,
                durable,
                joins,
                queued: Stopwatch::start(),
            })
            .await
            .map_err(|_| Error::internal("the storage engine is shut down"))?;
        rx.await
            .map_err(|_| Error::internal("the storage engine stopped before committing"))?
    }
}

/// The clocks a group is stamped with: wall time, and the operation times it issues.
pub(in crate::engine) struct Clocks {
    pub wall: Arc<dyn Clock>,
    pub optimes: Arc<OpClock>,
    /// The operation log the groups write, when it is kept.
    pub oplog: Arc<OplogState>,
}

/// The writer thread's inputs beside the engine's state: its queue, and the release of open
/// cursors before a reopen.
struct Ends {
    receiver: mpsc::Receiver<Submission>,
    release: ReleaseSnapshots,
}

fn run(
    backend: Arc<Db>,
    mut catalog: Catalog,
    published: Arc<Published>,
    stats: Arc<WriterStats>,
    clocks: Clocks,
    ends: Ends,
) {
    use std::sync::atomic::Ordering::Relaxed;
    let Ends {
        mut receiver,
        release,
    } = ends;
    let usage = Arc::clone(published.index_usage());
    let ttl_activity = Arc::clone(published.ttl_activity());
    let (handoffs, outcomes, committer) =
        match Committer::start(Arc::clone(&backend), published, Arc::clone(&stats), &clocks) {
            Ok(started) => started,
            Err(error) => {
                tracing::error!(error = %error, "cannot start the committer; refusing writes");
                stats.enter_read_only(error.to_string());
                return;
            }
        };
    // The group being committed while the next one runs, reading its writes.
    let mut in_flight: Option<InFlight> = None;
    // A job dequeued that may not join the group it would have joined: the next group's first.
    let mut carried: Option<Submission> = None;
    loop {
        let Some(first) = carried.take().or_else(|| receiver.blocking_recv()) else {
            break;
        };
        if in_flight.is_some() {
            if let Ok(outcome) = outcomes.try_recv() {
                // Its jobs have their answer from the committer.
                let _ = settle(&mut in_flight, outcome, &mut catalog);
            }
        }
        let reopen_failed = if backend.inner().halted() {
            // Nothing in flight may read the engine being closed.
            if in_flight.is_some() {
                let outcome = outcomes.recv().unwrap_or_else(|_| Err(committer_gone()));
                let _ = settle(&mut in_flight, outcome, &mut catalog);
            }
            release();
            backend
                .inner()
                .reopen(REOPEN_WAIT)
                .err()
                .map(|e| stats.commit_failed(e))
        } else {
            None
        };
        let before = catalog.clone();
        let snapshot = match &in_flight {
            // Until its commit returns, the snapshot may or may not hold the group being
            // committed; with its writes over it, it reads the same either way.
            Some(earlier) => backend.snapshot().overlaid(Arc::clone(&earlier.writes)),
            None => backend.snapshot(),
        };
        let wall_millis = clocks.wall.now_millis();
        let mut txn = Txn::new(&snapshot, &mut catalog)
            .with_op_clock(&clocks.optimes, wall_millis, &clocks.oplog)
            .with_index_usage(&usage)
            .with_ttl_activity(&ttl_activity);
        let mut durable_acks = Vec::new();
        let mut quick_acks = Vec::new();
        // The earlier group's outcome, once this group has waited for it.
        let mut earlier_outcome = None;
        let mut next = Some(first);
        let mut timing = timing::GroupTiming::open();
        while let Some(submission) = next.take() {
            let queued = submission.queued.elapsed();
            let started = Stopwatch::start();
            let completion = (submission.job)(&mut txn);
            timing.job(queued, started.elapsed());
            if submission.durable {
                durable_acks.push(completion);
            } else {
                quick_acks.push(completion);
            }
            if durable_acks.len() + quick_acks.len() >= MAX_GROUP_JOBS
                || txn.pending_bytes() >= MAX_GROUP_BYTES
            {
                break;
            }
            next = receiver.try_recv().ok();
            if next.is_none() && in_flight.is_some() && earlier_outcome.is_none() {
                // Nothing queued: the group stays open until the committer is free, taking
                // what arrived while it waited.
                let waiting = Stopwatch::start();
                earlier_outcome = Some(outcomes.recv().unwrap_or_else(|_| Err(committer_gone())));
                timing.earlier += waiting.elapsed();
                next = receiver.try_recv().ok();
            }
            let jobs = durable_acks.len() + quick_acks.len();
            carried = next.take_if(|submission| !takes(jobs, submission.joins));
        }
        let mut logged = txn.logged();
        let truncated = match logged.first_added {
            Some(first) => oplog::truncate(&mut txn, &clocks.oplog, first),
            None => Ok(()),
        };
        logged = txn.logged();
        let mut optime = txn.last_optime();
        let finished = truncated.and_then(|()| txn.finish_writes());
        stats.groups.fetch_add(1, Relaxed);
        stats
            .jobs
            .fetch_add((durable_acks.len() + quick_acks.len()) as u64, Relaxed);
        // This group read the earlier group's writes: it stands or falls with them.
        if in_flight.is_some() {
            let outcome = match earlier_outcome {
                Some(outcome) => outcome,
                None => {
                    let waiting = Stopwatch::start();
                    let outcome = outcomes.recv().unwrap_or_else(|_| Err(committer_gone()));
                    timing.earlier += waiting.elapsed();
                    outcome
                }
            };
            if let Err(error) = settle(&mut in_flight, outcome, &mut catalog) {
                // Not applied, whatever became of the earlier group: after a failure that
                // left that group's fate unknown, the server is read-only, and says so.
                let error = match stats.read_only_reason() {
                    Some(reason) => read_only_error(&reason),
                    None => error,
                };
                for ack in quick_acks.into_iter().chain(durable_acks) {
                    ack(Err(error.clone()));
                }
                continue;
            }
        }
        // The stopped engine could not be reopened: refused whole, nothing of it applied.
        let finished = match reopen_failed {
            Some(error) => Err(error),
            None => finished,
        };
        let (writes, catalog_changed) = match finished {
            Ok(finished) => finished,
            Err(error) => {
                catalog = before;
                for ack in quick_acks.into_iter().chain(durable_acks) {
                    ack(Err(error.clone()));
                }
                continue;
            }
        };
        if optime.is_none() && !writes.is_empty() {
            // A change the operation log does not describe still moves the clock on.
            optime = Some(clocks.optimes.issue(wall_millis.div_euclid(1000)));
        }
        let writes = Arc::new(writes);
        let group = Group {
            batch: WriteBatch::of_group(Arc::clone(&writes)),
            // A durable group is synced within its commit, so it is visible only once durable.
            durability: if durable_acks.is_empty() {
                Durability::Buffered
            } else {
                Durability::SyncData
            },
            logged,
            optime: optime.map(|time| (time, wall_millis)),
            catalog: catalog_changed.then(|| Arc::new(catalog.clone())),
            acks: quick_acks.into_iter().chain(durable_acks).collect(),
            timing,
        };
        if let Err(unsent) = handoffs.send(group) {
            catalog = before;
            for ack in unsent.0.acks {
                ack(Err(committer_gone()));
            }
            continue;
        }
        in_flight = Some(InFlight { writes, before });
    }
    // The queue is closed: let the committer finish the last group, then stop it.
    drop(handoffs);
    if committer.join().is_err() {
        tracing::error!("the committer thread panicked");
    }
}

/// A group handed to the committer, and its catalog before it, to go back to if it fails.
struct InFlight {
    writes: Arc<Overlay>,
    before: Catalog,
}

/// Takes in the outcome of the group in flight: a failed group's catalog changes are rolled
/// back (and with them those of the group that read it, which then fails too).
fn settle(
    in_flight: &mut Option<InFlight>,
    outcome: Result<()>,
    catalog: &mut Catalog,
) -> Result<()> {
    let earlier = in_flight.take();
    if outcome.is_err() {
        if let Some(earlier) = earlier {
            *catalog = earlier.before;
        }
    }
    outcome
}

fn committer_gone() -> Error {
    Error::internal("the storage engine's committer stopped")
}

/// A finished group on its way to the committer: its writes and what follows their commit.
struct Group {
    batch: WriteBatch,
    durability: Durability,
    logged: GroupLog,
    /// The group's last operation time and its wall time, published once it is committed.
    optime: Option<(Timestamp, i64)>,
    /// The catalog as this group left it, when it changed it.
    catalog: Option<Arc<Catalog>>,
    acks: Vec<Completion>,
    timing: timing::GroupTiming,
}

/// The committer thread: commits each group the writer hands it (syncing it when durable),
/// publishes what it changed, acknowledges its jobs, and tells the writer the outcome. While it
/// commits one group, the writer runs the next group's jobs.
struct Committer {
    backend: Arc<Db>,
    published: Arc<Published>,
    stats: Arc<WriterStats>,
    optimes: Arc<OpClock>,
    oplog: Arc<OplogState>,
}

type Started = (
    std::sync::mpsc::SyncSender<Group>,
    std::sync::mpsc::Receiver<Result<()>>,
    std::thread::JoinHandle<()>,
);

impl Committer {
    fn start(
        backend: Arc<Db>,
        published: Arc<Published>,
        stats: Arc<WriterStats>,
        clocks: &Clocks,
    ) -> Result<Started> {
        let committer = Committer {
            backend,
            published,
            stats,
            optimes: Arc::clone(&clocks.optimes),
            oplog: Arc::clone(&clocks.oplog),
        };
        // The writer hands over a group only once the one before it is settled.
        let (handoffs, groups) = std::sync::mpsc::sync_channel::<Group>(1);
        let (outcomes, settled) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("mayfly-commit".into())
            .spawn(move || {
                for group in groups {
                    let (outcome, acks) = committer.commit(group);
                    // The writer learns the outcome first: it waits for it to hand over the
                    // next group.
                    let told = outcomes.send(outcome.clone());
                    for ack in acks {
                        ack(outcome.clone());
                    }
                    if told.is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| Error::internal(format!("cannot start the committer thread: {e}")))?;
        Ok((handoffs, settled, thread))
    }

    /// Commits `group` and publishes what it changed; returns the outcome and the jobs to
    /// acknowledge with it.
    fn commit(&self, group: Group) -> (Result<()>, Vec<Completion>) {
        use std::sync::atomic::Ordering::Relaxed;
        let stats = &self.stats;
        let committed = match stats.read_only_reason() {
            Some(reason) => Err(read_only_error(&reason)),
            None => {
                let durability = group.durability;
                if durability == Durability::SyncData {
                    stats.syncs.fetch_add(1, Relaxed);
                }
                let started = Stopwatch::start();
                let writes = group.batch.len();
                let result = if group.batch.is_empty() {
                    // Nothing new, but an earlier buffered group may not be on disk yet.
                    match durability {
                        Durability::SyncData => self.backend.persist(durability),
                        Durability::Buffered => Ok(()),
                    }
                } else {
                    self.backend.commit(group.batch, durability)
                };
                let took = started.elapsed();
                if durability == Durability::SyncData {
                    stats.sync_latency.observe(took);
                }
                group
                    .timing
                    .report(took, durability == Durability::SyncData, writes);
                result.map_err(|e| stats.commit_failed(e))
            }
        };
        if committed.is_ok() {
            self.oplog.committed(&group.logged);
            if let Some((time, wall_millis)) = group.optime {
                self.optimes.publish(time, wall_millis);
            }
            if let Some(catalog) = group.catalog {
                // The commit is durable: publish its catalog even on a poisoned lock.
                self.published.publish(catalog);
            }
        }
        (committed, group.acks)
    }
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
