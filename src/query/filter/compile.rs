//! Filter document → [`Expr`] tree, with mongod's parse errors (codes and messages follow
//! `expression_parser.cpp`). Also the upsert equality extraction.

use super::bits::{BitOp, BitTest};
use super::{CmpOp, Expr, InSet, Pred, RegexPred, TypeSel};
use crate::error::{Error, ErrorCode, Result};
use crate::query::compare::is_number;
use crate::query::expr::{Expression, Variables};
use crate::query::path;
use crate::query::regex::Regex;
use bson::{Bson, Document};

/// Compiles a filter document below the top level (an `$elemMatch` object), where `$expr` is
/// not allowed.
pub(super) fn document(doc: &Document) -> Result<Expr> {
    document_with(doc, None)
}

/// Compiles a whole filter document (also used for `$and`/`$or`/`$nor` entries); `$expr` is
/// allowed where `vars` is given.
pub(super) fn document_with(doc: &Document, vars: Option<&Variables>) -> Result<Expr> {
    let mut children = Vec::new();
    for (key, value) in doc {
        if let Some(op) = key.strip_prefix('$') {
            if let Some(expr) = top_level(op, key, value, vars)? {
                children.push(expr);
            }
            continue;
        }
        crate::query::depth::check_path(key)?;
        children.push(Expr::Field {
            path: path::split(key),
            preds: field_predicates(key, value)?,
        });
    }
    Ok(Expr::And(children))
}

fn top_level(op: &str, key: &str, value: &Bson, vars: Option<&Variables>) -> Result<Option<Expr>> {
    let logical = |value: &Bson| -> Result<Vec<Expr>> {
        let Bson::Array(items) = value else {
            return Err(Error::bad_value(format!("{key} must be an array")));
        };
        if items.is_empty() {
            return Err(Error::bad_value("$and/$or/$nor must be a nonempty array"));
        }
        items
            .iter()
            .map(|item| match item {
                Bson::Document(d) => document_with(d, vars),
                _ => Err(Error::bad_value(
                    "$or/$and/$nor entries need to be full objects",
                )),
            })
            .collect()
    };
    match op {
        "and" => Ok(Some(Expr::And(logical(value)?))),
        "or" => Ok(Some(Expr::Or(logical(value)?))),
        "nor" => Ok(Some(Expr::Nor(logical(value)?))),
        "comment" => Ok(None),
        "expr" => match vars {
            Some(vars) => Ok(Some(Expr::Expression(std::sync::Arc::new(
                Expression::compile(value, vars)?,
            )))),
            None => Err(Error::bad_value(
                "$expr can only be applied to the top-level document",
            )),
        },
        "where" | "text" | "jsonSchema" | "sampleRate" => Err(Error::new(
            ErrorCode::NotImplemented,
            format!("{key} is not supported by this server"),
        )),
        _ => Err(Error::bad_value(format!(
            "unknown top level operator: {key}. If you have a field name that starts with a '$' \
             symbol, consider using $getField or $setField."
        ))),
    }
}

/// `{a: {$ref: .., $id: ..}}` is a DBRef equality, not an operator document.
fn is_dbref(doc: &Document) -> bool {
    doc.contains_key("$ref") && doc.contains_key("$id")
}

/// An operator document: non-empty, first key starts with `$`, not a DBRef.
fn is_operator_document(value: &Bson) -> bool {
    match value {
        Bson::Document(d) => d.keys().next().is_some_and(|k| k.starts_with('$')) && !is_dbref(d),
        _ => false,
    }
}

fn field_predicates(name: &str, value: &Bson) -> Result<Vec<Pred>> {
    match value {
        Bson::Document(ops) if is_operator_document(value) => operators(name, ops),
        Bson::RegularExpression(r) => Ok(vec![Pred::Regex(regex_pred(&r.pattern, &r.options)?)]),
        other => Ok(vec![Pred::Eq(other.clone())]),
    }
}

fn regex_pred(pattern: &str, options: &str) -> Result<RegexPred> {
    Ok(RegexPred {
        regex: Regex::new(pattern, options)?,
        pattern: pattern.to_owned(),
        options: options.to_owned(),
    })
}

fn operators(name: &str, ops: &Document) -> Result<Vec<Pred>> {
    let mut preds = Vec::new();
    for (op, arg) in ops {
        if let Some(pred) = operator(name, ops, op, arg)? {
            preds.push(pred);
        }
    }
    Ok(preds)
}

