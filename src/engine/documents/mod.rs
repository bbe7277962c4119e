//! Documents as stored: a document's record (its body with `_ts` and own `ttl`), its key, its
//! index entries (`index_keys`; a hashed index's in `hashed`, which documents a partial index
//! holds in `partial`) and expiry entry, the writes that keep them together (`collection`),
//! the per-collection counters (`counts`) and the consistency check (`validate`).

pub mod collection;
pub mod counts;
pub mod date_expiry;
mod entries;
pub mod expired;
pub mod expiry;
pub mod hashed;
pub mod index_keys;
pub mod new_document;
pub mod partial;
pub mod record;
pub mod record_key;
pub mod validate;
