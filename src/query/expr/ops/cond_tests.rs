//! Conditional operators: both `$cond` forms, `$ifNull` with several operands, `$switch`, lazy
//! evaluation, and every parse error with mongod's code.

use crate::error::ErrorCode;
use crate::query::expr::tests::eval;
use bson::{bson, doc, Bson};

/// An operand that fails whenever it is evaluated.
fn boom() -> Bson {
    bson!({"$map": {"input": 1, "in": 1}})
}

#[test]
fn branches_evaluate_lazily() {
    let d = doc! {"qty": 300, "description": null, "quantity": 3};
    let cases = [
        (
            bson!({"$cond": {"if": {"$gte": ["$qty", 250]}, "then": 30, "else": 20}}),
            bson!(30),
        ),
        (
            bson!({"$cond": [{"$lt": ["$qty", 250]}, 30, 20]}),
            bson!(20),
        ),
        (bson!({"$cond": [true, 1, boom()]}), bson!(1)),
        (bson!({"$cond": [0, boom(), "no"]}), bson!("no")),
        (
            bson!({"$ifNull": ["$description", "Unspecified"]}),
            bson!("Unspecified"),
        ),
        (
            bson!({"$ifNull": ["$nope", "$description", "x"]}),
            bson!("x"),
        ),
        (bson!({"$ifNull": ["$qty", boom()]}), bson!(300)),
        (bson!({"$ifNull": ["$nope", null]}), Bson::Null),
        (bson!({"$ifNull": [false, 1]}), bson!(false)),
        (
            bson!({"$switch": {"branches": [
                {"case": {"$lt": ["$quantity", 2]}, "then": "few"},
                {"case": {"$lt": ["$quantity", 5]}, "then": "some"},
                {"case": boom(), "then": "never"},
            ], "default": "many"}}),
            bson!("some"),
        ),
        (
            bson!({"$switch": {"branches": [{"case": false, "then": boom()}], "default": "d"}}),
            bson!("d"),
        ),
    ];
    for (spec, want) in cases {
        assert_eq!(eval(spec.clone(), &d), Ok(Some(want)), "{spec}");
    }
    assert_eq!(
        eval(bson!({"$ifNull": ["$nope", "$alsoNope"]}), &d),
        Ok(None)
    );
}

#[test]
fn malformed_conditionals_are_mongods_errors() {
    let cases = [
        (bson!({"$cond": [true, 1]}), ErrorCode::Location16020),
        (bson!({"$cond": true}), ErrorCode::Location16020),
        (
            bson!({"$cond": {"then": 1, "else": 2}}),
            ErrorCode::Location17080,
        ),
        (
            bson!({"$cond": {"if": 1, "else": 2}}),
            ErrorCode::Location17081,
        ),
        (
            bson!({"$cond": {"if": 1, "then": 2}}),
            ErrorCode::Location17082,
        ),
        (
            bson!({"$cond": {"if": 1, "then": 2, "else": 3, "x": 4}}),
            ErrorCode::Location17083,
        ),
        (bson!({"$ifNull": [1]}), ErrorCode::Location1257300),
        (bson!({"$ifNull": 1}), ErrorCode::Location1257300),
        (bson!({"$switch": 1}), ErrorCode::Location40060),
        (
            bson!({"$switch": {"branches": 1}}),
            ErrorCode::Location40061,
        ),
        (
            bson!({"$switch": {"branches": [1]}}),
            ErrorCode::Location40062,
        ),
        (
            bson!({"$switch": {"branches": [{"case": 1, "then": 1, "x": 1}]}}),
            ErrorCode::Location40063,
        ),
        (
            bson!({"$switch": {"branches": [{"then": 1}]}}),
            ErrorCode::Location40064,
        ),
        (
            bson!({"$switch": {"branches": [{"case": 1}]}}),
            ErrorCode::Location40065,
        ),
        (
            bson!({"$switch": {"branches": [{"case": false, "then": 1}]}}),
            ErrorCode::Location40066,
        ),
        (
            bson!({"$switch": {"branches": [], "x": 1}}),
            ErrorCode::Location40067,
        ),
        (
            bson!({"$switch": {"branches": []}}),
            ErrorCode::Location40068,
        ),
        (bson!({"$switch": {"default": 1}}), ErrorCode::Location40068),
    ];
    for (spec, code) in cases {
        assert_eq!(eval(spec.clone(), &doc! {}), Err(code), "{spec}");
    }
}
