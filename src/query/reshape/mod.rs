//! Reshaping one document: `$project`, `$unset`, `$addFields`/`$set` and `$replaceRoot`/
//! `$replaceWith`. One implementation, used by aggregation pipelines and by pipeline-style
//! updates alike.
//!
//! Owns: parsing these stages' specifications and applying them to a document. Does not own:
//! expressions (`query::expr`) or projection rules (`query::projection`, which `$project` and
//! `$unset` compile through).

mod add_fields;
mod project;
mod replace_root;

pub use add_fields::{add_fields_tree, apply_tree, AddNode};
pub use project::Project;
pub use replace_root::ReplaceRoot;
