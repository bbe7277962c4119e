//! The value list of `$in`: kept as given (index bounds, plan shapes and explain read it in
//! order) and indexed in BSON order, so each value a path reaches is looked up by binary search,
//! O(log n), instead of being compared with every listed value.
//!
//! Owns: membership with `$in`'s equality (the BSON order's `Equal`: 1, 1.0, NumberLong(1) and
//! Decimal128("1") are one value; arrays and documents compare whole). Does not own: `null`'s
//! special meaning (it also matches a missing field, never `undefined`) or the regexes of `$in`;
//! the predicate handles both.

use crate::query::collation::Collation;
use crate::query::compare::compare_values_with;
use bson::Bson;
use std::ops::Deref;

/// The listed values, and their positions sorted in BSON order (`null` left out: the predicate
/// tests it on its own terms).
#[derive(Debug, Clone, Default)]
pub(crate) struct InSet {
    values: Vec<Bson>,
    order: Vec<usize>,
    has_null: bool,
    /// The collation `order` follows and lookups compare under (`None`: simple).
    collation: Option<Collation>,
}

impl InSet {
    pub(crate) fn new(values: Vec<Bson>) -> InSet {
        let order: Vec<usize> = (0..values.len())
            .filter(|&i| !matches!(values.get(i), Some(Bson::Null)))
            .collect();
        let has_null = values.iter().any(|v| matches!(v, Bson::Null));
        let mut set = InSet {
            values,
            order,
            has_null,
            collation: None,
        };
        set.sort();
        set
    }

    /// Makes membership compare strings under `collation`.
    pub(crate) fn collate(&mut self, collation: &Collation) {
        self.collation = Some(collation.clone());
        self.sort();
    }

    fn sort(&mut self) {
        let (values, collation) = (&self.values, self.collation.as_ref());
        self.order
            .sort_by(|&a, &b| match (values.get(a), values.get(b)) {
                (Some(x), Some(y)) => compare_values_with(x, y, collation),
                _ => std::cmp::Ordering::Equal,
            });
    }

    /// Whether a listed value other than `null` equals `value`.
    pub(crate) fn contains(&self, value: &Bson) -> bool {
        self.order
            .binary_search_by(|&i| {
                #[cfg(test)]
                tests::count_comparison();
                match self.values.get(i) {
                    Some(listed) => compare_values_with(listed, value, self.collation.as_ref()),
                    None => std::cmp::Ordering::Less,
                }
            })
            .is_ok()
    }

    /// Whether `null` is listed.
    pub(crate) fn has_null(&self) -> bool {
        self.has_null
    }
}

impl Deref for InSet {
    type Target = [Bson];

    fn deref(&self) -> &[Bson] {
        &self.values
    }
}

impl<'a> IntoIterator for &'a InSet {
    type Item = &'a Bson;
    type IntoIter = std::slice::Iter<'a, Bson>;

    fn into_iter(self) -> Self::IntoIter {
        self.values.iter()
    }
}

#[cfg(test)]
mod tests;
