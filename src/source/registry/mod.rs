//! A registry speaking the OCI distribution API, read and written through our own small
//! client on `reqwest` (docs/decisions.md says why not oci-client).
//!
//! One job per file:
//! - `options`: how to reach registries, and the run's request counters;
//! - `ping`: which registries speak plain HTTP (probed once) and which HTTPS;
//! - `tls`: HTTP clients per host and scheme, with certs.d / `--cert-dir` TLS files;
//! - `request`: one GET (`/v2/<repo>/manifests/<ref>` with every manifest media type in
//!   `Accept`, `/v2/<repo>/blobs/<digest>`), redirects followed by hand without the
//!   registry's `Authorization` leaving its origin, and what a non-200 answer means;
//! - `retry`: attempts within request slots, the per-request timeout and the overall
//!   deadline; exponential backoff with jitter (or `Retry-After`) for connection errors,
//!   timeouts, 408/429/5xx, broken-off bodies and bodies that do not hash to their digest,
//!   never for answers that cannot heal; every retry counted and told as a `tracing` event;
//! - `challenge`: `WWW-Authenticate` challenges, Basic or Bearer;
//! - `token`: bearer tokens, cached, batched over the run's repositories, fetched;
//! - `body`: bodies read under their size cap (refused before they are buffered) and a
//!   minimum rate, checked against the digests that name them; server text with every form
//!   of a credential redacted;
//! - `stream`: blobs handed on piece by piece (`--deep`), resumed when they break off;
//! - `cache`: manifests and configs fetched once per (repository, digest);
//! - `upload`: one write request (authenticated like a read, with a `pull,push` token),
//!   what a write's refusal means, one attempt at a blob upload (POST, PATCH, PUT);
//! - `writes`: the writes [`crate::assemble`] makes (mount, upload, manifest PUT), each retried
//!   like a read.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::Semaphore;

use super::{BlobFile, BlobStream, Detail, FetchError, Fetched, Source};
use crate::auth::{AuthError, AuthStore, Credentials};
use crate::digest::Digest;
use crate::manifest::MAX_MANIFEST_BYTES;
use crate::reference::RegistryRef;

mod body;
mod cache;
mod challenge;
mod options;
mod ping;
mod request;
mod retry;
mod stream;
mod tls;
mod token;
mod upload;
mod writes;

#[cfg(test)]
mod tests;

pub use options::{ClientOptions, Stats};

use challenge::Challenge;
use request::Kind;

/// One client shared by every reference of a run: connections and tokens are reused,
/// requests are bounded by a semaphore, and manifests/configs are fetched once per
/// (repository, digest) — existence in one repository proves nothing about another.
pub struct RegistryClient {
    auth: AuthStore,
    options: ClientOptions,
    /// Registries that speak plain HTTP; every other one is HTTPS.
    plain_http: HashSet<String>,
    deadline: Option<Instant>,
    http: tls::HttpClients,
    /// The last challenge of each registry's API host.
    challenges: Mutex<HashMap<String, Challenge>>,
    tokens: token::Tokens,
    slots: Semaphore,
    cache: cache::FetchCache,
    stats: Stats,
}

/// Locks `m`, whether or not another holder panicked (the maps stay consistent).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl RegistryClient {
    /// Builds the client. `registries` are the hosts this run will contact: loopback hosts,
    /// and every host when `tls_verify` is off, are probed once for plain HTTP.
    pub async fn new(
        options: &ClientOptions,
        auth: AuthStore,
        registries: &[RegistryRef],
    ) -> RegistryClient {
        let deadline = options.deadline.map(|d| Instant::now() + d);
        RegistryClient::until(options, auth, registries, deadline).await
    }

    /// Builds the client with the run's overall `deadline` already set (a second client of
    /// the same run keeps the first one's: see [`crate::session::Session::successor`]).
    pub(crate) async fn until(
        options: &ClientOptions,
        auth: AuthStore,
        registries: &[RegistryRef],
        deadline: Option<Instant>,
    ) -> RegistryClient {
        let mut client = RegistryClient {
            auth,
            options: options.clone(),
            plain_http: HashSet::new(),
            deadline,
            http: tls::HttpClients::new(options),
            challenges: Mutex::new(HashMap::new()),
            tokens: token::Tokens::new(registries),
            slots: Semaphore::new(options.max_requests.max(1)),
            cache: cache::FetchCache::default(),
            stats: Stats::default(),
        };
        let plain_http = client.plain_http_hosts(registries).await;
        client.plain_http = plain_http.into_iter().collect();
        client
    }

    /// What the run has fetched so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// A source for one reference.
    pub fn source(self: &Arc<Self>, reference: &RegistryRef) -> RegistrySource {
        RegistrySource {
            client: Arc::clone(self),
            reference: reference.clone(),
            creds: self.auth.lookup(reference),
        }
    }
}

