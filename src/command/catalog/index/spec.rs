//! Index specifications: parsing one into [`IndexMeta`] (refusing, never ignoring, what mayfly
//! does not implement), generated names, and mongod's rules for a requested index against the
//! existing ones.

use crate::command::args::{is_truthy, type_name, wrong_type};
use crate::engine::catalog::IndexMeta;
use crate::engine::documents::hashed;
use crate::error::{Error, ErrorCode, Result};
use crate::query::collation::Collation;
use crate::query::compare::{compare_documents, is_number, values_equal};
use crate::query::path::render_document;
use crate::ttl;
use bson::{doc, Bson, Document};
use std::cmp::Ordering;

/// The `_id` index's name: every collection has it, and it cannot be dropped.
pub(super) const ID_INDEX_NAME: &str = "_id_";

/// An index count as a reply field.
pub(super) fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// Index options mongod knows that mayfly does not implement: refused, never ignored.
const UNSUPPORTED_OPTIONS: &[&str] = &[
    "weights",
    "default_language",
    "language_override",
    "textIndexVersion",
    "2dsphereIndexVersion",
    "bits",
    "min",
    "max",
    "bucketSize",
    "wildcardProjection",
    "coarsestIndexedLevel",
    "finestIndexedLevel",
    "prepareUnique",
    "clustered",
];

/// Special index types mongod has and mayfly does not.
const UNSUPPORTED_TYPES: &[&str] = &["text", "2dsphere", "2d", "geoHaystack", "columnstore"];

/// What `expireAfterSeconds` on a key other than `{_ts: ±1}` makes, by profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FieldTtl {
    /// A date TTL index, with mongod's rules (the default profile, TTL-25).
    Date,
    /// Refused with Cosmos's message (the Cosmos profile, TTL-4).
    Refused,
    /// A custom TTL path, with the Cosmos value rules (the Cosmos profile with the capability
    /// `EnableTtlOnCustomPath`, TTL-30).
    CosmosCustom,
}

impl FieldTtl {
    pub(super) fn of(profile: &crate::profile::Profile) -> FieldTtl {
        if !profile.is_cosmos() {
            FieldTtl::Date
        } else if profile.ttl_on_custom_path() {
            FieldTtl::CosmosCustom
        } else {
            FieldTtl::Refused
        }
    }
}

