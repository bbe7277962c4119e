//! Update error tables: each parse and apply error with mongod's code and message.

use super::*;
use bson::{doc, DateTime, Document};

fn now() -> DateTime {
    DateTime::from_millis(1_700_000_000_000)
}

fn parse_error(update: Document) -> crate::error::Error {
    Update::parse(&update).unwrap_err()
}

pub(super) fn apply_error(d: Document, update: Document) -> crate::error::Error {
    let mut d = d;
    let original = d.clone();
    let err = Update::parse(&update)
        .unwrap()
        .apply(&mut d, &UpdateContext::new(now()))
        .unwrap_err();
    assert_eq!(d, original, "failed update must not modify the document");
    err
}

#[test]
fn parse_errors() {
    let cases: Vec<(Document, ErrorCode, &str)> = vec![
        (doc! {"$foo": {"a": 1}}, ErrorCode::FailedToParse, "Unknown modifier: $foo. Expected a valid update modifier or pipeline-style update specified as an array"),
        (doc! {"$set": {"a": 1}, "b": 1}, ErrorCode::FailedToParse, "Unknown modifier: b. Expected a valid update modifier or pipeline-style update specified as an array"),
        (doc! {"a": 1, "$set": {"b": 1}}, ErrorCode::DollarPrefixedFieldName, "The dollar ($) prefixed field '$set' in '$set' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith."),
        (doc! {"$set": 1}, ErrorCode::FailedToParse, "Modifiers operate on fields but we found type int instead. For example: {$mod: {<field>: ...}} not {$set: 1}"),
        (doc! {"$set": {"a": 1}, "$inc": {"a": 1}}, ErrorCode::ConflictingUpdateOperators, "Updating the path 'a' would create a conflict at 'a'"),
        (doc! {"$set": {"a": 1}, "$inc": {"a.b": 1}}, ErrorCode::ConflictingUpdateOperators, "Updating the path 'a.b' would create a conflict at 'a'"),
        (doc! {"$set": {"a.b": 1}, "$unset": {"a": 1}}, ErrorCode::ConflictingUpdateOperators, "Updating the path 'a' would create a conflict at 'a'"),
        (doc! {"$inc": {"a": "x"}}, ErrorCode::TypeMismatch, "Cannot increment with non-numeric argument: {a: \"x\"}"),
        (doc! {"$mul": {"a": "x"}}, ErrorCode::TypeMismatch, "Cannot multiply with non-numeric argument: {a: \"x\"}"),
        (doc! {"$rename": {"a": "a"}}, ErrorCode::BadValue, "The source and target field for $rename must differ: a"),
        (doc! {"$rename": {"a": "a.b"}}, ErrorCode::BadValue, "The source and target field for $rename must not be on the same path: a"),
        (doc! {"$rename": {"a": 1}}, ErrorCode::BadValue, "The 'to' field for $rename must be a string: a: 1"),
        (doc! {"$rename": {"a": "b\0c"}}, ErrorCode::BadValue, "The 'to' field for $rename cannot contain an embedded null byte"),
        (doc! {"$set": {"": 1}}, ErrorCode::EmptyFieldName, "An empty update path is not valid."),
        (doc! {"$set": {"a..b": 1}}, ErrorCode::EmptyFieldName, "The update path 'a..b' contains an empty field name, which is not allowed."),
        (doc! {"$pop": {"a": 2}}, ErrorCode::FailedToParse, "$pop expects 1 or -1, found: 2"),
        (doc! {"$push": {"a": {"$each": 1}}}, ErrorCode::BadValue, "The argument to $each in $push must be an array but it was of type: int"),
        (doc! {"$push": {"a": {"$each": [], "$foo": 1}}}, ErrorCode::BadValue, "Unrecognized clause in $push: $foo"),
        (doc! {"$pullAll": {"a": 1}}, ErrorCode::BadValue, "$pullAll requires an array argument but was given a int"),
        (doc! {"$currentDate": {"a": {"$type": "x"}}}, ErrorCode::BadValue, "The '$type' string field is required to be 'date' or 'timestamp': {$currentDate: {field : {$type: 'date'}}}"),
    ];
    for (update, code, message) in cases {
        let err = parse_error(update.clone());
        assert_eq!(
            (err.code, err.message.as_str()),
            (code, message),
            "{update}"
        );
    }
}

