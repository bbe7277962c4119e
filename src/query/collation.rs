//! Collations: MongoDB's collation document parsed and validated once, as mongod 7.0's
//! `CollatorFactoryICU::makeFromBSON` does, into a [`Collation`] that compares strings and
//! writes their sort keys through ICU4X's collator (compiled data: no data files at run time).
//!
//! Owns: the collation document's validation (codes and messages), the supported locales, the
//! mapping of each option onto ICU4X, and the normalized spec (mongod's full form, as
//! `listIndexes`, `listCollections` and explain show it). `{locale: "simple"}` is no collator at
//! all: [`Collation::parse`] answers `None` and callers compare by bytes. Does not own: where a
//! collation applies (filters, sorts, index keys: their modules take an `Option<&Collation>`).
//!
//! What ICU4X cannot do is refused, never ignored: `backwards` other than the locale's own
//! default (ICU4X takes backward secondary weighting from the locale only, fr_CA) is refused
//! with 238. `normalization` is accepted either way: ICU4X always normalizes (NFD) first, and
//! ICU's `normalization: false` is only a promise that the input is already in FCD form, for
//! which both modes give the same order; on other input `false` in ICU may order canonically
//! equivalent strings apart, where mayfly keeps them equal.

use crate::error::{Error, ErrorCode, Result};
use crate::query::path::{render_document, type_name};
use bson::{doc, Bson, Document};
use icu_collator::options::{AlternateHandling, CaseLevel, CollatorOptions, MaxVariable, Strength};
use icu_collator::preferences::{CollationCaseFirst, CollationNumericOrdering};
use icu_collator::{CollatorBorrowed, CollatorPreferences};
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

/// The ICU version mongod 7.0 reports in a collation's `version`; a spec naming another one is
/// refused with 95, as mongod does.
pub const VERSION: &str = "57.1";

/// mongod's locale IDs (ICU form) and the BCP 47 tag ICU4X loads for each.
const LOCALES: &[(&str, &str)] = &[
    ("af", "af"),
    ("am", "am"),
    ("ar", "ar"),
    ("as", "as"),
    ("az", "az"),
    ("be", "be"),
    ("bg", "bg"),
    ("bn", "bn"),
    ("bo", "bo"),
    ("bs", "bs"),
    ("bs_Cyrl", "bs-Cyrl"),
    ("ca", "ca"),
    ("chr", "chr"),
    ("cs", "cs"),
    ("cy", "cy"),
    ("da", "da"),
    ("de", "de"),
    ("de@collation=phonebook", "de-u-co-phonebk"),
    ("de_AT", "de-AT"),
    ("de_AT@collation=phonebook", "de-AT-u-co-phonebk"),
    ("dsb", "dsb"),
    ("dz", "dz"),
    ("ee", "ee"),
    ("el", "el"),
    ("en", "en"),
    ("en_US", "en-US"),
    ("en_US_POSIX", "en-US-posix"),
    ("eo", "eo"),
    ("es", "es"),
    ("es@collation=traditional", "es-u-co-trad"),
    ("et", "et"),
    ("fa", "fa"),
    ("fa_AF", "fa-AF"),
    ("fi", "fi"),
    ("fil", "fil"),
    ("fo", "fo"),
    ("fr", "fr"),
    ("fr_CA", "fr-CA"),
    ("ga", "ga"),
    ("gl", "gl"),
    ("gu", "gu"),
    ("ha", "ha"),
    ("haw", "haw"),
    ("he", "he"),
    ("hi", "hi"),
    ("hr", "hr"),
    ("hsb", "hsb"),
    ("hu", "hu"),
    ("hy", "hy"),
    ("id", "id"),
    ("ig", "ig"),
    ("is", "is"),
    ("it", "it"),
    ("ja", "ja"),
    ("ka", "ka"),
    ("kk", "kk"),
    ("kl", "kl"),
    ("km", "km"),
    ("kn", "kn"),
    ("ko", "ko"),
    ("kok", "kok"),
    ("ky", "ky"),
    ("lb", "lb"),
    ("lkt", "lkt"),
    ("ln", "ln"),
    ("lo", "lo"),
    ("lt", "lt"),
    ("lv", "lv"),
    ("mk", "mk"),
    ("ml", "ml"),
    ("mn", "mn"),
    ("mr", "mr"),
    ("ms", "ms"),
    ("mt", "mt"),
    ("my", "my"),
    ("nb", "nb"),
    ("ne", "ne"),
    ("nl", "nl"),
    ("nn", "nn"),
    ("om", "om"),
    ("or", "or"),
    ("pa", "pa"),
    ("pl", "pl"),
    ("ps", "ps"),
    ("pt", "pt"),
    ("ro", "ro"),
    ("ru", "ru"),
    ("se", "se"),
    ("si", "si"),
    ("sk", "sk"),
    ("sl", "sl"),
    ("smn", "smn"),
    ("sq", "sq"),
    ("sr", "sr"),
    ("sr_Latn", "sr-Latn"),
    ("sv", "sv"),
    ("sw", "sw"),
    ("ta", "ta"),
    ("te", "te"),
    ("th", "th"),
    ("to", "to"),
    ("tr", "tr"),
    ("ug", "ug"),
    ("uk", "uk"),
    ("ur", "ur"),
    ("vi", "vi"),
    ("wae", "wae"),
    ("yi", "yi"),
    ("yo", "yo"),
    ("zh", "zh"),
    ("zh_Hant", "zh-Hant"),
    ("zu", "zu"),
];

