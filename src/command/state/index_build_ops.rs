//! The `currentOp` entries of index builds in progress, as mongod 7.0 reports its
//! `IndexBuildsCoordinatorMongod` operations: `type: "op"`, `desc`, `op: "command"`, `ns`, the
//! `createIndexes` command, `msg` ("Index Build: scanning collection Index Build: scanning
//! collection: 1234/10000 12%") and `progress: {done, total}`.
//!
//! A build is its own operation, apart from the `createIndexes` that started it (which is listed
//! too, for as long as its client waits), so it stays visible after that client goes. It has no
//! `opid`: `killOp` cannot stop a build. Does not own the numbers (`engine::background::progress`)
//! nor client operations' entries (`operations`).

use crate::engine::background::progress::ProgressReport;
use bson::{doc, Document};

/// The `inprog` entry of one build; `host` is the server's `host:port`, as in client entries.
pub fn entry(report: &ProgressReport, host: &str) -> Document {
    doc! {
        "type": "op",
        "host": host,
        "desc": format!("IndexBuildsCoordinatorMongod-{}", report.build_id),
        "active": true,
        "currentOpTime": report.started_at.try_to_rfc3339_string().unwrap_or_default(),
        "secs_running": i64::try_from(report.elapsed.as_secs()).unwrap_or(i64::MAX),
        "microsecs_running": i64::try_from(report.elapsed.as_micros()).unwrap_or(i64::MAX),
        "op": "command",
        "ns": report.namespace.as_str(),
        "redacted": false,
        "command": report.command.clone(),
        "msg": report.msg(),
        "progress": {
            "done": i64::try_from(report.done).unwrap_or(i64::MAX),
            "total": i64::try_from(report.total).unwrap_or(i64::MAX),
        },
        "numYields": 0,
        "locks": {},
        "waitingForLock": false,
        "lockStats": {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_build_is_reported_as_mongod_reports_its_coordinator_op() {
        let report = ProgressReport {
            build_id: 3,
            namespace: "test.big".into(),
            command: doc! {"createIndexes": "big", "indexes": [{"v": 2, "key": {"a": 1}, "name": "a_1"}], "$db": "test"},
            done: 1234,
            total: 10_000,
            elapsed: Duration::from_millis(2_500),
            started_at: bson::DateTime::from_millis(0),
        };
        let entry = entry(&report, "box:27017");
        assert_eq!(entry.get_str("type").unwrap(), "op");
        assert_eq!(
            entry.get_str("desc").unwrap(),
            "IndexBuildsCoordinatorMongod-3"
        );
        assert_eq!(entry.get_str("op").unwrap(), "command");
        assert_eq!(entry.get_str("ns").unwrap(), "test.big");
        assert_eq!(entry.get_str("host").unwrap(), "box:27017");
        assert_eq!(
            entry.get_str("msg").unwrap(),
            "Index Build: scanning collection Index Build: scanning collection: 1234/10000 12%"
        );
        assert_eq!(
            entry.get_document("progress").unwrap(),
            &doc! {"done": 1234_i64, "total": 10_000_i64}
        );
        assert_eq!(entry.get_document("command").unwrap(), &report.command);
        assert_eq!(entry.get_i64("secs_running").unwrap(), 2);
        assert_eq!(entry.get_i64("microsecs_running").unwrap(), 2_500_000);
        assert!(!entry.contains_key("opid"));
    }
}
