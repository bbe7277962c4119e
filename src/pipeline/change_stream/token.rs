//! Resume tokens: `{_data: "<hex>"}`, opaque to drivers, which store the last one they saw and
//! send it back as `resumeAfter` or `startAfter`. mayfly's `_data` is a version byte, the
//! operation time of the log entry (8 bytes) and a kind: an event, the invalidate event that
//! follows it, or a high-water mark (every entry up to that time has been read: the
//! `postBatchResumeToken` of a batch that ended without an event).
//!
//! Owns: encoding and decoding tokens. Does not own: where a stream resumes (`mod.rs`).

use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Bson, Document, Timestamp};

const VERSION: u8 = 0x82;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Event = 0,
    Invalidate = 1,
    HighWaterMark = 2,
}

/// A decoded resume token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub time: Timestamp,
    pub kind: Kind,
}

impl Token {
    pub fn new(time: Timestamp, kind: Kind) -> Token {
        Token { time, kind }
    }

    /// The token as drivers see it.
    pub fn to_document(self) -> Document {
        let packed = (u64::from(self.time.time) << 32) | u64::from(self.time.increment);
        doc! {"_data": format!("{VERSION:02X}{packed:016X}{:02X}", self.kind as u8)}
    }

    /// Reads a token a client sent back; anything mayfly did not make is 260.
    pub fn parse(value: &Bson) -> Result<Token> {
        let invalid = |why: &str| {
            Error::new(
                ErrorCode::InvalidResumeToken,
                format!("invalid resume token: {why}"),
            )
        };
        let Bson::Document(token) = value else {
            return Err(invalid("it must be an object"));
        };
        let Some(Bson::String(data)) = token.get("_data") else {
            return Err(invalid("its '_data' field must be a string"));
        };
        if data.len() != 20 || !data.is_ascii() {
            return Err(invalid("this server did not make it"));
        }
        let byte = |at: usize| {
            data.get(at..at + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        };
        let packed = data
            .get(2..18)
            .and_then(|h| u64::from_str_radix(h, 16).ok());
        let (Some(VERSION), Some(packed), Some(kind)) = (byte(0), packed, byte(18)) else {
            return Err(invalid("this server did not make it"));
        };
        let kind = match kind {
            0 => Kind::Event,
            1 => Kind::Invalidate,
            2 => Kind::HighWaterMark,
            _ => return Err(invalid("this server did not make it")),
        };
        Ok(Token {
            time: Timestamp {
                time: (packed >> 32) as u32,
                increment: (packed & 0xffff_ffff) as u32,
            },
            kind,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_read_back_and_order_as_their_times() {
        let a = Token::new(
            Timestamp {
                time: 10,
                increment: 2,
            },
            Kind::Event,
        );
        let b = Token::new(
            Timestamp {
                time: 11,
                increment: 1,
            },
            Kind::Invalidate,
        );
        for t in [a, b] {
            assert_eq!(Token::parse(&Bson::Document(t.to_document())).unwrap(), t);
        }
        let (da, db) = (a.to_document(), b.to_document());
        assert!(da.get_str("_data").unwrap() < db.get_str("_data").unwrap());
    }

    #[test]
    fn foreign_or_malformed_tokens_are_260() {
        for bad in [
            Bson::Int32(1),
            Bson::Document(doc! {}),
            Bson::Document(doc! {"_data": 5}),
            Bson::Document(doc! {"_data": "8263F0A1B2000000012B022C0100296E5A1004"}),
            Bson::Document(doc! {"_data": "8200000000000000ZZ00"}),
            Bson::Document(doc! {"_data": "820000000A0000000207"}),
            Bson::Document(doc! {"_data": "éé0000000A00000002é"}),
        ] {
            let err = Token::parse(&bad).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidResumeToken, "{bad}");
        }
    }
}
