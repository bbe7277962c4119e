//! Authorization of commands when the server runs with `--auth`: which privileges each command
//! needs on its target (mongod's per-command `checkAuthForOperation`), who may run a command
//! before authenticating, the localhost exception, and `listDatabases`' view of the databases a
//! user may see.
//!
//! Owns the decision and the commands whose rule is more than a list of privileges. Does not
//! own the command → privilege map ([`needs`]), what a role grants (`auth::roles`), how users
//! authenticate (SASL), or where users are stored (the engine's catalog).

mod needs;

use self::needs::needs;
use super::super::context::AuthenticatedUser;
use super::super::{CommandName, Connection, Fact, ParsedCommand, Reply, Request, Shared};
use crate::auth::roles::{self, Action, Resource, ResourcePattern};
use crate::auth::RoleName;
use crate::config::Config;
use crate::error::{Error, ErrorCode, Result};
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

/// The decision for one command, as sent and as parsed. The parse is what the write
/// commands' and an explained command's needs are read from; the document names the target
/// and shows the command in the refusal.
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
            let needs = needs(name, db, (body, Some(parsed)), 0);
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
    let needs = needs(name, db, (body, Some(parsed)), 0);
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
