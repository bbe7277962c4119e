//! The handshake and introspection commands, through the Rust driver, as clients see them.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::{error_code, TestServer};

async fn admin_command(server: &TestServer, cmd: Document) -> Document {
    server
        .client()
        .await
        .database("admin")
        .run_command(cmd)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_driver_connects_and_pings() {
    let server = TestServer::start().await;
    let reply = admin_command(&server, doc! {"ping": 1}).await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0);
}

#[tokio::test]
async fn hello_has_every_field_a_standalone_sends() {
    let server = TestServer::start().await;
    let reply = admin_command(&server, doc! {"hello": 1, "helloOk": true}).await;
    assert!(reply.get_bool("isWritablePrimary").unwrap());
    assert!(
        reply.get("ismaster").is_none(),
        "hello answers with isWritablePrimary only"
    );
    assert!(reply.get_bool("helloOk").unwrap());
    assert_eq!(
        reply.get_i32("maxBsonObjectSize").unwrap(),
        16 * 1024 * 1024
    );
    assert_eq!(reply.get_i32("maxMessageSizeBytes").unwrap(), 48_000_000);
    assert_eq!(reply.get_i32("maxWriteBatchSize").unwrap(), 100_000);
    assert!(matches!(reply.get("localTime"), Some(Bson::DateTime(_))));
    assert_eq!(reply.get_i32("logicalSessionTimeoutMinutes").unwrap(), 30);
    assert!(reply.get_i32("connectionId").unwrap() > 0);
    assert_eq!(reply.get_i32("minWireVersion").unwrap(), 0);
    assert_eq!(reply.get_i32("maxWireVersion").unwrap(), 21);
    assert!(!reply.get_bool("readOnly").unwrap());
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0);
    for absent in [
        "setName",
        "hosts",
        "msg",
        "isreplicaset",
        "topologyVersion",
        "serviceId",
    ] {
        assert!(
            reply.get(absent).is_none(),
            "a standalone must not send {absent}"
        );
    }
}

#[tokio::test]
async fn is_master_answers_with_ismaster() {
    let server = TestServer::start().await;
    for name in ["isMaster", "ismaster"] {
        let reply = admin_command(&server, doc! {name: 1}).await;
        assert!(reply.get_bool("ismaster").unwrap(), "{name}");
        assert!(reply.get("isWritablePrimary").is_none());
        assert!(reply.get("helloOk").is_none(), "helloOk only when asked");
    }
}

#[tokio::test]
async fn hello_negotiates_compression_and_sasl_mechanisms_when_asked() {
    let server = TestServer::start().await;
    let reply = admin_command(
        &server,
        doc! {"hello": 1, "compression": ["lz4", "zstd", "zlib"], "saslSupportedMechs": "admin.someone"},
    )
    .await;
    let compression: Vec<&str> = reply
        .get_array("compression")
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap())
        .collect();
    assert_eq!(compression, vec!["zstd", "zlib"]);
    assert!(
        reply.get("saslSupportedMechs").is_none(),
        "left out for a user that does not exist, as mongod does"
    );
    let plain = admin_command(&server, doc! {"hello": 1, "compression": []}).await;
    assert!(plain.get("compression").is_none());
    assert!(plain.get("saslSupportedMechs").is_none());
}

#[tokio::test]
async fn connection_ids_differ_between_connections() {
    let server = TestServer::start().await;
    let a = admin_command(&server, doc! {"hello": 1}).await;
    let b = admin_command(&server, doc! {"hello": 1}).await;
    assert_ne!(
        a.get_i32("connectionId").unwrap(),
        b.get_i32("connectionId").unwrap()
    );
}

