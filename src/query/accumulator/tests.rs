//! Table tests of every accumulator, with the examples of mongod's reference pages.

use super::*;
use bson::{bson, doc};

/// Runs `{op: arg}` over `docs` as one group with key `id`.
fn run(op: &str, arg: Bson, docs: &[Document]) -> std::result::Result<Bson, ErrorCode> {
    let vars = Variables::default();
    let acc = Accumulator::compile(op, &arg, &vars).map_err(|e| e.code)?;
    let mut state = acc.start_group(&Bson::Null).map_err(|e| e.code)?;
    for d in docs {
        let v = acc.arg().eval(d).map_err(|e| e.code)?;
        state.add(v).map_err(|e| e.code)?;
    }
    Ok(state.finish())
}

fn values(vs: Vec<Bson>) -> Vec<Document> {
    vs.into_iter().map(|v| doc! {"v": v}).collect()
}

#[test]
fn accumulators_follow_mongods_examples() {
    // The reference pages' sales and scores.
    let scores = values(vec![
        bson!(10),
        bson!(null),
        bson!(7.5),
        bson!("x"),
        bson!(3),
        bson!(12),
    ]);
    let mut missing = scores.clone();
    missing.insert(0, doc! {});
    let cases: Vec<(&str, Bson, Vec<Document>, Bson)> = vec![
        ("$sum", bson!("$v"), scores.clone(), bson!(32.5)),
        ("$avg", bson!("$v"), scores.clone(), bson!(8.125)),
        ("$min", bson!("$v"), scores.clone(), bson!(3)),
        ("$max", bson!("$v"), scores.clone(), bson!("x")),
        ("$first", bson!("$v"), missing.clone(), Bson::Null),
        ("$last", bson!("$v"), scores.clone(), bson!(12)),
        (
            "$push",
            bson!("$v"),
            missing.clone(),
            bson!([10, null, 7.5, "x", 3, 12]),
        ),
        (
            "$addToSet",
            bson!("$v"),
            values(vec![bson!(1), bson!(1.0), bson!(2)]),
            bson!([1, 2]),
        ),
        ("$count", bson!({}), scores.clone(), bson!(6)),
        (
            "$stdDevPop",
            bson!("$v"),
            values(vec![bson!(62), bson!(67), bson!(81), bson!(83)]),
            Bson::Double(80.1875f64.sqrt()),
        ),
        (
            "$stdDevSamp",
            bson!("$v"),
            values(vec![bson!(62), bson!(67), bson!(81), bson!(83)]),
            Bson::Double((320.75f64 / 3.0).sqrt()),
        ),
        (
            "$stdDevSamp",
            bson!("$v"),
            values(vec![bson!(62)]),
            Bson::Null,
        ),
        (
            "$median",
            bson!({"input": "$v", "method": "approximate"}),
            values(vec![bson!(62), bson!(67), bson!(81), bson!(83)]),
            bson!(67.0),
        ),
        (
            "$median",
            bson!({"input": "$v", "method": "approximate"}),
            values(vec![bson!(62), bson!(83), bson!(81)]),
            bson!(81.0),
        ),
        (
            "$percentile",
            bson!({"input": "$v", "p": [0.5, 0.75, 0.9, 0.95, 1], "method": "approximate"}),
            values(vec![bson!(62), bson!(67), bson!(81), bson!(83), bson!(90)]),
            bson!([81.0, 83.0, 90.0, 90.0, 90.0]),
        ),
        (
            "$percentile",
            bson!({"input": "$v", "p": [0.5], "method": "approximate"}),
            values(vec![bson!("a")]),
            bson!([null]),
        ),
        (
            "$mergeObjects",
            bson!("$v"),
            values(vec![
                bson!({"a": 1, "b": 1}),
                bson!(null),
                bson!({"b": 2, "c": 3}),
            ]),
            bson!({"a": 1, "b": 2, "c": 3}),
        ),
        (
            "$firstN",
            bson!({"input": "$v", "n": 2}),
            missing.clone(),
            bson!([null, 10]),
        ),
        (
            "$lastN",
            bson!({"input": "$v", "n": 2}),
            scores.clone(),
            bson!([3, 12]),
        ),
        (
            "$lastN",
            bson!({"input": "$v", "n": 10}),
            values(vec![bson!(1)]),
            bson!([1]),
        ),
        (
            "$minN",
            bson!({"input": "$v", "n": 3}),
            scores.clone(),
            bson!([3, 7.5, 10]),
        ),
        (
            "$maxN",
            bson!({"input": "$v", "n": 2}),
            scores.clone(),
            bson!(["x", 12]),
        ),
    ];
    for (op, arg, docs, want) in cases {
        assert_eq!(run(op, arg.clone(), &docs), Ok(want), "{op} {arg}");
    }
}

