//! Small administrative commands: `ping`, `getParameter`, `getLog` (with the start-up
//! warnings), `whatsmyuri`,
//! `connectionStatus`.

use crate::command::args::{is_generic, is_truthy, type_name};
use crate::command::{Connection, Request, Shared};
use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Bson, Document};

pub fn ping() -> Document {
    doc! {"ok": 1.0}
}

/// Server parameters readable with `getParameter`, with their current values.
fn parameters(shared: &Shared) -> Vec<(&'static str, Bson)> {
    vec![
        (
            "featureCompatibilityVersion",
            Bson::Document(doc! {"version": "7.0"}),
        ),
        (
            "enableTestCommands",
            Bson::Boolean(shared.config.enable_test_commands),
        ),
        ("cursorTimeoutMillis", Bson::Int64(600_000)),
        ("logLevel", Bson::Int32(0)),
        ("logComponentVerbosity", log_component_verbosity()),
    ]
}

/// mongod's `logComponentVerbosity` as a server started without `-v` reports it: the default
/// verbosity 0, and every component inheriting it (-1). mayfly's log levels are set with
/// `--log-level`; this parameter is read-only here (mongosh reads it at start).
fn log_component_verbosity() -> Bson {
    let mut verbosity = doc! {"verbosity": 0};
    for component in [
        "accessControl",
        "command",
        "control",
        "executor",
        "geo",
        "index",
        "network",
        "query",
        "replication",
        "sharding",
        "storage",
        "write",
        "transaction",
    ] {
        verbosity.insert(component, doc! {"verbosity": -1});
    }
    Bson::Document(verbosity)
}

pub fn get_parameter(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    let (all, details) = match cmd.get("getParameter") {
        Some(Bson::String(s)) if s == "*" => (true, false),
        Some(Bson::Document(opts)) => (
            opts.get("allParameters").is_some_and(is_truthy),
            opts.get("showDetails").is_some_and(is_truthy),
        ),
        _ => (false, false),
    };
    let mut reply = Document::new();
    for (name, value) in parameters(shared) {
        if all || cmd.contains_key(name) {
            let value = if details {
                Bson::Document(doc! {
                    "value": value,
                    "settableAtRuntime": false,
                    "settableAtStartup": name == "enableTestCommands",
                })
            } else {
                value
            };
            reply.insert(name, value);
        }
    }
    let asked_for_something = all || cmd.keys().skip(1).any(|k| !is_generic(k));
    if reply.is_empty() || !asked_for_something {
        return Err(Error::new(
            ErrorCode::InvalidOptions,
            "no option found to get",
        ));
    }
    reply.insert("ok", 1.0);
    Ok(reply)
}

/// The logs `getLog` can read.
const LOG_NAMES: &[&str] = &["global", "startupWarnings"];

pub fn get_log(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    match req.body.get("getLog") {
        Some(Bson::String(name)) if name == "*" => Ok(doc! {"names": LOG_NAMES, "ok": 1.0}),
        Some(Bson::String(name)) if name == "global" => {
            let (total, lines) = crate::recent_log::global().snapshot();
            Ok(doc! {
                "totalLinesWritten": i32::try_from(total).unwrap_or(i32::MAX),
                "log": lines,
                "ok": 1.0,
            })
        }
        Some(Bson::String(name)) if name == "startupWarnings" => {
            let lines = startup_warning_lines(shared)?;
            Ok(doc! {
                "totalLinesWritten": i32::try_from(lines.len()).unwrap_or(i32::MAX),
                "log": lines,
                "ok": 1.0,
            })
        }
        Some(Bson::String(name)) => Err(Error::new(
            ErrorCode::OperationFailed,
            format!("No log named '{name}'"),
        )),
        Some(other) => Err(Error::type_mismatch(format!(
            "Argument to getLog must be of type String; found {other} of type {}",
            type_name(other)
        ))),
        None => Err(Error::type_mismatch(
            "Argument to getLog must be of type String",
        )),
    }
}

/// The start-up warnings as mongod's structured log lines (mongosh prints their `msg`).
fn startup_warning_lines(shared: &Shared) -> Result<Vec<Bson>> {
    let has_users = shared.engine.catalog()?.has_users();
    let date = bson::DateTime::from_millis(shared.start_millis)
        .try_to_rfc3339_string()
        .unwrap_or_default();
    Ok(
        crate::command::authz::startup_warnings(&shared.config, has_users)
            .into_iter()
            .map(|msg| {
                let line = doc! {
                    "t": {"$date": date.as_str()},
                    "s": "W",
                    "c": "CONTROL",
                    "ctx": "initandlisten",
                    "msg": msg,
                    "tags": ["startupWarnings"],
                };
                Bson::String(Bson::Document(line).into_relaxed_extjson().to_string())
            })
            .collect(),
    )
}

pub fn whats_my_uri(conn: &Connection) -> Document {
    doc! {"you": conn.peer.to_string(), "ok": 1.0}
}

/// `connectionStatus`: the user this connection authenticated as, that user's roles as stored
/// now (what authorization checks), and with `showPrivileges: true` what those roles grant.
pub fn connection_status(
    shared: &Shared,
    conn: &Connection,
    req: &Request<'_>,
) -> Result<Document> {
    let show_privileges = req.body.get("showPrivileges").is_some_and(is_truthy);
    let current = crate::command::authz::current_users(shared, conn)?;
    let users: Vec<Bson> = current
        .iter()
        .map(|u| Bson::Document(doc! {"user": u.name.as_str(), "db": u.db.as_str()}))
        .collect();
    let mut roles: Vec<&crate::auth::RoleName> = current.iter().flat_map(|u| &u.roles).collect();
    roles.sort();
    roles.dedup();
    let roles: Vec<Bson> = roles
        .iter()
        .map(|r| Bson::Document(r.to_document()))
        .collect();
    let mut auth_info = doc! {
        "authenticatedUsers": users,
        "authenticatedUserRoles": roles,
    };
    if show_privileges {
        let granted: Vec<crate::auth::RoleName> = current
            .iter()
            .flat_map(|u| u.roles.iter().cloned())
            .collect();
        let privileges: Vec<Bson> = crate::auth::roles::privileges_of(&granted)
            .iter()
            .map(|p| Bson::Document(p.to_document()))
            .collect();
        auth_info.insert("authenticatedUserPrivileges", privileges);
    }
    Ok(doc! {"authInfo": auth_info, "ok": 1.0})
}
