//! The Cosmos DB account user: Cosmos DB's connection strings name the account as the user and
//! its primary key as the password, with `authSource=admin`. At start the server makes sure a
//! user of that name exists in `admin` with role `root` and the configured key as password.
//!
//! Owns creating or re-keying that one user. Does not own the flags (`config`) or how the user
//! authenticates (SCRAM).

use super::manage::build_credentials;
use crate::auth::credentials::{Mechanism, ScramCredential};
use crate::auth::{RoleName, User};
use crate::command::Shared;
use crate::config::EMULATOR_COSMOS_KEY;
use crate::engine::users;
use crate::error::Result;

/// The database the account user lives in (Cosmos DB's `authSource`).
pub const ACCOUNT_DB: &str = "admin";

/// Creates the account user, or updates its credentials when the key changed. Does nothing
/// when the account is disabled (`--cosmos-account ''`).
pub async fn ensure_account(shared: &Shared) -> Result<()> {
    let Some(name) = shared.config.cosmos_account.clone() else {
        return Ok(());
    };
    let key = shared.config.cosmos_key.expose().to_owned();
    let well_known = if key == EMULATOR_COSMOS_KEY {
        "the emulator's well-known key"
    } else {
        "the configured key"
    };
    let existing = shared.engine.catalog()?.user(ACCOUNT_DB, &name).cloned();
    if let Some(user) = &existing {
        let (user_name, key_check) = (name.clone(), key.clone());
        let stored = user.credentials.clone();
        let current = tokio::task::spawn_blocking(move || {
            Mechanism::ALL.iter().all(|m| match stored.get(*m) {
                Some(c) => key_matches(*m, &user_name, &key_check, c),
                None => false,
            })
        })
        .await
        .unwrap_or(false);
        if current {
            tracing::info!(account = %name, db = ACCOUNT_DB, "Cosmos DB account user ready; its password is {well_known}");
            return Ok(());
        }
    }
    let credentials = build_credentials(&name, &key, Mechanism::ALL, true).await?;
    let user = User {
        db: ACCOUNT_DB.to_owned(),
        name: name.clone(),
        user_id: existing
            .as_ref()
            .map_or_else(bson::Uuid::new, |u| u.user_id),
        credentials,
        roles: vec![RoleName::new("root", ACCOUNT_DB)],
        custom_data: existing.as_ref().and_then(|u| u.custom_data.clone()),
    };
    shared
        .engine
        .write(true, move |txn, _now| users::put_user(txn, user))
        .await??;
    let action = if existing.is_some() {
        "updated"
    } else {
        "created"
    };
    tracing::info!(account = %name, db = ACCOUNT_DB, "Cosmos DB account user {action} with role root; its password is {well_known}");
    Ok(())
}

/// Whether `key` is the password these stored credentials were derived from.
fn key_matches(mechanism: Mechanism, name: &str, key: &str, stored: &ScramCredential) -> bool {
    ScramCredential::derive(mechanism, name, key, &stored.salt, stored.iteration_count).is_ok_and(
        |derived| {
            derived.stored_key == stored.stored_key && derived.server_key == stored.server_key
        },
    )
}
