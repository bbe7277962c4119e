//! `find`: read the arguments once into a `FindSpec` (one pass, unknown fields refused at its
//! end), compile them into the executor's read request, run it, and open a cursor over the
//! projected result.

use super::cursor::{first_batch_reply, SizedDocs};
use crate::command::spec::Spec;
use crate::command::{Request, Shared};
use crate::engine::catalog::{collection_arg, validate_read_collection_name};
use crate::engine::cursor::{Cursor, Item, DEFAULT_FIRST_BATCH};
use crate::engine::exec::{keyed, Hint, ReadRequest};
use crate::engine::StoredDoc;
use crate::error::{Error, ErrorCode, Result};
use crate::query::collation::Collation;
use crate::query::expr::Variables;
use crate::query::filter::Filter;
use crate::query::projection::{Projection, Source};
use crate::status::OpKind;
use bson::{Bson, Document};
use std::sync::Arc;

/// Matching documents, lazily.
pub type StoredDocs = Box<dyn Iterator<Item = Result<StoredDoc>> + Send>;

/// `find`'s own fields as the command carries them, read in one pass by [`Spec`]: typed, the
/// validators of `skip` and `batchSize` applied, nothing else judged yet. Owned, so the
/// blocking pool takes it along (shared) without reading the command again.
#[derive(Debug, Default)]
pub struct FindSpec {
    /// The first field, as sent: judged by [`FindArgs::parse`] (its error comes first).
    collection: Option<Bson>,
    filter: Option<Document>,
    sort: Option<Document>,
    projection: Option<Document>,
    hint: Option<Bson>,
    skip: Option<u64>,
    limit: Option<i64>,
    batch_size: Option<u64>,
    single_batch: Option<bool>,
    max: Option<Document>,
    min: Option<Document>,
    return_key: Option<bool>,
    show_record_id: Option<bool>,
    tailable: Option<Bson>,
    await_data: Option<Bson>,
    no_cursor_timeout: Option<bool>,
    collation: Option<Document>,
    allow_disk_use: Option<bool>,
    let_vars: Option<Document>,
}

impl FindSpec {
    /// Reads every field of `cmd` but the first; `finish` refuses what no field took. The
    /// first field's error comes before any other, as mongod's parser reads it first.
    pub fn read(cmd: &Document) -> Result<FindSpec> {
        collection_arg(cmd.get("find"), "find")?;
        let mut spec = Spec::new("find", cmd);
        let find = FindSpec {
            collection: cmd.get("find").cloned(),
            filter: spec.doc("filter").cloned(),
            sort: spec.doc("sort").cloned(),
            projection: spec.doc("projection").cloned(),
            hint: spec.take("hint").cloned(),
            skip: spec.non_negative("skip", "Skip"),
            limit: spec.i64("limit"),
            batch_size: spec.non_negative("batchSize", "BatchSize"),
            single_batch: spec.bool("singleBatch"),
            max: spec.doc("max").cloned(),
            min: spec.doc("min").cloned(),
            return_key: spec.bool("returnKey"),
            show_record_id: spec.bool("showRecordId"),
            tailable: spec.take("tailable").cloned(),
            await_data: spec.take("awaitData").cloned(),
            no_cursor_timeout: spec.bool("noCursorTimeout"),
            collation: spec.doc("collation").cloned(),
            allow_disk_use: spec.bool("allowDiskUse"),
            let_vars: spec.doc("let").cloned(),
        };
        // Known to mongod and meaningless on one node, or kept for old clients: taken, unused.
        for field in ["allowPartialResults", "oplogReplay", "readOnce", "term"] {
            spec.take(field);
        }
        spec.finish()?;
        Ok(find)
    }

    /// The collection read (the first field, judged when the spec was read).
    pub fn collection(&self) -> &str {
        match &self.collection {
            Some(Bson::String(name)) => name,
            _ => "",
        }
    }

    pub fn filter(&self) -> Option<&Document> {
        self.filter.as_ref()
    }

    /// The projection as sent.
    pub fn projection(&self) -> Option<&Document> {
        self.projection.as_ref()
    }

    /// The documents that hold its filters and expressions: `filter`, `sort`, `projection`,
    /// `min`, `max` and `let`.
    pub fn expressions(&self) -> impl Iterator<Item = &Document> {
        self.filter
            .iter()
            .chain(&self.sort)
            .chain(&self.projection)
            .chain(&self.min)
            .chain(&self.max)
            .chain(&self.let_vars)
    }
}

