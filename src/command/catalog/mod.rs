//! The catalog commands: collections, databases, indexes, their statistics and validation.

pub(super) mod ddl;
mod images;
pub(super) mod index;
mod listing;
pub(super) mod stats;
pub(super) mod validate;
