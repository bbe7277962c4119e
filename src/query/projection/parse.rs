//! Parsing a projection document into its tree, as mongod's `projection_ast::parse` does:
//! each element is an inclusion, an exclusion, a literal, a sub-projection or an expression;
//! the first inclusion or exclusion (other than top-level `_id`) fixes the projection's kind,
//! and an element of the other kind is refused where it comes (31253, 31254, 31252, 31310).
//! A projection with neither takes mongod's default for its find-only operators
//! (`computeProjectionType`).

use super::ast::{Node, Tree};
use super::{Policy, Post, Projection};
use crate::error::{Error, ErrorCode, Result};
use crate::query::compare::is_number;
use crate::query::depth::MAX_STORED_DEPTH;
use crate::query::expr::{plain_field_path, Expression, Variables};
use crate::query::filter::Filter;
use crate::query::path::type_name;
use bson::{doc, Bson, Document};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Inclusion,
    Exclusion,
}

struct Parser<'a> {
    policy: Policy,
    query: Option<&'a Filter>,
    vars: &'a Variables,
    kind: Option<Kind>,
    id_specified: bool,
    id_included: bool,
    id_excluded: bool,
    has_positional: bool,
    has_elem_match: bool,
    has_find_slice: bool,
    has_meta: bool,
    post: Vec<(Vec<String>, Post)>,
}

pub(super) fn parse(
    spec: &Document,
    policy: Policy,
    query: Option<&Filter>,
    vars: &Variables,
) -> Result<Projection> {
    let mut p = Parser {
        policy,
        query,
        vars,
        kind: None,
        id_specified: false,
        id_included: false,
        id_excluded: false,
        has_positional: false,
        has_elem_match: false,
        has_find_slice: false,
        has_meta: false,
        post: Vec::new(),
    };
    let mut tree = Tree::default();
    for (key, value) in spec {
        p.id_specified |= key == "_id" || key.starts_with("_id.");
        p.element(key, value, &[], &mut tree)?;
    }
    let kind = p.kind.unwrap_or_else(|| p.default_kind());
    if !p.id_specified && kind == Kind::Inclusion {
        tree.insert(&["_id".to_owned()], Node::Include)?;
    }
    if kind == Kind::Exclusion && p.id_included {
        // `{_id: 1}` in an exclusion projection is legal and changes nothing.
        tree.remove("_id");
    }
    tree.settle();
    Ok(Projection {
        tree,
        inclusion: kind == Kind::Inclusion,
        policy,
        post: p.post,
        elem_match: p.has_elem_match,
    })
}

/// Where the first positional `$` of a key is: `(start, end)` of `.$.`, of a final `.$`, or
/// the whole key `$`.
fn first_positional(key: &str) -> Option<(usize, usize)> {
    if let Some(at) = key.find(".$.") {
        return Some((at, at + 3));
    }
    if key.ends_with(".$") {
        return Some((key.len() - 2, key.len()));
    }
    (key == "$").then_some((0, key.len()))
}

/// A key's components, with mongod's FieldPath rules; `parent` is the path of the enclosing
/// sub-projection, and the whole path may not be deeper than a stored document.
fn key_path(key: &str, parent: &[String]) -> Result<Vec<String>> {
    // Counted before the components are checked, so a path too deep is mongod's 5729100 and
    // not the generic FieldPath limit.
    if parent.len().saturating_add(key.split('.').count()) > MAX_STORED_DEPTH {
        return Err(Error::new(
            ErrorCode::Location5729100,
            "FieldPath is too long",
        ));
    }
    plain_field_path(key)
}

/// mongod's `BSONElement::numberInt`: a long is cut to its low 32 bits, a double truncated
/// (saturating here, where C++ leaves it undefined).
fn number_int(value: &Bson) -> i32 {
    match value {
        Bson::Int32(i) => *i,
        Bson::Int64(i) => *i as i32,
        Bson::Double(d) => *d as i32,
        Bson::Decimal128(d) => crate::query::decimal::bson_to_f64(d) as i32,
        _ => 0,
    }
}

