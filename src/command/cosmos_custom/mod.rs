//! The commands only a Cosmos DB account has, in the Cosmos profile (`--compat cosmos`; in the
//! default profile they do not exist and answer 59 CommandNotFound, as mongod 7.0, where even
//! `shardCollection` is a mongos command):
//!
//! - `customAction` (Microsoft's custom-commands page): `CreateDatabase`, `UpdateDatabase`,
//!   `GetDatabase` ([`database`]) and `CreateCollection`, `UpdateCollection`, `GetCollection`
//!   ([`collection`]). Successes have the page's shapes; every failure is the page's "default
//!   output", `{ok: 0, code, errMsg}` (`errMsg`, Cosmos's spelling; MongoDB's `errmsg` is
//!   sent beside it so drivers raise their usual error).
//!   `GetChangeStreamTokens` is refused (115).
//! - `shardCollection` ([`shard_collection`]).
//!
//! Owns: reading the action, the failure shape, and the privileges each needs under `--auth`.
//! Does not own: where the settings are kept (`engine::ddl`, the catalog) or the shard-key rules
//! writes obey (`profile::shard_keys`).

mod collection;
mod database;
mod indexes;
mod shard_collection;
mod throughput;

pub use shard_collection::{needs as shard_collection_needs, shard_collection};

use super::{CommandName, Request, Shared};
use crate::auth::roles::{Action, Resource};
use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Bson, Document};
use std::sync::Arc;

/// The actions of `customAction`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CustomAction {
    CreateDatabase,
    UpdateDatabase,
    GetDatabase,
    CreateCollection,
    UpdateCollection,
    GetCollection,
    /// Listed by the page; mayfly has no per-partition change streams to hand out.
    GetChangeStreamTokens,
}

const ACTIONS: &[(&str, CustomAction)] = &[
    ("CreateDatabase", CustomAction::CreateDatabase),
    ("UpdateDatabase", CustomAction::UpdateDatabase),
    ("GetDatabase", CustomAction::GetDatabase),
    ("CreateCollection", CustomAction::CreateCollection),
    ("UpdateCollection", CustomAction::UpdateCollection),
    ("GetCollection", CustomAction::GetCollection),
    ("GetChangeStreamTokens", CustomAction::GetChangeStreamTokens),
];

/// Runs `{customAction: <action>, ...}`; a failure is the reply `{ok: 0, code, errMsg}`.
pub async fn custom_action(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    Ok(match run(shared, req).await {
        Ok(reply) => reply,
        Err(err) => failure(&err),
    })
}

async fn run(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    match action(req.body)? {
        CustomAction::CreateDatabase => database::create(shared, req).await,
        CustomAction::UpdateDatabase => database::update(shared, req).await,
        CustomAction::GetDatabase => database::get(shared, req),
        CustomAction::CreateCollection => collection::create(shared, req).await,
        CustomAction::UpdateCollection => collection::update(shared, req).await,
        CustomAction::GetCollection => collection::get(shared, req),
        CustomAction::GetChangeStreamTokens => Err(Error::new(
            ErrorCode::CommandNotSupported,
            "customAction GetChangeStreamTokens is not supported by mayfly",
        )),
    }
}

/// The action `customAction` names.
fn action(cmd: &Document) -> Result<CustomAction> {
    let name = match cmd.get("customAction") {
        Some(Bson::String(name)) => name,
        Some(other) => {
            return Err(super::args::wrong_type(
                "customAction",
                "customAction",
                other,
                "string",
            ))
        }
        None => return Err(Error::failed_to_parse("customAction needs an action")),
    };
    ACTIONS
        .iter()
        .find(|(known, _)| known == name)
        .map(|(_, action)| *action)
        .ok_or_else(|| {
            let known: Vec<&str> = ACTIONS.iter().map(|(known, _)| *known).collect();
            Error::bad_value(format!(
                "'{name}' is not a customAction; the actions are {}",
                known.join(", ")
            ))
        })
}

/// The "default output of a custom command" for a failure: `{ok: 0, code, errMsg}`, with
/// MongoDB's `errmsg` beside Cosmos's `errMsg`: drivers build their error from `errmsg`
/// (pymongo raised `KeyError('errmsg')` instead of `OperationFailure` without it), and a
/// client reading Cosmos's field still finds it.
fn failure(err: &Error) -> Document {
    doc! {
        "ok": 0.0,
        "errmsg": err.message.as_str(),
        "code": err.code.code(),
        "codeName": err.code.name(),
        "errMsg": err.message.as_str(),
    }
}

