//! The logical sessions this server knows (mongod's logical session cache): per session its
//! owner, when it was last used, the cursors opened in it and the operations running in it.
//!
//! Every command carrying an `lsid` touches its session; a session idle longer than
//! `logicalSessionTimeoutMinutes` is expired by a background task (every 5 minutes by default,
//! as mongod's `logicalSessionRefreshMillis`), which kills its cursors. The registry is memory
//! only, as mongod's cache is between refreshes: what must survive a restart, a session's
//! retryable writes, is stored durably by `retryable`. Owns no cursor: it names them, and the
//! engine's cursor registry closes them.

use super::super::Shared;
use super::session_id::SessionId;
use crate::engine::{CursorRegistry, Interrupt, KillReason};
use crate::error::{Error, ErrorCode, Result};
use crate::pipeline::list_local_sessions::ListLocalSessions;
use bson::{doc, Bson, DateTime, Document};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;
use tokio::sync::Notify;

pub const LOGICAL_SESSION_TIMEOUT_MINUTES: i32 = 30;

/// mongod's `logicalSessionRefreshMillis`: how often idle sessions are looked for.
pub const DEFAULT_REAP_INTERVAL: Duration = Duration::from_secs(5 * 60);
/// mongod's `maxSessions`: sessions the cache holds at most.
pub const MAX_SESSIONS: usize = 1_000_000;

/// One session's state.
#[derive(Default)]
struct Entry {
    last_use_ms: i64,
    /// `user@db` of its owner, when authenticated.
    user: Option<String>,
    cursors: BTreeSet<i64>,
    /// The operations running in it now, by a registry-wide number.
    running: HashMap<u64, Arc<Interrupt>>,
}

#[derive(Default)]
struct State {
    sessions: HashMap<SessionId, Entry>,
    /// The session each open cursor was opened in; a cursor not here was opened outside one.
    cursor_owner: HashMap<i64, SessionId>,
    next_op: u64,
}

/// The server's sessions.
pub struct SessionRegistry {
    state: Mutex<State>,
    reap_interval_ms: AtomicU64,
    /// Wakes the reaper when its interval changes.
    wake: Arc<Notify>,
    reaper_started: AtomicBool,
}

impl Default for SessionRegistry {
    fn default() -> Self {
        SessionRegistry {
            state: Mutex::default(),
            reap_interval_ms: AtomicU64::new(DEFAULT_REAP_INTERVAL.as_millis() as u64),
            wake: Arc::new(Notify::new()),
            reaper_started: AtomicBool::new(false),
        }
    }
}

/// Keeps an operation listed in its session until dropped.
pub struct InSession<'a> {
    registry: &'a SessionRegistry,
    session: SessionId,
    op: u64,
}

impl Drop for InSession<'_> {
    fn drop(&mut self) {
        // On a poisoned registry (counted and logged) the operation stays listed: its session
        // is not expired, which every later command on the registry fails before mattering.
        if let Ok(mut state) = self.registry.state() {
            if let Some(entry) = state.sessions.get_mut(&self.session) {
                entry.running.remove(&self.op);
            }
        }
    }
}

/// Which sessions a kill or a listing applies to.
pub enum Selector<'a> {
    All,
    /// Sessions whose owner's `uid` is one of these.
    Owners(&'a [[u8; 32]]),
    /// These sessions.
    Ids(&'a [SessionId]),
}

impl Selector<'_> {
    pub fn matches(&self, id: &SessionId) -> bool {
        match self {
            Selector::All => true,
            Selector::Owners(uids) => uids.contains(&id.uid),
            Selector::Ids(ids) => ids.contains(id),
        }
    }
}