/// One index specification, validated; `id` is assigned when the index is created.
/// The requested index, and whether it names no collation (it then takes the collection's).
pub(super) fn parse_spec(
    spec: &Document,
    ignore_unknown: bool,
    field_ttl: FieldTtl,
) -> Result<(IndexMeta, bool)> {
    let in_spec = |message: String| {
        Error::new(
            ErrorCode::CannotCreateIndex,
            format!(
                "Error in specification {} :: caused by :: {message}",
                render_document(spec)
            ),
        )
    };
    let mut key = None;
    let mut name = None;
    let (mut unique, mut sparse, mut hidden) = (false, false, false);
    let mut partial_filter = None;
    let mut collation: Option<Option<Document>> = None;
    for (field, value) in spec {
        match field.as_str() {
            "key" => match value {
                Bson::Document(k) => key = Some(k.clone()),
                other => return Err(wrong_type("createIndexes", "indexes.key", other, "object")),
            },
            "name" => match value {
                Bson::String(n) => name = Some(n.clone()),
                other => return Err(wrong_type("createIndexes", "indexes.name", other, "string")),
            },
            "unique" => unique = flag(field, value)?,
            "sparse" => sparse = flag(field, value)?,
            "background" | "dropDups" => {
                flag(field, value)?;
            }
            "expireAfterSeconds" | "ns" | "storageEngine" => {}
            "v" => {
                if !(values_equal(value, &Bson::Int32(1)) || values_equal(value, &Bson::Int32(2))) {
                    return Err(in_spec(format!(
                        "Invalid index specification {}; cannot create an index with v={}",
                        render_document(spec),
                        crate::query::path::render(value)
                    )));
                }
            }
            "hidden" => {
                let Bson::Boolean(h) = value else {
                    return Err(Error::new(
                        ErrorCode::TypeMismatch,
                        format!(
                            "The field 'hidden' must be a bool, but got {}",
                            type_name(value)
                        ),
                    ));
                };
                hidden = *h;
            }
            "partialFilterExpression" => {
                partial_filter =
                    Some(super::partial_filter::validate(value).map_err(|e| in_spec_v(spec, e))?);
            }
            "collation" => {
                let Bson::Document(c) = value else {
                    return Err(wrong_type(
                        "createIndexes",
                        "indexes.collation",
                        value,
                        "object",
                    ));
                };
                collation = Some(Collation::parse(c)?.map(|c| c.to_document()));
            }
            f if UNSUPPORTED_OPTIONS.contains(&f) => {
                return Err(unsupported(format!(
                    "the index option '{f}' is not supported by mayfly"
                )));
            }
            _ if ignore_unknown => {}
            f => {
                return Err(Error::new(
                    ErrorCode::InvalidIndexSpecificationOption,
                    format!(
                    "The field '{f}' is not valid for an index specification. Specification: {}",
                    render_document(spec)
                ),
                ))
            }
        }
    }
    let Some(key) = key else {
        return Err(Error::failed_to_parse(format!(
            "Error in specification {} :: caused by :: The 'key' field is a required property of an index specification",
            render_document(spec)
        )));
    };
    validate_key(&key).map_err(|e| match e.code {
        ErrorCode::CannotCreateIndex => in_spec(e.message),
        _ => e,
    })?;
    let on_field = !ttl::is_ts_key_pattern(&key);
    let expire_after_seconds = match (spec.get("expireAfterSeconds"), field_ttl) {
        // TTL-25: MongoDB's own model on any other key, with mongod's rules.
        (Some(value), FieldTtl::Date) if on_field => {
            Some(ttl::date::validate_date_ttl_index(spec, &key, value)?)
        }
        // TTL-30: Cosmos's custom path, the key pattern then the `_ts` index's value rules.
        (Some(value), FieldTtl::CosmosCustom) if on_field => {
            Some(ttl::custom::validate_custom_ttl_index(&key, value)?)
        }
        // TTL-4 before TTL-2/3: the key pattern is checked first, then the value.
        (value, _) => ttl::index_ttl(&key, value)?,
    };
    let custom_ttl =
        field_ttl == FieldTtl::CosmosCustom && on_field && expire_after_seconds.is_some();
    let name = match name {
        Some(n) if n.is_empty() => return Err(in_spec("index name cannot be empty".into())),
        Some(n) if n == "*" => return Err(in_spec("The index name '*' is not valid.".into())),
        Some(n) if n.contains('\0') => {
            return Err(in_spec("index name cannot contain NUL bytes".into()))
        }
        Some(n) => n,
        None => generated_name(&key),
    };
    let is_id = is_id_key(&key);
    if name == ID_INDEX_NAME && !is_id {
        return Err(Error::bad_value(format!(
            "The index name '_id_' is reserved for the _id index, which must have key pattern {{_id: 1}}, found key: {}",
            render_document(&key)
        )));
    }
    if is_id && spec.contains_key("hidden") {
        return Err(Error::bad_value("can't hide _id index"));
    }
    if is_id {
        let partial = partial_filter.is_some();
        for (option, set) in [
            ("unique", unique),
            ("sparse", sparse),
            ("partialFilterExpression", partial),
        ] {
            if set {
                return Err(Error::new(
                    ErrorCode::InvalidIndexSpecificationOption,
                    format!(
                        "The field '{option}' is not valid for an _id index specification. Specification: {}",
                        render_document(spec)
                    ),
                ));
            }
        }
    }
    if unique && ttl::is_ts_key_pattern(&key) {
        // `_ts` is the system last-modified time, not a field: a unique constraint on it would
        // silently never be enforced.
        return Err(in_spec(
            "an index on the system property '_ts' cannot be unique".into(),
        ));
    }
    if is_id && collation.as_ref().is_some_and(Option::is_some) {
        return Err(unsupported(
            "a collation on the _id index is not supported by this server: _id keys compare by their bytes",
        ));
    }
    if partial_filter.is_some() && sparse {
        return Err(in_spec_v(
            spec,
            Error::new(
                ErrorCode::CannotCreateIndex,
                "cannot mix \"partialFilterExpression\" and \"sparse\" options",
            ),
        ));
    }
    if partial_filter.is_some() && expire_after_seconds.is_some() {
        // A TTL index's expiry is judged from the document alone (`ttl::TtlModel`), which
        // knows no filter: a partial one would expire documents outside it.
        return Err(unsupported(
            "a partial TTL index (partialFilterExpression with expireAfterSeconds) is not supported by mayfly",
        ));
    }
    let inherits = collation.is_none();
    let index = IndexMeta {
        id: 0,
        name,
        key,
        unique,
        sparse,
        partial_filter,
        hidden,
        expire_after_seconds,
        multikey: false,
        building: false,
        collation: collation.flatten(),
        custom_ttl,
    };
    hashed::validate(&index)?;
    Ok((index, inherits))
}

