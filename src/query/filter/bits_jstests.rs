//! mongod's `jstests/core/bittest.js`, table by table: documents `{a: value}`, a filter, and how
//! many documents match it. A later version of the file (`jstests/core/query/bittest.js`) adds
//! decimal documents to the NaN table and expects none of them to match; 7.0's matcher converts
//! decimals with `Decimal128::toLong` instead (see `bits.rs`), so those rows are left out here.

use super::bits_tests::{all_positions, bin, check_counts, old_bin};
use bson::spec::BinarySubtype;
use bson::{doc, Binary, Bson};

// The shell writes its numbers as doubles, so the jstest's documents hold doubles.

#[test]
fn jstest_positive_numbers() {
    let values: Vec<Bson> = [0.0, 1.0, 54.0, 88.0, 255.0, 1e18]
        .into_iter()
        .map(Bson::Double)
        .collect();
    check_counts(
        &values,
        &[
            (doc! {"a": {"$bitsAllSet": 0}}, 6),
            (doc! {"a": {"$bitsAllSet": 1}}, 2),
            (doc! {"a": {"$bitsAllSet": 16}}, 3),
            (doc! {"a": {"$bitsAllSet": 54}}, 2),
            (doc! {"a": {"$bitsAllSet": 55}}, 1),
            (doc! {"a": {"$bitsAllSet": 88}}, 2),
            (doc! {"a": {"$bitsAllSet": 255}}, 1),
            (doc! {"a": {"$bitsAllClear": 0}}, 6),
            (doc! {"a": {"$bitsAllClear": 1}}, 4),
            (doc! {"a": {"$bitsAllClear": 16}}, 3),
            (doc! {"a": {"$bitsAllClear": 129}}, 4),
            (doc! {"a": {"$bitsAllClear": 255}}, 2),
            (doc! {"a": {"$bitsAnySet": 0}}, 0),
            (doc! {"a": {"$bitsAnySet": 9}}, 3),
            (doc! {"a": {"$bitsAnySet": 255}}, 4),
            (doc! {"a": {"$bitsAnyClear": 0}}, 0),
            (doc! {"a": {"$bitsAnyClear": 18}}, 4),
            (doc! {"a": {"$bitsAnyClear": 24}}, 4),
            (doc! {"a": {"$bitsAnyClear": 255}}, 5),
            (doc! {"a": {"$bitsAllSet": []}}, 6),
            (doc! {"a": {"$bitsAllSet": [0]}}, 2),
            (doc! {"a": {"$bitsAllSet": [4]}}, 3),
            (doc! {"a": {"$bitsAllSet": [1, 2, 4, 5]}}, 2),
            (doc! {"a": {"$bitsAllSet": [0, 1, 2, 4, 5]}}, 1),
            (doc! {"a": {"$bitsAllSet": [3, 4, 6]}}, 2),
            (doc! {"a": {"$bitsAllSet": [0, 1, 2, 3, 4, 5, 6, 7]}}, 1),
            (doc! {"a": {"$bitsAllClear": []}}, 6),
            (doc! {"a": {"$bitsAllClear": [0]}}, 4),
            (doc! {"a": {"$bitsAllClear": [4]}}, 3),
            (doc! {"a": {"$bitsAllClear": [1, 7]}}, 4),
            (doc! {"a": {"$bitsAllClear": [0, 1, 2, 3, 4, 5, 6, 7]}}, 2),
            (doc! {"a": {"$bitsAnySet": []}}, 0),
            (doc! {"a": {"$bitsAnySet": [1, 3]}}, 3),
            (doc! {"a": {"$bitsAnySet": [0, 1, 2, 3, 4, 5, 6, 7]}}, 4),
            (doc! {"a": {"$bitsAnyClear": []}}, 0),
            (doc! {"a": {"$bitsAnyClear": [1, 4]}}, 4),
            (doc! {"a": {"$bitsAnyClear": [3, 4]}}, 4),
            (doc! {"a": {"$bitsAnyClear": [0, 1, 2, 3, 4, 5, 6, 7]}}, 5),
            (doc! {"a": {"$bitsAllSet": 54, "$bitsAllClear": 201}}, 1),
        ],
    );
}

