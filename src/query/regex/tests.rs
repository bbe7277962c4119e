//! Patterns as mongod runs them: option letters, PCRE2 features, mongod's exact errors, the
//! limits that stop runaway matches, and match spans for the regex expressions.

use super::limits::{with_heap_limit, HEAP_LIMIT_KIB};
use super::*;

fn matches(pattern: &str, options: &str, text: &str) -> bool {
    Regex::new(pattern, options)
        .unwrap_or_else(|e| panic!("/{pattern}/{options}: {e:?}"))
        .is_match(text)
        .unwrap_or_else(|e| panic!("/{pattern}/{options} on {text:?}: {e:?}"))
}

#[test]
fn matches_like_mongod() {
    let cases: &[(&str, &str, &str, bool)] = &[
        ("abc", "", "xxabcxx", true),
        ("^abc", "", "xxabc", false),
        ("^abc$", "", "abc\n", true),
        // Option letters.
        ("ABC", "i", "xabcx", true),
        ("ABC", "", "xabcx", false),
        ("^b", "m", "a\nb", true),
        ("^b", "", "a\nb", false),
        ("a.c", "s", "a\nc", true),
        ("a.c", "", "a\nc", false),
        ("a b # comment", "x", "ab", true),
        ("a b", "", "ab", false),
        ("abc", "u", "abc", true),
        ("ABC", "imsxu", "abc", true),
        // Inline options.
        ("(?i)abc", "", "ABC", true),
        ("a(?i)bc", "", "aBC", true),
        ("a(?i)bc", "", "ABC", false),
        ("(?i:b)c", "", "Bc", true),
        ("(?s).", "", "\n", true),
        ("(?m)^b", "", "a\nb", true),
        ("(?x) a b ", "", "ab", true),
        // UTF: characters, not bytes; caseless matching folds Unicode.
        ("^.$", "", "é", true),
        ("^..$", "", "é", false),
        ("^[é]$", "", "é", true),
        ("é", "i", "É", true),
        ("σ", "i", "Σ", true),
        // Unicode properties.
        ("^\\p{L}+$", "", "Grüße", true),
        ("^\\p{L}+$", "", "abc1", false),
        ("\\p{Lu}", "", "abc", false),
        ("^\\p{Greek}+$", "", "αβγ", true),
        ("\\P{L}", "", "abc", false),
        // UTF without UCP (mongod's flags): \w, \d and \b are ASCII.
        ("^\\w$", "", "é", false),
        ("^\\d$", "", "٣", false),
        ("^[[:alpha:]]$", "", "é", false),
        // Backreferences.
        ("^(\\w)\\1$", "", "aa", true),
        ("^(\\w)\\1$", "", "ab", false),
        ("^(?<c>\\w)\\k<c>$", "", "zz", true),
        ("(a)\\g{-1}", "", "xaa", true),
        ("(?i)^(a)\\1$", "", "aA", true),
        // Lookaround.
        ("(?<=@)example", "", "me@example.com", true),
        ("(?<=@)example", "", "example.com", false),
        ("(?<!\\$)\\d+", "", "$5", false),
        ("(?<!\\$)\\d+", "", "$5 6", true),
        ("foo(?=bar)", "", "foobar", true),
        ("foo(?!bar)", "", "foobar", false),
        // Named groups, atomic groups, possessive quantifiers, conditionals, recursion.
        ("(?<year>\\d{4})-(?P<month>\\d\\d)", "", "on 2024-05", true),
        ("^(?>a+)b", "", "aaab", true),
        ("^a++a", "", "aaa", false),
        ("^(a)?(?(1)b|c)$", "", "ab", true),
        ("^(a)?(?(1)b|c)$", "", "c", true),
        ("^(\\((?:[^()]|(?1))*\\))$", "", "(a(b)c)", true),
        ("^(\\((?:[^()]|(?1))*\\))$", "", "(a(b c)", false),
        // Escapes and quantifiers.
        ("\\Qa.b\\E", "", "a.b", true),
        ("\\Qa.b\\E", "", "axb", false),
        ("colou?r", "", "color", true),
        ("^\\d{3}-\\d{2,}$", "", "123-4", false),
        ("\\bfoo\\b", "", "a foo b", true),
        ("\\bfoo\\b", "", "afoob", false),
        ("", "", "", true),
    ];
    for (pattern, options, text, expected) in cases {
        assert_eq!(
            matches(pattern, options, text),
            *expected,
            "/{pattern}/{options} on {text:?}"
        );
    }
}

