//! User management commands through the Rust driver, with access control off (the default):
//! createUser, updateUser, dropUser, dropAllUsersFromDatabase, usersInfo, grantRolesToUser,
//! revokeRolesFromUser — their replies, mongod's errors, and persistence across a restart.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::TestServer;
use mongodb::Database;

async fn fails_with(db: &Database, cmd: Document) -> (i32, String) {
    let err = db.run_command(cmd.clone()).await.unwrap_err();
    let mongodb::error::ErrorKind::Command(c) = err.kind.as_ref() else {
        panic!("{cmd}: {err}")
    };
    (c.code, c.message.clone())
}

async fn users_of(db: &Database, arg: Bson) -> Vec<Document> {
    let reply = db.run_command(doc! {"usersInfo": arg}).await.unwrap();
    reply
        .get_array("users")
        .unwrap()
        .iter()
        .map(|u| u.as_document().unwrap().clone())
        .collect()
}

#[tokio::test]
async fn create_user_then_users_info_shows_it_as_mongod_does() {
    let server = TestServer::start().await;
    let db = server.client().await.database("app");
    let reply = db
        .run_command(doc! {
            "createUser": "alice",
            "pwd": "secret",
            "roles": ["readWrite", {"role": "read", "db": "reports"}],
            "customData": {"team": "blue"},
        })
        .await
        .unwrap();
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0);

    let users = users_of(&db, Bson::String("alice".into())).await;
    assert_eq!(users.len(), 1);
    let alice = &users[0];
    assert_eq!(alice.get_str("_id").unwrap(), "app.alice");
    assert_eq!(alice.get_str("user").unwrap(), "alice");
    assert_eq!(alice.get_str("db").unwrap(), "app");
    assert!(
        matches!(alice.get("userId"), Some(Bson::Binary(b)) if b.subtype == bson::spec::BinarySubtype::Uuid)
    );
    assert_eq!(
        alice.get_array("roles").unwrap(),
        &vec![
            Bson::Document(doc! {"role": "readWrite", "db": "app"}),
            Bson::Document(doc! {"role": "read", "db": "reports"}),
        ]
    );
    assert_eq!(
        alice.get_array("mechanisms").unwrap(),
        &vec![Bson::from("SCRAM-SHA-1"), Bson::from("SCRAM-SHA-256")]
    );
    assert_eq!(
        alice.get_document("customData").unwrap(),
        &doc! {"team": "blue"}
    );
    assert!(
        !alice.contains_key("credentials"),
        "only with showCredentials"
    );

    // The other argument forms.
    assert_eq!(users_of(&db, Bson::Int32(1)).await.len(), 1);
    assert_eq!(
        users_of(&db, Bson::Document(doc! {"user": "alice", "db": "app"}))
            .await
            .len(),
        1
    );
    assert_eq!(
        users_of(&db, Bson::Array(vec!["alice".into(), "nobody".into()]))
            .await
            .len(),
        1
    );
    assert!(users_of(&db, Bson::String("nobody".into()))
        .await
        .is_empty());
    let other = server.client().await.database("other");
    assert!(users_of(&other, Bson::Int32(1)).await.is_empty());
    let all = other
        .run_command(doc! {"usersInfo": {"forAllDBs": true}})
        .await
        .unwrap();
    assert_eq!(all.get_array("users").unwrap().len(), 1);
}

