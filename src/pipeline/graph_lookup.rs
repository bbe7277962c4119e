//! `$graphLookup`: a breadth-first search over another collection of the same database. From
//! the values of `startWith`, each round reads the documents whose `connectToField` equals one
//! of the current values (through the executor, so an index on `connectToField` serves it,
//! and only documents visible now: TTL-18), keeps the ones not seen before (by `_id`), and
//! continues from their `connectFromField` values, until no new document is found or
//! `maxDepth` is reached. Every document found is held at once, within the stage's 100 MB
//! (counted decoded, as mongod counts the approximate size of what it holds).

use super::{Env, Rows};
use crate::engine::exec::ReadRequest;
use crate::error::{Error, ErrorCode, Result};
use crate::query::accumulator::OrdBson;
use crate::query::expr::{field_path, Expression, Variables};
use crate::query::filter::Filter;
use crate::query::path;
use crate::query::size::{held_document, held_value};
use bson::{doc, Bson, Document};
use std::collections::BTreeSet;

/// mongod's `internalDocumentSourceGraphLookupMaxMemoryBytes`.
const MAX_BYTES: usize = 100 * 1024 * 1024;

pub struct GraphLookup {
    from: String,
    as_path: Vec<String>,
    start_with: Expression,
    connect_from: Vec<String>,
    connect_to: String,
    depth_field: Option<Vec<String>>,
    max_depth: Option<i64>,
    restrict: Option<Document>,
}

impl GraphLookup {
    pub fn parse(arg: &Bson, vars: &Variables) -> Result<GraphLookup> {
        let Bson::Document(spec) = arg else {
            return Err(Error::failed_to_parse(format!(
                "the $graphLookup stage specification must be an object, but found {}",
                path::type_name(arg)
            )));
        };
        if !spec.contains_key("from") {
            return Err(Error::failed_to_parse(format!(
                "missing 'from' option to $graphLookup stage specification: {}",
                path::render_document(spec)
            )));
        }
        let mut strings: [Option<String>; 5] = Default::default();
        let mut start_with = None;
        let mut max_depth = None;
        let mut restrict = None;
        const STRINGS: [&str; 5] = [
            "from",
            "as",
            "connectFromField",
            "connectToField",
            "depthField",
        ];
        for (name, value) in spec {
            match name.as_str() {
                "startWith" => start_with = Some(Expression::compile(value, vars)?),
                "maxDepth" => {
                    if !crate::query::compare::is_number(value) {
                        return Err(Error::new(
                            ErrorCode::Location40100,
                            format!(
                                "maxDepth must be numeric, found type: {}",
                                path::type_name(value)
                            ),
                        ));
                    }
                    let n = crate::query::expr::value::integral_i64(value).ok_or_else(|| {
                        Error::new(
                            ErrorCode::Location40102,
                            format!(
                                "maxDepth could not be represented as a long long: {}",
                                path::render(value)
                            ),
                        )
                    })?;
                    if n < 0 {
                        return Err(Error::new(
                            ErrorCode::Location40101,
                            format!("maxDepth requires a nonnegative argument, found: {n}"),
                        ));
                    }
                    max_depth = Some(n);
                }
                "restrictSearchWithMatch" => {
                    let Bson::Document(d) = value else {
                        return Err(Error::new(
                            ErrorCode::Location40185,
                            format!(
                                "restrictSearchWithMatch must be an object, found {}",
                                path::type_name(value)
                            ),
                        ));
                    };
                    Filter::compile(d).map_err(|e| {
                        Error::new(
                            ErrorCode::Location40186,
                            format!(
                                "Failed to parse 'restrictSearchWithMatch' option to \
                                 $graphLookup: {}",
                                e.message
                            ),
                        )
                    })?;
                    restrict = Some(d.clone());
                }
                other => {
                    let Some(i) = STRINGS.iter().position(|s| *s == other) else {
                        return Err(Error::new(
                            ErrorCode::Location40104,
                            format!("Unknown argument to $graphLookup: {other}"),
                        ));
                    };
                    let Bson::String(s) = value else {
                        return Err(Error::new(
                            ErrorCode::Location40103,
                            format!(
                                "expected string as argument for {other}, found: {}",
                                path::render(value)
                            ),
                        ));
                    };
                    if let Some(slot) = strings.get_mut(i) {
                        *slot = Some(s.clone());
                    }
                }
            }
        }
        let [from, as_field, connect_from, connect_to, depth_field] = strings;
        let (Some(from), Some(as_field), Some(start_with), Some(connect_from), Some(connect_to)) =
            (from, as_field, start_with, connect_from, connect_to)
        else {
            return Err(Error::new(
                ErrorCode::Location40105,
                "$graphLookup requires 'from', 'as', 'startWith', 'connectFromField', and \
                 'connectToField' to be specified.",
            ));
        };
        field_path(&connect_to)?;
        Ok(GraphLookup {
            from,
            as_path: field_path(&as_field)?,
            start_with,
            connect_from: field_path(&connect_from)?,
            connect_to,
            depth_field: depth_field.as_deref().map(field_path).transpose()?,
            max_depth,
            restrict,
        })
    }

