//! Collection and database commands: `create`, `drop`, `dropDatabase`, `renameCollection`,
//! `listCollections` and `listDatabases`.
//!
//! Owns: their arguments, which `create` options mayfly accepts (options that would change
//! semantics it does not implement — capped collections, views, time series, validation,
//! clustered collections — are refused with 115, never ignored; a default collation is kept,
//! normalized, in the options), and the reply shapes. Does not own: catalog changes
//! (`engine::ddl`), indexes (`index`), listing cursors (`listing`) or the change-stream images
//! option (`images`).

use super::images::images_option;
use super::index::id_index_entry;
use super::listing::{cursor_batch_size, listing_cursor};
use crate::command::args::{
    check_fields, durable, optional_bool, optional_doc, optional_i64, optional_str, wrong_type,
};
use crate::command::{Request, Shared};
use crate::engine::catalog::{collection_arg, validate_collection_name, validate_db_name};
use crate::engine::ddl;
use crate::error::{Error, ErrorCode, Result};
use crate::query::filter::Filter;
use bson::{doc, Bson, Document};

// ---------------------------------------------------------------------------------------------
// create

const CREATE_FIELDS: &[&str] = &[
    "capped",
    "size",
    "max",
    "validator",
    "validationLevel",
    "validationAction",
    "viewOn",
    "pipeline",
    "collation",
    "timeseries",
    "clusteredIndex",
    "idIndex",
    "expireAfterSeconds",
    "storageEngine",
    "indexOptionDefaults",
    "changeStreamPreAndPostImages",
    "encryptedFields",
    "temp",
    "flags",
    "autoIndexId",
];

pub async fn create(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, "create", CREATE_FIELDS)?;
    let coll = collection_arg(cmd.get("create"), "create")?.to_owned();
    validate_collection_name(req.db, &coll)?;
    let options = create_options(cmd)?;
    let db = req.db.to_owned();
    crate::command::transactions::write(shared, req, durable(cmd), move |txn, _now| {
        ddl::create_collection(txn, &db, &coll, options).map(|_| ())
    })
    .await??;
    Ok(doc! {"ok": 1.0})
}

/// The options `listCollections` will show; refuses what mayfly does not implement.
fn create_options(cmd: &Document) -> Result<Document> {
    let refuse = |what: &str| {
        Err(Error::new(
            ErrorCode::CommandNotSupported,
            format!("{what} not supported by mayfly"),
        ))
    };
    if optional_bool(cmd, "create", "capped")? == Some(true) {
        return refuse("capped collections are");
    }
    if cmd.contains_key("viewOn") || cmd.contains_key("pipeline") {
        return refuse("views ('viewOn', 'pipeline') are");
    }
    if cmd.contains_key("timeseries") {
        return refuse("time series collections ('timeseries') are");
    }
    if cmd.contains_key("clusteredIndex") {
        return refuse("clustered collections ('clusteredIndex') are");
    }
    if cmd.contains_key("encryptedFields") {
        return refuse("queryable encryption ('encryptedFields') is");
    }
    // Drivers from before 2018 (the Java 3.x drivers among them) send `autoIndexId: true` on
    // every create. Every mayfly collection is clustered on `_id`, so it always has that index.
    let auto_index_id = optional_bool(cmd, "create", "autoIndexId")?;
    if auto_index_id == Some(false) {
        return refuse("collections without an _id index ('autoIndexId: false') are");
    }
    if optional_bool(cmd, "create", "temp")? == Some(true) {
        return refuse("temporary collections ('temp') are");
    }
    if optional_doc(cmd, "create", "validator")?.is_some_and(|v| !v.is_empty()) {
        return refuse("document validation ('validator') is");
    }
    // The collection's default collation, for operations and indexes that name none.
    let collation = optional_doc(cmd, "create", "collation")?
        .map(crate::query::collation::Collation::parse)
        .transpose()?
        .flatten();
    let images = images_option(cmd, "create")?;
    if cmd.contains_key("expireAfterSeconds") {
        return Err(Error::new(
            ErrorCode::InvalidOptions,
            "'expireAfterSeconds' requires clustering to be enabled; a collection's TTL is set by a TTL index on '_ts' (createIndexes with key {_ts: 1} and expireAfterSeconds)",
        ));
    }
    if let Some(id_index) = optional_doc(cmd, "create", "idIndex")? {
        let key_ok =
            matches!(id_index.get("key"), Some(Bson::Document(k)) if k == &doc! {"_id": 1});
        let name_ok = matches!(id_index.get_str("name"), Ok("_id_") | Err(_));
        if !key_ok || !name_ok {
            return Err(Error::bad_value(
                "The _id index must have key pattern {_id: 1} and name '_id_'",
            ));
        }
    }
    // Accepted without effect on a collection that is not capped.
    optional_i64(cmd, "create", "size")?;
    optional_i64(cmd, "create", "max")?;
    optional_i64(cmd, "create", "flags")?;
    let mut options = Document::new();
    if auto_index_id == Some(true) {
        // Shown by listCollections, as mongod shows an explicit autoIndexId.
        options.insert("autoIndexId", true);
    }
    if let Some(collation) = &collation {
        options.insert("collation", collation.to_document());
    }
    if images == Some(true) {
        options.insert("changeStreamPreAndPostImages", doc! {"enabled": true});
    }
    for (field, allowed) in [
        ("validationLevel", &["off", "strict", "moderate"][..]),
        ("validationAction", &["error", "warn"][..]),
    ] {
        if let Some(value) = optional_str(cmd, "create", field)? {
            if !allowed.contains(&value) {
                return Err(Error::bad_value(format!(
                    "Enumeration value '{value}' for field 'create.{field}' is not a valid value."
                )));
            }
            options.insert(field, value);
        }
    }
    for field in ["storageEngine", "indexOptionDefaults"] {
        if let Some(value) = optional_doc(cmd, "create", field)? {
            if !value.is_empty() {
                options.insert(field, value.clone());
            }
        }
    }
    Ok(options)
}

