//! The built-in roles and what they grant: mongod's action names on mongod's resources (a
//! database, a collection, any normal database, the cluster), and the one check of whether a set
//! of roles allows an action on a resource.
//!
//! Follows mongod 7.0's `builtin_roles` for the actions of the commands mayfly has. Custom
//! roles, `backup` and `restore` do not exist. Which action a command needs is the command
//! layer's (`command::authz`); this module knows nothing about commands.

use super::user::RoleName;
use bson::{doc, Bson, Document};

macro_rules! actions {
    ($($variant:ident = $name:literal),* $(,)?) => {
        /// An action a privilege allows, named as mongod's `ActionType`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Action {
            $($variant),*
        }

        impl Action {
            pub fn name(self) -> &'static str {
                match self {
                    $(Action::$variant => $name),*
                }
            }
        }
    };
}

actions! {
    ChangeCustomData = "changeCustomData",
    ChangePassword = "changePassword",
    ChangeStream = "changeStream",
    CollMod = "collMod",
    CollStats = "collStats",
    ConvertToCapped = "convertToCapped",
    CreateCollection = "createCollection",
    CreateIndex = "createIndex",
    CreateRole = "createRole",
    CreateUser = "createUser",
    DbHash = "dbHash",
    DbStats = "dbStats",
    DropCollection = "dropCollection",
    DropDatabase = "dropDatabase",
    DropIndex = "dropIndex",
    DropRole = "dropRole",
    DropUser = "dropUser",
    EnableProfiler = "enableProfiler",
    Find = "find",
    GetCmdLineOpts = "getCmdLineOpts",
    GetLog = "getLog",
    GetParameter = "getParameter",
    GrantRole = "grantRole",
    HostInfo = "hostInfo",
    IndexStats = "indexStats",
    Inprog = "inprog",
    Insert = "insert",
    Internal = "internal",
    KillAnySession = "killAnySession",
    KillCursors = "killCursors",
    Killop = "killop",
    ListCollections = "listCollections",
    ListDatabases = "listDatabases",
    ListIndexes = "listIndexes",
    ListSessions = "listSessions",
    Remove = "remove",
    RenameCollectionSameDb = "renameCollectionSameDB",
    ReplSetConfigure = "replSetConfigure",
    ReplSetGetConfig = "replSetGetConfig",
    ReplSetGetStatus = "replSetGetStatus",
    ReplSetStateChange = "replSetStateChange",
    RevokeRole = "revokeRole",
    ServerStatus = "serverStatus",
    Top = "top",
    Update = "update",
    Validate = "validate",
    ViewRole = "viewRole",
    ViewUser = "viewUser",
}

use Action as A;

/// mongod's `readRoleActions`.
const READ: &[Action] = &[
    A::ChangeStream,
    A::CollStats,
    A::DbHash,
    A::DbStats,
    A::Find,
    A::KillCursors,
    A::ListCollections,
    A::ListIndexes,
];

/// mongod's `readWriteRoleActions` beyond [`READ`].
const WRITE: &[Action] = &[
    A::ConvertToCapped,
    A::CreateCollection,
    A::CreateIndex,
    A::DropCollection,
    A::DropIndex,
    A::Insert,
    A::Remove,
    A::RenameCollectionSameDb,
    A::Update,
];

/// mongod's `dbAdminRoleActions` (those of commands mayfly has, and their neighbours). No
/// `find`: a database administrator manages collections, it does not read them.
const DB_ADMIN: &[Action] = &[
    A::CollMod,
    A::CollStats,
    A::ConvertToCapped,
    A::CreateCollection,
    A::CreateIndex,
    A::DbStats,
    A::DropCollection,
    A::DropDatabase,
    A::DropIndex,
    A::ListCollections,
    A::ListIndexes,
    A::EnableProfiler,
    A::RenameCollectionSameDb,
    A::Validate,
];

/// The profiler's collection.
const PROFILE: &str = "system.profile";

/// What `dbAdmin` may do with the profiler's `system.profile` (mongod's grant on it).
const PROFILE_ADMIN: &[Action] = &[
    A::CollStats,
    A::ConvertToCapped,
    A::CreateCollection,
    A::DbStats,
    A::DropCollection,
    A::Find,
    A::KillCursors,
    A::ListCollections,
    A::ListIndexes,
];

/// mongod's `userAdminRoleActions`.
const USER_ADMIN: &[Action] = &[
    A::ChangeCustomData,
    A::ChangePassword,
    A::CreateRole,
    A::CreateUser,
    A::DropRole,
    A::DropUser,
    A::GrantRole,
    A::RevokeRole,
    A::ViewRole,
    A::ViewUser,
];

