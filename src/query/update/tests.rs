//! Update behaviour tables: (before, update, after, changed), and each error with its code.

use super::error_tests::apply_error;
use super::*;
use bson::{doc, Bson, DateTime, Document};

fn now() -> DateTime {
    DateTime::from_millis(1_700_000_000_000)
}

fn run(d: Document, update: Document) -> (Document, bool) {
    let parsed = Update::parse(&update).unwrap_or_else(|e| panic!("{update}: {e}"));
    let mut d = d;
    let changed = parsed
        .apply(&mut d, &UpdateContext::new(now()))
        .unwrap_or_else(|e| panic!("{update}: {e}"));
    (d, changed)
}

fn check(cases: Vec<(Document, Document, Document, bool)>) {
    for (before, update, after, changed) in cases {
        let (got, got_changed) = run(before.clone(), update.clone());
        assert_eq!(got, after, "{update} on {before}");
        assert_eq!(
            got_changed, changed,
            "changed flag for {update} on {before}"
        );
    }
}

#[test]
fn set_unset_and_field_order() {
    check(vec![
        (
            doc! {"_id": 1, "a": 1},
            doc! {"$set": {"a": 2}},
            doc! {"_id": 1, "a": 2},
            true,
        ),
        (
            doc! {"_id": 1, "a": 1},
            doc! {"$set": {"a": 1}},
            doc! {"_id": 1, "a": 1},
            false,
        ),
        (
            doc! {"_id": 1, "a": 1},
            doc! {"$set": {"a": 1.0}},
            doc! {"_id": 1, "a": 1.0},
            true,
        ),
        (
            doc! {"_id": 1},
            doc! {"$set": {"b": 1, "a": 2}},
            doc! {"_id": 1, "a": 2, "b": 1},
            true,
        ),
        (
            doc! {"_id": 1},
            doc! {"$set": {"x.y.z": 1}},
            doc! {"_id": 1, "x": {"y": {"z": 1}}},
            true,
        ),
        (
            doc! {"_id": 1, "a": [1, 2]},
            doc! {"$set": {"a.1": 9}},
            doc! {"_id": 1, "a": [1, 9]},
            true,
        ),
        (
            doc! {"_id": 1, "a": [1]},
            doc! {"$set": {"a.2": 9}},
            doc! {"_id": 1, "a": [1, null, 9]},
            true,
        ),
        (
            doc! {"_id": 1, "a": 1},
            doc! {"$set": {}},
            doc! {"_id": 1, "a": 1},
            false,
        ),
        (
            doc! {"_id": 1, "a": 1, "b": 2},
            doc! {"$unset": {"a": ""}},
            doc! {"_id": 1, "b": 2},
            true,
        ),
        (
            doc! {"_id": 1},
            doc! {"$unset": {"a": 1}},
            doc! {"_id": 1},
            false,
        ),
        (
            doc! {"_id": 1, "a": [1, 2]},
            doc! {"$unset": {"a.0": 1}},
            doc! {"_id": 1, "a": [null, 2]},
            true,
        ),
        (
            doc! {"_id": 1, "a": 1},
            doc! {"$set": {"_id": 1}},
            doc! {"_id": 1, "a": 1},
            false,
        ),
        (
            doc! {"_id": 1},
            doc! {"$setOnInsert": {"a": 1}},
            doc! {"_id": 1},
            false,
        ),
    ]);
}

