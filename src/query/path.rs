//! Dotted field paths: lookup with MongoDB's implicit array traversal (for matching and sorting),
//! and the exact get/set/unset the update operators need, plus mongod's value rendering for
//! error messages.
//!
//! Owns: how `a.b` and `a.0` reach into documents and arrays. Does not own: what a matched value
//! means (filter, sort) or positional operators (`$`, `$[]`), which update expands into concrete
//! paths before calling in here.

use crate::error::{Error, ErrorCode, Result};
use bson::{Bson, Document};

/// Splits `a.b.c` into its components.
pub fn split(path: &str) -> Vec<String> {
    path.split('.').map(str::to_owned).collect()
}

/// An array index component: ASCII digits only (mongod rejects `+1`, `-1`, ` 1`).
pub fn array_index(component: &str) -> Option<usize> {
    if component.is_empty() || !component.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // A leading zero is not an index in mongod's field-ref parsing (`a.01` is a field name).
    if component.len() > 1 && component.starts_with('0') {
        return None;
    }
    component.parse().ok()
}

/// Every value a path reaches for matching.
#[derive(Debug, Default)]
pub struct PathValues<'a> {
    /// Reached values; the flag marks elements produced by expanding a leaf array (the array
    /// itself is also present, unflagged).
    pub values: Vec<(&'a Bson, bool)>,
    /// Some traversal ended at a missing field (so `null` equality matches).
    pub missing: bool,
}

impl<'a> PathValues<'a> {
    /// Values excluding leaf-array expansion (what `$size` and `$elemMatch` look at).
    pub fn whole(&self) -> impl Iterator<Item = &'a Bson> + '_ {
        self.values
            .iter()
            .filter(|(_, expanded)| !expanded)
            .map(|(v, _)| *v)
    }

    /// All values, including elements of leaf arrays.
    pub fn all(&self) -> impl Iterator<Item = &'a Bson> + '_ {
        self.values.iter().map(|(v, _)| *v)
    }
}

/// Looks `path` up in `doc` the way a query predicate sees it.
pub fn lookup<'a>(doc: &'a Document, path: &[String]) -> PathValues<'a> {
    let mut out = PathValues::default();
    collect_in_document(doc, path, &mut out);
    out
}

/// Looks `path` up below a value (an array element, for the positional `$` operator).
pub fn lookup_in_value<'a>(value: &'a Bson, path: &[String]) -> PathValues<'a> {
    let mut out = PathValues::default();
    collect_in_value(value, path, &mut out);
    out
}

fn collect_in_document<'a>(doc: &'a Document, path: &[String], out: &mut PathValues<'a>) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    match doc.get(first) {
        None => out.missing = true,
        Some(value) => collect_in_value(value, rest, out),
    }
}

fn collect_in_value<'a>(value: &'a Bson, rest: &[String], out: &mut PathValues<'a>) {
    let Some((first, tail)) = rest.split_first() else {
        out.values.push((value, false));
        if let Bson::Array(items) = value {
            out.values.extend(items.iter().map(|item| (item, true)));
        }
        return;
    };
    match value {
        Bson::Document(doc) => collect_in_document(doc, rest, out),
        Bson::Array(items) => {
            let mut saw_document = false;
            for item in items {
                if let Bson::Document(doc) = item {
                    saw_document = true;
                    collect_in_document(doc, rest, out);
                }
            }
            match array_index(first).and_then(|i| items.get(i)) {
                Some(item) => collect_in_value(item, tail, out),
                None if !saw_document => out.missing = true,
                None => {}
            }
        }
        _ => out.missing = true,
    }
}

/// The value at an exact path (numeric components index arrays; no implicit traversal).
pub fn get<'a>(doc: &'a Document, path: &[String]) -> Option<&'a Bson> {
    let (first, rest) = path.split_first()?;
    let mut current = doc.get(first)?;
    for component in rest {
        current = child(current, component)?;
    }
    Some(current)
}

/// [`get`] over a document's bytes, without decoding it: the value at an exact path. A value
/// that does not decode is not there.
pub fn get_raw<'a>(doc: &'a bson::RawDocument, path: &[String]) -> Option<bson::RawBsonRef<'a>> {
    let (first, rest) = path.split_first()?;
    let mut current = doc.get(first).ok()??;
    for component in rest {
        current = match current {
            bson::RawBsonRef::Document(doc) => doc.get(component).ok()??,
            bson::RawBsonRef::Array(items) => items.get(array_index(component)?).ok()??,
            _ => return None,
        };
    }
    Some(current)
}

