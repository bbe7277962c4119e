//! Multi-document transactions as sessions see them: which transaction number each session is
//! at and in what state, the commands that start, continue, commit and abort one, and the
//! lifetime limit.
//!
//! A statement (`autocommit: false`) with `startTransaction: true` starts transaction `N` on its
//! session (aborting any older one); later statements continue it; `commitTransaction` submits
//! its writes to the writer in one job, with a record in `config.transactions` (`state:
//! "committed"`) so that a commit retried after a restart still succeeds. Any error in a
//! statement aborts the transaction, as on mongod, and a write error becomes the command's
//! error. A transaction open longer than `transactionLifetimeLimitSeconds` is aborted by a
//! background task. The table is in memory: a transaction not committed before a restart is
//! gone, as on mongod.
//!
//! Owns: the states, their errors and labels. Does not own the transaction's data or conflicts
//! (`engine::transaction`), nor the session fields' parsing (`operation_session`).

use super::super::args::durable;
use super::super::{CommandName, Reply, Request, Shared};
use super::operation_session::TransactionStatement;
use super::session_id::SessionId;
use crate::clock::Stopwatch;
use crate::engine::{ddl, documents::collection, ReadView, Transaction, Txn};
use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Bson, Document};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

/// An open transaction, shared by the statement running in it and the table.
pub type TransactionHandle = Arc<Mutex<Option<Transaction>>>;

const TRANSIENT: &str = "TransientTransactionError";
const UNKNOWN_COMMIT: &str = "UnknownTransactionCommitResult";

enum State {
    /// Open; the handle is empty once the lifetime limit aborted it.
    InProgress(TransactionHandle),
    /// Its commit is in the writer's hands; it ends `Committed` or `Aborted`.
    Committing,
    Committed,
    Aborted,
}

struct Entry {
    number: i64,
    state: State,
    /// The namespace of its first statement that named a collection, where a profile keeps
    /// a transaction to one collection ([`TransactionTable::claim_namespace`]).
    namespace: Option<String>,
    /// Monotonic: the lifetime limit is real time, whatever the server clock says.
    started: Stopwatch,
}

/// The transactions of every session.
#[derive(Default)]
pub struct TransactionTable {
    sessions: Mutex<HashMap<SessionId, Entry>>,
    reaper_started: AtomicBool,
}

/// The names the table's and the transactions' locks are logged and counted under. Both guard
/// state changed in several steps (a session's number and state; a transaction's pending
/// writes mid-statement): a poisoned one fails the command.
const TABLE: &str = "transaction table";
const TRANSACTION: &str = "transaction";

impl TransactionTable {
    fn sessions(&self) -> Result<MutexGuard<'_, HashMap<SessionId, Entry>>> {
        Ok(crate::sync::lock(&self.sessions, TABLE)?)
    }
}

/// An open transaction's slot.
fn slot(handle: &TransactionHandle) -> Result<MutexGuard<'_, Option<Transaction>>> {
    Ok(crate::sync::lock(handle, TRANSACTION)?)
}

fn aborted(number: i64) -> Error {
    Error::new(
        ErrorCode::NoSuchTransaction,
        format!("Transaction with {{ txnNumber: {number} }} has been aborted."),
    )
}

fn committed(number: i64) -> Error {
    Error::new(
        ErrorCode::TransactionCommitted,
        format!("Transaction with {{ txnNumber: {number} }} has been committed."),
    )
}

fn no_such(number: i64, active: i64) -> Error {
    Error::new(
        ErrorCode::NoSuchTransaction,
        format!(
            "Given transaction number {number} does not match any in-progress transactions. The \
             active transaction number is {active}"
        ),
    )
}

impl TransactionTable {
    /// The transaction statement `statement` of `session` runs in: started here when it says
    /// so. Refuses a number older than the session's, a restart of the current number, and a
    /// statement of a transaction that is not in progress.
    fn enter(
        &self,
        shared: &Shared,
        session: SessionId,
        statement: TransactionStatement,
    ) -> Result<TransactionHandle> {
        let mut sessions = self.sessions()?;
        let number = statement.number;
        if let Some(entry) = sessions.get(&session) {
            if number < entry.number {
                return Err(Error::new(
                    ErrorCode::TransactionTooOld,
                    format!(
                        "Cannot start transaction {number} on session {session} because a newer \
                         transaction {} has already started.",
                        entry.number
                    ),
                ));
            }
            if number == entry.number {
                if statement.start {
                    return Err(Error::new(
                        ErrorCode::ConflictingOperationInProgress,
                        "Only servers in a sharded cluster can start a new transaction at the \
                         active transaction number",
                    ));
                }
                return match &entry.state {
                    State::InProgress(handle) => Ok(Arc::clone(handle)),
                    State::Committing | State::Committed => Err(committed(number)),
                    State::Aborted => Err(aborted(number)),
                };
            }
        }
        if !statement.start {
            let active = sessions.get(&session).map_or(-1, |e| e.number);
            return Err(no_such(number, active));
        }
        // A newer number aborts whatever the session had open.
        let handle: TransactionHandle =
            Arc::new(Mutex::new(Some(shared.engine.begin_transaction()?)));
        sessions.insert(
            session,
            Entry {
                number,
                state: State::InProgress(Arc::clone(&handle)),
                namespace: None,
                started: Stopwatch::start(),
            },
        );
        Ok(handle)
    }

