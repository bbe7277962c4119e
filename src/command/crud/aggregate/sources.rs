//! The source stages the command produces itself: `$collStats`' one document and
//! `$currentOp`'s operations, with their options checked as mongod checks them.

use crate::command::args;
use crate::command::catalog::stats;
use crate::command::{reply_number, Shared};
use crate::engine::{CollectionMeta, ReadView};
use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Bson, Document};

/// `$currentOp`'s options: flags about which operations to list. Every operation here is a
/// client's, active and visible to all, so each flag changes nothing but must be a boolean.
pub fn check_current_op(options: &Document) -> Result<()> {
    const FLAGS: &[&str] = &[
        "allUsers",
        "idleConnections",
        "idleCursors",
        "idleSessions",
        "localOps",
        "truncateOps",
        "backtrace",
    ];
    for (name, value) in options {
        if !FLAGS.contains(&name.as_str()) {
            return Err(Error::failed_to_parse(format!(
                "Unrecognized option '{name}' in $currentOp stage."
            )));
        }
        if !matches!(value, Bson::Boolean(_)) {
            return Err(Error::failed_to_parse(format!(
                "The '{name}' parameter of the $currentOp stage must be a boolean value, but found: {}",
                crate::query::path::type_name(value)
            )));
        }
    }
    Ok(())
}

/// `$collStats`' options: the `storageStats` scale (if asked) and whether `count` is asked.
fn coll_stats_options(spec: &Document) -> Result<(Option<u64>, bool)> {
    let mut storage_scale = None;
    let mut count = false;
    for (k, v) in spec {
        match (k.as_str(), v) {
            // mongod's StorageStatsSpec is not strict: fields it does not know are ignored.
            ("storageStats", Bson::Document(s)) => {
                storage_scale = Some(stats::parse_scale(s, "$collStats.storageStats")?);
            }
            ("count", Bson::Document(_)) => count = true,
            ("latencyStats" | "queryExecStats", Bson::Document(_)) => {
                return Err(Error::new(
                    ErrorCode::NotImplemented,
                    format!("$collStats {k} is not supported by this server"),
                ))
            }
            ("storageStats" | "count" | "latencyStats" | "queryExecStats", other) => {
                return Err(args::wrong_type("$collStats", k, other, "object"))
            }
            _ => {
                return Err(Error::new(
                    ErrorCode::IDLUnknownField,
                    format!("BSON field '$collStats.{k}' is an unknown field."),
                ))
            }
        }
    }
    Ok((storage_scale, count))
}

/// The one document `$collStats` produces.
pub fn coll_stats(
    shared: &Shared,
    view: &ReadView,
    meta: Option<&CollectionMeta>,
    ns: &str,
    spec: &Document,
) -> Result<Document> {
    let (storage_scale, count) = coll_stats_options(spec)?;
    let mut row = doc! {
        "ns": ns,
        "host": format!("{}:{}", crate::host::hostname(), shared.config.port),
        "localTime": shared.clock.now_datetime(),
    };
    if storage_scale.is_none() && !count {
        return Ok(row);
    }
    let Some(meta) = meta else {
        let what = if storage_scale.is_some() {
            "storageStats"
        } else {
            "count"
        };
        return Err(Error::new(
            ErrorCode::NamespaceNotFound,
            format!("Unable to retrieve {what} in $collStats stage :: caused by :: Collection [{ns}] not found."),
        ));
    };
    let sizes = stats::measure(view, meta)?;
    if let Some(scale) = storage_scale {
        let mut storage = stats::storage_stats(&sizes, scale);
        if let Some(ttl) = stats::ttl_stats(shared, view, meta)? {
            storage.insert("ttl", ttl);
        }
        row.insert("storageStats", storage);
    }
    if count {
        row.insert("count", reply_number::number(sizes.count));
    }
    Ok(row)
}
