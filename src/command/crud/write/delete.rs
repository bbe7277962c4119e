//! `delete`: a batch of `{q, limit: 0 | 1, hint, collation}` statements, ordered or not,
//! replying `{n, [writeErrors], ok}`.

use super::delete_spec::{DeleteSpec, DeleteStatementSpec};
use super::multi::{self, MultiWrite, Run};
use super::{awaiting_job, collation_of, selection, targets};
use crate::command::args::durable;
use crate::command::crud::batch;
use crate::command::retryable::{self, History, RetryableWrite};
use crate::command::{Request, Shared};
use crate::engine::catalog::CollectionMeta;
use crate::engine::exec::ReadRequest;
use crate::engine::targets::Recheck;
use crate::engine::{documents::collection, Interrupt, StoredDoc, Txn};
use crate::error::{Error, ErrorCode, Result};
use crate::profile::shard_keys::ShardKeys;
use crate::query::expr::Variables;
use crate::status::OpKind;
use bson::{doc, DateTime, Document};
use std::sync::Arc;

/// One delete statement, parsed.
struct Statement {
    /// With a limit of one when only the first match is deleted (`limit: 1`).
    query: ReadRequest,
    /// The Cosmos profile's shard-key rules.
    shard_keys: ShardKeys,
}

/// A `delete` read once ([`DeleteSpec`]) and its statements compiled.
type Parsed<'a> = super::Compiled<'a, Statement>;

/// Compiles `spec` (read by the envelope, its structural errors already the command's).
fn parse<'a>(db: &str, spec: &'a DeleteSpec, now: DateTime) -> Result<Parsed<'a>> {
    super::compile_batch(
        db,
        (&spec.collection, &spec.base),
        spec.let_vars.as_ref(),
        &spec.deletes,
        now,
        Statement::compile,
    )
}

/// The collection and selection of a delete's one statement, for explain.
pub(super) fn explained(
    db: &str,
    spec: &DeleteSpec,
    now: DateTime,
) -> Result<(String, ReadRequest)> {
    let parsed = parse(db, spec, now)?;
    let stmt = super::single_statement(parsed.statements)??;
    Ok((parsed.coll.to_owned(), stmt.query))
}

pub async fn delete(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    req.interrupt.check()?;
    let cmd = req.body;
    let Parsed {
        coll,
        base,
        statements,
    } = parse(req.db, req.parsed.delete()?, shared.clock.now_datetime())?;
    let coll = coll.to_owned();
    let ordered = base.ordered;
    let shard_keys = ShardKeys::of(&shared.config.profile);
    let parsed: Vec<Result<Statement>> = statements
        .into_iter()
        .map(|stmt| stmt.map(|s| Statement { shard_keys, ..s }))
        .collect();
    shared.counters.count(OpKind::Delete, parsed.len() as u64);

    let retryable = RetryableWrite::of(req);
    let stmt_ids = base.statement_ids("delete", parsed.len())?;

    if req.transaction.is_none()
        && retryable.is_none()
        && parsed.iter().any(|s| matches!(s, Ok(s) if s.is_multi()))
    {
        let target = (req.db.to_owned(), coll);
        return in_batches(shared, req, target, parsed, ordered, durable(cmd)).await;
    }

    let db = req.db.to_owned();
    let interrupt = Arc::clone(&req.interrupt);
    let clock = Arc::clone(shared.engine.clock());
    let written =
        crate::command::transactions::write(shared, req, durable(cmd), move |txn, now| {
            let mut history = History::load(txn, retryable, now)?;
            let mut n = 0usize;
            let mut retried = Vec::new();
            let errors = batch::run_interruptible(parsed, ordered, &interrupt, |i, s| {
                let stmt_id = stmt_ids.get(i).copied().unwrap_or_default();
                let Some(history) = history.as_mut() else {
                    n += s.run(txn, (&db, &coll), now, &interrupt)?;
                    return Ok(());
                };
                if s.query.limit != Some(1) {
                    return Err(Error::new(
                        ErrorCode::InvalidOptions,
                        "Cannot use (or request) retryable writes with limit=0",
                    ));
                }
                if let Some(result) = history.executed(stmt_id)? {
                    retried.push(stmt_id);
                    n += usize::try_from(result.get_i32("n").unwrap_or(0)).unwrap_or(0);
                    return Ok(());
                }
                let deleted = s.run(txn, (&db, &coll), now, &interrupt)?;
                history.record(stmt_id, doc! {"n": batch::count(deleted)});
                n += deleted;
                Ok(())
            });
            if let Some(history) = history {
                history.save(txn, now, clock.now_datetime())?;
            }
            Ok::<_, Error>((n, retried, errors))
        });
    let (n, retried, errors) = awaiting_job(&req.interrupt, written).await??;
    let mut reply = doc! {"n": batch::count(n)};
    retryable::note_retried(&mut reply, &retried);
    Ok(batch::reply(reply, &errors?))
}

