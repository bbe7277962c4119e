//! Filter behaviour tables: (document, filter, expected), and each parse error with its code.

use super::*;
use crate::error::ErrorCode;
use bson::{doc, oid::ObjectId, Bson, Document, Regex as BsonRegex};

fn check(cases: &[(Document, Document, bool)]) {
    for (i, (d, filter, expected)) in cases.iter().enumerate() {
        let compiled = Filter::compile(filter).unwrap_or_else(|e| panic!("case {i} {filter}: {e}"));
        assert_eq!(
            compiled.matches(d).unwrap(),
            *expected,
            "case {i}: {filter} on {d}"
        );
    }
}

fn re(pattern: &str, options: &str) -> Bson {
    Bson::RegularExpression(BsonRegex {
        pattern: pattern.into(),
        options: options.into(),
    })
}

#[test]
fn implicit_equality() {
    check(&[
        (doc! {"a": 1}, doc! {}, true),
        (doc! {"a": 1}, doc! {"a": 1}, true),
        (doc! {"a": 1}, doc! {"a": 1.0}, true),
        (doc! {"a": 1_i64}, doc! {"a": 1}, true),
        (doc! {"a": 1}, doc! {"a": 2}, false),
        (doc! {"a": "1"}, doc! {"a": 1}, false),
        (doc! {"a": [1, 2, 3]}, doc! {"a": 2}, true),
        (doc! {"a": [1, 2, 3]}, doc! {"a": [1, 2, 3]}, true),
        (doc! {"a": [1, 2, 3]}, doc! {"a": [1, 2]}, false),
        (doc! {"a": [[1, 2], 3]}, doc! {"a": [1, 2]}, true),
        (doc! {"a": [[1, 2], 3]}, doc! {"a": 1}, false),
        (
            doc! {"a": {"b": 1, "c": 2}},
            doc! {"a": {"b": 1, "c": 2}},
            true,
        ),
        (
            doc! {"a": {"b": 1, "c": 2}},
            doc! {"a": {"c": 2, "b": 1}},
            false,
        ),
        (doc! {"a": {"b": 1}}, doc! {"a.b": 1}, true),
        (doc! {"a": [{"b": 1}, {"b": 2}]}, doc! {"a.b": 2}, true),
        (doc! {"a": [{"b": [5, 6]}]}, doc! {"a.b": 6}, true),
        (doc! {"a": [10, 20]}, doc! {"a.1": 20}, true),
        (doc! {"a": [10, 20]}, doc! {"a.0": 20}, false),
        (doc! {"a": [{"b": 1}, {"b": 2}]}, doc! {"a.1.b": 2}, true),
        (doc! {"a": 1, "b": 2}, doc! {"a": 1, "b": 3}, false),
    ]);
}

#[test]
fn null_matches_missing_but_not_undefined() {
    check(&[
        (doc! {"a": null}, doc! {"a": null}, true),
        (doc! {"b": 1}, doc! {"a": null}, true),
        (doc! {"a": Bson::Undefined}, doc! {"a": null}, false),
        (doc! {"a": 0}, doc! {"a": null}, false),
        (doc! {"a": [1, null]}, doc! {"a": null}, true),
        (doc! {"a": [{"b": 1}, {"c": 1}]}, doc! {"a.b": null}, true),
        (doc! {"a": [{"b": 1}]}, doc! {"a.b": null}, false),
        (doc! {"a": 5}, doc! {"a.b": null}, true),
        (doc! {"a": 1}, doc! {"a": {"$ne": null}}, true),
        (doc! {"b": 1}, doc! {"a": {"$ne": null}}, false),
        (doc! {"b": 1}, doc! {"a": {"$gte": null}}, true),
        (doc! {"b": 1}, doc! {"a": {"$gt": null}}, false),
        (doc! {"b": 1}, doc! {"a": {"$in": [null, 5]}}, true),
        (doc! {"b": 1}, doc! {"a": {"$nin": [null]}}, false),
    ]);
}

