//! The catalog commands: collections, databases, indexes, their statistics and validation.

pub(super) mod ddl;
pub(super) mod index;
pub(super) mod stats;
pub(super) mod validate;