// ---------------------------------------------------------------------------------------------
// drop, dropDatabase, renameCollection

pub async fn drop(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, "drop", &[])?;
    let coll = collection_arg(cmd.get("drop"), "drop")?.to_owned();
    if coll == crate::command::profiler::PROFILE_COLLECTION {
        if shared.profiler.level(req.db) != 0 {
            return Err(Error::new(
                ErrorCode::IllegalOperation,
                "turn off profiling before dropping system.profile collection",
            ));
        }
    } else {
        validate_collection_name(req.db, &coll)?;
    }
    let db = req.db.to_owned();
    let ns = format!("{db}.{coll}");
    let dropped = shared
        .engine
        .write(durable(cmd), move |txn, _now| {
            ddl::drop_collection(txn, &db, &coll)
        })
        .await??;
    // mongod 7.0 (SERVER-43894): dropping a collection that does not exist succeeds, `{ok: 1}`.
    Ok(match dropped {
        Some(meta) => doc! {
            "nIndexesWas": i32::try_from(1 + meta.indexes.len()).unwrap_or(i32::MAX),
            "ns": ns,
            "ok": 1.0,
        },
        None => doc! {"ok": 1.0},
    })
}

pub async fn drop_database(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, "dropDatabase", &[])?;
    if !matches!(cmd.get("dropDatabase"), Some(v) if crate::query::compare::values_equal(v, &Bson::Int32(1)))
    {
        return Err(Error::failed_to_parse("have to pass 1 as db parameter"));
    }
    validate_db_name(req.db)?;
    let db = req.db.to_owned();
    let dropped = shared
        .engine
        .write(durable(cmd), move |txn, _now| -> Result<bool> {
            let names = ddl::collection_names(txn, &db);
            for name in &names {
                ddl::drop_collection(txn, &db, name)?;
            }
            if !names.is_empty() {
                ddl::log_drop_database(txn, &db)?;
            }
            // Its Cosmos settings (`customAction` `CreateDatabase`) go with it.
            let had_settings = ddl::set_database_settings(txn, &db, None)?;
            Ok(!names.is_empty() || had_settings)
        })
        .await??;
    // As mongod: `dropped` only when the database existed.
    Ok(if dropped {
        doc! {"dropped": req.db, "ok": 1.0}
    } else {
        doc! {"ok": 1.0}
    })
}

pub async fn rename_collection(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, "renameCollection", &["to", "dropTarget", "stayTemp"])?;
    let from = namespace_arg(cmd, "renameCollection", "source")?;
    let to = namespace_arg(cmd, "to", "target")?;
    let drop_target = optional_bool(cmd, "renameCollection", "dropTarget")?.unwrap_or(false);
    optional_bool(cmd, "renameCollection", "stayTemp")?;
    validate_collection_name(&to.0, &to.1).map_err(|_| {
        Error::new(
            ErrorCode::InvalidNamespace,
            format!("Invalid target namespace: {}.{}", to.0, to.1),
        )
    })?;
    let source = format!("{}.{}", from.0, from.1);
    shared
        .engine
        .write(durable(cmd), move |txn, _now| {
            ddl::rename_collection(txn, (&from.0, &from.1), (&to.0, &to.1), drop_target)
        })
        .await?
        .map_err(|e| match e.code {
            ErrorCode::NamespaceNotFound => Error::new(
                ErrorCode::NamespaceNotFound,
                format!("Source collection {source} does not exist"),
            ),
            _ => e,
        })?;
    Ok(doc! {"ok": 1.0})
}

/// `"db.coll"` as (db, coll); 73 InvalidNamespace when it is not one.
fn namespace_arg(cmd: &Document, field: &str, role: &str) -> Result<(String, String)> {
    let ns = match cmd.get(field) {
        Some(Bson::String(ns)) => ns,
        Some(other) => return Err(wrong_type("renameCollection", field, other, "string")),
        None => {
            return Err(Error::new(
                ErrorCode::Location40414,
                format!("BSON field 'renameCollection.{field}' is missing but a required field"),
            ))
        }
    };
    let invalid = || {
        Error::new(
            ErrorCode::InvalidNamespace,
            format!("Invalid {role} namespace: {ns}"),
        )
    };
    let (db, coll) = ns.split_once('.').ok_or_else(invalid)?;
    if coll.is_empty() || validate_db_name(db).is_err() {
        return Err(invalid());
    }
    Ok((db.to_owned(), coll.to_owned()))
}

