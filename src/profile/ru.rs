//! Request units: the estimated charge of a command, as `getLastRequestStatistics` reports it
//! and as throttling spends it.
//!
//! Cosmos does not publish its formula; Microsoft gives rules of thumb, and this model is
//! calibrated to them (an estimate, and documented as one in docs/cosmos.md):
//! - a point read of a 1 KB document costs 1 RU, and a 10 KB read "still about one RU" (the
//!   Cosmos DB for MongoDB FAQ): a read costs 1 RU plus 0.1 RU per KB returned past the first;
//!   a query pays for the documents and index keys it examines past the first document
//!   (0.05 and 0.01 RU each), which is why an unindexed filter costs more than an indexed one;
//! - a write of a 1 KB document costs about 5 RU (Microsoft's hands-on lab): 5 RU per document
//!   written plus 1 RU per KB of request past 1 KB a document, plus what it examined to find
//!   its targets;
//! - the handshake, authentication and `getLastRequestStatistics` itself cost nothing; any
//!   other command costs 1 RU;
//! - a command that fails pays for what it examined, not for its size (a refused 3 MB insert
//!   wrote nothing), and one refused for want of request units (16500) costs nothing.

/// What kind of work a command does, for its charge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    Read,
    Write,
    /// Catalog and administrative commands.
    Other,
    /// The handshake, authentication, session bookkeeping: not charged.
    Free,
}

impl Work {
    /// The kind of the command named `name`.
    pub fn of(name: &str) -> Work {
        match name {
            "find" | "getMore" | "aggregate" | "count" | "distinct" => Work::Read,
            "insert" | "update" | "delete" | "findAndModify" | "findandmodify" => Work::Write,
            "hello"
            | "isMaster"
            | "ismaster"
            | "ping"
            | "buildInfo"
            | "buildinfo"
            | "saslStart"
            | "saslContinue"
            | "authenticate"
            | "logout"
            | "endSessions"
            | "killCursors"
            | "getLastRequestStatistics"
            | "whatsmyuri" => Work::Free,
            _ => Work::Other,
        }
    }
}

/// What a finished command did, as far as its charge goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Facts {
    pub request_bytes: usize,
    pub reply_bytes: usize,
    pub docs_examined: u64,
    pub keys_examined: u64,
    /// Documents inserted, changed or removed.
    pub docs_written: u64,
}

const KB: f64 = 1024.0;
const READ_BASE: f64 = 1.0;
const READ_PER_KB: f64 = 0.1;
const PER_DOCUMENT_EXAMINED: f64 = 0.05;
const PER_KEY_EXAMINED: f64 = 0.01;
const WRITE_PER_DOCUMENT: f64 = 5.0;
const WRITE_PER_KB: f64 = 1.0;
const OTHER: f64 = 1.0;

/// The estimated charge in request units, rounded to hundredths as Cosmos reports it.
pub fn charge(work: Work, facts: &Facts) -> f64 {
    let examined = facts.docs_examined.saturating_sub(1) as f64 * PER_DOCUMENT_EXAMINED
        + facts.keys_examined as f64 * PER_KEY_EXAMINED;
    let ru = match work {
        Work::Free => 0.0,
        Work::Other => OTHER,
        Work::Read => {
            let past_first_kb = (facts.reply_bytes as f64 / KB - 1.0).max(0.0);
            READ_BASE + past_first_kb * READ_PER_KB + examined
        }
        Work::Write => {
            let written = facts.docs_written as f64;
            let past_a_kb_each = (facts.request_bytes as f64 / KB - written).max(0.0);
            // A write that changed nothing still read to find out: at least a read's charge.
            (written * WRITE_PER_DOCUMENT + past_a_kb_each * WRITE_PER_KB + examined).max(READ_BASE)
        }
    };
    (ru * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(reply_kb: f64, docs: u64, keys: u64) -> f64 {
        let facts = Facts {
            reply_bytes: (reply_kb * KB) as usize,
            docs_examined: docs,
            keys_examined: keys,
            ..Facts::default()
        };
        charge(Work::Read, &facts)
    }

    #[test]
    fn a_point_read_of_a_kilobyte_costs_one_unit() {
        assert_eq!(read(1.0, 1, 1), 1.01);
        assert_eq!(read(0.2, 1, 0), 1.0);
        // "A 10 KB read is still about one RU."
        assert!(read(10.0, 1, 1) < 2.0);
    }

    #[test]
    fn scanning_costs_more_than_seeking() {
        let seek = read(1.0, 1, 1);
        let scan = read(1.0, 1000, 0);
        assert!(scan > 40.0 * seek, "{scan} vs {seek}");
    }

    #[test]
    fn a_kilobyte_write_costs_about_five_units() {
        let insert = |docs: u64, kb: f64| {
            charge(
                Work::Write,
                &Facts {
                    request_bytes: (kb * KB) as usize,
                    docs_written: docs,
                    ..Facts::default()
                },
            )
        };
        assert_eq!(insert(1, 1.0), 5.0);
        assert_eq!(insert(1, 10.0), 14.0);
        assert_eq!(insert(100, 100.0), 500.0);
        assert_eq!(insert(0, 0.2), 1.0);
    }

    #[test]
    fn commands_are_classified() {
        assert_eq!(Work::of("find"), Work::Read);
        assert_eq!(Work::of("findAndModify"), Work::Write);
        assert_eq!(Work::of("hello"), Work::Free);
        assert_eq!(Work::of("createIndexes"), Work::Other);
        assert_eq!(charge(Work::Free, &Facts::default()), 0.0);
        assert_eq!(charge(Work::Other, &Facts::default()), 1.0);
    }
}
