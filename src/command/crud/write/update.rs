//! `update`: a batch of `{q, u, upsert, multi, arrayFilters, hint, collation}` statements,
//! ordered or not, replying `{n, nModified, [upserted], [writeErrors], ok}`.

use super::multi::{self, MultiWrite, Run};
use super::update_spec::{UpdateSpec, UpdateStatementSpec};
use super::{
    apply_update, awaiting_job, collation_of, parse_update, refuse_collated_update, selection,
    store_change, targets, update_compares_strings, upsert_document,
};
use crate::command::args::durable;
use crate::command::crud::batch;
use crate::command::retryable::{self, History, RetryableWrite};
use crate::command::{Request, Shared};
use crate::engine::catalog::CollectionMeta;
use crate::engine::exec::ReadRequest;
use crate::engine::targets::Recheck;
use crate::engine::{ddl, documents::collection, Interrupt, StoredDoc, Txn};
use crate::error::{Error, ErrorCode, Result};
use crate::profile::shard_keys::{ShardKey, ShardKeys};
use crate::profile::DocumentLimit;
use crate::query::expr::Variables;
use crate::query::update::{ArrayFilters, Update};
use crate::status::OpKind;
use bson::{doc, Bson, DateTime, Document};
use std::sync::Arc;

/// One update statement, parsed.
struct Statement {
    query: ReadRequest,
    update: Update,
    array_filters: ArrayFilters,
    upsert: bool,
    /// Updates every match (`multi: true`), which a retryable write may not.
    multi: bool,
    /// The update compares strings outside its query (`update_compares_strings`).
    compares_strings: bool,
    /// The profile's largest document (Cosmos's 2 MB).
    limit: DocumentLimit,
    /// The Cosmos profile's shard-key rules.
    shard_keys: ShardKeys,
}

/// What one statement did.
#[derive(Default)]
struct Done {
    matched: usize,
    modified: usize,
    upserted: Option<Bson>,
}

/// An `update` read once ([`UpdateSpec`]) and its statements compiled.
type Parsed<'a> = super::Compiled<'a, Statement>;

/// Compiles `spec` (read by the envelope, its structural errors already the command's).
fn parse<'a>(db: &str, spec: &'a UpdateSpec, now: DateTime) -> Result<Parsed<'a>> {
    super::compile_batch(
        db,
        (&spec.collection, &spec.base),
        spec.let_vars.as_ref(),
        &spec.updates,
        now,
        Statement::compile,
    )
}

/// The collection and selection of an update's one statement, for explain.
pub(super) fn explained(
    db: &str,
    spec: &UpdateSpec,
    now: DateTime,
) -> Result<(String, ReadRequest)> {
    let parsed = parse(db, spec, now)?;
    let stmt = super::single_statement(parsed.statements)??;
    Ok((parsed.coll.to_owned(), stmt.query))
}