#[tokio::test]
async fn client_metadata_cannot_be_sent_twice() {
    let server = TestServer::start().await;
    // The driver's own handshake already sent `client` on this connection.
    let err = server
        .client()
        .await
        .database("admin")
        .run_command(doc! {"hello": 1, "client": {"driver": {"name": "x", "version": "1"}}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(186));
}

#[tokio::test]
async fn build_info_says_mongodb_7_0() {
    let server = TestServer::start().await;
    for name in ["buildInfo", "buildinfo"] {
        let reply = server
            .client()
            .await
            .database("test")
            .run_command(doc! {name: 1})
            .await
            .unwrap();
        assert_eq!(reply.get_str("version").unwrap(), "7.0.0");
        let array: Vec<i32> = reply
            .get_array("versionArray")
            .unwrap()
            .iter()
            .map(|b| b.as_i32().unwrap())
            .collect();
        assert_eq!(array, vec![7, 0, 0, 0]);
        assert!(reply.get_str("gitVersion").is_ok());
        assert!(reply.get_array("modules").unwrap().is_empty());
        assert_eq!(reply.get_i32("bits").unwrap(), 64);
        assert!(reply.get_bool("debug").is_ok());
        assert_eq!(
            reply.get_i32("maxBsonObjectSize").unwrap(),
            16 * 1024 * 1024
        );
        assert!(reply.get_array("storageEngines").is_ok());
        let env = reply.get_document("buildEnvironment").unwrap();
        assert!(env.get_str("target_os").is_ok() && env.get_str("target_arch").is_ok());
        assert!(reply.get_document("openssl").is_ok());
    }
}

#[tokio::test]
async fn an_unknown_command_is_59_command_not_found() {
    let server = TestServer::start().await;
    let client = server.client().await;
    for name in ["atlasVersion", "getLastErrorX", "cOlLsTaTs", "PING"] {
        let err = client
            .database("test")
            .run_command(doc! {name: 1})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(59), "{name}");
        let mongodb::error::ErrorKind::Command(c) = err.kind.as_ref() else {
            panic!("{err}")
        };
        assert_eq!(c.code_name, "CommandNotFound");
        assert_eq!(c.message, format!("no such command: '{name}'"));
    }
}

#[tokio::test]
async fn transactions_are_refused_as_a_standalone_mongod_refuses_them() {
    let server = TestServer::start().await;
    let err = server
        .client()
        .await
        .database("test")
        .run_command(
            doc! {"ping": 1, "txnNumber": 1i64, "autocommit": false, "startTransaction": true},
        )
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(20));
}

#[tokio::test]
async fn admin_only_commands_refuse_other_databases() {
    let server = TestServer::start().await;
    let client = server.client().await;
    for cmd in [
        doc! {"getParameter": "*"},
        doc! {"getLog": "*"},
        doc! {"getCmdLineOpts": 1},
    ] {
        let err = client
            .database("test")
            .run_command(cmd.clone())
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(13), "{cmd}");
    }
}

#[tokio::test]
async fn get_parameter_answers_as_mongod() {
    let server = TestServer::start().await;
    let fcv = admin_command(
        &server,
        doc! {"getParameter": 1, "featureCompatibilityVersion": 1},
    )
    .await;
    assert_eq!(
        fcv.get_document("featureCompatibilityVersion")
            .unwrap()
            .get_str("version")
            .unwrap(),
        "7.0"
    );
    // What mongosh reads at start: the default verbosity, every component inheriting it.
    let verbosity = admin_command(
        &server,
        doc! {"getParameter": 1, "logComponentVerbosity": 1},
    )
    .await;
    let components = verbosity.get_document("logComponentVerbosity").unwrap();
    assert_eq!(components.get_i32("verbosity").unwrap(), 0);
    assert_eq!(
        components.get_document("storage").unwrap(),
        &doc! {"verbosity": -1}
    );
    assert!(
        fcv.get("enableTestCommands").is_none(),
        "only what was asked for"
    );
    let all = admin_command(&server, doc! {"getParameter": "*"}).await;
    assert!(all.get_bool("enableTestCommands").unwrap());
    assert!(all.get_document("featureCompatibilityVersion").is_ok());
    let detailed = admin_command(
        &server,
        doc! {"getParameter": {"showDetails": true, "allParameters": true}},
    )
    .await;
    assert!(detailed
        .get_document("enableTestCommands")
        .unwrap()
        .get("value")
        .is_some());
    let err = server
        .client()
        .await
        .database("admin")
        .run_command(doc! {"getParameter": 1, "foo": 1})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(72));
}

