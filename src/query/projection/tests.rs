//! Tables of projections under both policies: what each returns, and mongod's error for what
//! each refuses.

use super::{Policy, Projection, Source};
use crate::error::ErrorCode;
use crate::query::expr::Variables;
use crate::query::filter::Filter;
use bson::{doc, Bson, DateTime, Document};

fn vars() -> Variables {
    Variables::new(DateTime::from_millis(86_400_000))
        .with_let(Some(&doc! {"greeting": "hi"}))
        .unwrap()
}

fn compile(policy: Policy, spec: &Document, query: &Document) -> crate::error::Result<Projection> {
    match policy {
        Policy::Find => Projection::find(spec, &Filter::compile(query).unwrap(), &vars()),
        Policy::Aggregation => Projection::aggregation(spec, &vars()),
    }
}

fn project(policy: Policy, spec: Document, query: Document, d: &Document) -> Document {
    let filter = Filter::compile(&query).unwrap();
    let p = compile(policy, &spec, &query).unwrap_or_else(|e| panic!("{spec}: {e:?}"));
    let id = Bson::Int64(7);
    let source = Source {
        query: Some(&filter),
        record_id: Some(&id),
    };
    p.apply_from(d, source)
        .unwrap_or_else(|e| panic!("{spec}: {e:?}"))
}

/// Inclusion, exclusion, `_id`, dotted and nested paths, and computed fields at any depth:
/// the same answers under both policies.
#[test]
fn shared_forms() {
    let d = doc! {"_id": 1, "a": 1, "b": {"c": 2, "d": 3}, "e": [{"c": 4, "x": 1}, 5, {"x": 2}]};
    let cases: Vec<(Document, Document)> = vec![
        (doc! {"a": 1}, doc! {"_id": 1, "a": 1}),
        (doc! {"a": true, "_id": 0}, doc! {"a": 1}),
        (
            doc! {"a": 0},
            doc! {"_id": 1, "b": {"c": 2, "d": 3}, "e": [{"c": 4, "x": 1}, 5, {"x": 2}]},
        ),
        (doc! {"_id": 1}, doc! {"_id": 1}),
        (
            doc! {"_id": 1, "a": 0},
            doc! {"_id": 1, "b": {"c": 2, "d": 3}, "e": [{"c": 4, "x": 1}, 5, {"x": 2}]},
        ),
        (doc! {"b.c": 1}, doc! {"_id": 1, "b": {"c": 2}}),
        (doc! {"b": {"c": 1}}, doc! {"_id": 1, "b": {"c": 2}}),
        (doc! {"e.c": 1}, doc! {"_id": 1, "e": [{"c": 4}, {}]}),
        (
            doc! {"b.c": 0, "e.x": 0},
            doc! {"_id": 1, "a": 1, "b": {"d": 3}, "e": [{"c": 4}, 5, {}]},
        ),
        (doc! {"a": 1.5, "z": 2_i64}, doc! {"_id": 1, "a": 1}),
        // Computed fields come after the kept ones, in the projection's order.
        (
            doc! {"lit": "x", "a": 1},
            doc! {"_id": 1, "a": 1, "lit": "x"},
        ),
        (doc! {"s": {"$add": ["$a", 1]}, "_id": 0}, doc! {"s": 2}),
        (
            doc! {"b.s": {"$add": ["$a", "$b.c"]}, "b.c": 1},
            doc! {"_id": 1, "b": {"c": 2, "s": 3}},
        ),
        (
            doc! {"b": {"s": {"$literal": 9}}, "_id": 0},
            doc! {"b": {"s": 9}},
        ),
        (doc! {"a.s": "$b.d", "_id": 0}, doc! {"a": {"s": 3}}),
        // The first pass drops the scalar element; the second sets `y` in what is left.
        (
            doc! {"e.y": "$a", "_id": 0},
            doc! {"e": [{"y": 1}, {"y": 1}]},
        ),
        (doc! {"n": "$missing", "a": 1}, doc! {"_id": 1, "a": 1}),
        (doc! {"g": "$$greeting", "_id": 0}, doc! {"g": "hi"}),
        (
            doc! {"t": "$$NOW", "_id": 0},
            doc! {"t": DateTime::from_millis(86_400_000)},
        ),
        (doc! {"arr": [1, "$a"], "_id": 0}, doc! {"arr": [1, 1]}),
        (doc! {"_id": "$a"}, doc! {"_id": 1}),
    ];
    for policy in [Policy::Find, Policy::Aggregation] {
        for (spec, expected) in &cases {
            let got = project(policy, spec.clone(), doc! {}, &d);
            assert_eq!(&got, expected, "{policy:?} {spec}");
        }
    }
}