impl SessionRegistry {
    /// The sessions, their cursors and operations: several maps changed together, so a
    /// poisoned lock fails the caller (an empty registry would let any session continue any
    /// cursor, and take live sessions' retryable-write records for expired ones).
    fn state(&self) -> Result<MutexGuard<'_, State>> {
        Ok(crate::sync::lock(&self.state, "session registry")?)
    }

    /// Touches `session` (creating it if new) and lists an operation running in it until the
    /// guard is dropped.
    pub fn begin(
        &self,
        session: SessionId,
        user: Option<String>,
        now_ms: i64,
        interrupt: Arc<Interrupt>,
    ) -> Result<InSession<'_>> {
        let mut state = self.state()?;
        let op = state.next_op;
        state.next_op += 1;
        let entry = vivify(&mut state, session, user, now_ms)?;
        entry.running.insert(op, interrupt);
        Ok(InSession {
            registry: self,
            session,
            op,
        })
    }

    /// Touches `sessions` (`startSession`, `refreshSessions`).
    pub fn touch(&self, sessions: &[SessionId], user: Option<String>, now_ms: i64) -> Result<()> {
        let mut state = self.state()?;
        for session in sessions {
            vivify(&mut state, *session, user.clone(), now_ms)?;
        }
        Ok(())
    }

    /// Records that `cursor` was opened in `session`: only that session may continue it, and
    /// ending or killing the session closes it.
    pub fn adopt_cursor(&self, session: SessionId, cursor: i64) -> Result<()> {
        let mut state = self.state()?;
        if let Some(entry) = state.sessions.get_mut(&session) {
            entry.cursors.insert(cursor);
            state.cursor_owner.insert(cursor, session);
        }
        Ok(())
    }

    /// The session `cursor` was opened in, if any.
    pub fn cursor_owner(&self, cursor: i64) -> Result<Option<SessionId>> {
        Ok(self.state()?.cursor_owner.get(&cursor).copied())
    }

    /// Ends `sessions`: forgets them and closes their cursors (`endSessions`).
    pub fn end(&self, sessions: &[SessionId], cursors: &CursorRegistry) -> Result<()> {
        let mut state = self.state()?;
        for session in sessions {
            if let Some(entry) = state.sessions.remove(session) {
                close_cursors(&mut state, &entry, cursors);
            }
        }
        Ok(())
    }

    /// Kills the operations running in the selected sessions and closes their cursors
    /// (`killSessions`, `killAllSessions`); the sessions stay.
    pub fn kill(&self, selector: &Selector<'_>, cursors: &CursorRegistry) -> Result<()> {
        let mut state = self.state()?;
        let doomed: Vec<(Vec<Arc<Interrupt>>, BTreeSet<i64>)> = state
            .sessions
            .iter_mut()
            .filter(|(id, _)| selector.matches(id))
            .map(|(_, entry)| {
                let ops = entry.running.values().cloned().collect();
                (ops, std::mem::take(&mut entry.cursors))
            })
            .collect();
        for (ops, open) in doomed {
            for op in ops {
                op.kill(KillReason::Killed);
            }
            for cursor in open {
                state.cursor_owner.remove(&cursor);
                cursors.kill(cursor);
            }
        }
        Ok(())
    }

    /// Expires sessions idle for `timeout_ms` or longer with nothing running in them, closing
    /// their cursors, and forgets cursors that closed on their own. Returns how many expired.
    pub fn reap(&self, now_ms: i64, timeout_ms: i64, cursors: &CursorRegistry) -> Result<usize> {
        let mut state = self.state()?;
        let expired: Vec<SessionId> = state
            .sessions
            .iter()
            .filter(|(_, e)| e.running.is_empty() && now_ms - e.last_use_ms >= timeout_ms)
            .map(|(id, _)| *id)
            .collect();
        for id in &expired {
            if let Some(entry) = state.sessions.remove(id) {
                close_cursors(&mut state, &entry, cursors);
            }
        }
        let closed: Vec<(i64, SessionId)> = state
            .cursor_owner
            .iter()
            .filter(|(cursor, _)| cursors.namespace_of(**cursor).is_none())
            .map(|(c, s)| (*c, *s))
            .collect();
        for (cursor, session) in closed {
            state.cursor_owner.remove(&cursor);
            if let Some(entry) = state.sessions.get_mut(&session) {
                entry.cursors.remove(&cursor);
            }
        }
        Ok(expired.len())
    }

    /// The selected sessions as `$listLocalSessions` shows them, in session id order:
    /// `{_id: {id, uid}, lastUse, [user: {name}]}`.
    pub fn list(&self, selector: &Selector<'_>) -> Result<Vec<Document>> {
        let state = self.state()?;
        let mut ids: Vec<&SessionId> = state
            .sessions
            .keys()
            .filter(|id| selector.matches(id))
            .collect();
        ids.sort();
        Ok(ids
            .into_iter()
            .filter_map(|id| {
                let entry = state.sessions.get(id)?;
                let mut record = doc! {
                    "_id": id.to_document(),
                    "lastUse": DateTime::from_millis(entry.last_use_ms),
                };
                if let Some(user) = &entry.user {
                    record.insert("user", doc! {"name": user});
                }
                Some(record)
            })
            .collect())
    }

    /// The sessions in use.
    pub fn live(&self) -> Result<HashSet<SessionId>> {
        Ok(self.state()?.sessions.keys().copied().collect())
    }

    /// How many sessions are open (tests).
    pub fn len(&self) -> Result<usize> {
        Ok(self.state()?.sessions.len())
    }

    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// How often the reaper looks for idle sessions. Tests shorten it; the change applies at
    /// once.
    pub fn set_reap_interval(&self, every: Duration) {
        let millis = u64::try_from(every.as_millis()).unwrap_or(u64::MAX).max(1);
        self.reap_interval_ms.store(millis, Ordering::Relaxed);
        self.wake.notify_one();
    }

    fn reap_interval(&self) -> Duration {
        Duration::from_millis(self.reap_interval_ms.load(Ordering::Relaxed))
    }
}