#[test]
fn long_texts_match_without_deep_stacks() {
    // PCRE2 keeps backtracking frames on the heap: no stack to overflow, even on a 2 MiB
    // thread like the server's.
    let result = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(|| {
            let ab = "ab".repeat(100_000);
            let a = "a".repeat(200_000);
            (
                matches("^(ab)*$", "", &ab),
                matches("^a*$", "", &a),
                matches("a.*a$", "", &a),
            )
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(result, (true, true, true));
}

#[test]
fn invalid_patterns_give_pcre2s_message() {
    let cases: &[(&str, &str)] = &[
        ("(", "missing closing parenthesis"),
        ("a)", "unmatched closing parenthesis"),
        ("[a", "missing terminating ] for character class"),
        ("*a", "quantifier does not follow a repeatable item"),
        ("a{2,1}", "numbers out of order in {} quantifier"),
        ("\\", "\\ at end of pattern"),
        ("[z-a]", "range out of order in character class"),
        ("(a)\\2", "reference to non-existent subpattern"),
        (
            "(?<n>a)(?<n>b)",
            "two named subpatterns have the same name (PCRE2_DUPNAMES not set)",
        ),
        ("(?<=a+)b", "length of lookbehind assertion is not limited"),
        ("\\p{Nope}", "unknown property after \\P or \\p"),
        ("(*NOPE)a", "(*VERB) not recognized or malformed"),
    ];
    for (pattern, message) in cases {
        let err = Regex::new(pattern, "").unwrap_err();
        assert_eq!(err.code, ErrorCode::Location51091, "{pattern}");
        assert_eq!(
            err.message,
            format!("Regular expression is invalid: {message}"),
            "{pattern}"
        );
        let err = Regex::for_operator("$regexFind", pattern, "").unwrap_err();
        assert_eq!(err.code, ErrorCode::Location51111, "{pattern}");
        assert_eq!(
            err.message,
            format!("Invalid Regex in $regexFind: {message}"),
            "{pattern}"
        );
    }
}

#[test]
fn option_letters_outside_imsxu_are_51108() {
    for (options, letter) in [("q", 'q'), ("ig", 'g'), ("l", 'l'), ("I", 'I')] {
        let err = Regex::new("a", options).unwrap_err();
        assert_eq!(err.code, ErrorCode::Location51108, "{options}");
        assert_eq!(
            err.message,
            format!(" invalid flag in regex options: {letter}")
        );
        let err = Regex::for_operator("$regexMatch", "a", options).unwrap_err();
        assert_eq!(err.code, ErrorCode::Location51108);
        assert_eq!(
            err.message,
            format!("$regexMatch invalid flag in regex options: {letter}")
        );
    }
    // The options are read before the pattern: a bad letter wins over a bad pattern.
    let err = Regex::new("(", "q").unwrap_err();
    assert_eq!(err.code, ErrorCode::Location51108);
}

#[test]
fn nul_bytes_are_refused_as_mongod_does() {
    // `$regex`: options first (51108), then the NUL (BadValue), then the pattern (51091).
    let err = Regex::new("a\0b", "").unwrap_err();
    assert_eq!(err.code, ErrorCode::BadValue);
    assert_eq!(
        err.message,
        "Regular expression cannot contain an embedded null byte"
    );
    assert_eq!(Regex::new("(\0", "").unwrap_err().code, ErrorCode::BadValue);
    assert_eq!(
        Regex::new("a\0b", "q").unwrap_err().code,
        ErrorCode::Location51108
    );
    // Expressions: the NULs first (51109 pattern, 51110 options), then the letters.
    let err = Regex::for_operator("$regexFindAll", "a\0", "q").unwrap_err();
    assert_eq!(err.code, ErrorCode::Location51109);
    assert_eq!(
        err.message,
        "$regexFindAll: regular expression cannot contain an embedded null byte"
    );
    let err = Regex::for_operator("$regexFindAll", "a", "i\0").unwrap_err();
    assert_eq!(err.code, ErrorCode::Location51110);
    assert_eq!(
        err.message,
        "$regexFindAll: regular expression options cannot contain an embedded null byte"
    );
}

#[test]
fn patterns_are_at_most_16384_bytes() {
    assert!(matches(
        &"a".repeat(MAX_PATTERN_LENGTH),
        "",
        &"a".repeat(16_384)
    ));
    let err = Regex::new(&"a".repeat(MAX_PATTERN_LENGTH + 1), "").unwrap_err();
    assert_eq!(err.code, ErrorCode::Location51091);
    assert_eq!(
        err.message,
        "Regular expression is invalid: pattern string is longer than the limit set by the \
         application"
    );
}

#[test]
fn groups_nest_at_most_250_deep() {
    let nested = |n: usize| format!("{}a{}", "(".repeat(n), ")".repeat(n));
    assert!(matches(&nested(250), "", "a"));
    for n in [251, 5_000] {
        let err = Regex::new(&nested(n), "").unwrap_err();
        assert_eq!(err.code, ErrorCode::Location51091, "{n}");
        assert_eq!(
            err.message,
            "Regular expression is invalid: parentheses are too deeply nested"
        );
    }
}

fn match_error(pattern: &str, text: &str) -> Error {
    Regex::new(pattern, "")
        .unwrap()
        .is_match(text)
        .expect_err(pattern)
}

#[test]
fn catastrophic_backtracking_ends_in_51156_not_a_mismatch() {
    let text = format!("{}b", "a".repeat(30));
    for pattern in ["(a+)+$", "^(a|a)*$", "^(a*)*$", "^(a+)+$|c$"] {
        let err = match_error(pattern, &text);
        assert_eq!(err.code, ErrorCode::Location51156, "{pattern}");
        assert_eq!(
            err.message,
            "Error occurred while executing the regular expression in $regex. Result code: \
             match limit exceeded",
            "{pattern}"
        );
    }
    // An expression's failure names the expression.
    let re = Regex::for_operator("$regexFind", "(a+)+$", "").unwrap();
    let err = re.find_at(&text, 0).unwrap_err();
    assert_eq!(
        err.message,
        "Error occurred while executing the regular expression in $regexFind. Result code: \
         match limit exceeded"
    );
    // A pattern's own, lower match limit applies.
    let err = match_error("(*LIMIT_MATCH=1000)(a+)+$", &format!("{}b", "a".repeat(12)));
    assert!(err.message.ends_with("match limit exceeded"), "{err:?}");
    // A match found in time is an answer.
    assert!(matches("^(a+)+$|c$", "", "aaa"));
}

#[test]
fn backtracking_memory_is_bounded() {
    // Every `ab` nests a backtracking frame: 2 MB of text needs more than 64 MiB of them.
    let text = "ab".repeat(1_000_000);
    let heap_exceeded = "Error occurred while executing the regular expression in $regex. \
                         Result code: heap limit exceeded";
    assert_eq!(match_error("^(ab)*$", &text).message, heap_exceeded);
    // A pattern cannot raise the limit with start items of its own.
    for pattern in [
        "(*LIMIT_HEAP=4000000000)^(ab)*$",
        "(*UTF)(*LIMIT_HEAP=4000000000)(*NO_JIT)^(ab)*$",
    ] {
        assert_eq!(match_error(pattern, &text).message, heap_exceeded);
    }
    // It may lower it.
    assert_eq!(
        match_error("(*LIMIT_HEAP=100)^(ab)*$", &"ab".repeat(10_000)).message,
        heap_exceeded
    );
    assert!(matches("^(ab)*$", "", &"ab".repeat(10_000)));
    // Repeats of one character or class take no frame per character.
    let a = "a".repeat(5_000_000);
    assert!(matches("^\\w*$", "", &a));
    assert!(matches("^a.*a$", "", &a));
    assert!(matches("^[^b]+$", "", &a));
}

#[test]
fn the_heap_limit_goes_after_the_patterns_start_items() {
    let ours = format!("(*LIMIT_HEAP={HEAP_LIMIT_KIB})");
    let cases: &[(&str, String)] = &[
        ("abc", format!("{ours}abc")),
        ("", ours.clone()),
        ("(*UTF)(*UCP)a", format!("(*UTF)(*UCP){ours}a")),
        (
            "(*LIMIT_HEAP=4000000000)a",
            format!("(*LIMIT_HEAP=4000000000){ours}a"),
        ),
        (
            "(*LIMIT_HEAP=10)a",
            "(*LIMIT_HEAP=10)(*LIMIT_HEAP=10)a".into(),
        ),
        (
            "(*LIMIT_MATCH=5)(*CRLF)a",
            format!("(*LIMIT_MATCH=5)(*CRLF){ours}a"),
        ),
        // Not start items PCRE2 accepts: the run ends there.
        (
            "(*LIMIT_HEAP=9999999999999)a",
            format!("{ours}(*LIMIT_HEAP=9999999999999)a"),
        ),
        ("(*ACCEPT)a", format!("{ours}(*ACCEPT)a")),
        ("(*LIMIT_HEAP=)a", format!("{ours}(*LIMIT_HEAP=)a")),
        ("(*LIMIT_HEAP=1x)a", format!("{ours}(*LIMIT_HEAP=1x)a")),
        ("(*UTF", format!("{ours}(*UTF")),
        ("a(*UTF)", format!("{ours}a(*UTF)")),
    ];
    for (pattern, expected) in cases {
        assert_eq!(&with_heap_limit(pattern), expected, "{pattern}");
    }
    // Every one of those start items compiles in front of ours (the two caseless ones
    // exclude each other).
    let items = "(*UTF8)(*UTF)(*UCP)(*NOTEMPTY)(*NOTEMPTY_ATSTART)(*NO_AUTO_POSSESS)\
                 (*NO_DOTSTAR_ANCHOR)(*NO_JIT)(*NO_START_OPT)(*LIMIT_HEAP=5000)\
                 (*LIMIT_MATCH=5000)(*LIMIT_DEPTH=5000)(*LIMIT_RECURSION=5000)(*CR)(*LF)\
                 (*CRLF)(*ANY)(*NUL)(*ANYCRLF)(*BSR_ANYCRLF)(*BSR_UNICODE)";
    for caseless in ["(*CASELESS_RESTRICT)", "(*TURKISH_CASING)"] {
        let pattern = format!("{items}{caseless}a");
        assert!(with_heap_limit(&pattern).ends_with(&format!("{caseless}(*LIMIT_HEAP=5000)a")));
        assert!(matches(&pattern, "", "a"), "{pattern}");
    }
}

fn find(pattern: &str, text: &str, start: usize) -> Option<Match> {
    Regex::for_operator("$regexFind", pattern, "")
        .unwrap()
        .find_at(text, start)
        .unwrap()
}

#[test]
fn find_at_reports_the_span_and_every_group() {
    let m = |start, end, captures: &[Option<(usize, usize)>]| {
        Some(Match {
            start,
            end,
            captures: captures.to_vec(),
        })
    };
    let cases: &[(&str, &str, usize, Option<Match>)] = &[
        ("b", "abc", 0, m(1, 2, &[])),
        ("x", "abc", 0, None),
        ("a", "aXa", 1, m(2, 3, &[])),
        ("a", "aXa", 3, None),
        ("a", "aXa", 4, None),
        ("(a)|(b)", "xb", 0, m(1, 2, &[None, Some((1, 2))])),
        ("(a)(x)?", "a", 0, m(0, 1, &[Some((0, 1)), None])),
        (
            "(?<y>\\d+)-(\\d+)",
            "v 12-345",
            0,
            m(2, 8, &[Some((2, 4)), Some((5, 8))]),
        ),
        // Offsets are bytes: `é` is two.
        ("(b)", "éb", 0, m(2, 3, &[Some((2, 3))])),
        // Lookbehind and `^` see the text before `start`.
        ("(?<=a)b", "ab", 1, m(1, 2, &[])),
        ("^b", "ab", 1, None),
        ("\\Gb", "ab", 1, m(1, 2, &[])),
        // An empty match.
        ("x*", "abc", 1, m(1, 1, &[])),
        ("$", "abc", 3, m(3, 3, &[])),
    ];
    for (pattern, text, start, expected) in cases {
        assert_eq!(
            &find(pattern, text, *start),
            expected,
            "/{pattern}/ on {text:?} from {start}"
        );
    }
    let re = Regex::new("(a)(?<n>b)(?:c)", "").unwrap();
    assert_eq!(re.capture_count(), 2);
    // An offset inside a character is an error, not a panic.
    let err = Regex::new("b", "").unwrap().find_at("éb", 1).unwrap_err();
    assert_eq!(err.code, ErrorCode::Location51156);
}

#[test]
fn code_point_indexes_count_characters_before_an_offset() {
    let cases: &[(&str, usize, usize)] = &[
        ("", 0, 0),
        ("abc", 0, 0),
        ("abc", 2, 2),
        ("aéb", 1, 1),
        ("aéb", 3, 2),
        ("aéb", 4, 3),
        ("aéb", 2, 2),
        ("a😀b", 5, 2),
        ("aéb", 99, 3),
    ];
    for (text, offset, expected) in cases {
        assert_eq!(
            code_point_index(text, *offset),
            *expected,
            "{text:?} {offset}"
        );
    }
}

#[test]
fn a_compiled_regex_is_shared_across_threads() {
    fn shareable<T: Send + Sync + Clone + std::fmt::Debug>() {}
    shareable::<Regex>();
    let re = Regex::new("^a+$", "").unwrap();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let re = re.clone();
            std::thread::spawn(move || re.is_match("aaa").unwrap())
        })
        .collect();
    for t in threads {
        assert!(t.join().unwrap());
    }
}