    pub fn apply(self, rows: Rows, env: &Env) -> Rows {
        let env = env.clone();
        Box::new(rows.map(move |row| {
            let row = row?;
            let found = self.search(&row.doc, &env)?;
            let mut doc = row.doc.clone();
            path::set(&mut doc, &self.as_path, Bson::Array(found))?;
            row.reshaped(doc)
        }))
    }

    fn search(&self, doc: &Document, env: &Env) -> Result<Vec<Bson>> {
        let mut frontier = Vec::new();
        match self.start_with.eval(doc)? {
            Some(Bson::Array(items)) => frontier.extend(items),
            Some(v) => frontier.push(v),
            None => {}
        }
        // Values and `_id`s are told apart under the operation's collation, as mongod's
        // visited set is.
        let collation = env.collation();
        let mut seen_ids: BTreeSet<OrdBson> = BTreeSet::new();
        let mut queried: BTreeSet<OrdBson> = BTreeSet::new();
        let mut found = Vec::new();
        let mut bytes = 0usize;
        let mut depth: i64 = 0;
        while !frontier.is_empty() && self.max_depth.is_none_or(|max| depth <= max) {
            env.interrupt.check()?;
            // Each value is looked up once per search.
            let values: Vec<Bson> = frontier
                .drain(..)
                .filter(|v| queried.insert(OrdBson::keyed(v, collation)))
                .collect();
            if values.is_empty() {
                break;
            }
            let mut filter = doc! {self.connect_to.as_str(): {"$in": values}};
            if let Some(restrict) = &self.restrict {
                filter = doc! {"$and": [filter, restrict.clone()]};
            }
            for row in env.read_collection(&self.from, ReadRequest::new(filter)?)? {
                let mut found_doc = row?.doc;
                let id = found_doc.get("_id").cloned().unwrap_or(Bson::Null);
                if !seen_ids.insert(OrdBson::keyed(&id, collation)) {
                    continue;
                }
                for v in path::lookup(&found_doc, &self.connect_from).all() {
                    match v {
                        Bson::Array(items) => frontier.extend(items.iter().cloned()),
                        other => frontier.push(other.clone()),
                    }
                }
                if let Some(field) = &self.depth_field {
                    path::set(&mut found_doc, field, Bson::Int64(depth))?;
                }
                // Held decoded: the document found and its `_id` in the set of those seen.
                bytes = bytes
                    .saturating_add(held_document(&found_doc)?)
                    .saturating_add(held_value(&id)?);
                if bytes > MAX_BYTES {
                    return Err(Error::new(
                        ErrorCode::ExceededMemoryLimit,
                        format!(
                            "$graphLookup reached maximum memory consumption of {MAX_BYTES} \
                             bytes"
                        ),
                    ));
                }
                found.push(Bson::Document(found_doc));
            }
            depth += 1;
        }
        Ok(found)
    }
}
