use super::*;
use crate::engine::oplog::optime::OpClock;
use bson::oid::ObjectId;
use bson::{doc, Timestamp};
use std::time::Duration;

fn member() -> ReplicaSet {
    ReplicaSet::new(
        "rs0".into(),
        "localhost:27017".into(),
        bson::DateTime::from_millis(0),
        &OpClock::new(Timestamp {
            time: 5,
            increment: 1,
        }),
    )
}

#[test]
fn the_election_id_encodes_term_one_as_mongod_does() {
    assert_eq!(
        ReplicaSet::election_id().to_hex(),
        "7fffffff0000000000000001"
    );
}

#[test]
fn the_advertised_host_is_configured_or_the_first_bind_address_and_port() {
    let addr: SocketAddr = "0.0.0.0:10255".parse().unwrap();
    for (configured, bind, expected) in [
        (Some("db.example:1"), "127.0.0.1", "db.example:1"),
        (None, "127.0.0.1", "127.0.0.1:10255"),
        (None, "0.0.0.0", "localhost:10255"),
        (None, "::", "localhost:10255"),
        (None, "::1", "[::1]:10255"),
        (None, "db.internal", "db.internal:10255"),
    ] {
        assert_eq!(advertised_host(configured, bind, addr), expected);
    }
}

#[test]
fn awaitable_hello_follows_mongods_rules() {
    let rs = member();
    let ours = rs.topology_version();
    let wait = |cmd: Document| rs.awaitable(&cmd, "hello");
    assert_eq!(wait(doc! {"hello": 1}).unwrap(), None);
    assert_eq!(
        wait(doc! {"hello": 1, "topologyVersion": ours.clone(), "maxAwaitTimeMS": 250}).unwrap(),
        Some(Duration::from_millis(250))
    );
    // Another process id: the client saw an earlier run; reply at once.
    let other = doc! {"processId": ObjectId::new(), "counter": 7i64};
    assert_eq!(
        wait(doc! {"hello": 1, "topologyVersion": other, "maxAwaitTimeMS": 250}).unwrap(),
        None
    );
    let ahead = doc! {"processId": rs.process_id, "counter": 1i64};
    let negative = doc! {"processId": rs.process_id, "counter": -1i64};
    for (cmd, code, message) in [
        (
            doc! {"hello": 1, "topologyVersion": ours.clone()},
            31368,
            "A request with a 'topologyVersion' must include 'maxAwaitTimeMS'",
        ),
        (
            doc! {"hello": 1, "maxAwaitTimeMS": 10},
            31368,
            "A request with 'maxAwaitTimeMS' must include a 'topologyVersion'",
        ),
        (
            doc! {"hello": 1, "topologyVersion": negative, "maxAwaitTimeMS": 10},
            31372,
            "topologyVersion must have a non-negative counter",
        ),
        (
            doc! {"hello": 1, "topologyVersion": ahead, "maxAwaitTimeMS": 10},
            31382,
            "Received a topology version with counter: 1 which is greater than the server topology version counter: 0",
        ),
        (
            doc! {"hello": 1, "topologyVersion": ours, "maxAwaitTimeMS": -1},
            51024,
            "BSON field 'maxAwaitTimeMS' value must be >= 0, actual value '-1'",
        ),
    ] {
        let err = wait(cmd.clone()).unwrap_err();
        assert_eq!((err.code.code(), err.message.as_str()), (code, message), "{cmd}");
    }
}

#[test]
fn hello_fields_name_the_one_member_as_primary() {
    let rs = member();
    let clock = OpClock::new(Timestamp {
        time: 9,
        increment: 2,
    });
    let fields = rs.hello_fields(&clock, false);
    // A member on a new data directory (no write yet) still has a non-null operation time:
    // its start's second.
    let empty = OpClock::new(Timestamp {
        time: 0,
        increment: 0,
    });
    let fresh = ReplicaSet::new(
        "rs0".into(),
        "h:1".into(),
        bson::DateTime::from_millis(7_500),
        &empty,
    );
    assert_eq!(
        fresh.last_op_time(&empty),
        Timestamp {
            time: 7,
            increment: 0
        }
    );
    assert_eq!(fields.get_str("setName").unwrap(), "rs0");
    assert!(fields.get_bool("isWritablePrimary").unwrap());
    assert!(!fields.contains_key("ismaster"));
    assert_eq!(
        fields.get_array("hosts").unwrap(),
        &vec![Bson::from("localhost:27017")]
    );
    let last = fields.get_document("lastWrite").unwrap();
    assert_eq!(
        last.get_document("opTime").unwrap(),
        &doc! {"ts": Timestamp { time: 9, increment: 2 }, "t": 1i64}
    );
    assert!(rs.hello_fields(&clock, true).get_bool("ismaster").unwrap());
}
