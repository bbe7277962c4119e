//! `partialFilterExpression`: mongod 7.0's rules for the filter of a partial index
//! (`IndexCatalogImpl::_checkValidFilterExpressions` with the time-series metric index feature,
//! on by default in 7.0): equality, `$exists: true`, `$gt`/`$gte`/`$lt`/`$lte`, `$type`, `$in`,
//! and `$and`/`$or` at any depth up to 4 levels; anything else is 67 CannotCreateIndex
//! `Expression not supported in partial index: <the refused node, as mongod prints it>`.
//!
//! Owns: the validation, done on the filter as given and then by compiling it as a query filter
//! (so a malformed operand gets the query's own error). Does not own: membership
//! (`engine::documents::partial`) nor the planner's use of the index (`engine::exec::partial`).

use crate::error::{Error, ErrorCode, Result};
use crate::query::filter::Filter;
use crate::query::path::render;
use bson::{Bson, Document};

/// mongod's `internalPartialFilterExpressionMaxDepth`.
const MAX_DEPTH: usize = 4;

/// Checks `filter` for an index; `Err` carries mongod's code and the reason (the caller adds
/// the specification it came in).
pub(super) fn validate(filter: &Bson) -> Result<Document> {
    let Bson::Document(filter) = filter else {
        return Err(Error::new(
            ErrorCode::CannotCreateIndex,
            "\"partialFilterExpression\" for an index must be a document",
        ));
    };
    banned_features(filter)?;
    // Malformed operands first, with the query's errors (mongod parses, then checks the tree).
    Filter::compile(filter)?;
    check_document(filter, 0)?;
    Ok(filter.clone())
}

/// `$expr`, `$where` and `$text` anywhere: mongod parses the filter with every special feature
/// banned.
fn banned_features(filter: &Document) -> Result<()> {
    let mut stack = vec![filter];
    while let Some(doc) = stack.pop() {
        for (key, value) in doc {
            let banned = match key.as_str() {
                "$expr" => Some(ErrorCode::QueryFeatureNotAllowed),
                "$where" | "$text" => Some(ErrorCode::BadValue),
                _ => None,
            };
            if let Some(code) = banned {
                return Err(Error::new(
                    code,
                    format!("{key} is not allowed in this context"),
                ));
            }
            if let ("$and" | "$or" | "$nor", Bson::Array(items)) = (key.as_str(), value) {
                stack.extend(items.iter().filter_map(Bson::as_document));
            }
        }
    }
    Ok(())
}

/// A filter document at `level`: one clause is that clause's node at this level (mongod drops
/// the implicit `$and` of a single clause); several are an `$and` here with them one deeper.
fn check_document(doc: &Document, level: usize) -> Result<()> {
    let clauses = clause_count(doc);
    let inner = if clauses > 1 {
        depth(level)?;
        level + 1
    } else {
        level
    };
    for (key, value) in doc {
        match (key.as_str(), value) {
            ("$comment", _) => {}
            ("$and" | "$or", Bson::Array(items)) => {
                depth(inner)?;
                for item in items.iter().filter_map(Bson::as_document) {
                    check_document(item, inner + 1)?;
                }
            }
            ("$nor", Bson::Array(items)) => {
                let children: Vec<String> = items
                    .iter()
                    .filter_map(Bson::as_document)
                    .map(|d| debug_document(d, 1))
                    .collect();
                return Err(refused(format!("$nor\n{}", children.concat())));
            }
            (op, _) if op.starts_with('$') => {
                return Err(refused(format!("{op}\n")));
            }
            (path, value) => check_field(path, value, inner)?,
        }
    }
    Ok(())
}

/// How many nodes `doc` yields at its level (`$comment` yields none; a field with several
/// operators yields one each).
fn clause_count(doc: &Document) -> usize {
    doc.iter()
        .map(|(key, value)| match (key.as_str(), value) {
            ("$comment", _) => 0,
            (k, Bson::Document(ops)) if !k.starts_with('$') && is_operator_document(ops) => {
                ops.keys().filter(|op| op.as_str() != "$options").count()
            }
            _ => 1,
        })
        .sum()
}

