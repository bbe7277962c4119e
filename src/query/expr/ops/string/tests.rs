//! String operators: UTF-8 bytes versus code points, mongod's coercions and errors.

use crate::error::ErrorCode;
use crate::query::expr::tests::eval;
use bson::{bson, doc, Bson, Regex as BsonRegex};

fn check(d: &bson::Document, cases: &[(Bson, Bson)]) {
    for (spec, want) in cases {
        assert_eq!(eval(spec.clone(), d), Ok(Some(want.clone())), "{spec}");
    }
}

fn fails(d: &bson::Document, cases: &[(Bson, ErrorCode)]) {
    for (spec, code) in cases {
        assert_eq!(eval(spec.clone(), d), Err(*code), "{spec}");
    }
}

#[test]
fn concat_split_lengths_and_case() {
    let d = doc! {"s": "cafétéria", "n": null, "i": 5};
    check(
        &d,
        &[
            (bson!({"$concat": ["a", "-", "b"]}), bson!("a-b")),
            (bson!({"$concat": []}), bson!("")),
            (bson!({"$concat": ["a", "$n"]}), Bson::Null),
            (bson!({"$concat": ["a", "$nope"]}), Bson::Null),
            (
                bson!({"$split": ["June-15-2013", "-"]}),
                bson!(["June", "15", "2013"]),
            ),
            (
                bson!({"$split": ["banana split", "a"]}),
                bson!(["b", "n", "n", " split"]),
            ),
            (
                bson!({"$split": ["Hello World", " "]}),
                bson!(["Hello", "World"]),
            ),
            (
                bson!({"$split": ["astronomical", "astro"]}),
                bson!(["", "nomical"]),
            ),
            (bson!({"$split": ["pea", "pea"]}), bson!(["", ""])),
            (bson!({"$split": ["", ","]}), bson!([""])),
            (bson!({"$split": ["$n", ","]}), Bson::Null),
            (bson!({"$strLenBytes": "$s"}), bson!(11)),
            (bson!({"$strLenBytes": "寿司"}), bson!(6)),
            (bson!({"$strLenCP": "$s"}), bson!(9)),
            (bson!({"$strLenCP": "寿司"}), bson!(2)),
            (bson!({"$toUpper": "$s"}), bson!("CAFéTéRIA")),
            (bson!({"$toLower": "ABC1"}), bson!("abc1")),
            (bson!({"$toLower": "$n"}), bson!("")),
            (bson!({"$toUpper": "$i"}), bson!("5")),
            (bson!({"$toUpper": 1.5}), bson!("1.5")),
            (bson!({"$strcasecmp": ["abc", "ABC"]}), bson!(0)),
            (bson!({"$strcasecmp": ["abc", "ABD"]}), bson!(-1)),
            (bson!({"$strcasecmp": ["b", "A"]}), bson!(1)),
            (bson!({"$strcasecmp": ["$n", ""]}), bson!(0)),
        ],
    );
    fails(
        &d,
        &[
            (bson!({"$concat": ["a", 1]}), ErrorCode::Location16702),
            (bson!({"$split": [1, "a"]}), ErrorCode::Location40085),
            (bson!({"$split": ["a", 1]}), ErrorCode::Location40086),
            (bson!({"$split": ["a", ""]}), ErrorCode::Location40087),
            (bson!({"$strLenBytes": "$nope"}), ErrorCode::Location34473),
            (bson!({"$strLenCP": 1}), ErrorCode::Location34471),
            (bson!({"$toLower": [[]]}), ErrorCode::Location16007),
            (bson!({"$toUpper": {"a": 1}}), ErrorCode::Location16007),
            (bson!({"$strcasecmp": ["a"]}), ErrorCode::Location16020),
        ],
    );
}

