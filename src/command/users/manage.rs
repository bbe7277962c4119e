//! User management commands: `createUser`, `updateUser`, `dropUser`,
//! `dropAllUsersFromDatabase`, `grantRolesToUser`, `revokeRolesFromUser`, with mongod's
//! arguments, rules and error codes.
//!
//! Owns the checks a user change must pass (names, passwords, mechanisms, built-in roles,
//! duplicates) and building the stored credentials. Does not own storage (`engine::users`),
//! reading users (`info`), who may run these commands (`authz`) or SCRAM itself.

use crate::auth::credentials::{Mechanism, ScramCredential};
use crate::auth::{roles, Credentials, RoleName, User};
use crate::command::args::{
    check_fields, durable, optional_array, optional_bool, optional_doc, wrong_type,
};
use crate::command::{Request, Shared};
use crate::engine::users;
use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Bson, Document};

/// 11 UserNotFound, worded as each mongod command words it.
#[derive(Clone, Copy)]
enum Missing {
    /// `dropUser`.
    Drop,
    /// `updateUser`.
    Update,
    /// `grantRolesToUser`, `revokeRolesFromUser` (mongod reads the user's roles first).
    Roles,
}

fn user_not_found(missing: Missing, name: &str, db: &str) -> Error {
    let message = match missing {
        Missing::Drop => format!("User '{name}@{db}' not found"),
        Missing::Update => format!("User {name}@{db} not found"),
        Missing::Roles => format!("Could not find user \"{name}\" for db \"{db}\""),
    };
    Error::new(ErrorCode::UserNotFound, message)
}

/// The user name a command names in its first field.
fn user_name<'a>(cmd: &'a Document, command: &str) -> Result<&'a str> {
    match cmd.get(command) {
        Some(Bson::String(name)) if name.is_empty() => {
            Err(Error::bad_value("User name must not be empty"))
        }
        Some(Bson::String(name)) if name.contains('\0') => {
            Err(Error::bad_value("Username cannot contain NULL characters"))
        }
        Some(Bson::String(name)) => Ok(name),
        Some(other) => Err(wrong_type(command, command, other, "string")),
        None => Err(Error::bad_value(format!("{command} requires a user name"))),
    }
}

/// Users live in ordinary databases: mongod refuses `local`, and `$external` users (X.509,
/// LDAP, Kerberos) have no password — mayfly has no external authentication to give them.
fn check_user_db(db: &str, command: &str) -> Result<()> {
    match db {
        "local" => Err(Error::bad_value("Cannot create users in the local database")),
        "$external" => Err(Error::bad_value(format!(
            "{command}: users on the '$external' database need external authentication (X.509, LDAP, Kerberos), which this server does not have"
        ))),
        _ => Ok(()),
    }
}

/// A `roles` array: a bare name is a role of `db`, else `{role, db}`; each must be built in.
pub fn parse_roles(cmd: &Document, command: &str, db: &str) -> Result<Vec<RoleName>> {
    let Some(items) = optional_array(cmd, command, "roles")? else {
        return Err(Error::bad_value(format!(
            "\"{command}\" command requires a \"roles\" array"
        )));
    };
    let mut parsed: Vec<RoleName> = Vec::new();
    for item in items {
        let role = match item {
            Bson::String(name) => RoleName::new(name.as_str(), db),
            Bson::Document(d) => match (d.get("role"), d.get("db")) {
                (Some(Bson::String(role)), Some(Bson::String(role_db))) => {
                    RoleName::new(role.as_str(), role_db.as_str())
                }
                _ => {
                    return Err(Error::bad_value(
                        "Role names must be either strings or objects with \"role\" and \"db\" string fields",
                    ))
                }
            },
            other => {
                return Err(Error::bad_value(format!(
                    "Role names must be either strings or objects, found {}",
                    crate::command::args::type_name(other)
                )))
            }
        };
        if !roles::is_builtin(&role) {
            return Err(Error::new(
                ErrorCode::RoleNotFound,
                format!("Could not find role: {}@{}", role.role, role.db),
            ));
        }
        if !parsed.contains(&role) {
            parsed.push(role);
        }
    }
    Ok(parsed)
}

/// `mechanisms`: a non-empty subset of the SCRAM mechanisms; absent means both.
fn parse_mechanisms(cmd: &Document, command: &str) -> Result<Option<Vec<Mechanism>>> {
    let Some(items) = optional_array(cmd, command, "mechanisms")? else {
        return Ok(None);
    };
    if items.is_empty() {
        return Err(Error::bad_value("mechanisms field must not be empty"));
    }
    let mut mechanisms = Vec::new();
    for item in items {
        let Bson::String(name) = item else {
            return Err(wrong_type(command, "mechanisms", item, "string"));
        };
        let mechanism = Mechanism::from_name(name)
            .ok_or_else(|| Error::bad_value(format!("Unknown auth mechanism '{name}'")))?;
        if !mechanisms.contains(&mechanism) {
            mechanisms.push(mechanism);
        }
    }
    Ok(Some(mechanisms))
}