/// `clusterMonitor`'s actions on the cluster.
const CLUSTER_MONITOR: &[Action] = &[
    A::GetCmdLineOpts,
    A::GetLog,
    A::GetParameter,
    A::HostInfo,
    A::Inprog,
    A::ListDatabases,
    A::ListSessions,
    A::ReplSetGetConfig,
    A::ReplSetGetStatus,
    A::ServerStatus,
    A::Top,
];

/// `clusterAdmin`'s cluster actions beyond [`CLUSTER_MONITOR`] (from `clusterManager` and
/// `hostManager`).
const CLUSTER_MANAGE: &[Action] = &[
    A::KillAnySession,
    A::Killop,
    A::ReplSetConfigure,
    A::ReplSetStateChange,
];

/// What a privilege applies to, as a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourcePattern {
    /// Server-wide actions (`{cluster: true}`).
    Cluster,
    /// A database and its normal collections (`{db: "x", collection: ""}`).
    Database(String),
    /// Every database but `local` and `config`, and their normal collections
    /// (`{db: "", collection: ""}`).
    AnyNormal,
    /// One collection, `system.` names included (`{db: "x", collection: "system.profile"}`).
    Collection { db: String, collection: String },
    /// The collection of this name in every database (`{db: "", collection: "system.profile"}`).
    CollectionInAnyDatabase(String),
    /// Everything (`{anyResource: true}`).
    Any,
}

/// What an operation acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource<'a> {
    Cluster,
    Database(&'a str),
    Collection { db: &'a str, collection: &'a str },
}

impl Resource<'_> {
    fn db(&self) -> Option<&str> {
        match self {
            Resource::Cluster => None,
            Resource::Database(db) | Resource::Collection { db, .. } => Some(db),
        }
    }

    /// A normal resource: not a `system.` collection (mongod's `isNormalResource`).
    fn is_normal(&self) -> bool {
        match self {
            Resource::Cluster => false,
            Resource::Database(_) => true,
            Resource::Collection { collection, .. } => !collection.starts_with("system."),
        }
    }
}

impl ResourcePattern {
    pub fn matches(&self, resource: &Resource<'_>) -> bool {
        match self {
            ResourcePattern::Any => true,
            ResourcePattern::Cluster => *resource == Resource::Cluster,
            ResourcePattern::Database(db) => {
                resource.is_normal() && resource.db() == Some(db.as_str())
            }
            ResourcePattern::AnyNormal => {
                resource.is_normal() && !matches!(resource.db(), Some("local" | "config"))
            }
            ResourcePattern::Collection { db, collection } => {
                *resource == Resource::Collection { db, collection }
            }
            ResourcePattern::CollectionInAnyDatabase(collection) => matches!(
                resource,
                Resource::Collection { collection: c, .. } if c == collection
            ),
        }
    }

    /// The resource as `connectionStatus` and `usersInfo` show it.
    pub fn to_document(&self) -> Document {
        match self {
            ResourcePattern::Cluster => doc! {"cluster": true},
            ResourcePattern::Database(db) => doc! {"db": db.as_str(), "collection": ""},
            ResourcePattern::AnyNormal => doc! {"db": "", "collection": ""},
            ResourcePattern::Collection { db, collection } => {
                doc! {"db": db.as_str(), "collection": collection.as_str()}
            }
            ResourcePattern::CollectionInAnyDatabase(collection) => {
                doc! {"db": "", "collection": collection.as_str()}
            }
            ResourcePattern::Any => doc! {"anyResource": true},
        }
    }
}

/// Actions allowed on the resources a pattern matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Privilege {
    pub resource: ResourcePattern,
    pub actions: Vec<Action>,
}

impl Privilege {
    fn new(resource: ResourcePattern, groups: &[&[Action]]) -> Privilege {
        let mut actions: Vec<Action> = groups.iter().flat_map(|g| g.iter().copied()).collect();
        actions.sort();
        actions.dedup();
        Privilege { resource, actions }
    }

    pub fn to_document(&self) -> Document {
        let actions: Vec<Bson> = self.actions.iter().map(|a| a.name().into()).collect();
        doc! {"resource": self.resource.to_document(), "actions": actions}
    }
}

/// The built-in role names mayfly knows (`root`'s database is `admin`, as for every
/// any-database and cluster role).
pub const BUILTIN_ROLES: &[&str] = &[
    "read",
    "readWrite",
    "dbAdmin",
    "userAdmin",
    "dbOwner",
    "readAnyDatabase",
    "readWriteAnyDatabase",
    "userAdminAnyDatabase",
    "dbAdminAnyDatabase",
    "clusterMonitor",
    "clusterAdmin",
    "root",
];