#[tokio::test]
async fn get_log_serves_startup_warnings_and_names() {
    let server = TestServer::start().await;
    let warnings = admin_command(&server, doc! {"getLog": "startupWarnings"}).await;
    assert_eq!(warnings.get_i32("totalLinesWritten").unwrap(), 0);
    assert!(warnings.get_array("log").unwrap().is_empty());
    let names = admin_command(&server, doc! {"getLog": "*"}).await;
    assert!(names
        .get_array("names")
        .unwrap()
        .contains(&Bson::from("startupWarnings")));
}

#[tokio::test]
async fn server_status_reports_connections_and_counters() {
    let server = TestServer::start().await;
    let status = admin_command(&server, doc! {"serverStatus": 1}).await;
    assert_eq!(status.get_str("version").unwrap(), "7.0.0");
    assert_eq!(status.get_str("process").unwrap(), "mayfly");
    assert!(status.get_str("host").is_ok());
    assert!(status.get_i64("pid").unwrap() > 0);
    assert!(status.get_f64("uptime").is_ok());
    assert!(matches!(status.get("localTime"), Some(Bson::DateTime(_))));
    let conns = status.get_document("connections").unwrap();
    assert!(conns.get_i64("current").unwrap() >= 1);
    assert!(conns.get_i64("totalCreated").unwrap() >= conns.get_i64("current").unwrap());
    assert!(conns.get_i64("available").unwrap() > 0);
    let ops = status.get_document("opcounters").unwrap();
    assert!(ops.get_i64("command").unwrap() >= 1);
    for field in ["insert", "query", "update", "delete", "getmore"] {
        assert!(ops.get_i64(field).is_ok(), "opcounters.{field}");
    }
    let net = status.get_document("network").unwrap();
    assert!(net.get_i64("bytesIn").unwrap() > 0 && net.get_i64("numRequests").unwrap() > 0);
    assert!(status
        .get_document("mem")
        .unwrap()
        .get_i64("resident")
        .is_ok());
    assert!(status.get_document("ttl").is_ok());
}

#[tokio::test]
async fn server_status_leaves_out_sections_set_to_zero() {
    let server = TestServer::start().await;
    let status = admin_command(
        &server,
        doc! {"serverStatus": 1, "ttl": 0, "opcounters": false, "connections": 1},
    )
    .await;
    assert!(!status.contains_key("ttl"));
    assert!(!status.contains_key("opcounters"));
    assert!(status.get_document("connections").is_ok());
    assert!(status.get_document("metrics").is_ok());
    assert_eq!(status.get_f64("ok").unwrap(), 1.0);
}

#[tokio::test]
async fn list_commands_lists_exactly_the_commands_that_exist() {
    let server = TestServer::start_with(|c| c.enable_test_commands = false).await;
    let client = server.client().await;
    let listed = client
        .database("admin")
        .run_command(doc! {"listCommands": 1})
        .await
        .unwrap();
    let commands = listed.get_document("commands").unwrap();
    assert!(commands.contains_key("ping") && commands.contains_key("isMaster"));
    assert!(
        !commands.contains_key("sleep"),
        "test commands are absent when disabled"
    );
    for name in commands.keys() {
        // Every listed command exists: anything but 59 (an argument error is fine).
        let result = client
            .database("admin")
            .run_command(doc! {name.as_str(): 1})
            .await;
        if let Err(err) = result {
            assert_ne!(
                error_code(&err),
                Some(59),
                "{name} is listed but does not exist"
            );
        }
    }
    let err = client
        .database("admin")
        .run_command(doc! {"sleep": 1})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(59));
}

