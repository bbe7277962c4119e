//! `$addToSet`'s state: the distinct values seen, where two values are one when they compare
//! equal under the operation's collation (so under a case-insensitive collation `"a"` and `"A"`
//! are one element, the first seen kept, as mongod's collation-aware value set keeps it).
//!
//! Owns: the set and its keys. Values are keyed by their collation key
//! ([`OrdBson::keyed`]), so a lookup is a map lookup, never a scan comparing through the
//! collator. Does not own: the collation itself (`query::collation`).

use super::OrdBson;
use crate::error::Result;
use crate::query::collation::{has_strings, Collation};
use bson::Bson;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default)]
pub struct ValueSet {
    collation: Option<Collation>,
    /// Keyed by each value's collation key. The value is kept beside its key only when the key
    /// differs from it (a collation and strings); otherwise the key is the value.
    items: BTreeMap<OrdBson, Option<Bson>>,
}

impl ValueSet {
    pub fn new(collation: Option<Collation>) -> ValueSet {
        ValueSet {
            collation,
            items: BTreeMap::new(),
        }
    }

    /// Adds `v` unless an equal value is there; returns the bytes it now holds more.
    pub fn insert(&mut self, v: Bson) -> Result<isize> {
        match &self.collation {
            Some(c) if has_strings(&v) => {
                let key = OrdBson::keyed(&v, Some(c));
                if self.items.contains_key(&key) {
                    return Ok(0);
                }
                let added = super::held(Some(&v))? + super::held(Some(&key.0))?;
                self.items.insert(key, Some(v));
                Ok(added)
            }
            _ => {
                let added = super::held(Some(&v))?;
                Ok(match self.items.insert(OrdBson(v), None) {
                    None => added,
                    Some(_) => 0,
                })
            }
        }
    }

    /// The values, in the collation's order.
    pub fn values(&self) -> impl Iterator<Item = &Bson> {
        self.items.iter().map(|(k, v)| v.as_ref().unwrap_or(&k.0))
    }

    pub fn into_values(self) -> impl Iterator<Item = Bson> {
        self.items.into_iter().map(|(k, v)| v.unwrap_or(k.0))
    }
}