/// Serves one registry reference. Holds the reference's credentials; never printed.
pub struct RegistrySource {
    client: Arc<RegistryClient>,
    reference: RegistryRef,
    /// The credentials for this repository, or why they could not be looked up.
    creds: Result<Option<Credentials>, AuthError>,
}

impl RegistrySource {
    /// The credentials for this repository; a lookup that failed fails every request.
    fn credentials(&self) -> Result<Option<&Credentials>, FetchError> {
        match &self.creds {
            Ok(c) => Ok(c.as_ref()),
            // The credentials error's own message, then its cause.
            Err(e) => Err(FetchError::Unavailable(Detail::new(
                e.to_string(),
                e.cause.clone(),
            ))),
        }
    }

    /// The blob `digest` spooled to a temporary file, once it has hashed to `digest`: any
    /// size in bounded memory (retried like any request; each attempt starts a new file).
    pub async fn blob_file(&self, digest: &Digest, limit: u64) -> Result<BlobFile, FetchError> {
        let req = request::Request {
            spool: true,
            ..self.by_digest(Kind::Blob, digest, limit)
        };
        let body = self.get(req).await?;
        let (path, size) = body.file.ok_or_else(|| {
            FetchError::unavailable(format!("blob {digest}: the body was not spooled"))
        })?;
        Ok(BlobFile::new(path.to_path_buf(), size, Some(path)))
    }

    /// Does the repository hold the blob `digest`? A `HEAD` on `/v2/<repo>/blobs/<digest>`
    /// (retried like any request): `Ok(false)` on 404, an error when the registry cannot
    /// answer.
    pub async fn blob_exists(&self, digest: &Digest) -> Result<bool, FetchError> {
        let what = format!("blob {digest}");
        let req = self.request(Kind::BlobHead, digest.to_string(), None, 0, what);
        match self.get(req).await {
            Ok(_) => Ok(true),
            Err(FetchError::NotFound(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

impl Source for RegistrySource {
    fn name(&self) -> String {
        self.reference.to_string()
    }

    fn pinned(&self) -> Option<Digest> {
        self.reference.digest.clone()
    }

    async fn top(&self) -> Result<Fetched, FetchError> {
        let req = self.request(
            Kind::Manifest,
            self.reference.reference_part(),
            self.reference.digest.as_ref(),
            MAX_MANIFEST_BYTES,
            format!("manifest {}", self.reference),
        );
        let body = self.get(req).await?;
        Ok(Fetched {
            bytes: body.bytes,
            media_type: body.media_type,
            claimed_digest: self.reference.digest.clone(),
            claimed_size: None,
        })
    }

    async fn manifest(&self, digest: &Digest, limit: u64) -> Result<Vec<u8>, FetchError> {
        let fetch = async {
            let req = self.by_digest(Kind::Manifest, digest, limit);
            self.get(req).await.map(|b| b.bytes)
        };
        self.client.cached(&self.reference, digest, fetch).await
    }

    async fn blob(&self, digest: &Digest, limit: u64) -> Result<Vec<u8>, FetchError> {
        let fetch = async {
            let req = self.by_digest(Kind::Blob, digest, limit);
            self.get(req).await.map(|b| b.bytes)
        };
        // Configs are shared between tags of one repository; layers (--deep) are large and
        // read once, so only small blobs go through the cache.
        if limit <= crate::manifest::MAX_CONFIG_BYTES {
            self.client.cached(&self.reference, digest, fetch).await
        } else {
            fetch.await
        }
    }

    async fn blob_stream(&self, digest: &Digest, limit: u64) -> Result<BlobStream, FetchError> {
        self.stream_blob(digest, limit).await
    }
}
