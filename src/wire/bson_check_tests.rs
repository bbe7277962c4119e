use super::*;
use crate::error::ErrorCode;
use bson::spec::BinarySubtype;
use bson::{doc, oid::ObjectId, Binary, Bson, Decimal128, Document, Regex, Timestamp};
use proptest::prelude::*;

const LIMIT: usize = depth::MAX_BSON_DEPTH;

/// Both walks' verdicts, which must agree.
fn verdict(bytes: &[u8], limit: usize) -> bool {
    let fast = well_formed(bytes, limit);
    let reference = first_fault(bytes, limit);
    assert_eq!(
        fast,
        reference.is_ok(),
        "the walks disagree ({reference:?}) on {bytes:02x?}"
    );
    fast
}

/// Sets the length prefix of the document at `at` to the bytes up to its end, `end`.
fn fix_len(bytes: &mut [u8], at: usize, end: usize) {
    let len = i32::try_from(end - at).unwrap();
    bytes[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

/// A document of the given elements (type byte, name, value bytes each), framed by hand.
fn framed(elements: &[(u8, &[u8], &[u8])]) -> Vec<u8> {
    let mut out = vec![0; 4];
    for (tag, name, value) in elements {
        out.push(*tag);
        out.extend_from_slice(name);
        out.push(0);
        out.extend_from_slice(value);
    }
    out.push(0);
    let end = out.len();
    fix_len(&mut out, 0, end);
    out
}

fn string(s: &[u8]) -> Vec<u8> {
    let len = i32::try_from(s.len() + 1).unwrap();
    [&len.to_le_bytes()[..], s, &[0]].concat()
}

fn every_type() -> Vec<u8> {
    let doc = doc! {
        "d": 1.5, "s": "x", "o": {"a": 1}, "a": [1, "b"], "e": {}, "ea": [],
        "bin": Binary {subtype: BinarySubtype::Generic, bytes: vec![1, 2]},
        "old": Binary {subtype: BinarySubtype::BinaryOld, bytes: vec![3]},
        "empty": Binary {subtype: BinarySubtype::Generic, bytes: vec![]},
        "u": Bson::Undefined, "oid": ObjectId::from_bytes([1; 12]), "t": true, "f": false,
        "dt": bson::DateTime::from_millis(0), "n": Bson::Null,
        "re": Regex {pattern: "a".into(), options: "i".into()},
        "js": Bson::JavaScriptCode("f()".into()), "sym": Bson::Symbol("y".into()),
        "jss": bson::JavaScriptCodeWithScope {code: "g()".into(), scope: doc! {"v": [1]}},
        "i": 1, "ts": Timestamp {time: 1, increment: 2}, "l": 2_i64,
        "dec": Decimal128::from_bytes([0; 16]), "max": Bson::MaxKey, "min": Bson::MinKey,
        "utf8": "é€😀", "ké": "nul\u{0}inside",
    };
    let mut bytes = bson::to_vec(&doc).unwrap();
    // A DBPointer, which `bson` builds only by decoding, appended as bytes.
    bytes.pop();
    bytes.extend_from_slice(&[0x0c, b'p', 0]);
    bytes.extend_from_slice(&string(b"db.c"));
    bytes.extend_from_slice(&[9; 12]);
    bytes.push(0);
    let end = bytes.len();
    fix_len(&mut bytes, 0, end);
    bytes
}

#[test]
fn a_document_with_every_type_is_well_formed() {
    let bytes = every_type();
    assert!(verdict(&bytes, LIMIT));
    assert!(check(&bytes).is_ok());
    assert!(verdict(&bson::to_vec(&Document::new()).unwrap(), 0));
}

/// Each case breaks one rule of the `bson` crate's reader; both walks refuse it, and `check`
/// reports the reader's error.
#[test]
fn each_malformation_is_refused_by_both_walks() {
    let int = 7i32.to_le_bytes();
    let bad_utf8: &[u8] = &[0xff, 0xfe];
    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    let ok = framed(&[(0x10, b"a", &int)]);
    assert!(verdict(&ok, LIMIT));
    let mut long = ok.clone();
    long[0] += 1;
    cases.push(("length past the bytes", long));
    let mut short = ok.clone();
    short[0] -= 1;
    cases.push(("length short of the bytes", short));
    let mut negative = ok.clone();
    negative[3] = 0x80;
    cases.push(("negative length", negative));
    let mut unterminated = ok.clone();
    *unterminated.last_mut().unwrap() = 1;
    cases.push(("no terminating NUL", unterminated));
    cases.push(("too short", vec![4, 0, 0, 0]));
    cases.push(("unknown type", framed(&[(0x14, b"a", &[])])));
    cases.push(("type 0 before the end", framed(&[(0x00, b"a", &[])])));
    cases.push(("name not UTF-8", framed(&[(0x10, bad_utf8, &int)])));
    // A null whose name runs into the terminator: the element takes the document's last byte.
    let mut runaway = framed(&[(0x0a, b"a", &[])]);
    runaway.truncate(runaway.len() - 2);
    runaway.push(0);
    let end = runaway.len();
    fix_len(&mut runaway, 0, end);
    cases.push(("name runs to the end", runaway));
    cases.push((
        "int32 over the terminator",
        framed(&[(0x10, b"a", &int[..3])]),
    ));
    cases.push((
        "string length 0",
        framed(&[(0x02, b"s", &0i32.to_le_bytes())]),
    ));
    cases.push((
        "string past the document",
        framed(&[(0x02, b"s", &[&100i32.to_le_bytes()[..], b"x\0"].concat())]),
    ));
    cases.push((
        "string without its NUL",
        framed(&[(0x02, b"s", &[&2i32.to_le_bytes()[..], b"xy"].concat())]),
    ));
    cases.push((
        "string not UTF-8",
        framed(&[(0x02, b"s", &string(bad_utf8))]),
    ));
    cases.push(("code not UTF-8", framed(&[(0x0d, b"s", &string(bad_utf8))])));
    cases.push((
        "symbol not UTF-8",
        framed(&[(0x0e, b"s", &string(bad_utf8))]),
    ));
    let inner = framed(&[(0x10, b"b", &int)]);
    cases.push((
        "embedded document too small",
        framed(&[(0x03, b"o", &[4, 0, 0, 0, 0])]),
    ));
    let mut overlong = inner.clone();
    overlong[0] += 1;
    cases.push((
        "embedded document past its own",
        framed(&[(0x03, b"o", &overlong)]),
    ));
    let mut open = inner.clone();
    *open.last_mut().unwrap() = 1;
    cases.push((
        "embedded document unterminated",
        framed(&[(0x04, b"o", &open)]),
    ));
    // The embedded document's length takes in its parent's terminator.
    let mut swallowing = framed(&[(0x03, b"o", &inner)]);
    let inner_at = 4 + 1 + 2;
    swallowing[inner_at] += 1;
    cases.push(("embedded document over the terminator", swallowing));
    let mut bad_inner = inner.clone();
    bad_inner[4] = 0x14;
    cases.push((
        "bad element in an array",
        framed(&[(0x04, b"a", &bad_inner)]),
    ));
    cases.push(("boolean 2", framed(&[(0x08, b"t", &[2])])));
    cases.push((
        "binary length negative",
        framed(&[(0x05, b"b", &[0xff, 0xff, 0xff, 0xff, 0])]),
    ));
    cases.push((
        "binary past the document",
        framed(&[(0x05, b"b", &[&9i32.to_le_bytes()[..], &[0, 1]].concat())]),
    ));
    let old = |outer: i32, inner: i32| {
        [
            &outer.to_le_bytes()[..],
            &[2],
            &inner.to_le_bytes(),
            &[1, 2],
        ]
        .concat()
    };
    assert!(verdict(&framed(&[(0x05, b"b", &old(6, 2))]), LIMIT));
    cases.push((
        "old binary, inner length wrong",
        framed(&[(0x05, b"b", &old(6, 1))]),
    ));
    cases.push((
        "old binary, inner length negative",
        framed(&[(0x05, b"b", &old(6, -2))]),
    ));
    cases.push((
        "old binary, no inner length",
        framed(&[(0x05, b"b", &[2, 0, 0, 0, 2, 1, 1])]),
    ));
    cases.push((
        "regex pattern not UTF-8",
        framed(&[(0x0b, b"r", &[0xff, 0, b'i', 0])]),
    ));
    cases.push((
        "regex options not UTF-8",
        framed(&[(0x0b, b"r", &[b'a', 0, 0xff, 0])]),
    ));
    cases.push(("regex without options", framed(&[(0x0b, b"r", b"a\0")])));
    cases.push(("object id cut short", framed(&[(0x07, b"i", &[1; 11])])));
    cases.push(("decimal cut short", framed(&[(0x13, b"d", &[1; 15])])));
    cases.push((
        "db pointer without its id",
        framed(&[(0x0c, b"p", &[&string(b"n")[..], &[1; 11]].concat())]),
    ));
    cases.push((
        "db pointer not UTF-8",
        framed(&[(0x0c, b"p", &[&string(bad_utf8)[..], &[1; 12]].concat())]),
    ));
    let scope = bson::to_vec(&doc! {"v": 1}).unwrap();
    let code_with_scope =
        |whole: i32, code: &[u8], scope: &[u8]| [&whole.to_le_bytes()[..], code, scope].concat();
    let whole = i32::try_from(4 + string(b"f").len() + scope.len()).unwrap();
    assert!(verdict(
        &framed(&[(0x0f, b"c", &code_with_scope(whole, &string(b"f"), &scope))]),
        LIMIT
    ));
    cases.push((
        "code with scope too small",
        framed(&[(
            0x0f,
            b"c",
            &code_with_scope(13, &string(b""), &[5, 0, 0, 0]),
        )]),
    ));
    // Bytes after the scope that would read as a null element of the parent.
    let padded = [
        &code_with_scope(whole + 3, &string(b"f"), &scope)[..],
        &[0x0a, b'x', 0],
    ]
    .concat();
    cases.push((
        "code with scope longer than its parts",
        framed(&[(0x0f, b"c", &padded)]),
    ));
    cases.push((
        "code with scope, code not UTF-8",
        framed(&[(
            0x0f,
            b"c",
            &code_with_scope(whole, &string(&[0xff]), &scope),
        )]),
    ));
    let mut bad_scope = scope.clone();
    bad_scope[4] = 0x14;
    cases.push((
        "code with scope, bad scope element",
        framed(&[(
            0x0f,
            b"c",
            &code_with_scope(whole, &string(b"f"), &bad_scope),
        )]),
    ));
    cases.push((
        "code with scope, code past the whole",
        framed(&[(
            0x0f,
            b"c",
            &code_with_scope(whole, &string(b"fffffffffffff"), &scope),
        )]),
    ));
    for (name, bytes) in cases {
        assert!(!verdict(&bytes, LIMIT), "{name}: accepted");
        let error = check(&bytes).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidBSON, "{name}: {error:?}");
        assert!(
            error.message.starts_with("invalid BSON: "),
            "{name}: {error:?}"
        );
    }
}

/// A document `levels` deep, cycling through embedded documents, arrays and code-with-scope
/// scopes.
fn nested(levels: usize) -> Vec<u8> {
    let mut inner = vec![5u8, 0, 0, 0, 0];
    for level in (0..levels).rev() {
        inner = match level % 3 {
            0 => framed(&[(0x03, b"a", &inner)]),
            1 => framed(&[(0x04, b"0", &inner)]),
            _ => {
                let code = string(b"f");
                let whole = i32::try_from(4 + code.len() + inner.len()).unwrap();
                framed(&[(
                    0x0f,
                    b"c",
                    &[&whole.to_le_bytes()[..], &code, &inner].concat(),
                )])
            }
        };
    }
    inner
}

#[test]
fn depth_is_counted_alike_by_both_walks() {
    for levels in [0, 1, 2, 3, 4, 5, 6, 199, 200, 201] {
        let bytes = nested(levels);
        for limit in [0, 1, 2, 3, 5, 200] {
            assert_eq!(
                verdict(&bytes, limit),
                levels <= limit,
                "{levels} levels, limit {limit}"
            );
        }
    }
    let error = check(&nested(201)).unwrap_err();
    assert_eq!(error.code, ErrorCode::Overflow);
}

fn leaf() -> impl Strategy<Value = Bson> {
    prop_oneof![
        any::<f64>().prop_map(Bson::Double),
        "[a-zé😀\u{0}]{0,6}".prop_map(Bson::String),
        any::<bool>().prop_map(Bson::Boolean),
        any::<i32>().prop_map(Bson::Int32),
        any::<i64>().prop_map(Bson::Int64),
        Just(Bson::Null),
        Just(Bson::Undefined),
        Just(Bson::MinKey),
        Just(Bson::MaxKey),
        any::<[u8; 12]>().prop_map(|b| Bson::ObjectId(ObjectId::from_bytes(b))),
        any::<[u8; 16]>().prop_map(|b| Bson::Decimal128(Decimal128::from_bytes(b))),
        any::<i64>().prop_map(|ms| Bson::DateTime(bson::DateTime::from_millis(ms))),
        (any::<u32>(), any::<u32>())
            .prop_map(|(time, increment)| Bson::Timestamp(Timestamp { time, increment })),
        ("[a-c^$]{0,3}", "[imsx]{0,2}")
            .prop_map(|(pattern, options)| { Bson::RegularExpression(Regex { pattern, options }) }),
        (0u8..=6, proptest::collection::vec(any::<u8>(), 0..6)).prop_map(|(subtype, bytes)| {
            Bson::Binary(Binary {
                subtype: BinarySubtype::from(subtype),
                bytes,
            })
        }),
        "[a-z]{0,4}".prop_map(Bson::JavaScriptCode),
        "[a-z]{0,4}".prop_map(Bson::Symbol),
    ]
}

fn value() -> impl Strategy<Value = Bson> {
    leaf().prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Bson::Array),
            proptest::collection::vec(("[a-z_]{0,3}", inner.clone()), 0..4)
                .prop_map(|fields| Bson::Document(fields.into_iter().collect())),
            (
                "[a-z]{0,3}",
                proptest::collection::vec(("[a-z]{1,2}", inner), 0..3)
            )
                .prop_map(|(code, fields)| {
                    Bson::JavaScriptCodeWithScope(bson::JavaScriptCodeWithScope {
                        code,
                        scope: fields.into_iter().collect(),
                    })
                }),
        ]
    })
}

