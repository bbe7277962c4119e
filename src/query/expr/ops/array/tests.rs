//! Array operators, case by case from mongod's operator reference and its errors.

use crate::error::ErrorCode;
use crate::query::expr::tests::eval;
use bson::{bson, doc, Bson};

fn ok(cases: &[(Bson, Bson)]) {
    let d = doc! {"xs": [1, 2, 3], "none": null, "obj": {"a": 1, "b": [2]}};
    for (spec, want) in cases {
        assert_eq!(eval(spec.clone(), &d), Ok(Some(want.clone())), "{spec}");
    }
}

fn missing(specs: &[Bson]) {
    for spec in specs {
        assert_eq!(eval(spec.clone(), &doc! {}), Ok(None), "{spec}");
    }
}

fn fails(cases: &[(Bson, ErrorCode)]) {
    let d = doc! {"xs": [1, 2, 3], "s": "x"};
    for (spec, code) in cases {
        assert_eq!(eval(spec.clone(), &d), Err(*code), "{spec}");
    }
}

#[test]
fn element_access() {
    ok(&[
        (bson!({"$arrayElemAt": [[1, 2, 3], 0]}), bson!(1)),
        (bson!({"$arrayElemAt": [[1, 2, 3], -1]}), bson!(3)),
        (bson!({"$arrayElemAt": ["$xs", 1.0]}), bson!(2)),
        (bson!({"$arrayElemAt": ["$none", 1]}), Bson::Null),
        (bson!({"$arrayElemAt": [[1], "$nope"]}), Bson::Null),
        (bson!({"$first": [[1, 2, 3]]}), bson!(1)),
        (bson!({"$first": "$xs"}), bson!(1)),
        (bson!({"$last": "$xs"}), bson!(3)),
        (bson!({"$first": "$nope"}), Bson::Null),
        (bson!({"$slice": ["$xs", 2]}), bson!([1, 2])),
        (bson!({"$slice": ["$xs", -2]}), bson!([2, 3])),
        (bson!({"$slice": ["$xs", -10]}), bson!([1, 2, 3])),
        (bson!({"$slice": ["$xs", 1, 1]}), bson!([2])),
        (bson!({"$slice": ["$xs", -2, 1]}), bson!([2])),
        (bson!({"$slice": ["$xs", 15, 2]}), bson!([])),
        (bson!({"$slice": ["$xs", -15, 2]}), bson!([1, 2])),
        (bson!({"$slice": ["$xs", 0, null]}), Bson::Null),
        (bson!({"$slice": ["$none", 1]}), Bson::Null),
    ]);
    missing(&[
        bson!({"$arrayElemAt": [[1, 2, 3], 15]}),
        bson!({"$arrayElemAt": [[1, 2, 3], -4]}),
        bson!({"$first": [[]]}),
        bson!({"$last": [[]]}),
    ]);
    fails(&[
        (bson!({"$arrayElemAt": ["$s", 0]}), ErrorCode::Location28689),
        (
            bson!({"$arrayElemAt": ["$xs", "0"]}),
            ErrorCode::Location28690,
        ),
        (
            bson!({"$arrayElemAt": ["$xs", 1.5]}),
            ErrorCode::Location28691,
        ),
        (bson!({"$arrayElemAt": ["$xs"]}), ErrorCode::Location16020),
        (bson!({"$first": "$s"}), ErrorCode::Location28689),
        (bson!({"$last": [1, 2]}), ErrorCode::Location16020),
        (bson!({"$slice": ["$s", 1]}), ErrorCode::Location28724),
        (bson!({"$slice": ["$xs", "1"]}), ErrorCode::Location28725),
        (bson!({"$slice": ["$xs", 1.5]}), ErrorCode::Location28726),
        (bson!({"$slice": ["$xs", 0, "1"]}), ErrorCode::Location28727),
        (bson!({"$slice": ["$xs", 0, 1.5]}), ErrorCode::Location28728),
        (bson!({"$slice": ["$xs", 0, 0]}), ErrorCode::Location28729),
        (bson!({"$slice": ["$xs"]}), ErrorCode::Location28667),
    ]);
}

