//! `$first`, `$last`, `$firstN` and `$lastN`: values by arrival order. A missing value counts
//! as `null` (mongod's rule), so `$first` of a group whose first document lacks the field is
//! `null`.
//!
//! Owns: the positional states. Does not own: `n`'s rules (n.rs).

use crate::error::Result;
use crate::query::expr::Value;
use bson::Bson;
use std::collections::VecDeque;

/// `$firstN` / `$lastN`.
#[derive(Debug, Clone)]
pub struct FirstLastN {
    n: usize,
    last: bool,
    values: VecDeque<Bson>,
}

impl FirstLastN {
    pub fn new(n: usize, last: bool) -> FirstLastN {
        FirstLastN {
            n,
            last,
            values: VecDeque::new(),
        }
    }

    pub fn add(&mut self, value: Value) -> Result<isize> {
        let v = value.unwrap_or(Bson::Null);
        let mut freed = 0;
        if self.values.len() >= self.n {
            if !self.last {
                return Ok(0);
            }
            freed = super::held(self.values.pop_front().as_ref())?;
        }
        let added = super::held(Some(&v))?;
        self.values.push_back(v);
        Ok(added - freed)
    }

    pub fn finish(self) -> Bson {
        Bson::Array(self.values.into())
    }

    pub fn partial(&self) -> Bson {
        Bson::Array(self.values.iter().cloned().collect())
    }
}
