//! Reading answers: a 200 body under the request's size cap (refused before it is
//! buffered), into memory or spooled to a temporary file, then checked against the digest
//! that named it, the registry's `Docker-Content-Digest` and a manifest's Content-Type;
//! short error and token bodies; summaries of registry error bodies, with every form of a
//! credential redacted ([`redact`]: the one place server text is cleaned before it is shown).

use std::time::{Duration, Instant};

use http::header::CONTENT_TYPE;

use super::failure::Failure;
use super::link::Link;
use super::options::Stats;
use super::request::{Kind, Request};
use super::wire::Response;
use crate::auth::Credentials;
use crate::digest::{Digest, Hasher};
use crate::manifest::ACCEPTED_MANIFEST_TYPES;
use crate::source::FetchError;

/// Largest token-service answer or error body read.
const MAX_SMALL_BODY: u64 = 64 * 1024;

/// Slowest average a body may arrive at over a whole window of the request timeout (bytes
/// per second): a registry that trickles a few bytes at a time, never quiet long enough to
/// trip the per-piece timeout, is a stall (curl's `--speed-limit`, with `--request-timeout`
/// as `--speed-time`).
pub(super) const MIN_RATE: u64 = 1024;

/// A checked body.
pub(super) struct Body {
    /// The bytes; empty when spooled.
    pub(super) bytes: Vec<u8>,
    /// The Content-Type, when it is a manifest media type.
    pub(super) media_type: Option<String>,
    /// The spooled body and its length, for `spool` requests.
    pub(super) file: Option<(tempfile::TempPath, u64)>,
    /// The unread answer, for `stream` requests.
    pub(super) response: Option<Response>,
}

impl Body {
    /// The answer to a `HEAD`: no body.
    pub(super) fn empty() -> Body {
        Body {
            bytes: Vec::new(),
            media_type: None,
            file: None,
            response: None,
        }
    }

    /// A 200 answer whose body is left unread, for a streamed request.
    pub(super) fn streaming(response: Response) -> Body {
        Body {
            response: Some(response),
            ..Body::empty()
        }
    }
}

/// Where a body goes while it is read.
enum Sink {
    Memory(Vec<u8>),
    File {
        file: tempfile::NamedTempFile,
        hasher: Box<Hasher>,
    },
}

/// A body as received, before its checks.
struct Received {
    bytes: Vec<u8>,
    /// What the body hashes to with the expected digest's algorithm (when one is expected).
    actual: Option<Digest>,
    file: Option<(tempfile::TempPath, u64)>,
}

impl Sink {
    /// A file for a spooled request (hashed as it is written), else memory.
    fn open(req: &Request<'_>, content_length: Option<u64>) -> Result<Sink, Failure> {
        Ok(match (req.spool, req.expected) {
            (true, Some(expected)) => Sink::File {
                file: tempfile::NamedTempFile::new().map_err(|e| spool_error(req, e))?,
                hasher: Box::new(Hasher::new(expected.algorithm())),
            },
            _ => Sink::Memory(Vec::with_capacity(
                content_length.unwrap_or(0).min(1 << 20) as usize
            )),
        })
    }

    fn write(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Memory(bytes) => bytes.extend_from_slice(chunk),
            Sink::File { file, hasher } => {
                hasher.update(chunk);
                std::io::Write::write_all(file, chunk)?;
            }
        }
        Ok(())
    }

    fn finish(self, expected: Option<&Digest>, received: u64) -> Received {
        match self {
            Sink::Memory(bytes) => Received {
                actual: expected.map(|e| Digest::compute(e.algorithm(), &bytes)),
                bytes,
                file: None,
            },
            Sink::File { file, hasher } => Received {
                bytes: Vec::new(),
                actual: Some(hasher.finish()),
                file: Some((file.into_temp_path(), received)),
            },
        }
    }
}

fn spool_error(req: &Request<'_>, e: std::io::Error) -> Failure {
    Failure::Fatal(FetchError::unavailable_by(
        format!("{}: cannot write a temporary file", req.what),
        e,
    ))
}

fn too_large(req: &Request<'_>) -> Failure {
    Failure::Fatal(FetchError::TooLarge {
        what: req.what.clone(),
        limit: req.limit,
    })
}

fn header(resp: &Response, name: impl http::header::AsHeaderName) -> Option<&str> {
    resp.headers().get(name).and_then(|v| v.to_str().ok())
}

