//! `usersInfo`: describing users as mongod does — `{users: [{_id, userId, user, db, roles,
//! customData?, mechanisms}], ok}` — for `1` (the database's users), a name, `{user, db}`, a
//! list of those, or `{forAllDBs: true}`; with `showCredentials`, `showPrivileges` and `filter`.
//!
//! Reads the catalog only; never shows a password (there is none), and shows the salted keys
//! only when asked, as mongod.

use crate::auth::roles::{privileges_of, Privilege};
use crate::auth::{ScramCredential, User};
use crate::command::args::{check_fields, optional_bool, optional_doc, wrong_type};
use crate::command::{Request, Shared};
use crate::error::{Error, ErrorCode, Result};
use crate::query::filter::Filter;
use bson::{doc, Bson, Document};
use std::sync::Arc;

/// Which users a `usersInfo` argument asks for.
enum Wanted {
    /// Every user of the command's database (`usersInfo: 1`).
    AllOfDb,
    /// Every user of every database (`{forAllDBs: true}`).
    AllDbs,
    /// Named users, as (db, name).
    Named(Vec<(String, String)>),
}

fn parse_wanted(arg: &Bson, db: &str) -> Result<Wanted> {
    let one = |value: &Bson| -> Result<(String, String)> {
        match value {
            Bson::String(name) => Ok((db.to_owned(), name.clone())),
            Bson::Document(d) => match (d.get("user"), d.get("db")) {
                (Some(Bson::String(user)), Some(Bson::String(user_db))) => {
                    Ok((user_db.clone(), user.clone()))
                }
                _ => Err(Error::bad_value(
                    "User name must be either a string or an object with \"user\" and \"db\" string fields",
                )),
            },
            other => Err(wrong_type("usersInfo", "usersInfo", other, "string")),
        }
    };
    match arg {
        Bson::Int32(1) | Bson::Int64(1) => Ok(Wanted::AllOfDb),
        Bson::Double(d) if *d == 1.0 => Ok(Wanted::AllOfDb),
        Bson::Document(d) if d.contains_key("forAllDBs") => {
            if d.get("forAllDBs") == Some(&Bson::Boolean(true)) && d.len() == 1 {
                Ok(Wanted::AllDbs)
            } else {
                Err(Error::bad_value(
                    "\"usersInfo\" may only be {forAllDBs: true} when it names no user",
                ))
            }
        }
        Bson::Array(items) => items
            .iter()
            .map(one)
            .collect::<Result<_>>()
            .map(Wanted::Named),
        other => one(other).map(|u| Wanted::Named(vec![u])),
    }
}

pub fn users_info(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    const COMMAND: &str = "usersInfo";
    check_fields(
        cmd,
        COMMAND,
        &[
            "showCredentials",
            "showPrivileges",
            "showAuthenticationRestrictions",
            "showCustomData",
            "filter",
        ],
    )?;
    let arg = cmd
        .get(COMMAND)
        .ok_or_else(|| Error::bad_value("usersInfo requires an argument"))?;
    let wanted = parse_wanted(arg, req.db)?;
    let show_credentials = optional_bool(cmd, COMMAND, "showCredentials")?.unwrap_or(false);
    let show_privileges = optional_bool(cmd, COMMAND, "showPrivileges")?.unwrap_or(false);
    let show_custom_data = optional_bool(cmd, COMMAND, "showCustomData")?.unwrap_or(true);
    // mayfly keeps no authentication restrictions (`createUser` refuses them): shown empty.
    let show_restrictions =
        optional_bool(cmd, COMMAND, "showAuthenticationRestrictions")?.unwrap_or(false);
    let filter = match optional_doc(cmd, COMMAND, "filter")? {
        Some(_) if matches!(wanted, Wanted::Named(_)) => {
            return Err(Error::bad_value(
                "Filter is only supported in usersInfo command when getting all users",
            ))
        }
        Some(f) if !f.is_empty() => Some(Filter::compile(f)?),
        _ => None,
    };
    if (show_privileges || show_restrictions)
        && (filter.is_some() || !matches!(wanted, Wanted::Named(_)))
    {
        return Err(Error::new(
            ErrorCode::IllegalOperation,
            "Privilege or restriction details require exact-match usersInfo queries.",
        ));
    }
    let catalog = shared.engine.catalog()?;
    let found: Vec<&Arc<User>> = match &wanted {
        Wanted::AllOfDb => catalog.users_in(req.db).collect(),
        Wanted::AllDbs => catalog.all_users().collect(),
        Wanted::Named(names) => names
            .iter()
            .filter_map(|(db, name)| catalog.user(db, name))
            .collect(),
    };
    let mut users = Vec::new();
    for user in found {
        let mut shown = describe(user, show_privileges, show_custom_data);
        if let Some(f) = &filter {
            if !f.matches(&shown)? {
                continue;
            }
        }
        if !show_credentials {
            shown.remove("credentials");
        }
        if show_restrictions {
            shown.insert("authenticationRestrictions", Bson::Array(Vec::new()));
            if show_privileges {
                shown.insert(
                    "inheritedAuthenticationRestrictions",
                    Bson::Array(Vec::new()),
                );
            }
        }
        users.push(Bson::Document(shown));
    }
    Ok(doc! {"users": users, "ok": 1.0})
}

/// One user as `usersInfo` shows it (with its credentials, which the caller removes unless
/// asked: a filter may still match on them, as mongod's does before projecting).
fn describe(user: &User, privileges: bool, custom_data: bool) -> Document {
    let roles: Vec<Bson> = user.roles.iter().map(|r| r.to_document().into()).collect();
    let mut shown = doc! {
        "_id": user.id(),
        "userId": user.user_id,
        "user": user.name.as_str(),
        "db": user.db.as_str(),
    };
    let mut stored = Document::new();
    for mechanism in user.credentials.mechanisms() {
        if let Some(c) = user.credentials.get(mechanism) {
            stored.insert(mechanism.name(), credential_document(c));
        }
    }
    shown.insert("credentials", stored);
    if custom_data {
        if let Some(data) = &user.custom_data {
            shown.insert("customData", data.clone());
        }
    }
    shown.insert("roles", roles.clone());
    if privileges {
        shown.insert("inheritedRoles", roles);
        let granted: Vec<Bson> = privileges_of(&user.roles)
            .iter()
            .map(|p: &Privilege| p.to_document().into())
            .collect();
        shown.insert("inheritedPrivileges", granted);
    }
    let mechanisms: Vec<Bson> = user
        .credentials
        .mechanisms()
        .iter()
        .map(|m| m.name().into())
        .collect();
    shown.insert("mechanisms", mechanisms);
    shown
}

fn credential_document(c: &ScramCredential) -> Document {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;
    doc! {
        "iterationCount": i64::from(c.iteration_count),
        "salt": STANDARD.encode(&c.salt),
        "storedKey": STANDARD.encode(&c.stored_key),
        "serverKey": STANDARD.encode(&c.server_key),
    }
}
