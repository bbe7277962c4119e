//! `collMod`: refused, as Cosmos DB refuses it (TTL-7), but for turning change-stream images on
//! or off, and the no-op `{collMod: c}`.

use super::spec::unsupported;
use crate::command::args::durable;
use crate::command::{Request, Shared};
use crate::engine::catalog::collection_arg;
use crate::engine::ddl;
use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Bson, Document};

/// Cosmos DB does not support `collMod` (TTL-7): changing `expireAfterSeconds` is refused with
/// 115, and so is every other change but `changeStreamPreAndPostImages` (change streams are a
/// replica-set feature mayfly has beyond Cosmos's emulation). `{collMod: c}` alone changes nothing and succeeds on an
/// existing collection, as on mongod.
pub async fn coll_mod(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    let coll = collection_arg(cmd.get("collMod"), "collMod")?;
    let changes: Vec<&String> = cmd
        .keys()
        .skip(1)
        .filter(|k| !crate::command::args::is_generic(k))
        .collect();
    let changes_ttl =
        matches!(cmd.get("index"), Some(Bson::Document(i)) if i.contains_key("expireAfterSeconds"));
    if changes_ttl {
        return Err(unsupported(
            "collMod is not supported (Cosmos DB does not support collMod): to change a TTL index's 'expireAfterSeconds', drop the index and create it again",
        ));
    }
    // Only the logging of document images for change streams may change.
    if let (Some(enabled), 1) = (
        crate::command::catalog::images::images_option(cmd, "collMod")?,
        changes.len(),
    ) {
        let (db, name) = (req.db.to_owned(), coll.to_owned());
        let changed = shared
            .engine
            .write(durable(cmd), move |txn, _now| {
                ddl::set_images(txn, &db, &name, enabled)
            })
            .await??;
        if changed.is_none() {
            return Err(Error::new(
                ErrorCode::NamespaceNotFound,
                format!("ns does not exist: {}.{coll}", req.db),
            ));
        }
        return Ok(doc! {"ok": 1.0});
    }
    if let Some(option) = changes.first() {
        return Err(unsupported(format!(
            "collMod is not supported (Cosmos DB does not support collMod): cannot change '{option}'"
        )));
    }
    // Nothing changes, but the operation log records it, as mongod's does.
    let (db, name) = (req.db.to_owned(), coll.to_owned());
    let found = shared
        .engine
        .write(durable(cmd), move |txn, _now| {
            ddl::log_coll_mod(txn, &db, &name)
        })
        .await??;
    if found.is_none() {
        return Err(Error::new(
            ErrorCode::NamespaceNotFound,
            format!("ns does not exist: {}.{coll}", req.db),
        ));
    }
    Ok(doc! {"ok": 1.0})
}
