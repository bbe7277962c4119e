//! The query engine: pure, synchronous MongoDB semantics over `bson` values.
//!
//! Owns: the BSON total order, dotted paths, filters, update operators, projections and sort
//! specifications. Does not own: storage, indexes, cursors, the clock (callers pass `now`), or
//! command argument parsing.
//!
//! Map:
//! - [`accumulator`]: `$group`'s accumulators as running states, shared by every stage that
//!   accumulates.
//! - [`collation`]: `Collation::parse` (mongod's validation, ICU4X collator), sort keys.
//! - [`compare`]: the BSON total order (`compare_values`, `values_equal`, type brackets).
//! - [`decimal`]: Decimal128 numbers: BID bits, conversions as mongod makes them, decimal128
//!   arithmetic (libdecNumber). Every reader of a decimal goes through it.
//! - [`depth`]: nesting and path-length limits; the iterative depth scan of raw BSON.
//! - [`path`]: dotted-path lookup with array traversal; exact get/set/unset for updates.
//! - [`expr`]: the expression language: `Expression::compile` once, `eval` per document.
//! - [`regex`]: PCRE2 with mongod's options, limits and errors, for `$regex` and the regex
//!   expressions.
//! - [`hash`]: mongod's hash of a BSON value (`hash64`), the key of hashed indexes.
//! - [`guard`]: the thread's current operation as pure code sees it: interrupt checks at
//!   bounded intervals, and the size limit of computed values.
//! - [`filter`]: `Filter::compile` once, then `matches` per document; upsert equality fields.
//! - [`update`]: `Update::parse`, `apply` with an `UpdateContext`; `upsert_seed`.
//! - [`projection`]: `Projection::find` / `aggregation` (one parser, two policies), `apply`.
//! - [`sort`]: `SortSpec::compile`, `compare`.

pub mod accumulator;
pub mod collation;
pub mod compare;
pub mod decimal;
pub mod depth;
pub mod diff;
pub mod expr;
pub mod filter;
pub mod guard;
pub mod hash;
pub mod path;
pub mod projection;
pub mod regex;
pub mod reshape;
pub mod size;
pub mod sort;
pub mod update;

#[cfg(test)]
mod tests {
    /// Compiled queries are shared across tasks and threads.
    #[test]
    fn compiled_forms_are_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<super::filter::Filter>();
        assert_send_sync::<super::update::Update>();
        assert_send_sync::<super::update::ArrayFilters>();
        assert_send_sync::<super::projection::Projection>();
        assert_send_sync::<super::sort::SortSpec>();
    }
}
