//! `$rand`, sizes, hashed index keys, timestamp parts, and the refused `$meta`/`$function`.

use crate::error::ErrorCode;
use crate::query::expr::tests::eval;
use bson::spec::BinarySubtype;
use bson::{bson, doc, Binary, Bson, Timestamp};

fn lit(v: Bson) -> Bson {
    bson!({"$literal": v})
}

#[test]
fn rand_is_a_double_in_the_unit_interval() {
    for _ in 0..100 {
        match eval(bson!({"$rand": {}}), &doc! {}) {
            Ok(Some(Bson::Double(x))) => assert!((0.0..1.0).contains(&x), "{x}"),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        eval(bson!({"$rand": {"seed": 1}}), &doc! {}),
        Err(ErrorCode::Location3040501)
    );
    assert_eq!(
        eval(bson!({"$rand": 1}), &doc! {}),
        Err(ErrorCode::Location10065)
    );
}

#[test]
fn sizes_and_timestamp_parts() {
    let bin = Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes: vec![1, 2, 3],
    });
    let ts = Bson::Timestamp(Timestamp {
        time: 1_622_731_060,
        increment: 10,
    });
    let cases = [
        (bson!({"$binarySize": "abc"}), bson!(3)),
        (bson!({"$binarySize": "é"}), bson!(2)),
        (bson!({"$binarySize": lit(bin)}), bson!(3)),
        (bson!({"$binarySize": null}), Bson::Null),
        (bson!({"$bsonSize": lit(bson!({}))}), bson!(5)),
        (bson!({"$bsonSize": lit(bson!({"a": 1}))}), bson!(12)),
        (bson!({"$bsonSize": "$$ROOT"}), bson!(5)),
        (bson!({"$bsonSize": "$nope"}), Bson::Null),
        (
            bson!({"$tsSecond": lit(ts.clone())}),
            Bson::Int64(1_622_731_060),
        ),
        (bson!({"$tsIncrement": lit(ts)}), Bson::Int64(10)),
        (bson!({"$tsSecond": null}), Bson::Null),
    ];
    for (spec, want) in cases {
        assert_eq!(eval(spec.clone(), &doc! {}), Ok(Some(want)), "{spec}");
    }
    let errors = [
        (bson!({"$binarySize": 1}), ErrorCode::Location51276),
        (bson!({"$bsonSize": 1}), ErrorCode::Location31393),
        (bson!({"$tsSecond": 1}), ErrorCode::Location5687301),
        (bson!({"$tsIncrement": "x"}), ErrorCode::Location5687302),
        (bson!({"$tsSecond": [1, 2]}), ErrorCode::Location16020),
    ];
    for (spec, code) in errors {
        assert_eq!(eval(spec.clone(), &doc! {}), Err(code), "{spec}");
    }
}

#[test]
fn hashed_index_keys_match_mongod() {
    let hash = |v: Bson| match eval(bson!({"$toHashedIndexKey": v.clone()}), &doc! {}) {
        Ok(Some(Bson::Int64(h))) => h,
        other => panic!("{v}: {other:?}"),
    };
    // The example of MongoDB's $toHashedIndexKey reference page.
    assert_eq!(hash(bson!("string to hash")), 763_543_691_661_428_748);
    // Numbers hash by their 64-bit integer value; missing hashes as null.
    assert_eq!(hash(bson!(42)), hash(Bson::Int64(42)));
    assert_eq!(hash(bson!(42)), hash(bson!(42.9)));
    assert_eq!(hash(bson!("$nope")), hash(Bson::Null));
    assert_ne!(hash(bson!(1)), hash(bson!("1")));
    assert_ne!(hash(lit(bson!({"a": 1}))), hash(lit(bson!({"b": 1}))));
    assert_ne!(hash(lit(bson!([1]))), hash(lit(bson!([[1]]))));
}

#[test]
fn meta_and_function_are_refused() {
    let cases = [
        (bson!({"$meta": 1}), ErrorCode::Location17307),
        (bson!({"$meta": "nope"}), ErrorCode::Location17308),
        (bson!({"$meta": "textScore"}), ErrorCode::Location40218),
        (bson!({"$meta": "searchScore"}), ErrorCode::NotImplemented),
        (bson!({"$function": 1}), ErrorCode::Location31260),
        (
            bson!({"$function": {"args": [], "lang": "js"}}),
            ErrorCode::Location31261,
        ),
        (
            bson!({"$function": {"body": "$f", "args": [], "lang": "js"}}),
            ErrorCode::Location31432,
        ),
        (
            bson!({"$function": {"body": 1, "args": [], "lang": "js"}}),
            ErrorCode::Location31262,
        ),
        (
            bson!({"$function": {"body": "function() {}", "lang": "js"}}),
            ErrorCode::Location31263,
        ),
        (
            bson!({"$function": {"body": "function() {}", "args": []}}),
            ErrorCode::Location31418,
        ),
        (
            bson!({"$function": {"body": "function() {}", "args": [], "lang": "py"}}),
            ErrorCode::Location31419,
        ),
        (
            bson!({"$function": {"body": "function() {}", "args": [], "lang": "js"}}),
            ErrorCode::Location31264,
        ),
        (
            bson!({"$accumulator": {}}),
            ErrorCode::InvalidPipelineOperator,
        ),
        (
            bson!({"$where": "true"}),
            ErrorCode::InvalidPipelineOperator,
        ),
    ];
    for (spec, code) in cases {
        assert_eq!(eval(spec.clone(), &doc! {}), Err(code), "{spec}");
    }
}