/// Reads a 200 body under the request's cap, then checks it against the digest that
/// named it and the registry's `Docker-Content-Digest`, and a manifest's Content-Type.
pub(super) async fn read_body(
    link: &Link,
    req: &Request<'_>,
    mut resp: Response,
) -> Result<Body, Failure> {
    if resp.content_length().is_some_and(|n| n > req.limit) {
        return Err(too_large(req));
    }
    let sink = Sink::open(req, resp.content_length())?;
    let received = stream(link, req, &mut resp, sink).await?;
    // The headers are read where the answer keeps them: only a manifest's media type is
    // copied out.
    let content_type =
        header(&resp, CONTENT_TYPE).map(|v| v.split(';').next().unwrap_or("").trim());
    check_expected(req.expected, received.actual.as_ref())?;
    if let Some(claimed) = header(&resp, "docker-content-digest") {
        check_header_digest(claimed, &received, req.credentials())?;
    }
    if req.kind == Kind::Manifest {
        check_manifest_type(req, content_type)?;
    }
    let media_type = content_type
        .filter(|ct| ACCEPTED_MANIFEST_TYPES.contains(ct))
        .map(str::to_string);
    Ok(Body {
        bytes: received.bytes,
        media_type,
        file: received.file,
        response: None,
    })
}

/// Streams the body into `sink`, each piece within the request timeout, refusing it as
/// soon as it passes the cap. A body that breaks off may heal on retry.
async fn stream(
    link: &Link,
    req: &Request<'_>,
    resp: &mut Response,
    mut sink: Sink,
) -> Result<Received, Failure> {
    let mut received: u64 = 0;
    let mut pace = Pace::new(link.options.request_timeout, Instant::now());
    loop {
        let chunk = match link.within(&req.what, resp.chunk()).await? {
            Ok(Some(c)) => c,
            Ok(None) => break,
            Err(e) => {
                return Err(Failure::Retry(
                    FetchError::unavailable_by(
                        format!("{}: the answer broke off after {received} bytes", req.what),
                        e,
                    ),
                    None,
                ));
            }
        };
        Stats::add(&link.stats.bytes, chunk.len() as u64);
        received += chunk.len() as u64;
        if let Err(slow) = pace.record(chunk.len() as u64, Instant::now()) {
            return Err(Failure::Retry(
                FetchError::unavailable(format!("{}: {slow}", req.what)),
                None,
            ));
        }
        if received > req.limit {
            return Err(too_large(req));
        }
        sink.write(&chunk).map_err(|e| spool_error(req, e))?;
    }
    Ok(sink.finish(req.expected, received))
}

/// The body must hash to the digest that named it (a damaged answer may heal).
fn check_expected(expected: Option<&Digest>, actual: Option<&Digest>) -> Result<(), Failure> {
    if let (Some(expected), Some(actual)) = (expected, actual)
        && actual != expected
    {
        return Err(Failure::Retry(
            FetchError::DigestMismatch {
                expected: expected.to_string(),
                actual: actual.to_string(),
            },
            None,
        ));
    }
    Ok(())
}

/// The body must hash to the registry's `Docker-Content-Digest`, when it sends one. The
/// header is redacted of `creds` only for the error that quotes it (a digest holds no secret;
/// redacting every answer's header was 1% of a batch's instructions).
fn check_header_digest(
    claimed: &str,
    received: &Received,
    creds: Option<&Credentials>,
) -> Result<(), Failure> {
    let bytes = &received.bytes;
    let mismatch = match &received.actual {
        // The usual answer: the header names what the body hashed to while it was read
        // (compared as text, nothing parsed or copied).
        Some(a) if *a == *claimed => None,
        _ => match claimed.parse::<Digest>() {
            Ok(d) => match &received.actual {
                Some(a) if a.algorithm() == d.algorithm() => (*a != d).then(|| a.clone()),
                // A spooled body was hashed with the expected digest's algorithm only.
                _ if received.file.is_some() => None,
                _ => (!d.matches(bytes)).then(|| Digest::compute(d.algorithm(), bytes)),
            },
            Err(_) => Some(
                received
                    .actual
                    .clone()
                    .unwrap_or_else(|| Digest::sha256(bytes)),
            ),
        },
    };
    match mismatch {
        None => Ok(()),
        Some(actual) => Err(Failure::Retry(
            FetchError::DigestMismatch {
                expected: format!(
                    "{} (the registry's Docker-Content-Digest)",
                    redact(claimed, creds).chars().take(150).collect::<String>()
                ),
                actual: actual.to_string(),
            },
            None,
        )),
    }
}