fn child<'a>(value: &'a Bson, component: &str) -> Option<&'a Bson> {
    match value {
        Bson::Document(doc) => doc.get(component),
        Bson::Array(items) => items.get(array_index(component)?),
        _ => None,
    }
}

fn child_mut<'a>(value: &'a mut Bson, component: &str) -> Option<&'a mut Bson> {
    match value {
        Bson::Document(doc) => doc.get_mut(component),
        Bson::Array(items) => items.get_mut(array_index(component)?),
        _ => None,
    }
}

/// Mutable access to the value at an exact path.
pub fn get_mut<'a>(doc: &'a mut Document, path: &[String]) -> Option<&'a mut Bson> {
    let (first, rest) = path.split_first()?;
    let mut current = doc.get_mut(first)?;
    for component in rest {
        current = child_mut(current, component)?;
    }
    Some(current)
}

/// Sets the value at `path`, creating intermediate documents (and padding arrays with nulls when
/// an index is past the end), as `$set` does. Fails with 28 PathNotViable when a component
/// would have to be created inside a scalar or a non-numeric field inside an array.
pub fn set(doc: &mut Document, path: &[String], value: Bson) -> Result<()> {
    let Some((first, rest)) = path.split_first() else {
        return Err(Error::internal("empty update path"));
    };
    if rest.is_empty() {
        doc.insert(first.clone(), value);
        return Ok(());
    }
    if !doc.contains_key(first) {
        doc.insert(first.clone(), Bson::Document(build_nested(rest, value)?));
        return Ok(());
    }
    match doc.get_mut(first) {
        Some(existing) => set_in_value(existing, first, rest, value),
        None => Err(Error::internal("field vanished during set")),
    }
}

fn build_nested(path: &[String], value: Bson) -> Result<Document> {
    let mut nested = Document::new();
    set(&mut nested, path, value)?;
    Ok(nested)
}

fn set_in_value(target: &mut Bson, name: &str, path: &[String], value: Bson) -> Result<()> {
    let Some((first, rest)) = path.split_first() else {
        *target = value;
        return Ok(());
    };
    match target {
        Bson::Document(doc) => set(doc, path, value),
        Bson::Array(items) => {
            let Some(index) = array_index(first) else {
                return Err(cannot_create(first, name, target));
            };
            // Padding is bounded by mongod's own limit on positional padding.
            if index > items.len() && index - items.len() > 1_500_000 {
                return Err(Error::failed_to_parse(
                    "can't backfill array to larger than 1500000 elements",
                ));
            }
            if index >= items.len() {
                let created = if rest.is_empty() {
                    value
                } else {
                    Bson::Document(build_nested(rest, value)?)
                };
                items.resize(index, Bson::Null);
                items.push(created);
                return Ok(());
            }
            match items.get_mut(index) {
                Some(slot) if rest.is_empty() => {
                    *slot = value;
                    Ok(())
                }
                Some(slot) => set_in_value(slot, first, rest, value),
                None => Err(Error::internal("array padding failed")),
            }
        }
        _ => Err(cannot_create(first, name, target)),
    }
}

fn cannot_create(field: &str, parent_name: &str, parent: &Bson) -> Error {
    Error::new(
        ErrorCode::PathNotViable,
        format!(
            "Cannot create field '{field}' in element {{{parent_name}: {}}}",
            render(parent)
        ),
    )
}

/// Removes the value at `path`; an array element is set to null instead (as `$unset` does).
/// Returns whether anything changed.
pub fn unset(doc: &mut Document, path: &[String]) -> bool {
    let Some((last, parent_path)) = path.split_last() else {
        return false;
    };
    if parent_path.is_empty() {
        return doc.remove(last).is_some();
    }
    match get_mut(doc, parent_path) {
        Some(Bson::Document(parent)) => parent.remove(last).is_some(),
        Some(Bson::Array(items)) => match array_index(last).and_then(|i| items.get_mut(i)) {
            Some(slot) => {
                let changed = *slot != Bson::Null;
                *slot = Bson::Null;
                changed
            }
            None => false,
        },
        _ => false,
    }
}