#[test]
fn comparisons_stay_in_their_type_bracket() {
    check(&[
        (doc! {"a": 6}, doc! {"a": {"$gt": 5}}, true),
        (doc! {"a": 5}, doc! {"a": {"$gt": 5}}, false),
        (doc! {"a": 5}, doc! {"a": {"$gte": 5.0}}, true),
        (doc! {"a": 5.5}, doc! {"a": {"$lt": 6_i64}}, true),
        (doc! {"a": "x"}, doc! {"a": {"$gt": 5}}, false),
        (doc! {"a": "b"}, doc! {"a": {"$gt": "a"}}, true),
        (doc! {"a": null}, doc! {"a": {"$lt": 5}}, false),
        (doc! {"a": [1, 10]}, doc! {"a": {"$gt": 5, "$lt": 8}}, true),
        (
            doc! {"a": [1, 10]},
            doc! {"a": {"$elemMatch": {"$gt": 5, "$lt": 8}}},
            false,
        ),
        (
            doc! {"a": [6]},
            doc! {"a": {"$elemMatch": {"$gt": 5, "$lt": 8}}},
            true,
        ),
        (doc! {"a": f64::NAN}, doc! {"a": {"$lt": 5}}, false),
        (doc! {"a": f64::NAN}, doc! {"a": {"$gte": f64::NAN}}, true),
        (doc! {"a": f64::NAN}, doc! {"a": {"$gt": f64::NAN}}, false),
        (doc! {"a": "x"}, doc! {"a": {"$lt": Bson::MaxKey}}, true),
        (doc! {"a": "x"}, doc! {"a": {"$gt": Bson::MinKey}}, true),
        (doc! {"a": {"b": 2}}, doc! {"a": {"$gt": {"b": 1}}}, true),
        (doc! {"a": 3}, doc! {"a": {"$ne": 3}}, false),
        (doc! {"a": [1, 3]}, doc! {"a": {"$ne": 3}}, false),
        (doc! {"a": 4}, doc! {"a": {"$ne": 3}}, true),
        (doc! {"a": 4}, doc! {"a": {"$eq": 4.0}}, true),
    ]);
}

#[test]
fn in_nin_all_size_exists_type_mod() {
    let oid = ObjectId::new();
    check(&[
        (doc! {"a": 2}, doc! {"a": {"$in": [1, 2]}}, true),
        (doc! {"a": [5, 2]}, doc! {"a": {"$in": [1, 2]}}, true),
        (doc! {"a": 3}, doc! {"a": {"$in": []}}, false),
        (doc! {"a": "abc"}, doc! {"a": {"$in": [re("^a", "")]}}, true),
        (doc! {"a": 3}, doc! {"a": {"$nin": [1, 2]}}, true),
        (doc! {"a": [3, 1]}, doc! {"a": {"$nin": [1, 2]}}, false),
        (doc! {"a": [1, 2, 3]}, doc! {"a": {"$all": [3, 1]}}, true),
        (doc! {"a": [1, 2, 3]}, doc! {"a": {"$all": [3, 4]}}, false),
        (doc! {"a": [1]}, doc! {"a": {"$all": []}}, false),
        (
            doc! {"a": [{"b": 1}, {"b": 5}]},
            doc! {"a": {"$all": [{"$elemMatch": {"b": {"$gt": 4}}}, {"$elemMatch": {"b": 1}}]}},
            true,
        ),
        (doc! {"a": [1, 2]}, doc! {"a": {"$size": 2}}, true),
        (doc! {"a": [1, 2]}, doc! {"a": {"$size": 3}}, false),
        (doc! {"a": [[1, 2]]}, doc! {"a": {"$size": 2}}, false),
        (doc! {"a": []}, doc! {"a": {"$size": 0}}, true),
        (doc! {"a": 1}, doc! {"a": {"$size": 1}}, false),
        (doc! {"a": null}, doc! {"a": {"$exists": true}}, true),
        (doc! {"b": 1}, doc! {"a": {"$exists": true}}, false),
        (doc! {"b": 1}, doc! {"a": {"$exists": 0}}, true),
        (doc! {"a": 1}, doc! {"a": {"$exists": "false"}}, true),
        (
            doc! {"a": [{"b": 1}, {"c": 1}]},
            doc! {"a.b": {"$exists": false}},
            false,
        ),
        (doc! {"a": "s"}, doc! {"a": {"$type": "string"}}, true),
        (doc! {"a": "s"}, doc! {"a": {"$type": 2}}, true),
        (doc! {"a": 1_i64}, doc! {"a": {"$type": "number"}}, true),
        (
            doc! {"a": 1_i64},
            doc! {"a": {"$type": ["int", "long"]}},
            true,
        ),
        (doc! {"a": 1}, doc! {"a": {"$type": "long"}}, false),
        (doc! {"a": [1]}, doc! {"a": {"$type": "array"}}, true),
        (doc! {"a": [1]}, doc! {"a": {"$type": "int"}}, true),
        (doc! {"a": oid}, doc! {"a": {"$type": "objectId"}}, true),
        (doc! {"a": null}, doc! {"a": {"$type": 10.0}}, true),
        (doc! {"a": 10}, doc! {"a": {"$mod": [4, 2]}}, true),
        (doc! {"a": 10.9}, doc! {"a": {"$mod": [4, 2]}}, true),
        (doc! {"a": -10}, doc! {"a": {"$mod": [4, -2]}}, true),
        (doc! {"a": 11}, doc! {"a": {"$mod": [4, 2]}}, false),
    ]);
}