/// A manifest answer must say it is one (or plain JSON, or nothing).
fn check_manifest_type(req: &Request<'_>, content_type: Option<&str>) -> Result<(), Failure> {
    if let Some(ct) = content_type
        && !ct.is_empty()
        && ct != "application/json"
        && !ACCEPTED_MANIFEST_TYPES.contains(&ct)
    {
        return Err(Failure::Retry(
            FetchError::unavailable(format!(
                "{}: the registry answered with Content-Type '{}', which is not a manifest type",
                req.what,
                redact(ct, req.credentials())
                    .chars()
                    .take(100)
                    .collect::<String>()
            )),
            None,
        ));
    }
    Ok(())
}

/// A body arriving slower than [`MIN_RATE`] over a whole window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TooSlow {
    bytes: u64,
    over: Duration,
}

impl std::fmt::Display for TooSlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the answer trickled in: {} bytes in {:.1}s, below the minimum of {MIN_RATE} bytes/s \
             over --request-timeout",
            self.bytes,
            self.over.as_secs_f64()
        )
    }
}

/// Watches a body's rate: each window of the request timeout must bring at least
/// [`MIN_RATE`] bytes per second on average. A body that ends within its first window is
/// never judged (small manifests arrive in one piece).
pub(super) struct Pace {
    window: Duration,
    started: Instant,
    bytes: u64,
}

impl Pace {
    pub(super) fn new(window: Duration, now: Instant) -> Pace {
        Pace {
            window,
            started: now,
            bytes: 0,
        }
    }

    /// Counts `n` bytes received at `now`; once a window has passed, judges it and starts
    /// the next.
    pub(super) fn record(&mut self, n: u64, now: Instant) -> Result<(), TooSlow> {
        self.bytes += n;
        let over = now.saturating_duration_since(self.started);
        if over < self.window {
            return Ok(());
        }
        if (self.bytes as f64) < MIN_RATE as f64 * over.as_secs_f64() {
            return Err(TooSlow {
                bytes: self.bytes,
                over,
            });
        }
        self.started = now;
        self.bytes = 0;
        Ok(())
    }
}

/// Reads at most [`MAX_SMALL_BODY`] bytes of an answer (error bodies, tokens) within
/// `timeout` in all (a trickling error body is cut off, not waited for).
pub(super) async fn read_small(mut resp: Response, timeout: Duration) -> Vec<u8> {
    let mut out = Vec::new();
    let read = async {
        while let Ok(Some(chunk)) = resp.chunk().await {
            out.extend_from_slice(&chunk);
            if out.len() as u64 >= MAX_SMALL_BODY {
                out.truncate(MAX_SMALL_BODY as usize);
                break;
            }
        }
    };
    let _ = tokio::time::timeout(timeout, read).await;
    out
}

/// `: detail`, or nothing when there is no detail.
pub(super) fn colon(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

/// A short, printable summary of a registry or token-service error body, with every form of
/// `creds` (and any `Authorization` value the server echoed) redacted: the distribution error
/// envelope's `code: message` pairs when it is one, else the first 200 characters of text.
pub(super) fn summarize_error_body(body: &[u8], creds: Option<&Credentials>) -> String {
    redact(&summarize(body), creds)
}

fn summarize(body: &[u8]) -> String {
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
    // Redacted before it is cut, so a secret cut in half is still found.
    redact(&String::from_utf8_lossy(body), None)
        .chars()
        .filter(|c| !c.is_control())
        .take(200)
        .collect()
}

/// `text` (from a registry, a token service, a header) without any credential: the password
/// or identity token of `creds` in plain, percent-encoded and base64 (`user:password`, as in
/// a Basic header) forms, then what [`crate::secret::scrub`] takes out (the value of any
/// `Basic`/`Bearer` authorization it quotes, the query of any URL, known secret parameters).
pub(super) fn redact(text: &str, creds: Option<&Credentials>) -> String {
    let mut out = text.to_string();
    if let Some(c) = creds.filter(|c| !c.password.is_empty()) {
        let mut forms = secret_forms(c);
        // Longest first, so a form containing another is replaced whole.
        forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
        for form in forms.iter().filter(|f| !f.is_empty()) {
            out = out.replace(form.as_str(), crate::secret::REDACTED);
        }
    }
    crate::secret::scrub(&out)
}

/// The forms a secret takes on the wire.
fn secret_forms(c: &Credentials) -> Vec<String> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE};
    let pair = format!("{}:{}", c.username, c.password);
    let mut forms = vec![c.password.clone(), percent_encoded(&c.password)];
    for encoded in [STANDARD.encode(&pair), URL_SAFE.encode(&pair)] {
        forms.push(encoded.trim_end_matches('=').to_string());
        forms.push(encoded);
    }
    forms
}

