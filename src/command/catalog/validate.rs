//! `validate`: the reply mongod 7.0 gives, over `engine::validate`'s structure check of one
//! collection (records, secondary indexes, expiry keys, stored count) in one snapshot. Runs on
//! the blocking pool and stops when the operation is killed or its `maxTimeMS` passes.
//!
//! `full`, `background`, `checkBSONConformance` and `enforceFastCount` are accepted: mayfly
//! always checks everything (every record's BSON decodes, the stored count is compared) and reads
//! a snapshot, so it never blocks writers. `repair: true` and `metadata: true` (a check of the
//! metadata alone) are refused with 238.

use crate::command::args::{check_fields, optional_bool};
use crate::command::reply_number::number as count;
use crate::command::{Request, Shared};
use crate::engine::catalog::collection_arg;
use crate::engine::documents::validate::validate as check;
use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Bson, Document};

const FIELDS: &[&str] = &[
    "full",
    "repair",
    "metadata",
    "background",
    "checkBSONConformance",
    "enforceFastCount",
    "scandata",
];

pub fn validate(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, "validate", FIELDS)?;
    let coll = collection_arg(cmd.get("validate"), "validate")?;
    for flag in FIELDS {
        if optional_bool(cmd, "validate", flag)? == Some(true)
            && matches!(*flag, "repair" | "metadata")
        {
            return Err(Error::new(
                ErrorCode::NotImplemented,
                format!("validate's '{flag}' is not supported by mayfly"),
            ));
        }
    }
    let ns = format!("{}.{coll}", req.db);
    let view = shared.engine.read()?;
    let Some(meta) = view.collection(req.db, coll) else {
        return Err(Error::new(
            ErrorCode::NamespaceNotFound,
            format!("Collection '{ns}' does not exist to validate."),
        ));
    };
    let found = check(&view.snapshot, &meta, &req.interrupt)?;
    let mut keys_per_index = doc! {"_id_": count(found.records)};
    // A record stored under another `_id`'s key is a fault of the `_id` index (the clustering).
    let mut index_details = doc! {"_id_": {"valid": found.corrupt_records == 0}};
    let mut errors: Vec<Bson> = found
        .errors
        .iter()
        .map(|e| Bson::from(e.as_str()))
        .collect();
    for index in &found.indexes {
        keys_per_index.insert(&index.name, count(index.keys));
        let mut detail = doc! {"valid": index.errors.is_empty()};
        if !index.errors.is_empty() {
            detail.insert("errors", index.errors.clone());
        }
        index_details.insert(&index.name, detail);
        errors.extend(index.errors.iter().map(|e| Bson::from(e.as_str())));
    }
    for index in meta
        .indexes
        .iter()
        .filter(|i| !i.is_stored() && !i.building)
    {
        // The `_ts` index is the expiry keys.
        keys_per_index.insert(&index.name, count(found.expiry_entries));
        index_details.insert(&index.name, doc! {"valid": found.expiry_valid});
    }
    let valid = found.valid();
    let advice = if valid {
        ""
    } else {
        "mayfly cannot repair a collection: re-create an index that is wrong (dropIndexes, then createIndexes), and rewrite or delete the documents named in errors"
    };
    Ok(doc! {
        "ns": ns,
        "uuid": meta.uuid,
        "nInvalidDocuments": count(found.corrupt_records),
        "nNonCompliantDocuments": 0_i64,
        "nrecords": count(found.records),
        "nIndexes": count(meta.indexes.iter().filter(|i| !i.building).count() as u64 + 1),
        "keysPerIndex": keys_per_index,
        "indexDetails": index_details,
        "valid": valid,
        "repaired": false,
        "warnings": found.warnings,
        "errors": errors,
        "extraIndexEntries": found.extra_entries,
        "missingIndexEntries": found.missing_entries,
        "corruptRecords": [],
        "advice": advice,
        "ok": 1.0,
    })
}