/// The password of a command, checked as mongod checks it.
fn parse_password<'a>(cmd: &'a Document, command: &str) -> Result<Option<&'a str>> {
    match cmd.get("pwd") {
        None => Ok(None),
        Some(Bson::String(pwd)) if pwd.is_empty() => {
            Err(Error::bad_value("Password cannot be empty"))
        }
        Some(Bson::String(pwd)) => Ok(Some(pwd)),
        Some(other) => Err(wrong_type(command, "pwd", other, "string")),
    }
}

/// Salted credentials for each mechanism. With `digestPassword: false` the client sent
/// `hex(MD5(user:mongo:pwd))` itself, which only SCRAM-SHA-1 can use (mongod's rule).
pub async fn build_credentials(
    name: &str,
    password: &str,
    mechanisms: &[Mechanism],
    digest_password: bool,
) -> Result<Credentials> {
    if !digest_password && mechanisms.contains(&Mechanism::ScramSha256) {
        return Err(Error::bad_value(
            "Use of SCRAM-SHA-256 requires undigested passwords",
        ));
    }
    let (name, password, mechanisms) = (name.to_owned(), password.to_owned(), mechanisms.to_vec());
    // Key derivation is deliberately slow: keep it off the async workers.
    tokio::task::spawn_blocking(move || {
        let mut credentials = Credentials::default();
        for mechanism in mechanisms {
            let credential = if digest_password {
                ScramCredential::generate(mechanism, &name, &password)?
            } else {
                ScramCredential::generate_from_digest(&password)?
            };
            credentials.set(mechanism, credential);
        }
        Ok(credentials)
    })
    .await
    .map_err(|e| Error::internal(format!("key derivation failed: {e}")))?
}

/// The fields `createUser` and `updateUser` share, checked the same way for both. What must
/// be present differs, and `roles` is parsed by each command after its own checks (mongod's
/// order of errors): each command decides.
struct UserArgs<'a> {
    name: &'a str,
    password: Option<&'a str>,
    custom_data: Option<Document>,
    mechanisms: Option<Vec<Mechanism>>,
    digest_password: bool,
}

