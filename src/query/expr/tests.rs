//! The core: field paths, variables and scopes, documents and arrays, `$let`, `$map`,
//! `$filter`, `$reduce`, `$literal`. Each operator family has its own table beside it.

use super::{Expression, Variables};
use crate::error::ErrorCode;
use bson::{bson, doc, Bson, DateTime, Document};

fn vars() -> Variables {
    Variables::new(DateTime::from_millis(1_700_000_000_000))
}

pub(crate) fn eval_with(
    spec: Bson,
    d: &Document,
    vars: &Variables,
) -> Result<Option<Bson>, ErrorCode> {
    Expression::compile(&spec, vars)
        .and_then(|e| e.eval(d))
        .map_err(|e| e.code)
}

pub(crate) fn eval(spec: Bson, d: &Document) -> Result<Option<Bson>, ErrorCode> {
    eval_with(spec, d, &vars())
}

#[test]
fn field_paths_map_over_arrays() {
    let d = doc! {"a": [{"b": 1}, {"c": 2}, {"b": [3, 4]}, 5, [{"b": 6}]], "x": {"y": 7}};
    let cases = [
        (bson!("$a.b"), Some(bson!([1, [3, 4], [6]]))),
        (bson!("$x.y"), Some(bson!(7))),
        (bson!("$x.z"), None),
        (bson!("$$ROOT.x"), Some(bson!({"y": 7}))),
        (bson!("$$CURRENT.x.y"), Some(bson!(7))),
        (bson!("$$REMOVE"), None),
    ];
    for (spec, want) in cases {
        assert_eq!(eval(spec.clone(), &d), Ok(want), "{spec}");
    }
}

#[test]
fn documents_drop_missing_fields_and_arrays_fill_null() {
    let d = doc! {"a": 1};
    let cases = [
        (bson!({"k": "$a", "m": "$nope"}), bson!({"k": 1})),
        (bson!(["$nope", "$a"]), bson!([null, 1])),
        (bson!({"$literal": "$a"}), bson!("$a")),
        (bson!({"$literal": {"$add": 1}}), bson!({"$add": 1})),
        (bson!({"n": {"m": "$a"}}), bson!({"n": {"m": 1}})),
    ];
    for (spec, want) in cases {
        assert_eq!(eval(spec.clone(), &d), Ok(Some(want)), "{spec}");
    }
}

#[test]
fn variables_resolve_at_compile_time() {
    let v = vars()
        .with_let(Some(&doc! {"x": 5, "y": "$$x", "o": {"p": [1, 2]}}))
        .unwrap();
    let d = doc! {"a": 1};
    assert_eq!(eval_with(bson!("$$x"), &d, &v), Ok(Some(bson!(5))));
    assert_eq!(eval_with(bson!("$$y"), &d, &v), Ok(Some(bson!(5))));
    assert_eq!(eval_with(bson!("$$o.p"), &d, &v), Ok(Some(bson!([1, 2]))));
    assert_eq!(eval_with(bson!("$$o.q"), &d, &v), Ok(None));
    assert_eq!(
        eval(bson!("$$NOW"), &d),
        Ok(Some(Bson::DateTime(DateTime::from_millis(
            1_700_000_000_000
        ))))
    );
    assert_eq!(eval(bson!("$$DESCEND"), &d), Ok(Some(bson!("descend"))));
}

#[test]
fn plain_field_paths_follow_mongods_field_path_rules() {
    use super::plain_field_path;
    let refused = [
        ("", ErrorCode::Location40352),
        ("a.", ErrorCode::Location40353),
        ("a..b", ErrorCode::Location15998),
        ("$a", ErrorCode::Location16410),
        ("a.$b", ErrorCode::Location16410),
        ("a\0", ErrorCode::Location16411),
        ("\0", ErrorCode::Location16411),
        ("a.b\0c", ErrorCode::Location16411),
    ];
    for (path, code) in refused {
        assert_eq!(
            plain_field_path(path).map_err(|e| e.code),
            Err(code),
            "{path:?}"
        );
    }
    // DBRef's names are field names mongod's FieldPath allows.
    assert_eq!(
        plain_field_path("a.$id"),
        Ok(vec!["a".to_owned(), "$id".to_owned()])
    );
    assert_eq!(
        plain_field_path("a.b"),
        Ok(vec!["a".to_owned(), "b".to_owned()])
    );
}