/// `e` as mongod reports a specification it refuses: the specification (with the `v` mongod
/// adds before checking it) and the reason, with `e`'s code.
fn in_spec_v(spec: &Document, e: Error) -> Error {
    let mut shown = spec.clone();
    if !shown.contains_key("v") {
        shown.insert("v", 2);
    }
    Error::new(
        e.code,
        format!(
            "Error in specification {} :: caused by :: {}",
            render_document(&shown),
            e.message
        ),
    )
}

fn flag(field: &str, value: &Bson) -> Result<bool> {
    match value {
        Bson::Boolean(_) | Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) => {
            Ok(is_truthy(value))
        }
        other => Err(wrong_type(
            "createIndexes",
            &format!("indexes.{field}"),
            other,
            "bool",
        )),
    }
}

pub(super) fn unsupported(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::CommandNotSupported, message)
}

/// mongod's key pattern rules (67 CannotCreateIndex), with special index types refused (115).
fn validate_key(key: &Document) -> Result<()> {
    let invalid = |m: String| Error::new(ErrorCode::CannotCreateIndex, m);
    if key.is_empty() {
        return Err(invalid("Index keys cannot be empty.".into()));
    }
    for (field, value) in key {
        if field == "$**" || field.ends_with(".$**") {
            return Err(unsupported("wildcard indexes are not supported by mayfly"));
        }
        if field.is_empty() || field.split('.').any(str::is_empty) {
            return Err(invalid("Index keys cannot contain an empty field.".into()));
        }
        if field.split('.').any(|part| part.starts_with('$')) {
            return Err(invalid(
                "Index key contains an illegal field name: field name starts with '$'.".into(),
            ));
        }
        match value {
            Bson::String(kind) if kind == hashed::HASHED => {}
            Bson::String(kind) if UNSUPPORTED_TYPES.contains(&kind.as_str()) => {
                return Err(unsupported(format!("'{kind}' indexes are not supported by mayfly")));
            }
            Bson::String(kind) => return Err(invalid(format!("Unknown index plugin '{kind}'"))),
            Bson::Double(n) if n.is_nan() => {
                return Err(invalid("Values in the index key pattern can't be NaN.".into()))
            }
            v if is_number(v) => {
                if values_equal(v, &Bson::Int32(0)) {
                    return Err(invalid("Values in the index key pattern can't be 0.".into()));
                }
            }
            other => {
                return Err(invalid(format!(
                    "Values in v:2 index key pattern cannot be of type {}. Only numbers > 0, numbers < 0, and strings are allowed.",
                    type_name(other)
                )))
            }
        }
    }
    Ok(())
}

pub(super) fn is_id_key(key: &Document) -> bool {
    compare_documents(key, &doc! {"_id": 1}) == Ordering::Equal
}

/// `{a: 1, b: -1}` → `a_1_b_-1`, as drivers and mongod name indexes.
fn generated_name(key: &Document) -> String {
    let parts: Vec<String> = key
        .iter()
        .map(|(field, value)| {
            let v = match value {
                Bson::Int32(n) => n.to_string(),
                Bson::Int64(n) => n.to_string(),
                Bson::Double(n) if n.fract() == 0.0 && n.abs() < 1e15 => format!("{}", *n as i64),
                Bson::Double(n) => n.to_string(),
                Bson::String(s) => s.clone(),
                other => other.to_string(),
            };
            format!("{field}_{v}")
        })
        .collect();
    parts.join("_")
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    Create,
    AlreadyExists,
}