#[test]
fn arithmetic_min_max_current_date() {
    check(vec![
        (
            doc! {"_id": 1, "a": 1},
            doc! {"$inc": {"a": 2}},
            doc! {"_id": 1, "a": 3},
            true,
        ),
        (
            doc! {"_id": 1, "a": 1},
            doc! {"$inc": {"a": 0}},
            doc! {"_id": 1, "a": 1},
            false,
        ),
        (
            doc! {"_id": 1, "a": i32::MAX},
            doc! {"$inc": {"a": 1}},
            doc! {"_id": 1, "a": i64::from(i32::MAX) + 1},
            true,
        ),
        (
            doc! {"_id": 1, "a": 1},
            doc! {"$inc": {"a": 0.5}},
            doc! {"_id": 1, "a": 1.5},
            true,
        ),
        (
            doc! {"_id": 1},
            doc! {"$inc": {"n.c": 5_i64}},
            doc! {"_id": 1, "n": {"c": 5_i64}},
            true,
        ),
        (
            doc! {"_id": 1, "a": 3},
            doc! {"$mul": {"a": 2}},
            doc! {"_id": 1, "a": 6},
            true,
        ),
        (
            doc! {"_id": 1},
            doc! {"$mul": {"a": 2.5}},
            doc! {"_id": 1, "a": 0.0},
            true,
        ),
        (
            doc! {"_id": 1, "a": 5},
            doc! {"$min": {"a": 3}},
            doc! {"_id": 1, "a": 3},
            true,
        ),
        (
            doc! {"_id": 1, "a": 5},
            doc! {"$min": {"a": 7}},
            doc! {"_id": 1, "a": 5},
            false,
        ),
        (
            doc! {"_id": 1, "a": 5},
            doc! {"$max": {"a": 7}},
            doc! {"_id": 1, "a": 7},
            true,
        ),
        (
            doc! {"_id": 1, "a": 5},
            doc! {"$max": {"a": "x"}},
            doc! {"_id": 1, "a": "x"},
            true,
        ),
        (
            doc! {"_id": 1, "a": 5},
            doc! {"$min": {"a": null}},
            doc! {"_id": 1, "a": null},
            true,
        ),
        (
            doc! {"_id": 1},
            doc! {"$max": {"a": 1}},
            doc! {"_id": 1, "a": 1},
            true,
        ),
        (
            doc! {"_id": 1},
            doc! {"$currentDate": {"d": true}},
            doc! {"_id": 1, "d": now()},
            true,
        ),
        (
            doc! {"_id": 1},
            doc! {"$currentDate": {"t": {"$type": "timestamp"}}},
            doc! {"_id": 1, "t": Bson::Timestamp(bson::Timestamp { time: 1_700_000_000, increment: 1 })},
            true,
        ),
    ]);
}

#[test]
fn rename() {
    check(vec![
        (
            doc! {"_id": 1, "a": 1, "b": 2},
            doc! {"$rename": {"a": "c"}},
            doc! {"_id": 1, "b": 2, "c": 1},
            true,
        ),
        (
            doc! {"_id": 1, "a": {"x": 1}},
            doc! {"$rename": {"a.x": "b.y"}},
            doc! {"_id": 1, "a": {}, "b": {"y": 1}},
            true,
        ),
        (
            doc! {"_id": 1, "b": 2},
            doc! {"$rename": {"a": "b"}},
            doc! {"_id": 1, "b": 2},
            false,
        ),
        (
            doc! {"_id": 1, "a": 1, "b": 2},
            doc! {"$rename": {"a": "b"}},
            doc! {"_id": 1, "b": 1},
            true,
        ),
    ]);
}

