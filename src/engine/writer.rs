//! The group-commit writer: one thread through which every write of every connection goes.
//!
//! It takes the first queued job, drains whatever else is queued (bounded by count and bytes),
//! runs the jobs one after another in one [`Txn`], commits the group atomically, acknowledges the
//! jobs that did not ask for durability, syncs the journal (fdatasync) once, and acknowledges the
//! rest. Many concurrent clients thus share one sync: durability and throughput together.
//! A failed commit fails every job of its group and rolls back its catalog changes.

use super::catalog::Catalog;
use super::txn::Txn;
use super::Db;
use crate::error::{Error, Result};
use crate::storage::{Backend, Durability};
use std::sync::{Arc, RwLock};
use tokio::sync::{mpsc, oneshot};

/// Jobs drained into one group at most.
const MAX_GROUP_JOBS: usize = 4096;
/// Pending bytes after which a group stops taking jobs.
const MAX_GROUP_BYTES: usize = 64 * 1024 * 1024;
/// Queued jobs before submitters wait (backpressure).
const QUEUE_DEPTH: usize = 8192;

/// Called once the group's commit (and, for durable jobs, its sync) has finished.
type Completion = Box<dyn FnOnce(Result<()>) + Send>;
type Job = Box<dyn FnOnce(&mut Txn<'_>) -> Completion + Send>;

pub(super) struct Submission {
    job: Job,
    durable: bool,
}

/// Handle for submitting jobs; cheap to clone.
#[derive(Clone)]
pub struct Writer {
    queue: mpsc::Sender<Submission>,
}

/// Counters of the writer's work, for `serverStatus`.
#[derive(Debug, Default)]
pub struct WriterStats {
    pub groups: std::sync::atomic::AtomicU64,
    pub jobs: std::sync::atomic::AtomicU64,
    pub syncs: std::sync::atomic::AtomicU64,
}

impl Writer {
    /// Starts the writer thread. It stops when every `Writer` handle is dropped.
    pub(super) fn start(
        backend: Arc<Db>,
        catalog: Catalog,
        published: Arc<RwLock<Arc<Catalog>>>,
        stats: Arc<WriterStats>,
    ) -> Result<(Writer, std::thread::JoinHandle<()>)> {
        let (queue, receiver) = mpsc::channel(QUEUE_DEPTH);
        let thread = std::thread::Builder::new()
            .name("mayfly-writer".into())
            .spawn(move || run(backend, catalog, published, stats, receiver))
            .map_err(|e| Error::internal(format!("cannot start the writer thread: {e}")))?;
        Ok((Writer { queue }, thread))
    }

    /// Whether jobs are waiting for the writer (clients are busy).
    pub fn has_queued_jobs(&self) -> bool {
        self.queue.capacity() < self.queue.max_capacity()
    }

    /// A handle on an existing queue (used to close the real one on shutdown).
    pub(super) fn from_sender(queue: mpsc::Sender<Submission>) -> Writer {
        Writer { queue }
    }

    /// Runs `job` in the next commit group and returns its result once the group is committed
    /// (and synced to disk when `durable`).
    pub async fn run<R, F>(&self, durable: bool, job: F) -> Result<R>
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
            .send(Submission { job, durable })
            .await
            .map_err(|_| Error::internal("the storage engine is shut down"))?;
        rx.await
            .map_err(|_| Error::internal("the storage engine stopped before committing"))?
    }
}

fn run(
    backend: Arc<Db>,
    mut catalog: Catalog,
    published: Arc<RwLock<Arc<Catalog>>>,
    stats: Arc<WriterStats>,
    mut receiver: mpsc::Receiver<Submission>,
) {
    use std::sync::atomic::Ordering::Relaxed;
    while let Some(first) = receiver.blocking_recv() {
        let before = catalog.clone();
        let snapshot = backend.snapshot();
        let mut txn = Txn::new(&snapshot, &mut catalog);
        let mut durable_acks = Vec::new();
        let mut quick_acks = Vec::new();
        let mut next = Some(first);
        while let Some(submission) = next.take() {
            let completion = (submission.job)(&mut txn);
            if submission.durable {
                durable_acks.push(completion);
            } else {
                quick_acks.push(completion);
            }
            if durable_acks.len() + quick_acks.len() < MAX_GROUP_JOBS
                && txn.pending_bytes() < MAX_GROUP_BYTES
            {
                next = receiver.try_recv().ok();
            }
        }
        let finished = txn.finish();
        stats.groups.fetch_add(1, Relaxed);
        stats
            .jobs
            .fetch_add((durable_acks.len() + quick_acks.len()) as u64, Relaxed);
        let mut catalog_changed = false;
        let committed = finished.and_then(|(batch, changed)| {
            catalog_changed = changed;
            if batch.is_empty() {
                Ok(())
            } else {
                backend
                    .commit(batch, Durability::Buffered)
                    .map_err(Error::from)
            }
        });
        if let Err(e) = &committed {
            tracing::error!(error = %e, "commit failed; the group's writes are rolled back");
            catalog = before;
        } else if catalog_changed {
            if let Ok(mut slot) = published.write() {
                *slot = Arc::new(catalog.clone());
            }
        }
        for ack in quick_acks {
            ack(committed.clone());
        }
        if durable_acks.is_empty() {
            continue;
        }
        let synced = committed.and_then(|()| {
            stats.syncs.fetch_add(1, Relaxed);
            backend.persist(Durability::SyncData).map_err(|e| {
                tracing::error!(error = %e, "journal sync failed");
                Error::from(e)
            })
        });
        for ack in durable_acks {
            ack(synced.clone());
        }
    }
}
