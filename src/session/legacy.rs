//! mongod 7.0's answers to the opcodes it removed in 6.0 and to opcodes it never served
//! (`ServiceEntryPointCommon`'s op runners), with the counters and the log lines they leave.
//!
//! - OP_QUERY on a namespace other than `<db>.$cmd`, and OP_GET_MORE: an OP_REPLY with the
//!   `QueryFailure` flag and `{$err: "<op> is no longer supported. ...", code: 5739101, ok: 0}`;
//!   the connection stays open.
//! - OP_INSERT, OP_UPDATE, OP_DELETE, OP_KILL_CURSORS: no reply. mongod's fire-and-forget runner
//!   fails the request (5745702, 5745701, 5745700, 5745703), and a failed request ends the
//!   session: the connection is closed.
//! - Any other opcode: logged and ignored, no reply, the connection stays open.
//!
//! Each removed opcode is counted in `opcounters.deprecated` and logged as deprecated: at warn
//! level the first time on a connection, at debug after that (mongod warns once per client per
//! `deprecatedWireOpsWarningPeriodInSeconds`, an hour by default). Owns no socket: the session
//! sends, stays silent or closes as told.

use crate::error::{Error, ErrorCode};
use crate::status::Counters;
use crate::wire::LegacyOp;
use bson::{doc, Document};
use std::sync::atomic::Ordering;

/// What the session does with a request in a removed or unknown opcode.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Send this document in an OP_REPLY with the `QueryFailure` flag.
    Failure(Document),
    /// Send nothing; read the next request.
    Nothing,
    /// Send nothing and close the connection: mongod's request failed with this error.
    Close(Error),
}

/// The deprecation warning of one connection: at warn level once, then at debug.
#[derive(Debug, Default)]
pub struct DeprecationLog {
    warned: bool,
}

impl DeprecationLog {
    /// Logs that the client used `op`, a removed opcode (mongod's `warnUnsupportedOp`).
    pub fn deprecated(&mut self, op: &str) {
        if self.warned {
            tracing::debug!(op, "deprecated operation requested");
        } else {
            self.warned = true;
            tracing::warn!(
                op,
                doc = DOC_LINK,
                "deprecated operation requested; the client driver may require an upgrade"
            );
        }
    }
}

const DOC_LINK: &str = "https://dochub.mongodb.org/core/legacy-opcode-removal";

/// mongod's answer to an OP_QUERY on a namespace that is not `<db>.$cmd`.
pub fn query_refused(counters: &Counters, log: &mut DeprecationLog) -> Document {
    counters.deprecated.query.fetch_add(1, Ordering::Relaxed);
    log.deprecated("query");
    unsupported_read("OP_QUERY")
}

/// mongod's answer to a request in a removed or unknown opcode.
pub fn answer(counters: &Counters, op: LegacyOp, log: &mut DeprecationLog) -> Answer {
    let deprecated = &counters.deprecated;
    let (counter, n, code, message) = match op {
        LegacyOp::GetMore => {
            deprecated.getmore.fetch_add(1, Ordering::Relaxed);
            log.deprecated(op.name());
            return Answer::Failure(unsupported_read("OP_GET_MORE"));
        }
        LegacyOp::Unsupported(op_code) => {
            tracing::info!(operation = op_code, "operation is not supported");
            return Answer::Nothing;
        }
        // An OP_INSERT whose documents could not be framed fails before mongod counts it.
        LegacyOp::Insert { documents } => (
            &deprecated.insert,
            documents.unwrap_or(0),
            ErrorCode::Location5745702,
            "OP_INSERT is no longer supported",
        ),
        LegacyOp::Update => (
            &deprecated.update,
            1,
            ErrorCode::Location5745701,
            "OP_UPDATE is no longer supported",
        ),
        LegacyOp::Delete => (
            &deprecated.delete,
            1,
            ErrorCode::Location5745700,
            "OP_DELETE is no longer supported",
        ),
        LegacyOp::KillCursors => (
            &deprecated.killcursors,
            1,
            ErrorCode::Location5745703,
            "OP_KILL_CURSORS is no longer supported",
        ),
    };
    counter.fetch_add(n, Ordering::Relaxed);
    log.deprecated(op.name());
    Answer::Close(Error::new(code, message))
}

/// mongod's `makeErrorResponseToUnsupportedOpQuery`: exactly `$err`, `code` and `ok`.
fn unsupported_read(op: &str) -> Document {
    doc! {
        "$err": format!(
            "{op} is no longer supported. The client driver may require an upgrade. For more details see {DOC_LINK}"
        ),
        "code": ErrorCode::Location5739101.code(),
        "ok": 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deprecated(counters: &Counters) -> Document {
        counters.deprecated.status().unwrap_or_default()
    }

    /// The shape of an answer.
    #[derive(Debug, PartialEq)]
    enum Expect {
        GetMoreFailure,
        Close(ErrorCode),
        Nothing,
    }

    fn shape(answer: &Answer) -> Expect {
        match answer {
            Answer::Failure(d) => {
                assert_eq!(d.len(), 3, "{d}");
                assert_eq!(d.get_i32("code"), Ok(5739101));
                assert_eq!(d.get_f64("ok"), Ok(0.0));
                assert!(d.get_str("$err").unwrap().starts_with(
                    "OP_GET_MORE is no longer supported. The client driver may require an upgrade."
                ));
                Expect::GetMoreFailure
            }
            Answer::Close(e) => Expect::Close(e.code),
            Answer::Nothing => Expect::Nothing,
        }
    }

    #[test]
    fn each_opcode_gets_mongods_answer_and_counter() {
        use ErrorCode as E;
        let table = [
            (LegacyOp::GetMore, Expect::GetMoreFailure, "getmore", 1),
            (
                LegacyOp::Insert { documents: Some(3) },
                Expect::Close(E::Location5745702),
                "insert",
                3,
            ),
            (
                LegacyOp::Insert { documents: None },
                Expect::Close(E::Location5745702),
                "insert",
                0,
            ),
            (
                LegacyOp::Update,
                Expect::Close(E::Location5745701),
                "update",
                1,
            ),
            (
                LegacyOp::Delete,
                Expect::Close(E::Location5745700),
                "delete",
                1,
            ),
            (
                LegacyOp::KillCursors,
                Expect::Close(E::Location5745703),
                "killcursors",
                1,
            ),
            (LegacyOp::Unsupported(2010), Expect::Nothing, "total", 0),
        ];
        for (op, expected, counter, n) in table {
            let counters = Counters::default();
            let answer = answer(&counters, op, &mut DeprecationLog::default());
            assert_eq!(shape(&answer), expected, "{op:?}");
            assert_eq!(
                deprecated(&counters).get_i64(counter).unwrap_or(0),
                n,
                "{op:?}"
            );
            assert_eq!(
                deprecated(&counters).get_i64("total").unwrap_or(0),
                n,
                "{op:?}"
            );
        }
    }

    #[test]
    fn a_refused_op_query_counts_as_a_deprecated_query() {
        let counters = Counters::default();
        let reply = query_refused(&counters, &mut DeprecationLog::default());
        assert_eq!(reply.get_i32("code"), Ok(5739101));
        assert!(reply
            .get_str("$err")
            .unwrap()
            .starts_with("OP_QUERY is no longer supported."));
        assert_eq!(deprecated(&counters).get_i64("query"), Ok(1));
    }
}
