//! A user as the catalog stores it: name, database, roles and salted SCRAM keys — never the
//! password (mongod's `admin.system.users` document, minus what mayfly does not implement:
//! authentication restrictions and custom roles).

use super::credentials::{Mechanism, ScramCredential};
use bson::{doc, Document, Uuid};
use serde::{Deserialize, Serialize};

/// A role granted to a user: a built-in role name and the database it applies to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RoleName {
    pub role: String,
    pub db: String,
}

impl RoleName {
    pub fn new(role: impl Into<String>, db: impl Into<String>) -> RoleName {
        RoleName {
            role: role.into(),
            db: db.into(),
        }
    }

    /// `{role, db}` as `usersInfo` and `connectionStatus` show it.
    pub fn to_document(&self) -> Document {
        doc! {"role": self.role.as_str(), "db": self.db.as_str()}
    }
}

/// The salted keys of each mechanism the user may authenticate with.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Credentials {
    #[serde(
        rename = "SCRAM-SHA-1",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub sha1: Option<ScramCredential>,
    #[serde(
        rename = "SCRAM-SHA-256",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub sha256: Option<ScramCredential>,
}

impl Credentials {
    pub fn get(&self, mechanism: Mechanism) -> Option<&ScramCredential> {
        match mechanism {
            Mechanism::ScramSha1 => self.sha1.as_ref(),
            Mechanism::ScramSha256 => self.sha256.as_ref(),
        }
    }

    /// Sets (or replaces) the keys of `mechanism`.
    pub fn set(&mut self, mechanism: Mechanism, credential: ScramCredential) {
        match mechanism {
            Mechanism::ScramSha1 => self.sha1 = Some(credential),
            Mechanism::ScramSha256 => self.sha256 = Some(credential),
        }
    }

    /// The mechanisms this user has keys for, SCRAM-SHA-1 first (mongod's order).
    pub fn mechanisms(&self) -> Vec<Mechanism> {
        Mechanism::ALL
            .iter()
            .copied()
            .filter(|m| self.get(*m).is_some())
            .collect()
    }
}

/// A user of one database.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct User {
    /// The database the user authenticates against (its `authSource`).
    pub db: String,
    pub name: String,
    #[serde(rename = "userId")]
    pub user_id: Uuid,
    pub credentials: Credentials,
    pub roles: Vec<RoleName>,
    #[serde(
        rename = "customData",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub custom_data: Option<Document>,
}

impl User {
    /// `<db>.<name>`: the user's `_id` in `usersInfo`.
    pub fn id(&self) -> String {
        format!("{}.{}", self.db, self.name)
    }
}
