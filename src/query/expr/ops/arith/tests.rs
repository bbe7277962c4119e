//! Arithmetic operators: cases from MongoDB's operator reference pages, type promotion, and
//! every refusal with mongod's code.

use crate::error::ErrorCode;
use crate::query::expr::tests::eval;
use bson::{bson, doc, Bson, DateTime, Decimal128, Document};

fn dec(s: &str) -> Bson {
    Bson::Decimal128(s.parse::<Decimal128>().unwrap())
}

fn check(cases: Vec<(Bson, Bson)>, d: &Document) {
    for (spec, want) in cases {
        let got = eval(spec.clone(), d);
        match (&got, &want) {
            (Ok(Some(Bson::Double(g))), Bson::Double(w)) if w.is_nan() => {
                assert!(g.is_nan(), "{spec}: {got:?}")
            }
            _ => assert_eq!(got, Ok(Some(want.clone())), "{spec}"),
        }
    }
}

fn check_errors(cases: Vec<(Bson, ErrorCode)>) {
    for (spec, code) in cases {
        assert_eq!(eval(spec.clone(), &doc! {}), Err(code), "{spec}");
    }
}

#[test]
fn add_and_subtract_promote_and_handle_dates() {
    let date = DateTime::from_millis(1_000_000);
    let d = doc! {"price": 10, "fee": 2, "date": date, "later": DateTime::from_millis(1_005_000)};
    check(
        vec![
            (bson!({"$add": ["$price", "$fee"]}), bson!(12)),
            (bson!({"$add": []}), bson!(0)),
            (bson!({"$add": [i32::MAX, 1]}), Bson::Int64(1 << 31)),
            (bson!({"$add": [1, Bson::Int64(2)]}), Bson::Int64(3)),
            (
                bson!({"$add": [Bson::Int64(i64::MAX), 1]}),
                Bson::Double(i64::MAX as f64 + 1.0),
            ),
            (bson!({"$add": [1, 0.5]}), bson!(1.5)),
            (bson!({"$add": [dec("0.1"), dec("0.2")]}), dec("0.3")),
            (bson!({"$add": [dec("1"), 0.1]}), dec("1.100000000000000")),
            (
                bson!({"$add": ["$date", 3000]}),
                Bson::DateTime(DateTime::from_millis(1_003_000)),
            ),
            (
                bson!({"$add": [2.5, "$date"]}),
                Bson::DateTime(DateTime::from_millis(1_000_003)),
            ),
            (bson!({"$add": [1, null, "x"]}), Bson::Null),
            (bson!({"$add": [1, "$nope"]}), Bson::Null),
            (bson!({"$subtract": ["$price", "$fee"]}), bson!(8)),
            (bson!({"$subtract": ["$later", "$date"]}), Bson::Int64(5000)),
            (
                bson!({"$subtract": ["$date", 1000]}),
                Bson::DateTime(DateTime::from_millis(999_000)),
            ),
            (
                bson!({"$subtract": [Bson::Int64(i64::MIN), 1]}),
                Bson::Double(i64::MIN as f64 - 1.0),
            ),
            (
                bson!({"$subtract": [i32::MIN, 1]}),
                Bson::Int64(i64::from(i32::MIN) - 1),
            ),
            (bson!({"$subtract": [dec("1.5"), 1]}), dec("0.5")),
            (bson!({"$subtract": [null, "x"]}), Bson::Null),
        ],
        &d,
    );
    check_errors(vec![
        (bson!({"$add": [1, "x"]}), ErrorCode::TypeMismatch),
        (
            bson!({"$add": [{"$literal": DateTime::from_millis(1)}, {"$literal": DateTime::from_millis(2)}]}),
            ErrorCode::Location16612,
        ),
        (
            bson!({"$add": [{"$literal": DateTime::from_millis(1)}, 1e300]}),
            ErrorCode::Overflow,
        ),
        (
            bson!({"$subtract": [1, {"$literal": DateTime::from_millis(1)}]}),
            ErrorCode::TypeMismatch,
        ),
        (
            bson!({"$subtract": [{"$literal": DateTime::from_millis(1)}, "x"]}),
            ErrorCode::TypeMismatch,
        ),
        (bson!({"$subtract": [1]}), ErrorCode::Location16020),
    ]);
}