fn is_operator_document(doc: &Document) -> bool {
    doc.keys().next().is_some_and(|k| k.starts_with('$'))
}

fn check_field(path: &str, value: &Bson, level: usize) -> Result<()> {
    depth(level)?;
    let ops = match value {
        Bson::Document(ops) if is_operator_document(ops) => ops,
        Bson::RegularExpression(re) => {
            return Err(refused(format!(
                "{path} regex /{}/{}\n",
                re.pattern, re.options
            )))
        }
        _ => return Ok(()),
    };
    for (op, operand) in ops {
        match op.as_str() {
            "$eq" | "$gt" | "$gte" | "$lt" | "$lte" | "$type" | "$in" => {}
            "$exists" if crate::command::args::is_truthy(operand) => {}
            _ => return Err(refused(debug_operator(path, op, operand, ops, 0))),
        }
    }
    Ok(())
}

fn depth(level: usize) -> Result<()> {
    if level + 1 > MAX_DEPTH {
        return Err(Error::new(
            ErrorCode::CannotCreateIndex,
            format!("partialFilterExpression depth may not exceed {MAX_DEPTH}"),
        ));
    }
    Ok(())
}

fn refused(debug: String) -> Error {
    Error::new(
        ErrorCode::CannotCreateIndex,
        format!("Expression not supported in partial index: {debug}"),
    )
}

fn indent(level: usize) -> String {
    "    ".repeat(level)
}

/// A document's clauses as mongod prints its tree (the refusal's detail).
fn debug_document(doc: &Document, level: usize) -> String {
    let mut out = String::new();
    for (key, value) in doc {
        match value {
            Bson::Document(ops) if !key.starts_with('$') && is_operator_document(ops) => {
                for (op, operand) in ops {
                    out.push_str(&debug_operator(key, op, operand, ops, level));
                }
            }
            other => out.push_str(&format!("{}{key} $eq {}\n", indent(level), render(other))),
        }
    }
    out
}

