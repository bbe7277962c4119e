//! The generic arguments every command may carry (mongod's `generic_argument.idl`), taken from
//! the command document once, right after `$db`, into [`GenericArgs`].
//!
//! Taking is one pass over the document and cannot fail; each field is then judged by its own
//! envelope step, in mongod's order (the session fields, then `failCommand`, the write concern,
//! the gossiped cluster time, the read concern, `maxTimeMS`), so that a command with two bad fields gets mongod's error.
//! Owns: the list of generic fields and the typed reading of `maxTimeMS`. Does not own what the
//! session fields, concerns or `comment` mean (`operation_session`, `args`, `replset`).

use crate::error::{Error, Result};
use bson::{Bson, Document};

/// Fields any command may carry that say nothing about the command itself.
pub const GENERIC_FIELDS: &[&str] = &[
    "$db",
    "lsid",
    "txnNumber",
    "autocommit",
    "startTransaction",
    "$clusterTime",
    "$readPreference",
    "$audit",
    "$client",
    "apiVersion",
    "apiStrict",
    "apiDeprecationErrors",
    "comment",
    "maxTimeMS",
    "readConcern",
    "writeConcern",
    "clientOperationKey",
    "mayBypassWriteBlocking",
];

pub fn is_generic(field: &str) -> bool {
    GENERIC_FIELDS.contains(&field)
}

/// A command's generic fields as they came, each `None` when absent.
#[derive(Debug, Clone, Copy, Default)]
pub struct GenericArgs<'a> {
    pub lsid: Option<&'a Bson>,
    pub txn_number: Option<&'a Bson>,
    pub autocommit: Option<&'a Bson>,
    pub start_transaction: Option<&'a Bson>,
    pub read_concern: Option<&'a Bson>,
    pub write_concern: Option<&'a Bson>,
    pub max_time_ms: Option<&'a Bson>,
    pub comment: Option<&'a Bson>,
    /// `$clusterTime`, gossiped by drivers to a replica set member.
    pub cluster_time: Option<&'a Bson>,
}

impl<'a> GenericArgs<'a> {
    /// Takes the generic fields of `body` in one pass (a repeated field: its first value, as
    /// `Document` keeps one).
    pub fn take(body: &'a Document) -> GenericArgs<'a> {
        let mut args = GenericArgs::default();
        for (field, value) in body {
            let slot = match field.as_str() {
                "lsid" => &mut args.lsid,
                "txnNumber" => &mut args.txn_number,
                "autocommit" => &mut args.autocommit,
                "startTransaction" => &mut args.start_transaction,
                "readConcern" => &mut args.read_concern,
                "writeConcern" => &mut args.write_concern,
                "maxTimeMS" => &mut args.max_time_ms,
                "comment" => &mut args.comment,
                "$clusterTime" => &mut args.cluster_time,
                _ => continue,
            };
            *slot = Some(value);
        }
        args
    }

    /// Whether the command runs in a multi-document transaction (`autocommit` present: mongod
    /// refuses any value but `false`).
    pub fn in_transaction(&self) -> bool {
        self.autocommit.is_some()
    }

    /// The command's `maxTimeMS` in milliseconds; `None` when absent or 0 (no limit). mongod's
    /// `parseMaxTimeMS`: a number, integral, between 0 and 2^31 - 1, else 2 BadValue.
    pub fn max_time_ms(&self) -> Result<Option<u64>> {
        max_time_ms(self.max_time_ms)
    }
}

fn max_time_ms(value: Option<&Bson>) -> Result<Option<u64>> {
    let Some(value) = value else {
        return Ok(None);
    };
    let (millis, integral) = match value {
        Bson::Int32(n) => (i64::from(*n), true),
        Bson::Int64(n) => (*n, true),
        // mongod's safeNumberLong: saturating, NaN as 0.
        Bson::Double(d) => (*d as i64, d.is_nan() || d.floor() == *d),
        Bson::Decimal128(d) => {
            let d = crate::query::decimal::bson_to_f64(d);
            (d as i64, true)
        }
        _ => return Err(Error::bad_value("maxTimeMS must be a number")),
    };
    if !(0..=i64::from(i32::MAX)).contains(&millis) {
        return Err(Error::bad_value(format!(
            "{millis} value for maxTimeMS is out of range"
        )));
    }
    if !integral {
        return Err(Error::bad_value("maxTimeMS has non-integral value"));
    }
    Ok(u64::try_from(millis).ok().filter(|ms| *ms > 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use bson::doc;

    #[test]
    fn generic_fields_are_taken_in_one_pass() {
        let body = doc! {"find": "c", "filter": {}, "lsid": {"id": 1}, "txnNumber": 3i64,
        "autocommit": false, "comment": "x", "maxTimeMS": 9, "$db": "d"};
        let args = GenericArgs::take(&body);
        assert_eq!(args.lsid, Some(&Bson::Document(doc! {"id": 1})));
        assert_eq!(args.txn_number, Some(&Bson::Int64(3)));
        assert!(args.in_transaction());
        assert_eq!(args.comment, Some(&Bson::String("x".into())));
        assert_eq!(args.max_time_ms().unwrap(), Some(9));
        assert!(args.start_transaction.is_none() && args.write_concern.is_none());
        assert!(!GenericArgs::take(&doc! {"ping": 1}).in_transaction());
    }

    #[test]
    fn max_time_ms_is_read_as_mongod_reads_it() {
        let parse = |v: Bson| max_time_ms(Some(&v));
        assert_eq!(max_time_ms(None).unwrap(), None);
        assert_eq!(parse(Bson::Int32(0)).unwrap(), None, "0 is no limit");
        assert_eq!(parse(Bson::Int32(250)).unwrap(), Some(250));
        assert_eq!(
            parse(Bson::Int64(i64::from(i32::MAX))).unwrap(),
            Some(2_147_483_647)
        );
        assert_eq!(parse(Bson::Double(1000.0)).unwrap(), Some(1000));
        for (value, message) in [
            (Bson::String("1".into()), "maxTimeMS must be a number"),
            (Bson::Boolean(true), "maxTimeMS must be a number"),
            (Bson::Null, "maxTimeMS must be a number"),
            (Bson::Int32(-1), "-1 value for maxTimeMS is out of range"),
            (
                Bson::Int64(1 << 31),
                "2147483648 value for maxTimeMS is out of range",
            ),
            (Bson::Double(-0.5), "maxTimeMS has non-integral value"),
            (Bson::Double(2.5), "maxTimeMS has non-integral value"),
            (
                Bson::Double(1e300),
                "9223372036854775807 value for maxTimeMS is out of range",
            ),
        ] {
            let err = parse(value.clone()).unwrap_err();
            assert_eq!(err.code, ErrorCode::BadValue, "{value}");
            assert_eq!(err.message, message, "{value}");
        }
    }
}
