//! Time-to-live rules (`spec/ttl.md`). Pure: no clock, no storage; callers pass the current time.
//!
//! Two models decide when a document expires, and a collection may have both:
//! - [`cosmos`]: the Cosmos DB model (TTL-1…TTL-24), the collection TTL set by the `_ts` index
//!   and a document's own `ttl`, counted from the last write (`_ts`); every profile.
//! - [`date`]: MongoDB's model (TTL-25…TTL-29), date TTL indexes on ordinary fields; the
//!   default profile only (the Cosmos profile refuses them, TTL-4).
//! - [`custom`]: Cosmos's custom TTL path (TTL-30, the capability `EnableTtlOnCustomPath`): one
//!   field per collection instead of `_ts`, holding a date or Unix milliseconds; expiry by it is
//!   a [`DateTtl`] that also reads numbers.
//!
//! [`TtlModel`] joins a collection's models into the one expiry time a stored document has: the
//! earliest any model gives (TTL-26: expired as soon as any says so). Every read and write
//! judges liveness through it ([`is_expired_at`]).

pub mod cosmos;
pub mod custom;
pub mod date;

pub use cosmos::*;
pub use date::{DateTtl, Instants};

/// All the TTL rules that apply to one collection's documents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TtlModel {
    /// The Cosmos collection TTL (the `_ts` index's value), if any.
    pub collection_ttl: Option<i32>,
    /// The collection's date TTL indexes; empty for most collections, which then pay nothing
    /// beyond the Cosmos model (no body is read).
    pub dates: Vec<DateTtl>,
}

impl TtlModel {
    /// A model with the Cosmos collection TTL only.
    pub fn cosmos(collection_ttl: Option<i32>) -> TtlModel {
        TtlModel {
            collection_ttl,
            dates: Vec::new(),
        }
    }

    /// Whether no document of the collection can ever expire.
    pub fn never_expires(&self) -> bool {
        self.collection_ttl.is_none() && self.dates.is_empty()
    }

    /// The first second at which a document written at `ts`, with its own valid `ttl` and the
    /// BSON body `body`, is expired; `None` for never. The earliest of the Cosmos expiry
    /// (TTL-10…TTL-14) and each date TTL index's (TTL-26).
    pub fn expires_at(&self, ts: i64, own_ttl: Option<i32>, body: &[u8]) -> Option<i64> {
        let cosmos = expires_at(ts, effective_lifetime(own_ttl, self.collection_ttl));
        self.dates
            .iter()
            .filter_map(|index| index.expires_at(body))
            .chain(cosmos)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, Bson, DateTime, Document};

    fn body(doc: Document) -> Vec<u8> {
        let mut out = Vec::new();
        doc.to_writer(&mut out).unwrap();
        out
    }

    #[test]
    fn ttl_26_the_earliest_model_decides() {
        const T: i64 = 1_700_000_000;
        let date = |seconds: i64| DateTime::from_millis((T + seconds) * 1000);
        let model = TtlModel {
            collection_ttl: Some(100),
            dates: vec![
                DateTtl::new("a", 10).unwrap(),
                DateTtl::new("b", 0).unwrap(),
            ],
        };
        // (document, own ttl, expiry second) for a document written at T.
        let cases: Vec<(Document, Option<i32>, Option<i64>)> = vec![
            (doc! {}, None, Some(T + 100)),
            (doc! {"a": date(0)}, None, Some(T + 10)),
            (doc! {"a": date(0), "b": date(5)}, None, Some(T + 5)),
            (doc! {"a": date(500)}, None, Some(T + 100)),
            (doc! {"a": date(0)}, Some(3), Some(T + 3)),
            // `ttl: -1` turns the Cosmos model off for the document, not the date indexes.
            (doc! {"a": date(0)}, Some(-1), Some(T + 10)),
            (doc! {"a": "not a date"}, Some(-1), None),
        ];
        for (doc, own, expected) in cases {
            assert_eq!(
                model.expires_at(T, own, &body(doc.clone())),
                expected,
                "{doc:?}"
            );
        }
        // Without a `_ts` TTL the date indexes alone decide; TTL-10 still ignores `ttl`.
        let dates_only = TtlModel {
            collection_ttl: None,
            ..model.clone()
        };
        assert_eq!(dates_only.expires_at(T, Some(3), &body(doc! {})), None);
        assert_eq!(
            dates_only.expires_at(T, Some(3), &body(doc! {"b": date(2)})),
            Some(T + 2)
        );
        assert!(TtlModel::default().never_expires());
        assert!(!dates_only.never_expires());
        assert!(!TtlModel::cosmos(Some(-1)).never_expires());
    }

    #[test]
    fn ttl_30_a_custom_path_reads_dates_and_epoch_milliseconds() {
        const T: i64 = 1_700_000_000;
        let ms = |seconds: i64| T * 1000 + seconds * 1000;
        let date = |seconds: i64| DateTime::from_millis(ms(seconds));
        // A custom-path collection has no `_ts` TTL (the two exclude each other), so a
        // document's own `ttl` never counts (TTL-10): it is passed here to show that.
        let model = TtlModel {
            collection_ttl: None,
            dates: vec![DateTtl::custom("at", 10).unwrap()],
        };
        let cases: Vec<(Document, Option<i64>)> = vec![
            (doc! {"at": date(0)}, Some(T + 10)),
            (doc! {"at": ms(0)}, Some(T + 10)),
            (doc! {"at": i32::MAX}, Some(2_147_483 + 1 + 10)),
            (doc! {"at": ms(0) as f64}, Some(T + 10)),
            (doc! {"at": ms(0) as f64 + 0.5}, Some(T + 11)),
            (doc! {"at": ms(0) + 1}, Some(T + 11)),
            (doc! {"at": ms(0) - 1}, Some(T + 10)),
            (
                doc! {"at": ms(0).to_string().parse::<bson::Decimal128>().unwrap()},
                Some(T + 10),
            ),
            // An array: its smallest acceptable element, dates and numbers alike.
            (doc! {"at": [ms(9), date(3), "x", ms(5)]}, Some(T + 13)),
            (doc! {"at": [date(9), ms(2), Bson::Null]}, Some(T + 12)),
            (doc! {"at": ["x", Bson::Null, f64::NAN]}, None),
            (doc! {"at": []}, None),
            // Missing, or another type: never expires.
            (doc! {"other": ms(0)}, None),
            (doc! {"at": "1700000000000"}, None),
            (doc! {"at": Bson::Null}, None),
            (doc! {"at": true}, None),
            (doc! {"at": f64::NAN}, None),
            (doc! {"at": {"t": ms(0)}}, None),
        ];
        for (doc, expected) in cases {
            for own in [None, Some(1), Some(-1)] {
                assert_eq!(
                    model.expires_at(T, own, &body(doc.clone())),
                    expected,
                    "{doc:?} ttl {own:?}"
                );
            }
        }
        // The date model reads no numbers.
        let dates = TtlModel {
            collection_ttl: None,
            dates: vec![DateTtl::new("at", 10).unwrap()],
        };
        assert_eq!(dates.expires_at(T, None, &body(doc! {"at": ms(0)})), None);
        // `expireAfterSeconds: -1` on a custom path: nothing expires by it.
        assert_eq!(DateTtl::custom("at", -1), None);
    }
}
