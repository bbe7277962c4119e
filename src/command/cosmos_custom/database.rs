//! `customAction` `CreateDatabase`, `UpdateDatabase` and `GetDatabase`: a database's provisioned
//! throughput, which its collections share unless they have their own.
//!
//! A database exists while it has a collection or settings of its own. Where Microsoft's page
//! is silent mayfly decides: creating a database that exists fails with 48 NamespaceExists,
//! reading or updating one that does not with 26 NamespaceNotFound, and updating a database
//! without throughput of its own with 2 BadValue.

use super::throughput;
use crate::command::args::{check_fields, durable};
use crate::command::{Request, Shared};
use crate::engine::catalog::validate_db_name;
use crate::engine::{ddl, Catalog, Txn};
use crate::error::{Error, ErrorCode, Result};
use crate::profile::account::{DatabaseSettings, Throughput};
use bson::{doc, Document};

/// `{customAction: "CreateDatabase", offerThroughput?, autoScaleSettings?}` → `{ok: 1}`.
pub async fn create(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let throughput = throughput_argument(req)?;
    let db = req.db.to_owned();
    shared
        .engine
        .write(durable(req.body), move |txn, _now| {
            if exists_in(txn, &db) {
                return Err(Error::new(
                    ErrorCode::NamespaceExists,
                    format!("Database {db} already exists."),
                ));
            }
            ddl::set_database_settings(txn, &db, Some(DatabaseSettings { throughput }))
        })
        .await??;
    Ok(doc! {"ok": 1.0})
}

/// `{customAction: "UpdateDatabase", offerThroughput | autoScaleSettings}` → `{ok: 1}`: a new
/// value of the same kind for a database that has provisioned throughput.
pub async fn update(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let Some(new) = throughput_argument(req)? else {
        return Err(Error::bad_value(
            "UpdateDatabase needs offerThroughput or autoScaleSettings",
        ));
    };
    let db = req.db.to_owned();
    shared
        .engine
        .write(durable(req.body), move |txn, _now| {
            let current = current_throughput(txn, &db)?;
            throughput::check_same_kind(current, new)?;
            let settings = DatabaseSettings {
                throughput: Some(new),
            };
            ddl::set_database_settings(txn, &db, Some(settings))
        })
        .await??;
    Ok(doc! {"ok": 1.0})
}

/// The arguments `CreateDatabase` and `UpdateDatabase` share: the database's name, checked,
/// and its throughput, if one is given.
fn throughput_argument(req: &Request<'_>) -> Result<Option<Throughput>> {
    check_fields(
        req.body,
        "customAction",
        &["offerThroughput", "autoScaleSettings"],
    )?;
    validate_db_name(req.db)?;
    throughput::parse(req.body)
}

/// The throughput an existing database has, for `UpdateDatabase`.
fn current_throughput(txn: &Txn<'_>, db: &str) -> Result<Throughput> {
    if !exists_in(txn, db) {
        return Err(not_found(db));
    }
    ddl::database_settings(txn, db)
        .and_then(|s| s.throughput)
        .ok_or_else(|| {
            Error::bad_value(format!(
                "Database {db} has no provisioned throughput to update: its collections have their own"
            ))
        })
}

/// `{customAction: "GetDatabase"}` → `{database, provisionedThroughput?, autoScaleSettings?,
/// ok}`, the fields of Microsoft's page.
pub fn get(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    check_fields(req.body, "customAction", &[])?;
    validate_db_name(req.db)?;
    let catalog = shared.engine.catalog()?;
    if !exists(&catalog, req.db) {
        return Err(not_found(req.db));
    }
    let mut reply = doc! {"database": req.db};
    if let Some(t) = catalog.database_settings(req.db).and_then(|s| s.throughput) {
        throughput::report(&mut reply, t);
    }
    reply.insert("ok", 1.0);
    Ok(reply)
}

/// Whether `db` exists: it has a collection, or settings of its own.
fn exists(catalog: &Catalog, db: &str) -> bool {
    catalog.collections_in(db).next().is_some() || catalog.database_settings(db).is_some()
}

/// [`exists`] as of this point in the writer's group.
fn exists_in(txn: &Txn<'_>, db: &str) -> bool {
    !ddl::collection_names(txn, db).is_empty() || ddl::database_settings(txn, db).is_some()
}

fn not_found(db: &str) -> Error {
    Error::new(
        ErrorCode::NamespaceNotFound,
        format!("Database {db} does not exist."),
    )
}