    /// Aborts `session`'s transaction `number` if it is in progress.
    fn abort(&self, session: SessionId, number: i64) -> Result<()> {
        let mut sessions = self.sessions()?;
        if let Some(entry) = sessions.get_mut(&session) {
            if entry.number == number {
                end(&mut entry.state);
            }
        }
        Ok(())
    }

    /// Records that `session`'s transaction `number` runs a statement on `namespace`; returns
    /// the namespace of its earlier statements when that is another one.
    pub fn claim_namespace(
        &self,
        session: SessionId,
        number: i64,
        namespace: &str,
    ) -> Result<Option<String>> {
        let mut sessions = self.sessions()?;
        let Some(entry) = sessions.get_mut(&session).filter(|e| e.number == number) else {
            return Ok(None);
        };
        Ok(match &entry.namespace {
            Some(first) if first != namespace => Some(first.clone()),
            Some(_) => None,
            None => {
                entry.namespace = Some(namespace.to_owned());
                None
            }
        })
    }

    /// A retryable write with a newer `txnNumber` ends the session's transaction, as on mongod.
    pub fn retryable_write(&self, session: SessionId, number: i64) -> Result<()> {
        let mut sessions = self.sessions()?;
        if sessions.get(&session).is_some_and(|e| e.number < number) {
            sessions.remove(&session);
        }
        Ok(())
    }

    /// Aborts the open transactions of the sessions `killed` selects (`killSessions` and
    /// its kin kill what runs in a session, its transaction included).
    pub fn abort_killed(&self, killed: &super::session_registry::Selector<'_>) -> Result<()> {
        for (id, entry) in self.sessions()?.iter_mut() {
            if killed.matches(id) {
                end(&mut entry.state);
            }
        }
        Ok(())
    }

    /// Forgets the transactions of sessions that ended, aborting open ones.
    pub fn end_sessions(&self, ended: &[SessionId]) -> Result<()> {
        let mut sessions = self.sessions()?;
        for session in ended {
            sessions.remove(session);
        }
        Ok(())
    }

    /// Aborts the transactions open for `limit` or longer; returns how many.
    fn abort_expired(&self, limit: Duration) -> Result<usize> {
        let mut expired = 0;
        for entry in self.sessions()?.values_mut() {
            if entry.started.elapsed() < limit {
                continue;
            }
            if end(&mut entry.state) {
                expired += 1;
            }
        }
        Ok(expired)
    }
}

/// Aborts an open transaction: the table lets go of it, and it is dropped (its pending writes
/// discarded, its document locks released) as soon as no statement holds it, without waiting
/// for one that runs now. Returns whether it was open.
fn end(state: &mut State) -> bool {
    if !matches!(state, State::InProgress(_)) {
        return false;
    }
    *state = State::Aborted;
    true
}

/// Takes the transaction out of its handle, waiting for a statement using it to end.
fn take(handle: &TransactionHandle) -> Result<Option<Transaction>> {
    Ok(slot(handle)?.take())
}

/// Starts, or finds, the transaction a statement runs in (`None`: not a transaction's
/// statement); a retryable write with a newer number ends the session's transaction.
pub fn enter(shared: &Arc<Shared>, req: &Request<'_>) -> Result<Option<TransactionHandle>> {
    let Some(session) = req.session.session else {
        return Ok(None);
    };
    let Some(statement) = req.session.transaction else {
        if let Some(number) = req.session.txn_number {
            shared.transactions.retryable_write(session, number)?;
        }
        return Ok(None);
    };
    ensure_reaper(shared);
    if matches!(
        req.name,
        CommandName::CommitTransaction | CommandName::AbortTransaction
    ) {
        // They look the transaction up themselves: a committed one may be committed again.
        return Ok(None);
    }
    shared
        .transactions
        .enter(shared, session, statement)
        .map(Some)
}

