use super::*;
use crate::query::compare::values_equal;
use crate::query::filter::Filter;
use bson::{doc, Decimal128};
use proptest::prelude::*;
use std::cell::Cell;
use std::str::FromStr;

thread_local! {
    static COMPARISONS: Cell<usize> = const { Cell::new(0) };
}

pub(super) fn count_comparison() {
    COMPARISONS.with(|c| c.set(c.get() + 1));
}

fn comparisons_during(f: impl FnOnce()) -> usize {
    COMPARISONS.with(|c| c.set(0));
    f();
    COMPARISONS.with(|c| c.get())
}

#[test]
fn a_lookup_among_100_000_values_takes_logarithmically_many_comparisons() {
    let set = InSet::new((0..100_000).map(|i| Bson::Int64(i * 2)).collect());
    for (probe, found) in [
        (Bson::Int32(0), true),
        (Bson::Double(99_998.0), true),
        (Bson::Int32(99_999), false),
        (Bson::String("x".into()), false),
    ] {
        let n = comparisons_during(|| assert_eq!(set.contains(&probe), found, "{probe}"));
        // log2(100,000) < 17: a linear scan would take up to 100,000.
        assert!(n <= 18, "{n} comparisons for {probe}");
    }
}

#[test]
fn a_filter_with_100_000_values_matches_a_document_with_few_comparisons() {
    let values: Vec<Bson> = (0..100_000).map(Bson::Int32).collect();
    let filter = Filter::compile(&doc! {"a": {"$in": values}}).unwrap();
    let doc = doc! {"a": [1_000_000, 5, "x"]};
    let n = comparisons_during(|| assert!(filter.matches(&doc).unwrap()));
    // One binary search per reached value (the array, then its elements).
    assert!(n <= 4 * 18, "{n} comparisons");
}

#[test]
fn numbers_of_every_type_are_one_value() {
    let set = InSet::new(vec![
        Bson::Decimal128(Decimal128::from_str("1").unwrap()),
        Bson::Array(vec![Bson::Int32(1), Bson::Int32(2)]),
        Bson::Document(doc! {"x": 1}),
    ]);
    for probe in [
        Bson::Int32(1),
        Bson::Int64(1),
        Bson::Double(1.0),
        Bson::Array(vec![Bson::Double(1.0), Bson::Int64(2)]),
        Bson::Document(doc! {"x": 1.0}),
    ] {
        assert!(set.contains(&probe), "{probe}");
    }
    for probe in [Bson::Int32(2), Bson::Null, Bson::Document(doc! {"y": 1})] {
        assert!(!set.contains(&probe), "{probe}");
    }
}

fn value() -> impl Strategy<Value = Bson> {
    let leaf = prop_oneof![
        Just(Bson::Null),
        Just(Bson::Undefined),
        (-3i32..3).prop_map(Bson::Int32),
        (-3i64..3).prop_map(Bson::Int64),
        (-6i32..6).prop_map(|n| Bson::Double(f64::from(n) / 2.0)),
        Just(Bson::Double(f64::NAN)),
        (-3i32..3).prop_map(|n| Bson::Decimal128(Decimal128::from_str(&n.to_string()).unwrap())),
        "[ab]{0,2}".prop_map(Bson::String),
        any::<bool>().prop_map(Bson::Boolean),
        Just(Bson::MinKey),
        Just(Bson::MaxKey),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Bson::Array),
            prop::collection::vec(inner, 0..2).prop_map(|vs| {
                let mut d = bson::Document::new();
                for (i, v) in vs.into_iter().enumerate() {
                    d.insert(["x", "y"][i % 2], v);
                }
                Bson::Document(d)
            }),
        ]
    })
}

proptest! {
    /// The sorted lookup agrees with comparing against every listed value.
    #[test]
    fn lookup_agrees_with_a_linear_scan(
        listed in prop::collection::vec(value(), 0..12),
        probe in value(),
    ) {
        let set = InSet::new(listed.clone());
        let linear = listed
            .iter()
            .any(|v| !matches!(v, Bson::Null) && values_equal(v, &probe));
        prop_assert_eq!(set.contains(&probe), linear);
    }

    /// `$in` matches exactly when one of its values, as `$eq`, matches.
    #[test]
    fn in_matches_like_an_or_of_equalities(
        listed in prop::collection::vec(value(), 1..8),
        stored in value(),
    ) {
        let fast = Filter::compile(&doc! {"a": {"$in": listed.clone()}}).unwrap();
        let eqs: Vec<bson::Document> = listed.iter().map(|v| doc! {"a": {"$eq": v.clone()}}).collect();
        let slow = Filter::compile(&doc! {"$or": eqs}).unwrap();
        for d in [doc! {"a": stored.clone()}, doc! {"b": 1}, doc! {"a": [stored.clone(), 1]}] {
            prop_assert_eq!(fast.matches(&d).unwrap(), slow.matches(&d).unwrap(), "{}", d);
        }
    }
}