/// One operator of a field as mongod prints it: `$ne` and `$nin` are the negation of `$eq` and
/// `$in`, `$exists: false` that of `exists`.
fn debug_operator(path: &str, op: &str, operand: &Bson, ops: &Document, level: usize) -> String {
    let pad = indent(level);
    let values = |v: &Bson| match v {
        Bson::Array(items) => items.iter().map(render).collect::<Vec<_>>().join(" "),
        other => render(other),
    };
    match op {
        "$ne" => format!("{pad}$not\n{}    {path} $eq {}\n", pad, render(operand)),
        "$nin" => format!("{pad}$not\n{}    {path} $in [ {} ]\n", pad, values(operand)),
        "$exists" => format!("{pad}$not\n{pad}    {path} exists\n"),
        "$in" => format!("{pad}{path} $in [ {} ]\n", values(operand)),
        "$regex" => {
            let options = ops.get_str("$options").unwrap_or_default();
            let pattern = match operand {
                Bson::RegularExpression(re) => re.pattern.clone(),
                other => other.as_str().unwrap_or_default().to_owned(),
            };
            format!("{pad}{path} regex /{pattern}/{options}\n")
        }
        "$size" => format!("{pad}{path} $size : {}\n", render(operand)),
        "$mod" => match operand {
            Bson::Array(items) => format!(
                "{pad}{path} mod {} % x == {}\n",
                items.first().map(render).unwrap_or_default(),
                items.get(1).map(render).unwrap_or_default()
            ),
            other => format!("{pad}{path} mod {}\n", render(other)),
        },
        "$not" => match operand {
            Bson::Document(inner) => {
                let mut out = format!("{pad}$not\n{pad}    $and\n");
                for (inner_op, inner_operand) in inner {
                    out.push_str(&debug_operator(
                        path,
                        inner_op,
                        inner_operand,
                        inner,
                        level + 2,
                    ));
                }
                out
            }
            other => format!("{pad}$not\n{pad}    {path} regex {}\n", render(other)),
        },
        "$gt" | "$gte" | "$lt" | "$lte" | "$eq" | "$type" => {
            format!("{pad}{path} {op} {}\n", render(operand))
        }
        other => format!("{pad}{path} {other} {}\n", render(operand)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn mongod_7_operators_are_allowed() {
        for filter in [
            doc! {"a": 1},
            doc! {"a": null},
            doc! {"a": {"$eq": 1}},
            doc! {"a": {"$exists": true}},
            doc! {"a": {"$gt": 1, "$lte": 9}},
            doc! {"a": {"$type": "string"}},
            doc! {"a": {"$in": [1, 2]}},
            doc! {"a": {"b": 1}},
            doc! {"$and": [{"a": 1}, {"b": {"$lt": 2}}]},
            doc! {"$or": [{"a": 1}, {"b": {"$gt": 2}}]},
            doc! {"$and": [{"$or": [{"a": 1}, {"b": 2}]}, {"c": 1}]},
            doc! {"a": 1, "$comment": "why"},
        ] {
            assert!(
                validate(&Bson::Document(filter.clone())).is_ok(),
                "{filter}"
            );
        }
    }

    #[test]
    fn other_operators_are_refused_as_mongod_prints_them() {
        for (filter, tree) in [
            (doc! {"a": {"$ne": 1}}, "$not\n    a $eq 1\n"),
            (doc! {"a": {"$exists": false}}, "$not\n    a exists\n"),
            (doc! {"a": {"$nin": [1, 2]}}, "$not\n    a $in [ 1 2 ]\n"),
            (doc! {"$nor": [{"a": 1}]}, "$nor\n    a $eq 1\n"),
            (doc! {"a": {"$regex": "x"}}, "a regex /x/\n"),
            (doc! {"a": {"$mod": [2, 0]}}, "a mod 2 % x == 0\n"),
            (doc! {"a": {"$size": 2}}, "a $size : 2\n"),
            (
                doc! {"a": {"$not": {"$gt": 1}}},
                "$not\n    $and\n        a $gt 1\n",
            ),
            (doc! {"$or": [{"a": {"$ne": 1}}]}, "$not\n    a $eq 1\n"),
        ] {
            let e = validate(&Bson::Document(filter.clone())).unwrap_err();
            assert_eq!(e.code, ErrorCode::CannotCreateIndex, "{filter}");
            assert_eq!(
                e.message,
                format!("Expression not supported in partial index: {tree}"),
                "{filter}"
            );
        }
    }

    #[test]
    fn special_features_depth_and_shape() {
        let cases = [
            (doc! {"$expr": {"$eq": ["$a", 1]}}, 224),
            (doc! {"$where": "1"}, 2),
            (doc! {"a": {"$bogus": 1}}, 2),
            (
                doc! {"$and": [{"$or": [{"$and": [{"$or": [{"a": 1}, {"b": 1}]}, {"c": 1}]}, {"d": 1}]}, {"e": 1}]},
                67,
            ),
        ];
        for (filter, code) in cases {
            let e = validate(&Bson::Document(filter.clone())).unwrap_err();
            assert_eq!(e.code.code(), code, "{filter}: {e:?}");
        }
        let e = validate(&Bson::Int32(1)).unwrap_err();
        assert_eq!(e.code, ErrorCode::CannotCreateIndex);
        // Three levels deep is within mongod's four.
        assert!(validate(&Bson::Document(
            doc! {"$and": [{"$or": [{"a": 1}, {"b": 1}]}, {"c": 1}]}
        ))
        .is_ok());
    }
}
