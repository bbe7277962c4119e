//! Authorization of commands when the server runs with `--auth`: which privileges each command
//! needs on its target (mongod's per-command `checkAuthForOperation`), who may run a command
//! before authenticating, the localhost exception, and `listDatabases`' view of the databases a
//! user may see.
//!
//! Owns the command → privilege map. Does not own what a role grants (`auth::roles`), how users
//! authenticate (SASL), or where users are stored (the engine's catalog).

use super::super::context::AuthenticatedUser;
use super::super::{CommandName, Connection, Fact, ParsedCommand, Reply, Request, Shared};
use crate::auth::roles::{self, Action, Resource, ResourcePattern};
use crate::auth::RoleName;
use crate::config::Config;
use crate::error::{Error, ErrorCode, Result};
use crate::pipeline::lite::{Involvement, LitePipeline};
use bson::{Bson, Document};
use std::fmt::Write;

/// Who is asking.
pub struct Caller<'a> {
    /// The users the connection authenticated as, with their current roles.
    pub users: &'a [AuthenticatedUser],
    /// `--auth`, no user exists yet, and the connection comes from a loopback address.
    pub localhost_exception: bool,
}

/// What the check decided for a command that may run.
#[derive(Debug, PartialEq)]
pub enum Access {
    Allowed,
    /// `listDatabases` without the `listDatabases` action: show only the databases these roles
    /// reach.
    OnlyDatabasesOf(Vec<RoleName>),
}

/// One requirement: any one of `actions` on `resource`.
type Need<'a> = (Resource<'a>, &'static [Action]);

/// The connection's users with their roles as stored now: a grant, a revoke or a dropped user
/// (no roles) applies to open connections at once.
pub fn current_users(shared: &Shared, conn: &Connection) -> Result<Vec<AuthenticatedUser>> {
    let catalog = shared.engine.catalog()?;
    Ok(conn
        .authenticated
        .iter()
        .map(|u| AuthenticatedUser {
            db: u.db.clone(),
            name: u.name.clone(),
            roles: catalog
                .user(&u.db, &u.name)
                .map(|stored| stored.roles.clone())
                .unwrap_or_default(),
        })
        .collect())
}

/// Checks the request against the connection's users; with `--auth` off everything is allowed.
pub fn check(shared: &Shared, conn: &Connection, req: &Request<'_>) -> Result<Access> {
    if !shared.config.auth {
        return Ok(Access::Allowed);
    }
    let users = current_users(shared, conn)?;
    let caller = Caller {
        users: &users,
        localhost_exception: !shared.engine.catalog()?.has_users() && conn.peer.ip().is_loopback(),
    };
    authorize(&caller, req.name, req.db, (req.body, &req.parsed))
}