#[test]
fn finding_every_match_of_a_long_text_is_linear() {
    // Every match passes PCRE2_NO_UTF_CHECK (a `&str` is valid UTF-8). With PCRE2's check on,
    // each call validated the text from its start offset to the end: finding these 1,000,001
    // empty matches in 2 MB would validate about 10^12 bytes and never finish here.
    let text = "é".repeat(1_000_000);
    let re = Regex::for_operator("$regexFindAll", "", "").unwrap();
    let (mut at, mut found) = (0, 0);
    while let Some(m) = re.find_at(&text, at).unwrap() {
        assert_eq!((m.start, m.end), (at, at));
        found += 1;
        at += 'é'.len_utf8();
    }
    assert_eq!(found, 1_000_001);
}

#[test]
fn regex_find_all_over_200000_characters_finds_each_once() {
    use crate::query::expr::{Expression, Variables};
    let spec = bson::bson!({"$regexFindAll": {"input": "$s", "regex": ""}});
    let vars = Variables::new(bson::DateTime::from_millis(0));
    let text = "é".repeat(200_000);
    let found = Expression::compile(&spec, &vars)
        .and_then(|e| e.eval(&bson::doc! {"s": text}))
        .unwrap();
    let Some(bson::Bson::Array(found)) = found else {
        panic!("{found:?}");
    };
    assert_eq!(found.len(), 200_000);
    let last = found.last().and_then(bson::Bson::as_document).unwrap();
    assert_eq!(
        last,
        &bson::doc! {"match": "", "idx": 199_999, "captures": []}
    );
}