#[test]
fn top_and_bottom_follow_their_sort() {
    let players = vec![
        doc! {"p": "PlayerA", "score": 31},
        doc! {"p": "PlayerB", "score": 33},
        doc! {"p": "PlayerC", "score": 99},
        doc! {"p": "PlayerD", "score": 1},
        doc! {"p": "PlayerE", "score": 33},
    ];
    let cases: Vec<(&str, Bson, Bson)> = vec![
        (
            "$top",
            bson!({"output": ["$p", "$score"], "sortBy": {"score": -1}}),
            bson!(["PlayerC", 99]),
        ),
        (
            "$bottom",
            bson!({"output": ["$p", "$score"], "sortBy": {"score": -1}}),
            bson!(["PlayerD", 1]),
        ),
        (
            "$topN",
            bson!({"output": "$p", "sortBy": {"score": -1}, "n": 3}),
            bson!(["PlayerC", "PlayerB", "PlayerE"]),
        ),
        (
            "$bottomN",
            bson!({"output": "$p", "sortBy": {"score": -1}, "n": 3}),
            bson!(["PlayerB", "PlayerA", "PlayerD"]),
        ),
        (
            "$topN",
            bson!({"output": "$p", "sortBy": {"score": 1, "p": -1}, "n": 2}),
            bson!(["PlayerD", "PlayerA"]),
        ),
        (
            "$top",
            bson!({"output": "$nope", "sortBy": {"score": 1}}),
            Bson::Null,
        ),
    ];
    for (op, arg, want) in cases {
        assert_eq!(run(op, arg.clone(), &players), Ok(want), "{op} {arg}");
    }
}

#[test]
fn bad_arguments_have_mongods_codes() {
    let one = values(vec![bson!(1)]);
    let cases: Vec<(&str, Bson, ErrorCode)> = vec![
        ("$sum", bson!([1]), ErrorCode::Location40237),
        ("$nope", bson!(1), ErrorCode::Location15952),
        (
            "$accumulator",
            bson!({"init": "function() {}"}),
            ErrorCode::Location31264,
        ),
        ("$firstN", bson!(1), ErrorCode::Location5787801),
        ("$maxN", bson!(1), ErrorCode::Location5787900),
        (
            "$firstN",
            bson!({"input": "$v", "n": 1, "x": 1}),
            ErrorCode::Location5787901,
        ),
        (
            "$firstN",
            bson!({"input": "$v"}),
            ErrorCode::Location5787906,
        ),
        ("$firstN", bson!({"n": 1}), ErrorCode::Location5787907),
        (
            "$firstN",
            bson!({"input": "$v", "n": "a"}),
            ErrorCode::Location5787902,
        ),
        (
            "$firstN",
            bson!({"input": "$v", "n": 1.5}),
            ErrorCode::Location5787903,
        ),
        (
            "$lastN",
            bson!({"input": "$v", "n": 0}),
            ErrorCode::Location5787908,
        ),
        (
            "$minN",
            bson!({"input": "$v", "n": -1}),
            ErrorCode::Location5787908,
        ),
        ("$top", bson!(1), ErrorCode::Location5788001),
        (
            "$top",
            bson!({"output": 1, "sortBy": {"a": 1}, "n": 1}),
            ErrorCode::Location5788002,
        ),
        (
            "$topN",
            bson!({"output": 1, "sortBy": {"a": 1}}),
            ErrorCode::Location5788003,
        ),
        (
            "$topN",
            bson!({"n": 1, "sortBy": {"a": 1}}),
            ErrorCode::Location5788004,
        ),
        ("$bottom", bson!({"output": 1}), ErrorCode::Location5788005),
        (
            "$bottom",
            bson!({"output": 1, "sortBy": 1}),
            ErrorCode::Location10065,
        ),
        ("$median", bson!(1), ErrorCode::Location7436100),
        ("$percentile", bson!(1), ErrorCode::Location7429703),
        ("$median", bson!({"input": "$v"}), ErrorCode::Location40414),
        (
            "$median",
            bson!({"input": "$v", "method": "approximate", "x": 1}),
            ErrorCode::IDLUnknownField,
        ),
        (
            "$median",
            bson!({"input": "$v", "method": "exact"}),
            ErrorCode::BadValue,
        ),
        (
            "$median",
            bson!({"input": "$v", "method": 1}),
            ErrorCode::TypeMismatch,
        ),
        (
            "$percentile",
            bson!({"input": "$v", "p": "$v", "method": "approximate"}),
            ErrorCode::Location7750300,
        ),
        (
            "$percentile",
            bson!({"input": "$v", "p": [], "method": "approximate"}),
            ErrorCode::Location7750301,
        ),
        (
            "$percentile",
            bson!({"input": "$v", "p": ["a"], "method": "approximate"}),
            ErrorCode::Location7750302,
        ),
        (
            "$percentile",
            bson!({"input": "$v", "p": [1.5], "method": "approximate"}),
            ErrorCode::Location7750303,
        ),
        ("$mergeObjects", bson!("$v"), ErrorCode::Location40400),
    ];
    for (op, arg, code) in cases {
        assert_eq!(run(op, arg.clone(), &one), Err(code), "{op} {arg}");
    }
}

