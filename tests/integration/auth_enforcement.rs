//! Access control with `--auth`, as a client without credentials sees it: the handshake
//! commands work, everything else is 13 Unauthorized; the localhost exception lets a loopback
//! client create the first user, in `admin`, once; the Cosmos DB account user closes it; and
//! the start-up warnings `getLog` reports.

use crate::common;

use common::bson::{doc, Document};
use common::TestServer;
use mongodb::Database;

async fn fails_with(db: &Database, cmd: Document) -> (i32, String) {
    let err = db.run_command(cmd.clone()).await.unwrap_err();
    let mongodb::error::ErrorKind::Command(c) = err.kind.as_ref() else {
        panic!("{cmd}: {err}")
    };
    (c.code, c.message.clone())
}

async fn auth_server() -> TestServer {
    TestServer::start_with(|c| c.auth = true).await
}

#[tokio::test]
async fn without_auth_every_command_runs() {
    let server = TestServer::start().await;
    let db = server.client().await.database("test");
    db.run_command(doc! {"insert": "c", "documents": [{"a": 1}]})
        .await
        .unwrap();
    db.run_command(doc! {"find": "c"}).await.unwrap();
    server
        .client()
        .await
        .database("admin")
        .run_command(doc! {"serverStatus": 1})
        .await
        .unwrap();
}

#[tokio::test]
async fn the_localhost_exception_allows_the_first_user_in_admin_then_ends() {
    let server = auth_server().await;
    let client = server.client().await;
    let test = client.database("test");
    let admin = client.database("admin");
    // Under the exception, only createUser in admin: other commands are refused by privilege.
    let (code, message) = fails_with(&test, doc! {"find": "c"}).await;
    assert_eq!(code, 13);
    assert!(
        message.starts_with("not authorized on test to execute command { find: \"c\""),
        "{message}"
    );
    let (code, _) = fails_with(
        &test,
        doc! {"createUser": "u", "pwd": "pw", "roles": ["readWrite"]},
    )
    .await;
    assert_eq!(code, 13, "the first user goes in admin");
    let (code, _) = fails_with(
        &admin,
        doc! {"createUser": "u", "pwd": "pw", "roles": [{"role": "readWrite", "db": "app"}]},
    )
    .await;
    assert_eq!(
        code, 13,
        "with roles of admin only, as mongod's default privileges"
    );
    admin
        .run_command(doc! {"createUser": "root", "pwd": "pw", "roles": ["root"]})
        .await
        .unwrap();
    assert!(server
        .shared()
        .engine
        .catalog()
        .unwrap()
        .user("admin", "root")
        .is_some());
    // A user exists: the exception is over, on this connection and any other.
    let (code, message) = fails_with(
        &admin,
        doc! {"createUser": "second", "pwd": "pw", "roles": ["root"]},
    )
    .await;
    assert_eq!(
        (code, message.as_str()),
        (13, "Command createUser requires authentication")
    );
    let (code, message) = fails_with(&test, doc! {"find": "c"}).await;
    assert_eq!(
        (code, message.as_str()),
        (13, "Command find requires authentication")
    );
    let fresh = server.client().await.database("test");
    let (code, _) = fails_with(&fresh, doc! {"insert": "c", "documents": [{}]}).await;
    assert_eq!(code, 13);
}

#[tokio::test]
async fn unauthenticated_clients_get_13_except_for_the_handshake_commands() {
    let server = TestServer::start_with(|c| {
        c.auth = true;
        c.cosmos_account = Some("localhost".into());
    })
    .await;
    let client = server.client().await;
    let admin = client.database("admin");
    let test = client.database("test");
    for cmd in [
        doc! {"ping": 1},
        doc! {"hello": 1},
        doc! {"isMaster": 1},
        doc! {"buildInfo": 1},
        doc! {"connectionStatus": 1},
        doc! {"whatsmyuri": 1},
        doc! {"listCommands": 1},
    ] {
        admin
            .run_command(cmd.clone())
            .await
            .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    }
    for (db, cmd, name) in [
        (&test, doc! {"find": "c"}, "find"),
        (&test, doc! {"insert": "c", "documents": [{}]}, "insert"),
        (&test, doc! {"listCollections": 1}, "listCollections"),
        (&admin, doc! {"listDatabases": 1}, "listDatabases"),
        (&admin, doc! {"serverStatus": 1}, "serverStatus"),
        (&admin, doc! {"getLog": "startupWarnings"}, "getLog"),
        (&test, doc! {"usersInfo": 1}, "usersInfo"),
        // The Cosmos DB account user exists, so there is no localhost exception.
        (
            &admin,
            doc! {"createUser": "x", "pwd": "pw", "roles": ["root"]},
            "createUser",
        ),
    ] {
        let (code, message) = fails_with(db, cmd.clone()).await;
        assert_eq!(code, 13, "{cmd}");
        assert_eq!(message, format!("Command {name} requires authentication"));
    }
    // Nothing was written.
    assert!(server
        .shared()
        .engine
        .catalog()
        .unwrap()
        .user("admin", "x")
        .is_none());
}

#[tokio::test]
async fn test_commands_are_refused_to_unauthenticated_clients() {
    let server = auth_server().await;
    let admin = server.client().await.database("admin");
    let (code, _) = fails_with(&admin, doc! {"advanceClock": 10}).await;
    assert_eq!(code, 13);
}

#[tokio::test]
async fn start_up_warnings_say_when_access_control_is_off_on_a_reachable_server() {
    let read_warnings = |server: TestServer| async move {
        let reply = server
            .client()
            .await
            .database("admin")
            .run_command(doc! {"getLog": "startupWarnings"})
            .await
            .unwrap();
        let log: Vec<String> = reply
            .get_array("log")
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            reply.get_i32("totalLinesWritten").unwrap() as usize,
            log.len()
        );
        log
    };
    let local = TestServer::start().await;
    assert!(
        read_warnings(local).await.is_empty(),
        "loopback only: no warning"
    );
    let reachable = TestServer::start_with(|c| c.bind_ips = vec!["0.0.0.0".into()]).await;
    let log = read_warnings(reachable).await;
    assert_eq!(log.len(), 1, "{log:?}");
    let line = &log[0];
    assert!(
        line.contains("\"msg\":\"Access control is not enabled for the database. Read and write access to data and configuration is unrestricted\""),
        "{line}"
    );
    assert!(line.contains("\"s\":\"W\""), "{line}");
    assert!(line.contains("\"tags\":[\"startupWarnings\"]"), "{line}");
}