pub async fn update(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    req.interrupt.check()?;
    let cmd = req.body;
    let Parsed {
        coll,
        base,
        statements,
    } = parse(req.db, req.parsed.update()?, shared.clock.now_datetime())?;
    let coll = coll.to_owned();
    let ordered = base.ordered;
    let limit = shared.config.profile.document_limit();
    let shard_keys = ShardKeys::of(&shared.config.profile);
    let parsed: Vec<Result<Statement>> = statements
        .into_iter()
        .map(|stmt| {
            stmt.map(|s| Statement {
                limit,
                shard_keys,
                ..s
            })
        })
        .collect();
    shared.counters.count(OpKind::Update, parsed.len() as u64);

    let retryable = RetryableWrite::of(req);
    let stmt_ids = base.statement_ids("update", parsed.len())?;

    if req.transaction.is_none()
        && retryable.is_none()
        && parsed.iter().any(|s| matches!(s, Ok(s) if s.multi))
    {
        let target = (req.db.to_owned(), coll);
        return in_batches(shared, req, target, parsed, ordered, durable(cmd)).await;
    }

    let db = req.db.to_owned();
    let clock = Arc::clone(shared.engine.clock());
    let interrupt = Arc::clone(&req.interrupt);
    let written =
        crate::command::transactions::write(shared, req, durable(cmd), move |txn, now| {
            let at = clock.now_datetime();
            let mut history = History::load(txn, retryable, now)?;
            let (mut matched, mut modified) = (0usize, 0usize);
            let mut upserted: Vec<(usize, Bson)> = Vec::new();
            let mut retried = Vec::new();
            let errors = batch::run_interruptible(parsed, ordered, &interrupt, |i, s| {
                let stmt_id = stmt_ids.get(i).copied().unwrap_or_default();
                let done = match history.as_mut() {
                    None => s.run(txn, (&db, &coll), now, at, &interrupt)?,
                    Some(history) => {
                        if s.multi {
                            return Err(Error::new(
                                ErrorCode::InvalidOptions,
                                "Cannot use (or request) retryable writes with multi=true",
                            ));
                        }
                        match history.executed(stmt_id)? {
                            Some(result) => {
                                retried.push(stmt_id);
                                Done::from_record(result)
                            }
                            None => {
                                let done = s.run(txn, (&db, &coll), now, at, &interrupt)?;
                                history.record(stmt_id, done.to_record());
                                done
                            }
                        }
                    }
                };
                matched += done.matched;
                modified += done.modified;
                if let Some(id) = done.upserted {
                    upserted.push((i, id));
                }
                Ok(())
            });
            if let Some(history) = history {
                history.save(txn, now, at)?;
            }
            Ok::<_, Error>((
                matched + upserted.len(),
                modified,
                upserted,
                retried,
                errors,
            ))
        });
    let (matched, modified, upserted, retried, errors) =
        awaiting_job(&req.interrupt, written).await??;
    let mut reply = counts_reply(matched, modified, upserted);
    retryable::note_retried(&mut reply, &retried);
    Ok(batch::reply(reply, &errors?))
}

/// `{n, nModified, [upserted]}`; `matched` counts the upserted documents too.
fn counts_reply(matched: usize, modified: usize, upserted: Vec<(usize, Bson)>) -> Document {
    let mut reply = doc! {"n": batch::count(matched), "nModified": batch::count(modified)};
    if !upserted.is_empty() {
        let entries: Vec<Bson> = upserted
            .into_iter()
            .map(|(i, id)| Bson::Document(doc! {"index": batch::count(i), "_id": id}))
            .collect();
        reply.insert("upserted", entries);
    }
    reply
}

/// The command, outside a transaction and a retryable write, when a statement is multi: the
/// statements run in order, each multi statement in batches ([`multi`]) and the others, while
/// they follow one another, in one writer job as before. `n` and `nModified` are the sums.
async fn in_batches(
    shared: &Shared,
    req: &Request<'_>,
    target: (String, String),
    parsed: Vec<Result<Statement>>,
    ordered: bool,
    durable: bool,
) -> Result<Document> {
    let interrupt = &req.interrupt;
    let (mut matched, mut modified) = (0usize, 0usize);
    let mut upserted: Vec<(usize, Bson)> = Vec::new();
    let mut errors: Vec<(usize, Error)> = Vec::new();
    for run in multi::runs(parsed, |s| s.multi) {
        let done: Vec<(usize, Done)> = match run {
            Run::OneJob(group) => {
                let (indexes, statements): (Vec<usize>, Vec<_>) = group.into_iter().unzip();
                let (db, coll) = target.clone();
                let clock = Arc::clone(shared.engine.clock());
                let job_interrupt = Arc::clone(interrupt);
                let job = move |txn: &mut Txn<'_>, now: i64| {
                    let at = clock.now_datetime();
                    let mut done = Vec::new();
                    let i = &job_interrupt;
                    batch::run_interruptible(statements, ordered, i, |j, s: Statement| {
                        done.push((j, s.run(txn, (&db, &coll), now, at, i)?));
                        Ok(())
                    })
                    .map(|errors| (done, errors))
                };
                let (done, group_errors) =
                    awaiting_job(interrupt, shared.engine.write(durable, job)).await??;
                let index = |j: usize| indexes.get(j).copied().unwrap_or(j);
                errors.extend(group_errors.into_iter().map(|(j, e)| (index(j), e)));
                done.into_iter().map(|(j, d)| (index(j), d)).collect()
            }
            Run::Batched(i, s) => {
                match multi_statement(shared, &target, s, durable, interrupt).await {
                    Ok(done) => vec![(i, done)],
                    Err(e) => {
                        // An interruption fails the command; anything else is the statement's.
                        interrupt.check()?;
                        errors.push((i, e));
                        Vec::new()
                    }
                }
            }
        };
        for (i, d) in done {
            matched += d.matched;
            modified += d.modified;
            if let Some(id) = d.upserted {
                upserted.push((i, id));
            }
        }
        if ordered && !errors.is_empty() {
            break;
        }
    }
    let reply = counts_reply(matched + upserted.len(), modified, upserted);
    Ok(batch::reply(reply, &errors))
}

