//! The data of mongod's `onPrimaryTransactionalWrite` fail point, which acts on a retryable
//! write where it commits: `failBeforeCommitExceptionCode` fails the write before its commit
//! (nothing of it is applied) with that code, and `closeConnection` (true unless given false)
//! closes the client's connection without a reply, after the commit when the write did not
//! fail. Drivers' retryable-writes tests use it to lose a reply whose write did, or did not,
//! happen.
//!
//! Owns: parsing the data. Does not own when the fail point is reached (`command::run`).

use crate::error::{Error, Result};
use bson::{Bson, Document};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrimaryWrite {
    pub close_connection: bool,
    pub fail_before_commit: Option<i32>,
}

impl Default for PrimaryWrite {
    fn default() -> Self {
        PrimaryWrite {
            close_connection: true,
            fail_before_commit: None,
        }
    }
}

impl PrimaryWrite {
    /// Reads `data`, as mongod reads it: a non-boolean `closeConnection` counts as true, and
    /// fields it does not read are ignored.
    pub fn parse(data: Option<&Document>) -> Result<PrimaryWrite> {
        let Some(data) = data else {
            return Ok(PrimaryWrite::default());
        };
        let close_connection = !matches!(data.get("closeConnection"), Some(Bson::Boolean(false)));
        let fail_before_commit = match data.get("failBeforeCommitExceptionCode") {
            None => None,
            Some(Bson::Int32(n)) => Some(*n),
            Some(Bson::Int64(n)) => Some(i32::try_from(*n).unwrap_or(i32::MAX)),
            Some(Bson::Double(d)) => Some(*d as i32),
            Some(_) => {
                return Err(Error::type_mismatch(
                    "failBeforeCommitExceptionCode must be a number",
                ))
            }
        };
        Ok(PrimaryWrite {
            close_connection,
            fail_before_commit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn data_is_read_as_mongod_reads_it() {
        let cases = [
            (None, true, None),
            (Some(doc! {}), true, None),
            (Some(doc! {"closeConnection": false}), false, None),
            (Some(doc! {"closeConnection": 0}), true, None),
            (
                Some(doc! {"failBeforeCommitExceptionCode": 1}),
                true,
                Some(1),
            ),
            (
                Some(doc! {"closeConnection": false, "failBeforeCommitExceptionCode": 91_i64}),
                false,
                Some(91),
            ),
        ];
        for (data, close, code) in cases {
            let parsed = PrimaryWrite::parse(data.as_ref()).unwrap();
            assert_eq!(parsed.close_connection, close, "{data:?}");
            assert_eq!(parsed.fail_before_commit, code, "{data:?}");
        }
        assert!(PrimaryWrite::parse(Some(&doc! {"failBeforeCommitExceptionCode": "x"})).is_err());
    }
}
