//! The vocabulary every layer shares: why one attempt failed and whether asking again may
//! help ([`Failure`]), what an HTTP status or a connection error means, how long to wait
//! before the next attempt (exponential backoff with jitter, or the server's `Retry-After`),
//! what the error says once retrying stops, and errors told on one line without the
//! credentials or signatures of their URLs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use super::wire::{HttpError, Response};
use crate::source::FetchError;

/// Why one attempt failed, and whether asking again may help.
pub(super) enum Failure {
    /// Will not heal: report it.
    Fatal(FetchError),
    /// May heal: retry, after `Retry-After` when the server said so.
    Retry(FetchError, Option<Duration>),
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
pub(super) fn retry_after_of(resp: &Response) -> Option<Duration> {
    resp.headers()
        .get(http::header::RETRY_AFTER)
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

/// A connection-level failure: worth another attempt, except a certificate the client does
/// not trust (that does not heal by asking again). The client's error is the cause, its URL
/// without credentials.
pub(super) fn transport_failure(what: &str, e: HttpError) -> Failure {
    if error_chain(&e).contains("invalid peer certificate") {
        return Failure::Fatal(FetchError::unavailable_by(
            format!(
                "{what}: the registry's certificate is not trusted; trust its CA with --cert-dir \
                 DIR (DIR/ca.crt) or /etc/containers/certs.d/HOST:PORT/ca.crt, or pass \
                 --tls-verify=false"
            ),
            e,
        ));
    }
    Failure::Retry(FetchError::unavailable_by(what, e), None)
}

/// An error and its causes on one line (`a: b: c`), each cause once (a cause whose text its
/// error already includes is left out).
pub(super) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
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

    /// A resolver that knows no name, as the system's answers for a host that does not exist.
    #[derive(Clone)]
    struct NoSuchHost;

    impl tower_service::Service<hyper_util::client::legacy::connect::dns::Name> for NoSuchHost {
        type Response = std::vec::IntoIter<std::net::SocketAddr>;
        type Error = std::io::Error;
        type Future = std::future::Ready<Result<Self::Response, std::io::Error>>;

        fn poll_ready(
            &mut self,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), std::io::Error>> {
            std::task::Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: hyper_util::client::legacy::connect::dns::Name) -> Self::Future {
            let gai = "failed to lookup address information: Name or service not known";
            std::future::ready(Err(std::io::Error::other(gai)))
        }
    }

    /// A DNS failure keeps its line (the note after the request, the client error's chain
    /// after that) and is retried; the client's error is the cause.
    #[tokio::test]
    async fn a_dns_failure_keeps_its_line_and_its_cause() {
        use hyper_util::client::legacy::connect::HttpConnector;
        let resolver = super::super::connect::Resolve(NoSuchHost);
        let mut connector = HttpConnector::new_with_resolver(resolver);
        connector.enforce_http(false);
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build::<_, http_body_util::Full<bytes::Bytes>>(connector);
        let uri: http::Uri = "https://registry.invalid/v2/x/manifests/y".parse().unwrap();
        let Err(failed) = client.get(uri.clone()).await else {
            panic!("no such host");
        };
        let e = HttpError::sending(&uri, failed.into());
        let Failure::Retry(err, None) = transport_failure("manifest registry.invalid/x:y", e)
        else {
            panic!("a DNS failure is worth another attempt");
        };
        let err = gave_up(err, 5);
        assert_eq!(
            crate::error::one_line(&err),
            "manifest registry.invalid/x:y (gave up after 5 attempts): error sending request for \
             url (https://registry.invalid/v2/x/manifests/y): client error (Connect): dns error: \
             error resolving DNS: failed to lookup address information: Name or service not known"
        );
        let cause = std::error::Error::source(&err).unwrap();
        let sent = cause
            .downcast_ref::<HttpError>()
            .expect("the client's error");
        let client_error = std::error::Error::source(sent)
            .and_then(|e| e.downcast_ref::<hyper_util::client::legacy::Error>());
        assert!(client_error.is_some_and(|e| e.is_connect()), "{sent:?}");
    }
}
