//! Comparison operators and `$max`/`$min`: the reference pages' examples, missing versus null,
//! and arity errors.

use crate::error::ErrorCode;
use crate::query::expr::tests::eval;
use bson::{bson, doc, Bson};

#[test]
fn comparisons_use_bson_order_with_missing_below_null() {
    let d = doc! {"qty": 250, "n": null, "s": "abc"};
    let cases = [
        (bson!({"$cmp": ["$qty", 250]}), bson!(0)),
        (bson!({"$cmp": ["$qty", 300]}), bson!(-1)),
        (bson!({"$cmp": ["$qty", 200]}), bson!(1)),
        (bson!({"$cmp": ["$s", 1]}), bson!(1)),
        (bson!({"$eq": ["$qty", 250.0]}), bson!(true)),
        (bson!({"$eq": ["$qty", Bson::Int64(250)]}), bson!(true)),
        (bson!({"$eq": ["$n", null]}), bson!(true)),
        (bson!({"$eq": ["$nope", null]}), bson!(false)),
        (bson!({"$eq": ["$nope", "$alsoNope"]}), bson!(true)),
        (bson!({"$lt": ["$nope", null]}), bson!(true)),
        (bson!({"$ne": ["$qty", 250]}), bson!(false)),
        (bson!({"$gt": ["$qty", 250]}), bson!(false)),
        (bson!({"$gte": ["$qty", 250]}), bson!(true)),
        (bson!({"$lt": ["$qty", 250]}), bson!(false)),
        (bson!({"$lte": ["$qty", 250]}), bson!(true)),
        (bson!({"$gt": [[1, 2], [1]]}), bson!(true)),
        (bson!({"$gt": [{"a": 1}, "z"]}), bson!(true)),
    ];
    for (spec, want) in cases {
        assert_eq!(eval(spec.clone(), &d), Ok(Some(want)), "{spec}");
    }
    for op in ["$cmp", "$eq", "$ne", "$gt", "$gte", "$lt", "$lte"] {
        assert_eq!(
            eval(bson!({op: [1]}), &d),
            Err(ErrorCode::Location16020),
            "{op}"
        );
        assert_eq!(
            eval(bson!({op: 1}), &d),
            Err(ErrorCode::Location16020),
            "{op}"
        );
    }
}

#[test]
fn max_and_min_skip_nullish_values() {
    let d = doc! {"quizzes": [10, 6, 7], "labs": [5, 8], "final": 80, "midterm": 75};
    let cases = [
        (bson!({"$max": "$quizzes"}), bson!(10)),
        (bson!({"$min": "$quizzes"}), bson!(6)),
        (bson!({"$max": ["$final", "$midterm"]}), bson!(80)),
        (bson!({"$min": ["$final", "$midterm"]}), bson!(75)),
        (bson!({"$max": [1, null, "$nope"]}), bson!(1)),
        (bson!({"$max": [1, "a"]}), bson!("a")),
        (bson!({"$min": [1, "a"]}), bson!(1)),
        (bson!({"$max": []}), Bson::Null),
        (bson!({"$max": [null]}), Bson::Null),
        (bson!({"$max": "$nope"}), Bson::Null),
        (bson!({"$max": [[1, 2], 3]}), bson!([1, 2])),
    ];
    for (spec, want) in cases {
        assert_eq!(eval(spec.clone(), &d), Ok(Some(want)), "{spec}");
    }
}