#[test]
fn substrings_by_byte_and_code_point() {
    let d = doc! {"s": "cafétéria", "sushi": "寿司sushi"};
    check(
        &d,
        &[
            (bson!({"$substrBytes": ["$s", 0, 3]}), bson!("caf")),
            (bson!({"$substrBytes": ["$s", 3, 2]}), bson!("é")),
            (bson!({"$substrBytes": ["$s", 5, -1]}), bson!("téria")),
            (bson!({"$substrBytes": ["$s", 50, 2]}), bson!("")),
            (bson!({"$substrBytes": ["abc", 1.9, 1.2]}), bson!("b")),
            (bson!({"$substr": ["$s", 0, 3]}), bson!("caf")),
            (bson!({"$substrBytes": ["$nope", 0, 3]}), bson!("")),
            (bson!({"$substrBytes": [12345, 1, 2]}), bson!("23")),
            (bson!({"$substrCP": ["$s", 3, 2]}), bson!("ét")),
            (bson!({"$substrCP": ["$sushi", 0, 2]}), bson!("寿司")),
            (bson!({"$substrCP": ["$sushi", 2, 100]}), bson!("sushi")),
            (bson!({"$substrCP": ["abc", 5, 1]}), bson!("")),
            (bson!({"$indexOfBytes": ["cafeteria", "e"]}), bson!(3)),
            (bson!({"$indexOfBytes": ["cafétéria", "é"]}), bson!(3)),
            (bson!({"$indexOfBytes": ["cafétéria", "e"]}), bson!(-1)),
            (bson!({"$indexOfBytes": ["cafétéria", "t"]}), bson!(5)),
            (bson!({"$indexOfBytes": ["foo.bar.fi", ".", 5]}), bson!(7)),
            (bson!({"$indexOfBytes": ["vanilla", "ll", 0, 2]}), bson!(-1)),
            (bson!({"$indexOfBytes": ["vanilla", "ll", 12]}), bson!(-1)),
            (bson!({"$indexOfBytes": ["vanilla", "ll", 5, 2]}), bson!(-1)),
            (bson!({"$indexOfBytes": ["vanilla", "nilla", 3]}), bson!(-1)),
            (bson!({"$indexOfBytes": ["abc", "", 3]}), bson!(3)),
            (bson!({"$indexOfBytes": [null, "foo"]}), Bson::Null),
            (bson!({"$indexOfCP": ["cafeteria", "e"]}), bson!(3)),
            (bson!({"$indexOfCP": ["cafétéria", "é"]}), bson!(3)),
            (bson!({"$indexOfCP": ["cafétéria", "e"]}), bson!(-1)),
            (bson!({"$indexOfCP": ["cafétéria", "t"]}), bson!(4)),
            (bson!({"$indexOfCP": ["foo.bar.fi", ".", 5]}), bson!(7)),
            (bson!({"$indexOfCP": ["vanilla", "ll", 0, 2]}), bson!(-1)),
            (bson!({"$indexOfCP": ["vanilla", "ll", 12]}), bson!(-1)),
            (bson!({"$indexOfCP": ["vanilla", "ll", 5, 2]}), bson!(-1)),
            (bson!({"$indexOfCP": ["vanilla", "nilla", 3]}), bson!(-1)),
            (bson!({"$indexOfCP": ["", ""]}), bson!(0)),
            (bson!({"$indexOfCP": ["abc", "", 3]}), bson!(-1)),
            (bson!({"$indexOfCP": ["寿司sushi", "s", 1]}), bson!(2)),
            (bson!({"$indexOfCP": [null, "foo"]}), Bson::Null),
        ],
    );
    fails(
        &d,
        &[
            // Byte 4 is the second byte of "é".
            (
                bson!({"$substrBytes": ["$s", 4, 2]}),
                ErrorCode::Location28656,
            ),
            (
                bson!({"$substrBytes": ["$s", 0, 4]}),
                ErrorCode::Location28657,
            ),
            (
                bson!({"$substrBytes": ["$s", "0", 4]}),
                ErrorCode::Location16034,
            ),
            (
                bson!({"$substrBytes": ["$s", 0, "4"]}),
                ErrorCode::Location16035,
            ),
            (
                bson!({"$substrBytes": ["$s", -1, 4]}),
                ErrorCode::Location50752,
            ),
            (
                bson!({"$substrBytes": [[], 0, 1]}),
                ErrorCode::Location16007,
            ),
            (bson!({"$substr": ["$s", 0]}), ErrorCode::Location16020),
            (
                bson!({"$substrCP": ["$s", "0", 4]}),
                ErrorCode::Location34450,
            ),
            (
                bson!({"$substrCP": ["$s", 0.5, 4]}),
                ErrorCode::Location34451,
            ),
            (
                bson!({"$substrCP": ["$s", 0, null]}),
                ErrorCode::Location34452,
            ),
            (
                bson!({"$substrCP": ["$s", 0, 1.5]}),
                ErrorCode::Location34453,
            ),
            (
                bson!({"$substrCP": ["$s", 0, -1]}),
                ErrorCode::Location34454,
            ),
            (
                bson!({"$substrCP": ["$s", -1, 1]}),
                ErrorCode::Location34455,
            ),
            (bson!({"$indexOfBytes": [1, "a"]}), ErrorCode::Location40091),
            (
                bson!({"$indexOfBytes": ["a", null]}),
                ErrorCode::Location40092,
            ),
            (
                bson!({"$indexOfBytes": ["a", "a", "1"]}),
                ErrorCode::Location40096,
            ),
            (
                bson!({"$indexOfBytes": ["a", "a", -1]}),
                ErrorCode::Location40097,
            ),
            (bson!({"$indexOfCP": [1, "a"]}), ErrorCode::Location40093),
            (bson!({"$indexOfCP": ["a", 1]}), ErrorCode::Location40094),
            (
                bson!({"$indexOfCP": ["a", "a", 0, 1.5]}),
                ErrorCode::Location40096,
            ),
            (bson!({"$indexOfCP": ["a"]}), ErrorCode::Location28667),
        ],
    );
}

