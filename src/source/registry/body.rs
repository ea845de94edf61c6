//! Reading answers: a 200 body under the request's size cap (refused before it is
//! buffered), into memory or spooled to a temporary file, then checked against the digest
//! that named it, the registry's `Docker-Content-Digest` and a manifest's Content-Type;
//! short error and token bodies; summaries of registry error bodies.

use std::time::Duration;

use reqwest::header::CONTENT_TYPE;

use super::request::{Kind, Request};
use super::retry::Failure;
use super::{RegistryClient, Stats};
use crate::digest::{Digest, Hasher};
use crate::manifest::ACCEPTED_MANIFEST_TYPES;
use crate::source::FetchError;

/// Largest token-service answer or error body read.
const MAX_SMALL_BODY: u64 = 64 * 1024;

/// A checked body.
pub(super) struct Body {
    /// The bytes; empty when spooled.
    pub(super) bytes: Vec<u8>,
    /// The Content-Type, when it is a manifest media type.
    pub(super) media_type: Option<String>,
    /// The spooled body and its length, for `spool` requests.
    pub(super) file: Option<(tempfile::TempPath, u64)>,
    /// The unread answer, for `stream` requests.
    pub(super) response: Option<reqwest::Response>,
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
    Failure::Fatal(FetchError::Unavailable(format!(
        "{}: cannot write a temporary file: {e}",
        req.what
    )))
}

fn too_large(req: &Request<'_>) -> Failure {
    Failure::Fatal(FetchError::TooLarge {
        what: req.what.clone(),
        limit: req.limit,
    })
}

fn header(resp: &reqwest::Response, name: impl reqwest::header::AsHeaderName) -> Option<&str> {
    resp.headers().get(name).and_then(|v| v.to_str().ok())
}

impl RegistryClient {
    /// Reads a 200 body under the request's cap, then checks it against the digest that
    /// named it and the registry's `Docker-Content-Digest`, and a manifest's Content-Type.
    pub(super) async fn read_body(
        &self,
        req: &Request<'_>,
        resp: reqwest::Response,
    ) -> Result<Body, Failure> {
        if resp.content_length().is_some_and(|n| n > req.limit) {
            return Err(too_large(req));
        }
        let content_type = header(&resp, CONTENT_TYPE)
            .map(|v| v.split(';').next().unwrap_or("").trim().to_string());
        let header_digest = header(&resp, "docker-content-digest").map(str::to_string);
        let sink = Sink::open(req, resp.content_length())?;
        let received = self.stream(req, resp, sink).await?;
        check_expected(req.expected, received.actual.as_ref())?;
        if let Some(claimed) = &header_digest {
            check_header_digest(claimed, &received)?;
        }
        if req.kind == Kind::Manifest {
            check_manifest_type(req, content_type.as_deref())?;
        }
        let media_type = content_type.filter(|ct| ACCEPTED_MANIFEST_TYPES.contains(&ct.as_str()));
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
        &self,
        req: &Request<'_>,
        mut resp: reqwest::Response,
        mut sink: Sink,
    ) -> Result<Received, Failure> {
        let mut received: u64 = 0;
        loop {
            let chunk = match self.within(&req.what, resp.chunk()).await? {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => {
                    return Err(Failure::Retry(
                        FetchError::Unavailable(format!(
                            "{}: the answer broke off after {received} bytes: {}",
                            req.what,
                            super::request::error_chain(&e)
                        )),
                        None,
                    ));
                }
            };
            Stats::add(&self.stats.bytes, chunk.len() as u64);
            received += chunk.len() as u64;
            if received > req.limit {
                return Err(too_large(req));
            }
            sink.write(&chunk).map_err(|e| spool_error(req, e))?;
        }
        Ok(sink.finish(req.expected, received))
    }
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

/// The body must hash to the registry's `Docker-Content-Digest`, when it sends one.
fn check_header_digest(claimed: &str, received: &Received) -> Result<(), Failure> {
    let bytes = &received.bytes;
    let mismatch = match claimed.parse::<Digest>() {
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
    };
    match mismatch {
        None => Ok(()),
        Some(actual) => Err(Failure::Retry(
            FetchError::DigestMismatch {
                expected: format!(
                    "{} (the registry's Docker-Content-Digest)",
                    claimed.chars().take(150).collect::<String>()
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
            FetchError::Unavailable(format!(
                "{}: the registry answered with Content-Type '{}', which is not a manifest type",
                req.what,
                ct.chars().take(100).collect::<String>()
            )),
            None,
        ));
    }
    Ok(())
}

/// Reads at most [`MAX_SMALL_BODY`] bytes of an answer (error bodies, tokens), waiting at
/// most `timeout` for each piece.
pub(super) async fn read_small(mut resp: reqwest::Response, timeout: Duration) -> Vec<u8> {
    let mut out = Vec::new();
    while let Ok(Ok(Some(chunk))) = tokio::time::timeout(timeout, resp.chunk()).await {
        out.extend_from_slice(&chunk);
        if out.len() as u64 >= MAX_SMALL_BODY {
            out.truncate(MAX_SMALL_BODY as usize);
            break;
        }
    }
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

/// A short, printable summary of a registry error body: the distribution error envelope's
/// `code: message` pairs when it is one, else the first 200 characters of text.
pub(super) fn summarize_error_body(body: &[u8]) -> String {
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