#[test]
fn logical_operators() {
    check(&[
        (
            doc! {"a": 1, "b": 2},
            doc! {"$and": [{"a": 1}, {"b": 2}]},
            true,
        ),
        (
            doc! {"a": 1, "b": 2},
            doc! {"$and": [{"a": 1}, {"b": 3}]},
            false,
        ),
        (doc! {"a": 1}, doc! {"$or": [{"a": 2}, {"a": 1}]}, true),
        (doc! {"a": 1}, doc! {"$or": [{"a": 2}, {"b": 1}]}, false),
        (doc! {"a": 1}, doc! {"$nor": [{"a": 2}, {"b": 1}]}, true),
        (doc! {"a": 1}, doc! {"$nor": [{"a": 1}]}, false),
        (doc! {"a": 5}, doc! {"a": {"$not": {"$gt": 6}}}, true),
        (doc! {"b": 5}, doc! {"a": {"$not": {"$gt": 6}}}, true),
        (doc! {"a": 7}, doc! {"a": {"$not": {"$gt": 6}}}, false),
        (doc! {"a": "abc"}, doc! {"a": {"$not": re("^a", "")}}, false),
        (doc! {"a": 1}, doc! {"$comment": "hi", "a": 1}, true),
    ]);
}

#[test]
fn regex_matching() {
    check(&[
        (doc! {"a": "Hello"}, doc! {"a": re("^hel", "i")}, true),
        (doc! {"a": "Hello"}, doc! {"a": re("^hel", "")}, false),
        (
            doc! {"a": "Hello"},
            doc! {"a": {"$regex": "^hel", "$options": "i"}},
            true,
        ),
        (
            doc! {"a": "Hello"},
            doc! {"a": {"$options": "i", "$regex": "^hel"}},
            true,
        ),
        (
            doc! {"a": "Hello"},
            doc! {"a": {"$regex": re("ELL", "i")}},
            true,
        ),
        (doc! {"a": ["x", "yes"]}, doc! {"a": re("^y", "")}, true),
        (doc! {"a": 5}, doc! {"a": re("5", "")}, false),
        (doc! {"a": re("x", "i")}, doc! {"a": re("x", "i")}, true),
        (
            doc! {"a": re("x", "i")},
            doc! {"a": {"$eq": re("x", "i")}},
            true,
        ),
        (doc! {"a": "x"}, doc! {"a": {"$eq": re("x", "")}}, false),
    ]);
}

