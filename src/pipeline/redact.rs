//! `$redact`: an expression decides, level by level, whether a document (or sub-document) is
//! kept whole (`$$KEEP`), removed (`$$PRUNE`), or kept with its sub-documents judged in turn
//! (`$$DESCEND`). `$$CURRENT` is the level being judged; `$$ROOT` the whole document.
//!
//! The descent follows the document's own nesting, which storage bounds (100 levels) and
//! every reshaping stage checks, so its recursion is bounded.

use super::Rows;
use crate::error::{Error, ErrorCode, Result};
use crate::query::expr::{value, Expression, Variables};
use bson::{Bson, Document};

pub struct Redact {
    expr: Expression,
}

enum Verdict {
    Keep,
    Prune,
    Descend,
}

impl Redact {
    pub fn parse(arg: &Bson, vars: &Variables) -> Result<Redact> {
        Ok(Redact {
            expr: Expression::compile_with_current(arg, vars)?,
        })
    }

    pub fn apply(self, rows: Rows) -> Rows {
        Box::new(rows.filter_map(move |row| {
            let row = match row {
                Ok(row) => row,
                Err(e) => return Some(Err(e)),
            };
            match self.redact(&row.doc, &row.doc) {
                Ok(Some(doc)) => Some(Ok(row.derived(doc))),
                Ok(None) => None,
                Err(e) => Some(Err(e)),
            }
        }))
    }

    fn verdict(&self, root: &Document, current: &Document) -> Result<Verdict> {
        let result = self.expr.eval_at(root, current)?;
        match &result {
            Some(Bson::String(s)) if s == "keep" => Ok(Verdict::Keep),
            Some(Bson::String(s)) if s == "prune" => Ok(Verdict::Prune),
            Some(Bson::String(s)) if s == "descend" => Ok(Verdict::Descend),
            _ => Err(Error::new(
                ErrorCode::Location17053,
                format!(
                    "$redact's expression should not return anything aside from the variables \
                     $$KEEP, $$DESCEND, and $$PRUNE, but returned {}",
                    value::render(&result)
                ),
            )),
        }
    }

    /// `current` as redacted, or `None` when pruned.
    fn redact(&self, root: &Document, current: &Document) -> Result<Option<Document>> {
        match self.verdict(root, current)? {
            Verdict::Keep => Ok(Some(current.clone())),
            Verdict::Prune => Ok(None),
            Verdict::Descend => {
                let mut out = Document::new();
                for (k, v) in current {
                    if let Some(v) = self.redact_value(root, v)? {
                        out.insert(k.clone(), v);
                    }
                }
                Ok(Some(out))
            }
        }
    }

    fn redact_value(&self, root: &Document, value: &Bson) -> Result<Option<Bson>> {
        Ok(match value {
            Bson::Document(d) => self.redact(root, d)?.map(Bson::Document),
            Bson::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    // Inside arrays, only sub-documents are judged; pruned ones are dropped.
                    match item {
                        Bson::Document(_) | Bson::Array(_) => {
                            out.extend(self.redact_value(root, item)?);
                        }
                        other => out.push(other.clone()),
                    }
                }
                Some(Bson::Array(out))
            }
            other => Some(other.clone()),
        })
    }
}