#[test]
fn array_operators() {
    check(vec![
        (
            doc! {"_id": 1},
            doc! {"$push": {"a": 1}},
            doc! {"_id": 1, "a": [1]},
            true,
        ),
        (
            doc! {"_id": 1, "a": [1]},
            doc! {"$push": {"a": [2]}},
            doc! {"_id": 1, "a": [1, [2]]},
            true,
        ),
        (
            doc! {"_id": 1, "a": [1]},
            doc! {"$push": {"a": {"$each": [2, 3]}}},
            doc! {"_id": 1, "a": [1, 2, 3]},
            true,
        ),
        (
            doc! {"_id": 1, "a": [1, 2]},
            doc! {"$push": {"a": {"$each": [9], "$position": 0}}},
            doc! {"_id": 1, "a": [9, 1, 2]},
            true,
        ),
        (
            doc! {"_id": 1, "a": [1, 2]},
            doc! {"$push": {"a": {"$each": [9], "$position": -1}}},
            doc! {"_id": 1, "a": [1, 9, 2]},
            true,
        ),
        (
            doc! {"_id": 1, "a": [3, 1]},
            doc! {"$push": {"a": {"$each": [2], "$sort": 1}}},
            doc! {"_id": 1, "a": [1, 2, 3]},
            true,
        ),
        (
            doc! {"_id": 1, "a": [3, 1]},
            doc! {"$push": {"a": {"$each": [2], "$sort": -1, "$slice": 2}}},
            doc! {"_id": 1, "a": [3, 2]},
            true,
        ),
        (
            doc! {"_id": 1, "a": [1, 2, 3]},
            doc! {"$push": {"a": {"$each": [4], "$slice": -2}}},
            doc! {"_id": 1, "a": [3, 4]},
            true,
        ),
        (
            doc! {"_id": 1, "a": [{"s": 3}, {"s": 1}]},
            doc! {"$push": {"a": {"$each": [{"s": 2}], "$sort": {"s": 1}}}},
            doc! {"_id": 1, "a": [{"s": 1}, {"s": 2}, {"s": 3}]},
            true,
        ),
        (
            doc! {"_id": 1, "a": [1, 2]},
            doc! {"$push": {"a": {"$each": []}}},
            doc! {"_id": 1, "a": [1, 2]},
            false,
        ),
        (
            doc! {"_id": 1, "a": [1, 2]},
            doc! {"$addToSet": {"a": 2}},
            doc! {"_id": 1, "a": [1, 2]},
            false,
        ),
        (
            doc! {"_id": 1, "a": [1, 2]},
            doc! {"$addToSet": {"a": 2.0}},
            doc! {"_id": 1, "a": [1, 2]},
            false,
        ),
        (
            doc! {"_id": 1, "a": [1]},
            doc! {"$addToSet": {"a": {"$each": [1, 3, 3]}}},
            doc! {"_id": 1, "a": [1, 3]},
            true,
        ),
        (
            doc! {"_id": 1},
            doc! {"$addToSet": {"a": {"b": 1}}},
            doc! {"_id": 1, "a": [{"b": 1}]},
            true,
        ),
        (
            doc! {"_id": 1, "a": [1, 2, 3]},
            doc! {"$pop": {"a": 1}},
            doc! {"_id": 1, "a": [1, 2]},
            true,
        ),
        (
            doc! {"_id": 1, "a": [1, 2, 3]},
            doc! {"$pop": {"a": -1}},
            doc! {"_id": 1, "a": [2, 3]},
            true,
        ),
        (
            doc! {"_id": 1, "a": []},
            doc! {"$pop": {"a": 1}},
            doc! {"_id": 1, "a": []},
            false,
        ),
        (
            doc! {"_id": 1, "a": [1, 5, 6, 9]},
            doc! {"$pull": {"a": {"$gte": 6}}},
            doc! {"_id": 1, "a": [1, 5]},
            true,
        ),
        (
            doc! {"_id": 1, "a": [1, 5, 1]},
            doc! {"$pull": {"a": 1}},
            doc! {"_id": 1, "a": [5]},
            true,
        ),
        (
            doc! {"_id": 1, "a": ["ab", "cd"]},
            doc! {"$pull": {"a": Bson::RegularExpression(bson::Regex { pattern: "^a".into(), options: String::new() })}},
            doc! {"_id": 1, "a": ["cd"]},
            true,
        ),
        (
            doc! {"_id": 1, "a": [{"x": 1, "y": 2}, {"x": 2}]},
            doc! {"$pull": {"a": {"x": 1}}},
            doc! {"_id": 1, "a": [{"x": 2}]},
            true,
        ),
        (
            doc! {"_id": 1, "a": [1, 2, 3, 1]},
            doc! {"$pullAll": {"a": [1, 3]}},
            doc! {"_id": 1, "a": [2]},
            true,
        ),
        (
            doc! {"_id": 1},
            doc! {"$pull": {"a": 1}},
            doc! {"_id": 1},
            false,
        ),
    ]);
}