/// The options of a collation, every one resolved (mongod's `CollationSpec`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub locale: String,
    pub case_level: bool,
    pub case_first: &'static str,
    pub strength: i32,
    pub numeric_ordering: bool,
    pub alternate: &'static str,
    pub max_variable: &'static str,
    pub normalization: bool,
    pub backwards: bool,
}

impl Spec {
    /// The normalized form mongod shows (`listIndexes`, `listCollections`, explain).
    pub fn to_document(&self) -> Document {
        doc! {
            "locale": self.locale.as_str(),
            "caseLevel": self.case_level,
            "caseFirst": self.case_first,
            "strength": self.strength,
            "numericOrdering": self.numeric_ordering,
            "alternate": self.alternate,
            "maxVariable": self.max_variable,
            "normalization": self.normalization,
            "backwards": self.backwards,
            "version": VERSION,
        }
    }
}

/// A compiled, non-simple collation: cheap to clone, shared across threads.
#[derive(Clone)]
pub struct Collation {
    inner: Arc<Inner>,
}

struct Inner {
    spec: Spec,
    collator: CollatorBorrowed<'static>,
}

impl fmt::Debug for Collation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Collation").field(&self.inner.spec).finish()
    }
}

/// Two collations are equal when their resolved options are: they order every string alike.
impl PartialEq for Collation {
    fn eq(&self, other: &Collation) -> bool {
        self.inner.spec == other.inner.spec
    }
}

impl Eq for Collation {}

impl Collation {
    /// Parses a collation document; `None` for `{locale: "simple"}` (binary comparison).
    pub fn parse(spec: &Document) -> Result<Option<Collation>> {
        let locale = match spec.get("locale") {
            None => {
                return Err(Error::new(
                    ErrorCode::NoSuchKey,
                    "Missing expected field \"locale\"",
                ))
            }
            Some(Bson::String(s)) => s.as_str(),
            Some(other) => return Err(wrong_type("locale", "string", other)),
        };
        if locale.contains('\0') {
            return Err(Error::bad_value(format!(
                "Field 'locale' cannot contain null byte. Collation spec: {}",
                render_document(spec)
            )));
        }
        if locale == "simple" {
            if spec.len() > 1 {
                return Err(Error::failed_to_parse(format!(
                    "If locale=simple, no other fields should be present in: {}",
                    render_document(spec)
                )));
            }
            return Ok(None);
        }
        if locale.is_empty() {
            return Err(Error::bad_value(format!(
                "Field 'locale' cannot be the empty string in: {}",
                render_document(spec)
            )));
        }
        let Some(&(_, tag)) = LOCALES.iter().find(|(id, _)| *id == locale) else {
            return Err(Error::bad_value(format!(
                "Field 'locale' is invalid in: {}",
                render_document(spec)
            )));
        };
        compile(spec, locale, tag).map(Some)
    }

