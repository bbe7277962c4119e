//! The stored form of a document: its `_ts` and its own valid `ttl` beside the BSON body, so
//! visibility can be decided without parsing the body.
//!
//! Layout: `[version u8 = 1][_ts i64 BE][own ttl i32 BE, i32::MIN when absent][BSON body]`.
//! `_ts` lives only here, never inside the body a client sees (TTL-16).
//!
//! Also [`StoredDoc`]: a live document as reads hand it on, with its key and record.

use crate::error::{Error, Result};
use crate::ttl;
use bson::{Bson, Document, RawDocument};

const VERSION: u8 = 1;
/// Bytes before the BSON body.
pub(in crate::engine) const HEADER_LEN: usize = 13;
/// Never a valid `ttl` (valid ones are -1 or >= 1), so it can mean "none".
const NO_TTL: i32 = i32::MIN;

/// A stored document as read from the engine. The default is an empty record, which a count
/// from index entries stands in for the records it does not read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record {
    /// Last-modified time, epoch seconds (TTL-15).
    pub ts: i64,
    /// The document's own valid `ttl` (TTL-11), if any.
    pub own_ttl: Option<i32>,
    /// The raw BSON body.
    pub body: Vec<u8>,
}

impl Record {
    /// Builds the record for `doc` written at `ts`.
    pub fn new(ts: i64, doc: &Document) -> Result<Record> {
        let mut body = Vec::new();
        doc.to_writer(&mut body)
            .map_err(|e| Error::internal(format!("cannot encode document: {e}")))?;
        Ok(Record {
            ts,
            own_ttl: ttl::document_ttl(doc),
            body,
        })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = unstamped(self.body.len());
        out.extend_from_slice(&self.body);
        stamp(&mut out, self.ts, self.own_ttl);
        out
    }

    /// The body's length in the stored bytes of a record (what [`Record::encode`] made).
    pub fn body_len_of(stored: &[u8]) -> usize {
        stored.len().saturating_sub(HEADER_LEN)
    }

    pub fn decode(bytes: &[u8]) -> Result<Record> {
        let corrupt = || Error::internal("corrupt document record");
        let (header, body) = bytes.split_at_checked(HEADER_LEN).ok_or_else(corrupt)?;
        let (version, rest) = header.split_first().ok_or_else(corrupt)?;
        if *version != VERSION {
            return Err(Error::internal(format!(
                "unknown document record version {version}"
            )));
        }
        let (ts, ttl) = rest.split_at_checked(8).ok_or_else(corrupt)?;
        let ts = i64::from_be_bytes(ts.try_into().map_err(|_| corrupt())?);
        let own = i32::from_be_bytes(ttl.try_into().map_err(|_| corrupt())?);
        Ok(Record {
            ts,
            own_ttl: (own != NO_TTL).then_some(own),
            body: body.to_vec(),
        })
    }

    /// Like [`Record::decode`], taking the stored bytes instead of copying the body out of them.
    pub fn decode_owned(mut bytes: Vec<u8>) -> Result<Record> {
        let header = Record::decode(bytes.get(..HEADER_LEN).unwrap_or_default())?;
        bytes.drain(..HEADER_LEN);
        Ok(Record {
            body: bytes,
            ..header
        })
    }

    /// The decoded body. A body nested deeper than any request may be is refused before the
    /// recursive decoder sees it (`query::depth`).
    pub fn document(&self) -> Result<Document> {
        crate::query::depth::check_stored_for_read(&self.body)?;
        // The raw conversion, not serde's decoder: it takes a small frame per level, where
        // serde's takes kilobytes (a 150-level document overflowed a 2 MiB debug-build stack).
        let corrupt =
            |e: bson::raw::Error| Error::internal(format!("corrupt stored document: {e}"));
        RawDocument::from_bytes(&self.body)
            .map_err(corrupt)?
            .try_into()
            .map_err(corrupt)
    }

