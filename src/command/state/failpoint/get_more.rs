//! The data of mongod's `failGetMoreAfterCursorCheckout` fail point: a `getMore` whose cursor
//! exists fails with `errorCode` (the cursor is closed, as mongod closes a cursor whose
//! `getMore` failed). Drivers' change-stream tests use it to make a stream resume.
//!
//! Owns: parsing the data. Does not own when the fail point is reached (`change_stream`).

use crate::error::{Error, Result};
use bson::{Bson, Document};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GetMoreFailure {
    pub error_code: i32,
}

impl GetMoreFailure {
    /// Reads `data`: `errorCode`, a number (mongod's default when it is missing is 0, which
    /// fails nothing; so does mayfly's). Other fields are ignored, as mongod ignores them.
    pub fn parse(data: Option<&Document>) -> Result<GetMoreFailure> {
        let error_code = match data.and_then(|d| d.get("errorCode")) {
            None => 0,
            Some(Bson::Int32(n)) => *n,
            Some(Bson::Int64(n)) => i32::try_from(*n).unwrap_or(i32::MAX),
            Some(Bson::Double(d)) => *d as i32,
            Some(_) => return Err(Error::type_mismatch("errorCode must be a number")),
        };
        Ok(GetMoreFailure { error_code })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn the_code_is_read_and_other_fields_ignored() {
        let parsed = GetMoreFailure::parse(Some(&doc! {"errorCode": 6, "closeConnection": false}));
        assert_eq!(parsed.unwrap().error_code, 6);
        assert_eq!(GetMoreFailure::parse(None).unwrap().error_code, 0);
        assert!(GetMoreFailure::parse(Some(&doc! {"errorCode": "x"})).is_err());
    }
}
