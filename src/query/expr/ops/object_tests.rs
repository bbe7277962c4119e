//! Object operators: literal field names (dots and dollars included), `$$CURRENT` as the
//! default input, merging order.

use crate::error::ErrorCode;
use crate::query::expr::tests::{eval, eval_with};
use crate::query::expr::Variables;
use bson::{bson, doc, Bson, DateTime};

#[test]
fn get_field_reads_names_paths_cannot() {
    let d = doc! {"a.b": 1, "$price": 5, "a": {"b": 2}, "sub": {"x.y": 3}, "n": null, "s": "str"};
    let cases = [
        (bson!({"$getField": "a.b"}), Some(bson!(1))),
        (bson!({"$getField": {"$literal": "$price"}}), Some(bson!(5))),
        (
            bson!({"$getField": {"field": "x.y", "input": "$sub"}}),
            Some(bson!(3)),
        ),
        (
            bson!({"$getField": {"field": {"$literal": "a.b"}, "input": "$$ROOT"}}),
            Some(bson!(1)),
        ),
        (
            bson!({"$getField": {"field": "b", "input": {"b": 7}}}),
            Some(bson!(7)),
        ),
        (bson!({"$getField": "nope"}), None),
        (bson!({"$getField": {"field": "x", "input": "$nope"}}), None),
        (
            bson!({"$getField": {"field": "x", "input": "$n"}}),
            Some(Bson::Null),
        ),
        (bson!({"$getField": {"field": "x", "input": "$s"}}), None),
    ];
    for (spec, want) in cases {
        assert_eq!(eval(spec.clone(), &d), Ok(want), "{spec}");
    }
    let errors = [
        (
            bson!({"$getField": {"field": "a", "x": 1}}),
            ErrorCode::Location3041701,
        ),
        (
            bson!({"$getField": {"input": "$sub"}}),
            ErrorCode::Location3041702,
        ),
        (
            bson!({"$getField": {"field": "a"}}),
            ErrorCode::Location3041703,
        ),
        (bson!({"$getField": "$a"}), ErrorCode::Location5654600),
        (
            bson!({"$getField": {"field": "$a", "input": {}}}),
            ErrorCode::Location5654600,
        ),
        (
            bson!({"$getField": {"$concat": ["a", "b"]}}),
            ErrorCode::Location5654601,
        ),
        (bson!({"$getField": 1}), ErrorCode::Location5654602),
    ];
    for (spec, code) in errors {
        assert_eq!(eval(spec.clone(), &d), Err(code), "{spec}");
    }
    // A `let` variable is a variable reference, not a constant, as in mongod.
    let vars = Variables::new(DateTime::from_millis(0))
        .with_let(Some(&doc! {"f": "a.b"}))
        .unwrap();
    assert_eq!(
        eval_with(bson!({"$getField": "$$f"}), &d, &vars),
        Err(ErrorCode::Location5654600)
    );
}

#[test]
fn set_and_unset_field() {
    let d = doc! {"item": "x", "price": 5, "$price": 9, "n": null};
    let cases = [
        (
            bson!({"$setField": {"field": "price.usd", "input": "$$ROOT", "value": 45}}),
            bson!({"item": "x", "price": 5, "$price": 9, "n": null, "price.usd": 45}),
        ),
        // An existing field keeps its position.
        (
            bson!({"$setField": {"field": "item", "input": "$$ROOT", "value": "y"}}),
            bson!({"item": "y", "price": 5, "$price": 9, "n": null}),
        ),
        (
            bson!({"$setField": {"field": {"$literal": "$price"}, "input": "$$ROOT", "value": "$$REMOVE"}}),
            bson!({"item": "x", "price": 5, "n": null}),
        ),
        (
            bson!({"$unsetField": {"field": "price", "input": "$$ROOT"}}),
            bson!({"item": "x", "$price": 9, "n": null}),
        ),
        (
            bson!({"$unsetField": {"field": "nope", "input": {"a": 1}}}),
            bson!({"a": 1}),
        ),
        (
            bson!({"$setField": {"field": "a", "input": "$n", "value": 1}}),
            Bson::Null,
        ),
        (
            bson!({"$unsetField": {"field": "a", "input": "$nope"}}),
            Bson::Null,
        ),
    ];
    for (spec, want) in cases {
        assert_eq!(eval(spec.clone(), &d), Ok(Some(want)), "{spec}");
    }
    let errors = [
        (bson!({"$setField": 1}), ErrorCode::Location4161100),
        (
            bson!({"$unsetField": {"field": "a", "input": {}, "value": 1}}),
            ErrorCode::Location4161101,
        ),
        (
            bson!({"$setField": {"input": {}, "value": 1}}),
            ErrorCode::Location4161102,
        ),
        (
            bson!({"$setField": {"field": "a", "input": {}}}),
            ErrorCode::Location4161103,
        ),
        (
            bson!({"$setField": {"field": "a", "value": 1}}),
            ErrorCode::Location4161109,
        ),
        (
            bson!({"$setField": {"field": "a", "input": "$item", "value": 1}}),
            ErrorCode::Location4161105,
        ),
        (
            bson!({"$setField": {"field": {"$concat": ["a"]}, "input": {}, "value": 1}}),
            ErrorCode::Location4161106,
        ),
        (
            bson!({"$setField": {"field": true, "input": {}, "value": 1}}),
            ErrorCode::Location4161107,
        ),
        (
            bson!({"$unsetField": {"field": "$a", "input": {}}}),
            ErrorCode::Location4161108,
        ),
    ];
    for (spec, code) in errors {
        assert_eq!(eval(spec.clone(), &d), Err(code), "{spec}");
    }
}

#[test]
fn merge_objects() {
    let d = doc! {
        "a": {"x": 1, "y": 2},
        "b": {"y": 3, "z": 4},
        "list": [{"x": 1}, null, {"x": 2, "w": 0}],
        "n": null,
    };
    let cases = [
        (
            bson!({"$mergeObjects": ["$a", "$b"]}),
            bson!({"x": 1, "y": 3, "z": 4}),
        ),
        (
            bson!({"$mergeObjects": ["$a", "$n", "$nope"]}),
            bson!({"x": 1, "y": 2}),
        ),
        (bson!({"$mergeObjects": "$list"}), bson!({"x": 2, "w": 0})),
        (bson!({"$mergeObjects": []}), bson!({})),
        (bson!({"$mergeObjects": "$n"}), bson!({})),
    ];
    for (spec, want) in cases {
        assert_eq!(eval(spec.clone(), &d), Ok(Some(want)), "{spec}");
    }
    assert_eq!(
        eval(bson!({"$mergeObjects": ["$a", 1]}), &d),
        Err(ErrorCode::Location40400)
    );
    assert_eq!(
        eval(bson!({"$mergeObjects": [[{"a": 1}], "$a"]}), &d),
        Err(ErrorCode::Location40400)
    );
}