#[test]
fn jstest_longs_as_bitmasks() {
    let values: Vec<Bson> = [
        0,
        1,
        i64::MAX,
        6_917_529_027_641_081_856,
        2_305_843_009_213_693_952,
    ]
    .into_iter()
    .map(Bson::Int64)
    .collect();
    let (max, high2, high1) = (
        i64::MAX,
        6_917_529_027_641_081_856_i64,
        2_305_843_009_213_693_952_i64,
    );
    check_counts(
        &values,
        &[
            (doc! {"a": {"$bitsAllSet": 0}}, 5),
            (doc! {"a": {"$bitsAllSet": 1}}, 2),
            (doc! {"a": {"$bitsAllSet": max}}, 1),
            (doc! {"a": {"$bitsAllSet": high2}}, 2),
            (doc! {"a": {"$bitsAllSet": high1}}, 3),
            (doc! {"a": {"$bitsAllClear": 0}}, 5),
            (doc! {"a": {"$bitsAllClear": 1}}, 3),
            (doc! {"a": {"$bitsAllClear": max}}, 1),
            (doc! {"a": {"$bitsAllClear": high2}}, 2),
            (doc! {"a": {"$bitsAllClear": high1}}, 2),
            (doc! {"a": {"$bitsAnySet": 0}}, 0),
            (doc! {"a": {"$bitsAnySet": 1}}, 2),
            (doc! {"a": {"$bitsAnySet": max}}, 4),
            (doc! {"a": {"$bitsAnySet": high2}}, 3),
            (doc! {"a": {"$bitsAnySet": high1}}, 3),
            (doc! {"a": {"$bitsAnyClear": 0}}, 0),
            (doc! {"a": {"$bitsAnyClear": 1}}, 3),
            (doc! {"a": {"$bitsAnyClear": max}}, 4),
            (doc! {"a": {"$bitsAnyClear": high2}}, 3),
            (doc! {"a": {"$bitsAnyClear": high1}}, 2),
        ],
    );
}

#[test]
fn jstest_negative_numbers_are_sign_extended() {
    let values: Vec<Bson> = [-0.0, -1.0, -54.0, -1e18]
        .into_iter()
        .map(Bson::Double)
        .collect();
    check_counts(
        &values,
        &[
            (doc! {"a": {"$bitsAllSet": 0}}, 4),
            (doc! {"a": {"$bitsAllSet": 2}}, 2),
            (doc! {"a": {"$bitsAllSet": 127}}, 1),
            (doc! {"a": {"$bitsAllSet": 74}}, 2),
            (doc! {"a": {"$bitsAllClear": 0}}, 4),
            (doc! {"a": {"$bitsAllClear": 53}}, 3),
            (doc! {"a": {"$bitsAllClear": 127}}, 2),
            (doc! {"a": {"$bitsAnySet": 0}}, 0),
            (doc! {"a": {"$bitsAnySet": 2}}, 2),
            (doc! {"a": {"$bitsAnySet": 127}}, 2),
            (doc! {"a": {"$bitsAnyClear": 0}}, 0),
            (doc! {"a": {"$bitsAnyClear": 53}}, 3),
            (doc! {"a": {"$bitsAnyClear": 127}}, 3),
            (doc! {"a": {"$bitsAllSet": []}}, 4),
            (doc! {"a": {"$bitsAllSet": [1]}}, 2),
            (doc! {"a": {"$bitsAllSet": all_positions()}}, 1),
            (doc! {"a": {"$bitsAllSet": [1, 7, 6, 3, 100]}}, 2),
            (doc! {"a": {"$bitsAllClear": []}}, 4),
            (doc! {"a": {"$bitsAllClear": [5, 4, 2, 0]}}, 3),
            (doc! {"a": {"$bitsAllClear": all_positions()}}, 1),
            (doc! {"a": {"$bitsAnySet": []}}, 0),
            (doc! {"a": {"$bitsAnySet": [1]}}, 2),
            (doc! {"a": {"$bitsAnySet": all_positions()}}, 3),
            (doc! {"a": {"$bitsAnyClear": []}}, 0),
            (doc! {"a": {"$bitsAnyClear": [0, 2, 4, 5, 100]}}, 3),
            (doc! {"a": {"$bitsAnyClear": all_positions()}}, 3),
            (doc! {"a": {"$bitsAllSet": 74, "$bitsAllClear": 53}}, 1),
        ],
    );
}