#[test]
fn matching_from_an_offset_sees_the_text_before_it() {
    // Lookbehinds, `\b`, `\A` and `^` see the text before the start offset, whether or not
    // PCRE2 validates the text's UTF-8 (which decides how far back it may look).
    type Span = Option<(usize, usize)>;
    let cases: &[(&str, &str, usize, Span)] = &[
        ("(?<=ab)c", "abc", 2, Some((2, 3))),
        ("(?<=éa)b", "éab", 3, Some((3, 4))),
        ("(?<!a)b", "ab", 1, None),
        ("\\bb", "ab", 1, None),
        ("\\bb", " b", 1, Some((1, 2))),
        ("\\Ab", "ab", 1, None),
        ("(?m)^b", "a\nb", 2, Some((2, 3))),
        ("", "", 0, Some((0, 0))),
        ("a*", "", 0, Some((0, 0))),
        ("", "é", 2, Some((2, 2))),
    ];
    for (pattern, text, start, expected) in cases {
        let span = find(pattern, text, *start).map(|m| (m.start, m.end));
        assert_eq!(&span, expected, "/{pattern}/ on {text:?} from {start}");
    }
}

#[test]
fn an_offset_inside_a_character_is_pcre2s_bad_offset_error() {
    // PCRE2's own error, whether its UTF check or the wrapper in front of it catches it.
    for (text, start) in [("éb", 1), ("a😀", 2), ("a😀", 4)] {
        let err = Regex::for_operator("$regexFind", "b", "")
            .unwrap()
            .find_at(text, start)
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::Location51156);
        assert_eq!(
            err.message,
            "Error occurred while executing the regular expression in $regexFind. Result code: \
             bad offset into UTF string"
        );
    }
}
