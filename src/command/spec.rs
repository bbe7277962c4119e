//! The spec reader: a command's own fields read in one pass into its typed spec, then
//! [`Spec::finish`] refuses whatever is left, as mongod's IDL parser does.
//!
//! A field is taken when its reader asks for it; a value of the wrong type (or one a field's
//! validator refuses) is noted, not returned at once, because mongod's parser reports the first
//! bad field in the document's order, whether it is unknown or mistyped. `finish` returns that
//! error. The generic fields (`generic`) belong to the envelope and the fields only mongod's
//! cluster sends (`cluster_fields`) are judged before the command runs: neither is unknown here.
//!
//! Owns: taking fields, the order of errors, the unknown-field refusal (40415). Does not own
//! what a field means: each command's spec does.

use super::values::{is_truthy, wrong_type};
use crate::error::{Error, ErrorCode, Result};
use bson::{Bson, Document};

/// A command document being read: which fields were taken, and the first error by position.
pub struct Spec<'a> {
    /// The command's name as mongod's messages show it (`find`).
    command: &'static str,
    body: &'a Document,
    /// By position in `body`; the first field (the command's own) is taken by [`Spec::new`].
    taken: Vec<bool>,
    /// The earliest error noted so far, with its field's position.
    error: Option<(usize, Error)>,
    /// An element of one of the command's arrays (`update.updates`): every field is its own,
    /// none generic (`Spec::element`).
    element: bool,
}