impl Parser<'_> {
    fn element(
        &mut self,
        key: &str,
        value: &Bson,
        parent: &[String],
        tree: &mut Tree,
    ) -> Result<()> {
        let positional = first_positional(key);
        if positional.is_some() && self.policy == Policy::Aggregation {
            return Err(Error::new(
                ErrorCode::Location31324,
                "Cannot use positional projection in aggregation projection",
            ));
        }
        match value {
            Bson::Document(sub) => {
                if positional.is_some() {
                    return Err(Error::new(
                        ErrorCode::Location31271,
                        "positional projection cannot be used with an expression or sub object",
                    ));
                }
                self.sub_object(key, sub, parent, tree)
            }
            Bson::Boolean(_)
            | Bson::Int32(_)
            | Bson::Int64(_)
            | Bson::Double(_)
            | Bson::Decimal128(_) => {
                if crate::query::expr::value::truthy(&Some(value.clone())) {
                    self.inclusion(key, parent, tree, positional)
                } else {
                    self.exclusion(key, parent, tree)
                }
            }
            _ => {
                if positional.is_some() {
                    return Err(Error::new(
                        ErrorCode::Location31308,
                        "positional projection cannot be used with a literal",
                    ));
                }
                let path = key_path(key, parent)?;
                let expr = Expression::compile(value, self.vars)?;
                tree.insert(&path, Node::Computed(expr))?;
                if self.kind == Some(Kind::Exclusion) {
                    return Err(Error::new(
                        ErrorCode::Location31310,
                        format!(
                            "Cannot use an expression {key}: {value} in an exclusion projection"
                        ),
                    ));
                }
                self.kind = Some(Kind::Inclusion);
                Ok(())
            }
        }
    }

    fn inclusion(
        &mut self,
        key: &str,
        parent: &[String],
        tree: &mut Tree,
        positional: Option<(usize, usize)>,
    ) -> Result<()> {
        let top_level_id = key == "_id" && parent.is_empty();
        match positional {
            None => {
                tree.insert(&key_path(key, parent)?, Node::Include)?;
                self.id_included |= top_level_id;
            }
            Some((start, end)) => self.positional(key, start, end, parent, tree)?,
        }
        if !top_level_id {
            if self.kind == Some(Kind::Exclusion) {
                return Err(Error::new(
                    ErrorCode::Location31253,
                    format!("Cannot do inclusion on field {key} in exclusion projection"),
                ));
            }
            self.kind = Some(Kind::Inclusion);
        }
        Ok(())
    }

    fn positional(
        &mut self,
        key: &str,
        start: usize,
        end: usize,
        parent: &[String],
        tree: &mut Tree,
    ) -> Result<()> {
        if self.has_positional {
            return Err(Error::new(
                ErrorCode::Location31276,
                "Cannot specify more than one positional projection per query.",
            ));
        }
        if self.has_elem_match {
            return Err(Error::new(
                ErrorCode::Location31256,
                "Cannot specify positional operator and $elemMatch.",
            ));
        }
        let match_field = match parent.first() {
            Some(first) => first.as_str(),
            None => key.split('.').next().unwrap_or(key),
        };
        let Some(query) = self.query else {
            return Err(Error::new(
                ErrorCode::Location51050,
                "Projections with a positional operator require a matcher",
            ));
        };
        if !query.tests_field(match_field) {
            return Err(Error::new(
                ErrorCode::Location31277,
                format!("Positional projection '{key}' does not match the query document."),
            ));
        }
        if key.ends_with(".$.") {
            return Err(Error::new(
                ErrorCode::Location31270,
                "Path cannot end with '.$.'",
            ));
        }
        let rest = key.get(end..).unwrap_or_default();
        if first_positional(rest).is_some() || rest == "$" {
            return Err(Error::new(
                ErrorCode::Location31287,
                format!("Cannot use positional operator twice: {key}"),
            ));
        }
        let path = key_path(key.get(..start).unwrap_or_default(), parent)?;
        tree.insert(&path, Node::KeepForPost)?;
        let full: Vec<String> = parent.iter().chain(&path).cloned().collect();
        self.post.push((full, Post::Positional));
        self.has_positional = true;
        Ok(())
    }

    fn exclusion(&mut self, key: &str, parent: &[String], tree: &mut Tree) -> Result<()> {
        tree.insert(&key_path(key, parent)?, Node::Exclude)?;
        if key == "_id" && parent.is_empty() {
            self.id_excluded = true;
            return Ok(());
        }
        if self.kind == Some(Kind::Inclusion) {
            return Err(Error::new(
                ErrorCode::Location31254,
                format!("Cannot do exclusion on field {key} in inclusion projection"),
            ));
        }
        self.kind = Some(Kind::Exclusion);
        Ok(())
    }

    fn sub_object(
        &mut self,
        key: &str,
        sub: &Document,
        parent: &[String],
        tree: &mut Tree,
    ) -> Result<()> {
        let path = key_path(key, parent)?;
        let mut entries = sub.iter();
        match (entries.next(), entries.next()) {
            (Some((op, arg)), None) if op.starts_with('$') => {
                return self.expression(op, arg, sub, &path, parent, tree);
            }
            (None, _) => {
                return Err(Error::new(
                    ErrorCode::Location51270,
                    "An empty sub-projection is not a valid value. Found empty object at path",
                ))
            }
            _ => {}
        }
        let full: Vec<String> = parent.iter().chain(&path).cloned().collect();
        let level = tree.level(&path)?;
        for (k, v) in sub {
            self.element(k, v, &full, level)?;
        }
        Ok(())
    }

    /// `{op: arg}` under `path`: find's `$slice`/`$elemMatch` where the policy allows them,
    /// else an expression.
    fn expression(
        &mut self,
        op: &str,
        arg: &Bson,
        spec: &Document,
        path: &[String],
        parent: &[String],
        tree: &mut Tree,
    ) -> Result<()> {
        match (op, self.policy) {
            ("$slice", Policy::Find) => {
                let find_error = match find_slice(arg) {
                    Ok(post) => {
                        tree.insert(path, Node::KeepForPost)?;
                        let full = parent.iter().chain(path).cloned().collect();
                        self.post.push((full, post));
                        self.has_find_slice = true;
                        return Ok(());
                    }
                    Err(e) => e,
                };
                // Not find's `$slice`: perhaps the expression (`{$slice: ["$a", 2]}`).
                self.generic(op, spec, path, tree).map_err(|e| {
                    Error::new(
                        e.code,
                        format!(
                            "Invalid $slice syntax. The given syntax {spec} did not match the \
                             find() syntax because :: {}: {} :: The given syntax did not match \
                             the expression $slice syntax. :: caused by :: {}",
                            find_error.code.name(),
                            find_error.message,
                            e.message
                        ),
                    )
                })
            }
            ("$elemMatch", Policy::Find) => {
                let Bson::Document(cond) = arg else {
                    return Err(Error::new(
                        ErrorCode::Location31274,
                        format!(
                            "elemMatch: Invalid argument, object required, but got {}",
                            type_name(arg)
                        ),
                    ));
                };
                if self.has_positional {
                    return Err(Error::new(
                        ErrorCode::Location31255,
                        "Cannot specify positional operator and $elemMatch.",
                    ));
                }
                let (true, Some(field)) = (parent.is_empty() && path.len() == 1, path.first())
                else {
                    return Err(Error::new(
                        ErrorCode::Location31275,
                        "Cannot use $elemMatch projection on a nested field.",
                    ));
                };
                let filter = Filter::compile(&doc! {field.clone(): {"$elemMatch": cond.clone()}})?;
                tree.insert(path, Node::ElemMatch(Box::new(filter)))?;
                self.has_elem_match = true;
                Ok(())
            }
            ("$elemMatch", Policy::Aggregation) => Err(Error::new(
                ErrorCode::InvalidPipelineOperator,
                "Cannot use $elemMatch in this context",
            )),
            _ => self.generic(op, spec, path, tree),
        }
    }

    /// An aggregation expression as a computed field (31252 in an exclusion projection, but
    /// for `$meta`).
    fn generic(
        &mut self,
        op: &str,
        spec: &Document,
        path: &[String],
        tree: &mut Tree,
    ) -> Result<()> {
        let is_meta = op == "$meta";
        if self.kind == Some(Kind::Exclusion) && !is_meta {
            return Err(Error::new(
                ErrorCode::Location31252,
                "Cannot use expression other than $meta in exclusion projection",
            ));
        }
        if !is_meta {
            self.kind = Some(Kind::Inclusion);
        }
        let record_id = self.policy == Policy::Find
            && is_meta
            && matches!(spec.get("$meta"), Some(Bson::String(s)) if s == "recordId");
        let node = if record_id {
            Node::RecordId
        } else {
            Node::Computed(Expression::compile(
                &Bson::Document(spec.clone()),
                self.vars,
            )?)
        };
        tree.insert(path, node)?;
        self.has_meta |= is_meta;
        Ok(())
    }

    /// mongod's `computeProjectionType`, for a projection with no inclusion or exclusion but
    /// top-level `_id`: a find `$slice` makes it an exclusion unless `{_id: 1}`; `$elemMatch`
    /// an inclusion; a `$meta` an exclusion in find (unless `{_id: 1}`) and an inclusion in
    /// aggregation; otherwise `{_id: 1}` includes and the rest excludes.
    fn default_kind(&self) -> Kind {
        if self.has_find_slice {
            if self.id_included {
                Kind::Inclusion
            } else {
                Kind::Exclusion
            }
        } else if self.has_elem_match {
            Kind::Inclusion
        } else if self.has_meta {
            match self.policy {
                Policy::Find if self.id_included && !self.id_excluded => Kind::Inclusion,
                Policy::Find => Kind::Exclusion,
                Policy::Aggregation => Kind::Inclusion,
            }
        } else if self.id_included {
            Kind::Inclusion
        } else {
            Kind::Exclusion
        }
    }
}