/// Roles that exist only in `admin` (mongod: `readAnyDatabase@test` is not a role).
fn admin_only(role: &str) -> bool {
    role.ends_with("AnyDatabase") || role.starts_with("cluster") || role == "root"
}

/// Whether `role` on `db` is a built-in role.
pub fn is_builtin(role: &RoleName) -> bool {
    BUILTIN_ROLES.contains(&role.role.as_str()) && (!admin_only(&role.role) || role.db == "admin")
}

/// The privileges one role grants; none for a role that is not built in.
pub fn privileges_of_role(role: &RoleName) -> Vec<Privilege> {
    if !is_builtin(role) {
        return Vec::new();
    }
    let db = || ResourcePattern::Database(role.db.clone());
    let any = || ResourcePattern::AnyNormal;
    let cluster = |groups: &[&[Action]]| Privilege::new(ResourcePattern::Cluster, groups);
    let list_databases = || cluster(&[&[A::ListDatabases]]);
    let profile = || {
        let resource = ResourcePattern::Collection {
            db: role.db.clone(),
            collection: PROFILE.to_owned(),
        };
        Privilege::new(resource, &[PROFILE_ADMIN])
    };
    match role.role.as_str() {
        "read" => vec![Privilege::new(db(), &[READ])],
        "readWrite" => vec![Privilege::new(db(), &[READ, WRITE])],
        "dbAdmin" => vec![Privilege::new(db(), &[DB_ADMIN]), profile()],
        "userAdmin" => vec![Privilege::new(db(), &[USER_ADMIN])],
        "dbOwner" => vec![
            Privilege::new(db(), &[READ, WRITE, DB_ADMIN, USER_ADMIN]),
            profile(),
        ],
        "readAnyDatabase" => vec![Privilege::new(any(), &[READ]), list_databases()],
        "readWriteAnyDatabase" => vec![Privilege::new(any(), &[READ, WRITE]), list_databases()],
        "userAdminAnyDatabase" => vec![
            Privilege::new(any(), &[USER_ADMIN]),
            cluster(&[&[A::ListDatabases, A::ViewRole, A::ViewUser]]),
        ],
        "dbAdminAnyDatabase" => vec![
            Privilege::new(any(), &[DB_ADMIN]),
            Privilege::new(
                ResourcePattern::CollectionInAnyDatabase(PROFILE.to_owned()),
                &[PROFILE_ADMIN],
            ),
            list_databases(),
        ],
        "clusterMonitor" => vec![
            cluster(&[CLUSTER_MONITOR]),
            Privilege::new(any(), &[&[A::CollStats, A::DbStats, A::IndexStats]]),
        ],
        "clusterAdmin" => vec![
            cluster(&[CLUSTER_MONITOR, CLUSTER_MANAGE]),
            Privilege::new(
                any(),
                &[&[
                    A::CollStats,
                    A::DbStats,
                    A::DropDatabase,
                    A::IndexStats,
                    A::KillCursors,
                ]],
            ),
        ],
        // mongod's root is the union of the any-database and cluster roles plus backup and
        // restore; with no system collections to protect, that is every action on everything.
        "root" => vec![Privilege::new(
            ResourcePattern::Any,
            &[
                READ,
                WRITE,
                DB_ADMIN,
                USER_ADMIN,
                CLUSTER_MONITOR,
                CLUSTER_MANAGE,
                &[A::IndexStats, A::Internal],
            ],
        )],
        _ => Vec::new(),
    }
}

/// Every privilege the roles grant, merged per resource (the `showPrivileges` list).
pub fn privileges_of(roles: &[RoleName]) -> Vec<Privilege> {
    let mut merged: Vec<Privilege> = Vec::new();
    for privilege in roles.iter().flat_map(privileges_of_role) {
        match merged.iter_mut().find(|p| p.resource == privilege.resource) {
            Some(existing) => {
                existing.actions.extend(privilege.actions);
                existing.actions.sort();
                existing.actions.dedup();
            }
            None => merged.push(privilege),
        }
    }
    merged
}

/// Whether any of the roles allows `action` on `resource`.
pub fn is_authorized(roles: &[RoleName], resource: &Resource<'_>, action: Action) -> bool {
    roles.iter().any(|role| {
        privileges_of_role(role)
            .iter()
            .any(|p| p.resource.matches(resource) && p.actions.contains(&action))
    })
}