    /// Parses an optional `collation` argument; absent or simple is `None`.
    pub fn parse_optional(spec: Option<&Document>) -> Result<Option<Collation>> {
        spec.map_or(Ok(None), Collation::parse)
    }

    /// The resolved options.
    pub fn spec(&self) -> &Spec {
        &self.inner.spec
    }

    /// The normalized spec document, with `version`.
    pub fn to_document(&self) -> Document {
        self.inner.spec.to_document()
    }

    /// Orders two strings under the collation.
    pub fn compare(&self, a: &str, b: &str) -> Ordering {
        self.inner.collator.compare(a, b)
    }

    /// Appends the sort key of `s` to `out`: byte order of sort keys is the collation's order,
    /// and strings equal under it have equal keys.
    pub fn write_sort_key(&self, s: &str, out: &mut Vec<u8>) {
        // Writing to a Vec cannot fail.
        let _ = self.inner.collator.write_sort_key_to(s, out);
    }
}

impl Collation {
    /// The string an index with this collation stores for `s`: its sort key, one char per byte
    /// (U+0000..U+00FF). UTF-8 orders those chars as the bytes order, so the index's ordinary
    /// string encoding orders the keys as the collation orders the strings, and strings equal
    /// under the collation get one key (as mongod's collation-aware index keys do).
    pub fn key_string(&self, s: &str) -> String {
        let mut key = Vec::with_capacity(s.len() * 2);
        self.write_sort_key(s, &mut key);
        key.into_iter().map(char::from).collect()
    }