#[test]
fn searching_compares_by_value() {
    ok(&[
        (bson!({"$in": [2, "$xs"]}), bson!(true)),
        (bson!({"$in": [2.0, "$xs"]}), bson!(true)),
        (bson!({"$in": ["2", "$xs"]}), bson!(false)),
        (bson!({"$in": [null, [null]]}), bson!(true)),
        // A missing value is not null.
        (bson!({"$in": ["$nope", [null]]}), bson!(false)),
        (bson!({"$in": [[1], [[1], 2]]}), bson!(true)),
        (bson!({"$indexOfArray": [["a", "abc"], "a"]}), bson!(0)),
        (
            bson!({"$indexOfArray": [["a", "abc", "de", ["de"]], ["de"]]}),
            bson!(3),
        ),
        (bson!({"$indexOfArray": [[1, 2], 5]}), bson!(-1)),
        (bson!({"$indexOfArray": [[1, 2, 3, 1], 1, 1]}), bson!(3)),
        (bson!({"$indexOfArray": [[1, 2, 3, 1], 1, 1, 3]}), bson!(-1)),
        (bson!({"$indexOfArray": [[1, 2, 3], 3, 0, 100]}), bson!(2)),
        (bson!({"$indexOfArray": [[1, 2], 1, 5]}), bson!(-1)),
        (bson!({"$indexOfArray": [null, 1]}), Bson::Null),
        (bson!({"$indexOfArray": [[null], "$nope"]}), bson!(-1)),
    ]);
    fails(&[
        (bson!({"$in": [1, "$s"]}), ErrorCode::Location40081),
        (bson!({"$in": [1, "$nope"]}), ErrorCode::Location40081),
        (bson!({"$in": [1]}), ErrorCode::Location16020),
        (
            bson!({"$indexOfArray": ["$s", 1]}),
            ErrorCode::Location40090,
        ),
        (
            bson!({"$indexOfArray": ["$xs", 1, "1"]}),
            ErrorCode::Location40096,
        ),
        (
            bson!({"$indexOfArray": ["$xs", 1, 0.5]}),
            ErrorCode::Location40096,
        ),
        (
            bson!({"$indexOfArray": ["$xs", 1, -1]}),
            ErrorCode::Location40097,
        ),
        (
            bson!({"$indexOfArray": ["$xs", 1, 0, -1]}),
            ErrorCode::Location40097,
        ),
        (bson!({"$indexOfArray": ["$xs"]}), ErrorCode::Location28667),
    ]);
}

