//! Replica-set mode (`--replSet NAME`): mayfly as the one member, the primary, of a replica
//! set, as drivers discover it, its logical times and concerns, and the replica-set commands,
//! through the Rust driver. Monitoring (awaitable `hello`, exhaust) is in
//! replica_set_monitoring.rs.

use crate::common;

use common::bson::{doc, Bson, Document, Timestamp};
use common::{error_code, TestServer};
use std::time::Duration;

const SET: &str = "rs0";

async fn admin(server: &TestServer, cmd: Document) -> Document {
    server
        .client()
        .await
        .database("admin")
        .run_command(cmd)
        .await
        .unwrap()
}

async fn admin_error(server: &TestServer, cmd: Document) -> (i32, String, String) {
    let err = server
        .client()
        .await
        .database("admin")
        .run_command(cmd)
        .await
        .unwrap_err();
    match *err.kind {
        mongodb::error::ErrorKind::Command(c) => (c.code, c.code_name, c.message),
        other => panic!("not a command error: {other:?}"),
    }
}

#[tokio::test]
async fn a_client_naming_the_set_discovers_the_primary_and_does_crud() {
    let server = TestServer::start_replset(SET).await;
    let client = server.replset_client(SET).await;
    let coll = client.database("app").collection::<Document>("items");
    coll.insert_one(doc! {"_id": 1, "n": 1}).await.unwrap();
    coll.update_one(doc! {"_id": 1}, doc! {"$inc": {"n": 1}})
        .await
        .unwrap();
    let found = coll.find_one(doc! {"_id": 1}).await.unwrap().unwrap();
    assert_eq!(found.get_i32("n").unwrap(), 2);
    assert_eq!(
        coll.delete_one(doc! {"_id": 1})
            .await
            .unwrap()
            .deleted_count,
        1
    );
    // The driver knows it talks to a replica set's primary.
    let description = client
        .database("admin")
        .run_command(doc! {"hello": 1})
        .await
        .unwrap();
    assert_eq!(description.get_str("setName").unwrap(), SET);
}

