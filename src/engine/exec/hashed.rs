//! The bounds a filter gives the hashed field of a hashed index: the hashes of the values an
//! equality or `$in` names, as points, as mongod's `IndexBoundsBuilder` translates them for a
//! hashed field (explain shows those hashes). Nothing else bounds a hashed field: ranges,
//! regexes, negations and the rest leave it unbounded, and a hashed field provides no order.
//!
//! The bounds are a superset of the matching documents' entries, never exact: values that hash
//! alike (`2` and `2.5`, or a collision) share a point, so the executor's filter on every fetched
//! document decides, and a hashed index never serves a covered count.

use super::bounds::{intersect, normalize, FieldBounds, Interval, KeyStrings};
use crate::query::filter::Pred;
use crate::query::hash::hash64;
use bson::Bson;

/// The bounds `preds` (all on the hashed field) give it; `None`: unbounded. The hashed field
/// never holds an array (its entries refuse them), so two predicates' bounds intersect.
pub(crate) fn field_bounds(preds: &[&Pred], ks: KeyStrings<'_>) -> Option<FieldBounds> {
    let mut result: Option<FieldBounds> = None;
    for pred in preds {
        let Some(bounds) = pred_bounds(pred, ks) else {
            continue;
        };
        result = Some(match result {
            None => bounds,
            Some(current) => intersect(&current, &bounds),
        });
    }
    result
}

/// The point of a missing (or `null`) hashed field's entries.
pub(crate) fn null_point() -> Interval {
    Interval::point(&Bson::Int64(hash64(&Bson::Null).unwrap_or_default()))
}

fn pred_bounds(pred: &Pred, ks: KeyStrings<'_>) -> Option<FieldBounds> {
    let values: Vec<&Bson> = match pred {
        Pred::Eq(v) => vec![v],
        Pred::In { values, regexes } if regexes.is_empty() => values.iter().collect(),
        Pred::AlwaysFalse => return Some(Vec::new()),
        _ => return None,
    };
    let mut points = Vec::with_capacity(values.len());
    for value in values {
        // An array is compared whole or by element; a hashed field holds neither.
        if matches!(value, Bson::Array(_)) {
            return None;
        }
        // Strings under another collation than the index's cannot be keyed.
        let keyed = ks.key(value)?;
        points.push(Interval::point(&Bson::Int64(hash64(&keyed).ok()?)));
    }
    Some(normalize(points))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::filter::Filter;
    use bson::doc;

    fn bounds_of(filter: bson::Document) -> Option<Vec<String>> {
        let f = Filter::compile(&filter).unwrap();
        let conjuncts = super::super::bounds::conjuncts(f.expr());
        let preds = conjuncts.get("a")?;
        field_bounds(preds, KeyStrings::default()).map(|b| b.iter().map(Interval::render).collect())
    }

    fn point(v: Bson) -> String {
        let h = hash64(&v).unwrap();
        format!("[{h}, {h}]")
    }

    #[test]
    fn equality_and_in_bound_by_hash_others_do_not() {
        assert_eq!(bounds_of(doc! {"a": 5}), Some(vec![point(Bson::Int32(5))]));
        // 5 and 5.0 hash alike: one point.
        assert_eq!(
            bounds_of(doc! {"a": {"$in": [5, 5.0]}}),
            Some(vec![point(Bson::Int32(5))])
        );
        assert_eq!(
            bounds_of(doc! {"a": {"$in": ["x", null]}}).map(|b| b.len()),
            Some(2)
        );
        assert_eq!(bounds_of(doc! {"a": null}), Some(vec![point(Bson::Null)]));
        assert_eq!(bounds_of(doc! {"a": 1, "$and": [{"a": 2}]}), Some(vec![]));
        for unbounded in [
            doc! {"a": {"$gt": 5}},
            doc! {"a": {"$regex": "^x"}},
            doc! {"a": {"$in": [1, Bson::RegularExpression(bson::Regex {
                pattern: "^x".into(),
                options: String::new(),
            })]}},
            doc! {"a": {"$ne": 5}},
            doc! {"a": [1, 2]},
            doc! {"a": {"$exists": true}},
        ] {
            assert_eq!(bounds_of(unbounded.clone()), None, "{unbounded}");
        }
        // A range beside an equality leaves the equality's point.
        assert_eq!(
            bounds_of(doc! {"a": {"$eq": 3, "$gt": 1}}),
            Some(vec![point(Bson::Int32(3))])
        );
    }
}
