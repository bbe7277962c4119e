//! The one member of a replica set (`--replSet NAME`) mayfly is, its primary: who it is (set
//! name, advertised host, tags), its topology version and election, its last operation time,
//! the replica-set fields of `hello`, and the awaitable `hello`'s wait (mongod's rules for
//! `topologyVersion` and `maxAwaitTimeMS`).
//!
//! Owns the member's state. Does not own what commands do with it (`replset`: the exhaust
//! stream, `$clusterTime`, the concerns; `admin::replset`: the `replSet*` commands), nor
//! operation times (`engine::oplog::optime`).

use super::super::args::{optional_doc, wrong_type};
use crate::engine::oplog::optime::OpClock;
use crate::error::{Error, ErrorCode, Result};
use bson::oid::ObjectId;
use bson::{doc, Bson, Document, Timestamp};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The election term: a one-member set elects itself once, in term 1, and never again.
pub const TERM: i64 = 1;
/// The configuration's version: it never changes (`replSetReconfig` is refused).
pub const CONFIG_VERSION: i32 = 1;

/// The one member of the replica set: who it is and since when it is primary.
#[derive(Debug)]
pub struct ReplicaSet {
    /// The set's name (`setName`, `replicaSet=` in connection strings).
    pub name: String,
    /// The member's `host:port` as clients must reach it (`hosts`, `primary`, `me`).
    pub host: String,
    /// `topologyVersion.processId`: new at every start, so clients notice a restart.
    pub process_id: ObjectId,
    /// `settings.replicaSetId` of the configuration.
    pub replica_set_id: ObjectId,
    /// When this member became primary (start-up), as an operation time and a date. The
    /// operation time is never the null `Timestamp(0, 0)` (which `afterClusterTime` refuses),
    /// even on a new data directory: it is at least the start's second, increment 0, which
    /// every later write's time exceeds.
    pub election_time: Timestamp,
    pub election_date: bson::DateTime,
    /// The member's tags (`hello`'s `tags`, the configuration's): a Cosmos account's
    /// `{region}`; none otherwise.
    pub tags: Document,
    /// Cancelled when the server shuts down: awaitable `hello`s reply at once.
    stopping: CancellationToken,
}

impl ReplicaSet {
    /// The member of set `name`, reachable at `host`, primary from `now` on; `optimes` gives
    /// the election's operation time (the last committed one at start).
    pub fn new(name: String, host: String, now: bson::DateTime, optimes: &OpClock) -> ReplicaSet {
        ReplicaSet {
            name,
            host,
            process_id: ObjectId::new(),
            replica_set_id: ObjectId::new(),
            election_time: later(
                optimes.last_committed(),
                Timestamp {
                    time: u32::try_from(now.timestamp_millis() / 1000).unwrap_or(0),
                    increment: 0,
                },
            ),
            election_date: now,
            tags: Document::new(),
            stopping: CancellationToken::new(),
        }
    }

    /// The same member, tagged `tags`.
    pub fn with_tags(mut self, tags: Document) -> ReplicaSet {
        self.tags = tags;
        self
    }

    /// The member's last operation time (`operationTime`, `$clusterTime`, `lastWrite`): the
    /// last committed write's, or the election's before any.
    pub fn last_op_time(&self, optimes: &OpClock) -> Timestamp {
        later(optimes.last_committed(), self.election_time)
    }

    /// The wall-clock time of the last write (the election's before any).
    pub fn last_write_date(&self, optimes: &OpClock) -> bson::DateTime {
        optimes.last_committed_wall().max(self.election_date)
    }

    /// Ends every awaitable `hello` wait and refuses new ones (the server is shutting down).
    pub fn shutting_down(&self) {
        self.stopping.cancel();
    }

    /// `{processId, counter}`: the counter stays 0, since a one-member primary's topology
    /// never changes while it runs.
    pub fn topology_version(&self) -> Document {
        doc! {"processId": self.process_id, "counter": 0i64}
    }

    /// mongod's `OID::fromTerm`: the largest int32, then the term as 8 big-endian bytes.
    pub fn election_id() -> ObjectId {
        let mut bytes = [0u8; 12];
        let (head, tail) = bytes.split_at_mut(4);
        head.copy_from_slice(&i32::MAX.to_be_bytes());
        tail.copy_from_slice(&TERM.to_be_bytes());
        ObjectId::from_bytes(bytes)
    }

