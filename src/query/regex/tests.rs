//! Pattern tables against PCRE behaviour, invalid patterns, and long inputs.

use super::*;

#[test]
fn matches_like_pcre() {
    let cases: &[(&str, &str, &str, bool)] = &[
        ("abc", "", "xxabcxx", true),
        ("^abc", "", "xxabc", false),
        ("^abc$", "", "abc", true),
        ("^abc$", "", "abc\n", true),
        ("^b", "m", "a\nb", true),
        ("^b", "", "a\nb", false),
        ("ABC", "i", "xabcx", true),
        ("a.c", "", "a\nc", false),
        ("a.c", "s", "a\nc", true),
        ("a b # comment", "x", "ab", true),
        ("colou?r", "", "color", true),
        ("^\\d{3}-\\d{2,}$", "", "123-45", true),
        ("^\\d{3}-\\d{2,}$", "", "123-4", false),
        ("^(ab|cd)+$", "", "abcdab", true),
        ("^(ab|cd)+$", "", "abce", false),
        ("[^a-c]", "", "abc", false),
        ("[a-c]x", "", "zzcx", true),
        ("[A-Z]", "i", "q", true),
        ("\\bfoo\\b", "", "a foo b", true),
        ("\\bfoo\\b", "", "afoob", false),
        ("a.*?b", "", "aXXb", true),
        ("^(?:a|b)*c", "", "ababc", true),
        ("foo(?=bar)", "", "foobar", true),
        ("foo(?!bar)", "", "foobar", false),
        ("x{2}", "", "xx", true),
        ("a{,2}", "", "a{,2}", true),
        ("\\.", "", "a.b", true),
        ("\\.", "", "ab", false),
        ("", "", "", true),
        ("é", "i", "É", true),
    ];
    for (pattern, options, text, expected) in cases {
        let re = Regex::new(pattern, options).unwrap();
        assert_eq!(
            re.is_match(text).unwrap(),
            *expected,
            "/{pattern}/{options} on {text:?}"
        );
    }
}

#[test]
fn invalid_patterns_are_errors() {
    for pattern in [
        "(", "a)", "[a", "*a", "a**", "\\", "[z-a]", "(?<n>a)", "\\1",
    ] {
        let err = Regex::new(pattern, "").unwrap_err();
        assert_eq!(err.code, ErrorCode::Location51091, "{pattern}");
    }
    assert_eq!(Regex::new("a", "q").unwrap_err().code, ErrorCode::BadValue);
}

#[test]
fn long_text_does_not_overflow() {
    let text = "a".repeat(200_000);
    assert!(Regex::new("^a*$", "").unwrap().is_match(&text).unwrap());
    assert!(Regex::new("a.*a$", "").unwrap().is_match(&text).unwrap());
}

#[test]
fn groups_nest_at_most_250_deep() {
    let nested = |n: usize| format!("{}a{}", "(".repeat(n), ")".repeat(n));
    assert!(Regex::new(&nested(250), "").unwrap().is_match("a").unwrap());
    for n in [251, 5_000] {
        let err = Regex::new(&nested(n), "").unwrap_err();
        assert_eq!(err.code, ErrorCode::Location51091, "{n}");
        assert!(
            err.message.contains("parentheses are too deeply nested"),
            "{err:?}"
        );
    }
}

#[test]
fn running_out_of_budget_is_an_error_not_a_mismatch() {
    // The first branch backtracks exponentially; the second would match. Past the budget the
    // answer is unknown, so it must not read as "no match".
    let re = Regex::new("^(a+)+$|c$", "").unwrap();
    let text = format!("{}c", "a".repeat(28));
    let err = re.is_match(&text).unwrap_err();
    assert_eq!(err.code, ErrorCode::Location51156);
    let nested = Regex::new("^(a*)*$", "").unwrap();
    let err = nested
        .is_match(&format!("{}b", "a".repeat(29)))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Location51156);
    // A match found before the budget runs out is an answer.
    assert!(re.is_match("aaa").unwrap());
}

#[test]
fn deep_matcher_recursion_is_an_error_on_a_small_stack() {
    // Each iteration of a group repeat nests matcher frames: a long text would need thousands.
    let text = "ab".repeat(50_000);
    let result = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(move || Regex::new("^(ab)*$", "").unwrap().is_match(&text))
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(result.unwrap_err().code, ErrorCode::Location51156);
}