#[tokio::test]
async fn small_introspection_commands_have_their_shapes() {
    let server = TestServer::start().await;
    let uri = admin_command(&server, doc! {"whatsmyuri": 1}).await;
    assert!(uri.get_str("you").unwrap().starts_with("127.0.0.1:"));
    let status = admin_command(
        &server,
        doc! {"connectionStatus": 1, "showPrivileges": true},
    )
    .await;
    let auth = status.get_document("authInfo").unwrap();
    assert!(auth.get_array("authenticatedUsers").unwrap().is_empty());
    assert!(auth.get_array("authenticatedUserPrivileges").is_ok());
    let host = admin_command(&server, doc! {"hostInfo": 1}).await;
    let system = host.get_document("system").unwrap();
    assert!(system.get_i32("numCores").unwrap() >= 1);
    assert!(system.get_str("hostname").is_ok());
    assert!(host.get_document("os").is_ok());
    let opts = admin_command(&server, doc! {"getCmdLineOpts": 1}).await;
    let net = opts
        .get_document("parsed")
        .unwrap()
        .get_document("net")
        .unwrap();
    assert_eq!(
        net.get_i32("port").unwrap(),
        0,
        "the configured port (0 = pick one)"
    );
    assert_eq!(net.get_document("tls").unwrap(), &doc! {"mode": "disabled"});
    let security = opts
        .get_document("parsed")
        .unwrap()
        .get_document("security")
        .unwrap();
    assert_eq!(security, &doc! {"authorization": "disabled"});
}

#[tokio::test]
async fn sessions_work_as_on_a_standalone() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let started = admin_command(&server, doc! {"startSession": 1}).await;
    let id = started
        .get_document("id")
        .unwrap()
        .get("id")
        .unwrap()
        .clone();
    assert!(
        matches!(id, Bson::Binary(ref b) if b.subtype == mongodb::bson::spec::BinarySubtype::Uuid)
    );
    assert_eq!(started.get_i32("timeoutMinutes").unwrap(), 30);
    for command in [
        doc! {"endSessions": [{"id": id.clone()}]},
        doc! {"refreshSessions": [{"id": id.clone()}]},
        doc! {"killSessions": [{"id": id.clone()}]},
        doc! {"killAllSessions": []},
    ] {
        let reply = client
            .database("admin")
            .run_command(command.clone())
            .await
            .unwrap();
        assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "{command}");
    }
    // An explicit driver session sends lsid on every command and endSessions at the end.
    let mut session = client.start_session().await.unwrap();
    client
        .database("admin")
        .run_command(doc! {"ping": 1})
        .session(&mut session)
        .await
        .unwrap();
}

#[tokio::test]
async fn authentication_fails_cleanly_because_there_are_no_users() {
    let server = TestServer::start().await;
    let client = server
        .client_with(|o| {
            o.credential = Some(
                mongodb::options::Credential::builder()
                    .username("alice".to_string())
                    .password("secret".to_string())
                    .build(),
            )
        })
        .await;
    let err = client
        .database("admin")
        .run_command(doc! {"ping": 1})
        .await
        .unwrap_err();
    assert!(
        matches!(
            err.kind.as_ref(),
            mongodb::error::ErrorKind::Authentication { .. }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn replica_set_status_on_a_standalone_is_mongods_76() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let err = client
        .database("admin")
        .run_command(doc! {"replSetGetStatus": 1})
        .await
        .unwrap_err();
    let mongodb::error::ErrorKind::Command(failure) = err.kind.as_ref() else {
        panic!("{err}")
    };
    assert_eq!(
        (
            failure.code,
            failure.code_name.as_str(),
            failure.message.as_str()
        ),
        (76, "NoReplicationEnabled", "not running with --replSet")
    );
}