#[test]
fn bitwise() {
    check(vec![
        (
            doc! {"_id": 1, "a": 13},
            doc! {"$bit": {"a": {"and": 10}}},
            doc! {"_id": 1, "a": 8},
            true,
        ),
        (
            doc! {"_id": 1, "a": 3},
            doc! {"$bit": {"a": {"or": 5_i64}}},
            doc! {"_id": 1, "a": 7_i64},
            true,
        ),
        (
            doc! {"_id": 1, "a": 1},
            doc! {"$bit": {"a": {"xor": 1, "or": 8}}},
            doc! {"_id": 1, "a": 8},
            true,
        ),
        (
            doc! {"_id": 1},
            doc! {"$bit": {"a": {"or": 4}}},
            doc! {"_id": 1, "a": 4},
            true,
        ),
        (
            doc! {"_id": 1, "a": 4},
            doc! {"$bit": {"a": {"and": 4}}},
            doc! {"_id": 1, "a": 4},
            false,
        ),
    ]);
    let err = Update::parse(&doc! {"$bit": {"a": {"and": 1.0}}}).unwrap_err();
    assert_eq!(err.message, "The $bit modifier field must be an Integer(32/64 bit); a 'double' is not supported here: {and: 1.0}");
    let err = apply_error(doc! {"_id": 1, "a": 1.5}, doc! {"$bit": {"a": {"and": 1}}});
    assert_eq!(err.code, ErrorCode::BadValue);
}

#[test]
fn positional_all_and_filtered() {
    check(vec![
        (
            doc! {"_id": 1, "a": [1, 2]},
            doc! {"$inc": {"a.$[]": 10}},
            doc! {"_id": 1, "a": [11, 12]},
            true,
        ),
        (
            doc! {"_id": 1, "a": [{"b": 1}, {"b": 2}]},
            doc! {"$set": {"a.$[].c": 0}},
            doc! {"_id": 1, "a": [{"b": 1, "c": 0}, {"b": 2, "c": 0}]},
            true,
        ),
        (
            doc! {"_id": 1, "a": []},
            doc! {"$set": {"a.$[]": 1}},
            doc! {"_id": 1, "a": []},
            false,
        ),
    ]);
    let update = Update::parse(&doc! {"$set": {"a.$[big].flag": true}}).unwrap();
    let filters = ArrayFilters::compile(&[doc! {"big.v": {"$gt": 5}}], &update).unwrap();
    let ctx = UpdateContext {
        array_filters: &filters,
        ..UpdateContext::new(now())
    };
    let mut d = doc! {"_id": 1, "a": [{"v": 1}, {"v": 9}]};
    assert!(update.apply(&mut d, &ctx).unwrap());
    assert_eq!(d, doc! {"_id": 1, "a": [{"v": 1}, {"v": 9, "flag": true}]});

    let update = Update::parse(&doc! {"$set": {"a.$": 0}}).unwrap();
    let ctx = UpdateContext {
        positional_match: Some(1),
        ..UpdateContext::new(now())
    };
    let mut d = doc! {"_id": 1, "a": [5, 6, 7]};
    assert!(update.apply(&mut d, &ctx).unwrap());
    assert_eq!(d, doc! {"_id": 1, "a": [5, 0, 7]});
    let err = update
        .apply(&mut d, &UpdateContext::new(now()))
        .unwrap_err();
    assert_eq!(
        err.message,
        "The positional operator did not find the match needed from the query."
    );
}

#[test]
fn replacement_keeps_id() {
    let (d, changed) = run(doc! {"_id": 1, "a": 1}, doc! {"b": 2});
    assert_eq!(d, doc! {"_id": 1, "b": 2});
    assert!(changed);
    let (d, changed) = run(doc! {"_id": 1, "a": 1}, doc! {"a": 1, "_id": 1});
    assert_eq!(d, doc! {"_id": 1, "a": 1});
    assert!(!changed);
    let (d, _) = run(doc! {"_id": 1, "a": 1}, doc! {});
    assert_eq!(d, doc! {"_id": 1});
}