#[test]
fn trim_and_replace() {
    let d = doc! {"s": " \t ggggoodbyeeeee\u{2003}\n", "n": null};
    check(
        &d,
        &[
            (bson!({"$trim": {"input": "$s"}}), bson!("ggggoodbyeeeee")),
            (
                bson!({"$ltrim": {"input": "$s"}}),
                bson!("ggggoodbyeeeee\u{2003}\n"),
            ),
            (
                bson!({"$rtrim": {"input": "$s"}}),
                bson!(" \t ggggoodbyeeeee"),
            ),
            (bson!({"$trim": {"input": "\u{0}a\u{0}"}}), bson!("a")),
            (
                bson!({"$trim": {"input": "ggggoodbyeeeee", "chars": "ge"}}),
                bson!("oodby"),
            ),
            (
                bson!({"$trim": {"input": " ggggoodbyeeeee", "chars": "ge"}}),
                bson!(" ggggoodby"),
            ),
            (
                bson!({"$ltrim": {"input": "ééabé", "chars": "é"}}),
                bson!("abé"),
            ),
            (
                bson!({"$trim": {"input": "abc", "chars": ""}}),
                bson!("abc"),
            ),
            (bson!({"$trim": {"input": "$n"}}), Bson::Null),
            (bson!({"$trim": {"input": "a", "chars": "$n"}}), Bson::Null),
            (
                bson!({"$replaceOne": {"input": "blue paint", "find": "blue", "replacement": "red"}}),
                bson!("red paint"),
            ),
            (
                bson!({"$replaceOne": {"input": "a a a", "find": "a", "replacement": "b"}}),
                bson!("b a a"),
            ),
            (
                bson!({"$replaceOne": {"input": "abc", "find": "", "replacement": "-"}}),
                bson!("-abc"),
            ),
            (
                bson!({"$replaceAll": {"input": "a a a", "find": "a", "replacement": "b"}}),
                bson!("b b b"),
            ),
            (
                bson!({"$replaceAll": {"input": "aaa", "find": "aa", "replacement": "b"}}),
                bson!("ba"),
            ),
            (
                bson!({"$replaceAll": {"input": "ab", "find": "", "replacement": "-"}}),
                bson!("-a-b-"),
            ),
            (
                bson!({"$replaceAll": {"input": "$n", "find": "a", "replacement": "b"}}),
                Bson::Null,
            ),
            (
                bson!({"$replaceOne": {"input": "a", "find": "$nope", "replacement": "b"}}),
                Bson::Null,
            ),
        ],
    );
    fails(
        &d,
        &[
            (bson!({"$trim": "x"}), ErrorCode::Location50696),
            (
                bson!({"$trim": {"input": "x", "y": 1}}),
                ErrorCode::Location50694,
            ),
            (bson!({"$ltrim": {"chars": "x"}}), ErrorCode::Location50695),
            (bson!({"$rtrim": {"input": 1}}), ErrorCode::Location50699),
            (
                bson!({"$trim": {"input": "a", "chars": 1}}),
                ErrorCode::Location50700,
            ),
            (bson!({"$replaceOne": "x"}), ErrorCode::Location51751),
            (
                bson!({"$replaceAll": {"input": "a", "find": "a", "replacement": "b", "x": 1}}),
                ErrorCode::Location51750,
            ),
            (
                bson!({"$replaceAll": {"find": "a", "replacement": "b"}}),
                ErrorCode::Location51749,
            ),
            (
                bson!({"$replaceAll": {"input": "a", "replacement": "b"}}),
                ErrorCode::Location51748,
            ),
            (
                bson!({"$replaceAll": {"input": "a", "find": "a"}}),
                ErrorCode::Location51747,
            ),
            // A wrong type is an error even when another operand is null.
            (
                bson!({"$replaceOne": {"input": 1, "find": null, "replacement": "b"}}),
                ErrorCode::Location51746,
            ),
            (
                bson!({"$replaceOne": {"input": "a", "find": 1, "replacement": "b"}}),
                ErrorCode::Location51745,
            ),
            (
                bson!({"$replaceOne": {"input": "a", "find": "a", "replacement": 1}}),
                ErrorCode::Location51744,
            ),
        ],
    );
}