/// A parsed `find`: what the executor reads, and how the cursor returns it.
pub struct FindArgs {
    pub collection: String,
    pub read: ReadRequest,
    pub projection: Option<Projection>,
    pub single_batch: bool,
    pub batch_size: Option<u64>,
    pub no_timeout: bool,
    /// `showRecordId`: each document gets its record id as `$recordId`.
    pub show_record_id: bool,
    /// The projection holds an `$elemMatch`, which compares strings by their bytes.
    pub projection_matches: bool,
}

impl FindArgs {
    /// Parses `cmd`; `now` is `$$NOW` for the filter's `$expr`s. The fields are read first (the
    /// first bad one in the document's order is the error, as mongod's parser reports it), then
    /// the filter, sort and projection are compiled.
    pub fn parse(db: &str, spec: &FindSpec, now: bson::DateTime) -> Result<FindArgs> {
        let coll = spec.collection();
        validate_read_collection_name(db, coll)?;
        let filter_doc = spec.filter.clone().unwrap_or_default();
        let sort = spec.sort.clone().unwrap_or_default();
        let vars = Variables::new(now).with_let(spec.let_vars.as_ref())?;
        let collation = match &spec.collation {
            None => None,
            Some(c) if c.is_empty() => None,
            Some(c) => Some(Collation::parse(c)?),
        };
        let mut read = ReadRequest::with_variables(filter_doc, vars)?
            .requested_collation(collation)?
            .sorted(sort)?;
        let projection = match &spec.projection {
            Some(p) if !p.is_empty() => Some(Projection::find(p, &read.filter, &read.vars)?),
            _ => None,
        };
        let projection_matches = projection.as_ref().is_some_and(Projection::has_elem_match);
        read.skip = spec.skip.unwrap_or(0);
        let mut limit = spec.limit;
        let mut single_batch = spec.single_batch.unwrap_or(false);
        if let Some(l) = limit.filter(|l| *l < 0) {
            // A negative limit means "this many, in one batch".
            limit = Some(-l);
            single_batch = true;
        }
        read.limit = limit.filter(|l| *l != 0).map(|l| l.unsigned_abs());
        read.hint = Hint::parse(spec.hint.as_ref())?;
        read.allow_disk_use = spec.allow_disk_use.unwrap_or(false);
        read.min = spec.min.clone().filter(|d| !d.is_empty());
        read.max = spec.max.clone().filter(|d| !d.is_empty());
        read.return_key = spec.return_key.unwrap_or(false);
        let show_record_id = spec.show_record_id.unwrap_or(false);
        // Documents returned as stored need no decoding (a sort still decodes what it orders).
        read.decode = projection.is_some() || read.return_key || show_record_id;
        refuse_unsupported(spec)?;
        Ok(FindArgs {
            collection: coll.to_owned(),
            single_batch,
            batch_size: spec.batch_size,
            no_timeout: spec.no_cursor_timeout.unwrap_or(false),
            show_record_id,
            projection_matches,
            // `returnKey` replaces each document by its index key: nothing is left to project.
            projection: projection.filter(|_| !read.return_key),
            read,
        })
    }
}

/// Options this server parses but cannot honour yet are refused rather than ignored.
fn refuse_unsupported(spec: &FindSpec) -> Result<()> {
    for (option, value) in [
        ("tailable", spec.tailable.as_ref()),
        ("awaitData", spec.await_data.as_ref()),
    ] {
        let set = match value {
            None | Some(Bson::Boolean(false)) => false,
            Some(Bson::Document(d)) => !d.is_empty(),
            Some(_) => true,
        };
        if set {
            return Err(Error::new(
                ErrorCode::NotImplemented,
                format!("find option '{option}' is not supported by this server"),
            ));
        }
    }
    Ok(())
}

