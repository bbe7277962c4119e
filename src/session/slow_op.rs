//! The slow-operation line, with the fields mongod's "Slow query" line has: the namespace, the
//! command's shape, the plan summary, keys and documents examined, documents returned, the
//! duration and the client. `--log-format json` writes it under mongod's id 51803, so tools
//! that look for slow queries in mongod's logs find these.
//!
//! The command is logged as its shape, never with the client's values: every literal becomes
//! `"?<type>"` (`"?string"`, `"?number"`, …) as in mongod's query shapes, field names and
//! operators stay, inserted documents are left out, and the session's bookkeeping fields
//! (`lsid`, `$clusterTime`, …) are dropped. Nesting is bounded: client input can be deep.
//! Secrets are replaced (`command::secrets`) before the shape is taken, as for every record of
//! a command.

use crate::command::profiler::Operation;
use crate::command::Connection;
use crate::protocol::Reply;
use bson::{Bson, Document};

/// mongod's log id of its "Slow query" line.
pub const SLOW_QUERY_LOG_ID: u32 = 51803;
/// Levels of the shape kept; deeper values are summarised as `"?object"` or `"?array"`.
const MAX_SHAPE_DEPTH: usize = 12;
/// Elements of an array of documents kept (pipeline stages, update statements).
const MAX_ARRAY_ITEMS: usize = 16;
/// Fields a driver adds to every command, left out of the shape.
const ENVELOPE_FIELDS: &[&str] = &[
    "lsid",
    "$clusterTime",
    "txnNumber",
    "autocommit",
    "startTransaction",
    "$readPreference",
    "signature",
    "apiVersion",
    "apiStrict",
    "apiDeprecationErrors",
];
/// Fields whose values are the client's documents, not a shape: only their count is kept.
const DATA_FIELDS: &[&str] = &["documents"];

/// Logs `op` as a slow operation.
pub fn log(conn: &Connection, op: &Operation<'_>) {
    let body = crate::command::secrets::for_logging(op.body);
    let shape = Bson::Document(query_shape(&body)).into_relaxed_extjson();
    // Commands that read nothing through the executor have no plan and examine nothing.
    let plan_summary = op.interrupt.plans.summary();
    let totals = plan_summary.as_ref().map(|_| op.interrupt.plans.totals());
    let reply = op.reply();
    let n_returned = reply.and_then(Reply::batch_len);
    let error_code = reply.and_then(Reply::error_code);
    tracing::info!(
        log_id = SLOW_QUERY_LOG_ID,
        r#type = "command",
        ns = %op.namespace(),
        command = %shape,
        planSummary = plan_summary.as_deref(),
        keysExamined = totals.map(|t| t.keys_examined),
        docsExamined = totals.map(|t| t.docs_examined),
        nreturned = n_returned,
        errCode = error_code,
        remote = %conn.peer,
        appName = conn.app_name(),
        durationMillis = u64::try_from(op.elapsed.as_millis()).unwrap_or(u64::MAX),
        requestCharge = op.request_charge,
        "Slow query"
    );
}

/// The command with every literal replaced by its type.
pub fn query_shape(body: &Document) -> Document {
    let mut shape = Document::new();
    for (i, (field, value)) in body.iter().enumerate() {
        if ENVELOPE_FIELDS.contains(&field.as_str()) || field == "$db" {
            continue;
        }
        let names_collection = matches!(
            value,
            Bson::String(_) | Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_)
        );
        let value = if i == 0 && names_collection {
            // The command name's value: the collection, or 1.
            value.clone()
        } else if DATA_FIELDS.contains(&field.as_str()) {
            match value {
                Bson::Array(items) => Bson::String(format!("?array of {}", items.len())),
                other => Bson::String(placeholder(other)),
            }
        } else {
            shape_of(value, 0)
        };
        shape.insert(field.clone(), value);
    }
    shape
}