// ---------------------------------------------------------------------------------------------
// listCollections, listDatabases

const LIST_COLLECTIONS_FIELDS: &[&str] = &[
    "filter",
    "nameOnly",
    "authorizedCollections",
    "cursor",
    "includePendingDrops",
];

pub fn list_collections(shared: &Shared, req: &Request<'_>) -> Result<bson::RawDocumentBuf> {
    let cmd = req.body;
    check_fields(cmd, "listCollections", LIST_COLLECTIONS_FIELDS)?;
    let filter = compile_filter(cmd, "listCollections")?;
    let name_only = optional_bool(cmd, "listCollections", "nameOnly")?.unwrap_or(false);
    optional_bool(cmd, "listCollections", "authorizedCollections")?;
    optional_bool(cmd, "listCollections", "includePendingDrops")?;
    let batch_size = cursor_batch_size(cmd, "listCollections")?;
    let catalog = shared.engine.catalog()?;
    let mut entries = Vec::new();
    for meta in catalog.collections_in(req.db) {
        let entry = doc! {
            "name": meta.name.as_str(),
            "type": "collection",
            "options": meta.options.clone(),
            "info": {"readOnly": false, "uuid": meta.uuid},
            "idIndex": id_index_entry(),
        };
        // The filter sees the full entry, also with nameOnly (a superset of what mongod allows).
        if let Some(f) = &filter {
            if !f.matches(&entry)? {
                continue;
            }
        }
        entries.push(if name_only {
            doc! {"name": meta.name.as_str(), "type": "collection"}
        } else {
            entry
        });
    }
    listing_cursor(
        shared,
        format!("{}.$cmd.listCollections", req.db),
        entries,
        batch_size,
    )
}

pub fn list_databases(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(
        cmd,
        "listDatabases",
        &["filter", "nameOnly", "authorizedDatabases"],
    )?;
    let filter = compile_filter(cmd, "listDatabases")?;
    let name_only = optional_bool(cmd, "listDatabases", "nameOnly")?.unwrap_or(false);
    optional_bool(cmd, "listDatabases", "authorizedDatabases")?;
    let view = shared.engine.read()?;
    let mut databases = Vec::new();
    let mut total: i64 = 0;
    let mut names = view.catalog.databases();
    names.extend(SYSTEM_DATABASES.iter().map(|d| (*d).to_owned()));
    names.sort();
    names.dedup();
    for name in names {
        let entry = if name_only {
            doc! {"name": name.as_str()}
        } else {
            let size = i64::try_from(database_size(shared, &view, &name)?).unwrap_or(i64::MAX);
            doc! {"name": name.as_str(), "sizeOnDisk": size, "empty": size == 0}
        };
        if let Some(f) = &filter {
            if !f.matches(&entry)? {
                continue;
            }
        }
        total = total.saturating_add(entry.get_i64("sizeOnDisk").unwrap_or(0));
        databases.push(Bson::Document(entry));
    }
    Ok(if name_only {
        doc! {"databases": databases, "ok": 1.0}
    } else {
        doc! {
            "databases": databases,
            "totalSize": total,
            "totalSizeMb": total / (1024 * 1024),
            "ok": 1.0,
        }
    })
}

/// The databases mongod always lists, whatever they hold: `admin` (here: its collections and
/// every user, as mongod keeps users in `admin.system.users`), `config` (the sessions'
/// transaction records) and `local` (the operation log in replica-set mode; mongod's
/// `startup_log` has no counterpart).
const SYSTEM_DATABASES: &[&str] = &["admin", "config", "local"];

/// `sizeOnDisk`: the stored bytes of the database's visible documents (TTL-18 hides expired
/// ones), from the collections' counters, not the engine's files, which databases share; plus
/// the users' entries for `admin` and the operation log for `local`.
fn database_size(shared: &Shared, view: &crate::engine::ReadView, name: &str) -> Result<u64> {
    let mut size: u64 = 0;
    for meta in view.catalog.collections_in(name) {
        size = size.saturating_add(view.visible_totals(meta)?.size);
    }
    match name {
        "admin" => {
            for user in view.catalog.all_users() {
                let bytes = bson::to_vec(user.as_ref()).map_or(0, |b| b.len() as u64);
                size = size.saturating_add(bytes);
            }
        }
        "local" if shared.engine.oplog().is_enabled() => {
            size = size.saturating_add(shared.engine.oplog().bytes());
        }
        _ => {}
    }
    Ok(size)
}

fn compile_filter(cmd: &Document, command: &str) -> Result<Option<Filter>> {
    match optional_doc(cmd, command, "filter")? {
        Some(f) if !f.is_empty() => Filter::compile(f).map(Some),
        _ => Ok(None),
    }
}