#[test]
fn multiply_divide_and_mod() {
    let d = doc! {"price": 10, "quantity": 2, "hours": 80, "resources": 7};
    check(
        vec![
            (bson!({"$multiply": ["$price", "$quantity"]}), bson!(20)),
            (bson!({"$multiply": []}), bson!(1)),
            (bson!({"$multiply": [65536, 65536]}), Bson::Int64(1 << 32)),
            (
                bson!({"$multiply": [Bson::Int64(i64::MAX), 2]}),
                Bson::Double(i64::MAX as f64 * 2.0),
            ),
            (bson!({"$multiply": [2, 1.5]}), bson!(3.0)),
            (bson!({"$multiply": [dec("1.5"), 2]}), dec("3.0")),
            (bson!({"$multiply": [2, null, "x"]}), Bson::Null),
            (bson!({"$divide": ["$hours", 8]}), bson!(10.0)),
            (bson!({"$divide": [1, 4]}), bson!(0.25)),
            (bson!({"$divide": [dec("1"), 4]}), dec("0.25")),
            (bson!({"$divide": [null, 0]}), Bson::Null),
            (bson!({"$mod": ["$hours", "$resources"]}), bson!(3)),
            (bson!({"$mod": [Bson::Int64(7), 2]}), Bson::Int64(1)),
            (bson!({"$mod": [-7, 2]}), bson!(-1)),
            (bson!({"$mod": [7.5, 2]}), bson!(1.5)),
            (bson!({"$mod": [7, 2.0]}), bson!(1)),
            (bson!({"$mod": [7, 2.5]}), bson!(2.0)),
            (bson!({"$mod": [dec("7.5"), 2]}), dec("1.5")),
            (bson!({"$mod": [i32::MIN, -1]}), bson!(0)),
            (bson!({"$mod": ["$nope", 2]}), Bson::Null),
        ],
        &d,
    );
    check_errors(vec![
        (bson!({"$multiply": [1, "x"]}), ErrorCode::TypeMismatch),
        (bson!({"$divide": [1, 0]}), ErrorCode::BadValue),
        (bson!({"$divide": [dec("1"), 0]}), ErrorCode::BadValue),
        (bson!({"$divide": [1, "x"]}), ErrorCode::TypeMismatch),
        (bson!({"$divide": [1, 2, 3]}), ErrorCode::Location16020),
        (bson!({"$mod": [1, 0]}), ErrorCode::Location16610),
        (bson!({"$mod": [dec("1"), 0]}), ErrorCode::Location5733415),
        (bson!({"$mod": [1, "x"]}), ErrorCode::Location16611),
    ]);
}

#[test]
fn single_number_operators() {
    check(
        vec![
            (bson!({"$abs": -1}), bson!(1)),
            (bson!({"$abs": [i32::MIN]}), Bson::Int64(1 << 31)),
            (bson!({"$abs": Bson::Int64(-5)}), Bson::Int64(5)),
            (bson!({"$abs": -1.5}), bson!(1.5)),
            (bson!({"$abs": dec("-2.50")}), dec("2.50")),
            (bson!({"$abs": null}), Bson::Null),
            (bson!({"$abs": "$nope"}), Bson::Null),
            (bson!({"$ceil": 7.80}), bson!(8.0)),
            (bson!({"$ceil": -2.8}), bson!(-2.0)),
            (bson!({"$ceil": 5}), bson!(5)),
            (bson!({"$ceil": dec("1.1")}), dec("2")),
            (bson!({"$floor": -2.8}), bson!(-3.0)),
            (bson!({"$floor": dec("-1.1")}), dec("-2")),
            (bson!({"$exp": 0}), bson!(1.0)),
            (bson!({"$exp": dec("0")}), dec("1")),
            (bson!({"$ln": 1}), bson!(0.0)),
            (bson!({"$ln": dec("1")}), dec("0")),
            (bson!({"$log10": 100}), bson!(2.0)),
            (bson!({"$log10": dec("100")}), dec("2")),
            (bson!({"$log": [100, 10]}), bson!(2.0)),
            (bson!({"$log": [8, 2]}), bson!(3.0)),
            (bson!({"$log": [dec("100"), 10]}), dec("2")),
            (bson!({"$log": [null, 0]}), Bson::Null),
            (bson!({"$sqrt": 25}), bson!(5.0)),
            (bson!({"$sqrt": dec("2.25")}), dec("1.5")),
            (bson!({"$sqrt": f64::NAN}), Bson::Double(f64::NAN)),
            (bson!({"$pow": [5, 0]}), bson!(1)),
            (bson!({"$pow": [2, 10]}), bson!(1024)),
            (bson!({"$pow": [2, 31]}), Bson::Int64(1 << 31)),
            (bson!({"$pow": [Bson::Int64(2), 3]}), Bson::Int64(8)),
            (bson!({"$pow": [2, 64]}), Bson::Double(2f64.powi(64))),
            (bson!({"$pow": [2, -1]}), bson!(0.5)),
            (bson!({"$pow": [-1, 3]}), bson!(-1)),
            (bson!({"$pow": [0, 5]}), bson!(0)),
            (bson!({"$pow": [4, 0.5]}), bson!(2.0)),
            (bson!({"$pow": [dec("1.5"), 2]}), dec("2.25")),
            // Decimal results carry 34 correctly rounded digits.
            (
                bson!({"$exp": dec("1")}),
                dec("2.718281828459045235360287471352662"),
            ),
            (
                bson!({"$sqrt": dec("2")}),
                dec("1.414213562373095048801688724209698"),
            ),
            (
                bson!({"$pow": [dec("2"), dec("0.5")]}),
                dec("1.414213562373095048801688724209698"),
            ),
            (
                bson!({"$ln": dec("10")}),
                dec("2.302585092994045684017991454684364"),
            ),
            (
                bson!({"$divide": [dec("1"), 3]}),
                dec("0.3333333333333333333333333333333333"),
            ),
        ],
        &doc! {},
    );
    check_errors(vec![
        (bson!({"$abs": "x"}), ErrorCode::Location28765),
        (
            bson!({"$abs": Bson::Int64(i64::MIN)}),
            ErrorCode::Location28680,
        ),
        (bson!({"$abs": [1, 2]}), ErrorCode::Location16020),
        (bson!({"$ceil": "x"}), ErrorCode::Location28765),
        (bson!({"$ln": 0}), ErrorCode::Location28766),
        (bson!({"$ln": dec("-1")}), ErrorCode::Location28766),
        (bson!({"$log10": -1}), ErrorCode::Location28761),
        (bson!({"$log": ["x", 2]}), ErrorCode::Location28756),
        (bson!({"$log": [2, "x"]}), ErrorCode::Location28757),
        (bson!({"$log": [-1, 2]}), ErrorCode::Location28758),
        (bson!({"$log": [2, 1]}), ErrorCode::Location28759),
        (bson!({"$sqrt": -1}), ErrorCode::Location28714),
        (bson!({"$sqrt": dec("-1")}), ErrorCode::Location28714),
        (bson!({"$pow": ["x", 2]}), ErrorCode::Location28762),
        (bson!({"$pow": [2, "x"]}), ErrorCode::Location28763),
        (bson!({"$pow": [0, -1]}), ErrorCode::Location28764),
        (bson!({"$pow": [dec("0"), -1]}), ErrorCode::Location28764),
    ]);
}