/// The privileges a `customAction` needs under `--auth`: reading settings needs
/// `listCollections` on the database; creating needs `createCollection` (and `createIndex` for
/// `indexes`), changing needs `collMod` (and `createIndex` and `dropIndex` for `indexes`).
pub fn needs<'a>(db: &'a str, body: &'a Document) -> Vec<(Resource<'a>, &'static [Action])> {
    let database = Resource::Database(db);
    let target = match body.get_str("collection") {
        Ok(collection) => Resource::Collection { db, collection },
        Err(_) => database,
    };
    let with_indexes = body.contains_key("indexes");
    match action(body) {
        Ok(CustomAction::CreateDatabase) => vec![(database, &[Action::CreateCollection])],
        Ok(CustomAction::UpdateDatabase) => vec![(database, &[Action::CollMod])],
        Ok(CustomAction::CreateCollection) => {
            let mut needs = vec![(target, &[Action::CreateCollection] as &'static [Action])];
            if with_indexes {
                needs.push((target, &[Action::CreateIndex]));
            }
            needs
        }
        Ok(CustomAction::UpdateCollection) => {
            let mut needs = vec![(target, &[Action::CollMod] as &'static [Action])];
            if with_indexes {
                needs.push((target, &[Action::CreateIndex]));
                needs.push((target, &[Action::DropIndex]));
            }
            needs
        }
        Ok(
            CustomAction::GetDatabase
            | CustomAction::GetCollection
            | CustomAction::GetChangeStreamTokens,
        )
        | Err(_) => vec![(database, &[Action::ListCollections])],
    }
}

/// A shard key's path: dotted field names, none empty or starting with `$` (2 BadValue).
fn check_shard_key_path(path: &str) -> Result<()> {
    let valid = path
        .split('.')
        .all(|part| !part.is_empty() && !part.starts_with('$'));
    if valid {
        Ok(())
    } else {
        Err(Error::bad_value(format!(
            "'{path}' is not a valid shard key path"
        )))
    }
}

/// `req` as the command `name` with `body`, for work `customAction` hands to another command
/// (`UpdateCollection`'s `indexes` runs as `dropIndexes` and `createIndexes` run).
fn as_command<'r>(req: &'r Request<'_>, name: CommandName, body: &'r Arc<Document>) -> Request<'r> {
    Request {
        name,
        db: req.db,
        body,
        documents: None,
        // Only commands without a spec are handed on this way (`dropIndexes`,
        // `createIndexes`).
        parsed: super::ParsedCommand::Other(body),
        interrupt: Arc::clone(&req.interrupt),
        session: req.session,
        transaction: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_are_read_by_their_exact_names() {
        let cases = [
            (
                Bson::from("CreateDatabase"),
                Ok(CustomAction::CreateDatabase),
            ),
            (Bson::from("GetCollection"), Ok(CustomAction::GetCollection)),
            (
                Bson::from("GetChangeStreamTokens"),
                Ok(CustomAction::GetChangeStreamTokens),
            ),
            (Bson::from("getcollection"), Err(2)),
            (Bson::from("Drop"), Err(2)),
            (Bson::Int32(1), Err(14)),
        ];
        for (value, want) in cases {
            let got = action(&doc! {"customAction": value.clone()}).map_err(|e| e.code.code());
            assert_eq!(got, want, "{value}");
        }
    }

    #[test]
    fn a_failure_has_the_default_output_shape() {
        let err = Error::new(
            ErrorCode::NamespaceNotFound,
            "Collection d.c does not exist.",
        );
        assert_eq!(
            failure(&err),
            doc! {
                "ok": 0.0,
                "errmsg": "Collection d.c does not exist.",
                "code": 26,
                "codeName": "NamespaceNotFound",
                "errMsg": "Collection d.c does not exist.",
            }
        );
    }

    #[test]
    fn shard_key_paths() {
        for (path, valid) in [
            ("tenant", true),
            ("a.b", true),
            ("", false),
            ("a..b", false),
            (".a", false),
            ("$a", false),
            ("a.$b", false),
        ] {
            assert_eq!(check_shard_key_path(path).is_ok(), valid, "{path}");
        }
    }

    #[test]
    fn privileges_follow_the_action() {
        let needs_of = |body: Document| {
            let needs = needs("d", &body);
            needs
                .iter()
                .map(|(_, actions)| actions.iter().map(|a| a.name()).collect::<Vec<_>>())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            needs_of(doc! {"customAction": "GetCollection", "collection": "c"}),
            vec![vec!["listCollections"]]
        );
        assert_eq!(
            needs_of(doc! {"customAction": "CreateCollection", "collection": "c", "indexes": []}),
            vec![vec!["createCollection"], vec!["createIndex"]]
        );
        assert_eq!(
            needs_of(doc! {"customAction": "UpdateDatabase", "offerThroughput": 400}),
            vec![vec!["collMod"]]
        );
    }
}