    /// The replica-set fields of `hello`, in mongod's order, before the size limits.
    /// `legacy` names the writable flag `ismaster` (`isMaster`, `ismaster`).
    pub fn hello_fields(&self, optimes: &OpClock, legacy: bool) -> Document {
        let mut reply = doc! {
            "topologyVersion": self.topology_version(),
            "hosts": [self.host.clone()],
            "setName": self.name.clone(),
            "setVersion": CONFIG_VERSION,
        };
        reply.insert(
            if legacy {
                "ismaster"
            } else {
                "isWritablePrimary"
            },
            true,
        );
        reply.insert("secondary", false);
        reply.insert("primary", self.host.clone());
        // mongod shows a tagged member's tags before `me`.
        if !self.tags.is_empty() {
            reply.insert("tags", self.tags.clone());
        }
        reply.insert("me", self.host.clone());
        reply.insert("electionId", ReplicaSet::election_id());
        let op_time = op_time(self.last_op_time(optimes));
        let date = self.last_write_date(optimes);
        reply.insert(
            "lastWrite",
            doc! {
                "opTime": op_time.clone(),
                "lastWriteDate": date,
                // One member is the majority: what it committed is majority-committed.
                "majorityOpTime": op_time,
                "majorityWriteDate": date,
            },
        );
        reply
    }

    /// How long an awaitable `hello` waits before it replies (mongod's rules for
    /// `topologyVersion` and `maxAwaitTimeMS`); `None`: reply at once.
    pub fn awaitable(&self, cmd: &Document, command: &str) -> Result<Option<Duration>> {
        let topology = optional_doc(cmd, command, "topologyVersion")?;
        let max_await = match cmd.get("maxAwaitTimeMS") {
            None => None,
            Some(v) => Some(max_await_millis(command, v)?),
        };
        let (topology, max_await) = match (topology, max_await) {
            (None, None) => return Ok(None),
            (Some(t), Some(m)) => (t, m),
            (Some(_), None) => {
                return Err(Error::new(
                    ErrorCode::Location31368,
                    "A request with a 'topologyVersion' must include 'maxAwaitTimeMS'",
                ))
            }
            (None, Some(_)) => {
                return Err(Error::new(
                    ErrorCode::Location31368,
                    "A request with 'maxAwaitTimeMS' must include a 'topologyVersion'",
                ))
            }
        };
        let process_id = match topology.get("processId") {
            Some(Bson::ObjectId(id)) => *id,
            Some(other) => {
                return Err(wrong_type(
                    "TopologyVersion",
                    "processId",
                    other,
                    "objectId",
                ))
            }
            None => return Err(missing("TopologyVersion", "processId")),
        };
        let counter = match topology.get("counter") {
            Some(Bson::Int64(n)) => *n,
            Some(Bson::Int32(n)) => i64::from(*n),
            Some(other) => return Err(wrong_type("TopologyVersion", "counter", other, "long")),
            None => return Err(missing("TopologyVersion", "counter")),
        };
        if counter < 0 {
            return Err(Error::new(
                ErrorCode::Location31372,
                "topologyVersion must have a non-negative counter",
            ));
        }
        // Another process id: the client knew an earlier run of this server; tell it now.
        if process_id != self.process_id {
            return Ok(None);
        }
        if counter > 0 {
            return Err(Error::new(
                ErrorCode::Location31382,
                format!(
                    "Received a topology version with counter: {counter} which is greater than the server topology version counter: 0"
                ),
            ));
        }
        Ok(Some(Duration::from_millis(max_await)))
    }

    /// Waits `wait`, or less if the server shuts down.
    pub async fn wait(&self, wait: Duration) {
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = self.stopping.cancelled() => {}
        }
    }
}

/// The later of two operation times.
fn later(a: Timestamp, b: Timestamp) -> Timestamp {
    if (a.time, a.increment) >= (b.time, b.increment) {
        a
    } else {
        b
    }
}

/// `{ts, t}`: an operation time in the current term.
pub fn op_time(ts: Timestamp) -> Document {
    doc! {"ts": ts, "t": TERM}
}

/// `maxAwaitTimeMS`: a whole number, at least 0 (mongod's IDL: 51024 below 0).
fn max_await_millis(command: &str, value: &Bson) -> Result<u64> {
    let n = match value {
        Bson::Int32(n) => i64::from(*n),
        Bson::Int64(n) => *n,
        Bson::Double(d) if d.fract() == 0.0 && d.abs() < 9.0e18 => *d as i64,
        other => {
            return Err(wrong_type(
                command,
                "maxAwaitTimeMS",
                other,
                "[int, decimal, long, double]",
            ))
        }
    };
    u64::try_from(n).map_err(|_| {
        Error::new(
            ErrorCode::Location51024,
            format!("BSON field 'maxAwaitTimeMS' value must be >= 0, actual value '{n}'"),
        )
    })
}

fn missing(parent: &str, field: &str) -> Error {
    Error::new(
        ErrorCode::Location40414,
        format!("BSON field '{parent}.{field}' is missing but a required field"),
    )
}