#[test]
fn building_and_reshaping() {
    ok(&[
        (
            bson!({"$concatArrays": ["$xs", [4], []]}),
            bson!([1, 2, 3, 4]),
        ),
        (bson!({"$concatArrays": []}), bson!([])),
        (bson!({"$concatArrays": ["$xs", "$nope"]}), Bson::Null),
        (bson!({"$isArray": "$xs"}), bson!(true)),
        (bson!({"$isArray": [[1]]}), bson!(true)),
        (bson!({"$isArray": "$nope"}), bson!(false)),
        (bson!({"$size": "$xs"}), bson!(3)),
        (bson!({"$size": [[]]}), bson!(0)),
        (bson!({"$reverseArray": "$xs"}), bson!([3, 2, 1])),
        (bson!({"$reverseArray": "$nope"}), Bson::Null),
        (
            bson!({"$objectToArray": "$obj"}),
            bson!([{"k": "a", "v": 1}, {"k": "b", "v": [2]}]),
        ),
        (bson!({"$objectToArray": "$none"}), Bson::Null),
        (
            bson!({"$arrayToObject": [[["item", "abc"], ["qty", 25]]]}),
            bson!({"item": "abc", "qty": 25}),
        ),
        (
            bson!({"$arrayToObject": [[{"k": "item", "v": "abc"}, {"k": "qty", "v": 25}]]}),
            bson!({"item": "abc", "qty": 25}),
        ),
        // A repeated key keeps its first position and takes the last value.
        (
            bson!({"$arrayToObject": [[["a", 1], ["b", 2], ["a", 3]]]}),
            bson!({"a": 3, "b": 2}),
        ),
        (bson!({"$arrayToObject": [[]]}), bson!({})),
        (bson!({"$arrayToObject": "$none"}), Bson::Null),
        (bson!({"$range": [0, 5]}), bson!([0, 1, 2, 3, 4])),
        (bson!({"$range": [0, 10, 3]}), bson!([0, 3, 6, 9])),
        (bson!({"$range": [10, 0, -4]}), bson!([10, 6, 2])),
        (bson!({"$range": [0, 5, -1]}), bson!([])),
        (bson!({"$range": [1.0, 3]}), bson!([1, 2])),
        (
            bson!({"$zip": {"inputs": [["a", "b"], [1, 2, 3]]}}),
            bson!([["a", 1], ["b", 2]]),
        ),
        (
            bson!({"$zip": {"inputs": [["a"], [1, 2]], "useLongestLength": true}}),
            bson!([["a", 1], [null, 2]]),
        ),
        (
            bson!({"$zip": {"inputs": [["a"], [1, 2]], "useLongestLength": true, "defaults": ["x", 0]}}),
            bson!([["a", 1], ["x", 2]]),
        ),
        (bson!({"$zip": {"inputs": ["$xs", "$none"]}}), Bson::Null),
    ]);
    fails(&[
        (
            bson!({"$concatArrays": ["$xs", 1]}),
            ErrorCode::Location28664,
        ),
        (bson!({"$size": "$nope"}), ErrorCode::Location17124),
        (bson!({"$size": "$s"}), ErrorCode::Location17124),
        (bson!({"$reverseArray": "$s"}), ErrorCode::Location34435),
        (bson!({"$objectToArray": "$xs"}), ErrorCode::Location40390),
        (bson!({"$arrayToObject": "$s"}), ErrorCode::Location40386),
        (bson!({"$arrayToObject": [[1]]}), ErrorCode::Location40398),
        (
            bson!({"$arrayToObject": [[["a", 1], {"k": "b", "v": 2}]]}),
            ErrorCode::Location40396,
        ),
        (
            bson!({"$arrayToObject": [[["a"]]]}),
            ErrorCode::Location40397,
        ),
        (
            bson!({"$arrayToObject": [[[1, 2]]]}),
            ErrorCode::Location40395,
        ),
        (
            bson!({"$arrayToObject": [[["a\u{0}b", 2]]]}),
            ErrorCode::Location4940400,
        ),
        (
            bson!({"$arrayToObject": [[{"k": "a", "v": 1}, ["b", 2]]]}),
            ErrorCode::Location40391,
        ),
        (
            bson!({"$arrayToObject": [[{"k": "a"}]]}),
            ErrorCode::Location40392,
        ),
        (
            bson!({"$arrayToObject": [[{"k": "a", "x": 1}]]}),
            ErrorCode::Location40393,
        ),
        (
            bson!({"$arrayToObject": [[{"k": 1, "v": 1}]]}),
            ErrorCode::Location40394,
        ),
        (
            bson!({"$arrayToObject": [[{"k": "\u{0}", "v": 1}]]}),
            ErrorCode::Location4940401,
        ),
        (bson!({"$range": ["a", 1]}), ErrorCode::Location34443),
        (bson!({"$range": [0.5, 1]}), ErrorCode::Location34444),
        (bson!({"$range": [0, null]}), ErrorCode::Location34445),
        (
            bson!({"$range": [0, 3_000_000_000_i64]}),
            ErrorCode::Location34446,
        ),
        (bson!({"$range": [0, 1, "1"]}), ErrorCode::Location34447),
        (bson!({"$range": [0, 1, 0.5]}), ErrorCode::Location34448),
        (bson!({"$range": [0, 1, 0]}), ErrorCode::Location34449),
        // mongod refuses what would take more than 100 MB before building any of it.
        (
            bson!({"$range": [0, 2_000_000_000]}),
            ErrorCode::ExceededMemoryLimit,
        ),
        (bson!({"$zip": 1}), ErrorCode::Location34460),
        (bson!({"$zip": {"inputs": 1}}), ErrorCode::Location34461),
        (
            bson!({"$zip": {"inputs": [], "defaults": 1}}),
            ErrorCode::Location34462,
        ),
        (
            bson!({"$zip": {"inputs": [[1]], "useLongestLength": 1}}),
            ErrorCode::Location34463,
        ),
        (
            bson!({"$zip": {"inputs": [[1]], "x": 1}}),
            ErrorCode::Location34464,
        ),
        (bson!({"$zip": {"inputs": []}}), ErrorCode::Location34465),
        (
            bson!({"$zip": {"inputs": [[1]], "defaults": [1]}}),
            ErrorCode::Location34466,
        ),
        (
            bson!({"$zip": {"inputs": [[1]], "defaults": [1, 2], "useLongestLength": true}}),
            ErrorCode::Location34467,
        ),
        (
            bson!({"$zip": {"inputs": ["$s"]}}),
            ErrorCode::Location34468,
        ),
    ]);
}