/// One multi statement in batches; when nothing matched and it upserts, the upsert is one more
/// writer job that inserts without selecting again (as in mongod, two upserts racing on a
/// filter no unique index covers may both insert).
async fn multi_statement(
    shared: &Shared,
    (db, coll): &(String, String),
    statement: Statement,
    durable: bool,
    interrupt: &Arc<Interrupt>,
) -> Result<Done> {
    let statement = Arc::new(statement);
    let counts = multi::run(
        &shared.engine,
        (db, coll),
        Arc::clone(&statement),
        durable,
        interrupt,
    )
    .await?;
    if counts.matched > 0 || !statement.upsert {
        return Ok(Done {
            matched: counts.matched,
            modified: counts.modified,
            upserted: None,
        });
    }
    let (db, coll) = (db.clone(), coll.clone());
    let clock = Arc::clone(shared.engine.clock());
    let job = move |txn: &mut Txn<'_>, now: i64| {
        let meta = collection::existing_collection(txn, &db, &coll);
        let shard_key = meta
            .as_ref()
            .and_then(|m| statement.shard_keys.key(m.shard_key()));
        if let Some(key) = &shard_key {
            key.check_target(&statement.query.filter_doc)?;
        }
        let at = clock.now_datetime();
        statement.upsert_if_asked(txn, &db, &coll, now, at, shard_key.as_ref())
    };
    awaiting_job(interrupt, shared.engine.write(durable, job)).await?
}

impl MultiWrite for Statement {
    type Prepared = (StoredDoc, Option<Document>);

    fn query(&self) -> &ReadRequest {
        &self.query
    }

    fn check(&self, meta: &CollectionMeta) -> Result<()> {
        if self.compares_strings {
            refuse_collated_update(meta, &self.query)?;
        }
        if let Some(key) = self.shard_keys.key(meta.shard_key()) {
            if self.upsert || self.shard_keys.multi_writes_target() {
                key.check_target(&self.query.filter_doc)?;
            }
        }
        Ok(())
    }

    fn prepare(&self, target: StoredDoc, at: DateTime) -> Result<Self::Prepared> {
        let new = self.updated(&target, at)?;
        Ok((target, new))
    }

    fn target(prepared: &Self::Prepared) -> &StoredDoc {
        &prepared.0
    }

    fn write(
        &self,
        txn: &mut Txn<'_>,
        meta: &CollectionMeta,
        (target, new): Self::Prepared,
        recheck: Recheck,
        (now, at): (i64, DateTime),
    ) -> Result<bool> {
        let (old, new) = match recheck {
            Recheck::Unchanged => (target, new),
            // Changed since the snapshot: the update is evaluated again on what is stored.
            Recheck::Changed(current) => {
                let new = self.updated(&current, at)?;
                (current, new)
            }
            Recheck::Gone => return Ok(false),
        };
        let Some(new) = new else {
            return Ok(false);
        };
        if let Some(key) = self.shard_keys.key(meta.shard_key()) {
            key.check_unchanged(&old.doc, &new)?;
        }
        store_change(txn, meta, &old, &new, &self.update, now)?;
        Ok(true)
    }
}

impl Done {
    /// What a retryable write records for the statement.
    fn to_record(&self) -> Document {
        let mut record = doc! {
            "n": batch::count(self.matched),
            "nModified": batch::count(self.modified),
        };
        if let Some(id) = &self.upserted {
            record.insert("upserted", id.clone());
        }
        record
    }

    /// The statement's outcome as recorded when it first ran.
    fn from_record(record: &Document) -> Done {
        let count = |field: &str| match record.get(field) {
            Some(Bson::Int32(n)) => usize::try_from(*n).unwrap_or(0),
            Some(Bson::Int64(n)) => usize::try_from(*n).unwrap_or(0),
            _ => 0,
        };
        Done {
            matched: count("n"),
            modified: count("nModified"),
            upserted: record.get("upserted").cloned(),
        }
    }
}