/// What a statement's outcome does to its transaction: an error (or a write error) aborts it,
/// and is returned as the command's error with mongod's labels.
pub fn finish(shared: &Shared, req: &Request<'_>, outcome: Result<Reply>) -> Result<Reply> {
    let (Some(session), Some(statement)) = (req.session.session, req.session.transaction) else {
        return outcome;
    };
    let outcome = outcome.and_then(write_error_fails_statement);
    if outcome.is_err() && !is_commit_or_abort(req.name) {
        // A table that cannot record the abort fails the command with that error: the
        // transaction may still look open.
        shared.transactions.abort(session, statement.number)?;
    }
    outcome
}

fn is_commit_or_abort(name: CommandName) -> bool {
    matches!(
        name,
        CommandName::CommitTransaction | CommandName::AbortTransaction
    )
}

/// In a transaction a write error fails the whole command (mongod rethrows it).
fn write_error_fails_statement(reply: Reply) -> Result<Reply> {
    let Reply::Document(doc) = &reply else {
        return Ok(reply);
    };
    let Ok(errors) = doc.get_array("writeErrors") else {
        return Ok(reply);
    };
    let Some(Bson::Document(first)) = errors.first() else {
        return Ok(reply);
    };
    let code = first.get_i32("code").unwrap_or(8);
    let mut error = Error::new(
        ErrorCode::from_code(code).unwrap_or(ErrorCode::UnknownError),
        first.get_str("errmsg").unwrap_or_default(),
    );
    let extra: Document = first
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "index" | "code" | "errmsg" | "codeName"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !extra.is_empty() {
        error = error.with_extra(extra);
    }
    Err(error)
}

/// The labels mongod gives an error of a transaction's command (`isTransientTransactionError`,
/// `isUnknownTransactionCommitResult`).
pub fn labels(name: CommandName, code: ErrorCode) -> Vec<&'static str> {
    // A commit's NoSuchTransaction is transient too: nothing of the transaction was applied.
    let transient = matches!(
        code,
        ErrorCode::WriteConflict
            | ErrorCode::LockTimeout
            | ErrorCode::NoSuchTransaction
            | ErrorCode::PreparedTransactionInProgress
            | ErrorCode::SnapshotUnavailable
    );
    let mut labels = Vec::new();
    if transient {
        labels.push(TRANSIENT);
    }
    if name == CommandName::CommitTransaction
        && matches!(
            code,
            ErrorCode::MaxTimeMSExpired
                | ErrorCode::ExceededTimeLimit
                | ErrorCode::InternalError
                | ErrorCode::InterruptedAtShutdown
        )
    {
        labels.push(UNKNOWN_COMMIT);
    }
    labels
}

/// The view a read runs on: the transaction's (its snapshot with its writes) or the last
/// commit's.
pub fn read_view(shared: &Shared, req: &Request<'_>) -> Result<ReadView> {
    match &req.transaction {
        Some(handle) => {
            let mut slot = slot(handle)?;
            let transaction = slot.as_mut().ok_or_else(|| lifetime_exceeded(req))?;
            transaction.read_view()
        }
        None => shared.engine.read(),
    }
}

/// Whether collection `db.name` existed when `req`'s transaction started.
pub fn existed_at_start(req: &Request<'_>, db: &str, name: &str) -> Result<bool> {
    let Some(handle) = &req.transaction else {
        return Ok(false);
    };
    let slot = slot(handle)?;
    let transaction = slot.as_ref().ok_or_else(|| lifetime_exceeded(req))?;
    Ok(transaction.existed_at_start(db, name))
}

fn lifetime_exceeded(req: &Request<'_>) -> Error {
    aborted(req.session.transaction.map_or(-1, |t| t.number))
}