/// mongod's `BSONElement::toString` rendering of a value, used in error messages.
pub fn render(value: &Bson) -> String {
    match value {
        Bson::Double(d) => render_double(*d),
        Bson::String(s) => format!("\"{s}\""),
        Bson::Document(d) => render_document(d),
        Bson::Array(items) => {
            if items.is_empty() {
                "[]".to_owned()
            } else {
                let inner: Vec<String> = items.iter().map(render).collect();
                format!("[ {} ]", inner.join(", "))
            }
        }
        Bson::Boolean(b) => b.to_string(),
        Bson::Null => "null".to_owned(),
        Bson::Undefined => "undefined".to_owned(),
        Bson::Int32(i) => i.to_string(),
        Bson::Int64(i) => i.to_string(),
        Bson::ObjectId(o) => format!("ObjectId('{o}')"),
        Bson::DateTime(d) => format!("new Date({})", d.timestamp_millis()),
        Bson::Decimal128(d) => format!("NumberDecimal(\"{d}\")"),
        Bson::RegularExpression(r) => format!("/{}/{}", r.pattern, r.options),
        Bson::Timestamp(t) => format!("Timestamp({}, {})", t.time, t.increment),
        Bson::MinKey => "MinKey".to_owned(),
        Bson::MaxKey => "MaxKey".to_owned(),
        other => format!("{other}"),
    }
}

fn render_double(d: f64) -> String {
    if d.is_finite() && d.fract() == 0.0 && d.abs() < 1e15 {
        format!("{d:.1}")
    } else {
        format!("{d}")
    }
}

/// `{ a: 1, b: "x" }`, or `{}` when empty.
pub fn render_document(doc: &Document) -> String {
    if doc.is_empty() {
        return "{}".to_owned();
    }
    let inner: Vec<String> = doc
        .iter()
        .map(|(k, v)| format!("{k}: {}", render(v)))
        .collect();
    format!("{{ {} }}", inner.join(", "))
}

/// `{_id: 1}` as mongod prints a document's id in update errors (`{_id: ...}` when absent).
pub fn render_id(doc: &Document) -> String {
    match doc.get("_id") {
        Some(id) => format!("{{_id: {}}}", render(id)),
        None => "{}".to_owned(),
    }
}

/// The type names `$type` and `$convert` accept, with their BSON type numbers.
pub const TYPE_ALIASES: &[(&str, i32)] = &[
    ("double", 1),
    ("string", 2),
    ("object", 3),
    ("array", 4),
    ("binData", 5),
    ("undefined", 6),
    ("objectId", 7),
    ("bool", 8),
    ("date", 9),
    ("null", 10),
    ("regex", 11),
    ("dbPointer", 12),
    ("javascript", 13),
    ("symbol", 14),
    ("javascriptWithScope", 15),
    ("int", 16),
    ("timestamp", 17),
    ("long", 18),
    ("decimal", 19),
    ("minKey", -1),
    ("maxKey", 127),
];