#[test]
fn regex_match_and_its_argument_errors() {
    let d = doc! {"s": "Cafe", "n": null};
    let re = |p: &str, o: &str| {
        Bson::RegularExpression(BsonRegex {
            pattern: p.into(),
            options: o.into(),
        })
    };
    check(
        &d,
        &[
            (
                bson!({"$regexMatch": {"input": "$s", "regex": "^caf"}}),
                bson!(false),
            ),
            (
                bson!({"$regexMatch": {"input": "$s", "regex": "^caf", "options": "i"}}),
                bson!(true),
            ),
            (
                bson!({"$regexMatch": {"input": "$s", "regex": re("^caf", "i")}}),
                bson!(true),
            ),
            (
                bson!({"$regexMatch": {"input": "$s", "regex": re("^caf", ""), "options": "i"}}),
                bson!(true),
            ),
            (
                bson!({"$regexMatch": {"input": "$n", "regex": "a"}}),
                bson!(false),
            ),
            (
                bson!({"$regexMatch": {"input": "$s", "regex": "$n"}}),
                bson!(false),
            ),
            (
                bson!({"$regexFind": {"input": "$n", "regex": "a"}}),
                Bson::Null,
            ),
            (
                bson!({"$regexFindAll": {"input": "$s", "regex": null}}),
                bson!([]),
            ),
        ],
    );
    fails(
        &d,
        &[
            (bson!({"$regexMatch": "x"}), ErrorCode::Location51103),
            (
                bson!({"$regexMatch": {"input": "a", "regex": "a", "x": 1}}),
                ErrorCode::Location31024,
            ),
            (
                bson!({"$regexMatch": {"regex": "a"}}),
                ErrorCode::Location31022,
            ),
            (
                bson!({"$regexFind": {"input": "a"}}),
                ErrorCode::Location31023,
            ),
            (
                bson!({"$regexMatch": {"input": 1, "regex": "a"}}),
                ErrorCode::Location51104,
            ),
            (
                bson!({"$regexMatch": {"input": "a", "regex": 1}}),
                ErrorCode::Location51105,
            ),
            (
                bson!({"$regexMatch": {"input": "a", "regex": "a", "options": 1}}),
                ErrorCode::Location51106,
            ),
            (
                bson!({"$regexMatch": {"input": "a", "regex": re("a", "i"), "options": "m"}}),
                ErrorCode::Location51107,
            ),
            (
                bson!({"$regexMatch": {"input": "a", "regex": "a\u{0}"}}),
                ErrorCode::Location51109,
            ),
            (
                bson!({"$regexMatch": {"input": "a", "regex": "a", "options": "\u{0}"}}),
                ErrorCode::Location51110,
            ),
            (
                bson!({"$regexMatch": {"input": "a", "regex": "(a"}}),
                ErrorCode::Location51111,
            ),
            (
                bson!({"$regexMatch": {"input": "a", "regex": "a", "options": "g"}}),
                ErrorCode::Location51108,
            ),
            // A constant bad pattern fails even when the input is null.
            (
                bson!({"$regexFind": {"input": "$n", "regex": "(a"}}),
                ErrorCode::Location51111,
            ),
        ],
    );
}

#[test]
fn regex_find_and_find_all_report_matches_in_code_points() {
    let d = doc! {"s": "héllo wörld", "e": "a1b22c333"};
    let cases = [
        (
            bson!({"$regexFind": {"input": "$s", "regex": "w(ö)r"}}),
            bson!({"match": "wör", "idx": 6, "captures": ["ö"]}),
        ),
        (
            bson!({"$regexFind": {"input": "$s", "regex": "(x)?l+"}}),
            bson!({"match": "ll", "idx": 2, "captures": [null]}),
        ),
        (
            bson!({"$regexFindAll": {"input": "$e", "regex": "(?<n>\\d+)"}}),
            bson!([
                {"match": "1", "idx": 1, "captures": ["1"]},
                {"match": "22", "idx": 3, "captures": ["22"]},
                {"match": "333", "idx": 6, "captures": ["333"]},
            ]),
        ),
        (
            bson!({"$regexFind": {"input": "$s", "regex": "zzz"}}),
            Bson::Null,
        ),
        (
            bson!({"$regexFindAll": {"input": "$s", "regex": "zzz"}}),
            bson!([]),
        ),
        (
            bson!({"$regexMatch": {"input": "$s", "regex": "(?i)HÉLLO"}}),
            bson!(true),
        ),
    ];
    for (spec, want) in cases {
        assert_eq!(eval(spec.clone(), &d), Ok(Some(want)), "{spec}");
    }
}