#[test]
fn jstest_bindata_values() {
    let values = [
        bin("AAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
        bin("AANgAAAAAAAAAAAAAAAAAAAAAAAA"),
        bin("JANgqwetkqwklEWRbWERKKJREtbq"),
        bin("////////////////////////////"),
    ];
    check_counts(
        &values,
        &[
            (
                doc! {"a": {"$bitsAllSet": bin("AAAAAAAAAAAAAAAAAAAAAAAAAAAA")}},
                4,
            ),
            (
                doc! {"a": {"$bitsAllSet": bin("AANgAAAAAAAAAAAAAAAAAAAAAAAA")}},
                3,
            ),
            (
                doc! {"a": {"$bitsAllSet": bin("JANgqwetkqwklEWRbWERKKJREtbq")}},
                2,
            ),
            (
                doc! {"a": {"$bitsAllSet": bin("////////////////////////////")}},
                1,
            ),
            (
                doc! {"a": {"$bitsAllClear": bin("AAAAAAAAAAAAAAAAAAAAAAAAAAAA")}},
                4,
            ),
            (
                doc! {"a": {"$bitsAllClear": bin("AAyfAAAAAAAAAAAAAAAAAAAAAAAA")}},
                3,
            ),
            (
                doc! {"a": {"$bitsAllClear": bin("JAyfqwetkqwklEWRbWERKKJREtbq")}},
                2,
            ),
            (
                doc! {"a": {"$bitsAllClear": bin("////////////////////////////")}},
                1,
            ),
            (
                doc! {"a": {"$bitsAnySet": bin("AAAAAAAAAAAAAAAAAAAAAAAAAAAA")}},
                0,
            ),
            (
                doc! {"a": {"$bitsAnySet": bin("AAyfAAAAAAAAAAAAAAAAAAAAAAAA")}},
                1,
            ),
            (
                doc! {"a": {"$bitsAnySet": bin("JAyfqwetkqwklEWRbWERKKJREtbq")}},
                2,
            ),
            (
                doc! {"a": {"$bitsAnySet": bin("////////////////////////////")}},
                3,
            ),
            (
                doc! {"a": {"$bitsAnyClear": bin("AAAAAAAAAAAAAAAAAAAAAAAAAAAA")}},
                0,
            ),
            (
                doc! {"a": {"$bitsAnyClear": bin("AANgAAAAAAAAAAAAAAAAAAAAAAAA")}},
                1,
            ),
            (
                doc! {"a": {"$bitsAnyClear": bin("JANgqwetkqwklEWRbWERKKJREtbq")}},
                2,
            ),
            (
                doc! {"a": {"$bitsAnyClear": bin("////////////////////////////")}},
                3,
            ),
            (
                doc! {"a": {
                    "$bitsAllSet": bin("AANgAAAAAAAAAAAAAAAAAAAAAAAA"),
                    "$bitsAllClear": bin("//yf////////////////////////"),
                }},
                1,
            ),
        ],
    );
}

#[test]
fn jstest_nan_and_fractions_never_match() {
    let values = vec![
        Bson::Double(0.0),
        Bson::Double(1.0),
        Bson::Array(vec![Bson::Double(1.1), Bson::Double(54.0)]),
        Bson::Double(88.0),
        Bson::Double(255.0),
        Bson::Double(f64::NAN),
        Bson::Double(1.1),
        Bson::Double(-1.1),
        Bson::Double(f64::NEG_INFINITY),
        Bson::Double(f64::INFINITY),
    ];
    check_counts(
        &values,
        &[
            (doc! {"a": {"$bitsAllSet": 0}}, 5),
            (doc! {"a": {"$bitsAllSet": 1}}, 2),
            (doc! {"a": {"$bitsAllSet": 16}}, 3),
            (doc! {"a": {"$bitsAllSet": 54}}, 2),
            (doc! {"a": {"$bitsAllSet": 55}}, 1),
            (doc! {"a": {"$bitsAllSet": 88}}, 2),
            (doc! {"a": {"$bitsAllSet": 255}}, 1),
            (doc! {"a": {"$bitsAllClear": 0}}, 5),
            (doc! {"a": {"$bitsAllClear": 1}}, 3),
            (doc! {"a": {"$bitsAllClear": 16}}, 2),
            (doc! {"a": {"$bitsAllClear": 129}}, 3),
            (doc! {"a": {"$bitsAllClear": 255}}, 1),
            (doc! {"a": {"$bitsAnySet": 0}}, 0),
            (doc! {"a": {"$bitsAnySet": 9}}, 3),
            (doc! {"a": {"$bitsAnySet": 255}}, 4),
            (doc! {"a": {"$bitsAnyClear": 0}}, 0),
            (doc! {"a": {"$bitsAnyClear": 18}}, 3),
            (doc! {"a": {"$bitsAnyClear": 24}}, 3),
            (doc! {"a": {"$bitsAnyClear": 255}}, 4),
        ],
    );
}

#[test]
fn jstest_bindata_of_any_length() {
    let quick_fox = "VGhlIHF1aWNrIGJyb3duIGZveCBqdW1wcyBvdmVyIHRoZSBsYXp5IGRvZw==";
    let mut subtype_one = Binary::from_base64("JA4A8gAxqTwciCuF5GGzAA==", None).unwrap();
    subtype_one.subtype = BinarySubtype::Function;
    let values = [
        bin("ZG9n"),
        bin("JA4A8gAxqTwciCuF5GGzAA=="),
        Bson::Binary(subtype_one),
        bin(quick_fox),
        old_bin("BAAAADEyMzQ="),
    ];
    check_counts(
        &values,
        &[
            (doc! {"a": {"$bitsAllSet": bin("ZG9n")}}, 1),
            (
                doc! {"a": {"$bitsAllSet": bin("JA4A8gAxqTwciCuF5GGzAA==")}},
                2,
            ),
            (doc! {"a": {"$bitsAllSet": old_bin("BAAAADEyMzQ=")}}, 1),
            (doc! {"a": {"$bitsAllSet": bin(quick_fox)}}, 1),
            (
                doc! {"a": {"$bitsAllClear": bin("AAAAAAAAAAAAAAAAAAAAAAAAAAAA")}},
                5,
            ),
            (
                doc! {"a": {"$bitsAllClear": bin("JA4A8gAxqTwciCuF5GGzAA==")}},
                0,
            ),
            (
                doc! {"a": {"$bitsAnySet": bin("AAAAAAAAAAAAAAAAAAAAAAAAAAAA")}},
                0,
            ),
            (
                doc! {"a": {"$bitsAnySet": bin("JA4A8gAxqTwciCuF5GGzAA==")}},
                5,
            ),
            (
                doc! {"a": {"$bitsAnyClear": bin("AAAAAAAAAAAAAAAAAAAAAAAAAAAA")}},
                0,
            ),
            (doc! {"a": {"$bitsAnyClear": bin(quick_fox)}}, 4),
        ],
    );
}