/// Arrays nested in arrays: find walks into them, `$project` leaves them be (mongod's
/// `ArrayRecursionPolicy`).
#[test]
fn nested_arrays_differ_by_policy() {
    let d = doc! {"_id": 1, "a": [{"b": 1, "c": 1}, [{"b": 2, "c": 2}]]};
    let cases = [
        (
            Policy::Find,
            doc! {"a.b": 1},
            doc! {"_id": 1, "a": [{"b": 1}, [{"b": 2}]]},
        ),
        (
            Policy::Aggregation,
            doc! {"a.b": 1},
            doc! {"_id": 1, "a": [{"b": 1}]},
        ),
        (
            Policy::Find,
            doc! {"a.b": 0},
            doc! {"_id": 1, "a": [{"c": 1}, [{"c": 2}]]},
        ),
        (
            Policy::Aggregation,
            doc! {"a.b": 0},
            doc! {"_id": 1, "a": [{"c": 1}, [{"b": 2, "c": 2}]]},
        ),
    ];
    for (policy, spec, expected) in cases {
        assert_eq!(
            project(policy, spec.clone(), doc! {}, &d),
            expected,
            "{policy:?} {spec}"
        );
    }
}

/// find's operators: `$slice`, `$elemMatch`, positional `$`, `$meta: "recordId"`.
#[test]
fn find_operators() {
    let d = doc! {"_id": 1, "a": [1, 2, 3, 4, 5], "b": [{"x": 1, "y": 1}, {"x": 2, "y": 2}, {"x": 3, "y": 3}], "c": 1};
    let cases: Vec<(Document, Document, Document)> = vec![
        (
            doc! {"a": {"$slice": 2}},
            doc! {},
            doc! {"_id": 1, "a": [1, 2], "b": d.get_array("b").unwrap().clone(), "c": 1},
        ),
        (
            doc! {"a": {"$slice": -2}, "b": 0, "c": 0},
            doc! {},
            doc! {"_id": 1, "a": [4, 5]},
        ),
        (
            doc! {"a": {"$slice": [1, 2]}, "c": 1},
            doc! {},
            doc! {"_id": 1, "a": [2, 3], "c": 1},
        ),
        (
            doc! {"a": {"$slice": [-2, 5]}, "_id": 0, "c": 1},
            doc! {},
            doc! {"a": [4, 5], "c": 1},
        ),
        (
            doc! {"a": {"$slice": [10, 1]}, "c": 1},
            doc! {},
            doc! {"_id": 1, "a": [], "c": 1},
        ),
        (
            doc! {"_id": 1, "a": {"$slice": 1}},
            doc! {},
            doc! {"_id": 1, "a": [1]},
        ),
        (
            doc! {"b.x": {"$slice": 1}, "c": 1},
            doc! {},
            doc! {"_id": 1, "b": [{"x": 1}, {"x": 2}, {"x": 3}], "c": 1},
        ),
        // The expression `$slice` when find's form does not fit.
        (
            doc! {"s": {"$slice": ["$a", 1, 2]}, "_id": 0},
            doc! {},
            doc! {"s": [2, 3]},
        ),
        // `$elemMatch` comes after the kept fields, whatever its place in the projection.
        (
            doc! {"b": {"$elemMatch": {"x": {"$gte": 2}}}, "c": 1},
            doc! {},
            doc! {"_id": 1, "c": 1, "b": [{"x": 2, "y": 2}]},
        ),
        (
            doc! {"b": {"$elemMatch": {"x": 9}}, "c": 1},
            doc! {},
            doc! {"_id": 1, "c": 1},
        ),
        (
            doc! {"a": {"$elemMatch": {"$gt": 3}}},
            doc! {},
            doc! {"_id": 1, "a": [4]},
        ),
        (
            doc! {"a.$": 1},
            doc! {"a": {"$gt": 2}},
            doc! {"_id": 1, "a": [3]},
        ),
        (
            doc! {"b.$": 1, "_id": 0},
            doc! {"b.x": 2},
            doc! {"b": [{"x": 2, "y": 2}]},
        ),
        (
            doc! {"b.y.$": 1, "_id": 0},
            doc! {"b.x": 3},
            doc! {"b": [{"y": 3}]},
        ),
        (doc! {"c.$": 1}, doc! {"c": 1}, doc! {"_id": 1, "c": 1}),
        (
            doc! {"r": {"$meta": "recordId"}, "c": 1},
            doc! {},
            doc! {"_id": 1, "c": 1, "r": 7_i64},
        ),
        (
            doc! {"r": {"$meta": "recordId"}, "a": 0, "b": 0},
            doc! {},
            doc! {"_id": 1, "c": 1, "r": 7_i64},
        ),
    ];
    for (spec, query, expected) in cases {
        assert_eq!(
            project(Policy::Find, spec.clone(), query, &d),
            expected,
            "{spec}"
        );
    }
}

#[test]
fn positional_without_a_matched_element_fails() {
    let d = doc! {"_id": 1, "a": [1, 2], "b": 1};
    let filter = Filter::compile(&doc! {"$or": [{"a": 1}, {"a": 2}]}).unwrap();
    let p = Projection::find(&doc! {"a.$": 1}, &filter, &vars()).unwrap();
    let source = Source {
        query: Some(&filter),
        record_id: None,
    };
    assert_eq!(
        p.apply_from(&d, source).unwrap_err().code,
        ErrorCode::Location51246
    );
}