fn shape_of(value: &Bson, depth: usize) -> Bson {
    match value {
        Bson::Document(doc) if depth < MAX_SHAPE_DEPTH => Bson::Document(
            doc.iter()
                .map(|(k, v)| (k.clone(), shape_of(v, depth + 1)))
                .collect(),
        ),
        Bson::Array(items)
            if depth < MAX_SHAPE_DEPTH
                && !items.is_empty()
                && items.iter().all(|i| matches!(i, Bson::Document(_))) =>
        {
            let mut shaped: Vec<Bson> = items
                .iter()
                .take(MAX_ARRAY_ITEMS)
                .map(|i| shape_of(i, depth + 1))
                .collect();
            if items.len() > MAX_ARRAY_ITEMS {
                shaped.push(Bson::String(format!(
                    "?{} more",
                    items.len() - MAX_ARRAY_ITEMS
                )));
            }
            Bson::Array(shaped)
        }
        other => Bson::String(placeholder(other)),
    }
}

/// `"?<type>"` for a literal, with the type names of mongod's query shapes.
fn placeholder(value: &Bson) -> String {
    let name = match value {
        Bson::Double(_) | Bson::Int32(_) | Bson::Int64(_) | Bson::Decimal128(_) => "number",
        Bson::String(_) | Bson::Symbol(_) => "string",
        Bson::Document(_) => "object",
        Bson::Array(_) => "array",
        Bson::Boolean(_) => "bool",
        Bson::Null | Bson::Undefined => "null",
        Bson::ObjectId(_) => "objectId",
        Bson::DateTime(_) => "date",
        Bson::Timestamp(_) => "timestamp",
        Bson::Binary(_) => "binData",
        Bson::RegularExpression(_) => "regex",
        Bson::JavaScriptCode(_) | Bson::JavaScriptCodeWithScope(_) => "javascript",
        Bson::MinKey => "minKey",
        Bson::MaxKey => "maxKey",
        Bson::DbPointer(_) => "dbPointer",
    };
    format!("?{name}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn literals_become_their_types_and_structure_stays() {
        let body = doc! {
            "find": "orders",
            "filter": {"status": "open", "total": {"$gt": 100}, "tags": ["a", "b"],
                       "$or": [{"x": true}, {"y": null}]},
            "sort": {"total": -1},
            "limit": 5,
            "lsid": {"id": 1},
            "$db": "shop",
        };
        assert_eq!(
            query_shape(&body),
            doc! {
                "find": "orders",
                "filter": {"status": "?string", "total": {"$gt": "?number"}, "tags": "?array",
                           "$or": [{"x": "?bool"}, {"y": "?null"}]},
                "sort": {"total": "?number"},
                "limit": "?number",
            }
        );
    }

    #[test]
    fn a_command_whose_own_value_is_data_is_shaped_too() {
        let body = doc! {"endSessions": [{"id": 1}, {"id": 2}], "$db": "admin"};
        assert_eq!(
            query_shape(&body),
            doc! {"endSessions": [{"id": "?number"}, {"id": "?number"}]}
        );
    }

    #[test]
    fn inserted_documents_are_counted_not_logged() {
        let body =
            doc! {"insert": "c", "documents": [{"secret": "x"}, {"secret": "y"}], "$db": "d"};
        assert_eq!(
            query_shape(&body),
            doc! {"insert": "c", "documents": "?array of 2"}
        );
    }

    #[test]
    fn deep_and_long_input_is_bounded() {
        let mut deep = doc! {"leaf": 1};
        for _ in 0..200 {
            deep = doc! {"a": deep};
        }
        let pipeline: Vec<Bson> = (0..100)
            .map(|i| Bson::Document(doc! {"$match": {"i": i}}))
            .collect();
        let shape = query_shape(&doc! {"aggregate": "c", "filter": deep, "pipeline": pipeline});
        let mut depth = 0;
        let mut value = shape.get("filter").unwrap();
        while let Bson::Document(d) = value {
            depth += 1;
            value = d.get("a").unwrap();
        }
        assert_eq!(value, &Bson::String("?object".into()));
        assert!(depth <= MAX_SHAPE_DEPTH + 1);
        let stages = shape.get_array("pipeline").unwrap();
        assert_eq!(stages.len(), MAX_ARRAY_ITEMS + 1);
        assert_eq!(stages.last(), Some(&Bson::String("?84 more".into())));
    }
}