#[test]
fn n_is_evaluated_against_the_group_key() {
    let acc = Accumulator::compile(
        "$firstN",
        &bson!({"input": "$v", "n": "$game"}),
        &Variables::default(),
    )
    .unwrap();
    // mongod's example: `_id: {game: "$game"}` and an `n` that reads `"$game"`.
    let st = |game: i32| {
        let mut s = acc.start_group(&bson!({"game": game})).unwrap();
        for v in 1..=4 {
            s.add(Some(bson!(v))).unwrap();
        }
        s.finish()
    };
    assert_eq!(st(3), bson!([1, 2, 3]));
    assert_eq!(st(1), bson!([1]));
    // A key that is not a document gives `n` an empty document.
    assert_eq!(
        acc.start_group(&bson!(3)).map(|_| ()).unwrap_err().code,
        ErrorCode::Location5787902
    );
}

#[test]
fn fold_runs_an_accumulator_over_an_array() {
    let acc = Accumulator::compile(
        "$maxN",
        &bson!({"input": "$v", "n": 2}),
        &Variables::default(),
    )
    .unwrap();
    let got = acc.fold([Some(bson!(1)), None, Some(bson!(5)), Some(bson!(3))]);
    assert_eq!(got, Ok(bson!([5, 3])));
}

#[test]
fn partial_states_merge_in_arrival_order() {
    let vars = Variables::default();
    let specs: Vec<(&str, Bson)> = vec![
        ("$sum", bson!("$v")),
        ("$avg", bson!("$v")),
        ("$first", bson!("$v")),
        ("$last", bson!("$v")),
        ("$push", bson!("$v")),
        ("$addToSet", bson!("$v")),
        ("$min", bson!("$v")),
        ("$stdDevPop", bson!("$v")),
        ("$median", bson!({"input": "$v", "method": "approximate"})),
        ("$lastN", bson!({"input": "$v", "n": 3})),
        ("$maxN", bson!({"input": "$v", "n": 2})),
        (
            "$bottomN",
            bson!({"output": "$v", "sortBy": {"v": 1}, "n": 2}),
        ),
        ("$mergeObjects", bson!({"$literal": {"a": 1}})),
    ];
    let input: Vec<Bson> = vec![bson!(4), bson!(1.5), bson!(9), bson!(2), bson!(7)];
    for (op, arg) in specs {
        let acc = Accumulator::compile(op, &arg, &vars).unwrap();
        let mut whole = acc.start();
        let mut first = acc.start();
        let mut second = acc.start();
        for (i, v) in input.iter().enumerate() {
            let value = acc.arg().eval(&doc! {"v": v.clone()}).unwrap();
            whole.add(value.clone()).unwrap();
            if i < 2 {
                first.add(value).unwrap();
            } else {
                second.add(value).unwrap();
            }
        }
        first.merge(second.partial()).unwrap();
        assert_eq!(first.finish(), whole.finish(), "{op}");
    }
}

