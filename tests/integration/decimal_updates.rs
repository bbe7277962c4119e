//! `$inc` and `$mul` on Decimal128 through the Rust driver: exact decimal128 arithmetic (34
//! digits, round half to even), overflow to Infinity only beyond decimal128's range, doubles
//! converted with 15 significant digits, and mongod's no-op rule for equal decimals.

use crate::common;

use common::bson::{doc, Bson, Decimal128, Document};
use common::TestServer;
use futures::TryStreamExt;
use mongodb::Collection;

fn dec(s: &str) -> Bson {
    Bson::Decimal128(s.parse::<Decimal128>().unwrap())
}

async fn value_after(c: &Collection<Document>, id: i32, start: Bson, update: Document) -> Bson {
    c.insert_one(doc! {"_id": id, "x": start}).await.unwrap();
    c.update_one(doc! {"_id": id}, update).await.unwrap();
    let stored = c.find_one(doc! {"_id": id}).await.unwrap().unwrap();
    stored.get("x").cloned().unwrap_or(Bson::Null)
}

#[tokio::test]
async fn inc_and_mul_compute_in_decimal128() {
    let server = TestServer::start().await;
    let c = server
        .client()
        .await
        .database("decimal")
        .collection::<Document>("updates");
    let max = "9.999999999999999999999999999999999E+6144";
    let cases: Vec<(Bson, Document, Bson)> = vec![
        // 0.1 rounds away at 34 digits, half to even.
        (
            dec("1234567890123456789012345678901234"),
            doc! {"$inc": {"x": dec("0.1")}},
            dec("1234567890123456789012345678901234"),
        ),
        // The sum is 1.000…000E+6000 (34 digits), equal in value to 1E+6000: mongod's
        // `isIdentical` makes that a no-op, so the stored value keeps its form.
        (dec("1E+6000"), doc! {"$inc": {"x": 1}}, dec("1E+6000")),
        (
            dec("1E+6000"),
            doc! {"$inc": {"x": dec("1E+5967")}},
            dec("1.000000000000000000000000000000001E+6000"),
        ),
        (
            dec("1234567890123456789012345678901235"),
            doc! {"$inc": {"x": dec("0.5")}},
            dec("1234567890123456789012345678901236"),
        ),
        (dec("0.1"), doc! {"$inc": {"x": dec("0.2")}}, dec("0.3")),
        (dec("1.5"), doc! {"$mul": {"x": 2}}, dec("3.0")),
        // Integers convert exactly; a double with 15 significant digits.
        (
            dec("0"),
            doc! {"$inc": {"x": i64::MAX}},
            dec("9223372036854775807"),
        ),
        (
            dec("1"),
            doc! {"$inc": {"x": 0.1}},
            dec("1.100000000000000"),
        ),
        (
            Bson::Double(0.1),
            doc! {"$inc": {"x": dec("1")}},
            dec("1.100000000000000"),
        ),
        // Infinity only beyond decimal128's range.
        (dec(max), doc! {"$mul": {"x": 10}}, dec("Infinity")),
        (dec(max), doc! {"$mul": {"x": -10}}, dec("-Infinity")),
        (dec("NaN"), doc! {"$inc": {"x": 1}}, dec("NaN")),
        (dec("-0"), doc! {"$mul": {"x": 5}}, dec("-0")),
    ];
    for (i, (start, update, expected)) in cases.into_iter().enumerate() {
        let id = i32::try_from(i).unwrap();
        let got = value_after(&c, id, start.clone(), update.clone()).await;
        assert_eq!(got, expected, "{start} after {update}");
    }
}

#[tokio::test]
async fn add_expression_uses_the_same_decimal_arithmetic() {
    let server = TestServer::start().await;
    let c = server
        .client()
        .await
        .database("decimal")
        .collection::<Document>("expr");
    c.insert_one(
        doc! {"_id": 1, "x": dec("1E+6000"), "y": dec("1234567890123456789012345678901234")},
    )
    .await
    .unwrap();
    let mut cursor = c
        .aggregate(vec![doc! {"$project": {
            "a": {"$add": ["$x", 1]},
            "b": {"$add": ["$y", dec("0.1")]},
            "m": {"$multiply": ["$x", dec("1E+145")]},
        }}])
        .await
        .unwrap();
    let out = cursor.try_next().await.unwrap().unwrap();
    assert_eq!(
        out.get("a"),
        Some(&dec("1.000000000000000000000000000000000E+6000"))
    );
    assert_eq!(
        out.get("b"),
        Some(&dec("1234567890123456789012345678901234"))
    );
    assert_eq!(out.get("m"), Some(&dec("Infinity")));
}

#[tokio::test]
async fn mul_into_a_missing_field_and_equal_decimals_follow_mongod() {
    let server = TestServer::start().await;
    let c = server
        .client()
        .await
        .database("decimal")
        .collection::<Document>("missing");
    c.insert_one(doc! {"_id": 1, "x": dec("1")}).await.unwrap();

    // The missing field becomes operand × int32 0: the decimal keeps its exponent and sign.
    c.update_one(doc! {"_id": 1}, doc! {"$mul": {"y": dec("-2.50")}})
        .await
        .unwrap();
    let stored = c.find_one(doc! {"_id": 1}).await.unwrap().unwrap();
    assert_eq!(stored.get("y"), Some(&dec("-0.00")));

    // 1 + 0.00 is 1.00, equal to 1: mongod treats it as a no-op and keeps the stored value.
    let result = c
        .update_one(doc! {"_id": 1}, doc! {"$inc": {"x": dec("0.00")}})
        .await
        .unwrap();
    assert_eq!((result.matched_count, result.modified_count), (1, 0));
    let stored = c.find_one(doc! {"_id": 1}).await.unwrap().unwrap();
    assert_eq!(stored.get("x"), Some(&dec("1")));
}