/// Whether this `find` reads at most one document through its `_id` key: `{_id: <value>}` with a
/// value that is not a document, array or regex, no collation (the command's or the
/// collection's), no `hint`, `min` or `max`, outside a transaction and the operation log. Its
/// work is then one key lookup, so it runs on the connection's task: handing it to the blocking
/// pool costs more than the lookup (two thread switches a read).
pub fn is_point_read(shared: &Shared, req: &Request<'_>) -> bool {
    let Ok(spec) = req.parsed.find() else {
        return false;
    };
    let by_id = match &spec.filter {
        Some(filter) => match filter.iter().next() {
            Some((field, value)) if filter.len() == 1 && field == "_id" => !matches!(
                value,
                Bson::Document(_) | Bson::Array(_) | Bson::RegularExpression(_)
            ),
            _ => false,
        },
        None => false,
    };
    let coll = spec.collection();
    by_id
        && req.db != "local"
        && req.transaction.is_none()
        && spec.collation.is_none()
        && spec.hint.is_none()
        && spec.min.is_none()
        && spec.max.is_none()
        // A poisoned catalog sends the read the general way, where it fails with the error.
        && shared.engine.catalog().is_ok_and(|catalog| {
            catalog
                .get(req.db, coll)
                .is_none_or(|meta| meta.default_collation_spec().is_none())
        })
}

pub fn find(shared: &Shared, req: &Request<'_>) -> Result<bson::RawDocumentBuf> {
    let spec = req.parsed.find()?;
    if super::oplog_reads::is_oplog(shared, req.db, spec.collection()) {
        return find_in_oplog(shared, req);
    }
    let mut args = FindArgs::parse(req.db, spec, shared.clock.now_datetime())?;
    args.read = args.read.under(&shared.config.profile);
    shared.counters.count(OpKind::Query, 1);
    let ns = format!("{}.{}", req.db, args.collection);
    let view = crate::command::transactions::read_view(shared, req)?;
    // One clock cell for the plan and the cursor: each batch judges expiry at its own time.
    let now = view.now_cell();
    let meta = view.collection(req.db, &args.collection);
    if let (Some(meta), true) = (&meta, args.projection_matches) {
        if args.read.for_collection(meta)?.collation.is_some() {
            return Err(Error::new(
                ErrorCode::NotImplemented,
                "a projection's $elemMatch under a collation other than simple is not supported \
                 by this server",
            ));
        }
    }
    // A positional projection finds its element with the filter as it runs: under the
    // collection's default collation when the command named none.
    let query = match (&args.projection, &meta) {
        (Some(p), Some(meta)) if p.needs_query() => {
            Some(args.read.for_collection(meta)?.filter.clone())
        }
        (Some(p), None) if p.needs_query() => Some(args.read.filter.clone()),
        _ => None,
    };
    let execution = view.execute(
        meta.as_deref(),
        &args.read,
        now.clone(),
        Arc::clone(&req.interrupt),
    )?;
    let ttl = meta.as_ref().map(|m| m.ttl_model()).unwrap_or_default();
    let wants_record_id = args
        .projection
        .as_ref()
        .is_some_and(Projection::needs_record_id);
    let records = Records {
        collection: meta
            .as_ref()
            .map(|m| m.id)
            .filter(|_| args.show_record_id || wants_record_id),
        show: args.show_record_id,
    };
    // Without returnKey, a document that is not projected is returned as stored.
    let stored_as_is = !args.read.return_key;
    let docs = project(
        execution.docs,
        args.projection,
        query,
        ttl,
        records,
        stored_as_is,
    );
    // The plan applies the limit; the cursor also stops there without reading ahead.
    let mut cursor = Cursor::new(ns, docs, now, args.read.limit)
        .with_interrupt(Arc::clone(&req.interrupt))
        .with_held(args.read.held.clone());
    cursor.no_timeout = args.no_timeout;
    let first = args
        .batch_size
        .map(|b| usize::try_from(b).unwrap_or(usize::MAX))
        .or(Some(DEFAULT_FIRST_BATCH));
    first_batch_reply(shared, cursor, view.now, first, args.single_batch)
}

/// Where a find's record ids come from, and whether each document shows its own.
#[derive(Debug, Clone, Copy, Default)]
pub struct Records {
    /// The collection's id, when record ids are needed (`showRecordId`, or a projection's
    /// `{$meta: "recordId"}`).
    pub collection: Option<u64>,
    /// `showRecordId`: each document gets its record id as `$recordId`.
    pub show: bool,
}

