//! One write request on the read path's machinery: the same HTTP clients, challenges and
//! tokens (asking for `pull,push`), per-step timeout and stats; what a write's refusal
//! means; and one attempt at a blob upload (POST, PATCH per chunk, PUT with the digest). A
//! step answered 429/5xx is sent again to the same location; any other fault ends the
//! attempt, and the next one starts from a new POST.

use http::header::{HeaderValue, LOCATION};
use http::{Method, StatusCode, Uri};
use tokio::io::AsyncReadExt;
use url::Url;

use super::attempt::origin_is_registry;
use super::body::{colon, read_small, summarize_error_body};
use super::failure::{Failure, gave_up, is_retryable_status, retry_after_of, transport_failure};
use super::options::Stats;
use super::request::{Access, Kind, Part, Payload, Request};
use super::retry::Requests;
use super::wire::Response;
use crate::auth::Credentials;
use crate::digest::Digest;
use crate::source::{BlobFile, FetchError};

/// Bytes per PATCH of an upload; each must be sent within the request timeout.
pub(super) const UPLOAD_CHUNK: usize = 8 * 1024 * 1024;

/// Writes to one repository: `access`'s, through `requests`.
pub(super) struct Writer<'a> {
    pub(super) requests: &'a Requests,
    pub(super) access: &'a Access,
}

impl Writer<'_> {
    /// `scheme://host/v2/<repo>/<rest>` of this repository.
    /// The registry's scheme is learned (probed) first, on its first use.
    pub(super) async fn api_url(&self, rest: &str) -> Result<Url, FetchError> {
        let r = &self.access.reference;
        let base = self.requests.sender.base_url(r).await;
        let url = format!("{base}/v2/{}/{rest}", r.repository);
        Url::parse(&url).map_err(|e| FetchError::bad_input_by(format!("{url}: bad URL"), e))
    }

    /// Sends one write and returns its 2xx answer, or what its refusal means.
    pub(super) async fn send_write(
        &self,
        url: &Url,
        payload: Payload,
        what: &str,
    ) -> Result<Response, Failure> {
        let resp = self.send_write_raw(url, payload, what).await?;
        if resp.status().is_success() {
            return Ok(resp);
        }
        let creds = self.access.credentials().ok().flatten();
        let timeout = self.requests.link().options.request_timeout;
        Err(write_refusal(what, resp, timeout, creds).await)
    }

    /// Sends one write of an upload session and returns its 2xx answer. A registry that
    /// answers with a status that may heal (429, 5xx) did not take the request, so it is
    /// sent again to the same location (the session is where it was); after the retries,
    /// that is final. Any other fault ends the attempt, to start over from the POST.
    async fn upload_step(
        &self,
        url: &Url,
        payload: &Payload,
        what: &str,
    ) -> Result<Response, Failure> {
        let mut attempts = 0;
        loop {
            let resp = self.send_write_raw(url, payload.clone(), what).await?;
            let status = resp.status();
            if status.is_success() {
                return Ok(resp);
            }
            let timeout = self.requests.link().options.request_timeout;
            let creds = self.access.credentials().ok().flatten();
            match write_refusal(what, resp, timeout, creds).await {
                Failure::Retry(e, after) if is_retryable_status(status.as_u16()) => {
                    attempts += 1;
                    if !self.requests.before_retry(attempts, after, &e).await {
                        return Err(Failure::Fatal(gave_up(e, attempts)));
                    }
                }
                other => return Err(other),
            }
        }
    }

    /// Sends one write and returns the answer, whatever its status. The registry's own
    /// origin gets the run's credentials (answering its challenge, with a `pull,push`
    /// token); an upload location elsewhere gets none. Counted in the stats.
    async fn send_write_raw(
        &self,
        url: &Url,
        payload: Payload,
        what: &str,
    ) -> Result<Response, Failure> {
        let url = &uri_of(url, what)?;
        let sender = &self.requests.sender;
        let link = &sender.link;
        Stats::count(&link.stats.write_requests);
        Stats::add(&link.stats.bytes_sent, payload.body.len() as u64);
        let resp = if origin_is_registry(url, &self.access.reference) {
            let req = Request {
                payload: Some(payload),
                ..self.access.request(
                    Kind::Blob,
                    Part::Text(String::new()),
                    None,
                    0,
                    what.to_string(),
                )
            };
            sender.send_authenticated(&req, url).await?
        } else {
            let http = link.http.for_url(url).map_err(Failure::Fatal)?;
            link.within(what, http.send(payload.build(url)))
                .await?
                .map_err(|e| transport_failure(what, e))?
        };
        Ok(resp)
    }

    /// One attempt at uploading `blob` as `digest`: start a session (POST), send the file
    /// in [`UPLOAD_CHUNK`] pieces (PATCH), commit with the digest (PUT), and check the
    /// digest the registry says it stored. Any fault ends the attempt; the next starts with
    /// a new session and reads the file again from its start.
    pub(super) async fn upload_attempt(
        &self,
        digest: &Digest,
        blob: &BlobFile,
        what: &str,
    ) -> Result<(), Failure> {
        let start = self
            .api_url("blobs/uploads/")
            .await
            .map_err(Failure::Fatal)?;
        let resp = self
            .upload_step(&start, &Payload::empty(Method::POST), what)
            .await?;
        let mut at = location(&resp, &start, what)?;
        let mut file = tokio::fs::File::open(&blob.path)
            .await
            .map_err(|e| local_file(what, e))?;
        let mut offset: u64 = 0;
        while offset < blob.size {
            let chunk = read_chunk(&mut file, what).await?;
            let end = offset + chunk.len() as u64 - 1;
            let range = HeaderValue::try_from(format!("{offset}-{end}"))
                .map_err(|e| Failure::Fatal(FetchError::unavailable_by(what, e)))?;
            let payload = Payload {
                range: Some(range),
                ..Payload::with_body(Method::PATCH, octet_stream(), chunk)
            };
            let resp = self.upload_step(&at, &payload, what).await?;
            at = location(&resp, &at, what)?;
            offset = end + 1;
        }
        at.query_pairs_mut()
            .append_pair("digest", &digest.to_string());
        let commit = Payload::with_body(Method::PUT, octet_stream(), bytes::Bytes::new());
        let resp = self.upload_step(&at, &commit, what).await?;
        check_stored_digest(&resp, digest, None)
    }
}

