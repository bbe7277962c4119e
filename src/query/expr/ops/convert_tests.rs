//! `$convert` and its shorthands: mongod's conversion table, `onError`/`onNull`, `to` as a
//! name or a number, and the errors that are not conversion failures.

use crate::error::ErrorCode;
use crate::query::expr::tests::eval;
use bson::oid::ObjectId;
use bson::{bson, doc, Bson, DateTime, Decimal128, Timestamp};

fn dec(s: &str) -> Bson {
    Bson::Decimal128(s.parse::<Decimal128>().unwrap())
}

fn lit(v: Bson) -> Bson {
    bson!({"$literal": v})
}

#[test]
fn conversions_follow_mongods_table() {
    let oid = ObjectId::parse_str("5ab9cbfa31c2ab715d42129e").unwrap();
    let date = DateTime::from_millis(1_522_125_818_000);
    let cases = [
        (bson!({"$toBool": 0}), bson!(false)),
        (bson!({"$toBool": 2.5}), bson!(true)),
        (bson!({"$toBool": dec("0")}), bson!(false)),
        (bson!({"$toBool": "false"}), bson!(true)),
        (bson!({"$toBool": ""}), bson!(true)),
        (bson!({"$toBool": lit(bson!([]))}), bson!(true)),
        (bson!({"$toBool": lit(Bson::MinKey)}), bson!(true)),
        (bson!({"$toInt": 2.5}), bson!(2)),
        (bson!({"$toInt": -2.5}), bson!(-2)),
        (bson!({"$toInt": true}), bson!(1)),
        (bson!({"$toInt": Bson::Int64(5)}), bson!(5)),
        (bson!({"$toInt": dec("-5.5")}), bson!(-5)),
        (bson!({"$toInt": "-100"}), bson!(-100)),
        (bson!({"$toLong": 1.99}), Bson::Int64(1)),
        (bson!({"$toLong": "5000000000"}), Bson::Int64(5_000_000_000)),
        (
            bson!({"$toLong": lit(Bson::DateTime(date))}),
            Bson::Int64(1_522_125_818_000),
        ),
        (bson!({"$toDouble": true}), bson!(1.0)),
        (bson!({"$toDouble": "-5.5"}), bson!(-5.5)),
        (bson!({"$toDouble": "1e3"}), bson!(1000.0)),
        (bson!({"$toDouble": Bson::Int64(5)}), bson!(5.0)),
        (bson!({"$toDouble": dec("2.5")}), bson!(2.5)),
        (
            bson!({"$toDouble": lit(Bson::DateTime(date))}),
            bson!(1_522_125_818_000.0),
        ),
        (bson!({"$toDecimal": true}), dec("1")),
        (bson!({"$toDecimal": 2.5}), dec("2.50000000000000")),
        (bson!({"$toDecimal": 5}), dec("5")),
        (bson!({"$toDecimal": "5.5"}), dec("5.5")),
        (bson!({"$toString": 2.5}), bson!("2.5")),
        (bson!({"$toString": 5}), bson!("5")),
        (bson!({"$toString": Bson::Int64(-7)}), bson!("-7")),
        (bson!({"$toString": true}), bson!("true")),
        (bson!({"$toString": dec("1.50")}), bson!("1.50")),
        (bson!({"$toString": f64::NEG_INFINITY}), bson!("-Infinity")),
        (
            bson!({"$toString": lit(Bson::ObjectId(oid))}),
            bson!("5ab9cbfa31c2ab715d42129e"),
        ),
        (
            bson!({"$toString": lit(Bson::DateTime(date))}),
            bson!("2018-03-27T04:43:38.000Z"),
        ),
        (
            bson!({"$toObjectId": "5ab9cbfa31c2ab715d42129e"}),
            Bson::ObjectId(oid),
        ),
        (
            bson!({"$toDate": lit(Bson::ObjectId(oid))}),
            Bson::DateTime(date),
        ),
        (
            bson!({"$toDate": Bson::Int64(1_522_125_818_000)}),
            Bson::DateTime(date),
        ),
        (
            bson!({"$toDate": 1_522_125_818_000.0}),
            Bson::DateTime(date),
        ),
        (
            bson!({"$toDate": dec("1522125818000")}),
            Bson::DateTime(date),
        ),
        (
            bson!({"$toDate": lit(Bson::Timestamp(Timestamp { time: 1_522_125_818, increment: 1 }))}),
            Bson::DateTime(date),
        ),
        (bson!({"$toInt": null}), Bson::Null),
        (bson!({"$toInt": "$nope"}), Bson::Null),
        (bson!({"$convert": {"input": "5", "to": "int"}}), bson!(5)),
        (bson!({"$convert": {"input": "5", "to": 16}}), bson!(5)),
        (
            bson!({"$convert": {"input": "5", "to": 18.0}}),
            Bson::Int64(5),
        ),
        (
            bson!({"$convert": {"input": "x", "to": "int", "onError": "bad"}}),
            bson!("bad"),
        ),
        (
            bson!({"$convert": {"input": null, "to": "int", "onNull": "none"}}),
            bson!("none"),
        ),
        (
            bson!({"$convert": {"input": "$nope", "to": "int", "onNull": 0}}),
            bson!(0),
        ),
        (bson!({"$convert": {"input": 1, "to": null}}), Bson::Null),
        (
            bson!({"$convert": {"input": 1, "to": "missing", "onError": "e"}}),
            bson!("e"),
        ),
        (
            bson!({"$convert": {"input": 1, "to": "object", "onError": "e"}}),
            bson!("e"),
        ),
        (
            bson!({"$convert": {"input": 1, "to": 0, "onError": "e"}}),
            bson!("e"),
        ),
        (bson!({"$isNumber": 1}), bson!(true)),
        (bson!({"$isNumber": dec("1")}), bson!(true)),
        (bson!({"$isNumber": "1"}), bson!(false)),
        (bson!({"$isNumber": "$nope"}), bson!(false)),
        (bson!({"$type": "a"}), bson!("string")),
        (bson!({"$type": Bson::Int64(1)}), bson!("long")),
        (bson!({"$type": lit(bson!([1]))}), bson!("array")),
        (bson!({"$type": "$nope"}), bson!("missing")),
    ];
    for (spec, want) in cases {
        assert_eq!(eval(spec.clone(), &doc! {}), Ok(Some(want)), "{spec}");
    }
}

