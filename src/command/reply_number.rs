//! Counts and sizes in replies, as mongod's `appendNumber` writes them: int32 when the value
//! fits, else int64. Shared by the families whose replies carry counts (`count`'s `n`, the batch
//! writes' `n`, `collStats`, `$collStats`, `validate`).

use bson::Bson;

/// A count or size as mongod's `appendNumber` writes it: int32 when it fits, else int64.
pub fn number(n: u64) -> Bson {
    match i32::try_from(n) {
        Ok(small) => Bson::Int32(small),
        Err(_) => Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_int32_when_they_fit() {
        assert_eq!(number(5), Bson::Int32(5));
        assert_eq!(number(1 << 40), Bson::Int64(1 << 40));
    }
}
