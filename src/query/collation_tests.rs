use super::*;
use bson::doc;

fn parse(spec: Document) -> Collation {
    match Collation::parse(&spec) {
        Ok(Some(c)) => c,
        other => panic!("{spec:?}: {other:?}"),
    }
}

#[test]
fn simple_is_no_collator() {
    assert!(matches!(
        Collation::parse(&doc! {"locale": "simple"}),
        Ok(None)
    ));
}

#[test]
fn invalid_specs_get_mongods_codes_and_messages() {
    let cases: Vec<(Document, i32, &str)> = vec![
        (doc! {}, 4, "Missing expected field \"locale\""),
        (
            doc! {"locale": 1},
            14,
            "\"locale\" had the wrong type. Expected string, found int",
        ),
        (
            doc! {"locale": "simple", "strength": 2},
            9,
            "If locale=simple, no other fields should be present in: { locale: \"simple\", strength: 2 }",
        ),
        (
            doc! {"locale": ""},
            2,
            "Field 'locale' cannot be the empty string in: { locale: \"\" }",
        ),
        (
            doc! {"locale": "xx"},
            2,
            "Field 'locale' is invalid in: { locale: \"xx\" }",
        ),
        (
            doc! {"locale": "en", "strength": 6},
            9,
            "Field 'strength' must be an integer 1 through 5. Got: 6",
        ),
        (
            doc! {"locale": "en", "strength": 0},
            9,
            "Field 'strength' must be an integer 1 through 5. Got: 0",
        ),
        (
            doc! {"locale": "en", "strength": "2"},
            14,
            "Expected field \"strength\" to have numeric type, but found string",
        ),
        (
            doc! {"locale": "en", "strength": 2.5},
            2,
            "Expected field \"strength\" to have a value exactly representable as a 64-bit integer, but found strength: 2.5",
        ),
        (
            doc! {"locale": "en", "caseFirst": "sideways"},
            9,
            "Field 'caseFirst' must be 'upper', 'lower', or 'off'. Got: sideways",
        ),
        (
            doc! {"locale": "en", "caseLevel": 1},
            14,
            "\"caseLevel\" had the wrong type. Expected bool, found int",
        ),
        (
            doc! {"locale": "en", "alternate": "blanked"},
            9,
            "Field 'alternate' must be 'non-ignorable' or 'shifted'. Got: blanked",
        ),
        (
            doc! {"locale": "en", "maxVariable": "symbol"},
            9,
            "Field 'maxVariable' must be 'punct' or 'space'. Got: symbol",
        ),
        (
            doc! {"locale": "en", "colour": "blue"},
            9,
            "Collation spec contains unknown field. Collation spec: { locale: \"en\", colour: \"blue\" }",
        ),
        (
            doc! {"locale": "en", "version": "1.0"},
            95,
            "Requested collation version 1.0 but the only available collator version was 57.1. Requested collation spec: { locale: \"en\", version: \"1.0\" }",
        ),
        (
            doc! {"locale": "en", "caseFirst": "upper", "strength": 2},
            2,
            "'caseFirst' is invalid unless 'caseLevel' is on or 'strength' is greater than 2 in: { locale: \"en\", caseLevel: false, caseFirst: \"upper\", strength: 2, numericOrdering: false, alternate: \"non-ignorable\", maxVariable: \"punct\", normalization: false, backwards: false, version: \"57.1\" }",
        ),
        (
            doc! {"locale": "fr_CA", "strength": 1},
            2,
            "'backwards' is invalid with 'strength' of 1 in: { locale: \"fr_CA\", caseLevel: false, caseFirst: \"off\", strength: 1, numericOrdering: false, alternate: \"non-ignorable\", maxVariable: \"punct\", normalization: false, backwards: true, version: \"57.1\" }",
        ),
    ];
    for (spec, code, message) in cases {
        let err = Collation::parse(&spec).expect_err(&format!("{spec:?}"));
        assert_eq!(
            (err.code.code(), err.message.as_str()),
            (code, message),
            "{spec:?}"
        );
    }
}