#[tokio::test]
async fn users_info_shows_credentials_and_privileges_when_asked() {
    let server = TestServer::start().await;
    let db = server.client().await.database("app");
    db.run_command(
        doc! {"createUser": "bob", "pwd": "pw", "roles": ["read"], "mechanisms": ["SCRAM-SHA-256"]},
    )
    .await
    .unwrap();
    let reply = db
        .run_command(doc! {"usersInfo": "bob", "showCredentials": true, "showPrivileges": true})
        .await
        .unwrap();
    let bob = reply.get_array("users").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    let credentials = bob.get_document("credentials").unwrap();
    assert!(credentials.contains_key("SCRAM-SHA-256"));
    assert!(
        !credentials.contains_key("SCRAM-SHA-1"),
        "only the mechanisms asked for"
    );
    let sha256 = credentials.get_document("SCRAM-SHA-256").unwrap();
    assert_eq!(sha256.get_i64("iterationCount").unwrap(), 15_000);
    for key in ["salt", "storedKey", "serverKey"] {
        assert!(!sha256.get_str(key).unwrap().is_empty());
    }
    let privileges = bob.get_array("inheritedPrivileges").unwrap();
    let on_app = privileges
        .iter()
        .filter_map(Bson::as_document)
        .find(|p| p.get_document("resource").unwrap() == &doc! {"db": "app", "collection": ""})
        .expect("read grants privileges on app");
    assert!(on_app
        .get_array("actions")
        .unwrap()
        .contains(&Bson::from("find")));
    assert!(!on_app
        .get_array("actions")
        .unwrap()
        .contains(&Bson::from("insert")));
    let (code, _) = fails_with(&db, doc! {"usersInfo": 1, "showPrivileges": true}).await;
    assert_eq!(code, 20, "privileges only for named users, as mongod");
    let filtered = db
        .run_command(doc! {"usersInfo": 1, "filter": {"roles.role": "readWrite"}})
        .await
        .unwrap();
    assert!(filtered.get_array("users").unwrap().is_empty());
}

#[tokio::test]
async fn create_user_refuses_what_mongod_refuses() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("app");
    db.run_command(doc! {"createUser": "dup", "pwd": "pw", "roles": []})
        .await
        .unwrap();
    let table: Vec<(&str, Document, i32, &str)> = vec![
        ("app", doc! {"createUser": "dup", "pwd": "pw", "roles": []}, 51003, "User \"dup@app\" already exists"),
        ("app", doc! {"createUser": "x", "pwd": "pw", "roles": ["superuser"]}, 31, "Could not find role: superuser@app"),
        ("app", doc! {"createUser": "x", "pwd": "pw", "roles": ["root"]}, 31, "Could not find role: root@app"),
        ("app", doc! {"createUser": "x", "pwd": "", "roles": []}, 2, "Password cannot be empty"),
        ("app", doc! {"createUser": "x", "roles": []}, 2, "Must provide a 'pwd' field for all user documents, except those with '$external' as the user's source db"),
        ("app", doc! {"createUser": "x", "pwd": "pw"}, 2, "\"createUser\" command requires a \"roles\" array"),
        ("app", doc! {"createUser": "", "pwd": "pw", "roles": []}, 2, "User name must not be empty"),
        ("app", doc! {"createUser": "x", "pwd": "pw", "roles": [], "mechanisms": ["PLAIN"]}, 2, "Unknown auth mechanism 'PLAIN'"),
        ("app", doc! {"createUser": "x", "pwd": "pw", "roles": [], "mechanisms": []}, 2, "mechanisms field must not be empty"),
        ("app", doc! {"createUser": "x", "pwd": "pw", "roles": [], "digestPassword": false}, 2, "Use of SCRAM-SHA-256 requires undigested passwords"),
        ("app", doc! {"createUser": "x", "pwd": "pw", "roles": [], "passwordDigestor": "server"}, 40415, "BSON field 'createUser.passwordDigestor' is an unknown field."),
        ("local", doc! {"createUser": "x", "pwd": "pw", "roles": []}, 2, "Cannot create users in the local database"),
    ];
    for (db_name, cmd, code, message) in table {
        let (got_code, got_message) = fails_with(&client.database(db_name), cmd.clone()).await;
        assert_eq!((got_code, got_message.as_str()), (code, message), "{cmd}");
    }
    let (code, _) = fails_with(
        &client.database("$external"),
        doc! {"createUser": "CN=x", "roles": []},
    )
    .await;
    assert_eq!(code, 2);
    assert_eq!(
        users_of(&db, Bson::Int32(1)).await.len(),
        1,
        "nothing else was created"
    );
}

#[tokio::test]
async fn a_client_side_digest_creates_a_sha1_only_user() {
    let server = TestServer::start().await;
    let db = server.client().await.database("app");
    // What mongosh sends for passwordDigestor: "client": hex(MD5("u:mongo:pw")).
    let digest = "ad48b24f381954b74b5c2dc423199cac";
    db.run_command(doc! {
        "createUser": "u", "pwd": digest, "roles": [], "digestPassword": false,
        "mechanisms": ["SCRAM-SHA-1"],
    })
    .await
    .unwrap();
    let users = users_of(&db, "u".into()).await;
    assert_eq!(
        users[0].get_array("mechanisms").unwrap(),
        &vec![Bson::from("SCRAM-SHA-1")]
    );
}

