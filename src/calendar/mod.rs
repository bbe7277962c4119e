//! The calendar: the one home of date and time arithmetic. Pure (no clock, no I/O); callers
//! pass instants as milliseconds since the Unix epoch.
//!
//! Owns: the proleptic Gregorian calendar and mongod's week numbers (`civil`), time zones and
//! the one reading of a user's `timezone` string (`zone`, on jiff's bundled IANA database),
//! the time units and their arithmetic as `$dateAdd`/`$dateDiff`/`$dateTrunc`, window ranges
//! and `$densify` use it (`unit`), and the ISO 8601 text of log lines and date strings
//! (`iso`). Does not own: how an operator or a stage reads its arguments, nor the string
//! formats of `$dateToString`/`$dateFromString` (`query::expr::ops::date`).

pub mod civil;
pub mod iso;
#[cfg(test)]
mod tests;
pub mod unit;
pub mod zone;

pub use unit::TimeUnit;
pub use zone::Zone;