#[test]
fn backwards_other_than_the_locales_is_refused() {
    for spec in [
        doc! {"locale": "fr", "backwards": true},
        doc! {"locale": "fr_CA", "backwards": false},
    ] {
        let err = Collation::parse(&spec).expect_err(&format!("{spec:?}"));
        assert_eq!(err.code.code(), 238, "{spec:?}");
    }
    assert!(
        parse(doc! {"locale": "fr_CA", "backwards": true})
            .spec()
            .backwards
    );
    assert!(
        !parse(doc! {"locale": "fr", "backwards": false})
            .spec()
            .backwards
    );
}

#[test]
fn the_normalized_spec_is_mongods_full_form() {
    assert_eq!(
        parse(doc! {"locale": "en_US", "strength": 2}).to_document(),
        doc! {
            "locale": "en_US", "caseLevel": false, "caseFirst": "off", "strength": 2,
            "numericOrdering": false, "alternate": "non-ignorable", "maxVariable": "punct",
            "normalization": false, "backwards": false, "version": "57.1",
        }
    );
    let full = doc! {
        "locale": "de", "caseLevel": true, "caseFirst": "upper", "strength": 3,
        "numericOrdering": true, "alternate": "shifted", "maxVariable": "space",
        "normalization": true, "backwards": false, "version": "57.1",
    };
    assert_eq!(parse(full.clone()).to_document(), full);
    // Locale defaults: Danish sorts upper case first.
    assert_eq!(parse(doc! {"locale": "da"}).spec().case_first, "upper");
}

#[test]
fn collations_are_equal_when_their_options_resolve_alike() {
    assert_eq!(
        parse(doc! {"locale": "en", "strength": 3}),
        parse(doc! {"locale": "en"})
    );
    assert_ne!(
        parse(doc! {"locale": "en", "strength": 2}),
        parse(doc! {"locale": "en"})
    );
}

#[test]
fn options_change_the_order_as_mongodbs_collation_docs_say() {
    use Ordering::*;
    let cases: Vec<(Document, &str, &str, Ordering)> = vec![
        // Strength 1: base letters only.
        (doc! {"locale": "en", "strength": 1}, "cafe", "Café", Equal),
        // Strength 2: accents count, case does not.
        (doc! {"locale": "en", "strength": 2}, "cafe", "CAFE", Equal),
        (doc! {"locale": "en", "strength": 2}, "cafe", "café", Less),
        // Strength 3 (the default): lower case first.
        (doc! {"locale": "en"}, "a", "A", Less),
        (doc! {"locale": "en", "caseFirst": "upper"}, "A", "a", Less),
        // Case level at strength 1: case counts, accents do not.
        (
            doc! {"locale": "en", "strength": 1, "caseLevel": true},
            "a",
            "A",
            Less,
        ),
        (
            doc! {"locale": "en", "strength": 1, "caseLevel": true},
            "a",
            "á",
            Equal,
        ),
        // Numeric ordering.
        (doc! {"locale": "en"}, "10", "9", Less),
        (
            doc! {"locale": "en", "numericOrdering": true},
            "10",
            "9",
            Greater,
        ),
        // Shifted: spaces and punctuation are ignored (below strength 4).
        (
            doc! {"locale": "en", "alternate": "shifted"},
            "black-bird",
            "blackbird",
            Equal,
        ),
        (
            doc! {"locale": "en", "alternate": "shifted"},
            "black bird",
            "blackbird",
            Equal,
        ),
        (doc! {"locale": "en"}, "black bird", "blackbird", Less),
        // maxVariable space: punctuation is no longer ignorable.
        (
            doc! {"locale": "en", "alternate": "shifted", "maxVariable": "space"},
            "black-bird",
            "blackbird",
            Less,
        ),
        // French (Canada) compares accents from the end of the string.
        (doc! {"locale": "fr_CA"}, "côte", "coté", Less),
        (doc! {"locale": "fr"}, "côte", "coté", Greater),
        // German phone book: ä sorts as ae.
        (
            doc! {"locale": "de@collation=phonebook", "strength": 1},
            "ä",
            "ae",
            Equal,
        ),
    ];
    for (spec, a, b, expected) in cases {
        let c = parse(spec.clone());
        assert_eq!(c.compare(a, b), expected, "{spec:?}: {a} vs {b}");
        let (mut ka, mut kb) = (Vec::new(), Vec::new());
        c.write_sort_key(a, &mut ka);
        c.write_sort_key(b, &mut kb);
        assert_eq!(ka.cmp(&kb), expected, "sort keys, {spec:?}: {a} vs {b}");
    }
}

