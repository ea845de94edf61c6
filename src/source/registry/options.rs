//! How a run reaches registries ([`ClientOptions`]) and what it asked them for ([`Stats`]).
//! A leaf: it imports no other layer.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How to reach registries.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Verify TLS certificates and require HTTPS (except on loopback).
    pub tls_verify: bool,
    /// Requests in flight at once, across every reference of the run.
    pub max_requests: usize,
    /// `--cert-dir`: TLS files for every registry, instead of the certs.d directories.
    pub cert_dir: Option<PathBuf>,
    /// Longest wait for an answer, or for the next piece of its body, before the request
    /// counts as stalled (and is retried).
    pub request_timeout: Duration,
    /// `--timeout`: the whole run's work must finish within this, counted from
    /// `clock_start`.
    pub deadline: Option<Duration>,
    /// When the run started (its clock for `--timeout`: reading the inputs counts too);
    /// `None`: when the client is made.
    pub clock_start: Option<Instant>,
    /// Retries after the first attempt, for faults that may heal.
    pub retries: u32,
    /// First backoff step; each retry doubles it (with jitter).
    pub backoff: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            tls_verify: true,
            max_requests: 16,
            cert_dir: None,
            request_timeout: Duration::from_secs(30),
            deadline: None,
            clock_start: None,
            retries: 4,
            backoff: Duration::from_millis(200),
        }
    }
}

impl ClientOptions {
    /// When the run's work must be over: `deadline` after `clock_start` (or after now).
    pub fn ends_at(&self) -> Option<Instant> {
        self.deadline
            .map(|d| self.clock_start.unwrap_or_else(Instant::now) + d)
    }
}

/// Counters of what a run asked the registries for (`verify --stats`).
#[derive(Debug, Default)]
pub struct Stats {
    /// Manifest GETs sent (retries included).
    pub manifest_requests: AtomicU64,
    /// Blob GETs sent (retries included).
    pub blob_requests: AtomicU64,
    /// Body bytes received.
    pub bytes: AtomicU64,
    /// Fetches answered from the run's cache (same repository, same digest).
    pub cache_hits: AtomicU64,
    /// Time spent waiting for a request slot, in microseconds.
    pub queue_wait_micros: AtomicU64,
    /// Time spent in requests, summed over concurrent requests, in microseconds.
    pub request_micros: AtomicU64,
    /// Requests repeated after a fault that may heal.
    pub retries: AtomicU64,
    /// Tokens fetched from token services.
    pub token_requests: AtomicU64,
    /// Write requests sent (upload POST/PATCH/PUT, mounts, manifest PUTs; retries included).
    pub write_requests: AtomicU64,
    /// Body bytes sent by writes (retries included).
    pub bytes_sent: AtomicU64,
}

impl Stats {
    /// A one-line summary. Times are means per manifest/blob request: the wait for one of
    /// the `--jobs` slots, and the time in flight. (Sums over concurrent requests exceed the
    /// run's wall time and mean nothing on their own.)
    pub fn summary(&self) -> String {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let writes = match get(&self.write_requests) {
            0 => String::new(),
            n => format!(
                "; writes: {n} requests, {} bytes sent",
                get(&self.bytes_sent)
            ),
        };
        let requests = get(&self.manifest_requests) + get(&self.blob_requests);
        let mean_ms = |micros: &AtomicU64| match requests {
            0 => 0.0,
            n => get(micros) as f64 / n as f64 / 1e3,
        };
        format!(
            "requests: {} manifest, {} blob, {} token; {} retries; {} bytes; {} cache hits; per request: {:.1} ms waiting for a slot, {:.1} ms in flight (means){writes}",
            get(&self.manifest_requests),
            get(&self.blob_requests),
            get(&self.token_requests),
            get(&self.retries),
            get(&self.bytes),
            get(&self.cache_hits),
            mean_ms(&self.queue_wait_micros),
            mean_ms(&self.request_micros),
        )
    }

    /// The counters as they stand now (to tell apart what a part of the run asked for:
    /// [`Stats::since`]).
    pub fn snapshot(&self) -> Stats {
        self.combined(self, |now, _| now)
    }

    /// What was asked for since `earlier` (a [`Stats::snapshot`] of these counters).
    pub fn since(&self, earlier: &Stats) -> Stats {
        self.combined(earlier, u64::saturating_sub)
    }

    /// Each counter `f(self's, other's)`.
    fn combined(&self, other: &Stats, f: impl Fn(u64, u64) -> u64) -> Stats {
        let c = |a: &AtomicU64, b: &AtomicU64| {
            AtomicU64::new(f(a.load(Ordering::Relaxed), b.load(Ordering::Relaxed)))
        };
        Stats {
            manifest_requests: c(&self.manifest_requests, &other.manifest_requests),
            blob_requests: c(&self.blob_requests, &other.blob_requests),
            bytes: c(&self.bytes, &other.bytes),
            cache_hits: c(&self.cache_hits, &other.cache_hits),
            queue_wait_micros: c(&self.queue_wait_micros, &other.queue_wait_micros),
            request_micros: c(&self.request_micros, &other.request_micros),
            retries: c(&self.retries, &other.retries),
            token_requests: c(&self.token_requests, &other.token_requests),
            write_requests: c(&self.write_requests, &other.write_requests),
            bytes_sent: c(&self.bytes_sent, &other.bytes_sent),
        }
    }

    /// Adds one to `counter`.
    pub(super) fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds `amount` to `counter`.
    pub(super) fn add(counter: &AtomicU64, amount: u64) {
        counter.fetch_add(amount, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_of_the_run_is_told_apart_by_its_snapshot() {
        let stats = Stats::default();
        Stats::add(&stats.manifest_requests, 2);
        Stats::count(&stats.token_requests);
        let earlier = stats.snapshot();
        Stats::add(&stats.manifest_requests, 3);
        Stats::add(&stats.bytes, 10);
        let since = stats.since(&earlier);
        assert_eq!(since.manifest_requests.load(Ordering::Relaxed), 3);
        assert_eq!(since.token_requests.load(Ordering::Relaxed), 0);
        assert_eq!(since.bytes.load(Ordering::Relaxed), 10);
        assert_eq!(earlier.manifest_requests.load(Ordering::Relaxed), 2);
    }
}
