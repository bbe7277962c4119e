//! Reshaping one document: `$project`, `$unset`, `$addFields`/`$set` and `$replaceRoot`/
//! `$replaceWith`. One implementation, used by aggregation pipelines and by pipeline-style
//! updates alike.
//!
//! Owns: parsing these stages' specifications and applying them to a document. Does not own:
//! expressions (`query::expr`) or the find projection's inclusion rules (`query::projection`).

mod add_fields;
mod project;
mod replace_root;

pub use add_fields::{add_fields_tree, apply_tree, AddNode};
pub use project::Project;
pub use replace_root::ReplaceRoot;

use bson::Bson;

/// A value `$project` computes rather than includes or excludes.
pub fn is_expression(v: &Bson) -> bool {
    match v {
        Bson::String(s) => s.starts_with('$'),
        Bson::Document(d) => d
            .keys()
            .next()
            .is_some_and(|k| k.starts_with('$') && k != "$slice" && k != "$elemMatch"),
        _ => false,
    }
}

/// A projection value that includes (`1`, `true`, any non-zero number).
fn truthy(value: &Bson) -> bool {
    crate::query::expr::value::truthy(&Some(value.clone()))
}