/// Runs a write command's job: in the writer's next group, or as a statement of the
/// transaction the command belongs to (its writes stay pending until the commit).
pub async fn write<R, F>(shared: &Shared, req: &Request<'_>, durable: bool, job: F) -> Result<R>
where
    R: Send + 'static,
    F: FnOnce(&mut Txn<'_>, i64) -> R + Send + 'static,
{
    let Some(handle) = req.transaction.clone() else {
        return shared.engine.write(durable, job).await;
    };
    let number = req.session.transaction.map_or(-1, |t| t.number);
    tokio::task::spawn_blocking(move || {
        let mut slot = slot(&handle)?;
        let transaction = slot.as_mut().ok_or_else(|| aborted(number))?;
        transaction.write(job)
    })
    .await
    .map_err(|e| Error::internal(format!("a transaction's thread failed: {e}")))?
}

/// `commitTransaction`: commits the session's transaction (again, if it already committed).
///
/// The commit runs in a task of its own, so that it ends, and records how it ended, even when
/// the command that started it is interrupted (`maxTimeMS`, a closed connection): a commit the
/// client retries then waits for that outcome instead of guessing it.
pub async fn commit(shared: &Arc<Shared>, req: &Request<'_>) -> Result<Document> {
    let (session, number) = identity(req)?;
    let transaction = loop {
        match commit_step(shared, session, number)? {
            Step::Done => return Ok(doc! {"ok": 1.0}),
            Step::Wait => tokio::time::sleep(COMMITTING_POLL).await,
            Step::Commit(transaction) => break transaction,
            Step::Unknown(active) => {
                // After a restart only the durable record tells a committed transaction.
                if committed_before(shared, session, number).await? {
                    return Ok(doc! {"ok": 1.0});
                }
                return Err(no_such(number, active));
            }
        }
    };
    let durable = durable(req.body);
    let task_shared = Arc::clone(shared);
    let task = tokio::spawn(async move {
        let shared = task_shared;
        let result = if transaction.has_writes() {
            let fields = doc! {"lsid": session.to_document(), "txnNumber": number};
            let clock = Arc::clone(shared.engine.clock());
            shared
                .engine
                .write(durable, move |txn, now| {
                    transaction.apply(txn, now, &fields)?;
                    record_commit(txn, session, number, now, clock.now_datetime())
                })
                .await
                .and_then(|applied| applied)
        } else {
            Ok(())
        };
        let outcome = if result.is_ok() {
            State::Committed
        } else {
            State::Aborted
        };
        // On a poisoned table (counted and logged) the commit's own outcome still stands; a
        // retry, like every command that needs the table, then fails with the table's error.
        if let Ok(mut sessions) = shared.transactions.sessions() {
            if let Some(entry) = sessions.get_mut(&session) {
                if entry.number == number && matches!(entry.state, State::Committing) {
                    entry.state = outcome;
                }
            }
        }
        result
    });
    task.await
        .map_err(|e| Error::internal(format!("a commit's task failed: {e}")))??;
    Ok(doc! {"ok": 1.0})
}

/// How often a retried commit looks whether the first attempt has finished.
const COMMITTING_POLL: std::time::Duration = std::time::Duration::from_millis(2);

/// What a `commitTransaction` finds.
enum Step {
    /// Committed already.
    Done,
    /// An earlier attempt is committing it.
    Wait,
    /// This attempt commits it.
    Commit(Box<Transaction>),
    /// The session is not at this number (its number, or -1): perhaps from before a restart.
    Unknown(i64),
}

fn commit_step(shared: &Shared, session: SessionId, number: i64) -> Result<Step> {
    let mut sessions = shared.transactions.sessions()?;
    match sessions.get_mut(&session) {
        Some(entry) if entry.number == number => match &entry.state {
            State::Committed => Ok(Step::Done),
            State::Committing => Ok(Step::Wait),
            State::Aborted => Err(aborted(number)),
            State::InProgress(handle) => {
                // A statement panicked mid-way: what it left is never committed.
                let transaction = match take(handle) {
                    Ok(transaction) => transaction,
                    Err(e) => {
                        entry.state = State::Aborted;
                        return Err(e);
                    }
                };
                let Some(transaction) = transaction else {
                    entry.state = State::Aborted;
                    return Err(aborted(number));
                };
                entry.state = State::Committing;
                Ok(Step::Commit(Box::new(transaction)))
            }
        },
        Some(entry) if entry.number > number => Err(Error::new(
            ErrorCode::TransactionTooOld,
            format!(
                "Cannot start transaction {number} on session {session} because a newer \
                 transaction {} has already started.",
                entry.number
            ),
        )),
        other => Ok(Step::Unknown(other.map_or(-1, |e| e.number))),
    }
}

/// `abortTransaction`: aborts the session's transaction.
pub fn abort(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let (session, number) = identity(req)?;
    let mut sessions = shared.transactions.sessions()?;
    match sessions.get_mut(&session) {
        Some(entry) if entry.number == number => match &entry.state {
            State::InProgress(handle) => {
                let open = take(handle);
                // Aborted even when a statement panicked in it; the reply says so.
                entry.state = State::Aborted;
                let open = open?.is_some();
                if open {
                    Ok(doc! {"ok": 1.0})
                } else {
                    Err(aborted(number))
                }
            }
            State::Committing | State::Committed => Err(committed(number)),
            State::Aborted => Err(aborted(number)),
        },
        other => Err(no_such(number, other.map_or(-1, |e| e.number))),
    }
}

fn identity(req: &Request<'_>) -> Result<(SessionId, i64)> {
    match (req.session.session, req.session.transaction) {
        (Some(session), Some(statement)) => Ok((session, statement.number)),
        _ => Err(Error::new(
            ErrorCode::InvalidOptions,
            format!("{} must be run within a transaction", req.name.name()),
        )),
    }
}

const RECORDS_DB: &str = "config";
const RECORDS: &str = "transactions";

/// Records in `config.transactions`, in the commit itself, that the session committed
/// transaction `number` (mongod's session record, `state: "committed"`).
fn record_commit(
    txn: &mut Txn<'_>,
    session: SessionId,
    number: i64,
    now: i64,
    at: bson::DateTime,
) -> Result<()> {
    let id = Bson::Document(session.to_document());
    let record =
        doc! {"_id": id.clone(), "txnNum": number, "lastWriteDate": at, "state": "committed"};
    let (meta, _) = ddl::ensure_collection(txn, RECORDS_DB, RECORDS)?;
    match collection::get_by_id(txn, &meta, &id, now)? {
        Some(old) => collection::replace(txn, &meta, &old, &record, now),
        None => collection::insert(txn, &meta, &record, now),
    }
}

/// Whether the durable record says the session committed transaction `number`.
async fn committed_before(shared: &Shared, session: SessionId, number: i64) -> Result<bool> {
    let view = shared.engine.read()?;
    let Some(meta) = view.collection(RECORDS_DB, RECORDS) else {
        return Ok(false);
    };
    let key = doc! {"_id": session.to_document()};
    let record = tokio::task::spawn_blocking(move || view.get(&meta, &key))
        .await
        .map_err(|e| Error::internal(format!("a transaction's thread failed: {e}")))??;
    Ok(record.is_some_and(|r| {
        r.doc.get_i64("txnNum") == Ok(number) && r.doc.get_str("state") == Ok("committed")
    }))
}

/// How often open transactions are checked against the lifetime limit.
const REAP_EVERY: Duration = Duration::from_millis(500);

/// Starts, once per server, the task that aborts transactions open longer than the lifetime
/// limit; it stops when the server is gone.
fn ensure_reaper(shared: &Arc<Shared>) {
    if shared
        .transactions
        .reaper_started
        .swap(true, Ordering::AcqRel)
    {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        shared
            .transactions
            .reaper_started
            .store(false, Ordering::Release);
        return;
    };
    let weak: Weak<Shared> = Arc::downgrade(shared);
    runtime.spawn(async move {
        loop {
            tokio::time::sleep(REAP_EVERY).await;
            let Some(shared) = weak.upgrade() else {
                return;
            };
            let limit = lifetime_limit(&shared);
            // A poisoned table is counted and logged at each try, and fails every command that
            // needs it.
            let expired = shared.transactions.abort_expired(limit).unwrap_or(0);
            if expired > 0 {
                tracing::info!(
                    expired,
                    "aborted transactions open longer than transactionLifetimeLimitSeconds"
                );
            }
        }
    });
}

/// How long a transaction may stay open: `--transactionLifetimeLimitSeconds`, or Cosmos's
/// fixed 5 seconds in its profile.
fn lifetime_limit(shared: &Shared) -> Duration {
    if shared
        .config
        .profile
        .enforces(crate::profile::Rule::TransactionLimits)
    {
        return crate::profile::transactions::LIFETIME;
    }
    Duration::from_secs(shared.config.replication.transaction_lifetime_limit_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transaction_errors_get_mongods_labels() {
        let cases = [
            (
                CommandName::Insert,
                ErrorCode::WriteConflict,
                vec![TRANSIENT],
            ),
            (
                CommandName::Find,
                ErrorCode::NoSuchTransaction,
                vec![TRANSIENT],
            ),
            (
                CommandName::CommitTransaction,
                ErrorCode::NoSuchTransaction,
                vec![TRANSIENT],
            ),
            (
                CommandName::CommitTransaction,
                ErrorCode::MaxTimeMSExpired,
                vec![UNKNOWN_COMMIT],
            ),
            (CommandName::Insert, ErrorCode::DuplicateKey, vec![]),
            (
                CommandName::AbortTransaction,
                ErrorCode::TransactionCommitted,
                vec![],
            ),
        ];
        for (name, code, expected) in cases {
            assert_eq!(labels(name, code), expected, "{name:?} {code:?}");
        }
    }
}
