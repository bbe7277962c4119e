//! Request units in the Cosmos profile: every command's estimated charge
//! ([`crate::profile::ru`]), the connection's last request (`getLastRequestStatistics`), the
//! charges per collection (`serverStatus.requestUnits`, and the slow-query log), and throttling
//! to the provisioned throughput ([`crate::profile::throttle`]).
//!
//! A command is admitted before it runs ([`RequestUnits::admit`]) and charged when it ends
//! ([`RequestUnits::account`]): its charge depends on what it examined and returned.
//!
//! Owns those two steps (methods of the meter, so the session calls them on
//! `shared.request_units`). Does not own the meter itself (`state::request_units`).

use super::super::state::request_units::{LastRequest, RequestUnits};
use super::super::{CommandName, Connection, Request, Shared};
use super::profiler::Operation;
use crate::clock::Stopwatch;
use crate::error::Result;
use crate::profile::ru::{charge, Facts, Work};
use crate::profile::throttle::{retries_exhausted, too_many_requests, SERVER_SIDE_RETRY_LIMIT};
use crate::protocol::Reply;
use bson::{doc, Bson, Document};

impl RequestUnits {
    /// Waits for, or refuses with 16500, a command whose budget is overdrawn; commands that
    /// cost nothing, and every command without `--cosmos-throughput`, go at once.
    pub async fn admit(&self, shared: &Shared, req: &Request<'_>) -> Result<()> {
        let profile = &shared.config.profile;
        if !profile.throttles() || Work::of(req.name.name()) == Work::Free {
            return Ok(());
        }
        let collection = super::profiler::collection_of(req.body, Some(&req.parsed));
        let Some((key, rate)) = budget(shared, req.db, collection)? else {
            return Ok(());
        };
        let waited = Stopwatch::start();
        loop {
            let Some(wait) = self.wait_for(&key, rate) else {
                return Ok(());
            };
            if !profile.server_side_retry {
                return Err(too_many_requests(wait, rate));
            }
            if waited.elapsed() + wait > SERVER_SIDE_RETRY_LIMIT {
                return Err(retries_exhausted());
            }
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                err = req.interrupt.interrupted() => return Err(err),
            }
        }
    }

    /// Charges a finished command: to its connection's last request, its namespace's total
    /// and its budget; returns the charge. `request_bytes` is the size of the command as it
    /// came.
    pub fn account(
        &self,
        shared: &Shared,
        conn: &mut Connection,
        op: &Operation<'_>,
        request_bytes: usize,
    ) -> Option<f64> {
        let name = op.command();
        if name == "getLastRequestStatistics" {
            return None;
        }
        let work = Work::of(name);
        let totals = op.interrupt.plans.totals();
        let reply = op.reply();
        // What a command did not write it does not pay for by size: a refused command, or the
        // statements of a write that failed (a refused 3 MB document wrote nothing).
        let failed = reply.is_some_and(Reply::is_error);
        let written_share = reply.map_or(0.0, |r| written_share(name, r));
        let facts = Facts {
            request_bytes: if failed {
                0
            } else {
                (request_bytes as f64 * written_share) as usize
            },
            reply_bytes: reply.map_or(0, |r| reply_bytes(r, work)),
            docs_examined: totals.docs_examined,
            keys_examined: totals.keys_examined,
            docs_written: reply.map_or(0, |r| written(name, r)),
        };
        // A request refused for want of request units costs none (Cosmos charges a 429
        // nothing), or it would push back the very moment it was told to retry at.
        let throttled = failed && reply.is_some_and(was_throttled);
        let ru = if throttled { 0.0 } else { charge(work, &facts) };
        conn.last_request = Some(LastRequest {
            // The table's name: the command ran, so it is one mayfly has.
            command: CommandName::from_name(name).map_or("", CommandName::name),
            charge: ru,
            millis: op.elapsed.as_secs_f64() * 1000.0,
        });
        if work == Work::Free {
            return Some(ru);
        }
        self.add_to_total(op.db, op.collection().unwrap_or("$cmd"), ru);
        if shared.config.profile.throttles() {
            // The command has run and answered. On a poisoned catalog (counted and logged) its
            // charge is in the totals but no bucket's; the next command's admission fails on
            // the same lock.
            if let Ok(Some((key, rate))) = budget(shared, op.db, op.collection()) {
                self.spend(key, rate, ru);
            }
        }
        Some(ru)
    }
}

/// The budget a command on `db` spends from, and its rate: the collection's own provisioned
/// throughput (`customAction`), else its database's, which its collections without their own
/// share, else `--cosmos-throughput` for the collection alone. Autoscale budgets allow their
/// maximum. Commands on no collection are not throttled.
fn budget(shared: &Shared, db: &str, collection: Option<&str>) -> Result<Option<(String, u32)>> {
    let Some(collection) = collection else {
        return Ok(None);
    };
    let catalog = shared.engine.catalog()?;
    let own = catalog
        .get(db, collection)
        .and_then(|meta| meta.cosmos.as_ref().and_then(|c| c.throughput));
    if let Some(own) = own {
        return Ok(Some((format!("{db}.{collection}"), own.max_per_second())));
    }
    if let Some(shared_by_db) = catalog.database_settings(db).and_then(|s| s.throughput) {
        return Ok(Some((db.to_owned(), shared_by_db.max_per_second())));
    }
    Ok(shared
        .config
        .profile
        .throughput
        .map(|rate| (format!("{db}.{collection}"), rate)))
}