#[test]
fn first_last_max_min_n() {
    ok(&[
        (
            bson!({"$firstN": {"n": 2, "input": [5, 1, 4]}}),
            bson!([5, 1]),
        ),
        (
            bson!({"$firstN": {"n": 10, "input": "$xs"}}),
            bson!([1, 2, 3]),
        ),
        (
            bson!({"$lastN": {"n": 2, "input": [5, 1, 4]}}),
            bson!([1, 4]),
        ),
        (
            bson!({"$lastN": {"n": 2.0, "input": [null, 1, null]}}),
            bson!([1, null]),
        ),
        (
            bson!({"$maxN": {"n": 2, "input": [5, null, 1, 4]}}),
            bson!([5, 4]),
        ),
        (
            bson!({"$minN": {"n": 2, "input": [5, null, 1, 4]}}),
            bson!([1, 4]),
        ),
        (
            bson!({"$minN": {"n": 3, "input": [null, "a", 2]}}),
            bson!([2, "a"]),
        ),
        (bson!({"$maxN": {"n": 1, "input": []}}), bson!([])),
    ]);
    fails(&[
        (bson!({"$firstN": 1}), ErrorCode::Location5787801),
        (bson!({"$maxN": [1]}), ErrorCode::Location5787900),
        (
            bson!({"$lastN": {"n": 1, "input": [], "x": 1}}),
            ErrorCode::Location5787901,
        ),
        (bson!({"$minN": {"input": []}}), ErrorCode::Location5787906),
        (bson!({"$minN": {"n": 1}}), ErrorCode::Location5787907),
        (
            bson!({"$firstN": {"n": "1", "input": []}}),
            ErrorCode::Location5787902,
        ),
        (
            bson!({"$firstN": {"n": 1.5, "input": []}}),
            ErrorCode::Location5787903,
        ),
        (
            bson!({"$firstN": {"n": 0, "input": []}}),
            ErrorCode::Location5787908,
        ),
        (
            bson!({"$firstN": {"n": 1, "input": "$s"}}),
            ErrorCode::Location5788200,
        ),
        (
            bson!({"$maxN": {"n": 1, "input": "$nope"}}),
            ErrorCode::Location5788200,
        ),
    ]);
}