/// Whether the roles allow anything at all on `db` or one of its collections (what
/// `listDatabases` with `authorizedDatabases` shows).
pub fn has_any_privilege_on_db(roles: &[RoleName], db: &str) -> bool {
    let resource = Resource::Database(db);
    roles
        .iter()
        .flat_map(privileges_of_role)
        .any(|p| p.resource != ResourcePattern::Cluster && p.resource.matches(&resource))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coll<'a>(db: &'a str, collection: &'a str) -> Resource<'a> {
        Resource::Collection { db, collection }
    }

    #[test]
    fn each_role_allows_and_refuses_what_mongod_does() {
        use Resource::{Cluster, Database};
        // (role, role db, resource, action, allowed)
        let table: &[(&str, &str, Resource<'_>, Action, bool)] = &[
            ("read", "app", coll("app", "c"), A::Find, true),
            ("read", "app", coll("app", "c"), A::Insert, false),
            ("read", "app", coll("other", "c"), A::Find, false),
            ("read", "app", Database("app"), A::ListCollections, true),
            ("read", "app", Database("app"), A::DbStats, true),
            ("read", "app", Database("app"), A::DropDatabase, false),
            ("read", "app", coll("app", "system.users"), A::Find, false),
            ("readWrite", "app", coll("app", "c"), A::Insert, true),
            ("readWrite", "app", coll("app", "c"), A::Update, true),
            ("readWrite", "app", coll("app", "c"), A::Remove, true),
            ("readWrite", "app", coll("app", "c"), A::CreateIndex, true),
            (
                "readWrite",
                "app",
                coll("app", "c"),
                A::DropCollection,
                true,
            ),
            ("readWrite", "app", Database("app"), A::DropDatabase, false),
            ("readWrite", "app", Database("app"), A::CreateUser, false),
            ("readWrite", "app", coll("b", "c"), A::Insert, false),
            ("dbAdmin", "app", coll("app", "c"), A::Find, false),
            ("dbAdmin", "app", coll("app", "c"), A::Insert, false),
            ("dbAdmin", "app", coll("app", "c"), A::CollMod, true),
            ("dbAdmin", "app", Database("app"), A::DropDatabase, true),
            ("dbAdmin", "app", coll("app", "c"), A::CreateIndex, true),
            ("userAdmin", "app", Database("app"), A::CreateUser, true),
            ("userAdmin", "app", Database("app"), A::GrantRole, true),
            ("userAdmin", "app", Database("app"), A::ViewUser, true),
            ("userAdmin", "app", coll("app", "c"), A::Find, false),
            ("userAdmin", "app", Database("b"), A::CreateUser, false),
            ("dbOwner", "app", coll("app", "c"), A::Find, true),
            ("dbOwner", "app", coll("app", "c"), A::Insert, true),
            ("dbOwner", "app", Database("app"), A::DropDatabase, true),
            ("dbOwner", "app", Database("app"), A::DropUser, true),
            ("dbOwner", "app", Database("b"), A::DbStats, false),
            ("dbOwner", "app", Cluster, A::ListDatabases, false),
            ("readAnyDatabase", "admin", coll("x", "c"), A::Find, true),
            ("readAnyDatabase", "admin", coll("x", "c"), A::Insert, false),
            ("readAnyDatabase", "admin", Cluster, A::ListDatabases, true),
            (
                "readAnyDatabase",
                "admin",
                coll("local", "c"),
                A::Find,
                false,
            ),
            (
                "readAnyDatabase",
                "admin",
                coll("config", "c"),
                A::Find,
                false,
            ),
            (
                "readWriteAnyDatabase",
                "admin",
                coll("x", "c"),
                A::Insert,
                true,
            ),
            (
                "readWriteAnyDatabase",
                "admin",
                Database("x"),
                A::DropDatabase,
                false,
            ),
            (
                "readWriteAnyDatabase",
                "admin",
                Cluster,
                A::ServerStatus,
                false,
            ),
            (
                "userAdminAnyDatabase",
                "admin",
                Database("x"),
                A::CreateUser,
                true,
            ),
            (
                "userAdminAnyDatabase",
                "admin",
                coll("x", "c"),
                A::Find,
                false,
            ),
            (
                "userAdminAnyDatabase",
                "admin",
                Cluster,
                A::ListDatabases,
                true,
            ),
            (
                "dbAdminAnyDatabase",
                "admin",
                Database("x"),
                A::DropDatabase,
                true,
            ),
            (
                "dbAdminAnyDatabase",
                "admin",
                coll("x", "c"),
                A::Find,
                false,
            ),
            ("clusterMonitor", "admin", Cluster, A::ServerStatus, true),
            ("clusterMonitor", "admin", Cluster, A::GetLog, true),
            ("clusterMonitor", "admin", Cluster, A::Inprog, true),
            ("clusterMonitor", "admin", Cluster, A::Killop, false),
            (
                "clusterMonitor",
                "admin",
                coll("x", "c"),
                A::CollStats,
                true,
            ),
            ("clusterMonitor", "admin", coll("x", "c"), A::Find, false),
            // indexStats: the monitoring and administration roles, not read or dbAdmin.
            (
                "clusterMonitor",
                "admin",
                coll("x", "c"),
                A::IndexStats,
                true,
            ),
            ("clusterAdmin", "admin", coll("x", "c"), A::IndexStats, true),
            ("root", "admin", coll("x", "c"), A::IndexStats, true),
            ("read", "x", coll("x", "c"), A::IndexStats, false),
            ("dbOwner", "x", coll("x", "c"), A::IndexStats, false),
            (
                "readAnyDatabase",
                "admin",
                coll("x", "c"),
                A::IndexStats,
                false,
            ),
            ("clusterAdmin", "admin", Cluster, A::Killop, true),
            (
                "clusterAdmin",
                "admin",
                Database("x"),
                A::DropDatabase,
                true,
            ),
            ("clusterAdmin", "admin", coll("x", "c"), A::Insert, false),
            ("root", "admin", coll("x", "c"), A::Find, true),
            ("root", "admin", coll("local", "c"), A::Insert, true),
            ("root", "admin", Cluster, A::Killop, true),
            ("root", "admin", Database("x"), A::CreateUser, true),
            // Any-database and cluster roles exist only in admin.
            ("root", "app", coll("x", "c"), A::Find, false),
            ("readAnyDatabase", "app", coll("x", "c"), A::Find, false),
            ("clusterMonitor", "app", Cluster, A::ServerStatus, false),
            ("noSuchRole", "app", coll("app", "c"), A::Find, false),
        ];
        for (role, db, resource, action, allowed) in table {
            let roles = [RoleName::new(*role, *db)];
            assert_eq!(
                is_authorized(&roles, resource, *action),
                *allowed,
                "{role}@{db} {action:?} on {resource:?}"
            );
        }
    }

    #[test]
    fn roles_add_up() {
        let roles = [RoleName::new("read", "a"), RoleName::new("readWrite", "b")];
        assert!(is_authorized(&roles, &coll("a", "c"), A::Find));
        assert!(is_authorized(&roles, &coll("b", "c"), A::Insert));
        assert!(!is_authorized(&roles, &coll("a", "c"), A::Insert));
        assert!(!is_authorized(&[], &coll("a", "c"), A::Find));
    }

    #[test]
    fn builtin_names_respect_the_admin_only_rule() {
        assert!(is_builtin(&RoleName::new("read", "anything")));
        assert!(is_builtin(&RoleName::new("root", "admin")));
        assert!(!is_builtin(&RoleName::new("root", "test")));
        assert!(!is_builtin(&RoleName::new("clusterAdmin", "test")));
        assert!(!is_builtin(&RoleName::new("reader", "test")));
    }

    #[test]
    fn privileges_are_listed_per_resource_as_mongod_shows_them() {
        let roles = [
            RoleName::new("read", "app"),
            RoleName::new("readWrite", "app"),
            RoleName::new("clusterMonitor", "admin"),
        ];
        let docs: Vec<Document> = privileges_of(&roles)
            .iter()
            .map(Privilege::to_document)
            .collect();
        assert_eq!(docs.len(), 3, "{docs:?}");
        let app = docs
            .iter()
            .find(|d| {
                d.get_document("resource").ok() == Some(&doc! {"db": "app", "collection": ""})
            })
            .unwrap();
        let actions = app.get_array("actions").unwrap();
        assert!(actions.contains(&Bson::from("find")));
        assert!(actions.contains(&Bson::from("insert")));
        assert_eq!(
            actions.iter().filter(|a| *a == &Bson::from("find")).count(),
            1,
            "merged without duplicates"
        );
        assert!(docs
            .iter()
            .any(|d| d.get_document("resource").ok() == Some(&doc! {"cluster": true})));
    }

    #[test]
    fn db_visibility_follows_privileges() {
        let roles = [RoleName::new("read", "app")];
        assert!(has_any_privilege_on_db(&roles, "app"));
        assert!(!has_any_privilege_on_db(&roles, "other"));
        let any = [RoleName::new("readAnyDatabase", "admin")];
        assert!(has_any_privilege_on_db(&any, "other"));
        let monitor_only = [RoleName::new("clusterMonitor", "admin")];
        assert!(has_any_privilege_on_db(&monitor_only, "other"));
    }
}