impl<'a> UserArgs<'a> {
    fn parse(cmd: &'a Document, command: &str, db: &str) -> Result<UserArgs<'a>> {
        check_fields(
            cmd,
            command,
            &["pwd", "roles", "customData", "mechanisms", "digestPassword"],
        )?;
        let name = user_name(cmd, command)?;
        check_user_db(db, command)?;
        Ok(UserArgs {
            name,
            password: parse_password(cmd, command)?,
            custom_data: optional_doc(cmd, command, "customData")?.cloned(),
            mechanisms: parse_mechanisms(cmd, command)?,
            digest_password: optional_bool(cmd, command, "digestPassword")?.unwrap_or(true),
        })
    }
}

pub async fn create_user(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    let UserArgs {
        name,
        password,
        custom_data,
        mechanisms,
        digest_password,
    } = UserArgs::parse(cmd, "createUser", req.db)?;
    let password = password.ok_or_else(|| {
        Error::bad_value(
            "Must provide a 'pwd' field for all user documents, except those with '$external' as the user's source db",
        )
    })?;
    let roles = parse_roles(cmd, "createUser", req.db)?;
    let mechanisms = mechanisms.unwrap_or_else(|| Mechanism::ALL.to_vec());
    if shared.engine.catalog()?.user(req.db, name).is_some() {
        return Err(already_exists(name, req.db));
    }
    let credentials = build_credentials(name, password, &mechanisms, digest_password).await?;
    let user = User {
        db: req.db.to_owned(),
        name: name.to_owned(),
        user_id: bson::Uuid::new(),
        credentials,
        roles,
        custom_data,
    };
    shared
        .engine
        .write(durable(cmd), move |txn, _now| -> Result<()> {
            // Checked again here: another createUser may have committed meanwhile.
            if users::user(txn, &user.db, &user.name).is_some() {
                return Err(already_exists(&user.name, &user.db));
            }
            users::put_user(txn, user)
        })
        .await??;
    tracing::info!(user = name, db = req.db, "created user");
    Ok(doc! {"ok": 1.0})
}

fn already_exists(name: &str, db: &str) -> Error {
    Error::new(
        ErrorCode::Location51003,
        format!("User \"{name}@{db}\" already exists"),
    )
}

pub async fn update_user(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    let UserArgs {
        name,
        password,
        custom_data,
        mechanisms,
        digest_password,
    } = UserArgs::parse(cmd, "updateUser", req.db)?;
    let roles = match cmd.get("roles") {
        Some(_) => Some(parse_roles(cmd, "updateUser", req.db)?),
        None => None,
    };
    if password.is_none() && roles.is_none() && custom_data.is_none() && mechanisms.is_none() {
        return Err(Error::bad_value(
            "Must specify at least one field to update in updateUser",
        ));
    }
    let existing = shared
        .engine
        .catalog()?
        .user(req.db, name)
        .cloned()
        .ok_or_else(|| user_not_found(Missing::Update, name, req.db))?;
    let credentials = match (password, &mechanisms) {
        (Some(pwd), mechanisms) => {
            let mechanisms = mechanisms
                .clone()
                .unwrap_or_else(|| Mechanism::ALL.to_vec());
            Some(build_credentials(name, pwd, &mechanisms, digest_password).await?)
        }
        // Without a password the mechanisms can only narrow the existing credentials.
        (None, Some(mechanisms)) => {
            let mut narrowed = Credentials::default();
            for mechanism in mechanisms {
                let Some(credential) = existing.credentials.get(*mechanism) else {
                    return Err(Error::bad_value(
                        "mechanisms field must be a subset of previously set mechanisms",
                    ));
                };
                narrowed.set(*mechanism, credential.clone());
            }
            Some(narrowed)
        }
        (None, None) => None,
    };
    let (db, owned_name) = (req.db.to_owned(), name.to_owned());
    shared
        .engine
        .write(durable(cmd), move |txn, _now| -> Result<()> {
            let current = users::user(txn, &db, &owned_name)
                .ok_or_else(|| user_not_found(Missing::Update, &owned_name, &db))?;
            let mut user = User::clone(&current);
            if let Some(credentials) = credentials {
                user.credentials = credentials;
            }
            if let Some(roles) = roles {
                user.roles = roles;
            }
            if let Some(custom_data) = custom_data {
                user.custom_data = Some(custom_data);
            }
            users::put_user(txn, user)
        })
        .await??;
    tracing::info!(user = name, db = req.db, "updated user");
    Ok(doc! {"ok": 1.0})
}

pub async fn drop_user(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, "dropUser", &[])?;
    let name = user_name(cmd, "dropUser")?.to_owned();
    let db = req.db.to_owned();
    let removed = {
        let name = name.clone();
        shared
            .engine
            .write(durable(cmd), move |txn, _now| {
                users::remove_user(txn, &db, &name)
            })
            .await?
    };
    if !removed {
        return Err(user_not_found(Missing::Drop, &name, req.db));
    }
    tracing::info!(user = %name, db = req.db, "dropped user");
    Ok(doc! {"ok": 1.0})
}

pub async fn drop_all_users(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, "dropAllUsersFromDatabase", &[])?;
    let db = req.db.to_owned();
    let n = shared
        .engine
        .write(durable(cmd), move |txn, _now| {
            users::remove_users_of(txn, &db)
        })
        .await?;
    tracing::info!(db = req.db, count = n, "dropped all users of a database");
    Ok(doc! {"n": i32::try_from(n).unwrap_or(i32::MAX), "ok": 1.0})
}

/// `grantRolesToUser` (`grant: true`) and `revokeRolesFromUser`.
pub async fn change_roles(shared: &Shared, req: &Request<'_>, grant: bool) -> Result<Document> {
    let cmd = req.body;
    let command = req.name.name();
    check_fields(cmd, command, &["roles"])?;
    let name = user_name(cmd, command)?.to_owned();
    let changed = parse_roles(cmd, command, req.db)?;
    if changed.is_empty() {
        return Err(Error::bad_value(format!(
            "{command} command requires a non-empty \"roles\" array"
        )));
    }
    let db = req.db.to_owned();
    shared
        .engine
        .write(durable(cmd), move |txn, _now| -> Result<()> {
            let current = users::user(txn, &db, &name)
                .ok_or_else(|| user_not_found(Missing::Roles, &name, &db))?;
            let mut user = User::clone(&current);
            if grant {
                for role in changed {
                    if !user.roles.contains(&role) {
                        user.roles.push(role);
                    }
                }
            } else {
                user.roles.retain(|role| !changed.contains(role));
            }
            users::put_user(txn, user)
        })
        .await??;
    Ok(doc! {"ok": 1.0})
}