impl Statement {
    /// Compiles a statement read by [`UpdateStatementSpec`]; an error is the statement's (a
    /// write error at its index), not the command's.
    fn compile(stmt: &UpdateStatementSpec, vars: &Variables) -> Result<Statement> {
        let collation = collation_of(stmt.collation.as_ref())?;
        let filters = stmt.array_filters.as_deref();
        let compares_strings = update_compares_strings(&stmt.u, filters);
        let update = parse_update(&stmt.u, vars)?;
        if stmt.multi && update.is_replacement() {
            return Err(Error::failed_to_parse(
                "multi update is not supported for replacement-style update",
            ));
        }
        let query = selection(
            &stmt.q,
            Document::new(),
            stmt.hint.as_ref(),
            !stmt.multi,
            collation,
            vars,
        )?;
        let array_filters = ArrayFilters::compile(filters.unwrap_or_default(), &update)?;
        Ok(Statement {
            query,
            update,
            array_filters,
            upsert: stmt.upsert,
            multi: stmt.multi,
            compares_strings,
            limit: DocumentLimit::default(),
            shard_keys: ShardKeys::default(),
        })
    }

    /// Runs the statement inside the batch's writer job. Every matched document is updated in
    /// memory first, so an update error (14, 66, ...) leaves all of them untouched; only a
    /// storage-level refusal (a duplicate key) can stop a multi-update part way, as in mongod.
    fn run(
        &self,
        txn: &mut Txn<'_>,
        target: (&str, &str),
        now: i64,
        at: DateTime,
        interrupt: &Arc<Interrupt>,
    ) -> Result<Done> {
        let (db, coll) = target;
        let meta = collection::existing_collection(txn, db, coll);
        if let (Some(meta), true) = (&meta, self.compares_strings) {
            refuse_collated_update(meta, &self.query)?;
        }
        let shard_key = meta
            .as_ref()
            .and_then(|m| self.shard_keys.key(m.shard_key()));
        let targets_key = !self.multi || self.upsert || self.shard_keys.multi_writes_target();
        if let Some(key) = shard_key.as_ref().filter(|_| targets_key) {
            key.check_target(&self.query.filter_doc)?;
        }
        let matched = match &meta {
            Some(meta) => targets(txn, meta, &self.query, now, interrupt)?,
            None => Vec::new(),
        };
        let Some(meta) = meta.filter(|_| !matched.is_empty()) else {
            return self.upsert_if_asked(txn, db, coll, now, at, shard_key.as_ref());
        };
        let mut changes = Vec::new();
        for old in &matched {
            if let Some(new) = self.updated(old, at)? {
                if let Some(key) = &shard_key {
                    key.check_unchanged(&old.doc, &new)?;
                }
                changes.push((old, new));
            }
        }
        for (old, new) in &changes {
            store_change(txn, &meta, old, new, &self.update, now)?;
        }
        Ok(Done {
            matched: matched.len(),
            modified: changes.len(),
            upserted: None,
        })
    }

    /// What `old` becomes, or `None` when the update leaves it as it is ([`apply_update`]).
    fn updated(&self, old: &StoredDoc, at: DateTime) -> Result<Option<Document>> {
        apply_update(
            old,
            &self.update,
            &self.array_filters,
            &self.query.filter,
            (at, self.limit),
        )
    }

    fn upsert_if_asked(
        &self,
        txn: &mut Txn<'_>,
        db: &str,
        coll: &str,
        now: i64,
        at: DateTime,
        shard_key: Option<&ShardKey>,
    ) -> Result<Done> {
        if !self.upsert {
            return Ok(Done::default());
        }
        let doc = upsert_document(&self.query, &self.update, &self.array_filters, at)?;
        self.limit.check_document(&doc)?;
        if let Some(key) = shard_key {
            key.check_document(&doc)?;
        }
        let (meta, _) = ddl::ensure_collection(txn, db, coll)?;
        collection::insert(txn, &meta, &doc, now)?;
        Ok(Done {
            matched: 0,
            modified: 0,
            upserted: Some(doc.get("_id").cloned().unwrap_or(Bson::Null)),
        })
    }
}