/// The decision for one command, as sent and as parsed.
pub fn authorize(
    caller: &Caller<'_>,
    name: CommandName,
    db: &str,
    (body, parsed): (&Document, &ParsedCommand<'_>),
) -> Result<Access> {
    if name.has(Fact::WithoutAuth) {
        return Ok(Access::Allowed);
    }
    if caller.users.is_empty() {
        if caller.localhost_exception {
            let needs = needs(name, db, (body, parsed.stages()), 0);
            let allowed = !needs.is_empty()
                && needs.iter().all(|(resource, actions)| {
                    actions.iter().any(|a| localhost_allows(resource, *a))
                });
            return if allowed {
                Ok(Access::Allowed)
            } else {
                Err(not_authorized(db, body))
            };
        }
        return Err(Error::new(
            ErrorCode::Unauthorized,
            format!("Command {} requires authentication", name.name()),
        ));
    }
    let roles: Vec<RoleName> = caller
        .users
        .iter()
        .flat_map(|u| u.roles.iter().cloned())
        .collect();
    if let Some(access) = special(caller, &roles, name, db, body)? {
        return Ok(access);
    }
    let needs = needs(name, db, (body, parsed.stages()), 0);
    let allowed = needs.iter().all(|(resource, actions)| {
        actions
            .iter()
            .any(|action| roles::is_authorized(&roles, resource, *action))
    });
    if allowed {
        Ok(Access::Allowed)
    } else {
        Err(not_authorized(db, body))
    }
}

/// mongod's privileges under the localhost exception (`getDefaultPrivileges`): enough to
/// create the first user, in `admin`, with roles of `admin`.
fn localhost_allows(resource: &Resource<'_>, action: Action) -> bool {
    let admin = ResourcePattern::Database("admin".to_owned());
    let external = ResourcePattern::Database("$external".to_owned());
    (admin.matches(resource) && matches!(action, Action::CreateUser | Action::GrantRole))
        || (external.matches(resource) && action == Action::CreateUser)
}

/// Commands whose rule is more than a list of privileges.
fn special(
    caller: &Caller<'_>,
    roles: &[RoleName],
    name: CommandName,
    db: &str,
    body: &Document,
) -> Result<Option<Access>> {
    match name {
        CommandName::ListDatabases => {
            if roles::is_authorized(roles, &Resource::Cluster, Action::ListDatabases) {
                return Ok(Some(Access::Allowed));
            }
            // mongod: without the action, authorizedDatabases defaults to true and lists only
            // the databases the user has privileges on; false asks for the action.
            if body.get("authorizedDatabases") == Some(&Bson::Boolean(false)) {
                return Err(not_authorized(db, body));
            }
            Ok(Some(Access::OnlyDatabasesOf(roles.to_vec())))
        }
        // Anyone may look at themselves.
        CommandName::UsersInfo if asks_only_about(caller, db, body.get("usersInfo")) => {
            Ok(Some(Access::Allowed))
        }
        // Anyone may change their own password and custom data (not their roles).
        CommandName::UpdateUser
            if !body.contains_key("roles")
                && is_self(caller, db, body.get("updateUser").and_then(Bson::as_str)) =>
        {
            Ok(Some(Access::Allowed))
        }
        _ => Ok(None),
    }
}

fn is_self(caller: &Caller<'_>, db: &str, user: Option<&str>) -> bool {
    user.is_some_and(|user| caller.users.iter().any(|u| u.db == db && u.name == user))
}

/// Whether a `usersInfo` argument names only users the caller is.
fn asks_only_about(caller: &Caller<'_>, db: &str, arg: Option<&Bson>) -> bool {
    let one = |value: &Bson| match value {
        Bson::String(name) => is_self(caller, db, Some(name)),
        Bson::Document(d) => match (d.get_str("user"), d.get_str("db")) {
            (Ok(user), Ok(user_db)) => is_self(caller, user_db, Some(user)),
            _ => false,
        },
        _ => false,
    };
    match arg {
        Some(Bson::Array(items)) => !items.is_empty() && items.iter().all(one),
        Some(value) => one(value),
        None => false,
    }
}

/// The privileges a command needs, each as "one of these actions on this resource". `stages`
/// are an aggregate's as its parse read them; an explained aggregate (not parsed before it
/// runs) has its stages read here.
fn needs<'a>(
    name: CommandName,
    db: &'a str,
    (body, stages): (&'a Document, Option<LitePipeline<'a>>),
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
        C::GetMore => match body.get_str("collection").unwrap_or_default() {
            "$cmd.listCollections" => database(&[A::ListCollections]),
            // Cursors do not record who opened them: reading on needs find on the namespace.
            collection => vec![(Resource::Collection { db, collection }, &[A::Find])],
        },
        C::KillCursors => on_target(&[A::KillCursors, A::Find]),
        C::Insert => on_target(&[A::Insert]),
        C::Update => {
            let mut needs = on_target(&[A::Update]);
            if any_upsert(body.get("updates"), "upsert") {
                needs.push((target, &[A::Insert]));
            }
            needs
        }
        C::Delete => on_target(&[A::Remove]),
        C::FindAndModify | C::FindAndModifyLower => {
            let mut needs = on_target(&[A::Find]);
            if body
                .get("remove")
                .is_some_and(super::super::args::is_truthy)
            {
                needs.push((target, &[A::Remove]));
            } else {
                needs.push((target, &[A::Update]));
                if body
                    .get("upsert")
                    .is_some_and(super::super::args::is_truthy)
                {
                    needs.push((target, &[A::Insert]));
                }
            }
            needs
        }
        C::Aggregate => {
            let pipeline = stages.unwrap_or_else(|| LitePipeline::of(body.get("pipeline")));
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
        C::Explain => match body.get("explain") {
            Some(Bson::Document(inner)) if depth == 0 => {
                match inner.keys().next().and_then(|n| CommandName::from_name(n)) {
                    Some(C::Explain) | None => on_target(&[A::Find]),
                    Some(explained) => needs(explained, db, (inner, None), depth + 1),
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
        C::CustomAction => super::super::cosmos_custom::needs(db, body),
        C::ShardCollection => super::super::cosmos_custom::shard_collection_needs(db, body),
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
                        .is_some_and(super::super::args::is_truthy)
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

fn any_upsert(statements: Option<&Bson>, field: &str) -> bool {
    match statements {
        Some(Bson::Array(items)) => items.iter().any(|s| {
            s.as_document()
                .and_then(|d| d.get(field))
                .is_some_and(super::super::args::is_truthy)
        }),
        _ => false,
    }
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
        .is_some_and(super::super::args::is_truthy)
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

/// 13 Unauthorized as mongod words it, with the command shown and its secrets hidden
/// (`secrets`).
pub fn not_authorized(db: &str, body: &Document) -> Error {
    let mut shown = String::new();
    write_document(&mut shown, &super::super::secrets::for_logging(body), 0);
    Error::new(
        ErrorCode::Unauthorized,
        format!("not authorized on {db} to execute command {shown}"),
    )
}

/// Nesting shown in an error message; deeper levels print as `{ ... }`.
const SHOWN_DEPTH: usize = 8;

/// mongod's `BSONObj::toString` shape: `{ find: "c", filter: { a: 1 } }`.
fn write_document(out: &mut String, doc: &Document, depth: usize) {
    if depth >= SHOWN_DEPTH {
        out.push_str("{ ... }");
        return;
    }
    if doc.is_empty() {
        out.push_str("{}");
        return;
    }
    out.push_str("{ ");
    for (i, (key, value)) in doc.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{key}: ");
        write_value(out, value, depth);
    }
    out.push_str(" }");
}

fn write_value(out: &mut String, value: &Bson, depth: usize) {
    match value {
        Bson::Document(d) => write_document(out, d, depth + 1),
        Bson::Array(items) if depth + 1 >= SHOWN_DEPTH => {
            let _ = write!(out, "[ {} items ]", items.len());
        }
        Bson::Array(items) => {
            out.push_str("[ ");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item, depth + 1);
            }
            out.push_str(" ]");
        }
        Bson::String(s) => {
            let _ = write!(out, "{s:?}");
        }
        Bson::Int32(n) => {
            let _ = write!(out, "{n}");
        }
        Bson::Int64(n) => {
            let _ = write!(out, "{n}");
        }
        Bson::Double(d) => {
            let _ = write!(out, "{d}");
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

/// Keeps in a `listDatabases` reply only the databases the roles reach, as mongod does for a
/// user without the `listDatabases` action.
pub fn only_databases_of(roles: &[RoleName], reply: Reply) -> Reply {
    let Reply::Document(mut doc) = reply else {
        return reply;
    };
    let Ok(list) = doc.get_array("databases") else {
        return Reply::Document(doc);
    };
    let kept: Vec<Bson> = list
        .iter()
        .filter(|entry| {
            entry
                .as_document()
                .and_then(|d| d.get_str("name").ok())
                .is_some_and(|name| roles::has_any_privilege_on_db(roles, name))
        })
        .cloned()
        .collect();
    if doc.contains_key("totalSize") {
        let total: i64 = kept
            .iter()
            .filter_map(|e| e.as_document().and_then(|d| d.get_i64("sizeOnDisk").ok()))
            .sum();
        doc.insert("totalSize", total);
        doc.insert("totalSizeMb", total / (1024 * 1024));
    }
    doc.insert("databases", kept);
    Reply::Document(doc)
}

/// The start-up warnings about access control, as mongod logs them: access control off on a
/// server reachable from other hosts, on with no user to log in as, or on with the Cosmos DB
/// account user's password the emulator's published key while other hosts can reach it.
pub fn startup_warnings(config: &Config, has_users: bool) -> Vec<String> {
    let mut warnings = Vec::new();
    let loopback_only = config.bind_ips.iter().all(|ip| {
        ip == "localhost"
            || ip
                .parse::<std::net::IpAddr>()
                .is_ok_and(|a| a.is_loopback())
    });
    if !config.auth && !loopback_only {
        warnings.push(
            "Access control is not enabled for the database. Read and write access to data and configuration is unrestricted"
                .to_owned(),
        );
    }
    let published_key = config.cosmos_key.expose() == crate::config::EMULATOR_COSMOS_KEY;
    if let (true, false, true, Some(account)) = (
        config.auth,
        loopback_only,
        published_key,
        config.cosmos_account.as_deref(),
    ) {
        warnings.push(format!(
            "Access control is enabled, but the Cosmos DB account user '{account}' (role root) has the emulator's published key as its password and the server listens beyond localhost: anyone who can reach it can log in as root. Set your own key with --cosmos-key or MAYFLY_COSMOS_KEY, turn the account off with --cosmos-account '', or bind to localhost only"
        ));
    }
    if config.auth && !has_users {
        warnings.push(
            "Access control is enabled but no user exists: connect from this host (localhost exception) and create a user in the admin database with createUser"
                .to_owned(),
        );
    }
    warnings
}

#[cfg(test)]
#[path = "authz_tests.rs"]
mod tests;