#[tokio::test]
async fn update_user_replaces_roles_custom_data_and_credentials() {
    let server = TestServer::start().await;
    let db = server.client().await.database("app");
    db.run_command(
        doc! {"createUser": "carol", "pwd": "one", "roles": ["read"], "customData": {"a": 1}},
    )
    .await
    .unwrap();
    let before = server
        .shared()
        .engine
        .catalog()
        .unwrap()
        .user("app", "carol")
        .cloned()
        .unwrap();
    db.run_command(doc! {"updateUser": "carol", "roles": ["readWrite"], "customData": {"b": 2}})
        .await
        .unwrap();
    let users = users_of(&db, "carol".into()).await;
    assert_eq!(
        users[0].get_array("roles").unwrap(),
        &vec![Bson::Document(doc! {"role": "readWrite", "db": "app"})]
    );
    assert_eq!(users[0].get_document("customData").unwrap(), &doc! {"b": 2});
    let same_keys = server
        .shared()
        .engine
        .catalog()
        .unwrap()
        .user("app", "carol")
        .cloned()
        .unwrap();
    assert_eq!(
        same_keys.credentials, before.credentials,
        "no pwd, same keys"
    );
    assert_eq!(same_keys.user_id, before.user_id);

    db.run_command(doc! {"updateUser": "carol", "pwd": "two"})
        .await
        .unwrap();
    let rekeyed = server
        .shared()
        .engine
        .catalog()
        .unwrap()
        .user("app", "carol")
        .cloned()
        .unwrap();
    assert_ne!(rekeyed.credentials, before.credentials);

    db.run_command(doc! {"updateUser": "carol", "mechanisms": ["SCRAM-SHA-256"]})
        .await
        .unwrap();
    let users = users_of(&db, "carol".into()).await;
    assert_eq!(
        users[0].get_array("mechanisms").unwrap(),
        &vec![Bson::from("SCRAM-SHA-256")]
    );
    let (code, message) = fails_with(
        &db,
        doc! {"updateUser": "carol", "mechanisms": ["SCRAM-SHA-1"]},
    )
    .await;
    assert_eq!(
        (code, message.as_str()),
        (
            2,
            "mechanisms field must be a subset of previously set mechanisms"
        )
    );

    let (code, message) = fails_with(&db, doc! {"updateUser": "nobody", "pwd": "x"}).await;
    assert_eq!((code, message.as_str()), (11, "User nobody@app not found"));
    let (code, message) = fails_with(&db, doc! {"updateUser": "carol"}).await;
    assert_eq!(
        (code, message.as_str()),
        (2, "Must specify at least one field to update in updateUser")
    );
    let (code, _) = fails_with(&db, doc! {"updateUser": "carol", "roles": ["nope"]}).await;
    assert_eq!(code, 31);
}

#[tokio::test]
async fn grant_and_revoke_change_a_users_roles() {
    let server = TestServer::start().await;
    let db = server.client().await.database("app");
    db.run_command(doc! {"createUser": "dave", "pwd": "pw", "roles": ["read"]})
        .await
        .unwrap();
    db.run_command(doc! {"grantRolesToUser": "dave", "roles": ["readWrite", "read", {"role": "dbAdmin", "db": "other"}]})
        .await
        .unwrap();
    let roles = |users: Vec<Document>| users[0].get_array("roles").unwrap().clone();
    assert_eq!(
        roles(users_of(&db, "dave".into()).await),
        vec![
            Bson::Document(doc! {"role": "read", "db": "app"}),
            Bson::Document(doc! {"role": "readWrite", "db": "app"}),
            Bson::Document(doc! {"role": "dbAdmin", "db": "other"}),
        ]
    );
    db.run_command(
        doc! {"revokeRolesFromUser": "dave", "roles": ["read", {"role": "dbAdmin", "db": "other"}]},
    )
    .await
    .unwrap();
    assert_eq!(
        roles(users_of(&db, "dave".into()).await),
        vec![Bson::Document(doc! {"role": "readWrite", "db": "app"})]
    );
    let (code, message) =
        fails_with(&db, doc! {"grantRolesToUser": "nobody", "roles": ["read"]}).await;
    assert_eq!(
        (code, message.as_str()),
        (11, "Could not find user \"nobody\" for db \"app\"")
    );
    let (code, message) = fails_with(&db, doc! {"revokeRolesFromUser": "dave", "roles": []}).await;
    assert_eq!(
        (code, message.as_str()),
        (
            2,
            "revokeRolesFromUser command requires a non-empty \"roles\" array"
        )
    );
    let (code, _) = fails_with(&db, doc! {"grantRolesToUser": "dave", "roles": ["godMode"]}).await;
    assert_eq!(code, 31);
}