#[test]
fn elem_match_object() {
    check(&[
        (
            doc! {"a": [{"b": 1, "c": 2}, {"b": 2, "c": 1}]},
            doc! {"a": {"$elemMatch": {"b": 1, "c": 1}}},
            false,
        ),
        (
            doc! {"a": [{"b": 1, "c": 2}, {"b": 2, "c": 1}]},
            doc! {"a": {"b": 1, "c": 1}},
            false,
        ),
        (
            doc! {"a": [{"b": 1, "c": 2}, {"b": 2, "c": 1}]},
            doc! {"a.b": 1, "a.c": 1},
            true,
        ),
        (
            doc! {"a": [{"b": 2, "c": 1}]},
            doc! {"a": {"$elemMatch": {"b": 2, "c": {"$lt": 2}}}},
            true,
        ),
        (
            doc! {"a": [{"b": 2}]},
            doc! {"a": {"$elemMatch": {"$or": [{"b": 3}, {"b": 2}]}}},
            true,
        ),
        (
            doc! {"a": {"b": 2}},
            doc! {"a": {"$elemMatch": {"b": 2}}},
            false,
        ),
        (doc! {"a": [1, 2]}, doc! {"a": {"$elemMatch": {}}}, false),
        (doc! {"a": [{}]}, doc! {"a": {"$elemMatch": {}}}, true),
    ]);
}

#[test]
fn errors_carry_mongod_codes() {
    let cases: Vec<(Document, ErrorCode, &str)> = vec![
        (doc! {"a": {"$foo": 1}}, ErrorCode::BadValue, "unknown operator: $foo"),
        (doc! {"a": {"$gt": 1, "b": 1}}, ErrorCode::BadValue, "unknown operator: b"),
        (doc! {"$foo": 1}, ErrorCode::BadValue, "unknown top level operator: $foo. If you have a field name that starts with a '$' symbol, consider using $getField or $setField."),
        (doc! {"$and": []}, ErrorCode::BadValue, "$and/$or/$nor must be a nonempty array"),
        (doc! {"$or": {"a": 1}}, ErrorCode::BadValue, "$or must be an array"),
        (doc! {"$nor": [1]}, ErrorCode::BadValue, "$or/$and/$nor entries need to be full objects"),
        (doc! {"a": {"$in": 1}}, ErrorCode::BadValue, "$in needs an array"),
        (doc! {"a": {"$nin": 1}}, ErrorCode::BadValue, "$nin needs an array"),
        (doc! {"a": {"$in": [{"$gt": 1}]}}, ErrorCode::BadValue, "cannot nest $ under $in"),
        (doc! {"a": {"$not": 5}}, ErrorCode::BadValue, "$not needs a regex or a document"),
        (doc! {"a": {"$not": {}}}, ErrorCode::BadValue, "$not cannot be empty"),
        (doc! {"a": {"$size": "x"}}, ErrorCode::BadValue, "$size needs a number"),
        (doc! {"a": {"$size": -1}}, ErrorCode::BadValue, "$size may not be negative"),
        (doc! {"a": {"$size": 1.5}}, ErrorCode::BadValue, "$size must be a whole number"),
        (doc! {"a": {"$all": 1}}, ErrorCode::BadValue, "$all needs an array"),
        (doc! {"a": {"$elemMatch": 1}}, ErrorCode::BadValue, "$elemMatch needs an Object"),
        (doc! {"a": {"$mod": [0, 1]}}, ErrorCode::BadValue, "divisor cannot be 0"),
        (doc! {"a": {"$mod": [1]}}, ErrorCode::BadValue, "malformed mod, not enough elements"),
        (doc! {"a": {"$mod": 1}}, ErrorCode::BadValue, "malformed mod, needs to be an array"),
        (doc! {"a": {"$type": "foo"}}, ErrorCode::BadValue, "Unknown type name alias: foo"),
        (doc! {"a": {"$type": 99}}, ErrorCode::BadValue, "Invalid numerical type code: 99"),
        (doc! {"a": {"$type": true}}, ErrorCode::TypeMismatch, "type must be represented as a number or a string"),
        (doc! {"a": {"$options": "i"}}, ErrorCode::BadValue, "$options needs a $regex"),
        (doc! {"a": {"$regex": 1}}, ErrorCode::BadValue, "$regex has to be a string"),
        (doc! {"a": {"$regex": re("a", "i"), "$options": "m"}}, ErrorCode::Location51075, "options set in both $regex and $options"),
        (doc! {"a": {"$gt": re("a", "")}}, ErrorCode::BadValue, "Can't have RegEx as arg to predicate over field 'a'."),
        // mongod parses `$elemMatch`'s value case with an empty path.
        (doc! {"a": {"$elemMatch": {"$gt": re("a", "")}}}, ErrorCode::BadValue, "Can't have RegEx as arg to predicate over field ''."),
        (doc! {"a": {"$elemMatch": {"$expr": {"$eq": ["$a", 1]}}}}, ErrorCode::BadValue, "$expr can only be applied to the top-level document"),
        (doc! {"$expr": {"$nope": 1}}, ErrorCode::InvalidPipelineOperator, "Unrecognized expression '$nope'"),
    ];
    for (filter, code, message) in cases {
        let err = Filter::compile(&filter).unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            (code, message),
            "{filter}"
        );
    }
    assert_eq!(
        Filter::compile(&doc! {"a": re("(", "")}).unwrap_err().code,
        ErrorCode::Location51091
    );
}

