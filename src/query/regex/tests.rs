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
        ("^(a*)*$", "", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaab", false),
        ("\\.", "", "a.b", true),
        ("\\.", "", "ab", false),
        ("", "", "", true),
        ("é", "i", "É", true),
    ];
    for (pattern, options, text, expected) in cases {
        let re = Regex::new(pattern, options).unwrap();
        assert_eq!(
            re.is_match(text),
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
    assert!(Regex::new("^a*$", "").unwrap().is_match(&text));
    assert!(Regex::new("a.*a$", "").unwrap().is_match(&text));
}
