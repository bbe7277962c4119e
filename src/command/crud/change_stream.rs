//! Change streams at the command level: an `aggregate` whose pipeline opens with
//! `$changeStream` opens a tailing cursor over the operation log (replica-set mode only, 40573
//! otherwise, as mongod), and a `getMore` on such a cursor waits up to its `maxTimeMS`
//! (`maxAwaitTimeMS` in the drivers; one second by default) for a new commit when nothing is
//! new, without holding a thread.
//!
//! Owns: the command's arguments for a stream and the awaiting `getMore`. Does not own: the
//! stream (`pipeline::change_stream`), batches and replies (`cursor`).

use super::aggregate::AggregateSpec;
use super::cursor::first_batch_reply;
use crate::command::args::optional_i64;
use crate::command::{ParsedCommand, Reply, Request, Shared};
use crate::engine::cursor::{Cursor, Held};
use crate::error::{Error, ErrorCode, Result};
use crate::pipeline::change_stream::{ChangeStream, Options};
use crate::pipeline::{Env, StageLimits};
use crate::query::expr::Variables;
use bson::{Bson, Document, RawDocumentBuf};
use std::sync::Arc;
use std::time::Duration;

/// How long a `getMore` on an awaitData cursor waits when it names no `maxTimeMS` (mongod's).
const DEFAULT_AWAIT: Duration = Duration::from_secs(1);
/// How often a waiting `getMore` checks whether it was killed.
const KILL_CHECK: Duration = Duration::from_millis(100);

/// Whether `parsed` is an aggregate whose pipeline opens with `$changeStream`.
pub fn opens_stream(parsed: &ParsedCommand<'_>) -> bool {
    parsed.stages().and_then(|stages| stages.first()) == Some("$changeStream")
}

/// `aggregate` with `$changeStream` first: opens the stream and replies with its first batch.
pub fn aggregate(shared: &Shared, req: &Request<'_>, spec: &AggregateSpec) -> Result<Reply> {
    if !shared.config.replication.enabled() {
        return Err(Error::new(
            ErrorCode::Location40573,
            "The $changeStream stage is only supported on replica sets",
        ));
    }
    if spec.explain {
        return Err(Error::new(
            ErrorCode::NotImplemented,
            "explain of a $changeStream pipeline is not supported by this server",
        ));
    }
    // mongod applies a collation to the stream's later stages; mayfly's streams compare
    // simply, so another collation is refused rather than ignored.
    if let Some(collation) = &spec.collation {
        if crate::query::collation::Collation::parse(collation)?.is_some() {
            return Err(Error::new(
                ErrorCode::NotImplemented,
                "a collation other than simple on a $changeStream is not supported by mayfly",
            ));
        }
    }
    let coll = spec.collection.as_deref();
    let mut specs = spec.pipeline.clone();
    if specs.is_empty() {
        return Err(Error::internal(
            "a change stream without its $changeStream stage",
        ));
    }
    let first = specs.remove(0);
    if shared
        .config
        .profile
        .enforces(crate::profile::Rule::ChangeStreams)
    {
        crate::profile::change_streams::restrict(coll, &mut specs)?;
    }
    let options = Options::parse(
        first.get("$changeStream").unwrap_or(&Bson::Null),
        req.db,
        coll,
    )?;
    let batch_size = spec
        .batch_size
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let vars = Variables::new(shared.clock.now_datetime()).with_let(spec.let_vars.as_ref())?;
    let view = shared.engine.read()?;
    let now = view.now_cell();
    let env = Env {
        view: view.clone(),
        db: req.db.to_owned(),
        now: now.clone(),
        interrupt: Arc::clone(&req.interrupt),
        limits: StageLimits {
            allow_disk_use: false,
            held: Held::default(),
        },
        vars,
        writes: shared.engine.write_handle(),
        durable: false,
    };
    let stream = ChangeStream::open(options, specs, shared.engine.reader(), env)?;
    let ns = match coll {
        Some(coll) => format!("{}.{coll}", req.db),
        None => format!("{}.$cmd.aggregate", req.db),
    };
    let cursor =
        Cursor::tailing(ns, Box::new(stream), now).with_interrupt(Arc::clone(&req.interrupt));
    first_batch_reply(shared, cursor, view.now, batch_size, false).map(Reply::from)
}

/// `getMore`: on a change stream's cursor, waits for new events up to the command's
/// `maxTimeMS` when none are ready; any other cursor is served at once.
pub async fn get_more(shared: &Arc<Shared>, req: &Request<'_>) -> Result<Reply> {
    let id = req.parsed.get_more()?.id();
    let tailing = shared.engine.cursors.is_tailable(id);
    if let Some(failure) = injected_failure(shared, id, tailing) {
        return Ok(Reply::Document(failure));
    }
    if !tailing {
        return crate::command::blocking(shared, req, batch).await;
    }
    // On an awaitData cursor maxTimeMS is how long to wait for data, not a deadline that
    // fails the command.
    let wait = match req.body.get("maxTimeMS") {
        Some(_) => Duration::from_millis(
            optional_i64(req.body, "getMore", "maxTimeMS")?
                .map_or(0, |ms| u64::try_from(ms).unwrap_or(0)),
        ),
        None => DEFAULT_AWAIT,
    };
    req.interrupt.set_deadline(None);
    let deadline = tokio::time::Instant::now() + wait;
    let mut commits = shared.engine.optimes().subscribe();
    loop {
        commits.borrow_and_update();
        let reply = crate::command::blocking(shared, req, batch).await?;
        let Reply::Raw(raw) = &reply else {
            return Ok(reply);
        };
        if !waits_for_more(raw) || tokio::time::Instant::now() >= deadline {
            return Ok(reply);
        }
        tokio::select! {
            _ = commits.changed() => {}
            _ = tokio::time::sleep_until(deadline) => {}
            _ = tokio::time::sleep(KILL_CHECK) => {}
        }
        req.interrupt.check()?;
    }
}

/// One batch of the cursor `req` continues.
fn batch(shared: &Shared, req: &Request<'_>) -> Result<RawDocumentBuf> {
    super::cursor::get_more(shared, req, req.parsed.get_more()?)
}

/// Whether a getMore reply has no events and its cursor is still open.
fn waits_for_more(reply: &RawDocumentBuf) -> bool {
    let Ok(cursor) = reply.get_document("cursor") else {
        return false;
    };
    let open = cursor.get_i64("id").is_ok_and(|id| id != 0);
    let empty = cursor
        .get_array("nextBatch")
        .is_ok_and(|batch| batch.into_iter().next().is_none());
    open && empty
}

/// `failGetMoreAfterCursorCheckout`: when it fires for an existing cursor, the `getMore` fails
/// with its code and the cursor is closed, as on mongod; a change stream's failure with a
/// resumable code carries `ResumableChangeStreamError`, as mongod adds it.
fn injected_failure(shared: &Shared, id: i64, tailing: bool) -> Option<Document> {
    shared.engine.cursors.namespace_of(id)?;
    let code = crate::command::failpoint::get_more_failure(shared)?;
    shared.engine.cursors.kill(id);
    let mut reply = crate::command::failpoint::error_reply(
        code,
        "Hit the failGetMoreAfterCursorCheckout failpoint",
    );
    if tailing && crate::command::error_labels::is_resumable_change_stream_error(code) {
        reply.insert("errorLabels", vec!["ResumableChangeStreamError"]);
    }
    Some(reply)
}