impl<'a> Spec<'a> {
    /// Starts reading `body`, whose first field names `command`.
    pub fn new(command: &'static str, body: &'a Document) -> Spec<'a> {
        let mut taken = vec![false; body.len()];
        if let Some(first) = taken.first_mut() {
            *first = true;
        }
        Spec {
            command,
            body,
            taken,
            error: None,
            element: false,
        }
    }

    /// Takes `field`: its value, or `None` when absent.
    pub fn take(&mut self, field: &str) -> Option<&'a Bson> {
        let (position, value) = self.find(field)?;
        if let Some(taken) = self.taken.get_mut(position) {
            *taken = true;
        }
        Some(value)
    }

    /// Notes `error` for `field`'s value (a validator's refusal); the earliest by position wins.
    pub fn refuse(&mut self, field: &str, error: Error) {
        let position = self.find(field).map_or(usize::MAX, |(p, _)| p);
        self.note(position, error);
    }

    /// An optional document.
    pub fn doc(&mut self, field: &str) -> Option<&'a Document> {
        match self.take(field)? {
            Bson::Document(d) => Some(d),
            other => self.wrong(field, other, "object"),
        }
    }

    /// An optional boolean (numbers count by their truthiness, as mongod's parser allows).
    pub fn bool(&mut self, field: &str) -> Option<bool> {
        match self.take(field)? {
            v @ (Bson::Boolean(_) | Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_)) => {
                Some(is_truthy(v))
            }
            other => self.wrong(field, other, "bool"),
        }
    }

    /// An optional whole number, from any numeric BSON type.
    pub fn i64(&mut self, field: &str) -> Option<i64> {
        match self.take(field)? {
            Bson::Int32(n) => Some(i64::from(*n)),
            Bson::Int64(n) => Some(*n),
            Bson::Double(n) if n.fract() == 0.0 && n.abs() < 9.0e18 => Some(*n as i64),
            other => self.wrong(field, other, "[long, int, decimal, double]"),
        }
    }

    /// Ends the reading: the first error in the document's order, a type error or a field
    /// nobody took (`BSON field 'find.foo' is an unknown field.`, 40415).
    pub fn finish(mut self) -> Result<()> {
        let unknown = self
            .body
            .keys()
            .zip(&self.taken)
            .position(|(field, taken)| {
                !taken
                    && (self.element
                        || (!super::generic::is_generic(field)
                            && !super::cluster_fields::is_known(self.command, field)))
            });
        if let Some(position) = unknown {
            let field = self.body.keys().nth(position).map_or("", String::as_str);
            let error = Error::new(
                ErrorCode::IDLUnknownField,
                format!("BSON field '{}.{field}' is an unknown field.", self.command),
            );
            self.note(position, error);
        }
        match self.error {
            Some((_, error)) => Err(error),
            None => Ok(()),
        }
    }

    // Readers the read commands need.

    /// An optional string.
    pub fn str(&mut self, field: &str) -> Option<&'a str> {
        match self.take(field)? {
            Bson::String(s) => Some(s.as_str()),
            other => self.wrong(field, other, "string"),
        }
    }

    /// An optional array of documents (a `pipeline`, `insert.documents`): a value that is no
    /// array, or an element that is no document (`BSON field 'insert.documents.1' is the wrong
    /// type 'int', expected type 'object'`), is noted at the field's position.
    pub fn documents(&mut self, field: &str) -> Option<Vec<&'a Document>> {
        let items = match self.take(field)? {
            Bson::Array(items) => items,
            other => return self.wrong(field, other, "array"),
        };
        let mut documents = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item {
                Bson::Document(d) => documents.push(d),
                other => {
                    let error = wrong_type(self.command, &format!("{field}.{i}"), other, "object");
                    self.refuse(field, error);
                    return None;
                }
            }
        }
        Some(documents)
    }

    /// An optional count that must not be negative (mongod's validator on `skip` and
    /// `batchSize`); `noun` names it in the error (`BatchSize value must be non-negative, but
    /// received: -1`).
    pub fn non_negative(&mut self, field: &str, noun: &str) -> Option<u64> {
        let n = self.i64(field)?;
        if n < 0 {
            let error = Error::bad_value(format!(
                "{noun} value must be non-negative, but received: {n}"
            ));
            self.refuse(field, error);
            return None;
        }
        Some(n.unsigned_abs())
    }

    /// Notes that the required `field` is missing (40414). mongod's parser checks required
    /// fields after reading the others, so this comes after any error by position.
    pub fn require(&mut self, field: &str) {
        if self.find(field).is_none() {
            self.missing(field);
        }
    }

    /// Notes the required `field` as missing (40414), after every error by position.
    fn missing(&mut self, field: &str) {
        let error = Error::new(
            ErrorCode::Location40414,
            format!(
                "BSON field '{}.{field}' is missing but a required field",
                self.command
            ),
        );
        self.note(usize::MAX, error);
    }

    fn find(&self, field: &str) -> Option<(usize, &'a Bson)> {
        self.body
            .iter()
            .enumerate()
            .find(|(_, (name, _))| name.as_str() == field)
            .map(|(position, (_, value))| (position, value))
    }

    fn wrong<T>(&mut self, field: &str, value: &Bson, expected: &str) -> Option<T> {
        let error = wrong_type(self.command, field, value, expected);
        self.refuse(field, error);
        None
    }

    fn note(&mut self, position: usize, error: Error) {
        if self
            .error
            .as_ref()
            .is_none_or(|(first, _)| position < *first)
        {
            self.error = Some((position, error));
        }
    }

    // Readers the write commands need.

    /// Starts reading one element of a command's array of statements: `path` names it in
    /// messages (`update.updates`, as mongod's IDL does, without the index), and every field
    /// is the element's own: none is generic or the cluster's.
    pub fn element(path: &'static str, body: &'a Document) -> Spec<'a> {
        Spec {
            command: path,
            body,
            taken: vec![false; body.len()],
            error: None,
            element: true,
        }
    }

    /// A required value of any type; when absent, `BSON field 'update.updates.u' is missing
    /// but a required field` (40414), after every error of a field present, as mongod checks
    /// the required fields once the document is read.
    pub fn required(&mut self, field: &str) -> Option<&'a Bson> {
        let value = self.take(field);
        if value.is_none() {
            self.missing(field);
        }
        value
    }

    /// A required document.
    pub fn required_doc(&mut self, field: &str) -> Option<&'a Document> {
        match self.required(field)? {
            Bson::Document(d) => Some(d),
            other => self.wrong(field, other, "object"),
        }
    }

    /// An optional array.
    pub fn array(&mut self, field: &str) -> Option<&'a Vec<Bson>> {
        match self.take(field)? {
            Bson::Array(items) => Some(items),
            other => self.wrong(field, other, "array"),
        }
    }

    /// An optional 32-bit integer, of that BSON type only (mongod's IDL `int`: `stmtId`).
    pub fn i32(&mut self, field: &str) -> Option<i32> {
        match self.take(field)? {
            Bson::Int32(n) => Some(*n),
            other => self.wrong(field, other, "int"),
        }
    }

    /// An optional index hint: an index's name or its key pattern (mongod's `indexHint`;
    /// another type is refused with 9, as mongod's parser does).
    pub fn hint(&mut self, field: &str) -> Option<&'a Bson> {
        match self.take(field)? {
            hint @ (Bson::String(_) | Bson::Document(_)) => Some(hint),
            _ => {
                let error = Error::failed_to_parse("Hint must be either a string or nested object");
                self.refuse(field, error);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn read(body: &Document) -> Result<(Option<&Document>, Option<bool>, Option<i64>)> {
        let mut spec = Spec::new("find", body);
        let filter = spec.doc("filter");
        let single = spec.bool("singleBatch");
        let limit = spec.i64("limit");
        spec.finish().map(|()| (filter, single, limit))
    }

    #[test]
    fn fields_are_taken_typed_and_generic_ones_left_to_the_envelope() {
        let body = doc! {"find": "c", "filter": {"a": 1}, "singleBatch": 1, "limit": 2.0,
        "lsid": {"id": 1}, "$db": "d", "maxTimeMS": 5, "stmtId": 0};
        let (filter, single, limit) = read(&body).unwrap();
        assert_eq!(filter, Some(&doc! {"a": 1}));
        assert_eq!((single, limit), (Some(true), Some(2)));
        assert_eq!(read(&doc! {"find": "c"}).unwrap(), (None, None, None));
    }

    #[test]
    fn the_first_bad_field_in_document_order_is_the_error() {
        let cases = [
            (
                doc! {"find": "c", "bogus": 1},
                ErrorCode::IDLUnknownField,
                "BSON field 'find.bogus' is an unknown field.",
            ),
            (
                doc! {"find": "c", "filter": 1},
                ErrorCode::TypeMismatch,
                "BSON field 'find.filter' is the wrong type 'int', expected type 'object'",
            ),
            (
                doc! {"find": "c", "bogus": 1, "filter": 1},
                ErrorCode::IDLUnknownField,
                "BSON field 'find.bogus' is an unknown field.",
            ),
            (
                doc! {"find": "c", "limit": "x", "bogus": 1},
                ErrorCode::TypeMismatch,
                "BSON field 'find.limit' is the wrong type 'string', expected types '[long, int, decimal, double]'",
            ),
            (
                doc! {"find": "c", "singleBatch": "yes", "limit": "x"},
                ErrorCode::TypeMismatch,
                "BSON field 'find.singleBatch' is the wrong type 'string', expected type 'bool'",
            ),
        ];
        for (body, code, message) in cases {
            let err = read(&body).unwrap_err();
            assert_eq!((err.code, err.message.as_str()), (code, message), "{body}");
        }
    }

    #[test]
    fn the_read_commands_readers_note_their_errors_by_position() {
        let cases = [
            (
                doc! {"aggregate": "c", "pipeline": [{"$match": {}}, 1]},
                "BSON field 'aggregate.pipeline.1' is the wrong type 'int', expected type 'object'",
            ),
            (
                doc! {"aggregate": "c", "pipeline": {}},
                "BSON field 'aggregate.pipeline' is the wrong type 'object', expected type 'array'",
            ),
            (
                doc! {"aggregate": "c", "key": 1, "pipeline": []},
                "BSON field 'aggregate.key' is the wrong type 'int', expected type 'string'",
            ),
            (
                doc! {"aggregate": "c", "skip": -2},
                "Skip value must be non-negative, but received: -2",
            ),
            (
                doc! {"aggregate": "c"},
                "BSON field 'aggregate.pipeline' is missing but a required field",
            ),
            // A missing field is reported after every other error.
            (
                doc! {"aggregate": "c", "bogus": 1},
                "BSON field 'aggregate.bogus' is an unknown field.",
            ),
        ];
        for (body, message) in cases {
            let mut spec = Spec::new("aggregate", &body);
            spec.documents("pipeline");
            spec.str("key");
            spec.non_negative("skip", "Skip");
            spec.require("pipeline");
            let err = spec.finish().unwrap_err();
            assert_eq!(err.message, message, "{body}");
        }
        let body = doc! {"aggregate": "c", "pipeline": [{"$match": {}}], "key": "k", "skip": 3};
        let mut spec = Spec::new("aggregate", &body);
        assert_eq!(spec.documents("pipeline"), Some(vec![&doc! {"$match": {}}]));
        assert_eq!(spec.str("key"), Some("k"));
        assert_eq!(spec.non_negative("skip", "Skip"), Some(3));
        spec.require("pipeline");
        spec.finish().unwrap();
    }

    #[test]
    fn a_validators_refusal_takes_its_fields_place() {
        let body = doc! {"find": "c", "skip": -1, "bogus": 1};
        let mut spec = Spec::new("find", &body);
        if spec.i64("skip").is_some_and(|n| n < 0) {
            spec.refuse("skip", Error::bad_value("negative"));
        }
        assert_eq!(spec.finish().unwrap_err().message, "negative");
    }

    #[test]
    fn the_write_readers_type_their_fields() {
        let body = doc! {"update": "c", "u": [{"$set": {"a": 1}}], "q": {"a": 1},
        "arrayFilters": [{"e": 1}], "stmtId": 7, "hint": {"a": 1}, "ids": [1]};
        let mut spec = Spec::new("update", &body);
        assert_eq!(
            spec.required("u").and_then(Bson::as_array).map(Vec::len),
            Some(1)
        );
        assert_eq!(spec.required_doc("q"), Some(&doc! {"a": 1}));
        assert_eq!(spec.documents("arrayFilters"), Some(vec![&doc! {"e": 1}]));
        assert_eq!(spec.i32("stmtId"), Some(7));
        assert_eq!(spec.hint("hint"), Some(&Bson::Document(doc! {"a": 1})));
        assert_eq!(spec.array("ids"), Some(&vec![Bson::Int32(1)]));
        assert_eq!(spec.array("absent"), None);
        spec.finish().unwrap();
    }

    #[test]
    fn an_element_knows_no_generic_field_and_its_required_fields_come_last() {
        let cases = [
            (
                doc! {"q": {}, "comment": "x"},
                ErrorCode::IDLUnknownField,
                "BSON field 'update.updates.comment' is an unknown field.",
            ),
            (
                doc! {"u": {}, "lsid": {}},
                ErrorCode::IDLUnknownField,
                "BSON field 'update.updates.lsid' is an unknown field.",
            ),
            (
                doc! {"u": {}},
                ErrorCode::Location40414,
                "BSON field 'update.updates.q' is missing but a required field",
            ),
            (
                doc! {"hint": 1, "q": 1},
                ErrorCode::FailedToParse,
                "Hint must be either a string or nested object",
            ),
            (
                doc! {"q": {}, "u": {}, "stmtId": 1i64},
                ErrorCode::TypeMismatch,
                "BSON field 'update.updates.stmtId' is the wrong type 'long', expected type 'int'",
            ),
            (
                doc! {"q": {}, "u": {}, "arrayFilters": [{}, []]},
                ErrorCode::TypeMismatch,
                "BSON field 'update.updates.arrayFilters.1' is the wrong type 'array', expected type 'object'",
            ),
        ];
        for (body, code, message) in cases {
            let mut spec = Spec::element("update.updates", &body);
            spec.required_doc("q");
            spec.required("u");
            spec.hint("hint");
            spec.i32("stmtId");
            spec.documents("arrayFilters");
            let err = spec.finish().unwrap_err();
            assert_eq!((err.code, err.message.as_str()), (code, message), "{body}");
        }
    }
}