#[test]
fn upsert_equality_fields() {
    let cases: Vec<(Document, Document)> = vec![
        (doc! {"a": 1, "b": {"$gt": 1}}, doc! {"a": 1}),
        (
            doc! {"a.b": 1, "c": {"$eq": 2}},
            doc! {"a": {"b": 1}, "c": 2},
        ),
        (
            doc! {"$and": [{"x": 1}, {"y": {"$in": [2]}}], "$or": [{"z": 1}]},
            doc! {"x": 1, "y": 2},
        ),
        (doc! {"_id": 7, "r": re("a", "")}, doc! {"_id": 7}),
        (doc! {"d": {"k": {"$gt": 1}}}, doc! {"d": {"k": {"$gt": 1}}}),
    ];
    for (filter, expected) in cases {
        assert_eq!(equality_fields(&filter).unwrap(), expected, "{filter}");
    }
    let err = equality_fields(&doc! {"a": 1, "$and": [{"a": 2}]}).unwrap_err();
    assert_eq!(err.code, ErrorCode::NotSingleValueField);
    let err = equality_fields(&doc! {"a": 1, "a.b": 2}).unwrap_err();
    assert_eq!(
        err.message,
        "cannot infer query fields to set, both paths 'a' and 'a.b' are matched"
    );
}

#[test]
fn positional_match_index() {
    let cases: Vec<(Document, Document, Option<usize>)> = vec![
        (doc! {"a": [1, 5, 9]}, doc! {"a": {"$gt": 4}}, Some(1)),
        (doc! {"a": [1, 5, 9]}, doc! {"a": 9}, Some(2)),
        (
            doc! {"_id": 1, "a": [{"b": 1}, {"b": 2}]},
            doc! {"_id": 1, "a.b": 2},
            Some(1),
        ),
        (
            doc! {"a": [{"b": 1, "c": 1}, {"b": 2, "c": 2}]},
            doc! {"a": {"$elemMatch": {"b": 2, "c": 2}}},
            Some(1),
        ),
        (doc! {"a": 1}, doc! {"a": 1}, None),
        (doc! {"x": {"a": [3, 4]}}, doc! {"x.a": 4}, Some(1)),
    ];
    for (d, filter, expected) in cases {
        let compiled = Filter::compile(&filter).unwrap();
        assert!(compiled.matches(&d).unwrap(), "{filter} should match {d}");
        assert_eq!(compiled.positional_match(&d), expected, "{filter} on {d}");
    }
}