#[test]
fn upsert_seeds() {
    let ctx = UpdateContext::new(now());
    let eq = doc! {"_id": 5, "a": 1};
    let cases: Vec<(Document, Document)> = vec![
        (
            doc! {"$set": {"b": 2}, "$setOnInsert": {"c": 3}},
            doc! {"_id": 5, "a": 1, "b": 2, "c": 3},
        ),
        (doc! {"$inc": {"a": 1}}, doc! {"_id": 5, "a": 2}),
        (doc! {"z": 1}, doc! {"_id": 5, "z": 1}),
        (doc! {"_id": 5, "z": 1}, doc! {"_id": 5, "z": 1}),
    ];
    for (update, expected) in cases {
        let parsed = Update::parse(&update).unwrap();
        assert_eq!(
            upsert_seed(&eq, &parsed, &ctx).unwrap(),
            expected,
            "{update}"
        );
    }
    let moved = upsert_seed(
        &doc! {"a": 1},
        &Update::parse(&doc! {"$set": {"_id": 3}}).unwrap(),
        &ctx,
    )
    .unwrap();
    assert_eq!(moved, doc! {"_id": 3, "a": 1});
    let err = upsert_seed(
        &eq,
        &Update::parse(&doc! {"$set": {"_id": 6}}).unwrap(),
        &ctx,
    )
    .unwrap_err();
    assert_eq!(err.code, ErrorCode::ImmutableField);
}

#[test]
fn pipeline_updates() {
    let cases: Vec<(Document, Vec<Document>, Document)> = vec![
        (
            doc! {"_id": 1, "a": 1},
            vec![doc! {"$set": {"b": "$a", "c": {"$literal": "$x"}}}],
            doc! {"_id": 1, "a": 1, "b": 1, "c": "$x"},
        ),
        (
            doc! {"_id": 1, "a": {"x": 1}},
            vec![doc! {"$addFields": {"a": {"y": 2}}}],
            doc! {"_id": 1, "a": {"x": 1, "y": 2}},
        ),
        (
            doc! {"_id": 1, "a": 1, "b": 2},
            vec![doc! {"$unset": ["a"]}, doc! {"$set": {"c": "$b"}}],
            doc! {"_id": 1, "b": 2, "c": 2},
        ),
        (
            doc! {"_id": 1, "t": {"k": 5}},
            vec![doc! {"$replaceRoot": {"newRoot": "$t"}}],
            doc! {"_id": 1, "k": 5},
        ),
        (
            doc! {"_id": 1, "a": 1, "b": 2},
            vec![doc! {"$project": {"a": 1}}],
            doc! {"_id": 1, "a": 1},
        ),
        (
            doc! {"_id": 1, "a": 1},
            vec![doc! {"$set": {"a": "$$REMOVE", "r": "$missing"}}],
            doc! {"_id": 1},
        ),
        (
            doc! {"_id": 1, "a": 1},
            vec![doc! {"$set": {"k": "$$k", "t": "$$NOW", "o": {"$or": ["$a", "$b"]}}}],
            doc! {"_id": 1, "a": 1, "k": 7, "t": now(), "o": true},
        ),
    ];
    let vars = crate::query::expr::Variables::new(now())
        .with_let(Some(&doc! {"k": 7}))
        .unwrap();
    for (before, stages, after) in cases {
        let update = Update::parse_pipeline(&stages, &vars).unwrap();
        let mut d = before.clone();
        update.apply(&mut d, &UpdateContext::new(now())).unwrap();
        assert_eq!(d, after, "{stages:?} on {before}");
    }
    let err = Update::parse_pipeline(&[doc! {"$match": {}}], &vars).unwrap_err();
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            ErrorCode::InvalidOptions,
            "$match is not allowed to be used within an update"
        )
    );
    let err =
        Update::parse_pipeline(&[doc! {"$set": {"a": {"$nope": [1, 2]}}}], &vars).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidPipelineOperator);
    let update = Update::parse_pipeline(&[doc! {"$set": {"_id": 9}}], &vars).unwrap();
    let err = update
        .apply(&mut doc! {"_id": 1}, &UpdateContext::new(now()))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ImmutableField);
}