/// mongod's type name for error messages (`typeName`).
pub fn type_name(value: &Bson) -> &'static str {
    match value {
        Bson::Double(_) => "double",
        Bson::String(_) => "string",
        Bson::Document(_) => "object",
        Bson::Array(_) => "array",
        Bson::Binary(_) => "binData",
        Bson::Undefined => "undefined",
        Bson::ObjectId(_) => "objectId",
        Bson::Boolean(_) => "bool",
        Bson::DateTime(_) => "date",
        Bson::Null => "null",
        Bson::RegularExpression(_) => "regex",
        Bson::DbPointer(_) => "dbPointer",
        Bson::JavaScriptCode(_) => "javascript",
        Bson::Symbol(_) => "symbol",
        Bson::JavaScriptCodeWithScope(_) => "javascriptWithScope",
        Bson::Int32(_) => "int",
        Bson::Timestamp(_) => "timestamp",
        Bson::Int64(_) => "long",
        Bson::Decimal128(_) => "decimal",
        Bson::MinKey => "minKey",
        Bson::MaxKey => "maxKey",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{bson, doc};

    fn p(s: &str) -> Vec<String> {
        split(s)
    }

    #[test]
    fn lookup_traverses_arrays() {
        let d = doc! {"a": [{"b": 1}, {"b": [2, 3]}, {"c": 4}, 7], "x": {"y": null}};
        let found = lookup(&d, &p("a.b"));
        let all: Vec<Bson> = found.all().cloned().collect();
        assert_eq!(all, vec![bson!(1), bson!([2, 3]), bson!(2), bson!(3)]);
        assert!(found.missing);
        let whole: Vec<Bson> = found.whole().cloned().collect();
        assert_eq!(whole, vec![bson!(1), bson!([2, 3])]);

        let indexed = lookup(&d, &p("a.1.b.0"));
        assert_eq!(indexed.all().cloned().collect::<Vec<_>>(), vec![bson!(2)]);

        let nested_scalar = lookup(&d, &p("x.y.z"));
        assert!(nested_scalar.values.is_empty() && nested_scalar.missing);
    }

    #[test]
    fn lookup_does_not_descend_nested_arrays_implicitly() {
        let d = doc! {"a": [[{"b": 1}]]};
        assert!(lookup(&d, &p("a.b")).values.is_empty());
        assert_eq!(
            lookup(&d, &p("a.0.b")).all().cloned().collect::<Vec<_>>(),
            vec![bson!(1)]
        );
    }

    #[test]
    fn get_raw_finds_what_get_finds() {
        let doc = doc! {"a": {"b": [10, {"c": "x"}]}, "d": null, "e": 1.5};
        let raw = bson::RawDocumentBuf::from_document(&doc).unwrap();
        for path in [
            "a", "a.b", "a.b.0", "a.b.1.c", "a.b.2", "a.b.c", "a.x", "d", "e", "e.f", "z",
        ] {
            let components = split(path);
            let decoded =
                get_raw(&raw, &components).map(|v| Bson::try_from(v.to_raw_bson()).unwrap());
            assert_eq!(decoded.as_ref(), get(&doc, &components), "{path}");
        }
    }

    #[test]
    fn array_index_rules() {
        assert_eq!(array_index("0"), Some(0));
        assert_eq!(array_index("12"), Some(12));
        assert_eq!(array_index("01"), None);
        assert_eq!(array_index("-1"), None);
        assert_eq!(array_index("a"), None);
    }

    #[test]
    fn set_creates_and_pads() {
        let mut d = doc! {"a": {"b": 1}, "arr": [1]};
        set(&mut d, &p("a.c.d"), bson!(2)).unwrap();
        set(&mut d, &p("arr.3"), bson!(9)).unwrap();
        set(&mut d, &p("new.x"), bson!(true)).unwrap();
        assert_eq!(
            d,
            doc! {"a": {"b": 1, "c": {"d": 2}}, "arr": [1, null, null, 9], "new": {"x": true}}
        );
    }

    #[test]
    fn set_refuses_non_viable_paths() {
        let mut d = doc! {"a": 1, "arr": [1, 2]};
        let err = set(&mut d, &p("a.b"), bson!(1)).unwrap_err();
        assert_eq!(err.code, ErrorCode::PathNotViable);
        assert_eq!(err.message, "Cannot create field 'b' in element {a: 1}");
        let err = set(&mut d, &p("arr.x"), bson!(1)).unwrap_err();
        assert_eq!(
            err.message,
            "Cannot create field 'x' in element {arr: [ 1, 2 ]}"
        );
    }

    #[test]
    fn unset_removes_or_nulls() {
        let mut d = doc! {"a": {"b": 1, "c": 2}, "arr": [1, 2]};
        assert!(unset(&mut d, &p("a.b")));
        assert!(unset(&mut d, &p("arr.0")));
        assert!(!unset(&mut d, &p("zz.y")));
        assert_eq!(d, doc! {"a": {"c": 2}, "arr": [null, 2]});
    }

    #[test]
    fn render_matches_mongod() {
        assert_eq!(
            render(&bson!({"a": 1, "b": "x", "c": [1.0, 2.5]})),
            "{ a: 1, b: \"x\", c: [ 1.0, 2.5 ] }"
        );
        assert_eq!(render_id(&doc! {"_id": 1}), "{_id: 1}");
    }
}
