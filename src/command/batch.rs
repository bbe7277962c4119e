//! What the batch write commands (`insert`, `update`, `delete`) share: running statements in
//! order, stopping at the first error when `ordered`, and the reply fields for the results.

use crate::error::{Error, Result};
use bson::{Bson, Document};

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

/// Completes a batch reply holding its counts: `writeErrors` when there are any, then `ok`.
pub fn reply(mut counts: Document, errors: &[(usize, Error)]) -> Document {
    if !errors.is_empty() {
        let errors = errors
            .iter()
            .map(|(i, e)| Bson::Document(e.to_write_error(*i)))
            .collect();
        counts.insert("writeErrors", Bson::Array(errors));
    }
    counts.insert("ok", 1.0);
    counts
}

/// A count as mongod sends it: an int, a long only when it does not fit.
pub fn count(n: usize) -> Bson {
    super::stats::number(n as u64)
}