#[test]
fn bad_names_and_paths_are_mongods_errors() {
    let d = doc! {};
    let cases = [
        (bson!("$"), ErrorCode::Location16872),
        (bson!("$a..b"), ErrorCode::Location15998),
        (bson!("$a\0b"), ErrorCode::Location16411),
        (bson!("$a.$b"), ErrorCode::Location16410),
        (bson!("$$x"), ErrorCode::Location17276),
        (bson!("$$"), ErrorCode::Location16869),
        (bson!("$$_x"), ErrorCode::Location16870),
        (bson!("$$x-y"), ErrorCode::Location16871),
        (bson!("$$CLUSTER_TIME"), ErrorCode::Location51144),
        (bson!({"$nope": 1}), ErrorCode::InvalidPipelineOperator),
        (bson!({"$literal": 1, "b": 2}), ErrorCode::Location15983),
        (bson!({"a.b": 1}), ErrorCode::Location16412),
        (
            bson!({"$let": {"vars": {"Bad": 1}, "in": 1}}),
            ErrorCode::Location16867,
        ),
        (
            bson!({"$let": {"vars": {"a-b": 1}, "in": 1}}),
            ErrorCode::Location16868,
        ),
        (
            bson!({"$let": {"vars": {}, "in": 1, "x": 1}}),
            ErrorCode::Location16875,
        ),
        (bson!({"$let": {"in": 1}}), ErrorCode::Location16876),
        (bson!({"$let": {"vars": {}}}), ErrorCode::Location16877),
        (bson!({"$let": 1}), ErrorCode::Location16874),
        (
            bson!({"$map": {"input": [1], "in": "$$x"}}),
            ErrorCode::Location17276,
        ),
        (bson!({"$map": {"in": 1}}), ErrorCode::Location16880),
        (
            bson!({"$map": {"input": 1, "in": 1}}),
            ErrorCode::Location16883,
        ),
        (
            bson!({"$filter": {"input": 1, "cond": true}}),
            ErrorCode::Location28651,
        ),
        (
            bson!({"$filter": {"input": [1], "cond": true, "limit": 0}}),
            ErrorCode::Location327392,
        ),
        (
            bson!({"$filter": {"input": [1], "cond": true, "limit": 1.5}}),
            ErrorCode::Location327391,
        ),
        (
            bson!({"$reduce": {"input": 1, "initialValue": 0, "in": 1}}),
            ErrorCode::Location40080,
        ),
        (
            bson!({"$reduce": {"input": [], "in": 1}}),
            ErrorCode::Location40078,
        ),
    ];
    for (spec, code) in cases {
        assert_eq!(eval(spec.clone(), &d), Err(code), "{spec}");
    }
    let bad_let = vars().with_let(Some(&doc! {"X": 1})).unwrap_err();
    assert_eq!(bad_let.code, ErrorCode::Location16867);
}

#[test]
fn let_binds_for_its_body_only_and_can_rebind_current() {
    let d = doc! {"a": 2, "sub": {"a": 9}};
    let cases = [
        (
            bson!({"$let": {"vars": {"x": "$a"}, "in": ["$$x", "$a"]}}),
            bson!([2, 2]),
        ),
        // Values see the outer scope: the inner x is the outer one.
        (
            bson!({"$let": {"vars": {"x": 1}, "in": {"$let": {"vars": {"x": 2, "y": "$$x"}, "in": ["$$x", "$$y"]}}}}),
            bson!([2, 1]),
        ),
        (
            bson!({"$let": {"vars": {"CURRENT": "$sub"}, "in": ["$a", "$$ROOT.a"]}}),
            bson!([9, 2]),
        ),
    ];
    for (spec, want) in cases {
        assert_eq!(eval(spec.clone(), &d), Ok(Some(want)), "{spec}");
    }
    // The binding ends with its body.
    assert_eq!(
        eval(
            bson!([{"$let": {"vars": {"x": 1}, "in": "$$x"}}, "$$x"]),
            &d
        ),
        Err(ErrorCode::Location17276)
    );
}

