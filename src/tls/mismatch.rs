//! Which client addresses have already been told, in the log, why their connections are
//! refused or downgraded (TLS to a server without it, plain to a server that requires it, a
//! failed handshake, a plain client of a `preferTLS` server).
//!
//! A driver whose connection string disagrees with the server retries for its whole server
//! selection timeout, so the same explanation would be logged once a retry; the operator needs
//! it once per client host and reason. Owns a bounded set of (address, reason) pairs; does not
//! log or decide anything.

use std::collections::{HashSet, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;

/// The addresses remembered at most: past it the oldest is forgotten (and would be reported
/// again), so a scan from many addresses holds a few tens of kilobytes, never more.
pub const REMEMBERED_ADDRESSES: usize = 1024;

/// (client address, reason) pairs already reported, oldest first.
#[derive(Debug)]
pub struct ReportedClients {
    capacity: usize,
    seen: Mutex<Seen>,
}

#[derive(Debug, Default)]
struct Seen {
    set: HashSet<(IpAddr, &'static str)>,
    order: VecDeque<(IpAddr, &'static str)>,
}

impl Default for ReportedClients {
    fn default() -> Self {
        ReportedClients::with_capacity(REMEMBERED_ADDRESSES)
    }
}

impl ReportedClients {
    pub fn with_capacity(capacity: usize) -> ReportedClients {
        ReportedClients {
            capacity: capacity.max(1),
            seen: Mutex::new(Seen::default()),
        }
    }

    /// Whether `reason` is reported for `ip` for the first time (and remembers it).
    pub fn first_report(&self, ip: IpAddr, reason: &'static str) -> bool {
        // A poisoned lock only means another connection panicked mid-insert: the set is
        // still a set, so keep using it.
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if !seen.set.insert((ip, reason)) {
            return false;
        }
        seen.order.push_back((ip, reason));
        while seen.order.len() > self.capacity {
            if let Some(oldest) = seen.order.pop_front() {
                seen.set.remove(&oldest);
            }
        }
        true
    }

    /// How many (address, reason) pairs are remembered.
    pub fn len(&self) -> usize {
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .set
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn each_address_is_reported_once_and_the_set_stays_bounded() {
        let reported = ReportedClients::with_capacity(3);
        // (address, reported now?)
        let table = [
            (1, true),
            (1, false),
            (2, true),
            (3, true),
            (2, false),
            (4, true),  // 1 is forgotten: the set holds 2, 3, 4
            (1, true),  // so 1 is reported again; 2 is forgotten
            (3, false), // 3 is still remembered
            (2, true),
        ];
        for (n, (last, want)) in table.into_iter().enumerate() {
            assert_eq!(
                reported.first_report(ip(last), "tls"),
                want,
                "step {n}: 10.0.0.{last}"
            );
            assert!(
                reported.len() <= 3,
                "step {n}: {} remembered",
                reported.len()
            );
        }
        let loopback = IpAddr::from([127, 0, 0, 1]);
        let defaults = ReportedClients::default();
        assert!(defaults.first_report(loopback, "tls"));
        assert!(!defaults.first_report(loopback, "tls"));
        assert!(
            defaults.first_report(loopback, "plain"),
            "another reason is reported on its own"
        );
        for n in 0..=u16::MAX {
            defaults.first_report(IpAddr::from([10, 1, (n >> 8) as u8, n as u8]), "tls");
        }
        assert_eq!(defaults.len(), REMEMBERED_ADDRESSES);
    }
}
