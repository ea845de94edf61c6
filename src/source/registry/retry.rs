//! How often and how long a request is tried: attempts bounded by request slots, the
//! per-request timeout and the run's deadline; retries with exponential backoff and jitter
//! (or the server's `Retry-After`) for faults that may heal, each counted and told as a
//! `tracing` event; and which faults those are.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use super::body::Body;
use super::request::{Kind, Request};
use super::{RegistryClient, Stats};
use crate::source::FetchError;

/// Why one attempt failed, and whether asking again may help.
pub(super) enum Failure {
    /// Will not heal: report it.
    Fatal(FetchError),
    /// May heal: retry, after `Retry-After` when the server said so.
    Retry(FetchError, Option<Duration>),
}

impl RegistryClient {
    /// One GET with retries. Each attempt takes a request slot, is bounded by the
    /// per-request timeout (and what is left of the deadline), and is counted.
    pub(super) async fn fetch(&self, req: &Request<'_>) -> Result<Body, FetchError> {
        self.retrying(&req.what, || async {
            Stats::count(match req.kind {
                Kind::Manifest => &self.stats.manifest_requests,
                Kind::Blob | Kind::BlobHead => &self.stats.blob_requests,
            });
            self.attempt(req).await
        })
        .await
    }

    /// Runs attempts made by `attempt` until one succeeds, one fails for good, the retries
    /// are used up or the deadline passes; between attempts, the backoff (or the server's
    /// `Retry-After`), each retry counted and told. Reads and writes retry alike.
    pub(super) async fn retrying<T, F, Fut>(
        &self,
        what: &str,
        mut attempt: F,
    ) -> Result<T, FetchError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Failure>>,
    {
        let mut attempts: u32 = 0;
        loop {
            let (err, retry_after) = match self.counted_attempt(what, attempt()).await? {
                Ok(body) => return Ok(body),
                Err(Failure::Fatal(e)) => return Err(e),
                Err(Failure::Retry(e, after)) => (e, after),
            };
            attempts += 1;
            if !self.before_retry(attempts, retry_after, &err).await {
                return Err(gave_up(err, attempts));
            }
        }
    }

    /// After `attempts` failed attempts (the last with `err`): waits the backoff step (or
    /// the server's `Retry-After`), counting and telling the retry, and returns true; or
    /// returns false at once when the retries are used up or the deadline would pass first.
    pub(super) async fn before_retry(
        &self,
        attempts: u32,
        retry_after: Option<Duration>,
        err: &FetchError,
    ) -> bool {
        let retries = self.options.retries;
        if attempts > retries {
            return false;
        }
        let delay = retry_after.unwrap_or_else(|| backoff(self.options.backoff, attempts - 1));
        if self.remaining().is_some_and(|left| left <= delay) {
            return false;
        }
        Stats::count(&self.stats.retries);
        let why = if retry_after.is_some() {
            " (Retry-After)"
        } else {
            ""
        };
        tracing::info!(
            "retry {attempts}/{retries} in {:.1}s{why}: {}",
            delay.as_secs_f64(),
            super::request::error_chain(err)
        );
        tokio::time::sleep(delay).await;
        true
    }

    /// One attempt in a request slot, its time counted in the stats. The outer error ends
    /// the request at once (deadline passed before it began, slots closed).
    async fn counted_attempt<T>(
        &self,
        what: &str,
        attempt: impl Future<Output = Result<T, Failure>>,
    ) -> Result<Result<T, Failure>, FetchError> {
        let left = self.remaining();
        if left.is_some_and(|l| l.is_zero()) {
            return Err(self.deadline_error(what));
        }
        let queued = Instant::now();
        let permit = self
            .slots
            .acquire()
            .await
            .map_err(|_| FetchError::unavailable("request slots closed".to_string()))?;
        Stats::add(&self.stats.queue_wait_micros, micros_since(queued));
        let started = Instant::now();
        // Each step of the attempt (an answer, the next piece of a body) is bounded by
        // the request timeout; the whole attempt by what is left of the deadline.
        let result = match left {
            None => attempt.await,
            Some(left) => match tokio::time::timeout(left, attempt).await {
                Ok(r) => r,
                Err(_) => Err(Failure::Fatal(self.deadline_error(what))),
            },
        };
        Stats::add(&self.stats.request_micros, micros_since(started));
        drop(permit);
        Ok(result)
    }

    /// What is left of the run's deadline, when it has one.
    pub(super) fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    fn deadline_error(&self, what: &str) -> FetchError {
        FetchError::unavailable(format!(
            "{what}: the overall deadline (--timeout {}s) passed",
            self.options.deadline.unwrap_or_default().as_secs_f64()
        ))
    }

    /// Runs one step of a request (an answer, the next piece of a body) within the request
    /// timeout; a step that takes longer is a fault that may heal.
    pub(super) async fn within<T>(
        &self,
        what: &str,
        step: impl Future<Output = T>,
    ) -> Result<T, Failure> {
        let limit = self.options.request_timeout;
        tokio::time::timeout(limit, step).await.map_err(|_| {
            Failure::Retry(
                FetchError::unavailable(format!(
                    "{what}: nothing received for {:.1}s (--request-timeout)",
                    limit.as_secs_f64()
                )),
                None,
            )
        })
    }
}