/// Bytes a read returned (only reads are charged by it).
fn reply_bytes(reply: &Reply, work: Work) -> usize {
    match (reply, work) {
        (Reply::Document(_), work) if work != Work::Read => 0,
        _ => reply.byte_len(),
    }
}

/// Documents a write inserted, changed or removed, from its reply.
fn written(name: &str, reply: &Reply) -> u64 {
    let Reply::Document(doc) = reply else {
        return 0;
    };
    let number = |d: &Document, field: &str| match d.get(field) {
        Some(Bson::Int32(n)) => u64::try_from(*n).unwrap_or(0),
        Some(Bson::Int64(n)) => u64::try_from(*n).unwrap_or(0),
        Some(Bson::Double(n)) if *n >= 0.0 => *n as u64,
        _ => 0,
    };
    match name {
        "insert" | "delete" => number(doc, "n"),
        "update" => {
            let upserted = doc.get_array("upserted").map_or(0, |u| u.len() as u64);
            number(doc, "nModified") + upserted
        }
        _ => doc
            .get_document("lastErrorObject")
            .map_or(0, |last| number(last, "n")),
    }
}

/// Whether a failed reply is throttling's: 16500, or server-side retry's 50 `ExceededTimeLimit`
/// (not a `maxTimeMS` expiry, 50 `MaxTimeMSExpired`).
fn was_throttled(reply: &Reply) -> bool {
    let Reply::Document(doc) = reply else {
        return false;
    };
    match doc.get_i32("code") {
        Ok(16500) => true,
        Ok(50) => doc.get_str("codeName") == Ok("ExceededTimeLimit"),
        _ => false,
    }
}

/// The share of a command's statements that took effect: 1 but for a write with write errors,
/// whose failed statements wrote nothing.
fn written_share(name: &str, reply: &Reply) -> f64 {
    if Work::of(name) != Work::Write {
        return 1.0;
    }
    let Reply::Document(doc) = reply else {
        return 1.0;
    };
    let failed = doc.get_array("writeErrors").map_or(0, Vec::len) as f64;
    if failed == 0.0 {
        return 1.0;
    }
    let written = written(name, reply) as f64;
    written / (written + failed)
}

/// `getLastRequestStatistics`: the charge of the connection's previous command, in Cosmos's
/// shape. Before any command it reports nothing spent.
pub fn last_request_statistics(conn: &Connection) -> Document {
    let (command, charge, millis) = match &conn.last_request {
        Some(last) => (last.command, last.charge, last.millis),
        None => ("", 0.0, 0.0),
    };
    doc! {
        "_t": "GetRequestStatisticsResponse",
        "ok": 1,
        "CommandName": command,
        "RequestCharge": charge,
        "RequestDurationInMilliSeconds": (millis * 1000.0).round() / 1000.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_count_what_their_replies_say() {
        let reply = |d: Document| Reply::Document(d);
        assert_eq!(written("insert", &reply(doc! {"n": 3, "ok": 1.0})), 3);
        assert_eq!(
            written(
                "update",
                &reply(doc! {"n": 2, "nModified": 1, "upserted": [{"index": 0, "_id": 1}]})
            ),
            2
        );
        assert_eq!(written("delete", &reply(doc! {"n": 0})), 0);
        assert_eq!(
            written(
                "findAndModify",
                &reply(doc! {"lastErrorObject": {"n": 1}, "value": null})
            ),
            1
        );
    }

    #[test]
    fn failed_statements_are_not_charged_by_size() {
        let reply = |d: Document| Reply::Document(d);
        assert_eq!(written_share("find", &reply(doc! {"ok": 1.0})), 1.0);
        assert_eq!(written_share("insert", &reply(doc! {"n": 2})), 1.0);
        let one_of_two = doc! {"n": 1, "writeErrors": [{"index": 1, "code": 16}]};
        assert_eq!(written_share("insert", &reply(one_of_two)), 0.5);
        let none = doc! {"n": 0, "writeErrors": [{"index": 0, "code": 16}]};
        assert_eq!(written_share("insert", &reply(none)), 0.0);
    }

    #[test]
    fn statistics_have_cosmos_shape() {
        let mut conn = Connection::new(
            1,
            "127.0.0.1:1".parse().unwrap(),
            "127.0.0.1:2".parse().unwrap(),
        );
        conn.last_request = Some(LastRequest {
            command: "find",
            charge: 1.01,
            millis: 0.5,
        });
        assert_eq!(
            last_request_statistics(&conn),
            doc! {
                "_t": "GetRequestStatisticsResponse",
                "ok": 1,
                "CommandName": "find",
                "RequestCharge": 1.01,
                "RequestDurationInMilliSeconds": 0.5,
            }
        );
    }
}