#[test]
fn collations_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Collation>();
}

mod comparison {
    use super::*;
    use crate::query::compare::{compare_values, compare_values_with, values_equal_with};
    use bson::Bson;
    use proptest::prelude::*;

    #[test]
    fn strings_compare_through_the_collation_wherever_they_are() {
        let ci = parse(doc! {"locale": "en", "strength": 2});
        let cases: Vec<(Bson, Bson)> = vec![
            (Bson::String("ABC".into()), Bson::String("abc".into())),
            (Bson::Symbol("ABC".into()), Bson::String("abc".into())),
            (
                Bson::Array(vec![Bson::Int32(1), Bson::String("X".into())]),
                Bson::Array(vec![Bson::Double(1.0), Bson::String("x".into())]),
            ),
            (
                Bson::Document(doc! {"a": {"b": "Hello"}}),
                Bson::Document(doc! {"a": {"b": "hello"}}),
            ),
        ];
        for (a, b) in cases {
            assert!(values_equal_with(&a, &b, Some(&ci)), "{a:?} = {b:?}");
            assert_ne!(
                compare_values(&a, &b),
                Ordering::Equal,
                "{a:?} != {b:?} simple"
            );
        }
        // Field names are not collated; other types and type brackets are as without one.
        let (a, b) = (Bson::Document(doc! {"A": 1}), Bson::Document(doc! {"a": 1}));
        assert_eq!(
            compare_values_with(&a, &b, Some(&ci)),
            compare_values(&a, &b)
        );
        assert_eq!(
            compare_values_with(&Bson::Int32(5), &Bson::String("a".into()), Some(&ci)),
            Ordering::Less
        );
    }

    fn leaf() -> impl Strategy<Value = Bson> {
        prop_oneof![
            Just(Bson::Null),
            any::<i32>().prop_map(Bson::Int32),
            (-3i32..3).prop_map(|i| Bson::Double(f64::from(i) / 2.0)),
            "[aAbé -]{0,3}".prop_map(Bson::String),
            "[aA]{0,2}".prop_map(Bson::Symbol),
            any::<bool>().prop_map(Bson::Boolean),
        ]
    }

    fn value() -> impl Strategy<Value = Bson> {
        leaf().prop_recursive(2, 8, 3, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(Bson::Array),
                proptest::collection::vec(("[ab]", inner), 0..3)
                    .prop_map(|kv| Bson::Document(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// The simple collation is no collator: exactly `compare_values`.
        #[test]
        fn simple_is_compare_values(a in value(), b in value()) {
            let simple = Collation::parse(&doc! {"locale": "simple"}).unwrap();
            prop_assert_eq!(compare_values_with(&a, &b, simple.as_ref()), compare_values(&a, &b));
        }

        /// A collated order is still a total order: antisymmetric and transitive.
        #[test]
        fn collated_order_is_total(a in value(), b in value(), c in value()) {
            let coll = parse(doc! {"locale": "en", "strength": 1, "alternate": "shifted"});
            let cmp = |x: &Bson, y: &Bson| compare_values_with(x, y, Some(&coll));
            prop_assert_eq!(cmp(&a, &b), cmp(&b, &a).reverse());
            if cmp(&a, &b) != Ordering::Greater && cmp(&b, &c) != Ordering::Greater {
                prop_assert_ne!(cmp(&a, &c), Ordering::Greater);
            }
        }
    }
}