fn no_regex(name: &str, arg: &Bson) -> Result<()> {
    if matches!(arg, Bson::RegularExpression(_)) {
        return Err(Error::bad_value(format!(
            "Can't have RegEx as arg to predicate over field '{name}'."
        )));
    }
    Ok(())
}

fn operator(name: &str, context: &Document, op: &str, arg: &Bson) -> Result<Option<Pred>> {
    let cmp = |cmp_op| -> Result<Option<Pred>> {
        no_regex(name, arg)?;
        Ok(Some(Pred::Cmp(cmp_op, arg.clone())))
    };
    match op {
        "$eq" => Ok(Some(Pred::Eq(arg.clone()))),
        "$ne" => {
            if matches!(arg, Bson::RegularExpression(_)) {
                return Err(Error::bad_value("Can't have regex as arg to $ne."));
            }
            Ok(Some(Pred::Not(vec![Pred::Eq(arg.clone())])))
        }
        "$lt" => cmp(CmpOp::Lt),
        "$lte" => cmp(CmpOp::Lte),
        "$gt" => cmp(CmpOp::Gt),
        "$gte" => cmp(CmpOp::Gte),
        "$in" => in_list(arg, "$in").map(Some),
        "$nin" => in_list(arg, "$nin").map(|p| Some(Pred::Not(vec![p]))),
        "$exists" => Ok(Some(Pred::Exists(truthy(arg)))),
        "$type" => type_set(arg).map(|t| Some(Pred::Type(t))),
        "$size" => size(arg).map(|n| Some(Pred::Size(n))),
        "$all" => all(arg).map(Some),
        "$elemMatch" => elem_match(arg).map(Some),
        "$mod" => modulo(arg).map(Some),
        "$regex" => regex_document(context).map(|r| Some(Pred::Regex(r))),
        "$options" => {
            if context.contains_key("$regex") {
                Ok(None)
            } else {
                Err(Error::bad_value("$options needs a $regex"))
            }
        }
        "$not" => not(name, arg).map(Some),
        "$where" => Err(Error::bad_value("$where cannot be applied to a field")),
        "$comment" => Ok(None),
        "$near" | "$nearSphere" | "$geoWithin" | "$geoIntersects" | "$within" => Err(Error::new(
            ErrorCode::NotImplemented,
            format!("{op} is not supported by this server"),
        )),
        _ => match BitOp::from_name(op) {
            Some(bit_op) => BitTest::parse(bit_op, name, arg).map(|t| Some(Pred::Bits(t))),
            None => Err(Error::bad_value(format!("unknown operator: {op}"))),
        },
    }
}

/// mongod's `BSONElement::trueValue`.
fn truthy(value: &Bson) -> bool {
    match value {
        Bson::Boolean(b) => *b,
        Bson::Int32(i) => *i != 0,
        Bson::Int64(i) => *i != 0,
        Bson::Double(d) => *d != 0.0,
        Bson::Decimal128(_) => !crate::query::compare::values_equal(value, &Bson::Int32(0)),
        Bson::Null | Bson::Undefined => false,
        _ => true,
    }
}

fn in_list(arg: &Bson, op: &str) -> Result<Pred> {
    let Bson::Array(items) = arg else {
        return Err(Error::bad_value(format!("{op} needs an array")));
    };
    let mut values = Vec::new();
    let mut regexes = Vec::new();
    for item in items {
        if is_operator_document(item) {
            return Err(Error::bad_value("cannot nest $ under $in"));
        }
        match item {
            Bson::RegularExpression(r) => regexes.push(regex_pred(&r.pattern, &r.options)?),
            other => values.push(other.clone()),
        }
    }
    Ok(Pred::In {
        values: InSet::new(values),
        regexes,
    })
}