#[test]
fn messages_print_numbers_as_mongod() {
    let err = crate::query::expr::Expression::compile(
        &bson!({"$ln": -0.5}),
        &crate::query::expr::Variables::new(DateTime::from_millis(0)),
    )
    .unwrap()
    .eval(&doc! {})
    .unwrap_err();
    assert_eq!(
        err.message,
        "$ln's argument must be a positive number, but is -0.5"
    );
    let cases = [
        (1.0, "1"),
        (-2.0, "-2"),
        (1e-7, "1e-07"),
        (123456789.0, "1.23457e+08"),
        (0.0001, "0.0001"),
        (f64::INFINITY, "inf"),
    ];
    for (x, want) in cases {
        assert_eq!(super::format_g(x), want);
    }
}

#[test]
fn round_and_trunc_use_decimal_places() {
    check(
        vec![
            (bson!({"$round": [10.5, 0]}), bson!(10.0)),
            (bson!({"$round": [11.5, 0]}), bson!(12.0)),
            (bson!({"$round": [12.5, 0]}), bson!(12.0)),
            (bson!({"$round": [-12.5, 0]}), bson!(-12.0)),
            (bson!({"$round": [19.25, 1]}), bson!(19.2)),
            (bson!({"$round": [28.73, -1]}), bson!(30.0)),
            (bson!({"$round": [34.32, -2]}), bson!(0.0)),
            (bson!({"$round": [1234, -2]}), bson!(1200)),
            (bson!({"$round": [1250, -2]}), bson!(1200)),
            (
                bson!({"$round": [Bson::Int64(1234), -2]}),
                Bson::Int64(1200),
            ),
            (bson!({"$round": [2147483647, -1]}), Bson::Int64(2147483650)),
            (bson!({"$round": [1234, 2]}), bson!(1234)),
            (bson!({"$round": [dec("1.235"), 2]}), dec("1.24")),
            (bson!({"$round": [dec("Infinity"), 2]}), dec("Infinity")),
            (
                bson!({"$round": [f64::INFINITY]}),
                Bson::Double(f64::INFINITY),
            ),
            (bson!({"$round": [1.5, null]}), Bson::Null),
            (bson!({"$round": [null, 1]}), Bson::Null),
            (bson!({"$trunc": [19.25, 1]}), bson!(19.2)),
            (bson!({"$trunc": [-19.99]}), bson!(-19.0)),
            (bson!({"$trunc": [28.73, -1]}), bson!(20.0)),
            (bson!({"$trunc": [dec("-1.99"), 1]}), dec("-1.9")),
            (bson!({"$trunc": [1299, -2]}), bson!(1200)),
        ],
        &doc! {},
    );
    check_errors(vec![
        (bson!({"$round": ["x"]}), ErrorCode::Location51081),
        (bson!({"$round": [1, 1.5]}), ErrorCode::Location51082),
        (
            bson!({"$round": [1, 2147483648i64]}),
            ErrorCode::Location51082,
        ),
        (bson!({"$round": [1, 101]}), ErrorCode::Location51083),
        (bson!({"$round": [1, -21]}), ErrorCode::Location51083),
        (bson!({"$round": [1, "x"]}), ErrorCode::Location16004),
        (bson!({"$round": [1, f64::NAN]}), ErrorCode::Location31109),
        (bson!({"$trunc": [1, 2, 3]}), ErrorCode::Location28667),
    ]);
}