#[test]
fn matching_stored_bytes_agrees_with_matching_documents() {
    let docs = [
        doc! {"_id": 1, "a": 5, "b": {"c": [1, 2]}, "s": "abc"},
        doc! {"_id": 2, "b": {"c": 3}},
        doc! {"_id": 3, "a": null, "s": "x"},
        doc! {"_id": 4, "a": [4, 5, 6]},
    ];
    let filters = [
        doc! {},
        doc! {"a": 5},
        doc! {"a": null},
        doc! {"b.c": {"$gte": 2}},
        doc! {"$or": [{"s": {"$regex": "^a"}}, {"a": {"$exists": false}}]},
        doc! {"a": {"$elemMatch": {"$gt": 5}}},
        doc! {"$nor": [{"a": 5}], "_id": {"$lt": 4}},
    ];
    for f in &filters {
        let filter = Filter::compile(f).unwrap();
        for d in &docs {
            let mut bytes = Vec::new();
            d.to_writer(&mut bytes).unwrap();
            let raw = bson::RawDocument::from_bytes(&bytes).unwrap();
            assert_eq!(
                filter.matches_raw(raw).unwrap(),
                filter.matches(d).unwrap(),
                "{f} on {d}"
            );
        }
    }
}

#[test]
fn a_regex_out_of_budget_is_an_error_wherever_a_filter_meets_it() {
    let text = format!("{}c", "a".repeat(28));
    let slow = "^(a+)+$|c$";
    let doc = doc! {"s": text.clone(), "arr": [{"s": text.clone()}]};
    for filter in [
        doc! {"s": {"$regex": slow}},
        doc! {"s": {"$in": [bson::Bson::RegularExpression(bson::Regex {
            pattern: slow.into(),
            options: String::new(),
        })]}},
        doc! {"arr": {"$elemMatch": {"s": {"$regex": slow}}}},
        doc! {"$or": [{"x": 1}, {"s": {"$not": {"$regex": slow}}}]},
    ] {
        let compiled = Filter::compile(&filter).unwrap();
        let err = compiled.matches(&doc).unwrap_err();
        assert_eq!(err.code, ErrorCode::Location51156, "{filter}");
    }
    // The failure belongs to that evaluation only.
    let fine = Filter::compile(&doc! {"s": {"$regex": "c$"}}).unwrap();
    assert!(fine.matches(&doc).unwrap());
    let projection = crate::query::projection::Projection::find(
        &doc! {"arr": {"$elemMatch": {"s": {"$regex": slow}}}},
        &Filter::compile(&doc! {}).unwrap(),
        &crate::query::expr::Variables::default(),
    )
    .unwrap();
    assert_eq!(
        projection.apply(&doc).unwrap_err().code,
        ErrorCode::Location51156
    );
}

#[test]
fn expr_matches_when_its_value_is_truthy_and_fails_the_match_on_error() {
    let vars = crate::query::expr::Variables::new(bson::DateTime::from_millis(0))
        .with_let(Some(&doc! {"limit": 5}))
        .unwrap();
    let cases = [
        (
            doc! {"$expr": {"$gt": ["$a", "$b"]}},
            doc! {"a": 3, "b": 2},
            true,
        ),
        (
            doc! {"$expr": {"$gt": ["$a", "$b"]}},
            doc! {"a": 1, "b": 2},
            false,
        ),
        (
            doc! {"$expr": {"$lt": ["$a", "$$limit"]}},
            doc! {"a": 4},
            true,
        ),
        (doc! {"$expr": "$flag"}, doc! {"flag": 0}, false),
        (
            doc! {"$or": [{"x": 1}, {"$expr": {"$eq": ["$a", 4]}}]},
            doc! {"a": 4},
            true,
        ),
        (
            doc! {"b": 2, "$expr": {"$eq": ["$a", 4]}},
            doc! {"a": 4, "b": 3},
            false,
        ),
    ];
    for (filter, d, want) in cases {
        let f = Filter::compile_full(&filter, None, &vars).unwrap();
        assert_eq!(f.matches(&d).unwrap(), want, "{filter} on {d}");
        // The stored-document path decodes every field for an $expr.
        let raw = bson::RawDocumentBuf::from_document(&d).unwrap();
        assert_eq!(f.matches_raw(&raw).unwrap(), want, "{filter} on raw {d}");
    }
    let f = Filter::compile_full(&doc! {"$expr": {"$divide": [1, "$z"]}}, None, &vars).unwrap();
    assert!(f.matches(&doc! {"z": 0}).is_err());
}
