//! Trigonometric operators: values, decimal results, NaN pass-through and domain errors.

use crate::error::ErrorCode;
use crate::query::expr::tests::eval;
use crate::query::expr::{Expression, Variables};
use bson::{bson, doc, Bson, DateTime, Decimal128};
use std::f64::consts::PI;

fn dec(s: &str) -> Bson {
    Bson::Decimal128(s.parse::<Decimal128>().unwrap())
}

fn close(spec: Bson, want: f64) {
    match eval(spec.clone(), &doc! {}) {
        Ok(Some(Bson::Double(got))) => assert!((got - want).abs() < 1e-12, "{spec}: {got}"),
        other => panic!("{spec}: {other:?}"),
    }
}

#[test]
fn functions_compute_in_double() {
    close(bson!({"$sin": PI / 2.0}), 1.0);
    close(bson!({"$cos": 0}), 1.0);
    close(bson!({"$tan": PI / 4.0}), 1.0);
    close(bson!({"$asin": 1}), PI / 2.0);
    close(bson!({"$acos": 1}), 0.0);
    close(bson!({"$atan": 1}), PI / 4.0);
    close(bson!({"$atan2": [1, 1]}), PI / 4.0);
    close(bson!({"$asinh": 0}), 0.0);
    close(bson!({"$acosh": 1}), 0.0);
    close(bson!({"$atanh": 0}), 0.0);
    close(bson!({"$sinh": 0}), 0.0);
    close(bson!({"$cosh": 0}), 1.0);
    close(bson!({"$tanh": 0}), 0.0);
    close(bson!({"$degreesToRadians": 180}), PI);
    close(bson!({"$radiansToDegrees": PI}), 180.0);
    let cases = [
        (bson!({"$sin": null}), Bson::Null),
        (bson!({"$sin": "$nope"}), Bson::Null),
        (bson!({"$atan2": [null, 1]}), Bson::Null),
        (bson!({"$cos": dec("0")}), dec("1")),
        (bson!({"$radiansToDegrees": dec("0")}), dec("0")),
        (bson!({"$atan2": [dec("0"), 1]}), dec("0")),
        (bson!({"$sinh": f64::INFINITY}), Bson::Double(f64::INFINITY)),
    ];
    for (spec, want) in cases {
        assert_eq!(eval(spec.clone(), &doc! {}), Ok(Some(want)), "{spec}");
    }
    match eval(bson!({"$acos": f64::NAN}), &doc! {}) {
        Ok(Some(Bson::Double(x))) => assert!(x.is_nan()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn domain_and_type_errors() {
    let cases = [
        (bson!({"$acos": -2}), ErrorCode::Location50989),
        (bson!({"$asin": 1.5}), ErrorCode::Location50989),
        (bson!({"$atanh": dec("2")}), ErrorCode::Location50989),
        (bson!({"$acosh": 0.5}), ErrorCode::Location50989),
        (bson!({"$sin": f64::INFINITY}), ErrorCode::Location50989),
        (bson!({"$sin": "x"}), ErrorCode::Location28765),
        (bson!({"$sin": [1, 2]}), ErrorCode::Location16020),
        (bson!({"$atan2": ["x", 1]}), ErrorCode::Location51044),
        (bson!({"$atan2": [1, "x"]}), ErrorCode::Location51045),
        (bson!({"$atan2": [1]}), ErrorCode::Location16020),
    ];
    for (spec, code) in cases {
        assert_eq!(eval(spec.clone(), &doc! {}), Err(code), "{spec}");
    }
    let message = |spec: Bson| {
        Expression::compile(&spec, &Variables::new(DateTime::from_millis(0)))
            .and_then(|e| e.eval(&doc! {}))
            .unwrap_err()
            .message
    };
    assert_eq!(
        message(bson!({"$acos": -2})),
        "cannot apply $acos to -2, value must in [-1,1]"
    );
    assert_eq!(
        message(bson!({"$sin": f64::NEG_INFINITY})),
        "cannot apply $sin to -inf, value must in (-inf,inf)"
    );
    assert_eq!(
        message(bson!({"$acosh": 0.5})),
        "cannot apply $acosh to 0.5, value must in [1,inf]"
    );
}
