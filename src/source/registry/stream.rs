//! Blobs read as streams (`verify --deep` reads layers this way, in bounded memory): the
//! answer is got like any request (a request slot, authentication, redirects, retries), then
//! its body is handed on piece by piece, each piece within the request timeout and the run's
//! deadline. A body that breaks off is asked for again (within `--retries`) and the bytes
//! already handed on are skipped. The reader hashes the pieces: a body that does not hash to
//! its digest is found there, whichever attempts its bytes came from.

use std::sync::Arc;

use bytes::Bytes;
use futures::Stream;

use super::failure::{Failure, backoff, error_chain, gave_up};
use super::link::Link;
use super::options::Stats;
use super::request::{Access, Kind, Request};
use super::retry::Requests;
use super::wire::Response;
use crate::digest::Digest;
use crate::source::{BlobStream, FetchError};

/// The blob `digest` of `access`'s repository as a stream of at most `limit` bytes.
pub(super) async fn stream_blob(
    requests: &Arc<Requests>,
    access: &Access,
    digest: &Digest,
    limit: u64,
) -> Result<BlobStream, FetchError> {
    let creds = access.credentials()?.cloned();
    let mut reader = BodyReader {
        requests: Arc::clone(requests),
        access: Access {
            reference: access.reference.clone(),
            creds: Ok(creds),
        },
        digest: digest.clone(),
        limit,
        response: None,
        received: 0,
        attempt: 0,
    };
    // The first answer is awaited here, so that a missing blob or a refusal is an error of
    // this call rather than of the stream.
    reader.response = Some(reader.open().await?);
    Ok(BlobStream {
        chunks: Box::pin(reader.into_stream()),
        deadline: requests.link().deadline,
    })
}

/// Reads one blob's body, asking again when it breaks off.
struct BodyReader {
    requests: Arc<Requests>,
    access: Access,
    digest: Digest,
    limit: u64,
    /// The answer being read; `None` once it broke off.
    response: Option<Response>,
    /// Bytes handed on so far.
    received: u64,
    /// Retries so far.
    attempt: u32,
}

impl BodyReader {
    fn link(&self) -> &Link {
        self.requests.link()
    }

    fn what(&self) -> String {
        format!("blob {}", self.digest)
    }

    /// Asks for the blob (with the request machinery's own retries) and checks what the
    /// answer's headers claim.
    async fn open(&self) -> Result<Response, FetchError> {
        let req = Request {
            stream: true,
            ..self.access.by_digest(Kind::Blob, &self.digest, self.limit)
        };
        let body = self.requests.fetch(&req).await?;
        let response = body.response.ok_or_else(|| {
            FetchError::unavailable(format!("{}: the answer had no body to stream", self.what()))
        })?;
        if response.content_length().is_some_and(|n| n > self.limit) {
            return Err(FetchError::TooLarge {
                what: self.what(),
                limit: self.limit,
            });
        }
        let claimed = response
            .headers()
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<Digest>().ok());
        if let Some(claimed) = claimed
            && claimed.algorithm() == self.digest.algorithm()
            && claimed != self.digest
        {
            return Err(FetchError::DigestMismatch {
                expected: self.digest.to_string(),
                actual: format!("{claimed} (the registry's Docker-Content-Digest)"),
            });
        }
        Ok(response)
    }

    fn into_stream(self) -> impl Stream<Item = Result<Bytes, FetchError>> + Send + 'static {
        futures::stream::unfold(Some(self), |state| async move {
            let mut reader = state?;
            match reader.next().await {
                Ok(Some(chunk)) => Some((Ok(chunk), Some(reader))),
                Ok(None) => None,
                Err(e) => Some((Err(e), None)),
            }
        })
    }

    /// The next piece of the body (the client's own buffer, not a copy), `None` at its end.
    async fn next(&mut self) -> Result<Option<Bytes>, FetchError> {
        let mut skip = 0u64;
        loop {
            if self.response.is_none() {
                self.response = Some(self.open().await?);
                skip = self.received;
            }
            let chunk = match self.piece().await {
                Ok(chunk) => chunk,
                Err(Failure::Retry(e, _)) if self.attempt < self.link().options.retries => {
                    self.retry_after(e).await?;
                    continue;
                }
                Err(Failure::Retry(e, _) | Failure::Fatal(e)) => {
                    return Err(gave_up(e, self.attempt + 1));
                }
            };
            let Some(chunk) = chunk else {
                return Ok(None);
            };
            // After a retry, the bytes already handed on come again first.
            let fresh = chunk.slice(skip.min(chunk.len() as u64) as usize..);
            skip -= (chunk.len() - fresh.len()) as u64;
            if fresh.is_empty() {
                continue;
            }
            self.received += fresh.len() as u64;
            if self.received > self.limit {
                return Err(FetchError::TooLarge {
                    what: self.what(),
                    limit: self.limit,
                });
            }
            return Ok(Some(fresh));
        }
    }

    /// Waits before asking again, unless the deadline would pass first.
    async fn retry_after(&mut self, err: FetchError) -> Result<(), FetchError> {
        let link = self.link();
        let delay = backoff(link.options.backoff, self.attempt);
        if link.remaining().is_some_and(|left| left <= delay) {
            return Err(gave_up(err, self.attempt + 1));
        }
        Stats::count(&link.stats.retries);
        let retries = link.options.retries;
        self.attempt += 1;
        tracing::info!(
            "retry {}/{retries} in {:.1}s: {}",
            self.attempt,
            delay.as_secs_f64(),
            error_chain(&err)
        );
        tokio::time::sleep(delay).await;
        self.response = None;
        Ok(())
    }

    /// One piece of the current answer, within the request timeout and the deadline.
    async fn piece(&mut self) -> Result<Option<Bytes>, Failure> {
        let what = self.what();
        let (link, response) = (self.requests.link(), &mut self.response);
        let Some(response) = response.as_mut() else {
            return Ok(None);
        };
        let step = link.within(&what, response.chunk());
        let got = match link.remaining() {
            None => step.await?,
            Some(left) => tokio::time::timeout(left, step)
                .await
                .map_err(|_| Failure::Fatal(link.deadline_error(&what)))??,
        };
        match got {
            Ok(Some(chunk)) => {
                Stats::add(&link.stats.bytes, chunk.len() as u64);
                Ok(Some(chunk))
            }
            Ok(None) => Ok(None),
            Err(e) => Err(Failure::Retry(
                FetchError::unavailable_by(
                    format!("{what}: the answer broke off after {} bytes", self.received),
                    e,
                ),
                None,
            )),
        }
    }
}