#[tokio::test]
async fn a_wrong_set_name_fails_server_selection() {
    let server = TestServer::start_replset(SET).await;
    let mut options = mongodb::options::ClientOptions::parse(server.replset_uri("other"))
        .await
        .unwrap();
    options.server_selection_timeout = Some(Duration::from_millis(500));
    let client = mongodb::Client::with_options(options).unwrap();
    let err = client
        .database("app")
        .run_command(doc! {"ping": 1})
        .await
        .unwrap_err();
    assert!(
        matches!(*err.kind, mongodb::error::ErrorKind::ServerSelection { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn a_standalone_is_not_a_member_of_any_set() {
    let server = TestServer::start().await;
    let mut options = mongodb::options::ClientOptions::parse(server.replset_uri(SET))
        .await
        .unwrap();
    options.server_selection_timeout = Some(Duration::from_millis(500));
    let client = mongodb::Client::with_options(options).unwrap();
    assert!(client
        .database("app")
        .run_command(doc! {"ping": 1})
        .await
        .is_err());
}

#[tokio::test]
async fn hello_names_the_set_and_its_one_member_with_mongods_types() {
    let server = TestServer::start_replset(SET).await;
    let me = server.addr.to_string();
    let reply = admin(&server, doc! {"hello": 1}).await;
    assert_eq!(reply.get_str("setName").unwrap(), SET);
    assert_eq!(reply.get_i32("setVersion").unwrap(), 1);
    assert_eq!(
        reply.get_array("hosts").unwrap(),
        &vec![Bson::from(me.clone())]
    );
    assert_eq!(reply.get_str("primary").unwrap(), me);
    assert_eq!(reply.get_str("me").unwrap(), me);
    assert!(reply.get_bool("isWritablePrimary").unwrap());
    assert!(!reply.get_bool("secondary").unwrap());
    assert_eq!(
        reply.get_object_id("electionId").unwrap().to_hex(),
        "7fffffff0000000000000001"
    );
    let topology = reply.get_document("topologyVersion").unwrap();
    assert!(matches!(topology.get("processId"), Some(Bson::ObjectId(_))));
    assert_eq!(topology.get("counter"), Some(&Bson::Int64(0)));
    let last = reply.get_document("lastWrite").unwrap();
    let op_time = last.get_document("opTime").unwrap();
    assert!(matches!(op_time.get("ts"), Some(Bson::Timestamp(_))));
    assert_eq!(op_time.get("t"), Some(&Bson::Int64(1)));
    assert_eq!(last.get_document("majorityOpTime").unwrap(), op_time);
    assert!(matches!(last.get("lastWriteDate"), Some(Bson::DateTime(_))));
    assert!(matches!(
        last.get("majorityWriteDate"),
        Some(Bson::DateTime(_))
    ));
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0);
    // The legacy names answer `ismaster`.
    for name in ["isMaster", "ismaster"] {
        let legacy = admin(&server, doc! {name: 1}).await;
        assert!(legacy.get_bool("ismaster").unwrap(), "{name}");
        assert!(legacy.get("isWritablePrimary").is_none(), "{name}");
        assert_eq!(legacy.get_str("setName").unwrap(), SET, "{name}");
    }
}

#[tokio::test]
async fn the_advertised_host_is_what_hello_lists() {
    let server = TestServer::start_with(|c| {
        c.replication.set_name = Some("globaldb".into());
        c.replication.advertise_host = Some("db.example:10255".into());
    })
    .await;
    let reply = admin(&server, doc! {"hello": 1}).await;
    assert_eq!(
        reply.get_array("hosts").unwrap(),
        &vec![Bson::from("db.example:10255")]
    );
    assert_eq!(reply.get_str("me").unwrap(), "db.example:10255");
}

fn timestamp(reply: &Document, path: &[&str]) -> Timestamp {
    let mut doc = reply;
    let (last, parents) = path.split_last().unwrap();
    for p in parents {
        doc = doc.get_document(p).unwrap();
    }
    doc.get_timestamp(last).unwrap()
}

fn later(a: Timestamp, b: Timestamp) -> bool {
    (a.time, a.increment) > (b.time, b.increment)
}

#[tokio::test]
async fn last_write_operation_time_and_cluster_time_advance_after_a_write() {
    let server = TestServer::start_replset(SET).await;
    let db = server.client().await.database("app");
    let before = db.run_command(doc! {"hello": 1}).await.unwrap();
    let ping = db.run_command(doc! {"ping": 1}).await.unwrap();
    let reply = db
        .run_command(doc! {"insert": "c", "documents": [{"x": 1}]})
        .await
        .unwrap();
    let after = db.run_command(doc! {"hello": 1}).await.unwrap();
    let op_before = timestamp(&before, &["lastWrite", "opTime", "ts"]);
    let op_after = timestamp(&after, &["lastWrite", "opTime", "ts"]);
    assert!(later(op_after, op_before), "{op_before:?} -> {op_after:?}");
    let written = timestamp(&reply, &["operationTime"]);
    assert!(later(written, timestamp(&ping, &["operationTime"])));
    assert_eq!(written, op_after);
    assert_eq!(timestamp(&reply, &["$clusterTime", "clusterTime"]), written);
}

#[tokio::test]
async fn every_reply_carries_the_cluster_time_and_the_operation_time() {
    let server = TestServer::start_replset(SET).await;
    let mut raw = server.raw().await;
    let ok = raw
        .command(1, &doc! {"ping": 1, "$db": "admin"})
        .await
        .document;
    let failed = raw
        .command(2, &doc! {"noSuchCommand": 1, "$db": "admin"})
        .await
        .document;
    for reply in [&ok, &failed] {
        let cluster = reply.get_document("$clusterTime").unwrap();
        assert!(matches!(
            cluster.get("clusterTime"),
            Some(Bson::Timestamp(_))
        ));
        let signature = cluster.get_document("signature").unwrap();
        match signature.get("hash") {
            Some(Bson::Binary(b)) => assert_eq!(b.bytes, vec![0u8; 20]),
            other => panic!("hash: {other:?}"),
        }
        assert_eq!(signature.get("keyId"), Some(&Bson::Int64(0)));
        assert!(matches!(
            reply.get("operationTime"),
            Some(Bson::Timestamp(_))
        ));
    }
    assert_eq!(failed.get_i32("code").unwrap(), 59);
    // A standalone sends neither.
    let standalone = TestServer::start().await;
    let reply = standalone
        .raw()
        .await
        .command(1, &doc! {"ping": 1, "$db": "admin"})
        .await
        .document;
    assert!(reply.get("$clusterTime").is_none() && reply.get("operationTime").is_none());
}

/// Drivers' sessions are causally consistent by default: each read after the first sends the
/// previous reply's operationTime as afterClusterTime, which must never be the null time, even
/// before the first write.
#[tokio::test]
async fn causally_consistent_reads_work_before_any_write() {
    let server = TestServer::start_replset(SET).await;
    let client = server.replset_client(SET).await;
    let mut session = client.start_session().await.unwrap();
    let coll = client.database("app").collection::<Document>("c");
    for _ in 0..3 {
        coll.find_one(doc! {}).session(&mut session).await.unwrap();
    }
    let time = session.operation_time().unwrap();
    assert_ne!(
        time,
        Timestamp {
            time: 0,
            increment: 0
        }
    );
}

#[tokio::test]
async fn a_gossiped_cluster_time_is_accepted_and_a_malformed_one_refused() {
    let server = TestServer::start_replset(SET).await;
    let mut raw = server.raw().await;
    let ping = raw
        .command(1, &doc! {"ping": 1, "$db": "admin"})
        .await
        .document;
    let gossip = ping.get_document("$clusterTime").unwrap().clone();
    let reply = raw
        .command(2, &doc! {"ping": 1, "$clusterTime": gossip, "$db": "admin"})
        .await
        .document;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0);
    let reply = raw
        .command(
            3,
            &doc! {"ping": 1, "$clusterTime": {"clusterTime": 5}, "$db": "admin"},
        )
        .await
        .document;
    assert_eq!(reply.get_i32("code").unwrap(), 14, "{reply}");
}

#[tokio::test]
async fn read_concerns_are_checked_as_a_replica_set_checks_them() {
    let server = TestServer::start_replset(SET).await;
    let db = server.client().await.database("app");
    db.run_command(doc! {"insert": "c", "documents": [{"_id": 1}]})
        .await
        .unwrap();
    let now = timestamp(
        &db.run_command(doc! {"ping": 1}).await.unwrap(),
        &["operationTime"],
    );
    for level in ["local", "majority", "linearizable", "available", "snapshot"] {
        let reply = db
            .run_command(doc! {"find": "c", "readConcern": {"level": level}})
            .await
            .unwrap_or_else(|e| panic!("{level}: {e}"));
        let batch = reply
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap();
        assert_eq!(batch.len(), 1, "{level}");
    }
    db.run_command(
        doc! {"find": "c", "readConcern": {"level": "majority", "afterClusterTime": now}},
    )
    .await
    .unwrap();
    let ahead = Timestamp {
        time: now.time + 100,
        increment: 1,
    };
    for (rc, code) in [
        (doc! {"level": "bogus"}, 9),
        (doc! {"level": "majority", "afterClusterTime": ahead}, 72),
        (doc! {"level": "available", "afterClusterTime": now}, 72),
        (doc! {"unknown": 1}, 72),
        (doc! {"atClusterTime": now, "level": "snapshot"}, 72),
    ] {
        let err = db
            .run_command(doc! {"find": "c", "readConcern": rc.clone()})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(code), "{rc}: {err}");
    }
    // Writes take only the local level outside transactions; count takes no snapshot.
    for cmd in [
        doc! {"insert": "c", "documents": [{}], "readConcern": {"level": "majority"}},
        doc! {"count": "c", "readConcern": {"level": "snapshot"}},
    ] {
        let err = db.run_command(cmd.clone()).await.unwrap_err();
        assert_eq!(error_code(&err), Some(72), "{cmd}: {err}");
    }
    let err = db
        .run_command(doc! {"insert": "c", "documents": [{}], "readConcern": {"level": "majority"}})
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains(
            "Command insert does not support { readConcern: { level: \"majority\", provenance: \"clientSupplied\" } } :: caused by :: read concern not supported"
        ),
        "{err}"
    );
}