/// Projects each document; sizes are the stored sizes (never smaller than the projection), and
/// each item keeps its document's expiry time under the collection TTL `ttl`. `query` is the
/// filter a positional projection finds its element with.
pub fn project(
    docs: StoredDocs,
    projection: Option<Projection>,
    query: Option<Filter>,
    ttl: crate::ttl::TtlModel,
    records: Records,
    stored_as_is: bool,
) -> SizedDocs {
    Box::new(docs.map(move |r| {
        let d = r?;
        let expires_at = d.record.expires_at(&ttl);
        if stored_as_is && projection.is_none() && !records.show {
            // The reply carries the stored bytes: the document is never decoded.
            let raw = bson::RawDocumentBuf::from_bytes(d.record.body)
                .map_err(|e| Error::internal(format!("corrupt stored document: {e}")))?;
            return Ok(Item::raw(raw, expires_at));
        }
        let record_id = records.collection.map(|c| keyed::record_id(c, &d));
        let mut doc = match &projection {
            Some(p) => {
                let source = Source {
                    query: query.as_ref(),
                    record_id: record_id.as_ref(),
                };
                p.apply_from(&d.doc, source)?
            }
            None => d.doc,
        };
        if let (Some(id), true) = (record_id, records.show) {
            doc.insert("$recordId", id);
        }
        Item::new(&doc, expires_at)
    }))
}

/// A `find` on `local.oplog.rs`, run as its aggregation.
fn find_in_oplog(shared: &Shared, req: &Request<'_>) -> Result<bson::RawDocumentBuf> {
    let body = super::oplog_reads::find_as_aggregate(req.body)?;
    let spec = super::aggregate::AggregateSpec::read(&body)?;
    match super::aggregate::aggregate(shared, req, &spec)? {
        crate::command::Reply::Raw(raw) => Ok(raw),
        crate::command::Reply::Document(doc) => bson::RawDocumentBuf::from_document(&doc)
            .map_err(|e| Error::internal(format!("cannot encode a reply: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::command::{CommandName, ParsedCommand};
    use crate::engine::Interrupt;
    use bson::{doc, Regex};

    #[tokio::test]
    async fn only_reads_of_one_id_are_point_reads() {
        let dir = tempfile::tempdir().unwrap();
        let config = crate::config::Config::for_tests(dir.path());
        let shared = Shared::open(config, Arc::new(ManualClock::starting_at_secs(1_000))).unwrap();
        shared
            .engine
            .write(true, |txn, _| {
                let options = doc! {"collation": {"locale": "en", "strength": 2}};
                crate::engine::ddl::create_collection(txn, "db", "folded", options)
            })
            .await
            .unwrap()
            .unwrap();
        let regex = Regex {
            pattern: "a".into(),
            options: String::new(),
        };
        let table = [
            (doc! {"find": "c", "filter": {"_id": 1}}, true),
            (
                doc! {"find": "c", "filter": {"_id": "a"}, "projection": {"x": 1}},
                true,
            ),
            (
                doc! {"find": "c", "filter": {"_id": 1}, "sort": {"x": 1}, "limit": 1},
                true,
            ),
            (doc! {"find": "c", "filter": {"_id": {"$gt": 1}}}, false),
            (doc! {"find": "c", "filter": {"_id": {"a": 1}}}, false),
            (doc! {"find": "c", "filter": {"_id": [1, 2]}}, false),
            (doc! {"find": "c", "filter": {"_id": regex}}, false),
            (doc! {"find": "c", "filter": {"_id": 1, "x": 2}}, false),
            (doc! {"find": "c", "filter": {"x": 1}}, false),
            (doc! {"find": "c"}, false),
            (
                doc! {"find": "c", "filter": {"_id": 1}, "hint": {"x": 1}},
                false,
            ),
            (
                doc! {"find": "c", "filter": {"_id": 1}, "min": {"_id": 0}},
                false,
            ),
            (
                doc! {"find": "c", "filter": {"_id": "a"}, "collation": {"locale": "en"}},
                false,
            ),
            (doc! {"find": "folded", "filter": {"_id": "a"}}, false),
        ];
        for (body, point) in table {
            let body = Arc::new(body);
            let req = Request {
                name: CommandName::Find,
                db: "db",
                body: &body,
                documents: None,
                parsed: ParsedCommand::parse(CommandName::Find, &body, false).unwrap(),
                interrupt: Interrupt::none(),
                session: Default::default(),
                transaction: None,
            };
            assert_eq!(is_point_read(&shared, &req), point, "{body}");
        }
        let body = Arc::new(doc! {"find": "oplog.rs", "filter": {"_id": 1}});
        let req = Request {
            name: CommandName::Find,
            db: "local",
            body: &body,
            documents: None,
            parsed: ParsedCommand::parse(CommandName::Find, &body, false).unwrap(),
            interrupt: Interrupt::none(),
            session: Default::default(),
            transaction: None,
        };
        assert!(!is_point_read(&shared, &req));
    }
}
