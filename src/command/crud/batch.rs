//! What the batch write commands (`insert`, `update`, `delete`) share: running statements in
//! order, stopping at the first error when `ordered`, and the reply fields for the results.

use crate::engine::Interrupt;
use crate::error::{Error, Result};
use crate::query::guard;
use bson::{Bson, Document};
use std::sync::Arc;

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

/// [`run`], checking `interrupt` before each statement, with it installed as the thread's
/// current operation so that the statements' expressions and loops check it too
/// ([`guard`]). An interruption (`maxTimeMS`, `killOp`, a closed connection) is not a write
/// error: it ends the batch and fails the whole command, as in mongod, after the statements
/// before it were applied.
pub fn run_interruptible<T>(
    statements: impl IntoIterator<Item = Result<T>>,
    ordered: bool,
    interrupt: &Arc<Interrupt>,
    mut apply: impl FnMut(usize, T) -> Result<()>,
) -> std::result::Result<Vec<(usize, Error)>, Error> {
    let _current = guard::install(Arc::clone(interrupt) as Arc<dyn guard::Checkpoint>);
    let mut stopped = None;
    let errors = run(statements, ordered, |i, s| {
        let outcome = interrupt.check().and_then(|()| apply(i, s));
        match (outcome, interrupt.check()) {
            // Stopped before or during the statement: the operation's error, not the
            // statement's.
            (Err(_), Err(e)) => {
                stopped = Some(e.clone());
                Err(e)
            }
            (outcome, _) => outcome,
        }
    });
    match stopped {
        Some(e) => Err(e),
        None => Ok(errors),
    }
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
    crate::command::reply_number::number(n as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::KillReason;
    use crate::error::ErrorCode;

    #[test]
    fn an_interruption_fails_the_batch_instead_of_becoming_a_write_error() {
        let interrupt = Interrupt::none();
        let mut applied = Vec::new();
        let result = run_interruptible((0..5).map(Ok), false, &interrupt, |_, s| {
            applied.push(s);
            if s == 1 {
                interrupt.kill(KillReason::Killed);
            }
            Ok(())
        });
        assert_eq!(result.unwrap_err().code, ErrorCode::Interrupted);
        assert_eq!(applied, vec![0, 1], "the statements before it stay applied");

        let free = Interrupt::none();
        let errors = run_interruptible(
            vec![Ok(1), Err(Error::bad_value("x")), Ok(3)],
            false,
            &free,
            |_, _| Ok(()),
        )
        .unwrap();
        assert_eq!(errors.len(), 1);
    }
}