#[tokio::test]
async fn write_concerns_one_member_cannot_meet_are_applied_and_reported() {
    let server = TestServer::start_replset(SET).await;
    let db = server.client().await.database("app");
    for wc in [
        doc! {"w": 1},
        doc! {"w": "majority", "wtimeout": 100},
        doc! {"w": 1, "j": true},
    ] {
        let reply = db
            .run_command(doc! {"insert": "c", "documents": [{}], "writeConcern": wc.clone()})
            .await
            .unwrap();
        assert!(reply.get("writeConcernError").is_none(), "{wc}");
    }
    for (wc, code, name, message) in [
        (
            doc! {"w": 2},
            100,
            "UnsatisfiableWriteConcern",
            "Not enough data-bearing nodes",
        ),
        (
            doc! {"w": "dc1"},
            79,
            "UnknownReplWriteConcern",
            "No write concern mode named 'dc1' found in replica set configuration",
        ),
    ] {
        let reply = db
            .run_command(doc! {"insert": "wc", "documents": [{}], "writeConcern": wc.clone()})
            .await
            .unwrap();
        assert_eq!(reply.get_i32("n").unwrap(), 1, "the write is applied: {wc}");
        let error = reply.get_document("writeConcernError").unwrap();
        assert_eq!(error.get_i32("code").unwrap(), code);
        assert_eq!(error.get_str("codeName").unwrap(), name);
        assert_eq!(error.get_str("errmsg").unwrap(), message);
        assert_eq!(
            error
                .get_document("errInfo")
                .unwrap()
                .get_document("writeConcern")
                .unwrap()
                .get_str("provenance")
                .unwrap(),
            "clientSupplied"
        );
    }
    let count = db
        .run_command(doc! {"count": "wc"})
        .await
        .unwrap()
        .get_i32("n")
        .unwrap();
    assert_eq!(count, 2);
}

