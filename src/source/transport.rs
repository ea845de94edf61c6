//! Pure pieces of the distribution-API client: `WWW-Authenticate` challenges, `Retry-After`,
//! backoff with jitter, which answers may heal on retry, and short summaries of registry
//! error bodies. Kept free of I/O so they are table-tested.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// How a registry asked to be authenticated (RFC 7235 challenge, distribution's token spec).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    /// `Basic realm=…`: send the credentials on every request.
    Basic,
    /// `Bearer realm=…,service=…,scope=…`: fetch a token from `realm`.
    Bearer {
        /// Token endpoint.
        realm: String,
        /// `service` parameter for the token request.
        service: Option<String>,
        /// `scope` the registry asked for, if any.
        scope: Option<String>,
    },
}

/// Parses one `WWW-Authenticate` value. Unknown schemes and a Bearer challenge without a
/// realm give `None`.
pub fn parse_challenge(header: &str) -> Option<Challenge> {
    let header = header.trim();
    let (scheme, rest) = match header.find(char::is_whitespace) {
        Some(i) => (&header[..i], &header[i..]),
        None => (header, ""),
    };
    if scheme.eq_ignore_ascii_case("basic") {
        return Some(Challenge::Basic);
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let params = parse_params(rest);
    let get = |k: &str| {
        params
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(k))
            .map(|(_, v)| v.clone())
    };
    Some(Challenge::Bearer {
        realm: get("realm").filter(|r| !r.is_empty())?,
        service: get("service"),
        scope: get("scope"),
    })
}

/// `key=value` / `key="quoted, value"` pairs separated by commas.
fn parse_params(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c == ',' {
                break;
            }
            key.push(c);
            chars.next();
        }
        if key.is_empty() {
            return out;
        }
        if chars.next() != Some('=') {
            continue;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => {
                        if let Some(n) = chars.next() {
                            value.push(n);
                        }
                    }
                    c => value.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                value.push(c);
                chars.next();
            }
        }
        out.push((key.trim().to_string(), value.trim().to_string()));
    }
}

/// Longest wait a `Retry-After` may ask for before imgcheck gives up instead.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// Parses `Retry-After`: delay-seconds, or an HTTP-date (RFC 9110 §10.2.3) counted from
/// now (a date in the past means "now"). Anything else is `None` (the normal backoff
/// applies); absurd values are capped at [`MAX_RETRY_AFTER`].
pub fn parse_retry_after(value: &str) -> Option<Duration> {
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

/// Statuses that may heal when asked again: timeouts, rate limits, server and gateway errors.
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 429 | 500 | 502 | 503 | 504)
}

/// Longest single backoff step.
pub const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// Exponential backoff with jitter: `base · 2^attempt`, capped at [`MAX_BACKOFF`], then a
/// random point in its upper half (so concurrent clients spread out, but never retry at once).
pub fn backoff(base: Duration, attempt: u32) -> Duration {
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

/// A short, printable summary of a registry error body: the distribution error envelope's
/// `code: message` pairs when it is one, else the first 200 characters of text.
pub fn summarize_error_body(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Envelope {
        errors: Vec<Entry>,
    }
    #[derive(serde::Deserialize)]
    struct Entry {
        #[serde(default)]
        code: String,
        #[serde(default)]
        message: String,
    }
    if let Ok(env) = serde_json::from_slice::<Envelope>(body)
        && !env.errors.is_empty()
    {
        return env
            .errors
            .iter()
            .map(|e| format!("{}: {}", e.code, e.message))
            .collect::<Vec<_>>()
            .join("; ");
    }
    String::from_utf8_lossy(body)
        .chars()
        .filter(|c| !c.is_control())
        .take(200)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges() {
        assert_eq!(
            parse_challenge(
                r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push""#
            ),
            Some(Challenge::Bearer {
                realm: "https://auth.example/token".into(),
                service: Some("registry.example".into()),
                scope: Some("repository:a/b:pull,push".into()),
            })
        );
        assert_eq!(
            parse_challenge("bearer realm=http://127.0.0.1:1/t"),
            Some(Challenge::Bearer {
                realm: "http://127.0.0.1:1/t".into(),
                service: None,
                scope: None
            })
        );
        assert_eq!(
            parse_challenge(r#"Basic realm="Registry Realm""#),
            Some(Challenge::Basic)
        );
        assert_eq!(parse_challenge("Basic"), Some(Challenge::Basic));
        assert_eq!(parse_challenge(r#"Bearer service="x""#), None);
        assert_eq!(parse_challenge("Negotiate abc"), None);
        assert_eq!(parse_challenge(""), None);
        // Escapes and junk do not panic.
        assert!(matches!(
            parse_challenge(r#"Bearer realm="a\"b",,=,x"#),
            Some(Challenge::Bearer { realm, .. }) if realm == "a\"b"
        ));
        assert_eq!(parse_challenge(r#"Bearer realm=""#), None);
    }

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
    fn error_bodies() {
        assert_eq!(
            summarize_error_body(
                br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown","detail":{}}]}"#
            ),
            "MANIFEST_UNKNOWN: manifest unknown"
        );
        assert_eq!(summarize_error_body(b"oops\n"), "oops");
        assert_eq!(summarize_error_body(&[0xff; 300]).chars().count(), 200);
    }
}