/// Runs `{op: arg}` over `docs` compiled under `collation`, and also through a spilled
/// partial state, which must agree.
fn run_collated(op: &str, arg: Bson, docs: &[Document], collation: &Document) -> Bson {
    let c = crate::query::collation::Collation::parse(collation).unwrap();
    let vars = Variables::default()
        .with_comparator(crate::query::expr::value::Comparator::with_collation(c));
    let acc = Accumulator::compile(op, &arg, &vars).unwrap();
    let mut state = acc.start_group(&Bson::Null).unwrap();
    for d in docs {
        state.add(acc.arg().eval(d).unwrap()).unwrap();
    }
    let mut merged = acc.start_group(&Bson::Null).unwrap();
    merged.merge(state.partial()).unwrap();
    let whole = state.finish();
    assert_eq!(merged.finish(), whole, "{op} through its partial state");
    whole
}

#[test]
fn comparing_accumulators_compare_under_the_collation() {
    let ci = doc! {"locale": "en", "strength": 2};
    let numeric = doc! {"locale": "en", "numericOrdering": true};
    let cased = values(vec![
        bson!("b"),
        bson!("a"),
        bson!("B"),
        bson!("A"),
        bson!("c"),
    ]);
    let numbers = values(vec![bson!("10"), bson!("9"), bson!("100"), bson!("2")]);
    let top = |n: i32, dir: i32| bson!({"n": n, "sortBy": {"v": dir}, "output": "$v"});
    let cases: Vec<(&str, Bson, &[Document], &Document, Bson)> = vec![
        // Equal values: the first seen is kept.
        ("$min", bson!("$v"), &cased, &ci, bson!("a")),
        ("$max", bson!("$v"), &cased, &ci, bson!("c")),
        (
            "$addToSet",
            bson!("$v"),
            &cased,
            &ci,
            bson!(["a", "b", "c"]),
        ),
        (
            "$minN",
            bson!({"input": "$v", "n": 3}),
            &cased,
            &ci,
            bson!(["a", "A", "b"]),
        ),
        ("$topN", top(2, 1), &cased, &ci, bson!(["a", "A"])),
        ("$min", bson!("$v"), &numbers, &numeric, bson!("2")),
        ("$max", bson!("$v"), &numbers, &numeric, bson!("100")),
        (
            "$maxN",
            bson!({"input": "$v", "n": 2}),
            &numbers,
            &numeric,
            bson!(["100", "10"]),
        ),
        (
            "$bottomN",
            top(2, 1),
            &numbers,
            &numeric,
            bson!(["10", "100"]),
        ),
        (
            "$addToSet",
            bson!("$v"),
            &numbers,
            &numeric,
            bson!(["2", "9", "10", "100"]),
        ),
    ];
    for (op, arg, docs, collation, expected) in cases {
        assert_eq!(
            run_collated(op, arg.clone(), docs, collation),
            expected,
            "{op} {arg} under {collation}"
        );
    }
}

/// `$minN`/`$maxN` order strings through the operation's collation, in `$group` and in the
/// expression form alike (one state serves both), and the expression folds the array's
/// elements in order.
#[test]
fn n_accumulators_and_their_expressions_share_one_state() {
    use crate::query::collation::Collation;
    use crate::query::expr::value::Comparator;
    let caseless = Collation::parse(&doc! {"locale": "en", "strength": 2}).unwrap();
    let collated = Variables::default().with_comparator(Comparator::with_collation(caseless));
    let binary = Variables::default();
    // By bytes "C" sorts before "b"; without case, after it.
    let words = [bson!("b"), bson!("A"), bson!(null), bson!("C")];
    let cases = [
        ("$minN", &binary, bson!(["A", "C"])),
        ("$minN", &collated, bson!(["A", "b"])),
        ("$maxN", &binary, bson!(["b", "C"])),
        ("$maxN", &collated, bson!(["C", "b"])),
        ("$firstN", &collated, bson!(["b", "A"])),
        ("$lastN", &collated, bson!([null, "C"])),
    ];
    for (op, vars, want) in cases {
        let acc = Accumulator::compile(op, &bson!({"input": "$v", "n": 2}), vars).unwrap();
        let mut state = acc.start_group(&Bson::Null).unwrap();
        for w in &words {
            state
                .add(acc.arg().eval(&doc! {"v": w.clone()}).unwrap())
                .unwrap();
        }
        assert_eq!(state.finish(), want, "{op} accumulator");
        let spec = bson!({op: {"n": 2, "input": words.to_vec()}});
        let expr = Expression::compile(&spec, vars).unwrap();
        let got = expr.eval(&doc! {}).map_err(|e| e.code);
        assert_eq!(got, Ok(Some(want)), "{op} expression");
    }
}