/// `s` as a form or query value encodes it.
fn percent_encoded(s: &str) -> String {
    let mut url = url::Url::parse("http://x.invalid/").expect("a constant URL");
    url.query_pairs_mut().append_pair("v", s);
    url.query()
        .unwrap_or("")
        .trim_start_matches("v=")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::Algorithm;
    use crate::engine::allocs::allocations;
    use crate::secret::REDACTED;

    #[test]
    fn error_bodies() {
        assert_eq!(
            summarize_error_body(
                br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown","detail":{}}]}"#,
                None
            ),
            "MANIFEST_UNKNOWN: manifest unknown"
        );
        assert_eq!(summarize_error_body(b"oops\n", None), "oops");
        assert_eq!(
            summarize_error_body(&[0xff; 300], None).chars().count(),
            200
        );
    }

    #[test]
    fn every_form_of_a_credential_is_redacted() {
        use base64::Engine as _;
        let creds = Credentials {
            username: "alice".into(),
            password: "s3cret+pw/=".into(),
        };
        let b64 = base64::engine::general_purpose::STANDARD.encode("alice:s3cret+pw/=");
        let cases = [
            format!("you sent Authorization: Basic {b64}"),
            format!("you sent authorization: basic {b64}"),
            format!("credentials {b64} refused"),
            "password s3cret+pw/= is wrong".to_string(),
            "refresh_token=s3cret%2Bpw%2F%3D&client_id=imgcheck".to_string(),
            "token Bearer eyJhbGciOi.eyJzdWIi.c2ln rejected".to_string(),
            format!(r#"{{"errors":[{{"code":"DENIED","message":"Basic {b64}"}}]}}"#),
        ];
        for text in cases {
            let out = summarize_error_body(text.as_bytes(), Some(&creds));
            for secret in ["s3cret", b64.trim_end_matches('='), "eyJ", "%2Bpw"] {
                assert!(!out.contains(secret), "{text} -> {out}");
            }
            assert!(out.contains(REDACTED), "{text} -> {out}");
        }
        // Without credentials, echoed headers are still cut out, and long bodies are
        // redacted before they are shortened.
        let long = format!("{}Basic {b64}", "x".repeat(190));
        let out = summarize_error_body(long.as_bytes(), None);
        assert!(!out.contains(&b64[..4]), "{out}");
        for kept in [
            "Basic",
            "Basic authentication required",
            r#"Bearer realm="https://auth.example/token",service="x""#,
            "ünïcode Bearer x",
        ] {
            assert_eq!(redact(kept, None), kept);
        }
        assert_eq!(
            redact("ünïcode BEARER Zm9vOmJhcg== end", None),
            "ünïcode BEARER <redacted> end"
        );
    }

    /// The registry's `Docker-Content-Digest` must name the body; what the error quotes of
    /// it is redacted.
    #[test]
    fn the_header_digest_is_checked_and_quoted_redacted() {
        let creds = Credentials {
            username: "alice".into(),
            password: "s3cret".into(),
        };
        let body = b"{}".to_vec();
        let right = Digest::sha256(&body);
        let other = Digest::sha256(b"other");
        let memory = |actual: Option<Digest>| Received {
            bytes: body.clone(),
            actual,
            file: None,
        };
        // (header, what the body hashed to while read, refused, the error's text)
        let rows: [(String, Option<Digest>, Option<&str>); 6] = [
            (right.to_string(), Some(right.clone()), None),
            (right.to_string(), None, None),
            (other.to_string(), Some(right.clone()), Some(other.hex())),
            (other.to_string(), None, Some(other.hex())),
            ("sha256:s3cret".into(), None, Some(REDACTED)),
            (
                "not a digest s3cret".into(),
                Some(right.clone()),
                Some(REDACTED),
            ),
        ];
        for (header, actual, refused) in rows {
            let got = check_header_digest(&header, &memory(actual), Some(&creds));
            match (refused, got) {
                (None, Ok(())) => {}
                (
                    Some(text),
                    Err(Failure::Retry(FetchError::DigestMismatch { expected, actual }, _)),
                ) => {
                    assert!(expected.contains(text), "{header}: {expected}");
                    assert!(!expected.contains("s3cret"), "{header}: {expected}");
                    assert_eq!(actual, right.to_string(), "{header}");
                }
                (_, Ok(())) => panic!("{header}: accepted"),
                (_, Err(Failure::Retry(e, _) | Failure::Fatal(e))) => panic!("{header}: {e}"),
            }
        }
    }

    /// Issue 24: a header that names what the body hashed to while read is accepted without
    /// parsing it (no allocation); the refusals above are unchanged.
    #[test]
    fn a_matching_header_digest_is_checked_without_allocating() {
        for body in [&b"{}"[..], b"", &[7u8; 3000]] {
            for algorithm in [Algorithm::Sha256, Algorithm::Sha512] {
                let actual = Digest::compute(algorithm, body);
                let header = actual.to_string();
                let received = Received {
                    bytes: body.to_vec(),
                    actual: Some(actual),
                    file: None,
                };
                let (got, n) =
                    allocations(|| check_header_digest(&header, &received, None).is_ok());
                assert!(got, "{header}");
                assert_eq!(n, 0, "{n} allocations to check {header}");
            }
        }
    }

    /// Issue 24: an answer's headers are read where it keeps them. Reading a config blob
    /// allocates what reading the body needs (its buffer, its digest) and no copy of a
    /// header; a manifest's accepted media type is its one copy more.
    #[test]
    fn a_body_is_read_without_copying_its_headers() {
        use super::super::options::ClientOptions;
        use super::super::request::Access;
        use super::super::wire::Response;
        use crate::manifest::OCI_MANIFEST;
        use crate::reference::ImageRef;
        let link = Link::new(&ClientOptions::default());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let ImageRef::Registry(reference) = "q.io/org/repo:v1".parse().unwrap() else {
            unreachable!("a registry reference")
        };
        let access = Access {
            reference,
            creds: Ok(None),
        };
        let text =
            r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"}"#;
        let digest = Digest::sha256(text.as_bytes());
        let (length, named) = (text.len().to_string(), digest.to_string());
        let mut counts = Vec::new();
        for (kind, content_type) in [
            (Kind::Blob, "application/octet-stream"),
            (Kind::Manifest, OCI_MANIFEST),
            (
                Kind::Manifest,
                "application/vnd.oci.image.manifest.v1+json; charset=utf-8",
            ),
        ] {
            let req = access.by_digest(kind, &digest, 1 << 20);
            let answer = || {
                let heads = [
                    ("content-type", content_type),
                    ("content-length", length.as_str()),
                    ("docker-content-digest", named.as_str()),
                ];
                Response::fixed(200, &heads, text)
            };
            // The runtime's timer is set up by the first read.
            rt.block_on(read_body(&link, &req, answer())).ok().unwrap();
            let resp = answer();
            let (read, n) = allocations(|| rt.block_on(read_body(&link, &req, resp)));
            let read = read.ok().expect("a checked body");
            assert_eq!(read.bytes, text.as_bytes());
            let kept = (kind == Kind::Manifest).then(|| OCI_MANIFEST.to_string());
            assert_eq!(read.media_type, kept, "{content_type}");
            counts.push(n);
        }
        assert_eq!(
            counts,
            [2, 3, 3],
            "allocations to read a blob, then a manifest"
        );
    }

    #[test]
    fn a_trickle_is_too_slow_once_a_window_has_passed() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let window = s(10);
        // A fast body, then one that stops being fast.
        let mut pace = Pace::new(window, t0);
        assert_eq!(pace.record(100, t0 + s(1)), Ok(()));
        assert_eq!(pace.record(20_000, t0 + s(10)), Ok(()));
        assert_eq!(pace.record(11 * 1024, t0 + s(20)), Ok(()));
        let slow = pace.record(1, t0 + s(31)).unwrap_err();
        assert_eq!(slow.bytes, 1);
        assert!(slow.to_string().contains("below the minimum"), "{slow}");
        // One byte a second: judged at the first piece after the window.
        let mut pace = Pace::new(window, t0);
        for i in 1..10 {
            assert_eq!(pace.record(1, t0 + s(i)), Ok(()));
        }
        assert!(pace.record(1, t0 + s(10)).is_err());
        // A body that ends within its first window is never judged.
        let mut pace = Pace::new(window, t0);
        assert_eq!(pace.record(1, t0 + s(9)), Ok(()));
    }
}
