//! Placeholder: the date operators are not compiled yet.

use super::super::{Compiler, Node};
use crate::error::{Error, ErrorCode, Result};
use bson::{Bson, DateTime};

pub(super) fn compile(_name: &str, _arg: &Bson, _c: &mut Compiler<'_>) -> Option<Result<Node>> {
    None
}

/// Parses a date string as `$dateFromString` without a format or time zone does (used by
/// `$convert`/`$toDate` of a string).
#[allow(dead_code)] // until $convert uses it
pub(super) fn parse_date_string(s: &str) -> Result<DateTime> {
    Err(Error::new(
        ErrorCode::ConversionFailure,
        format!("Error parsing date string '{s}'"),
    ))
}