    /// `value` as an index with this collation stores it: strings and symbols, also inside
    /// arrays and documents, replaced by [`Collation::key_string`]. Values reach here from
    /// stored documents or compiled filters, whose nesting is bounded (`query::depth`).
    pub fn key_value(&self, value: &Bson) -> Bson {
        match value {
            Bson::String(s) | Bson::Symbol(s) => Bson::String(self.key_string(s)),
            Bson::Array(items) => Bson::Array(items.iter().map(|v| self.key_value(v)).collect()),
            Bson::Document(d) => Bson::Document(
                d.iter()
                    .map(|(k, v)| (k.clone(), self.key_value(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// A compiled collation for a normalized spec stored in the catalog (an index's or a
    /// collection's default), compiled once per process and spec.
    pub fn cached(spec: &Document) -> Result<Option<Collation>> {
        const COLLATION_CACHE: &str = "collation cache";
        use std::collections::HashMap;
        use std::sync::{Mutex, OnceLock};
        static CACHE: OnceLock<Mutex<HashMap<String, Option<Collation>>>> = OnceLock::new();
        let key = render_document(spec);
        let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
        // A cache of whole entries: a poisoned lock is recovered (and counted).
        if let Some(found) = crate::sync::lock_recovering(cache, COLLATION_CACHE)
            .get(&key)
            .cloned()
        {
            return Ok(found);
        }
        let compiled = Collation::parse(spec)?;
        crate::sync::lock_recovering(cache, COLLATION_CACHE).insert(key, compiled.clone());
        Ok(compiled)
    }
}

/// Whether `value` holds a string or symbol, at any depth (such values order differently under
/// different collations). Bounded like [`Collation::key_value`].
pub fn has_strings(value: &Bson) -> bool {
    match value {
        Bson::String(_) | Bson::Symbol(_) => true,
        Bson::Array(items) => items.iter().any(has_strings),
        Bson::Document(d) => d.values().any(has_strings),
        Bson::JavaScriptCodeWithScope(c) => c.scope.values().any(has_strings),
        _ => false,
    }
}

/// Orders two optional collations' strings: bytes without a collation.
pub fn compare_strings(a: &str, b: &str, collation: Option<&Collation>) -> Ordering {
    match collation {
        Some(c) => c.compare(a, b),
        None => a.as_bytes().cmp(b.as_bytes()),
    }
}

/// The normalized spec of an optional collation (`{locale: "simple"}` when none), for equality
/// of catalog entries.
pub fn spec_document(collation: Option<&Collation>) -> Document {
    collation.map_or_else(|| doc! {"locale": "simple"}, Collation::to_document)
}

fn compile(spec: &Document, locale: &str, tag: &str) -> Result<Collation> {
    let failed = |what: &str| {
        Error::new(
            ErrorCode::OperationFailed,
            format!(
                "Failed to create collator: {what}. Collation spec: {}",
                render_document(spec)
            ),
        )
    };
    let parsed: icu_locale_core::Locale = tag.parse().map_err(|_| failed("bad locale tag"))?;
    let mut prefs = CollatorPreferences::from(&parsed);
    let mut options = CollatorOptions::default();
    let mut known = 1;

    let case_level = optional_bool(spec, "caseLevel", &mut known)?;
    options.case_level = case_level.map(|on| if on { CaseLevel::On } else { CaseLevel::Off });
    if let Some(value) = optional_str(spec, "caseFirst", &mut known)? {
        prefs.case_first = Some(match value {
            "upper" => CollationCaseFirst::Upper,
            "lower" => CollationCaseFirst::Lower,
            "off" => CollationCaseFirst::False,
            other => {
                return Err(Error::failed_to_parse(format!(
                    "Field 'caseFirst' must be 'upper', 'lower', or 'off'. Got: {other}"
                )))
            }
        });
    }
    if let Some(value) = optional_integer(spec, "strength", &mut known)? {
        options.strength = Some(match value {
            1 => Strength::Primary,
            2 => Strength::Secondary,
            3 => Strength::Tertiary,
            4 => Strength::Quaternary,
            5 => Strength::Identical,
            other => {
                return Err(Error::failed_to_parse(format!(
                    "Field 'strength' must be an integer 1 through 5. Got: {other}"
                )))
            }
        });
    }
    if let Some(on) = optional_bool(spec, "numericOrdering", &mut known)? {
        prefs.numeric_ordering = Some(if on {
            CollationNumericOrdering::True
        } else {
            CollationNumericOrdering::False
        });
    }
    if let Some(value) = optional_str(spec, "alternate", &mut known)? {
        options.alternate_handling = Some(match value {
            "non-ignorable" => AlternateHandling::NonIgnorable,
            "shifted" => AlternateHandling::Shifted,
            other => {
                return Err(Error::failed_to_parse(format!(
                    "Field 'alternate' must be 'non-ignorable' or 'shifted'. Got: {other}"
                )))
            }
        });
    }
    if let Some(value) = optional_str(spec, "maxVariable", &mut known)? {
        options.max_variable = Some(match value {
            "punct" => MaxVariable::Punctuation,
            "space" => MaxVariable::Space,
            other => {
                return Err(Error::failed_to_parse(format!(
                    "Field 'maxVariable' must be 'punct' or 'space'. Got: {other}"
                )))
            }
        });
    }
    let normalization = optional_bool(spec, "normalization", &mut known)?.unwrap_or(false);
    // ICU takes backward secondary weighting from the locale (fr_CA) unless told otherwise;
    // ICU4X only from the locale.
    let locale_backwards = locale == "fr_CA";
    let backwards = optional_bool(spec, "backwards", &mut known)?.unwrap_or(locale_backwards);
    if let Some(version) = optional_str(spec, "version", &mut known)? {
        if version != VERSION {
            return Err(Error::new(
                ErrorCode::IncompatibleCollationVersion,
                format!(
                    "Requested collation version {version} but the only available collator \
                     version was {VERSION}. Requested collation spec: {}",
                    render_document(spec)
                ),
            ));
        }
    }
    if known < spec.len() {
        return Err(Error::failed_to_parse(format!(
            "Collation spec contains unknown field. Collation spec: {}",
            render_document(spec)
        )));
    }

    let collator = CollatorBorrowed::try_new(prefs, options)
        .map_err(|e| failed(&format!("no collation data ({e})")))?;
    let resolved = collator.resolved_options();
    let result = Spec {
        locale: locale.to_owned(),
        case_level: matches!(resolved.case_level, CaseLevel::On),
        case_first: match resolved.case_first {
            CollationCaseFirst::Upper => "upper",
            CollationCaseFirst::Lower => "lower",
            _ => "off",
        },
        strength: match resolved.strength {
            Strength::Primary => 1,
            Strength::Secondary => 2,
            Strength::Tertiary => 3,
            Strength::Quaternary => 4,
            _ => 5,
        },
        numeric_ordering: matches!(resolved.numeric, CollationNumericOrdering::True),
        alternate: match resolved.alternate_handling {
            AlternateHandling::Shifted => "shifted",
            _ => "non-ignorable",
        },
        max_variable: match resolved.max_variable {
            MaxVariable::Space => "space",
            _ => "punct",
        },
        normalization,
        backwards,
    };
    validate(&result)?;
    if backwards != locale_backwards {
        return Err(Error::new(
            ErrorCode::NotImplemented,
            format!(
                "'backwards: {backwards}' is not supported with locale '{locale}': this server \
                 takes backward secondary weighting from the locale only (on for fr_CA, off \
                 otherwise). Collation spec: {}",
                render_document(spec)
            ),
        ));
    }
    Ok(Collation {
        inner: Arc::new(Inner {
            spec: result,
            collator,
        }),
    })
}

/// mongod's `validateCollationSpec`: option combinations with no effect are refused.
fn validate(spec: &Spec) -> Result<()> {
    if spec.backwards && spec.strength == 1 {
        return Err(Error::bad_value(format!(
            "'backwards' is invalid with 'strength' of 1 in: {}",
            render_document(&spec.to_document())
        )));
    }
    if spec.case_first != "off" && !spec.case_level && spec.strength < 3 {
        return Err(Error::bad_value(format!(
            "'caseFirst' is invalid unless 'caseLevel' is on or 'strength' is greater than 2 \
             in: {}",
            render_document(&spec.to_document())
        )));
    }
    Ok(())
}

fn wrong_type(field: &str, expected: &str, found: &Bson) -> Error {
    Error::type_mismatch(format!(
        "\"{field}\" had the wrong type. Expected {expected}, found {}",
        type_name(found)
    ))
}

fn optional_bool(spec: &Document, field: &str, known: &mut usize) -> Result<Option<bool>> {
    match spec.get(field) {
        None => Ok(None),
        Some(Bson::Boolean(b)) => {
            *known += 1;
            Ok(Some(*b))
        }
        Some(other) => Err(wrong_type(field, "bool", other)),
    }
}

fn optional_str<'a>(spec: &'a Document, field: &str, known: &mut usize) -> Result<Option<&'a str>> {
    match spec.get(field) {
        None => Ok(None),
        Some(Bson::String(s)) => {
            *known += 1;
            Ok(Some(s.as_str()))
        }
        Some(other) => Err(wrong_type(field, "string", other)),
    }
}

/// mongod's `bsonExtractIntegerField`: any number exactly representable as a 64-bit integer.
fn optional_integer(spec: &Document, field: &str, known: &mut usize) -> Result<Option<i64>> {
    let Some(value) = spec.get(field) else {
        return Ok(None);
    };
    let n = match value {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(_) | Bson::Decimal128(_) => crate::query::decimal::integral(value),
        other => {
            return Err(Error::type_mismatch(format!(
                "Expected field \"{field}\" to have numeric type, but found {}",
                type_name(other)
            )))
        }
    };
    match n {
        Some(n) => {
            *known += 1;
            Ok(Some(n))
        }
        None => Err(Error::bad_value(format!(
            "Expected field \"{field}\" to have a value exactly representable as a 64-bit \
             integer, but found {field}: {}",
            crate::query::path::render(value)
        ))),
    }
}

#[cfg(test)]
#[path = "collation_tests.rs"]
mod tests;
