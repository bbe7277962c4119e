//! The aggregation expressions mayfly evaluates: literals, field paths (`"$a.b"`), `$$ROOT` /
//! `$$CURRENT`, `let` variables, `$$REMOVE`, `{$literal: v}`, and documents and arrays built from
//! these. Any other operator is refused with 238 NotImplemented, never evaluated wrongly.
//!
//! A field path walks documents; through an array it maps over the elements (recursing into
//! nested arrays) and yields the array of what it found, as mongod's `ExpressionFieldPath` does.

use crate::error::{Error, ErrorCode, Result};
use bson::{Bson, Document};

/// A compiled expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Literal(Bson),
    /// A path from the root document; empty means the root itself.
    Path(Vec<String>),
    /// `$$REMOVE`: evaluates to nothing.
    Missing,
    Doc(Vec<(String, Expr)>),
    Array(Vec<Expr>),
}

impl Expr {
    /// Compiles `value`; `vars` are the command's `let` variables (already values).
    pub fn compile(value: &Bson, vars: &Document) -> Result<Expr> {
        match value {
            Bson::String(s) if s.starts_with("$$") => variable(s, vars),
            Bson::String(s) if s.starts_with('$') => Ok(Expr::Path(field_path(s)?)),
            Bson::Array(items) => Ok(Expr::Array(
                items
                    .iter()
                    .map(|v| Expr::compile(v, vars))
                    .collect::<Result<_>>()?,
            )),
            Bson::Document(d) => Expr::compile_document(d, vars),
            other => Ok(Expr::Literal(other.clone())),
        }
    }

    fn compile_document(d: &Document, vars: &Document) -> Result<Expr> {
        if let Some(op) = d.keys().next().filter(|k| k.starts_with('$')) {
            if d.len() != 1 {
                return Err(Error::new(
                    ErrorCode::Location15983,
                    format!(
                        "an expression specification must contain exactly one field, the name of \
                         the expression. Found {} fields in {d}",
                        d.len()
                    ),
                ));
            }
            return match (op.as_str(), d.get(op)) {
                ("$literal", Some(v)) => Ok(Expr::Literal(v.clone())),
                _ => Err(Error::new(
                    ErrorCode::NotImplemented,
                    format!("the aggregation expression '{op}' is not supported by this server"),
                )),
            };
        }
        let mut fields = Vec::with_capacity(d.len());
        for (k, v) in d {
            if k.contains('.') {
                return Err(Error::new(
                    ErrorCode::Location16412,
                    format!("FieldPath field names may not contain '.'. Consider using $getField or $setField. (field: {k})"),
                ));
            }
            if k.starts_with('$') {
                return Err(Error::new(
                    ErrorCode::Location16410,
                    format!("FieldPath field names may not start with '$'. Consider using $getField or $setField. (field: {k})"),
                ));
            }
            fields.push((k.clone(), Expr::compile(v, vars)?));
        }
        Ok(Expr::Doc(fields))
    }

    /// Evaluates against `root`; `None` is a missing value.
    pub fn eval(&self, root: &Document) -> Option<Bson> {
        match self {
            Expr::Literal(v) => Some(v.clone()),
            Expr::Missing => None,
            Expr::Path(path) => match path.split_first() {
                None => Some(Bson::Document(root.clone())),
                Some((first, rest)) => root.get(first).and_then(|v| walk(v, rest)),
            },
            Expr::Doc(fields) => {
                let mut out = Document::new();
                for (k, e) in fields {
                    if let Some(v) = e.eval(root) {
                        out.insert(k.clone(), v);
                    }
                }
                Some(Bson::Document(out))
            }
            // A missing element of an array expression becomes null.
            Expr::Array(items) => Some(Bson::Array(
                items
                    .iter()
                    .map(|e| e.eval(root).unwrap_or(Bson::Null))
                    .collect(),
            )),
        }
    }
}

fn walk(value: &Bson, rest: &[String]) -> Option<Bson> {
    let Some((first, tail)) = rest.split_first() else {
        return Some(value.clone());
    };
    match value {
        Bson::Document(d) => d.get(first).and_then(|v| walk(v, tail)),
        Bson::Array(items) => Some(Bson::Array(
            items
                .iter()
                .filter(|v| matches!(v, Bson::Document(_) | Bson::Array(_)))
                .filter_map(|v| walk(v, rest))
                .collect(),
        )),
        _ => None,
    }
}

