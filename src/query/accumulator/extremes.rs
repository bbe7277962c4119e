//! `$min` and `$max`: the smallest or largest value in BSON order (strings under the
//! operation's collation), ignoring `null`,
//! `undefined` and missing inputs (`null` when nothing else came).
//!
//! Owns: the extreme state. Does not own: `$minN`/`$maxN` (n.rs).

use crate::error::Result;
use crate::query::collation::Collation;
use crate::query::compare::compare_values_with;
use crate::query::expr::Value;
use bson::Bson;
use std::cmp::Ordering;

/// Keeps `value` in `best` when it orders `wanted` of it; returns the change in bytes held.
pub fn keep(
    best: &mut Option<Bson>,
    value: Value,
    wanted: Ordering,
    collation: Option<&Collation>,
) -> Result<isize> {
    let Some(v) = value.filter(|v| !matches!(v, Bson::Null | Bson::Undefined)) else {
        return Ok(0);
    };
    if best
        .as_ref()
        .is_none_or(|b| compare_values_with(&v, b, collation) == wanted)
    {
        let before = super::held(best.as_ref())?;
        let after = super::held(Some(&v))?;
        *best = Some(v);
        return Ok(after - before);
    }
    Ok(0)
}
