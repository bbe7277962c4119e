//! User changes inside a [`Txn`]: creating or replacing a user's catalog entry and removing it.
//! Whether a change is allowed (duplicates, roles, who asks) is the command layer's rule; this
//! module only keeps the stored entry and the published catalog in step.

use crate::auth::User;
use crate::engine::writer::txn::Txn;
use crate::error::Result;
use crate::storage::Keyspace;
use std::sync::Arc;

/// The user as of this point in the group, if it exists.
pub fn user(txn: &Txn<'_>, db: &str, name: &str) -> Option<Arc<User>> {
    txn.catalog.user(db, name).cloned()
}

/// Writes a user's entry, replacing any user of the same database and name.
pub fn put_user(txn: &mut Txn<'_>, user: User) -> Result<()> {
    let (key, value) = txn.catalog.put_user(user)?;
    txn.put(Keyspace::Catalog, key, value);
    txn.catalog_changed();
    Ok(())
}

/// Removes a user; returns whether it existed.
pub fn remove_user(txn: &mut Txn<'_>, db: &str, name: &str) -> bool {
    match txn.catalog.remove_user(db, name) {
        Some((_, key)) => {
            txn.delete(Keyspace::Catalog, key);
            txn.catalog_changed();
            true
        }
        None => false,
    }
}

/// Removes every user of `db`; returns how many there were.
pub fn remove_users_of(txn: &mut Txn<'_>, db: &str) -> usize {
    let names: Vec<String> = txn.catalog.users_in(db).map(|u| u.name.clone()).collect();
    names
        .iter()
        .filter(|name| remove_user(txn, db, name))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{Credentials, Mechanism, RoleName, ScramCredential};
    use crate::clock::ManualClock;
    use crate::engine::Engine;

    fn alice() -> User {
        User {
            db: "admin".into(),
            name: "alice".into(),
            user_id: bson::Uuid::new(),
            credentials: Credentials {
                sha1: None,
                sha256: Some(
                    ScramCredential::generate(Mechanism::ScramSha256, "alice", "pw").unwrap(),
                ),
            },
            roles: vec![RoleName::new("root", "admin")],
            custom_data: None,
        }
    }

    #[tokio::test]
    async fn users_survive_a_restart_and_removal_is_durable() {
        let dir = tempfile::tempdir().unwrap();
        let open = || Engine::open(dir.path(), Arc::new(ManualClock::starting_at_secs(1_000)));
        {
            let engine = open().unwrap();
            let user = alice();
            engine
                .write(true, move |txn, _| put_user(txn, user))
                .await
                .unwrap()
                .unwrap();
            assert!(engine.catalog().unwrap().has_users());
        }
        let engine = open().unwrap();
        let loaded = engine
            .catalog()
            .unwrap()
            .user("admin", "alice")
            .cloned()
            .unwrap();
        assert_eq!(loaded.roles, vec![RoleName::new("root", "admin")]);
        assert!(loaded.credentials.sha256.is_some());
        let removed = engine
            .write(true, |txn, _| remove_user(txn, "admin", "alice"))
            .await
            .unwrap();
        assert!(removed);
        assert!(!engine.catalog().unwrap().has_users());
        drop(engine);
        let engine = open().unwrap();
        assert!(engine.catalog().unwrap().user("admin", "alice").is_none());
    }
}