/// `url` as the client sends it: without user and password (an upload location is the
/// registry's; its query, the session's state, is kept).
fn uri_of(url: &Url, what: &str) -> Result<Uri, Failure> {
    let mut url = url.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.as_str()
        .parse()
        .map_err(|e| Failure::Fatal(FetchError::bad_input_by(format!("{what}: bad URL"), e)))
}

fn octet_stream() -> HeaderValue {
    HeaderValue::from_static("application/octet-stream")
}

fn local_file(what: &str, e: std::io::Error) -> Failure {
    Failure::Fatal(FetchError::unavailable_by(
        format!("{what}: cannot read the local copy"),
        e,
    ))
}

/// The next piece of the file (at most [`UPLOAD_CHUNK`] bytes; empty only at its end,
/// which comes too early: the file shrank).
async fn read_chunk(file: &mut tokio::fs::File, what: &str) -> Result<bytes::Bytes, Failure> {
    let mut buf = Vec::with_capacity(UPLOAD_CHUNK);
    let mut limited = file.take(UPLOAD_CHUNK as u64);
    limited
        .read_to_end(&mut buf)
        .await
        .map_err(|e| local_file(what, e))?;
    if buf.is_empty() {
        return Err(Failure::Fatal(FetchError::unavailable(format!(
            "{what}: the local copy is shorter than its size"
        ))));
    }
    Ok(buf.into())
}

/// Where an upload goes on: the answer's `Location`, resolved against `current`.
/// Distribution requires one; an answer without keeps the current location.
fn location(resp: &Response, current: &Url, what: &str) -> Result<Url, Failure> {
    let Some(value) = resp.headers().get(LOCATION) else {
        return Ok(current.clone());
    };
    value
        .to_str()
        .ok()
        .and_then(|l| current.join(l).ok())
        .ok_or_else(|| {
            Failure::Fatal(FetchError::unavailable(format!(
                "{what}: the registry answered with an unusable Location"
            )))
        })
}

/// The registry's `Docker-Content-Digest`, when it sends one, must name what was sent:
/// `digest` (a blob) or the hash of `bytes` (a manifest). A mismatch may heal (damaged in
/// transit), so it is worth another attempt.
pub(super) fn check_stored_digest(
    resp: &Response,
    digest: &Digest,
    bytes: Option<&[u8]>,
) -> Result<(), Failure> {
    let Some(claimed) = resp
        .headers()
        .get("docker-content-digest")
        .and_then(|v| v.to_str().ok())
    else {
        return Ok(());
    };
    let agrees = match (claimed.parse::<Digest>(), bytes) {
        (Ok(d), Some(bytes)) => d.matches(bytes),
        (Ok(d), None) => d == *digest,
        (Err(_), _) => false,
    };
    if agrees {
        return Ok(());
    }
    Err(Failure::Retry(
        FetchError::DigestMismatch {
            expected: digest.to_string(),
            actual: format!(
                "{} (the registry's Docker-Content-Digest after the write)",
                claimed.chars().take(150).collect::<String>()
            ),
        },
        None,
    ))
}