#[tokio::test]
async fn read_preferences_are_accepted() {
    let server = TestServer::start_replset(SET).await;
    let client = server.replset_client(SET).await;
    use mongodb::options::{ReadPreference, SelectionCriteria};
    for pref in [
        ReadPreference::Primary,
        ReadPreference::PrimaryPreferred {
            options: Default::default(),
        },
        ReadPreference::SecondaryPreferred {
            options: Default::default(),
        },
        ReadPreference::Nearest {
            options: Default::default(),
        },
    ] {
        let coll = client.database("app").collection_with_options::<Document>(
            "c",
            mongodb::options::CollectionOptions::builder()
                .selection_criteria(SelectionCriteria::ReadPreference(pref.clone()))
                .build(),
        );
        coll.find_one(doc! {})
            .await
            .unwrap_or_else(|e| panic!("{pref:?}: {e}"));
    }
    // Sent directly, even `secondary` is served: the member serves every read.
    let reply = admin(
        &server,
        doc! {"ping": 1, "$readPreference": {"mode": "secondary"}},
    )
    .await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0);
}

#[tokio::test]
async fn repl_set_get_status_describes_the_one_primary() {
    let server = TestServer::start_replset(SET).await;
    let status = admin(&server, doc! {"replSetGetStatus": 1}).await;
    assert_eq!(status.get_str("set").unwrap(), SET);
    assert_eq!(status.get_i32("myState").unwrap(), 1);
    assert_eq!(status.get_i64("term").unwrap(), 1);
    assert!(matches!(status.get("date"), Some(Bson::DateTime(_))));
    let members = status.get_array("members").unwrap();
    assert_eq!(members.len(), 1);
    let member = members[0].as_document().unwrap();
    assert_eq!(member.get_i32("_id").unwrap(), 0);
    assert_eq!(member.get_str("name").unwrap(), server.addr.to_string());
    assert_eq!(member.get_f64("health").unwrap(), 1.0);
    assert_eq!(member.get_i32("state").unwrap(), 1);
    assert_eq!(member.get_str("stateStr").unwrap(), "PRIMARY");
    assert!(member.get_bool("self").unwrap());
    assert!(member.get_i64("uptime").is_ok());
    assert!(matches!(
        member.get("electionTime"),
        Some(Bson::Timestamp(_))
    ));
    assert!(matches!(member.get("optimeDate"), Some(Bson::DateTime(_))));
    assert_eq!(
        member.get_document("optime").unwrap().get_i64("t").unwrap(),
        1
    );
}