#[test]
fn sort_array() {
    let team = bson!([
        {"name": "pat", "age": 30, "address": {"city": "Anchorage"}},
        {"name": "dallas", "age": 36, "address": {"city": "Lacey"}},
        {"name": "charlie", "age": 42, "address": {"city": "Boston"}},
    ]);
    ok(&[
        (
            bson!({"$sortArray": {"input": team.clone(), "sortBy": {"name": 1}}}),
            bson!([
                {"name": "charlie", "age": 42, "address": {"city": "Boston"}},
                {"name": "dallas", "age": 36, "address": {"city": "Lacey"}},
                {"name": "pat", "age": 30, "address": {"city": "Anchorage"}},
            ]),
        ),
        (
            bson!({"$sortArray": {"input": team, "sortBy": {"address.city": -1}}}),
            bson!([
                {"name": "dallas", "age": 36, "address": {"city": "Lacey"}},
                {"name": "charlie", "age": 42, "address": {"city": "Boston"}},
                {"name": "pat", "age": 30, "address": {"city": "Anchorage"}},
            ]),
        ),
        (
            bson!({"$sortArray": {"input": [1, 4, 1, 6, 12, 5], "sortBy": 1}}),
            bson!([1, 1, 4, 5, 6, 12]),
        ),
        (
            bson!({"$sortArray": {"input": [20, 4, {"a": "Free"}, 6, 21, 5, "Gratis", {"a": null}, {"a": {"sale": true, "price": 19}}, 10.23, {"a": "On sale"}], "sortBy": 1}}),
            bson!([4, 5, 6, 10.23, 20, 21, "Gratis", {"a": null}, {"a": "Free"}, {"a": "On sale"}, {"a": {"sale": true, "price": 19}}]),
        ),
        (
            bson!({"$sortArray": {"input": [3, 1, 2], "sortBy": -1}}),
            bson!([3, 2, 1]),
        ),
        // Elements without the field (and non-objects) sort as null, stably.
        (
            bson!({"$sortArray": {"input": [{"a": 2}, 7, {"b": 1}, {"a": 1}], "sortBy": {"a": 1}}}),
            bson!([7, {"b": 1}, {"a": 1}, {"a": 2}]),
        ),
        (
            bson!({"$sortArray": {"input": "$none", "sortBy": 1}}),
            Bson::Null,
        ),
    ]);
    fails(&[
        (bson!({"$sortArray": 1}), ErrorCode::Location2942500),
        (
            bson!({"$sortArray": {"input": [], "sortBy": 1, "x": 1}}),
            ErrorCode::Location2942501,
        ),
        (
            bson!({"$sortArray": {"sortBy": 1}}),
            ErrorCode::Location2942502,
        ),
        (
            bson!({"$sortArray": {"input": []}}),
            ErrorCode::Location2942503,
        ),
        (
            bson!({"$sortArray": {"input": "$s", "sortBy": 1}}),
            ErrorCode::Location2942504,
        ),
        (
            bson!({"$sortArray": {"input": [], "sortBy": {}}}),
            ErrorCode::Location2942505,
        ),
        (
            bson!({"$sortArray": {"input": [], "sortBy": {"a": 2}}}),
            ErrorCode::Location2942505,
        ),
        (
            bson!({"$sortArray": {"input": [], "sortBy": {"a..b": 1}}}),
            ErrorCode::Location2942505,
        ),
        (
            bson!({"$sortArray": {"input": [], "sortBy": 0}}),
            ErrorCode::Location2942506,
        ),
        (
            bson!({"$sortArray": {"input": [], "sortBy": "a"}}),
            ErrorCode::Location2942507,
        ),
    ]);
}

#[test]
fn numbers_in_messages_print_as_mongod_prints_them() {
    use super::fmt_g;
    let cases = [
        (1.5, "1.5"),
        (2.0, "2"),
        (3e9, "3e+09"),
        (123456.0, "123456"),
        (1234567.0, "1.23457e+06"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-2.5, "-2.5"),
        (f64::NAN, "nan"),
        (f64::INFINITY, "inf"),
    ];
    for (d, want) in cases {
        assert_eq!(fmt_g(d), want, "{d}");
    }
}