/// The command, outside a transaction and a retryable write, when a statement deletes every
/// match: the statements run in order, each such statement in batches ([`multi`]) and the
/// others, while they follow one another, in one writer job as before. `n` is the sum.
async fn in_batches(
    shared: &Shared,
    req: &Request<'_>,
    target: (String, String),
    parsed: Vec<Result<Statement>>,
    ordered: bool,
    durable: bool,
) -> Result<Document> {
    let interrupt = &req.interrupt;
    let mut n = 0usize;
    let mut errors: Vec<(usize, Error)> = Vec::new();
    for run in multi::runs(parsed, Statement::is_multi) {
        match run {
            Run::OneJob(group) => {
                let (indexes, statements): (Vec<usize>, Vec<_>) = group.into_iter().unzip();
                let (db, coll) = target.clone();
                let job_interrupt = Arc::clone(interrupt);
                let job = move |txn: &mut Txn<'_>, now: i64| {
                    let mut deleted = 0usize;
                    let i = &job_interrupt;
                    batch::run_interruptible(statements, ordered, i, |_, s: Statement| {
                        deleted += s.run(txn, (&db, &coll), now, i)?;
                        Ok(())
                    })
                    .map(|errors| (deleted, errors))
                };
                let (deleted, group_errors) =
                    awaiting_job(interrupt, shared.engine.write(durable, job)).await??;
                n += deleted;
                let index = |j: usize| indexes.get(j).copied().unwrap_or(j);
                errors.extend(group_errors.into_iter().map(|(j, e)| (index(j), e)));
            }
            Run::Batched(i, s) => {
                let (db, coll) = (target.0.as_str(), target.1.as_str());
                match multi::run(&shared.engine, (db, coll), Arc::new(s), durable, interrupt).await
                {
                    Ok(counts) => n += counts.matched,
                    Err(e) => {
                        // An interruption fails the command; anything else is the statement's.
                        interrupt.check()?;
                        errors.push((i, e));
                    }
                }
            }
        }
        if ordered && !errors.is_empty() {
            break;
        }
    }
    Ok(batch::reply(doc! {"n": batch::count(n)}, &errors))
}

impl MultiWrite for Statement {
    type Prepared = StoredDoc;

    fn query(&self) -> &ReadRequest {
        &self.query
    }

    /// Nothing to check: the shard-key rule binds only a delete of one document.
    fn check(&self, meta: &CollectionMeta) -> Result<()> {
        if let Some(key) = self.shard_keys.key(meta.shard_key()) {
            if self.shard_keys.multi_writes_target() {
                key.check_target(&self.query.filter_doc)?;
            }
        }
        Ok(())
    }

    fn prepare(&self, target: StoredDoc, _at: DateTime) -> Result<StoredDoc> {
        Ok(target)
    }

    fn target(prepared: &StoredDoc) -> &StoredDoc {
        prepared
    }

    fn write(
        &self,
        txn: &mut Txn<'_>,
        meta: &CollectionMeta,
        target: StoredDoc,
        recheck: Recheck,
        _times: (i64, DateTime),
    ) -> Result<bool> {
        match recheck {
            Recheck::Unchanged => collection::delete(txn, meta, &target)?,
            Recheck::Changed(current) => collection::delete(txn, meta, &current)?,
            Recheck::Gone => return Ok(false),
        }
        Ok(true)
    }
}

impl Statement {
    /// Deletes every match (`limit: 0`).
    fn is_multi(&self) -> bool {
        self.query.limit != Some(1)
    }

    /// Compiles a statement read by [`DeleteStatementSpec`]; an error is the statement's (a
    /// write error at its index), not the command's.
    fn compile(stmt: &DeleteStatementSpec, vars: &Variables) -> Result<Statement> {
        let collation = collation_of(stmt.collation.as_ref())?;
        Ok(Statement {
            query: selection(
                &stmt.q,
                Document::new(),
                stmt.hint.as_ref(),
                stmt.just_one,
                collation,
                vars,
            )?,
            shard_keys: ShardKeys::default(),
        })
    }

    /// Deletes the statement's matches; returns how many. A missing collection has none.
    fn run(
        &self,
        txn: &mut Txn<'_>,
        target: (&str, &str),
        now: i64,
        interrupt: &Arc<Interrupt>,
    ) -> Result<usize> {
        let Some(meta) = collection::existing_collection(txn, target.0, target.1) else {
            return Ok(0);
        };
        if let Some(key) = self.shard_keys.key(meta.shard_key()) {
            if self.query.limit == Some(1) || self.shard_keys.multi_writes_target() {
                key.check_target(&self.query.filter_doc)?;
            }
        }
        let doomed = targets(txn, &meta, &self.query, now, interrupt)?;
        for doc in &doomed {
            collection::delete(txn, &meta, doc)?;
        }
        Ok(doomed.len())
    }
}