fn type_set(arg: &Bson) -> Result<Vec<TypeSel>> {
    let items: Vec<&Bson> = match arg {
        Bson::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    let selectors = items
        .into_iter()
        .map(type_selector)
        .collect::<Result<Vec<_>>>()?;
    if selectors.is_empty() {
        return Err(Error::failed_to_parse("$type must match at least one type"));
    }
    Ok(selectors)
}

fn type_selector(value: &Bson) -> Result<TypeSel> {
    match value {
        Bson::String(name) if name == "number" => Ok(TypeSel::Number),
        Bson::String(name) => path::TYPE_ALIASES
            .iter()
            .find(|(alias, _)| alias == name)
            .map(|(_, code)| TypeSel::Code(*code))
            .ok_or_else(|| Error::bad_value(format!("Unknown type name alias: {name}"))),
        v if is_number(v) => {
            let code = crate::query::decimal::integral(v).and_then(|n| i32::try_from(n).ok());
            match code {
                Some(c) if c == -1 || c == 127 || (1..=19).contains(&c) => Ok(TypeSel::Code(c)),
                _ => Err(Error::bad_value(format!(
                    "Invalid numerical type code: {}",
                    path::render(v)
                ))),
            }
        }
        _ => Err(Error::type_mismatch(
            "type must be represented as a number or a string",
        )),
    }
}

fn size(arg: &Bson) -> Result<usize> {
    let n = match arg {
        Bson::Int32(i) => i64::from(*i),
        Bson::Int64(i) => i32::try_from(*i)
            .map(i64::from)
            .map_err(|_| Error::bad_value("$size must be representable as a 32-bit integer"))?,
        Bson::Double(d) => {
            if d.fract() != 0.0 || !d.is_finite() {
                return Err(Error::bad_value("$size must be a whole number"));
            }
            *d as i64
        }
        Bson::Decimal128(_) => crate::query::decimal::integral(arg)
            .ok_or_else(|| Error::bad_value("$size must be a whole number"))?,
        _ => return Err(Error::bad_value("$size needs a number")),
    };
    usize::try_from(n).map_err(|_| Error::bad_value("$size may not be negative"))
}

fn all(arg: &Bson) -> Result<Pred> {
    let Bson::Array(items) = arg else {
        return Err(Error::bad_value("$all needs an array"));
    };
    let first_is_elem_match = |item: &Bson| match item {
        Bson::Document(d) => d.keys().next().is_some_and(|k| k == "$elemMatch"),
        _ => false,
    };
    let mut preds = Vec::new();
    if items.first().is_some_and(first_is_elem_match) {
        for item in items {
            match item {
                Bson::Document(d) if first_is_elem_match(item) => {
                    let inner = d.get("$elemMatch").unwrap_or(&Bson::Null);
                    preds.push(elem_match(inner)?);
                }
                _ => return Err(Error::bad_value("$all/$elemMatch has to be consistent")),
            }
        }
    } else {
        for item in items {
            match item {
                Bson::RegularExpression(r) => {
                    preds.push(Pred::Regex(regex_pred(&r.pattern, &r.options)?))
                }
                v if is_operator_document(v) => {
                    return Err(Error::bad_value("no $ expressions in $all"))
                }
                v => preds.push(Pred::Eq(v.clone())),
            }
        }
    }
    if preds.is_empty() {
        return Ok(Pred::AlwaysFalse);
    }
    Ok(Pred::All(preds))
}

fn elem_match(arg: &Bson) -> Result<Pred> {
    let Bson::Document(inner) = arg else {
        return Err(Error::bad_value("$elemMatch needs an Object"));
    };
    let value_case = inner.keys().next().is_some_and(|k| {
        k.starts_with('$')
            && !matches!(
                k.as_str(),
                "$and" | "$or" | "$nor" | "$where" | "$expr" | "$comment" | "$text" | "$jsonSchema"
            )
    });
    if value_case {
        // mongod parses the value case with an empty path (`parseSub("", ...)`), which its
        // errors name.
        return Ok(Pred::ElemMatchValue(operators("", inner)?));
    }
    Ok(Pred::ElemMatchObject(Box::new(document(inner)?)))
}

fn modulo(arg: &Bson) -> Result<Pred> {
    let Bson::Array(items) = arg else {
        return Err(Error::bad_value("malformed mod, needs to be an array"));
    };
    let (Some(d), Some(r)) = (items.first(), items.get(1)) else {
        return Err(Error::bad_value("malformed mod, not enough elements"));
    };
    if items.len() > 2 {
        return Err(Error::bad_value("malformed mod, too many elements"));
    }
    if !is_number(d) {
        return Err(Error::bad_value("malformed mod, divisor not a number"));
    }
    if !is_number(r) {
        return Err(Error::bad_value("malformed mod, remainder not a number"));
    }
    let truncate = |v: &Bson| -> Result<i64> {
        match crate::query::compare::Number::of(v) {
            Some(crate::query::compare::Number::Int(i)) => Ok(i),
            Some(crate::query::compare::Number::Double(f)) if f.is_finite() => Ok(f.trunc() as i64),
            Some(crate::query::compare::Number::Decimal(dec)) if dec.to_f64().is_finite() => {
                Ok(dec.to_f64().trunc() as i64)
            }
            _ => Err(Error::bad_value(
                "malformed mod, divisor value is invalid :: caused by :: NaN or infinity",
            )),
        }
    };
    let divisor = truncate(d)?;
    if divisor == 0 {
        return Err(Error::bad_value("divisor cannot be 0"));
    }
    Ok(Pred::Mod {
        divisor,
        remainder: truncate(r)?,
    })
}

/// `{$regex: ..., $options: ...}` in either order; `$regex` may be a string or a regex value.
fn regex_document(context: &Document) -> Result<RegexPred> {
    let mut pattern = String::new();
    let mut options = String::new();
    let mut options_from_regex = false;
    for (key, value) in context {
        match key.as_str() {
            "$regex" => match value {
                Bson::String(s) => pattern = s.clone(),
                Bson::RegularExpression(r) => {
                    pattern = r.pattern.clone();
                    if !r.options.is_empty() {
                        if !options.is_empty() {
                            return Err(Error::new(
                                ErrorCode::Location51074,
                                "options set in both $regex and $options",
                            ));
                        }
                        options = r.options.clone();
                        options_from_regex = true;
                    }
                }
                _ => return Err(Error::bad_value("$regex has to be a string")),
            },
            "$options" => {
                let Bson::String(s) = value else {
                    return Err(Error::bad_value("$options has to be a string"));
                };
                if options_from_regex {
                    return Err(Error::new(
                        ErrorCode::Location51075,
                        "options set in both $regex and $options",
                    ));
                }
                options = s.clone();
            }
            _ => {}
        }
    }
    regex_pred(&pattern, &options)
}

fn not(name: &str, arg: &Bson) -> Result<Pred> {
    match arg {
        Bson::RegularExpression(r) => Ok(Pred::Not(vec![Pred::Regex(regex_pred(
            &r.pattern, &r.options,
        )?)])),
        Bson::Document(inner) if inner.is_empty() => Err(Error::bad_value("$not cannot be empty")),
        Bson::Document(inner) => Ok(Pred::Not(operators(name, inner)?)),
        _ => Err(Error::bad_value("$not needs a regex or a document")),
    }
}

/// The fields an upsert's new document starts from: top-level equalities (`{a: 1}`,
/// `{a: {$eq: 1}}`, a one-element `$in`) and those inside `$and`, set at their (dotted) paths.
/// Fails with 54 NotSingleValueField when two equalities hit the same or overlapping paths.
pub fn equality_fields(filter: &Document) -> Result<Document> {
    let mut found: Vec<(String, Bson)> = Vec::new();
    collect_equalities(filter, &mut found);
    for (i, (a, _)) in found.iter().enumerate() {
        for (b, _) in found.iter().skip(i + 1) {
            if a == b {
                return Err(Error::new(
                    ErrorCode::NotSingleValueField,
                    format!("cannot infer query fields to set, path '{a}' is matched twice"),
                ));
            }
            let (short, long) = if a.len() < b.len() { (a, b) } else { (b, a) };
            if long.starts_with(short.as_str()) && long.as_bytes().get(short.len()) == Some(&b'.') {
                return Err(Error::new(
                    ErrorCode::NotSingleValueField,
                    format!(
                        "cannot infer query fields to set, both paths '{short}' and '{long}' are matched"
                    ),
                ));
            }
        }
    }
    let mut seed = Document::new();
    for (field, value) in found {
        path::set(&mut seed, &path::split(&field), value)?;
    }
    Ok(seed)
}

fn collect_equalities(filter: &Document, out: &mut Vec<(String, Bson)>) {
    for (key, value) in filter {
        if key == "$and" {
            if let Bson::Array(items) = value {
                for item in items {
                    if let Bson::Document(d) = item {
                        collect_equalities(d, out);
                    }
                }
            }
            continue;
        }
        if key.starts_with('$') {
            continue;
        }
        match value {
            Bson::Document(ops) if is_operator_document(value) => {
                if let Some(v) = ops.get("$eq") {
                    out.push((key.clone(), v.clone()));
                } else if let Some(Bson::Array(items)) = ops.get("$in") {
                    if let [only] = items.as_slice() {
                        if !matches!(only, Bson::RegularExpression(_)) {
                            out.push((key.clone(), only.clone()));
                        }
                    }
                }
            }
            Bson::RegularExpression(_) => {}
            other => out.push((key.clone(), other.clone())),
        }
    }
}