#[test]
fn apply_errors() {
    let cases: Vec<(Document, Document, ErrorCode, &str)> = vec![
        (doc! {"_id": 1}, doc! {"$set": {"_id": 2}}, ErrorCode::ImmutableField, "Performing an update on the path '_id' would modify the immutable field '_id'"),
        (doc! {"_id": 1}, doc! {"$unset": {"_id": 1}}, ErrorCode::ImmutableField, "Performing an update on the path '_id' would modify the immutable field '_id'"),
        (doc! {"_id": 1, "a": "x"}, doc! {"$inc": {"a": 1}}, ErrorCode::TypeMismatch, "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 'a' of non-numeric type string"),
        (doc! {"_id": 1, "a": "x"}, doc! {"$push": {"a": 1}}, ErrorCode::BadValue, "The field 'a' must be an array but is of type string in document {_id: 1}"),
        (doc! {"_id": 1, "a": 1}, doc! {"$set": {"a.b": 1}}, ErrorCode::PathNotViable, "Cannot create field 'b' in element {a: 1}"),
        (doc! {"_id": 1, "a": 1}, doc! {"$pull": {"a": 1}}, ErrorCode::BadValue, "Cannot apply $pull to a non-array value"),
        (doc! {"_id": 1, "a": 1}, doc! {"$pop": {"a": 1}}, ErrorCode::TypeMismatch, "Path 'a' contains an element of non-array type 'int'"),
        (doc! {"_id": 1, "a": 1}, doc! {"$addToSet": {"a": 1}}, ErrorCode::BadValue, "Cannot apply $addToSet to non-array field. Field named 'a' has non-array type int"),
        (doc! {"_id": 1, "a": i64::MAX}, doc! {"$inc": {"a": 1}}, ErrorCode::BadValue, "Failed to apply $inc operations to current value (9223372036854775807) for document {_id: 1}"),
        (doc! {"_id": 1, "a": 1}, doc! {"$set": {"a.$[]": 1}}, ErrorCode::BadValue, "Cannot apply array updates to non-array element a: 1"),
        (doc! {"_id": 1}, doc! {"$set": {"a.$[]": 1}}, ErrorCode::BadValue, "The path 'a' must exist in the document in order to apply array updates."),
        (doc! {"_id": 1, "a": [[1]]}, doc! {"$rename": {"a.0": "b"}}, ErrorCode::BadValue, "The source field cannot be an array element, 'a.0' in doc with a being an array"),
    ];
    for (d, update, code, message) in cases {
        let err = apply_error(d, update.clone());
        assert_eq!(
            (err.code, err.message.as_str()),
            (code, message),
            "{update}"
        );
    }
    let err = run_replacement_error();
    assert_eq!(err.code, ErrorCode::ImmutableField);
    assert_eq!(err.message, "After applying the update, the (immutable) field '_id' was found to have been altered to _id: 2");
}

fn run_replacement_error() -> crate::error::Error {
    let mut d = doc! {"_id": 1, "a": 1};
    Update::parse(&doc! {"_id": 2, "a": 1})
        .unwrap()
        .apply(&mut d, &UpdateContext::new(now()))
        .unwrap_err()
}

#[test]
fn array_filter_errors() {
    let update = Update::parse(&doc! {"$set": {"a.$[x]": 1}}).unwrap();
    let cases: Vec<(Vec<Document>, ErrorCode, &str)> = vec![
        (vec![], ErrorCode::BadValue, "No array filter found for identifier 'x' in path 'a.$[x]'"),
        (vec![doc! {"x": 1}, doc! {"y": 1}], ErrorCode::FailedToParse, "The array filter for identifier 'y' was not used in the update"),
        (vec![doc! {"x": 1}, doc! {"x": 2}], ErrorCode::FailedToParse, "Found multiple array filters with the same top-level field name x"),
        (vec![doc! {"x": 1, "y": 1}], ErrorCode::FailedToParse, "Error parsing array filter :: caused by :: Expected a single top-level field name, found 'x' and 'y'"),
        (vec![doc! {"X": 1}], ErrorCode::BadValue, "Error parsing array filter :: caused by :: The top-level field name must be an alphanumeric string beginning with a lowercase letter, found 'X'"),
    ];
    for (filters, code, message) in cases {
        let err = ArrayFilters::compile(&filters, &update).unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            (code, message),
            "{filters:?}"
        );
    }
}
