//! The privileges each command needs on its target (mongod's per-command
//! `checkAuthForOperation`), as "one of these actions on this resource".
//!
//! Owns the command → privilege map. Does not own the decision (`authz`), what a role grants
//! (`auth::roles`) or what a command's fields mean (its spec, read once by the envelope).

use super::super::super::{CommandName, ParsedCommand};
use crate::auth::roles::{Action, Resource};
use crate::pipeline::lite::{Involvement, LitePipeline};
use bson::{Bson, Document};

/// One requirement: any one of `actions` on `resource`.
pub(super) type Need<'a> = (Resource<'a>, &'static [Action]);

/// The privileges a command needs, each as "one of these actions on this resource". The
/// parse gives what a parsed command asks for (an aggregate's stages, a write's upserts, the
/// command an explain runs; `None` for a command explain does not run, which has none); the
/// document, the target and the fields of the commands without a spec.
pub(super) fn needs<'a>(
    name: CommandName,
    db: &'a str,
    (body, parsed): (&'a Document, Option<&'a ParsedCommand<'_>>),
    depth: u8,
) -> Vec<Need<'a>> {
    use Action as A;
    use CommandName as C;
    let cluster = |actions: &'static [Action]| vec![(Resource::Cluster, actions)];
    let database = |actions: &'static [Action]| vec![(Resource::Database(db), actions)];
    let target = target_of(name, db, body);
    let on_target = |actions: &'static [Action]| vec![(target, actions)];
    match name {
        C::Find | C::Count | C::Distinct => on_target(&[A::Find]),
        C::GetMore => match parsed
            .and_then(ParsedCommand::cursor_collection)
            .unwrap_or_default()
        {
            "$cmd.listCollections" => database(&[A::ListCollections]),
            // Cursors do not record who opened them: reading on needs find on the namespace.
            collection => vec![(Resource::Collection { db, collection }, &[A::Find])],
        },
        C::KillCursors => on_target(&[A::KillCursors, A::Find]),
        C::Insert => on_target(&[A::Insert]),
        C::Update => {
            let mut needs = on_target(&[A::Update]);
            if parsed.is_some_and(ParsedCommand::upserts) {
                needs.push((target, &[A::Insert]));
            }
            needs
        }
        C::Delete => on_target(&[A::Remove]),
        C::FindAndModify | C::FindAndModifyLower => {
            let removes = parsed
                .and_then(|parsed| parsed.find_and_modify().ok())
                .is_some_and(|spec| spec.remove);
            let mut needs = on_target(&[A::Find]);
            if removes {
                needs.push((target, &[A::Remove]));
            } else {
                needs.push((target, &[A::Update]));
                if parsed.is_some_and(ParsedCommand::upserts) {
                    needs.push((target, &[A::Insert]));
                }
            }
            needs
        }
        C::Aggregate => {
            // An aggregate always has its parse (an explained one too); without it, a bug,
            // only root may run it.
            let Some(pipeline) = parsed.and_then(ParsedCommand::stages) else {
                return cluster(&[A::Internal]);
            };
            let mut needs = match pipeline.first() {
                Some("$collStats") => on_target(&[A::CollStats]),
                Some("$indexStats") => on_target(&[A::IndexStats]),
                Some("$currentOp") => cluster(&[A::Inprog]),
                Some("$changeStream") => on_target(&[A::Find, A::ChangeStream]),
                _ => on_target(&[A::Find]),
            };
            needs.extend(pipeline_needs(db, &pipeline));
            needs
        }
        // What the explained command needs, read from its parse (a command explain does not
        // run has none: its document, which the handler refuses after).
        C::Explain => match body.get("explain") {
            Some(Bson::Document(inner)) if depth == 0 => {
                match inner.keys().next().and_then(|n| CommandName::from_name(n)) {
                    Some(C::Explain) | None => on_target(&[A::Find]),
                    Some(name) => {
                        let explained = parsed.and_then(ParsedCommand::explained);
                        needs(name, db, (inner, explained), depth + 1)
                    }
                }
            }
            _ => on_target(&[A::Find]),
        },
        C::Create => on_target(&[A::CreateCollection, A::Insert]),
        C::Drop => on_target(&[A::DropCollection]),
        C::DropDatabase => database(&[A::DropDatabase]),
        C::RenameCollection => rename_needs(body),
        C::ListCollections => database(&[A::ListCollections]),
        C::DbStats | C::DbStatsLower => database(&[A::DbStats]),
        C::CollStats => on_target(&[A::CollStats]),
        C::Validate => on_target(&[A::Validate]),
        C::Profile => database(&[A::EnableProfiler]),
        C::Top => cluster(&[A::Top]),
        C::CreateIndexes => on_target(&[A::CreateIndex]),
        C::ListIndexes => on_target(&[A::ListIndexes]),
        C::DropIndexes => on_target(&[A::DropIndex]),
        C::CustomAction => super::super::super::cosmos_custom::needs(db, body),
        C::ShardCollection => super::super::super::cosmos_custom::shard_collection_needs(db, body),
        C::CollMod => on_target(&[A::CollMod]),
        C::GetParameter => cluster(&[A::GetParameter]),
        C::GetLog => cluster(&[A::GetLog]),
        C::GetCmdLineOpts => cluster(&[A::GetCmdLineOpts]),
        C::HostInfo => cluster(&[A::HostInfo]),
        C::ServerStatus => cluster(&[A::ServerStatus]),
        C::ReplSetGetStatus => cluster(&[A::ReplSetGetStatus]),
        C::ReplSetGetConfig => cluster(&[A::ReplSetGetConfig]),
        C::ReplSetInitiate | C::ReplSetReconfig => cluster(&[A::ReplSetConfigure]),
        C::ReplSetStepDown => cluster(&[A::ReplSetStateChange]),
        C::ListDatabases => cluster(&[A::ListDatabases]),
        C::CurrentOp => cluster(&[A::Inprog]),
        C::KillOp => cluster(&[A::Killop]),
        C::KillAllSessions | C::KillAllSessionsByPattern => cluster(&[A::KillAnySession]),
        // Any authenticated user: sessions are their own, and so is the connection's last
        // request.
        C::StartSession | C::RefreshSessions | C::KillSessions | C::GetLastRequestStatistics => {
            Vec::new()
        }
        // A transaction's own statements were checked as they ran.
        C::CommitTransaction | C::AbortTransaction => Vec::new(),
        C::CreateUser => {
            let mut needs = database(&[A::CreateUser]);
            needs.extend(role_dbs(body.get("roles"), db).map(|d| (Resource::Database(d), GRANT)));
            needs
        }
        C::UpdateUser => update_user_needs(db, body),
        C::DropUser | C::DropAllUsersFromDatabase => database(&[A::DropUser]),
        C::UsersInfo => {
            if body
                .get("usersInfo")
                .and_then(Bson::as_document)
                .is_some_and(|d| {
                    d.get("forAllDBs")
                        .is_some_and(super::super::super::args::is_truthy)
                })
            {
                cluster(&[A::ViewUser])
            } else {
                let mut needs = database(&[A::ViewUser]);
                needs.extend(user_dbs(body.get("usersInfo")).map(|d| {
                    let need: Need<'_> = (Resource::Database(d), &[A::ViewUser]);
                    need
                }));
                needs
            }
        }
        C::GrantRolesToUser => role_dbs(body.get("roles"), db)
            .map(|d| (Resource::Database(d), GRANT))
            .collect(),
        C::RevokeRolesFromUser => role_dbs(body.get("roles"), db)
            .map(|d| {
                let need: Need<'_> = (Resource::Database(d), &[A::RevokeRole]);
                need
            })
            .collect(),
        // Test commands, and any command without a rule here: only root.
        _ => cluster(&[A::Internal]),
    }
}

