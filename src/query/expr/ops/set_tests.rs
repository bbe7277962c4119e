//! Set operators: results are distinct and sorted by the comparator (union, intersection), or
//! in the first operand's order (difference).

use crate::error::ErrorCode;
use crate::query::expr::tests::eval;
use bson::{bson, doc, Bson};

#[test]
fn set_operators() {
    let d = doc! {"a": ["a", "b", "a"], "b": ["b", "c"], "none": null};
    let cases = [
        (bson!({"$setUnion": ["$a", "$b"]}), bson!(["a", "b", "c"])),
        (
            bson!({"$setUnion": [[3, 1], [2.0, 1.0, 3]]}),
            bson!([1, 2.0, 3]),
        ),
        (bson!({"$setUnion": []}), bson!([])),
        (bson!({"$setUnion": ["$a", "$none"]}), Bson::Null),
        (bson!({"$setIntersection": ["$a", "$b"]}), bson!(["b"])),
        (
            bson!({"$setIntersection": [[1, 2, [3]], [[3], 2, 5]]}),
            bson!([2, [3]]),
        ),
        (bson!({"$setIntersection": []}), bson!([])),
        (bson!({"$setIntersection": ["$a", "$nope"]}), Bson::Null),
        (
            bson!({"$setDifference": [["c", "a", "b", "a"], "$b"]}),
            bson!(["a"]),
        ),
        (
            bson!({"$setDifference": [[3, 1, 3, 2], []]}),
            bson!([3, 1, 2]),
        ),
        (bson!({"$setDifference": ["$none", []]}), Bson::Null),
        (bson!({"$setEquals": ["$a", ["b", "a"]]}), bson!(true)),
        (
            bson!({"$setEquals": [[1, 2], [2, 1.0], [1, 2, 2]]}),
            bson!(true),
        ),
        (bson!({"$setEquals": ["$a", "$b"]}), bson!(false)),
        (bson!({"$setIsSubset": [["a", "a"], "$a"]}), bson!(true)),
        (bson!({"$setIsSubset": ["$a", "$b"]}), bson!(false)),
        (bson!({"$setIsSubset": [[], "$b"]}), bson!(true)),
        (
            bson!({"$allElementsTrue": [[true, 1, "x", []]]}),
            bson!(true),
        ),
        (bson!({"$allElementsTrue": [[true, 0]]}), bson!(false)),
        (bson!({"$allElementsTrue": [[]]}), bson!(true)),
        (bson!({"$anyElementTrue": [[null, false, 0]]}), bson!(false)),
        (bson!({"$anyElementTrue": [[null, [false]]]}), bson!(true)),
        (bson!({"$anyElementTrue": [[]]}), bson!(false)),
    ];
    for (spec, want) in cases {
        assert_eq!(eval(spec.clone(), &d), Ok(Some(want)), "{spec}");
    }
    let errors = [
        (bson!({"$setUnion": ["$a", 1]}), ErrorCode::Location17043),
        (
            bson!({"$setIntersection": ["$a", "x"]}),
            ErrorCode::Location17047,
        ),
        (bson!({"$setDifference": [1, []]}), ErrorCode::Location17048),
        (bson!({"$setDifference": [[], 1]}), ErrorCode::Location17049),
        (bson!({"$setDifference": [[]]}), ErrorCode::Location16020),
        (bson!({"$setEquals": [[1]]}), ErrorCode::Location17045),
        (
            bson!({"$setEquals": [[1], "$none"]}),
            ErrorCode::Location17044,
        ),
        (
            bson!({"$setIsSubset": ["$none", []]}),
            ErrorCode::Location17046,
        ),
        (
            bson!({"$setIsSubset": [[], "$nope"]}),
            ErrorCode::Location17042,
        ),
        (
            bson!({"$allElementsTrue": "$none"}),
            ErrorCode::Location17040,
        ),
        (bson!({"$anyElementTrue": [1]}), ErrorCode::Location17041),
        (
            bson!({"$anyElementTrue": [[], []]}),
            ErrorCode::Location16020,
        ),
    ];
    for (spec, code) in errors {
        assert_eq!(eval(spec.clone(), &d), Err(code), "{spec}");
    }
}