/// The session, created if new; refused when the cache is full (mongod's 261).
fn vivify(
    state: &mut State,
    session: SessionId,
    user: Option<String>,
    now_ms: i64,
) -> Result<&mut Entry> {
    if !state.sessions.contains_key(&session) && state.sessions.len() >= MAX_SESSIONS {
        return Err(Error::new(
            ErrorCode::TooManyLogicalSessions,
            format!(
                "Unable to add session {session} into the cache because the number of active \
                 sessions is too high"
            ),
        ));
    }
    let entry = state.sessions.entry(session).or_default();
    entry.last_use_ms = entry.last_use_ms.max(now_ms);
    if entry.user.is_none() {
        entry.user = user;
    }
    Ok(entry)
}

fn close_cursors(state: &mut State, entry: &Entry, cursors: &CursorRegistry) {
    for cursor in &entry.cursors {
        state.cursor_owner.remove(cursor);
        cursors.kill(*cursor);
    }
}

/// Starts the task that expires idle sessions, once per server, on the current tokio runtime.
/// It holds the server only while it reaps, and stops when the server is gone.
pub fn ensure_reaper(shared: &Arc<Shared>) {
    if shared.sessions.reaper_started.swap(true, Ordering::AcqRel) {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        shared
            .sessions
            .reaper_started
            .store(false, Ordering::Release);
        return;
    };
    let weak: Weak<Shared> = Arc::downgrade(shared);
    let wake = Arc::clone(&shared.sessions.wake);
    runtime.spawn(async move {
        loop {
            let Some(every) = weak.upgrade().map(|s| s.sessions.reap_interval()) else {
                return;
            };
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = wake.notified() => continue,
            }
            let Some(shared) = weak.upgrade() else {
                return;
            };
            let timeout_ms = i64::from(LOGICAL_SESSION_TIMEOUT_MINUTES) * 60 * 1000;
            // A poisoned registry is counted and logged at each pass (`sync`); nothing is
            // expired or removed while the sessions in use cannot be known.
            let Ok(expired) = shared.sessions.reap(
                shared.clock.now_millis(),
                timeout_ms,
                &shared.engine.cursors,
            ) else {
                continue;
            };
            if expired > 0 {
                tracing::info!(expired, "expired idle logical sessions");
            }
            reap_retryable_records(&shared).await;
        }
    });
}

