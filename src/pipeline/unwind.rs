//! `$unwind`: one row per element of an array field, reading and writing paths through
//! documents only (no implicit array traversal), as mongod's stage does. Rows are made as they
//! are pulled, each counted as work for the operation's interrupt.

use super::Row;
use crate::error::{Error, ErrorCode, Result};
use crate::query::expr::{field_path, plain_field_path};
use crate::query::path::type_name;
use bson::{Bson, Document};

/// `$unwind`: one output row per element of the array at `path`.
pub struct Unwind {
    path: Vec<String>,
    index_field: Option<String>,
    preserve: bool,
}

impl Unwind {
    pub fn compile(arg: &Bson) -> Result<Unwind> {
        let (path, index_field, preserve) = match arg {
            Bson::String(p) => (p.clone(), None, false),
            Bson::Document(spec) => {
                let mut path = None;
                let mut index_field = None;
                let mut preserve = false;
                for (k, v) in spec {
                    match (k.as_str(), v) {
                        ("path", Bson::String(p)) => path = Some(p.clone()),
                        ("path", other) => {
                            return Err(Error::new(ErrorCode::Location28808, format!("expected a string as the path for $unwind stage, got {}", type_name(other))))
                        }
                        ("includeArrayIndex", Bson::String(f)) if !f.is_empty() => {
                            if f.starts_with('$') {
                                return Err(Error::new(ErrorCode::Location28822, format!("includeArrayIndex option to $unwind stage should not be prefixed with a '$': {f}")));
                            }
                            plain_field_path(f)?;
                            index_field = Some(f.clone());
                        }
                        ("includeArrayIndex", _) => {
                            return Err(Error::new(ErrorCode::Location28810, "expected a non-empty string for the includeArrayIndex option to $unwind stage"))
                        }
                        ("preserveNullAndEmptyArrays", Bson::Boolean(b)) => preserve = *b,
                        ("preserveNullAndEmptyArrays", _) => {
                            return Err(Error::new(ErrorCode::Location28809, "expected a boolean for the preserveNullAndEmptyArrays option to $unwind stage"))
                        }
                        (other, _) => {
                            return Err(Error::new(ErrorCode::Location28811, format!("unrecognized option to $unwind stage: {other}")))
                        }
                    }
                }
                let path = path.ok_or_else(|| Error::new(ErrorCode::Location28812, "no path specified to $unwind stage"))?;
                (path, index_field, preserve)
            }
            other => {
                return Err(Error::new(
                    ErrorCode::Location15981,
                    format!("expected either a string or an object as specification for $unwind stage, got {}", type_name(other)),
                ))
            }
        };
        if !path.starts_with('$') {
            return Err(Error::new(
                ErrorCode::Location28818,
                format!("path option to $unwind stage should be prefixed with a '$': {path}"),
            ));
        }
        Ok(Unwind {
            path: field_path(&path)?,
            index_field,
            preserve,
        })
    }

    /// The rows `row` unwinds to, made one at a time as they are pulled: each is a copy of
    /// the document without the array, with one element put back, so unwinding `n` elements
    /// copies the rest of the document `n` times and the array once, and never holds more
    /// than the row being made. Each row is a unit of work for the operation's interrupt.
    pub fn apply(&self, mut row: Row) -> Box<dyn Iterator<Item = Result<Row>> + Send> {
        let index_field = self.index_field.as_deref().map(path_parts);
        let with_index = move |doc: &mut Document, index: Bson| {
            if let Some(field) = &index_field {
                doc_path_set(doc, field, index);
            }
        };
        let value = doc_path_get_mut(&mut row.doc, &self.path).map(std::mem::take);
        match value {
            Some(Bson::Array(items)) if !items.is_empty() => {
                let path = self.path.clone();
                let rest = crate::query::size::document_size(&row.doc);
                let units = crate::query::guard::units_for_bytes(rest);
                Box::new(items.into_iter().enumerate().map(move |(i, item)| {
                    crate::query::guard::tick_n(units)?;
                    let mut doc = row.doc.clone();
                    doc_path_set(&mut doc, &path, item);
                    with_index(&mut doc, Bson::Int64(i as i64));
                    Ok(row.derived(doc))
                }))
            }
            Some(Bson::Array(_)) | Some(Bson::Null) | None => {
                if !self.preserve {
                    return Box::new(std::iter::empty());
                }
                let mut doc = row.doc;
                // A preserved empty array leaves the field out, as mongod does; a null taken
                // out left a null in its place.
                if matches!(value, Some(Bson::Array(_))) {
                    doc_path_remove(&mut doc, &self.path);
                }
                with_index(&mut doc, Bson::Null);
                let row = Row {
                    doc,
                    size: None,
                    expires_at: row.expires_at,
                };
                Box::new(std::iter::once(Ok(row)))
            }
            // A non-array value unwinds to itself.
            Some(other) => {
                let mut doc = row.doc;
                doc_path_set(&mut doc, &self.path, other);
                with_index(&mut doc, Bson::Null);
                let row = Row {
                    doc,
                    size: row.size.filter(|_| self.index_field.is_none()),
                    expires_at: row.expires_at,
                };
                Box::new(std::iter::once(Ok(row)))
            }
        }
    }
}

fn path_parts(field: &str) -> Vec<String> {
    field.split('.').map(str::to_owned).collect()
}

/// The value at a path through documents only (no array traversal, as `$unwind` reads it).
fn doc_path_get_mut<'a>(doc: &'a mut Document, path: &[String]) -> Option<&'a mut Bson> {
    let (first, rest) = path.split_first()?;
    let mut current = doc.get_mut(first)?;
    for part in rest {
        current = match current {
            Bson::Document(d) => d.get_mut(part)?,
            _ => return None,
        };
    }
    Some(current)
}

fn doc_path_remove(doc: &mut Document, path: &[String]) {
    match path.split_first() {
        Some((last, [])) => {
            doc.remove(last);
        }
        Some((first, rest)) => {
            if let Some(Bson::Document(sub)) = doc.get_mut(first) {
                doc_path_remove(sub, rest);
            }
        }
        None => {}
    }
}

/// Sets a value at a path, creating (or replacing non-document values with) documents on the way.
fn doc_path_set(doc: &mut Document, path: &[String], value: Bson) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    if rest.is_empty() {
        doc.insert(first.clone(), value);
        return;
    }
    if !matches!(doc.get(first), Some(Bson::Document(_))) {
        doc.insert(first.clone(), Document::new());
    }
    if let Some(Bson::Document(sub)) = doc.get_mut(first) {
        doc_path_set(sub, rest, value);
    }
}
