//! `count` and `distinct`: one pass over the visible documents matching a filter, through the
//! executor. A missing collection is an empty one (mongosh counts `system.profile`).
//!
//! Owns: their arguments, counting with skip/limit, distinct values (array elements, BSON
//! equality, sorted) and the namespace and collation rules the read commands share. Counting a
//! filter is O(matching documents); `count` with an empty query and no hint (what drivers send
//! for `estimatedDocumentCount`) reads the collection's counter instead, as mongod's fast count
//! does, less the expired documents not yet reaped (TTL-18).
//! Opcounters: mongod counts these under `command` only, which dispatch already does.

use crate::command::spec::Spec;
use crate::command::{Request, Shared};
use crate::engine::catalog::{collection_arg, validate_db_name};
use crate::engine::exec::{Hint, ReadRequest};
use crate::error::{Error, ErrorCode, Result};
use crate::query::collation::Collation;
use crate::query::compare::compare_values_with;
use crate::query::path;
use bson::{doc, Bson, Document};
use std::sync::Arc;

/// `count`'s own fields (mongod 7.0's `count.idl`), read in one pass by [`Spec`].
#[derive(Debug, Default)]
pub struct CountSpec {
    collection: String,
    query: Option<Document>,
    limit: Option<i64>,
    skip: Option<i64>,
    hint: Option<Bson>,
    collation: Option<Document>,
}

impl CountSpec {
    /// Reads `cmd`: the first field's error first, then the first bad field by position.
    pub fn read(cmd: &Document) -> Result<CountSpec> {
        let collection = collection_arg(cmd.get("count"), "count")?.to_owned();
        let mut spec = Spec::new("count", cmd);
        let count = CountSpec {
            collection,
            query: spec.doc("query").cloned(),
            limit: spec.i64("limit"),
            skip: spec.i64("skip"),
            hint: spec.take("hint").cloned(),
            collation: spec.doc("collation").cloned(),
        };
        // `fields` is kept for old clients, `mirrored` and `sampleId` only mongod's own
        // sampling sends: known, meaningless here.
        for field in ["fields", "mirrored", "sampleId"] {
            spec.take(field);
        }
        spec.finish()?;
        Ok(count)
    }

    pub fn collection(&self) -> &str {
        &self.collection
    }

    /// Whether the count answers from the collection's stored counter: an empty query and no
    /// hint.
    pub fn is_fast(&self) -> bool {
        self.query.as_ref().is_none_or(Document::is_empty) && self.hint.is_none()
    }

    /// The documents that hold its filters: `query`.
    pub fn expressions(&self) -> impl Iterator<Item = &Document> {
        self.query.iter()
    }
}

/// A parsed `count`: the read request (with skip and limit) and its collection.
pub struct CountArgs {
    pub collection: String,
    pub read: ReadRequest,
}

impl CountArgs {
    /// Compiles `spec`; `now` is `$$NOW` for the query's `$expr`s.
    pub fn parse(db: &str, spec: &CountSpec, now: bson::DateTime) -> Result<CountArgs> {
        let coll = spec.collection.as_str();
        validate_read_namespace(db, coll)?;
        let filter_doc = spec.query.clone().unwrap_or_default();
        let mut read =
            ReadRequest::with_variables(filter_doc, crate::query::expr::Variables::new(now))?
                .requested_collation(collation_of(spec.collation.as_ref())?)?;
        read.skip = match spec.skip {
            Some(n) if n < 0 => {
                return Err(Error::new(
                    ErrorCode::Location51024,
                    format!("BSON field 'skip' value must be >= 0, actual value '{n}'"),
                ))
            }
            n => n.unwrap_or(0).unsigned_abs(),
        };
        // A negative limit counts like its absolute value; 0 means no limit.
        read.limit = spec.limit.map(i64::unsigned_abs).filter(|l| *l != 0);
        read.hint = Hint::parse(spec.hint.as_ref())?;
        read.decode = false;
        read.count_only = true;
        Ok(CountArgs {
            collection: coll.to_owned(),
            read,
        })
    }
}

pub fn count(shared: &Shared, req: &Request<'_>, spec: &CountSpec) -> Result<Document> {
    let args = CountArgs::parse(req.db, spec, shared.clock.now_datetime())?;
    let view = shared.engine.read()?;
    let meta = view.collection(req.db, &args.collection);
    // mongod counts from the record store only without a hint: a hint makes it plan (and fail
    // on an unknown index).
    if args.read.filter.is_empty() && args.read.hint.is_none() {
        let total = match &meta {
            Some(meta) => view.visible_count(meta)?,
            None => 0,
        };
        let n = total.saturating_sub(args.read.skip);
        let n = args.read.limit.map_or(n, |limit| n.min(limit));
        return Ok(doc! {"n": crate::command::reply_number::number(n), "ok": 1.0});
    }
    let execution = view.execute(
        meta.as_deref(),
        &args.read,
        view.now_cell(),
        Arc::clone(&req.interrupt),
    )?;
    let mut n = 0u64;
    for d in execution.docs {
        d?;
        n += 1;
    }
    Ok(doc! {"n": crate::command::reply_number::number(n), "ok": 1.0})
}

/// mongod's cap on the `values` array of a distinct reply.
const DISTINCT_MAX_BYTES: usize = 16 * 1024 * 1024;

/// A parsed `distinct`: the field path and the read request of the documents it looks at.
pub struct DistinctArgs {
    pub collection: String,
    pub key: Vec<String>,
    pub read: ReadRequest,
}