/// `"$a.b"` → `["a", "b"]`, with mongod's FieldPath rules.
pub fn field_path(s: &str) -> Result<Vec<String>> {
    let body = s.strip_prefix('$').unwrap_or(s);
    if body.is_empty() {
        return Err(Error::new(
            ErrorCode::Location16872,
            "'$' by itself is not a valid FieldPath",
        ));
    }
    crate::query::depth::check_path(body)?;
    let parts: Vec<String> = body.split('.').map(str::to_owned).collect();
    for part in &parts {
        if part.is_empty() {
            return Err(Error::new(
                ErrorCode::Location15998,
                "FieldPath field names may not be empty strings.",
            ));
        }
        if part.starts_with('$') {
            return Err(Error::new(
                ErrorCode::Location16410,
                format!("FieldPath field names may not start with '$'. Consider using $getField or $setField. (field: {part})"),
            ));
        }
    }
    Ok(parts)
}

fn variable(s: &str, vars: &Document) -> Result<Expr> {
    let body = s.trim_start_matches('$');
    let (name, rest) = match body.split_once('.') {
        Some((name, rest)) => (name, Some(rest)),
        None => (body, None),
    };
    let rest_path = match rest {
        Some(r) => field_path(r)?,
        None => Vec::new(),
    };
    match name {
        "ROOT" | "CURRENT" => Ok(Expr::Path(rest_path)),
        "REMOVE" => Ok(Expr::Missing),
        _ => match vars.get(name) {
            Some(v) if rest_path.is_empty() => Ok(Expr::Literal(v.clone())),
            Some(v) => Ok(walk(v, &rest_path).map_or(Expr::Missing, Expr::Literal)),
            None if matches!(name, "NOW" | "CLUSTER_TIME" | "SEARCH_META" | "USER_ROLES") => {
                Err(Error::new(
                    ErrorCode::NotImplemented,
                    format!("the variable '$${name}' is not supported by this server"),
                ))
            }
            None => Err(Error::new(
                ErrorCode::Location17276,
                format!("Use of undefined variable: {name}"),
            )),
        },
    }
}

/// The `let` option: each variable's expression evaluated once, against an empty document.
pub fn let_variables(spec: Option<&Document>) -> Result<Document> {
    let mut vars = Document::new();
    let empty = Document::new();
    for (name, value) in spec.into_iter().flatten() {
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || !c.is_ascii())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || !c.is_ascii());
        if !valid {
            return Err(Error::failed_to_parse(format!(
                "'{name}' starts with an invalid character for a user variable name"
            )));
        }
        let value = Expr::compile(value, &vars)?
            .eval(&empty)
            .unwrap_or(Bson::Null);
        vars.insert(name.clone(), value);
    }
    Ok(vars)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn eval(spec: Bson, d: &Document) -> Option<Bson> {
        Expr::compile(&spec, &Document::new()).unwrap().eval(d)
    }

    #[test]
    fn field_paths_map_over_arrays() {
        let d = doc! {"a": [{"b": 1}, {"c": 2}, {"b": [3, 4]}, 5, [{"b": 6}]], "x": {"y": 7}};
        assert_eq!(
            eval(Bson::from("$a.b"), &d),
            Some(Bson::from(vec![
                Bson::Int32(1),
                Bson::from(vec![3, 4]),
                Bson::from(vec![6])
            ]))
        );
        assert_eq!(eval(Bson::from("$x.y"), &d), Some(Bson::Int32(7)));
        assert_eq!(eval(Bson::from("$x.z"), &d), None);
        assert_eq!(
            eval(Bson::from("$$ROOT.x"), &d),
            Some(Bson::from(doc! {"y": 7}))
        );
    }

    #[test]
    fn documents_drop_missing_fields_and_arrays_fill_null() {
        let d = doc! {"a": 1};
        assert_eq!(
            eval(Bson::from(doc! {"k": "$a", "m": "$nope"}), &d),
            Some(Bson::from(doc! {"k": 1}))
        );
        assert_eq!(
            eval(Bson::from(vec![Bson::from("$nope")]), &d),
            Some(Bson::from(vec![Bson::Null]))
        );
        assert_eq!(
            eval(Bson::from(doc! {"$literal": "$a"}), &d),
            Some(Bson::from("$a"))
        );
    }

    #[test]
    fn unsupported_operators_and_bad_paths_are_errors() {
        let vars = Document::new();
        let err = Expr::compile(&Bson::from(doc! {"$add": [1, 2]}), &vars).unwrap_err();
        assert_eq!(err.code, ErrorCode::NotImplemented);
        assert_eq!(
            Expr::compile(&Bson::from("$"), &vars).unwrap_err().code,
            ErrorCode::Location16872
        );
        assert_eq!(
            Expr::compile(&Bson::from("$$x"), &vars).unwrap_err().code,
            ErrorCode::Location17276
        );
        let vars = doc! {"x": 5};
        assert_eq!(
            Expr::compile(&Bson::from("$$x"), &vars).unwrap(),
            Expr::Literal(Bson::Int32(5))
        );
    }
}
