//! Latency histograms, all with one set of buckets so dashboards can compare them: commands,
//! commit-group syncs and anything else timed for the metrics endpoint. Recording is a few
//! atomic additions; the histogram is shared (`Clone` shares it), so the endpoint reads the
//! same counts the recorder writes.
//! Does not own: how the figures are exposed (`metrics`).

use prometheus_client::metrics::histogram::Histogram;
use std::time::Duration;

/// Bucket upper bounds in seconds: 100 µs to 10 s, about three per decade. The first covers a
/// point read from the cache; the last, a long scan or a sync on a saturated disk.
pub const BUCKETS_SECONDS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// A new histogram with [`BUCKETS_SECONDS`].
pub fn histogram() -> Histogram {
    Histogram::new(BUCKETS_SECONDS)
}

/// One timed thing's latencies.
#[derive(Debug, Clone)]
pub struct Latency(Histogram);

impl Default for Latency {
    fn default() -> Self {
        Latency(histogram())
    }
}

impl Latency {
    pub fn observe(&self, elapsed: Duration) {
        self.0.observe(elapsed.as_secs_f64());
    }

    /// The histogram itself, shared, for the metrics registry.
    pub fn histogram(&self) -> Histogram {
        self.0.clone()
    }
}