const GRANT: &[Action] = &[Action::GrantRole];

/// The collection a command names in its first field, or its database when it names none.
fn target_of<'a>(name: CommandName, db: &'a str, body: &'a Document) -> Resource<'a> {
    match body.get(name.name()) {
        Some(Bson::String(collection)) => Resource::Collection { db, collection },
        _ => Resource::Database(db),
    }
}

/// What the stages of a pipeline need beyond its source, from what it names
/// ([`LitePipeline::involved`]): `find` on every collection it reads, `insert` and `remove`
/// on `$out`'s target, `insert` and `update` on `$merge`'s.
fn pipeline_needs<'a>(db: &'a str, pipeline: &LitePipeline<'a>) -> Vec<Need<'a>> {
    use Action as A;
    let mut needs = Vec::new();
    for (ns, involvement) in pipeline.involved() {
        let resource = Resource::Collection {
            db: ns.db.unwrap_or(db),
            collection: ns.collection,
        };
        match involvement {
            Involvement::Read => needs.push((resource, &[A::Find] as &'static [Action])),
            Involvement::Replace => {
                needs.push((resource, &[A::Insert]));
                needs.push((resource, &[A::Remove]));
            }
            Involvement::Merge => {
                needs.push((resource, &[A::Insert]));
                needs.push((resource, &[A::Update]));
            }
        }
    }
    needs
}

/// mongod's `renameCollection` rule: within a database, `renameCollectionSameDB` (and
/// `dropCollection` on a target it drops); across databases, reading and dropping the source
/// and writing the target.
fn rename_needs(body: &Document) -> Vec<Need<'_>> {
    use Action as A;
    let (Some((from_db, from)), Some((to_db, to))) = (
        split_namespace(body.get_str("renameCollection").ok()),
        split_namespace(body.get_str("to").ok()),
    ) else {
        return vec![(Resource::Cluster, &[A::Internal])];
    };
    let source = Resource::Collection {
        db: from_db,
        collection: from,
    };
    let dest = Resource::Collection {
        db: to_db,
        collection: to,
    };
    let mut needs: Vec<Need<'_>> = if from_db == to_db {
        vec![(Resource::Database(from_db), &[A::RenameCollectionSameDb])]
    } else {
        vec![
            (source, &[A::Find]),
            (source, &[A::DropCollection]),
            (dest, &[A::Insert]),
            (dest, &[A::CreateIndex]),
        ]
    };
    if body
        .get("dropTarget")
        .is_some_and(super::super::super::args::is_truthy)
    {
        needs.push((dest, &[A::DropCollection]));
    }
    needs
}

