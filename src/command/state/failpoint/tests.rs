//! The modes of a fail point, as mongod parses and evaluates them.

use super::*;

fn points(mode: Mode) -> FailPoints {
    let points = FailPoints::default();
    points.lock().mode = mode;
    points
}

/// Which of `hits` consecutive reaches fire.
fn fired(points: &FailPoints, hits: usize) -> Vec<bool> {
    (0..hits)
        .map(|_| points.reach(|_| true).is_some())
        .collect()
}

#[test]
fn modes_fire_as_in_mongod() {
    for (mode, expected) in [
        (Mode::Off, vec![false, false, false]),
        (Mode::AlwaysOn, vec![true, true, true]),
        (Mode::Times(2), vec![true, true, false, false]),
        // mongod's quirk: the first hit takes the count below zero, fires, and turns it off.
        (Mode::Times(0), vec![true, false, false]),
        (Mode::Skip(2), vec![false, false, true, true, true]),
        (Mode::Skip(0), vec![true, true]),
        (Mode::Random(0), vec![false; 50]),
        (Mode::Random(i32::MAX), vec![true; 50]),
    ] {
        let points = points(mode);
        assert_eq!(fired(&points, expected.len()), expected, "{mode:?}");
        let count = expected.iter().filter(|f| **f).count();
        assert_eq!(points.times_entered(), count as i64, "{mode:?}");
    }
}

#[test]
fn a_fail_point_that_does_not_apply_keeps_its_count() {
    let points = points(Mode::Times(1));
    assert!(points.reach(|_| false).is_none());
    assert_eq!(points.times_entered(), 0);
    assert!(points.reach(|_| true).is_some());
    assert!(points.reach(|_| true).is_none(), "off after one hit");
}

#[test]
fn half_probability_fires_about_half_the_time() {
    let points = points(Mode::Random(i32::MAX / 2));
    let hits = fired(&points, 4000).into_iter().filter(|f| *f).count();
    // Far outside this band is a broken draw (the chance of a fair one landing there is
    // below 1e-15).
    assert!((1500..=2500).contains(&hits), "{hits} of 4000");
}

#[test]
fn modes_are_parsed_as_mongod_parses_them() {
    use bson::doc;
    let parse = |mode: Bson| parse_mode(&doc! {"configureFailPoint": "failCommand", "mode": mode});
    for (mode, expected) in [
        (Bson::from("off"), Mode::Off),
        (Bson::from("alwaysOn"), Mode::AlwaysOn),
        (Bson::from(doc! {"times": 3}), Mode::Times(3)),
        (Bson::from(doc! {"times": 3_i64}), Mode::Times(3)),
        (Bson::from(doc! {"times": 3.0}), Mode::Times(3)),
        (Bson::from(doc! {"skip": 0}), Mode::Skip(0)),
        (
            Bson::from(doc! {"activationProbability": 1}),
            Mode::Random(i32::MAX),
        ),
        (
            Bson::from(doc! {"activationProbability": 0.0}),
            Mode::Random(0),
        ),
    ] {
        assert_eq!(parse(mode.clone()).unwrap(), expected, "{mode}");
    }
    for (mode, code, message) in [
        (Bson::from("sometimes"), ErrorCode::BadValue, "unknown mode: sometimes"),
        (
            Bson::from(1),
            ErrorCode::TypeMismatch,
            "'mode' must be a string or JSON object",
        ),
        (
            Bson::from(doc! {"times": -1}),
            ErrorCode::BadValue,
            "'times' option to 'mode' must be positive",
        ),
        (
            Bson::from(doc! {"skip": 1_i64 << 31}),
            ErrorCode::BadValue,
            "'skip' option to 'mode' is too large",
        ),
        (
            Bson::from(doc! {"times": "1"}),
            ErrorCode::TypeMismatch,
            "Expected field \"times\" to have numeric type, but found string",
        ),
        (
            Bson::from(doc! {"activationProbability": 1.5}),
            ErrorCode::BadValue,
            "activationProbability must be between 0.0 and 1.0; found 1.5",
        ),
        (
            Bson::from(doc! {"activationProbability": "x"}),
            ErrorCode::TypeMismatch,
            "the 'activationProbability' option to 'mode' must be a double between 0 and 1",
        ),
        (
            Bson::from(doc! {"often": 1}),
            ErrorCode::BadValue,
            "'mode' must be one of 'off', 'alwaysOn', '{times:n}', '{skip:n}' or '{activationProbability:p}'",
        ),
    ] {
        let err = parse(mode.clone()).unwrap_err();
        assert_eq!((err.code, err.message.as_str()), (code, message), "{mode}");
    }
    let err = parse_mode(&doc! {"configureFailPoint": "failCommand"}).unwrap_err();
    assert_eq!(err.code, ErrorCode::IllegalOperation);
    assert_eq!(
        err.message,
        "When setting a failpoint, you must supply a 'mode'"
    );
}
