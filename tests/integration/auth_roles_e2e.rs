//! Roles enforced end to end: clients authenticate with SCRAM through the driver, as users do,
//! and each built-in role allows what mongod's allows and refuses the rest with 13
//! Unauthorized. The Cosmos DB emulator's connection string works unchanged.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::TestServer;
use mongodb::options::Credential;
use mongodb::{Client, Database};

const ROOT_PASSWORD: &str = "root-pw";

async fn fails_with(db: &Database, cmd: Document) -> (i32, String) {
    let err = db.run_command(cmd.clone()).await.unwrap_err();
    let mongodb::error::ErrorKind::Command(c) = err.kind.as_ref() else {
        panic!("{cmd}: {err}")
    };
    (c.code, c.message.clone())
}

/// A `--auth` server whose first user, `root` in admin, was made through the localhost
/// exception.
async fn server_with_root() -> TestServer {
    let server = TestServer::start_with(|c| c.auth = true).await;
    server
        .client()
        .await
        .database("admin")
        .run_command(doc! {"createUser": "root", "pwd": ROOT_PASSWORD, "roles": ["root"]})
        .await
        .unwrap();
    server
}

async fn login(server: &TestServer, db: &str, user: &str, password: &str) -> Client {
    server
        .client_with(|o| {
            o.credential = Some(
                Credential::builder()
                    .username(user.to_owned())
                    .password(password.to_owned())
                    .source(db.to_owned())
                    .build(),
            )
        })
        .await
}

async fn add_user(root: &Client, db: &str, user: &str, roles: Bson) {
    root.database(db)
        .run_command(doc! {"createUser": user, "pwd": "pw", "roles": roles})
        .await
        .unwrap();
}

#[tokio::test]
async fn each_role_allows_its_actions_and_refuses_the_rest() {
    let server = server_with_root().await;
    let root = login(&server, "admin", "root", ROOT_PASSWORD).await;
    root.database("app")
        .run_command(doc! {"insert": "c", "documents": [{"a": 1}]})
        .await
        .unwrap();
    add_user(&root, "app", "reader", Bson::Array(vec!["read".into()])).await;
    add_user(
        &root,
        "app",
        "writer",
        Bson::Array(vec!["readWrite".into()]),
    )
    .await;
    add_user(&root, "app", "keeper", Bson::Array(vec!["dbAdmin".into()])).await;

    let reader = login(&server, "app", "reader", "pw").await.database("app");
    reader.run_command(doc! {"find": "c"}).await.unwrap();
    reader.run_command(doc! {"count": "c"}).await.unwrap();
    let (code, message) = fails_with(&reader, doc! {"insert": "c", "documents": [{"a": 2}]}).await;
    assert_eq!(code, 13);
    assert!(
        message.starts_with("not authorized on app to execute command { insert: \"c\""),
        "{message}"
    );
    let status = reader
        .run_command(doc! {"connectionStatus": 1, "showPrivileges": true})
        .await
        .unwrap();
    let privileges = status
        .get_document("authInfo")
        .unwrap()
        .get_array("authenticatedUserPrivileges")
        .unwrap();
    assert_eq!(privileges.len(), 1, "{privileges:?}");
    let granted = privileges[0].as_document().unwrap();
    assert_eq!(
        granted.get_document("resource").unwrap(),
        &doc! {"db": "app", "collection": ""}
    );
    assert!(granted
        .get_array("actions")
        .unwrap()
        .contains(&Bson::from("find")));
    let elsewhere = login(&server, "app", "reader", "pw")
        .await
        .database("other");
    assert_eq!(fails_with(&elsewhere, doc! {"find": "c"}).await.0, 13);

    let writer = login(&server, "app", "writer", "pw").await.database("app");
    writer
        .run_command(doc! {"insert": "c", "documents": [{"a": 3}]})
        .await
        .unwrap();
    writer
        .run_command(doc! {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]})
        .await
        .unwrap();
    assert_eq!(fails_with(&writer, doc! {"dropDatabase": 1}).await.0, 13);
    assert_eq!(
        fails_with(&writer, doc! {"createUser": "x", "pwd": "pw", "roles": []})
            .await
            .0,
        13
    );

    let keeper = login(&server, "app", "keeper", "pw").await.database("app");
    assert_eq!(fails_with(&keeper, doc! {"find": "c"}).await.0, 13);
    keeper
        .run_command(doc! {"listCollections": 1})
        .await
        .unwrap();
    keeper.run_command(doc! {"dbStats": 1}).await.unwrap();
}

