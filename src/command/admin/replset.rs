//! The replica-set commands of a one-member set: `replSetGetStatus`, `replSetGetConfig`,
//! `replSetInitiate` (already initiated), `replSetStepDown` (no secondary to hand over to) and
//! `replSetReconfig` (the configuration is fixed). Without `--replSet` each answers 76
//! NoReplicationEnabled with mongod's message. The member itself is `command::replset`'s.

use crate::command::args::{optional_bool, wrong_type};
use crate::command::replset::{op_time, ReplicaSet, CONFIG_VERSION, TERM};
use crate::command::{Request, Shared};
use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Bson, Document};

/// The replica set, or mongod's refusal on a standalone.
fn replica_set(shared: &Shared) -> Result<&ReplicaSet> {
    shared.replica_set.as_ref().ok_or_else(|| {
        Error::new(
            ErrorCode::NoReplicationEnabled,
            "not running with --replSet",
        )
    })
}

/// `replSetGetStatus`: the set and its one member, the primary.
pub fn get_status(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let rs = replica_set(shared)?;
    // mongod reads `initialSync` and ignores other fields (no IDL check).
    optional_bool(req.body, req.name.name(), "initialSync")?;
    let optimes = shared.engine.optimes();
    let last_time = rs.last_op_time(optimes);
    let last = op_time(last_time);
    let wall = rs.last_write_date(optimes);
    let uptime = i64::try_from(shared.started.elapsed().as_secs()).unwrap_or(i64::MAX);
    let member = doc! {
        "_id": 0,
        "name": rs.host.clone(),
        "health": 1.0,
        "state": 1,
        "stateStr": "PRIMARY",
        "uptime": uptime,
        "optime": last.clone(),
        "optimeDate": bson::DateTime::from_millis(i64::from(last_time.time) * 1000),
        "lastAppliedWallTime": wall,
        "lastDurableWallTime": wall,
        "syncSourceHost": "",
        "syncSourceId": -1,
        "infoMessage": "",
        "electionTime": rs.election_time,
        "electionDate": rs.election_date,
        "configVersion": CONFIG_VERSION,
        "configTerm": TERM,
        "self": true,
        "lastHeartbeatMessage": "",
    };
    Ok(doc! {
        "set": rs.name.clone(),
        "date": shared.clock.now_datetime(),
        "myState": 1,
        "term": TERM,
        "syncSourceHost": "",
        "syncSourceId": -1,
        "heartbeatIntervalMillis": 2000i64,
        "majorityVoteCount": 1,
        "writeMajorityCount": 1,
        "votingMembersCount": 1,
        "writableVotingMembersCount": 1,
        "optimes": {
            "lastCommittedOpTime": last.clone(),
            "lastCommittedWallTime": wall,
            "readConcernMajorityOpTime": last.clone(),
            "readConcernMajorityWallTime": wall,
            "appliedOpTime": last.clone(),
            "durableOpTime": last,
            "lastAppliedWallTime": wall,
            "lastDurableWallTime": wall,
        },
        "members": [member],
        "ok": 1.0,
    })
}

/// `replSetGetConfig`: the fixed configuration of a one-member set.
pub fn get_config(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let rs = replica_set(shared)?;
    let name = req.name.name();
    // mongod reads these two and ignores other fields (no IDL check).
    let commitment = optional_bool(req.body, name, "commitmentStatus")?.unwrap_or(false);
    optional_bool(req.body, name, "includeNewlyAddedMembers")?;
    let config = doc! {
        "_id": rs.name.clone(),
        "version": CONFIG_VERSION,
        "term": TERM as i32,
        "members": [{
            "_id": 0,
            "host": rs.host.clone(),
            "arbiterOnly": false,
            "buildIndexes": true,
            "hidden": false,
            "priority": 1.0,
            "tags": rs.tags.clone(),
            "secondaryDelaySecs": 0i64,
            "votes": 1,
        }],
        "protocolVersion": 1i64,
        "writeConcernMajorityJournalDefault": true,
        "settings": {
            "chainingAllowed": true,
            "heartbeatIntervalMillis": 2000,
            "heartbeatTimeoutSecs": 10,
            "electionTimeoutMillis": 10000,
            "catchUpTimeoutMillis": -1,
            "catchUpTakeoverDelayMillis": 30000,
            "getLastErrorModes": {},
            "getLastErrorDefaults": {"w": 1, "wtimeout": 0},
            "replicaSetId": rs.replica_set_id,
        },
    };
    let mut reply = doc! {"config": config};
    if commitment {
        // One member: every configuration it has is committed.
        reply.insert("commitmentStatus", true);
    }
    reply.insert("ok", 1.0);
    Ok(reply)
}

/// `replSetInitiate`: the set is initiated when the server starts.
pub fn initiate(shared: &Shared) -> Result<Document> {
    if shared.replica_set.is_none() {
        return Err(Error::new(
            ErrorCode::NoReplicationEnabled,
            "server is not running with --replSet",
        ));
    }
    Err(Error::new(
        ErrorCode::AlreadyInitialized,
        "already initialized",
    ))
}

/// `replSetStepDown`: the arguments are checked as mongod checks them; then, as on a
/// one-member mongod once its catch-up period has passed, no electable secondary exists. A
/// forced step-down is refused the same way (mayfly does not step down).
pub fn step_down(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    replica_set(shared)?;
    let name = req.name.name();
    // mongod reads `force` and `secondaryCatchUpPeriodSecs` and ignores other fields.
    let seconds = |field: &str, value: &Bson| -> Result<i64> {
        match value {
            Bson::Int32(n) => Ok(i64::from(*n)),
            Bson::Int64(n) => Ok(*n),
            Bson::Double(d) => Ok(*d as i64),
            other => Err(wrong_type(
                name,
                field,
                other,
                "[long, int, decimal, double]",
            )),
        }
    };
    let step_down_secs = match req.body.get(name) {
        Some(v) => seconds(name, v)?,
        None => 60,
    };
    optional_bool(req.body, name, "force")?;
    let catch_up = match req.body.get("secondaryCatchUpPeriodSecs") {
        Some(v) => seconds("secondaryCatchUpPeriodSecs", v)?,
        None => 10,
    };
    if step_down_secs < 0 {
        return Err(Error::bad_value(
            "stepdown period must be a positive integer",
        ));
    }
    if step_down_secs < catch_up {
        return Err(Error::bad_value(
            "stepdown period must be longer than secondaryCatchUpPeriodSecs",
        ));
    }
    let now = shared
        .clock
        .now_datetime()
        .try_to_rfc3339_string()
        .unwrap_or_default()
        .replace('Z', "+00:00");
    Err(Error::new(
        ErrorCode::ExceededTimeLimit,
        format!(
            "No electable secondaries caught up as of {now}. Please use {{force: true}} to force node to step down."
        ),
    ))
}

/// `replSetReconfig`: the configuration of mayfly's one-member set is fixed.
pub fn reconfig(shared: &Shared) -> Result<Document> {
    replica_set(shared)?;
    Err(Error::new(
        ErrorCode::NewReplicaSetConfigurationIncompatible,
        "mayfly runs a one-member replica set whose configuration cannot be changed: replSetReconfig is not supported",
    ))
}
