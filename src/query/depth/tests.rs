use super::*;
use bson::{doc, Bson, Document};

/// `{a: {a: ... {a: 1}}}` with `levels` documents in all (the outer one included).
pub(crate) fn nested_doc(levels: usize) -> Document {
    let mut d = doc! {"a": 1};
    for _ in 1..levels {
        d = doc! {"a": d};
    }
    d
}

fn bytes(d: &Document) -> Vec<u8> {
    let mut out = Vec::new();
    d.to_writer(&mut out).unwrap();
    out
}

#[test]
fn scan_counts_levels_of_documents_arrays_and_scopes() {
    let arrays = doc! {"a": [[[1]]]};
    let scope = doc! {"c": Bson::JavaScriptCodeWithScope(bson::JavaScriptCodeWithScope {
        code: "x".into(),
        scope: doc! {"s": {"t": 1}},
    })};
    let empties = doc! {"a": {"b": {}}, "c": []};
    let cases: &[(&Document, usize, Count, Depth)] = &[
        (&doc! {}, 1, Count::All, Depth::Within),
        (&arrays, 4, Count::All, Depth::Within),
        (&arrays, 3, Count::All, Depth::TooDeep),
        (&scope, 3, Count::All, Depth::Within),
        (&scope, 2, Count::All, Depth::TooDeep),
        (&empties, 2, Count::All, Depth::TooDeep),
        (&empties, 2, Count::NonEmpty, Depth::Within),
        (&empties, 1, Count::NonEmpty, Depth::TooDeep),
    ];
    for (d, max, count, want) in cases {
        assert_eq!(scan(&bytes(d), *max, *count), *want, "{d} within {max}");
    }
}

#[test]
fn scan_is_exact_at_the_limits() {
    for levels in [1, 2, 99, 100, 101, 200, 201, 202] {
        let b = bytes(&nested_doc(levels));
        let want = |max: usize| {
            if levels > max {
                Depth::TooDeep
            } else {
                Depth::Within
            }
        };
        assert_eq!(scan(&b, 100, Count::NonEmpty), want(100), "{levels}");
        assert_eq!(scan(&b, 201, Count::All), want(201), "{levels}");
    }
    assert!(check_request(&bytes(&nested_doc(201))).is_ok());
    let err = check_request(&bytes(&nested_doc(202))).unwrap_err();
    assert_eq!(err.code, ErrorCode::Overflow);
    assert!(check_storable(&bytes(&nested_doc(100)), Write::Insert).is_ok());
    let err = check_storable(&bytes(&nested_doc(101)), Write::Update).unwrap_err();
    assert_eq!(err.code, ErrorCode::Overflow);
    assert_eq!(err.message, "Document exceeds maximum nesting depth of 100");
}

/// The shortest documents of 100 and 101 levels (`{"": {"": ... {"": null}}}`) sit on either
/// side of the length below which `check_storable` does not scan: the shortcut is exact.
#[test]
fn no_document_shorter_than_the_bound_is_too_deep_to_store() {
    let shortest = |levels: usize| {
        let mut d = doc! {"": Bson::Null};
        for _ in 1..levels {
            d = doc! {"": d};
        }
        bytes(&d)
    };
    let within = shortest(MAX_STORED_DEPTH);
    let over = shortest(MAX_STORED_DEPTH + 1);
    assert_eq!(within.len(), MIN_BYTES_PER_LEVEL * MAX_STORED_DEPTH);
    assert_eq!(over.len(), MIN_BYTES_PER_LEVEL * (MAX_STORED_DEPTH + 1));
    assert_eq!(
        scan(&within, MAX_STORED_DEPTH, Count::NonEmpty),
        Depth::Within
    );
    assert!(check_storable(&within, Write::Insert).is_ok());
    let err = check_storable(&over, Write::Insert).unwrap_err();
    assert_eq!(err.code, ErrorCode::Overflow);
}