/// What each policy refuses, with mongod's code and message.
#[test]
fn errors() {
    use ErrorCode::*;
    let find_and_agg: Vec<(Document, ErrorCode, &str)> = vec![
        (doc! {"a": 1, "b": 0}, Location31254, "Cannot do exclusion on field b in inclusion projection"),
        (doc! {"a": 0, "b": 1}, Location31253, "Cannot do inclusion on field b in exclusion projection"),
        (doc! {"a": 1, "a.b": 1}, Location31249, "Path collision at a.b remaining portion b"),
        (doc! {"a.b": 1, "a": 1}, Location31250, "Path collision at a"),
        (doc! {"a": 0, "x": {"$add": [1, 2]}}, Location31252, "Cannot use expression other than $meta in exclusion projection"),
        (doc! {"a": 0, "x": "lit"}, Location31310, "Cannot use an expression x: \"lit\" in an exclusion projection"),
        (doc! {"a": {}}, Location51270, "An empty sub-projection is not a valid value. Found empty object at path"),
        (doc! {"$a": 1}, Location16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField. (field: $a)"),
        (doc! {"a..b": 1}, Location15998, "FieldPath field names may not be empty strings."),
        (doc! {"x": {"$nope": 1}}, InvalidPipelineOperator, "Unrecognized expression '$nope'"),
    ];
    let find_only: Vec<(Document, Document, ErrorCode, &str)> = vec![
        (doc! {"a.$": 1}, doc! {"b": 1}, Location31277, "Positional projection 'a.$' does not match the query document."),
        (doc! {"a.$": 1, "b.$": 1}, doc! {"a": 1, "b": 1}, Location31276, "Cannot specify more than one positional projection per query."),
        (doc! {"a.$.$": 1}, doc! {"a": 1}, Location31287, "Cannot use positional operator twice: a.$.$"),
        (doc! {"b": {"$elemMatch": {"x": 1}}, "a.$": 1}, doc! {"a": 1}, Location31256, "Cannot specify positional operator and $elemMatch."),
        (doc! {"a.$": 1, "b": {"$elemMatch": {"x": 1}}}, doc! {"a": 1}, Location31255, "Cannot specify positional operator and $elemMatch."),
        (doc! {"a.$": {"$add": [1]}}, doc! {"a": 1}, Location31271, "positional projection cannot be used with an expression or sub object"),
        (doc! {"a.$": "x"}, doc! {"a": 1}, Location31308, "positional projection cannot be used with a literal"),
        (doc! {"a": 0, "b.$": 1}, doc! {"b": 1}, Location31253, "Cannot do inclusion on field b.$ in exclusion projection"),
        (doc! {"a.b": {"$elemMatch": {"x": 1}}}, doc! {}, Location31275, "Cannot use $elemMatch projection on a nested field."),
        (doc! {"a": {"b": {"$elemMatch": {"x": 1}}}}, doc! {}, Location31275, "Cannot use $elemMatch projection on a nested field."),
        (doc! {"a": {"$elemMatch": 1}}, doc! {}, Location31274, "elemMatch: Invalid argument, object required, but got int"),
        (doc! {"a": {"$slice": "x"}}, doc! {}, Location28667, "Invalid $slice syntax. The given syntax { \"$slice\": \"x\" } did not match the find() syntax because :: Location31273: $slice only supports numbers and [skip, limit] arrays :: The given syntax did not match the expression $slice syntax. :: caused by :: "),
        (doc! {"s": {"$meta": "textScore"}}, doc! {}, Location40218, "query requires text score metadata, but it is not available"),
        (doc! {"s": {"$meta": "nope"}}, doc! {}, Location17308, "Unsupported argument to $meta: nope"),
    ];
    let aggregation_only: Vec<(Document, ErrorCode, &str)> = vec![
        (
            doc! {"a.$": 1},
            Location31324,
            "Cannot use positional projection in aggregation projection",
        ),
        (
            doc! {"a": {"$elemMatch": {"x": 1}}},
            InvalidPipelineOperator,
            "Cannot use $elemMatch in this context",
        ),
    ];
    for policy in [Policy::Find, Policy::Aggregation] {
        for (spec, code, message) in &find_and_agg {
            let err = compile(policy, spec, &doc! {}).unwrap_err();
            assert_eq!(
                (err.code, err.message.as_str()),
                (*code, *message),
                "{policy:?} {spec}"
            );
        }
    }
    for (spec, query, code, message) in find_only {
        let err = compile(Policy::Find, &spec, &query).unwrap_err();
        assert_eq!(err.code, code, "{spec}: {}", err.message);
        assert!(err.message.contains(message), "{spec}: {}", err.message);
    }
    for (spec, code, message) in aggregation_only {
        let err = compile(Policy::Aggregation, &spec, &doc! {}).unwrap_err();
        assert_eq!((err.code, err.message.as_str()), (code, message), "{spec}");
    }
}
