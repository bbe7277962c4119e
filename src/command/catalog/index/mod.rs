//! The index commands: `createIndexes`, `listIndexes`, `dropIndexes`, and `collMod` (refused, as
//! Cosmos DB refuses it, TTL-7, but for turning change-stream images on or off and, in the
//! default profile, changing a date TTL index or hiding an index).
//!
//! Owns: parsing index specifications into `IndexMeta` (before any write), generated names,
//! and mongod's conflict rules against existing indexes. The TTL index on `_ts` is an index like
//! the others here: its rules (TTL-1…TTL-4) are `ttl::index_ttl`, and the collection TTL is
//! derived from the index list by the catalog, so creating or dropping the index turns TTL on or
//! off (TTL-1, TTL-9). Does not own: building entries or unique checks (`engine::ddl`).
//!
//! One file a command: `create` (`createIndexes`, and the index lists the Cosmos custom commands
//! set), `list` (`listIndexes`), `drop` (`dropIndexes`), `coll_mod` (`collMod`); `spec` parses
//! a specification and holds mongod's conflict rules, which `create` applies; `partial_filter`
//! validates a `partialFilterExpression`.

mod coll_mod;
mod create;
mod drop;
mod list;
mod partial_filter;
mod spec;

// `self::` paths, so that the import check (`tests/layers.rs`) sees what this module re-exports.
pub use self::coll_mod::coll_mod;
pub use self::create::create_indexes;
pub(in crate::command) use self::create::{add_to_new_collection, as_on, parse_requested};
pub use self::drop::drop_indexes;
pub use self::list::{id_index_entry, list_indexes};