    /// The body's root fields named in `roots` alone, decoded as [`Record::document`] decodes
    /// them (a repeated name keeps its last value, as there): enough to compute the document's
    /// index entries (`index_keys::root_fields`) without decoding the rest of the body.
    pub fn fields(&self, roots: &[String]) -> Result<Document> {
        crate::query::depth::check_stored_for_read(&self.body)?;
        let corrupt =
            |e: bson::raw::Error| Error::internal(format!("corrupt stored document: {e}"));
        let mut out = Document::new();
        for element in RawDocument::from_bytes(&self.body).map_err(corrupt)? {
            let (name, value) = element.map_err(corrupt)?;
            if roots.iter().any(|root| root == name) {
                out.insert(name, Bson::try_from(value).map_err(corrupt)?);
            }
        }
        Ok(out)
    }

    /// When this document expires under its collection's TTL `model`, if ever (TTL-10,
    /// TTL-13, TTL-14, TTL-26). The body is read only when the collection has date TTL indexes.
    pub fn expires_at(&self, model: &ttl::TtlModel) -> Option<i64> {
        model.expires_at(self.ts, self.own_ttl, &self.body)
    }
}

/// A live document as a read found it: its storage key, its record and the document decoded.
#[derive(Debug, Clone)]
pub struct StoredDoc {
    pub key: Vec<u8>,
    pub record: Record,
    pub doc: Document,
}

/// The start of a record's stored bytes whose header is written later ([`stamp`]): room for
/// the header, with capacity for a body of `body_len` bytes to be appended. A document can so
/// be encoded before the moment of its write is known, and stamped without being copied.
pub fn unstamped(body_len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + body_len);
    out.resize(HEADER_LEN, 0);
    out
}

/// Writes the header of a record written at `ts` with the document's own `ttl` into `stored`
/// (made by [`unstamped`], then the body appended).
pub fn stamp(stored: &mut [u8], ts: i64, own_ttl: Option<i32>) {
    if let Some(header) = stored.get_mut(..HEADER_LEN) {
        let (version, rest) = header.split_at_mut(1);
        version.fill(VERSION);
        let (time, ttl) = rest.split_at_mut(8);
        time.copy_from_slice(&ts.to_be_bytes());
        ttl.copy_from_slice(&own_ttl.unwrap_or(NO_TTL).to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn round_trips_with_and_without_own_ttl() {
        for d in [
            doc! {"_id": 1},
            doc! {"_id": 2, "ttl": 20},
            doc! {"_id": 3, "ttl": 20.5},
        ] {
            let r = Record::new(1_000, &d).unwrap();
            let back = Record::decode(&r.encode()).unwrap();
            assert_eq!(back, r);
            assert_eq!(back.document().unwrap(), d);
        }
        assert_eq!(Record::new(0, &doc! {"ttl": 20}).unwrap().own_ttl, Some(20));
        assert_eq!(
            Record::new(0, &doc! {"ttl": 20.5}).unwrap().own_ttl,
            None,
            "TTL-12"
        );
    }

    #[test]
    fn decoding_the_stored_bytes_in_place_gives_the_same_record() {
        let r = Record::new(7, &doc! {"_id": 1, "ttl": 5, "x": "y"}).unwrap();
        assert_eq!(Record::decode_owned(r.encode()).unwrap(), r);
        assert!(Record::decode_owned(vec![1, 2]).is_err());
    }

    /// The named root fields decode exactly as the whole document's do; the others are left
    /// out, nested values come whole.
    #[test]
    fn fields_decode_only_the_named_roots() {
        let at = bson::DateTime::from_millis(1_000);
        let d = doc! {"_id": 1, "at": at, "a": {"b": [1, {"c": 2}]}, "x": "big", "n": null};
        let r = Record::new(7, &d).unwrap();
        let roots = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        for (names, expected) in [
            (roots(&[]), doc! {}),
            (roots(&["at"]), doc! {"at": at}),
            (
                roots(&["a", "n"]),
                doc! {"a": {"b": [1, {"c": 2}]}, "n": null},
            ),
            (roots(&["missing", "at"]), doc! {"at": at}),
        ] {
            assert_eq!(r.fields(&names).unwrap(), expected, "{names:?}");
        }
        let corrupt = Record {
            body: vec![9, 0, 0],
            ..r
        };
        assert!(corrupt.fields(&roots(&["at"])).is_err());
    }

    #[test]
    fn short_or_unknown_records_are_errors() {
        assert!(Record::decode(&[1, 2, 3]).is_err());
        assert!(Record::decode(&[9; 20]).is_err());
    }
}