/// Registry error codes that mean "start the upload again": a session the registry lost
/// or refused, or bytes that arrived damaged.
const RESTART_CODES: [&str; 3] = [
    "BLOB_UPLOAD_UNKNOWN",
    "BLOB_UPLOAD_INVALID",
    "DIGEST_INVALID",
];

/// What a write's answer other than 2xx means: not allowed (for good), worth another
/// attempt (with its `Retry-After`), or refused for good.
async fn write_refusal(
    what: &str,
    resp: Response,
    timeout: std::time::Duration,
    creds: Option<&Credentials>,
) -> Failure {
    let status = resp.status();
    let retry_after = retry_after_of(&resp);
    let body = read_small(resp, timeout).await;
    let detail = summarize_error_body(&body, creds);
    let message = format!("{what} (HTTP {}{})", status.as_u16(), colon(&detail));
    match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            Failure::Fatal(FetchError::unavailable(format!(
                "{message}: not authorized to push; check --creds, --authfile, or log in with 'podman login'"
            )))
        }
        s if is_retryable_status(s.as_u16()) => {
            Failure::Retry(FetchError::unavailable(message), retry_after)
        }
        _ if RESTART_CODES.iter().any(|c| detail.contains(c)) => {
            Failure::Retry(FetchError::unavailable(message), None)
        }
        _ => Failure::Fatal(FetchError::unavailable(message)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, headers: &[(&str, &str)], body: &str) -> Response {
        Response::fixed(status, headers, body)
    }

    /// Status, headers, body, what the answer means.
    type Case = (
        u16,
        &'static [(&'static str, &'static str)],
        &'static str,
        &'static str,
    );

    #[tokio::test]
    async fn write_refusals() {
        let t = std::time::Duration::from_secs(1);
        let cases: [Case; 7] = [
            (503, &[], "", "retry"),
            (429, &[("retry-after", "3")], "", "retry after 3"),
            (
                404,
                &[],
                r#"{"errors":[{"code":"BLOB_UPLOAD_UNKNOWN","message":"x"}]}"#,
                "retry",
            ),
            (
                400,
                &[],
                r#"{"errors":[{"code":"DIGEST_INVALID","message":"x"}]}"#,
                "retry",
            ),
            (
                400,
                &[],
                r#"{"errors":[{"code":"MANIFEST_INVALID","message":"x"}]}"#,
                "fatal",
            ),
            (401, &[], "", "fatal: not authorized to push"),
            (
                404,
                &[],
                r#"{"errors":[{"code":"NAME_UNKNOWN","message":"x"}]}"#,
                "fatal",
            ),
        ];
        for (status, headers, body, want) in cases {
            let got = match write_refusal("w", answer(status, headers, body), t, None).await {
                Failure::Retry(_, Some(d)) => format!("retry after {}", d.as_secs()),
                Failure::Retry(_, None) => "retry".to_string(),
                Failure::Fatal(e) if e.to_string().contains("not authorized to push") => {
                    "fatal: not authorized to push".to_string()
                }
                Failure::Fatal(_) => "fatal".to_string(),
            };
            assert_eq!(got, want, "{status} {body}");
        }
    }

    #[test]
    fn stored_digests() {
        let bytes = b"{}";
        let d = Digest::sha256(bytes);
        let other = Digest::sha256(b"x").to_string();
        let with = |v: &str| answer(201, &[("docker-content-digest", v)], "");
        assert!(check_stored_digest(&answer(201, &[], ""), &d, None).is_ok());
        assert!(check_stored_digest(&with(&d.to_string()), &d, None).is_ok());
        assert!(check_stored_digest(&with(&d.to_string()), &d, Some(bytes)).is_ok());
        for bad in [other.as_str(), "sha256:zz", ""] {
            assert!(matches!(
                check_stored_digest(&with(bad), &d, None),
                Err(Failure::Retry(FetchError::DigestMismatch { .. }, None))
            ));
            assert!(check_stored_digest(&with(bad), &d, Some(bytes)).is_err());
        }
    }
}