/// `distinct`'s own fields (mongod 7.0's `distinct.idl`), read in one pass by [`Spec`].
#[derive(Debug, Default)]
pub struct DistinctSpec {
    collection: String,
    key: String,
    query: Option<Document>,
    hint: Option<Bson>,
    collation: Option<Document>,
}

impl DistinctSpec {
    /// Reads `cmd`: the first field's error first, then the first bad field by position, then
    /// a missing `key` (40414).
    pub fn read(cmd: &Document) -> Result<DistinctSpec> {
        let collection = collection_arg(cmd.get("distinct"), "distinct")?.to_owned();
        let mut spec = Spec::new("distinct", cmd);
        let key = spec.str("key").unwrap_or_default().to_owned();
        // An empty path or an empty part of one (`a..b`): mongod's FieldPath validator.
        if key.split('.').any(str::is_empty) && matches!(cmd.get("key"), Some(Bson::String(_))) {
            let error = Error::bad_value(format!(
                "FieldPath field names may not be empty strings: '{key}'"
            ));
            spec.refuse("key", error);
        }
        let distinct = DistinctSpec {
            collection,
            key,
            query: spec.doc("query").cloned(),
            hint: spec.take("hint").cloned(),
            collation: spec.doc("collation").cloned(),
        };
        // Only mongod's own sampling and mirroring send these: known, meaningless here.
        for field in ["mirrored", "sampleId"] {
            spec.take(field);
        }
        spec.require("key");
        spec.finish()?;
        Ok(distinct)
    }

    pub fn collection(&self) -> &str {
        &self.collection
    }

    /// The documents that hold its filters: `query`.
    pub fn expressions(&self) -> impl Iterator<Item = &Document> {
        self.query.iter()
    }
}

impl DistinctArgs {
    /// Compiles `spec`; `now` is `$$NOW` for the query's `$expr`s.
    pub fn parse(db: &str, spec: &DistinctSpec, now: bson::DateTime) -> Result<DistinctArgs> {
        let coll = spec.collection.as_str();
        validate_read_namespace(db, coll)?;
        let filter_doc = spec.query.clone().unwrap_or_default();
        let mut read =
            ReadRequest::with_variables(filter_doc, crate::query::expr::Variables::new(now))?
                .requested_collation(collation_of(spec.collation.as_ref())?)?;
        read.hint = Hint::parse(spec.hint.as_ref())?;
        Ok(DistinctArgs {
            collection: coll.to_owned(),
            key: path::split(&spec.key),
            read,
        })
    }
}

pub fn distinct(shared: &Shared, req: &Request<'_>, spec: &DistinctSpec) -> Result<Document> {
    let args = DistinctArgs::parse(req.db, spec, shared.clock.now_datetime())?;
    let view = crate::command::transactions::read_view(shared, req)?;
    let meta = view.collection(req.db, &args.collection);
    // Values equal under the collation (the command's, else the collection's) are one value.
    let collation = match &meta {
        Some(m) => args.read.for_collection(m)?.collation.clone(),
        None => args.read.collation.clone(),
    };
    let collation = collation.as_ref();
    let execution = view.execute(
        meta.as_deref(),
        &args.read,
        view.now_cell(),
        Arc::clone(&req.interrupt),
    )?;
    let mut values: Vec<Bson> = Vec::new();
    let mut compact_at = 4096;
    for d in execution.docs {
        let d = d?;
        // Each value the path reaches; an array contributes its elements, not itself.
        for value in path::lookup(&d.doc, &args.key).whole() {
            match value {
                Bson::Array(items) => values.extend(items.iter().cloned()),
                other => values.push(other.clone()),
            }
        }
        if values.len() > compact_at {
            // Memory stays proportional to the distinct values, not the documents scanned.
            dedup_sorted(&mut values, collation);
            compact_at = compact_at.max(values.len() * 2);
        }
    }
    dedup_sorted(&mut values, collation);
    let bytes: usize = values.iter().map(crate::query::size::value_size).sum();
    if bytes > DISTINCT_MAX_BYTES {
        return Err(Error::new(
            ErrorCode::Location17217,
            "distinct too big, 16mb cap",
        ));
    }
    Ok(doc! {"values": values, "ok": 1.0})
}

/// Sorts by the BSON order and keeps the first of equal values (so `1` and `1.0` are one value,
/// and under a collation so are strings it finds equal), as mongod's distinct returns them.
fn dedup_sorted(values: &mut Vec<Bson>, collation: Option<&Collation>) {
    values.sort_by(|a, b| compare_values_with(a, b, collation));
    values.dedup_by(|b, a| compare_values_with(a, b, collation).is_eq());
}

/// The namespace rules for reads. Looser than for writes: `system.*` collections may be read
/// (they are simply missing here, so reads find nothing).
pub fn validate_read_namespace(db: &str, coll: &str) -> Result<()> {
    validate_db_name(db)?;
    if coll.is_empty() || coll.starts_with('.') || coll.contains('\0') {
        return Err(Error::new(
            ErrorCode::InvalidNamespace,
            format!("Invalid namespace specified '{db}.{coll}'"),
        ));
    }
    Ok(())
}

/// A `collation` as a spec read it: `None` when absent or empty (the collection's default
/// applies), else the parsed collation (`Some(None)`: the simple collation).
pub fn collation_of(collation: Option<&Document>) -> Result<Option<Option<Collation>>> {
    match collation {
        None => Ok(None),
        Some(c) if c.is_empty() => Ok(None),
        Some(c) => Collation::parse(c).map(Some),
    }
}
