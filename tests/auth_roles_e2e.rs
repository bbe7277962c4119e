//! Roles enforced end to end: clients authenticate with SCRAM through the driver, as users do,
//! and each built-in role allows what mongod's allows and refuses the rest with 13
//! Unauthorized. The Cosmos DB emulator's connection string works unchanged.

mod common;

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
