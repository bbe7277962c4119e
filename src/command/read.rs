//! `count` and `distinct`: one pass over the visible documents matching a filter, through the
//! engine's access plan. A missing collection is an empty one (mongosh counts `system.profile`).
//!
//! Owns: their arguments, counting with skip/limit, distinct values (array elements, BSON
//! equality, sorted) and the namespace and collation rules the read commands share. Counting is
//! O(matching documents): there is no stored count, and expired documents must not be counted.
//! Opcounters: mongod counts these under `command` only, which dispatch already does.

use super::args::{check_fields, optional_doc, optional_i64, optional_str};
use super::{Request, Shared};
use crate::engine::catalog::{collection_arg, validate_db_name};
use crate::engine::plan;
use crate::error::{Error, ErrorCode, Result};
use crate::query::compare::compare_values;
use crate::query::filter::Filter;
use crate::query::path;
use bson::{doc, Bson, Document};

const COUNT_FIELDS: &[&str] = &[
    "query",
    "limit",
    "skip",
    "hint",
    "collation",
    "fields",
    "encryptionInformation",
    "mirrored",
    "sampleId",
];

pub fn count(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, "count", COUNT_FIELDS)?;
    let coll = collection_arg(cmd.get("count"), "count")?;
    validate_read_namespace(req.db, coll)?;
    let filter_doc = optional_doc(cmd, "count", "query")?
        .cloned()
        .unwrap_or_default();
    let filter = Filter::compile(&filter_doc)?;
    check_collation(cmd, "count")?;
    let skip = match optional_i64(cmd, "count", "skip")? {
        Some(n) if n < 0 => {
            return Err(Error::new(
                ErrorCode::Location51024,
                format!("BSON field 'skip' value must be >= 0, actual value '{n}'"),
            ))
        }
        n => n.unwrap_or(0).unsigned_abs(),
    };
    // A negative limit counts like its absolute value; 0 means no limit.
    let limit = optional_i64(cmd, "count", "limit")?
        .map(i64::unsigned_abs)
        .filter(|l| *l != 0);
    let view = shared.engine.read();
    let mut n = 0u64;
    if let Some(meta) = view.collection(req.db, coll) {
        super::find::check_hint(&meta, cmd.get("hint"))?;
        let matched = plan::matching(&view, &meta, filter, &filter_doc, view.now_cell());
        let cap = limit.map_or(u64::MAX, |l| skip.saturating_add(l));
        let mut seen = 0u64;
        for d in matched {
            d?;
            seen += 1;
            if seen >= cap {
                break;
            }
        }
        n = seen.saturating_sub(skip);
    }
    Ok(doc! {"n": super::stats::number(n), "ok": 1.0})
}

const DISTINCT_FIELDS: &[&str] = &["key", "query", "collation", "hint", "sampleId", "mirrored"];

/// mongod's cap on the `values` array of a distinct reply.
const DISTINCT_MAX_BYTES: usize = 16 * 1024 * 1024;

pub fn distinct(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, "distinct", DISTINCT_FIELDS)?;
    let coll = collection_arg(cmd.get("distinct"), "distinct")?;
    validate_read_namespace(req.db, coll)?;
    let key = optional_str(cmd, "distinct", "key")?.ok_or_else(|| {
        Error::new(
            ErrorCode::Location40414,
            "BSON field 'distinct.key' is missing but a required field",
        )
    })?;
    if key.is_empty() || key.split('.').any(str::is_empty) {
        return Err(Error::bad_value(format!(
            "FieldPath field names may not be empty strings: '{key}'"
        )));
    }
    let key_path = path::split(key);
    let filter_doc = optional_doc(cmd, "distinct", "query")?
        .cloned()
        .unwrap_or_default();
    let filter = Filter::compile(&filter_doc)?;
    check_collation(cmd, "distinct")?;
    let view = shared.engine.read();
    let mut values: Vec<Bson> = Vec::new();
    let mut compact_at = 4096;
    if let Some(meta) = view.collection(req.db, coll) {
        super::find::check_hint(&meta, cmd.get("hint"))?;
        for d in plan::matching(&view, &meta, filter, &filter_doc, view.now_cell()) {
            let d = d?;
            // Each value the path reaches; an array contributes its elements, not itself.
            for value in path::lookup(&d.doc, &key_path).whole() {
                match value {
                    Bson::Array(items) => values.extend(items.iter().cloned()),
                    other => values.push(other.clone()),
                }
            }
            if values.len() > compact_at {
                // Memory stays proportional to the distinct values, not the documents scanned.
                dedup_sorted(&mut values);
                compact_at = compact_at.max(values.len() * 2);
            }
        }
    }
    dedup_sorted(&mut values);
    let bytes: usize = values.iter().map(super::stats::value_size).sum();
    if bytes > DISTINCT_MAX_BYTES {
        return Err(Error::new(
            ErrorCode::Location17217,
            "distinct too big, 16mb cap",
        ));
    }
    Ok(doc! {"values": values, "ok": 1.0})
}

/// Sorts by the BSON order and keeps the first of equal values (so `1` and `1.0` are one value),
/// as mongod's distinct returns them.
fn dedup_sorted(values: &mut Vec<Bson>) {
    values.sort_by(compare_values);
    values.dedup_by(|b, a| compare_values(a, b).is_eq());
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

/// Strings compare by bytes here; a collation other than `simple` would change results, so it
/// is refused rather than ignored.
pub fn check_collation(cmd: &Document, command: &str) -> Result<()> {
    match optional_doc(cmd, command, "collation")? {
        None => Ok(()),
        Some(c) if c.is_empty() || c.get_str("locale") == Ok("simple") => Ok(()),
        Some(_) => Err(Error::new(
            ErrorCode::NotImplemented,
            "collations other than 'simple' are not supported by this server",
        )),
    }
}