/// Removes the retryable-write records of sessions gone for longer than a record's lifetime,
/// in one writer job. A failure is logged and retried on the next pass.
async fn reap_retryable_records(shared: &Shared) {
    let Ok(live) = shared.sessions.live() else {
        return;
    };
    let clock = Arc::clone(shared.engine.clock());
    let job = shared.engine.write(true, move |txn, now| {
        let is_live =
            |id: &Document| SessionId::from_document(id).is_some_and(|id| live.contains(&id));
        super::retryable::reap_records(txn, now, clock.now_millis(), &is_live)
    });
    match job.await {
        Ok(Ok(0)) => {}
        Ok(Ok(removed)) => tracing::info!(removed, "removed expired retryable-write records"),
        Ok(Err(e)) | Err(e) => {
            tracing::error!(error = %e.message, "cannot remove expired retryable-write records")
        }
    }
}

/// The documents `$listLocalSessions` produces for `req`'s caller.
pub fn list_local(
    shared: &Shared,
    req: &super::super::Request<'_>,
    spec: &ListLocalSessions,
) -> Result<Vec<Document>> {
    match spec {
        ListLocalSessions::Own => shared
            .sessions
            .list(&Selector::Owners(&[req.session.caller])),
        ListLocalSessions::AllUsers => shared.sessions.list(&Selector::All),
        ListLocalSessions::Users(users) => {
            let uids: Vec<[u8; 32]> = users
                .iter()
                .map(|(user, db)| super::session_id::uid_of_name(user, db))
                .collect();
            shared.sessions.list(&Selector::Owners(&uids))
        }
    }
}

/// Notes the cursor a command run in `session` left open, from its reply
/// (`{cursor: {id, ...}}`).
pub fn adopt_reply_cursor(
    registry: &SessionRegistry,
    session: SessionId,
    reply: &super::super::Reply,
) -> Result<()> {
    let id = match reply {
        super::super::Reply::Document(d) => d
            .get_document("cursor")
            .ok()
            .and_then(|c| c.get("id").cloned()),
        super::super::Reply::Raw(r) => r
            .get_document("cursor")
            .ok()
            .and_then(|c| c.get_i64("id").ok())
            .map(Bson::Int64),
    };
    if let Some(Bson::Int64(id)) = id {
        if id != 0 {
            registry.adopt_cursor(session, id)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    fn id(n: u8) -> SessionId {
        SessionId {
            id: [n; 16],
            uid: [0; 32],
        }
    }

    #[test]
    fn an_idle_session_expires_with_its_cursors_and_a_busy_one_does_not() {
        let registry = SessionRegistry::default();
        let cursors = CursorRegistry::new(Arc::new(ManualClock::starting_at_secs(0)));
        registry.touch(&[id(1)], None, 0).unwrap();
        let busy = registry.begin(id(2), None, 0, Interrupt::none()).unwrap();
        registry.adopt_cursor(id(1), 42).unwrap();
        assert_eq!(registry.cursor_owner(42).unwrap(), Some(id(1)));
        assert_eq!(registry.reap(999, 1000, &cursors).unwrap(), 0);
        assert_eq!(registry.reap(1000, 1000, &cursors).unwrap(), 1);
        assert_eq!(registry.cursor_owner(42).unwrap(), None);
        assert_eq!(
            registry.len().unwrap(),
            1,
            "the session with a running operation stays"
        );
        drop(busy);
        assert_eq!(registry.reap(1000, 1000, &cursors).unwrap(), 1);
        assert!(registry.is_empty().unwrap());
    }

    #[test]
    fn killing_sessions_kills_their_operations_and_keeps_them() {
        let registry = SessionRegistry::default();
        let cursors = CursorRegistry::new(Arc::new(ManualClock::starting_at_secs(0)));
        let op = Interrupt::none();
        let _running = registry.begin(id(1), None, 0, Arc::clone(&op)).unwrap();
        let other = Interrupt::none();
        let _other = registry.begin(id(2), None, 0, Arc::clone(&other)).unwrap();
        registry.kill(&Selector::Ids(&[id(1)]), &cursors).unwrap();
        assert!(op.check().is_err());
        assert!(other.check().is_ok());
        assert_eq!(registry.len().unwrap(), 2);
        assert_eq!(registry.list(&Selector::All).unwrap().len(), 2);
        assert_eq!(
            registry.list(&Selector::Owners(&[[1; 32]])).unwrap().len(),
            0
        );
    }
}