#[test]
fn map_filter_and_reduce() {
    let d = doc! {"xs": [1, 2, 3, 4], "docs": [{"n": 1}, {"n": 5}], "none": null};
    let cases = [
        (
            bson!({"$map": {"input": "$xs", "as": "x", "in": ["$$x"]}}),
            bson!([[1], [2], [3], [4]]),
        ),
        (
            bson!({"$map": {"input": "$docs", "in": "$$this.n"}}),
            bson!([1, 5]),
        ),
        (bson!({"$map": {"input": "$none", "in": 1}}), Bson::Null),
        (bson!({"$map": {"input": "$nope", "in": 1}}), Bson::Null),
        (
            bson!({"$map": {"input": [1], "in": "$$REMOVE"}}),
            bson!([null]),
        ),
        (
            bson!({"$filter": {"input": "$xs", "cond": "$$this"}}),
            bson!([1, 2, 3, 4]),
        ),
        (
            bson!({"$filter": {"input": [0, 1, null, false, "", []], "as": "v", "cond": "$$v"}}),
            bson!([1, "", []]),
        ),
        (
            bson!({"$filter": {"input": "$xs", "cond": true, "limit": 2}}),
            bson!([1, 2]),
        ),
        (
            bson!({"$filter": {"input": "$xs", "cond": true, "limit": null}}),
            bson!([1, 2, 3, 4]),
        ),
        (
            bson!({"$reduce": {"input": "$xs", "initialValue": [], "in": ["$$value", "$$this"]}}),
            bson!([[[[[], 1], 2], 3], 4]),
        ),
        (
            bson!({"$reduce": {"input": [], "initialValue": 7, "in": 1}}),
            bson!(7),
        ),
        // Nested bindings of the same name shadow.
        (
            bson!({"$map": {"input": [[1, 2]], "in": {"$map": {"input": "$$this", "in": ["$$this"]}}}}),
            bson!([[[1], [2]]]),
        ),
    ];
    for (spec, want) in cases {
        assert_eq!(eval(spec.clone(), &d), Ok(Some(want)), "{spec}");
    }
}

#[test]
fn reduce_cannot_build_a_value_too_deep_to_handle() {
    let spec = bson!({"$reduce": {
        "input": (0..1000).map(Bson::Int32).collect::<Vec<_>>(),
        "initialValue": [],
        "in": ["$$value"],
    }});
    assert_eq!(eval(spec, &doc! {}), Err(ErrorCode::Overflow));
}

#[test]
fn compiled_expressions_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Expression>();
}

#[test]
fn boolean_operators() {
    let d = doc! {"t": true, "z": 0};
    let cases = [
        (bson!({"$and": [1, "$t"]}), true),
        (bson!({"$and": [1, "$z"]}), false),
        (bson!({"$and": []}), true),
        (bson!({"$or": []}), false),
        (bson!({"$or": [null, "$nope", "$t"]}), true),
        (bson!({"$not": ["$z"]}), true),
        (bson!({"$not": [[]]}), false),
        // $or stops at the first true operand: the failing one is never evaluated.
        (
            bson!({"$or": [true, {"$map": {"input": 1, "in": 1}}]}),
            true,
        ),
    ];
    for (spec, want) in cases {
        assert_eq!(
            eval(spec.clone(), &d),
            Ok(Some(Bson::Boolean(want))),
            "{spec}"
        );
    }
    assert_eq!(
        eval(bson!({"$not": [1, 2]}), &d),
        Err(ErrorCode::Location16020)
    );
}