proptest::proptest! {
    /// Against the scan: any chain of nested documents and arrays (names empty or not,
    /// innermost empty or not) shorter than the bound is within the limit.
    #[test]
    fn documents_shorter_than_the_bound_scan_within_the_limit(
        wrappers in proptest::collection::vec((proptest::bool::ANY, proptest::bool::ANY), 0..130),
        innermost in 0..3u8,
    ) {
        let mut value = match innermost {
            0 => Bson::Document(Document::new()),
            1 => Bson::Document(doc! {"": Bson::Null}),
            _ => Bson::Array(vec![Bson::Int32(1)]),
        };
        for (array, named) in wrappers {
            value = if array {
                Bson::Array(vec![value])
            } else if named {
                Bson::Document(doc! {"name": value})
            } else {
                Bson::Document(doc! {"": value})
            };
        }
        let encoded = bytes(&doc! {"": value});
        if encoded.len() < MIN_BYTES_PER_LEVEL * (MAX_STORED_DEPTH + 1) {
            proptest::prop_assert_eq!(
                scan(&encoded, MAX_STORED_DEPTH, Count::NonEmpty),
                Depth::Within
            );
        }
    }
}

/// Built by hand, never through the recursive encoder: `levels` nested documents.
fn deep_bytes(levels: usize) -> Vec<u8> {
    // Each level is [len][0x03 'a' 0][inner][0]; the innermost is {} (5 bytes).
    let mut body = vec![5, 0, 0, 0, 0];
    for _ in 1..levels {
        let len = (4 + 3 + body.len() + 1) as i32;
        let mut outer = len.to_le_bytes().to_vec();
        outer.extend_from_slice(&[0x03, b'a', 0]);
        outer.extend_from_slice(&body);
        outer.push(0);
        body = outer;
    }
    body
}

#[test]
fn scan_of_a_very_deep_document_uses_no_recursion() {
    let b = deep_bytes(100_000);
    // Run on a small stack: a recursive scan would overflow it.
    let depth = std::thread::Builder::new()
        .stack_size(64 * 1024)
        .spawn(move || scan(&b, usize::MAX, Count::All))
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(depth, Depth::Within);
    assert_eq!(scan(&deep_bytes(100_000), 201, Count::All), Depth::TooDeep);
}

#[test]
fn malformed_bytes_are_reported_not_followed() {
    let good = bytes(&doc! {"a": {"b": "c"}});
    let mut cases: Vec<Vec<u8>> = vec![vec![], vec![5, 0, 0], good[..good.len() - 1].to_vec()];
    // An inner length that overruns its parent.
    let mut overrun = good.clone();
    overrun[7] = 0x7f;
    cases.push(overrun);
    // An unknown element type.
    let mut unknown = good.clone();
    unknown[4] = 0x42;
    cases.push(unknown);
    for case in cases {
        assert_eq!(scan(&case, 10, Count::All), Depth::Malformed, "{case:?}");
        assert_eq!(
            check_request(&case).unwrap_err().code,
            ErrorCode::InvalidBSON
        );
    }
}

#[test]
fn paths_longer_than_the_limit_are_refused() {
    let ok = vec!["a"; MAX_PATH_COMPONENTS].join(".");
    assert!(check_path(&ok).is_ok());
    let long = vec!["a"; MAX_PATH_COMPONENTS + 1].join(".");
    let err = check_path(&long).unwrap_err();
    assert_eq!(
        (err.code, err.message.as_str()),
        (ErrorCode::Overflow, "FieldPath is too long")
    );
}

#[test]
fn documents_built_in_memory_are_checked_without_recursion() {
    assert!(check_document(&nested_doc(201)).is_ok());
    let err = check_document(&nested_doc(202)).unwrap_err();
    assert_eq!(err.code, ErrorCode::Overflow);
    let mut arrays = Bson::Int32(1);
    for _ in 0..201 {
        arrays = Bson::Array(vec![Bson::Int32(0), arrays]);
    }
    assert!(check_document(&doc! {"a": arrays.clone()}).is_err());
    let Bson::Array(inner) = arrays else {
        unreachable!()
    };
    assert!(check_document(&doc! {"a": inner[1].clone(), "b": [{"c": [1]}]}).is_ok());
}