#[test]
fn failures_and_parse_errors_have_mongods_codes() {
    let cases = [
        (bson!({"$toInt": "x"}), ErrorCode::ConversionFailure),
        (bson!({"$toInt": "1.5"}), ErrorCode::ConversionFailure),
        (bson!({"$toInt": "0x1A"}), ErrorCode::ConversionFailure),
        (
            bson!({"$toInt": "3000000000"}),
            ErrorCode::ConversionFailure,
        ),
        (bson!({"$toInt": 3e9}), ErrorCode::ConversionFailure),
        (bson!({"$toInt": f64::NAN}), ErrorCode::ConversionFailure),
        (
            bson!({"$toInt": Bson::Int64(1 << 40)}),
            ErrorCode::ConversionFailure,
        ),
        (
            bson!({"$toLong": f64::INFINITY}),
            ErrorCode::ConversionFailure,
        ),
        (
            bson!({"$toLong": dec("1e30")}),
            ErrorCode::ConversionFailure,
        ),
        (bson!({"$toDouble": "abc"}), ErrorCode::ConversionFailure),
        (
            bson!({"$toDouble": dec("1e400")}),
            ErrorCode::ConversionFailure,
        ),
        (bson!({"$toObjectId": "abc"}), ErrorCode::ConversionFailure),
        (
            bson!({"$toObjectId": "zzzzzzzzzzzzzzzzzzzzzzzz"}),
            ErrorCode::ConversionFailure,
        ),
        (bson!({"$toDate": 5}), ErrorCode::ConversionFailure),
        (bson!({"$toDate": true}), ErrorCode::ConversionFailure),
        (
            bson!({"$toInt": lit(bson!({}))}),
            ErrorCode::ConversionFailure,
        ),
        (
            bson!({"$toString": lit(bson!([]))}),
            ErrorCode::ConversionFailure,
        ),
        (bson!({"$toBool": [1, 2]}), ErrorCode::Location50723),
        (bson!({"$toBool": []}), ErrorCode::Location50723),
        (bson!({"$convert": 1}), ErrorCode::FailedToParse),
        (bson!({"$convert": {"to": "int"}}), ErrorCode::FailedToParse),
        (bson!({"$convert": {"input": 1}}), ErrorCode::FailedToParse),
        (
            bson!({"$convert": {"input": 1, "to": "int", "x": 1}}),
            ErrorCode::FailedToParse,
        ),
        (
            bson!({"$convert": {"input": 1, "to": "nope", "onError": 0}}),
            ErrorCode::BadValue,
        ),
        (
            bson!({"$convert": {"input": 1, "to": 1.5, "onError": 0}}),
            ErrorCode::FailedToParse,
        ),
        (
            bson!({"$convert": {"input": 1, "to": 20, "onError": 0}}),
            ErrorCode::FailedToParse,
        ),
        (
            bson!({"$convert": {"input": 1, "to": true, "onError": 0}}),
            ErrorCode::FailedToParse,
        ),
        (
            bson!({"$convert": {"input": null, "to": "nope"}}),
            ErrorCode::BadValue,
        ),
        (bson!({"$type": [1, 2]}), ErrorCode::Location16020),
    ];
    for (spec, code) in cases {
        assert_eq!(eval(spec.clone(), &doc! {}), Err(code), "{spec}");
    }
}