#[tokio::test]
async fn drop_user_and_drop_all_users_remove_only_that_databases_users() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let app = client.database("app");
    let other = client.database("other");
    for name in ["a", "b", "c"] {
        app.run_command(doc! {"createUser": name, "pwd": "pw", "roles": []})
            .await
            .unwrap();
    }
    other
        .run_command(doc! {"createUser": "a", "pwd": "pw", "roles": []})
        .await
        .unwrap();
    app.run_command(doc! {"dropUser": "a"}).await.unwrap();
    let (code, message) = fails_with(&app, doc! {"dropUser": "a"}).await;
    assert_eq!((code, message.as_str()), (11, "User 'a@app' not found"));
    let reply = app
        .run_command(doc! {"dropAllUsersFromDatabase": 1})
        .await
        .unwrap();
    assert_eq!(reply.get_i32("n").unwrap(), 2);
    assert!(users_of(&app, Bson::Int32(1)).await.is_empty());
    assert_eq!(users_of(&other, Bson::Int32(1)).await.len(), 1);
    // mongod: dropDatabase keeps the database's users.
    other.run_command(doc! {"dropDatabase": 1}).await.unwrap();
    assert_eq!(users_of(&other, Bson::Int32(1)).await.len(), 1);
}

#[tokio::test]
async fn users_survive_a_restart() {
    let server = TestServer::start().await;
    let db = server.client().await.database("app");
    db.run_command(
        doc! {"createUser": "erin", "pwd": "pw", "roles": ["dbOwner"], "customData": {"k": "v"}},
    )
    .await
    .unwrap();
    let before = users_of(&db, "erin".into()).await;
    let server = server.restart().await;
    let db = server.client().await.database("app");
    assert_eq!(users_of(&db, "erin".into()).await, before);
}

#[tokio::test]
async fn the_cosmos_account_user_is_created_at_start_and_rekeyed_when_the_key_changes() {
    let server = TestServer::start_with(|c| c.cosmos_account = Some("localhost".into())).await;
    let admin = server.client().await.database("admin");
    let users = users_of(&admin, "localhost".into()).await;
    assert_eq!(
        users[0].get_array("roles").unwrap(),
        &vec![Bson::Document(doc! {"role": "root", "db": "admin"})]
    );
    let created = server
        .shared()
        .engine
        .catalog()
        .unwrap()
        .user("admin", "localhost")
        .cloned()
        .unwrap();
    // Same key: the stored keys are kept.
    let server = server.restart().await;
    let kept = server
        .shared()
        .engine
        .catalog()
        .unwrap()
        .user("admin", "localhost")
        .cloned()
        .unwrap();
    assert_eq!(kept.credentials, created.credentials);
    // The server starts again with another key: the user's keys change, its id does not.
    let shared = server.shared();
    let mut config = shared.config.clone();
    drop(shared);
    config.cosmos_key = mayfly::config::Secret::new("another-key");
    server.server.shutdown().await;
    let clock = std::sync::Arc::new(mayfly::clock::ManualClock::starting_at_secs(1_000));
    let bound = mayfly::server::Server::bind(config, clock).await.unwrap();
    let rekeyed = bound
        .shared()
        .engine
        .catalog()
        .unwrap()
        .user("admin", "localhost")
        .cloned()
        .unwrap();
    assert_ne!(rekeyed.credentials, created.credentials);
    assert_eq!(rekeyed.user_id, created.user_id);
}