/// Every built-in role through an authenticated driver client: a command its privileges allow
/// runs, and one they do not is refused with 13. Commands are (database, command document).
#[tokio::test]
async fn every_built_in_role_allows_and_refuses_as_mongod() {
    let server = server_with_root().await;
    let root = login(&server, "admin", "root", ROOT_PASSWORD).await;
    for db in ["app", "other"] {
        root.database(db)
            .run_command(doc! {"insert": "c", "documents": [{"a": 1}]})
            .await
            .unwrap();
    }
    let find = |db: &'static str| (db, doc! {"find": "c"});
    let insert = |db: &'static str| (db, doc! {"insert": "c", "documents": [{"a": 2}]});
    let create_user =
        |db: &'static str, name: &str| (db, doc! {"createUser": name, "pwd": "pw", "roles": []});
    type Case = (
        &'static str,
        &'static str,
        Vec<(&'static str, Document)>,
        Vec<(&'static str, Document)>,
    );
    let table: Vec<Case> = vec![
        (
            "read",
            "app",
            vec![find("app"), ("app", doc! {"listCollections": 1})],
            vec![insert("app"), find("other")],
        ),
        (
            "readWrite",
            "app",
            vec![
                insert("app"),
                (
                    "app",
                    doc! {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]},
                ),
            ],
            vec![
                ("app", doc! {"dropDatabase": 1}),
                create_user("app", "rw_made"),
            ],
        ),
        (
            "dbAdmin",
            "app",
            vec![
                ("app", doc! {"dbStats": 1}),
                ("app", doc! {"collStats": "c"}),
            ],
            vec![find("app"), create_user("app", "dba_made")],
        ),
        (
            "userAdmin",
            "app",
            vec![
                create_user("app", "ua_made"),
                ("app", doc! {"usersInfo": 1}),
            ],
            vec![find("app"), create_user("other", "ua_elsewhere")],
        ),
        (
            "dbOwner",
            "app",
            vec![find("app"), insert("app"), create_user("app", "owner_made")],
            vec![find("other")],
        ),
        (
            "readAnyDatabase",
            "admin",
            vec![
                find("app"),
                find("other"),
                ("admin", doc! {"listDatabases": 1}),
            ],
            vec![insert("other")],
        ),
        (
            "readWriteAnyDatabase",
            "admin",
            vec![insert("other"), find("app")],
            vec![create_user("other", "rwa_made")],
        ),
        (
            "userAdminAnyDatabase",
            "admin",
            vec![create_user("other", "uaa_made")],
            vec![find("other")],
        ),
        (
            "dbAdminAnyDatabase",
            "admin",
            vec![("other", doc! {"dbStats": 1})],
            vec![find("other")],
        ),
        (
            "clusterMonitor",
            "admin",
            vec![
                ("admin", doc! {"serverStatus": 1}),
                ("admin", doc! {"currentOp": 1}),
            ],
            vec![find("app"), ("admin", doc! {"killOp": 1, "op": 12345})],
        ),
        (
            "clusterAdmin",
            "admin",
            vec![
                ("admin", doc! {"serverStatus": 1}),
                ("admin", doc! {"killOp": 1, "op": 12345}),
            ],
            vec![find("app")],
        ),
        (
            "root",
            "admin",
            vec![
                find("other"),
                insert("app"),
                create_user("other", "root_made"),
            ],
            vec![],
        ),
    ];
    for (role, role_db, allowed, refused) in table {
        let name = format!("has_{role}");
        add_user(
            &root,
            role_db,
            &name,
            Bson::Array(vec![Bson::Document(doc! {"role": role, "db": role_db})]),
        )
        .await;
        let client = login(&server, role_db, &name, "pw").await;
        for (db, cmd) in allowed {
            if let Err(e) = client.database(db).run_command(cmd.clone()).await {
                panic!("{role}@{role_db} should run {cmd} on {db}: {e}");
            }
        }
        for (db, cmd) in refused {
            let (code, message) = fails_with(&client.database(db), cmd.clone()).await;
            assert_eq!(code, 13, "{role}@{role_db} ran {cmd} on {db}: {message}");
            assert!(
                message.starts_with(&format!("not authorized on {db} to execute command")),
                "{message}"
            );
        }
    }
}

#[tokio::test]
async fn list_databases_shows_a_user_only_its_databases() {
    let server = server_with_root().await;
    let root = login(&server, "admin", "root", ROOT_PASSWORD).await;
    for db in ["app", "other"] {
        root.database(db)
            .run_command(doc! {"insert": "c", "documents": [{}]})
            .await
            .unwrap();
    }
    add_user(&root, "app", "reader", Bson::Array(vec!["read".into()])).await;
    let reader = login(&server, "app", "reader", "pw").await;
    let names = reader.list_database_names().await.unwrap();
    assert_eq!(names, vec!["app"]);
    let all = root.list_database_names().await.unwrap();
    assert!(all.contains(&"other".to_owned()));
}

#[tokio::test]
async fn users_see_and_change_themselves_and_grants_apply_at_once() {
    let server = server_with_root().await;
    let root = login(&server, "admin", "root", ROOT_PASSWORD).await;
    add_user(&root, "app", "me", Bson::Array(vec!["read".into()])).await;
    let me = login(&server, "app", "me", "pw").await.database("app");
    let info = me.run_command(doc! {"usersInfo": "me"}).await.unwrap();
    assert_eq!(info.get_array("users").unwrap().len(), 1);
    assert_eq!(fails_with(&me, doc! {"usersInfo": 1}).await.0, 13);
    assert_eq!(
        fails_with(&me, doc! {"insert": "c", "documents": [{}]})
            .await
            .0,
        13
    );
    root.database("app")
        .run_command(doc! {"grantRolesToUser": "me", "roles": ["readWrite"]})
        .await
        .unwrap();
    me.run_command(doc! {"insert": "c", "documents": [{}]})
        .await
        .unwrap();
    // connectionStatus shows the roles checked now, not those of the login.
    let status = me.run_command(doc! {"connectionStatus": 1}).await.unwrap();
    let roles = status
        .get_document("authInfo")
        .unwrap()
        .get_array("authenticatedUserRoles")
        .unwrap();
    assert!(
        roles.contains(&Bson::Document(doc! {"role": "readWrite", "db": "app"})),
        "{roles:?}"
    );
    me.run_command(doc! {"updateUser": "me", "pwd": "new-pw"})
        .await
        .unwrap();
    let again = login(&server, "app", "me", "new-pw").await.database("app");
    again.run_command(doc! {"find": "c"}).await.unwrap();
}

#[tokio::test]
async fn the_cosmos_emulator_connection_string_works_unchanged() {
    let server = TestServer::start_with(|c| {
        c.auth = true;
        c.cosmos_account = Some("localhost".into());
    })
    .await;
    let key = mayfly::config::EMULATOR_COSMOS_KEY;
    let encoded: String = key
        .chars()
        .map(|c| match c {
            '/' => "%2F".to_owned(),
            '+' => "%2B".to_owned(),
            '=' => "%3D".to_owned(),
            c => c.to_string(),
        })
        .collect();
    let uri = format!(
        "mongodb://localhost:{encoded}@{}/admin?directConnection=true&authSource=admin",
        server.addr
    );
    let client = Client::with_uri_str(uri).await.unwrap();
    client
        .database("app")
        .run_command(doc! {"insert": "c", "documents": [{"a": 1}]})
        .await
        .unwrap();
    let names = client.list_database_names().await.unwrap();
    assert!(names.contains(&"app".to_owned()));
}

#[tokio::test]
async fn a_user_created_from_a_client_side_digest_logs_in_with_its_password() {
    let server = server_with_root().await;
    let root = login(&server, "admin", "root", ROOT_PASSWORD).await;
    // What mongosh sends for passwordDigestor "client": hex(MD5("digested:mongo:pw")).
    let digest = md5_hex("digested:mongo:pw");
    root.database("app")
        .run_command(doc! {
            "createUser": "digested", "pwd": digest, "roles": ["read"],
            "digestPassword": false, "mechanisms": ["SCRAM-SHA-1"],
        })
        .await
        .unwrap();
    let client = server
        .client_with(|o| {
            o.credential = Some(
                Credential::builder()
                    .username("digested".to_owned())
                    .password("pw".to_owned())
                    .source("app".to_owned())
                    .mechanism(mongodb::options::AuthMechanism::ScramSha1)
                    .build(),
            )
        })
        .await;
    client
        .database("app")
        .run_command(doc! {"find": "c"})
        .await
        .unwrap();
}

fn md5_hex(text: &str) -> String {
    use md5::{Digest, Md5};
    Md5::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