fn split_namespace(ns: Option<&str>) -> Option<(&str, &str)> {
    ns?.split_once('.')
}

fn update_user_needs<'a>(db: &'a str, body: &'a Document) -> Vec<Need<'a>> {
    use Action as A;
    let mut needs: Vec<Need<'a>> = Vec::new();
    if body.contains_key("pwd") || body.contains_key("mechanisms") {
        needs.push((Resource::Database(db), &[A::ChangePassword]));
    }
    if body.contains_key("customData") {
        needs.push((Resource::Database(db), &[A::ChangeCustomData]));
    }
    if body.contains_key("roles") {
        needs.push((Resource::Database(db), &[A::RevokeRole]));
        needs.extend(role_dbs(body.get("roles"), db).map(|d| (Resource::Database(d), GRANT)));
    }
    if needs.is_empty() {
        needs.push((Resource::Database(db), &[A::ChangePassword]));
    }
    needs
}

/// The databases of the roles in a `roles` array (a bare name is a role of `db`).
fn role_dbs<'a>(roles: Option<&'a Bson>, db: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    let items = match roles {
        Some(Bson::Array(items)) => items.as_slice(),
        _ => &[],
    };
    items.iter().filter_map(move |role| match role {
        Bson::String(_) => Some(db),
        Bson::Document(d) => d.get_str("db").ok(),
        _ => None,
    })
}

/// Databases other than the command's that a `usersInfo` argument names.
fn user_dbs(arg: Option<&Bson>) -> impl Iterator<Item = &str> {
    let items: Vec<&Bson> = match arg {
        Some(Bson::Array(items)) => items.iter().collect(),
        Some(one) => vec![one],
        None => Vec::new(),
    };
    items
        .into_iter()
        .filter_map(|item| item.as_document().and_then(|d| d.get_str("db").ok()))
}
