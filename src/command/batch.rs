//! What the batch write commands (`insert`, `update`, `delete`) share: running statements in
//! order, stopping at the first error when `ordered`, and the reply fields for the results.

use crate::error::{Error, Result};
use bson::Bson;

/// Runs `apply` on each statement in order. A statement that failed to parse, or whose `apply`
/// fails, becomes a write error at its index; with `ordered` the batch stops there.
pub fn run<T>(
    statements: impl IntoIterator<Item = Result<T>>,
    ordered: bool,
    mut apply: impl FnMut(usize, T) -> Result<()>,
) -> Vec<(usize, Error)> {
    let mut errors = Vec::new();
    for (i, statement) in statements.into_iter().enumerate() {
        if let Err(e) = statement.and_then(|s| apply(i, s)) {
            errors.push((i, e));
            if ordered {
                break;
            }
        }
    }
    errors
}

/// The `writeErrors` array of a batch reply.
pub fn write_errors(errors: &[(usize, Error)]) -> Bson {
    Bson::Array(
        errors
            .iter()
            .map(|(i, e)| Bson::Document(e.to_write_error(*i)))
            .collect(),
    )
}

/// A count as mongod sends it: an int, a long only when it does not fit.
pub fn count(n: usize) -> Bson {
    match i32::try_from(n) {
        Ok(n) => Bson::Int32(n),
        Err(_) => Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX)),
    }
}