/// mongod's rules for a requested index against the existing ones (`_id_` implied).
pub(super) fn conflict(existing: &[IndexMeta], new: &IndexMeta) -> Result<Outcome> {
    if is_id_key(&new.key) {
        return if new.name == ID_INDEX_NAME {
            Ok(Outcome::AlreadyExists)
        } else {
            Err(different_name(ID_INDEX_NAME))
        };
    }
    for old in existing {
        let same_key = compare_documents(&old.key, &new.key) == Ordering::Equal;
        if old.name == new.name {
            let same_options = old.unique == new.unique
                && old.sparse == new.sparse
                && old.partial_filter == new.partial_filter
                && old.hidden == new.hidden
                && old.collation == new.collation
                && old.expire_after_seconds == new.expire_after_seconds;
            if same_key && same_options {
                // TTL-6: the same TTL index again changes nothing.
                return Ok(Outcome::AlreadyExists);
            }
            let code = if same_key {
                ErrorCode::IndexOptionsConflict
            } else {
                ErrorCode::IndexKeySpecsConflict
            };
            return Err(Error::new(
                code,
                format!(
                    "An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: {}, existing index: {}",
                    render_document(&new.to_list_entry()),
                    render_document(&old.to_list_entry())
                ),
            ));
        }
        if same_key {
            return Err(different_name(&old.name));
        }
    }
    custom_ttl_conflict(existing, new)?;
    if new.is_ttl() {
        if let Some(old) = existing.iter().find(|i| i.is_ttl()) {
            return Err(Error::new(
                ErrorCode::IndexOptionsConflict,
                format!(
                    "The collection already has a TTL index '{}' (expireAfterSeconds: {}); drop it before creating another",
                    old.name,
                    old.expire_after_seconds.unwrap_or_default()
                ),
            ));
        }
    }
    Ok(Outcome::Create)
}

/// TTL-30: a collection's TTL is on `_ts` or on one custom path, never both, and on one custom
/// path at most. Cosmos's text for these refusals is not known; the code is mongod's for an
/// index that cannot be created (67), the message ours.
fn custom_ttl_conflict(existing: &[IndexMeta], new: &IndexMeta) -> Result<()> {
    let refuse = |message: String| Err(Error::new(ErrorCode::CannotCreateIndex, message));
    let field = |index: &IndexMeta| index.key.keys().next().cloned().unwrap_or_default();
    if new.is_custom_ttl() {
        if let Some(old) = existing.iter().find(|i| i.is_ttl()) {
            return refuse(format!(
                "Cannot create a TTL index on the custom path '{}': the collection's TTL is on \
                 '_ts' (index '{}'); drop that index first",
                field(new),
                old.name
            ));
        }
        if let Some(old) = existing.iter().find(|i| i.is_field_ttl()) {
            return refuse(format!(
                "Cannot create a TTL index on the custom path '{}': the collection already has \
                 its custom TTL path '{}' (index '{}'); only one is allowed per collection",
                field(new),
                field(old),
                old.name
            ));
        }
    }
    if new.is_ttl() {
        if let Some(old) = existing.iter().find(|i| i.is_custom_ttl()) {
            return refuse(format!(
                "Cannot create a TTL index on '_ts': the collection's TTL is on the custom path \
                 '{}' (index '{}'); drop that index first",
                field(old),
                old.name
            ));
        }
    }
    Ok(())
}

fn different_name(existing: &str) -> Error {
    Error::new(
        ErrorCode::IndexOptionsConflict,
        format!("Index already exists with a different name: {existing}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_generated_as_drivers_do() {
        assert_eq!(generated_name(&doc! {"a": 1, "b": -1}), "a_1_b_-1");
        assert_eq!(generated_name(&doc! {"a.b": 1.0}), "a.b_1");
        assert_eq!(generated_name(&doc! {"_ts": -1_i64}), "_ts_-1");
    }

    #[test]
    fn key_patterns_follow_mongod() {
        assert!(validate_key(&doc! {"a": 1, "b": -1.5}).is_ok());
        for bad in [
            doc! {},
            doc! {"a": 0},
            doc! {"a": true},
            doc! {"a": "x"},
            doc! {"$a": 1},
            doc! {"a..b": 1},
        ] {
            assert_eq!(
                validate_key(&bad).unwrap_err().code,
                ErrorCode::CannotCreateIndex,
                "{bad}"
            );
        }
        assert!(validate_key(&doc! {"a": "hashed", "b": -1}).is_ok());
        for unsupported in [doc! {"a": "text"}, doc! {"$**": 1}] {
            assert_eq!(
                validate_key(&unsupported).unwrap_err().code,
                ErrorCode::CommandNotSupported
            );
        }
    }
}