fn micros_since(start: Instant) -> u64 {
    start.elapsed().as_micros() as u64
}

/// The error to report once retrying stops: says how often it was tried.
pub(super) fn gave_up(err: FetchError, attempts: u32) -> FetchError {
    match err {
        FetchError::Unavailable(m) if attempts > 1 => {
            FetchError::Unavailable(m.noted(&format!(" (gave up after {attempts} attempts)")))
        }
        other => other,
    }
}

/// Longest wait a `Retry-After` may ask for before imgcheck gives up instead.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// Parses `Retry-After`: delay-seconds, or an HTTP-date (RFC 9110 §10.2.3) counted from
/// now (a date in the past means "now"). Anything else is `None` (the normal backoff
/// applies); absurd values are capped at [`MAX_RETRY_AFTER`].
fn parse_retry_after(value: &str) -> Option<Duration> {
    retry_after_at(value, SystemTime::now())
}

fn retry_after_at(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    let delay = match value.parse::<u64>() {
        Ok(secs) => Duration::from_secs(secs),
        Err(_) => httpdate::parse_http_date(value)
            .ok()?
            .duration_since(now)
            .unwrap_or(Duration::ZERO),
    };
    Some(delay.min(MAX_RETRY_AFTER))
}

/// The `Retry-After` of an answer, when it has a usable one.
pub(super) fn retry_after_of(resp: &reqwest::Response) -> Option<Duration> {
    resp.headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after)
}

/// Statuses that may heal when asked again: timeouts, rate limits, server and gateway errors.
pub(super) fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 429 | 500 | 502 | 503 | 504)
}

/// Longest single backoff step.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// Exponential backoff with jitter: `base · 2^attempt`, capped at [`MAX_BACKOFF`], then a
/// random point in its upper half (so concurrent clients spread out, but never retry at once).
pub(super) fn backoff(base: Duration, attempt: u32) -> Duration {
    let full = base
        .saturating_mul(1u32 << attempt.min(16))
        .min(MAX_BACKOFF);
    let half = full / 2;
    half + half.mul_f64(jitter())
}

/// A number in `[0, 1)` from a small xorshift generator seeded by the clock (jitter needs no
/// cryptographic randomness).
fn jitter() -> f64 {
    static STATE: AtomicU64 = AtomicU64::new(0);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0x9e37_79b9_7f4a_7c15);
    let mut x = STATE.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed) ^ seed;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(" 0 "), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("99999999"), Some(MAX_RETRY_AFTER));
        // HTTP-dates (IMF-fixdate and the two obsolete forms), counted from "now".
        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").unwrap();
        for (value, secs) in [
            ("Wed, 21 Oct 2015 07:28:05 GMT", 5),
            ("Wednesday, 21-Oct-15 07:28:30 GMT", 30),
            ("Wed Oct 21 07:29:00 2015", 60),
            ("Wed, 21 Oct 2015 07:00:00 GMT", 0),
            ("Thu, 22 Oct 2015 07:28:00 GMT", MAX_RETRY_AFTER.as_secs()),
        ] {
            assert_eq!(
                retry_after_at(value, now),
                Some(Duration::from_secs(secs)),
                "{value}"
            );
        }
        assert_eq!(retry_after_at("Wed, 21 Oct 2015 25:00:00 GMT", now), None);
        assert_eq!(retry_after_at("soon", now), None);
        assert_eq!(parse_retry_after("-1"), None);
    }

    #[test]
    fn retryable_statuses() {
        for s in [408, 429, 500, 502, 503, 504] {
            assert!(is_retryable_status(s), "{s}");
        }
        for s in [200, 400, 401, 403, 404, 405, 501, 505] {
            assert!(!is_retryable_status(s), "{s}");
        }
    }

    #[test]
    fn backoff_grows_within_bounds() {
        let base = Duration::from_millis(100);
        for attempt in 0..40 {
            let d = backoff(base, attempt);
            let full = base.saturating_mul(1 << attempt.min(16)).min(MAX_BACKOFF);
            assert!(d >= full / 2 && d <= full, "{attempt}: {d:?}");
        }
    }

    #[test]
    fn giving_up_says_how_often() {
        let e = gave_up(FetchError::unavailable("x"), 5);
        assert_eq!(e.to_string(), "x (gave up after 5 attempts)");
        assert_eq!(gave_up(FetchError::unavailable("x"), 1).to_string(), "x");
        // The note goes on the message; the cause stays under it.
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let e = gave_up(FetchError::unavailable_by("manifest a", refused), 2);
        let line = crate::error::one_line(&e);
        assert_eq!(
            line,
            "manifest a (gave up after 2 attempts): connection refused"
        );
        let d = FetchError::DigestMismatch {
            expected: "a".into(),
            actual: "b".into(),
        };
        assert_eq!(gave_up(d.clone(), 5).to_string(), d.to_string());
    }
}