#[tokio::test]
async fn repl_set_get_config_describes_the_one_member() {
    let server = TestServer::start_replset(SET).await;
    let reply = admin(&server, doc! {"replSetGetConfig": 1}).await;
    let config = reply.get_document("config").unwrap();
    assert_eq!(config.get_str("_id").unwrap(), SET);
    assert_eq!(config.get_i32("version").unwrap(), 1);
    assert_eq!(config.get_i64("protocolVersion").unwrap(), 1);
    let member = config.get_array("members").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(
        member,
        doc! {
            "_id": 0,
            "host": server.addr.to_string(),
            "arbiterOnly": false,
            "buildIndexes": true,
            "hidden": false,
            "priority": 1.0,
            "tags": {},
            "secondaryDelaySecs": 0i64,
            "votes": 1,
        }
    );
    assert!(matches!(
        config.get_document("settings").unwrap().get("replicaSetId"),
        Some(Bson::ObjectId(_))
    ));
}

#[tokio::test]
async fn initiate_step_down_and_reconfig_are_refused_as_a_one_member_set_refuses_them() {
    let server = TestServer::start_replset(SET).await;
    let (code, name, message) = admin_error(&server, doc! {"replSetInitiate": {}}).await;
    assert_eq!(
        (code, name.as_str(), message.as_str()),
        (23, "AlreadyInitialized", "already initialized")
    );
    let (code, name, message) = admin_error(&server, doc! {"replSetStepDown": 60}).await;
    assert_eq!((code, name.as_str()), (262, "ExceededTimeLimit"));
    assert!(
        message.starts_with("No electable secondaries caught up as of "),
        "{message}"
    );
    let (code, _, message) = admin_error(&server, doc! {"replSetStepDown": 5}).await;
    assert_eq!(
        (code, message.as_str()),
        (
            2,
            "stepdown period must be longer than secondaryCatchUpPeriodSecs"
        )
    );
    let (code, name, _) = admin_error(&server, doc! {"replSetReconfig": {"_id": SET}}).await;
    assert_eq!(
        (code, name.as_str()),
        (103, "NewReplicaSetConfigurationIncompatible")
    );
}

#[tokio::test]
async fn a_standalone_answers_no_replication_enabled() {
    let server = TestServer::start().await;
    for (cmd, message) in [
        (doc! {"replSetGetStatus": 1}, "not running with --replSet"),
        (doc! {"replSetGetConfig": 1}, "not running with --replSet"),
        (
            doc! {"replSetInitiate": {}},
            "server is not running with --replSet",
        ),
        (doc! {"replSetStepDown": 60}, "not running with --replSet"),
        (doc! {"replSetReconfig": {}}, "not running with --replSet"),
    ] {
        let (code, name, got) = admin_error(&server, cmd.clone()).await;
        assert_eq!(
            (code, name.as_str(), got.as_str()),
            (76, "NoReplicationEnabled", message),
            "{cmd}"
        );
    }
}

#[tokio::test]
async fn get_cmd_line_opts_names_the_set() {
    let server = TestServer::start_replset(SET).await;
    let opts = admin(&server, doc! {"getCmdLineOpts": 1}).await;
    assert_eq!(
        opts.get_document("parsed")
            .unwrap()
            .get_document("replication")
            .unwrap()
            .get_str("replSetName")
            .unwrap(),
        SET
    );
}

#[tokio::test]
async fn the_operation_log_reads_as_local_oplog_rs() {
    let server = TestServer::start_replset("rs0").await;
    let client = server.replset_client("rs0").await;
    let c = client.database("app").collection::<Document>("c");
    c.insert_one(doc! {"_id": 1, "a": 1}).await.unwrap();
    c.update_one(doc! {"_id": 1}, doc! {"$set": {"a": 2}})
        .await
        .unwrap();
    let oplog = client.database("local").collection::<Document>("oplog.rs");
    let last = oplog
        .find_one(doc! {"ns": "app.c"})
        .sort(doc! {"$natural": -1})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(last.get_str("op").unwrap(), "u", "{last}");
    assert_eq!(last.get_document("o2").unwrap(), &doc! {"_id": 1});
    let inserts = oplog
        .count_documents(doc! {"ns": "app.c", "op": "i"})
        .await
        .unwrap();
    assert_eq!(inserts, 1);
    let first: Vec<Document> = {
        use futures::TryStreamExt;
        oplog
            .find(doc! {"ns": "app.c"})
            .projection(doc! {"op": 1, "_id": 0})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap()
    };
    assert_eq!(first, vec![doc! {"op": "i"}, doc! {"op": "u"}]);
    let err = client
        .database("local")
        .run_command(doc! {"find": "oplog.rs", "tailable": true})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(238));
}