#[test]
fn accumulator_expressions_over_arrays_or_operands() {
    let d = doc! {"quizzes": [10, 6, 7], "labs": [5, 8], "mixed": [1, "x", null, 2.5]};
    check(
        vec![
            (bson!({"$sum": "$quizzes"}), bson!(23)),
            (bson!({"$sum": ["$quizzes", 1]}), bson!(1)),
            (bson!({"$sum": [1, 2, "x"]}), bson!(3)),
            (bson!({"$sum": "$mixed"}), bson!(3.5)),
            (bson!({"$sum": []}), bson!(0)),
            (bson!({"$sum": "$nope"}), bson!(0)),
            (bson!({"$sum": [i32::MAX, 1]}), Bson::Int64(1 << 31)),
            (bson!({"$sum": [Bson::Int64(1), 1]}), Bson::Int64(2)),
            (bson!({"$sum": [dec("0.1"), 1]}), dec("1.1")),
            (bson!({"$avg": "$quizzes"}), Bson::Double(23.0 / 3.0)),
            (bson!({"$avg": [1, 2]}), bson!(1.5)),
            (bson!({"$avg": ["x"]}), Bson::Null),
            (bson!({"$avg": [dec("1"), 2]}), dec("1.5")),
            (
                bson!({"$stdDevPop": [1, 2, 3, 4]}),
                Bson::Double(1.25f64.sqrt()),
            ),
            (
                bson!({"$stdDevSamp": [1, 2, 3, 4]}),
                Bson::Double((5.0f64 / 3.0).sqrt()),
            ),
            (bson!({"$stdDevSamp": [1]}), Bson::Null),
            (bson!({"$stdDevPop": ["x"]}), Bson::Null),
            (
                bson!({"$percentile": {"input": "$quizzes", "p": [0.5, 0.95], "method": "approximate"}}),
                bson!([7.0, 10.0]),
            ),
            (
                bson!({"$median": {"input": "$quizzes", "method": "approximate"}}),
                bson!(7.0),
            ),
            (
                bson!({"$median": {"input": "$labs", "method": "approximate"}}),
                bson!(5.0),
            ),
            (
                bson!({"$median": {"input": 3, "method": "approximate"}}),
                bson!(3.0),
            ),
            (
                bson!({"$median": {"input": "$nope", "method": "approximate"}}),
                Bson::Null,
            ),
            (
                bson!({"$percentile": {"input": [], "p": [0.1, 0.9], "method": "approximate"}}),
                bson!([null, null]),
            ),
            (
                bson!({"$percentile": {"input": [3, 1, 2], "p": [0, 1], "method": "approximate"}}),
                bson!([1.0, 3.0]),
            ),
        ],
        &d,
    );
    let p = |p: Bson| bson!({"$percentile": {"input": [1], "p": p, "method": "approximate"}});
    check_errors(vec![
        (bson!({"$median": 1}), ErrorCode::Location7436201),
        (bson!({"$percentile": 1}), ErrorCode::Location7436200),
        (bson!({"$median": {"input": 1}}), ErrorCode::Location40414),
        (
            bson!({"$median": {"input": 1, "method": "approximate", "x": 1}}),
            ErrorCode::IDLUnknownField,
        ),
        (
            bson!({"$median": {"input": 1, "method": "exact"}}),
            ErrorCode::BadValue,
        ),
        (
            bson!({"$median": {"input": 1, "method": 1}}),
            ErrorCode::TypeMismatch,
        ),
        (
            bson!({"$percentile": {"input": 1, "method": "approximate"}}),
            ErrorCode::Location40414,
        ),
        (p(bson!("$x")), ErrorCode::Location7750300),
        (p(bson!([])), ErrorCode::Location7750301),
        (p(bson!(0.5)), ErrorCode::Location7750301),
        (p(bson!(["x"])), ErrorCode::Location7750302),
        (p(bson!([1.5])), ErrorCode::Location7750303),
    ]);
}