/// find's `$slice`: a number, or `[skip, limit]` with a positive limit.
fn find_slice(arg: &Bson) -> Result<Post> {
    if is_number(arg) {
        return Ok(Post::Slice {
            skip: None,
            limit: number_int(arg),
        });
    }
    let Bson::Array(items) = arg else {
        return Err(Error::new(
            ErrorCode::Location31273,
            "$slice only supports numbers and [skip, limit] arrays",
        ));
    };
    let (Some(skip), Some(limit), None) = (items.first(), items.get(1), items.get(2)) else {
        return Err(Error::new(
            ErrorCode::Location31272,
            "$slice array argument should be of form [skip, limit]",
        ));
    };
    if !is_number(skip) {
        return Err(Error::new(
            ErrorCode::Location31257,
            format!(
                "$slice expects the skip argument to be a number, got {}",
                type_name(skip)
            ),
        ));
    }
    if !is_number(limit) {
        return Err(Error::new(
            ErrorCode::Location31258,
            format!(
                "$slice expects the limit argument to be a number, got {}",
                type_name(limit)
            ),
        ));
    }
    let limit = number_int(limit);
    if limit <= 0 {
        return Err(Error::new(
            ErrorCode::Location31259,
            format!("$slice limit must be positive, got {limit}"),
        ));
    }
    Ok(Post::Slice {
        skip: Some(number_int(skip)),
        limit,
    })
}
