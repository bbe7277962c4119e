//! What the write commands' specs share: mongod's `WriteCommandBase` fields (`ordered`,
//! `bypassDocumentValidation`, `stmtId`, `stmtIds`), which `insert`, `update` and `delete`
//! carry, and the reading of a batch's statements (`updates`, `deletes`), each with its own
//! [`Spec`] so that a statement's unknown field is refused as mongod's IDL refuses it
//! (`BSON field 'update.updates.foo' is an unknown field.`).
//!
//! Owns: those fields' types and the batch's size. Does not own: what a statement means (each
//! command's spec and handler) or how statement ids are resolved
//! (`retryable::statement_ids`).

use crate::command::handshake::MAX_WRITE_BATCH_SIZE;
use crate::command::retryable;
use crate::command::spec::Spec;
use crate::error::{Error, Result};
use bson::{Bson, Document};

/// The fields every batch write command carries. Owned, as the specs that hold it are.
#[derive(Debug)]
pub struct WriteBase {
    /// Stop at the first failed statement (the default).
    pub ordered: bool,
    pub stmt_id: Option<i32>,
    pub stmt_ids: Option<Vec<Bson>>,
}

impl WriteBase {
    pub fn read(spec: &mut Spec<'_>) -> WriteBase {
        let ordered = spec.bool("ordered").unwrap_or(true);
        // Typed, then unused: mayfly has no document validators, so there is nothing to
        // bypass and either value writes the same.
        spec.bool("bypassDocumentValidation");
        WriteBase {
            ordered,
            stmt_id: spec.i32("stmtId"),
            stmt_ids: spec.array("stmtIds").cloned(),
        }
    }

    /// The statement ids of a batch of `n` (`retryable::statement_ids`).
    pub fn statement_ids(&self, command: &str, n: usize) -> Result<Vec<i32>> {
        retryable::statement_ids(self.stmt_id, self.stmt_ids.as_deref(), command, n)
    }
}

/// The statements of a batch (`updates`, `deletes`): a required array of documents, each read
/// by `read`; a statement's structural error is the field's, at the field's position. `None`
/// only when an error was noted for [`Spec::finish`] to return.
pub(super) fn statements<'a, T>(
    spec: &mut Spec<'a>,
    field: &str,
    read: impl Fn(&'a Document) -> Result<T>,
) -> Option<Vec<T>> {
    let Some(documents) = spec.documents(field) else {
        // Absent: missing (40414); present, its type error is already noted.
        spec.required(field);
        return None;
    };
    let mut statements = Vec::with_capacity(documents.len());
    for document in documents {
        match read(document) {
            Ok(statement) => statements.push(statement),
            Err(error) => {
                spec.refuse(field, error);
                return None;
            }
        }
    }
    Some(statements)
}

/// A batch holds between 1 and `maxWriteBatchSize` statements (16 InvalidLength), checked
/// once the command is read, as mongod does after parsing.
pub(in crate::command::crud) fn check_batch_size(n: usize) -> Result<()> {
    let max = usize::try_from(MAX_WRITE_BATCH_SIZE).unwrap_or(usize::MAX);
    if n == 0 || n > max {
        return Err(Error::write_batch_size(n));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use bson::doc;

    fn read(body: &Document) -> Result<(bool, Option<i32>, Vec<i32>)> {
        let mut spec = Spec::new("delete", body);
        let base = WriteBase::read(&mut spec);
        let qs = statements(&mut spec, "deletes", |d| {
            let mut s = Spec::element("delete.deletes", d);
            let q = s.required_doc("q").map_or(0, |q| q.len() as i32);
            s.finish().map(|()| q)
        });
        spec.finish()?;
        Ok((base.ordered, base.stmt_id, qs.unwrap_or_default()))
    }

    #[test]
    fn the_base_fields_are_typed_and_each_statement_read() {
        let body = doc! {"delete": "c", "deletes": [{"q": {"a": 1}}, {"q": {}}],
        "ordered": false, "bypassDocumentValidation": true, "stmtId": 4, "stmtIds": [1, 2]};
        assert_eq!(read(&body).unwrap(), (false, Some(4), vec![1, 0]));
        let defaults = read(&doc! {"delete": "c", "deletes": [{"q": {}}]}).unwrap();
        assert_eq!(defaults, (true, None, vec![0]));
    }

    #[test]
    fn a_statements_error_takes_the_fields_place() {
        let cases = [
            (
                doc! {"delete": "c"},
                ErrorCode::Location40414,
                "BSON field 'delete.deletes' is missing but a required field",
            ),
            (
                doc! {"delete": "c", "deletes": {}},
                ErrorCode::TypeMismatch,
                "BSON field 'delete.deletes' is the wrong type 'object', expected type 'array'",
            ),
            (
                doc! {"delete": "c", "deletes": [{"q": {}}, 3]},
                ErrorCode::TypeMismatch,
                "BSON field 'delete.deletes.1' is the wrong type 'int', expected type 'object'",
            ),
            (
                doc! {"delete": "c", "deletes": [{"q": {}, "x": 1}], "bogus": 1},
                ErrorCode::IDLUnknownField,
                "BSON field 'delete.deletes.x' is an unknown field.",
            ),
            (
                doc! {"delete": "c", "bogus": 1, "deletes": [{"q": {}, "x": 1}]},
                ErrorCode::IDLUnknownField,
                "BSON field 'delete.bogus' is an unknown field.",
            ),
            (
                doc! {"delete": "c", "deletes": [{}], "ordered": "no"},
                ErrorCode::Location40414,
                "BSON field 'delete.deletes.q' is missing but a required field",
            ),
            (
                doc! {"delete": "c", "stmtId": 1i64, "deletes": [{}]},
                ErrorCode::TypeMismatch,
                "BSON field 'delete.stmtId' is the wrong type 'long', expected type 'int'",
            ),
            (
                doc! {"delete": "c", "deletes": [{"q": {}}], "stmtIds": 1},
                ErrorCode::TypeMismatch,
                "BSON field 'delete.stmtIds' is the wrong type 'int', expected type 'array'",
            ),
        ];
        for (body, code, message) in cases {
            let err = read(&body).unwrap_err();
            assert_eq!((err.code, err.message.as_str()), (code, message), "{body}");
        }
    }

    #[test]
    fn a_batch_holds_one_to_the_most_statements() {
        let max = usize::try_from(MAX_WRITE_BATCH_SIZE).unwrap();
        assert!(check_batch_size(1).is_ok() && check_batch_size(max).is_ok());
        for n in [0, max + 1] {
            assert_eq!(
                check_batch_size(n).unwrap_err().code,
                ErrorCode::InvalidLength
            );
        }
    }
}