fn document() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(("[a-z_é]{0,3}", value()), 0..5).prop_map(|fields| {
        let doc: Document = fields.into_iter().collect();
        bson::to_vec(&doc).unwrap()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Well-formed documents, then the same with bytes overwritten, inserted or removed (and the
    /// top-level length made to agree, so that the damage is found inside): the walks agree.
    #[test]
    fn the_walks_agree_on_damaged_documents(
        bytes in document(),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..4), 0..4),
        limit in prop_oneof![Just(0usize), Just(1), Just(2), Just(LIMIT)],
    ) {
        let mut bytes = bytes;
        prop_assert!(well_formed(&bytes, LIMIT));
        for (at, byte, how) in edits {
            let at = at % bytes.len();
            match how {
                0 | 1 => bytes[at] = byte,
                2 => bytes.insert(at, byte),
                _ => {
                    bytes.remove(at);
                }
            }
            if how >= 1 && bytes.len() >= 4 {
                let end = bytes.len();
                fix_len(&mut bytes, 0, end);
            }
            if bytes.is_empty() {
                break;
            }
        }
        verdict(&bytes, limit);
    }

    #[test]
    fn the_walks_agree_on_arbitrary_bytes(
        bytes in proptest::collection::vec(any::<u8>(), 0..64),
        fix in any::<bool>(),
    ) {
        let mut bytes = bytes;
        if fix && bytes.len() >= 4 {
            let end = bytes.len();
            fix_len(&mut bytes, 0, end);
        }
        verdict(&bytes, LIMIT);
    }
}
