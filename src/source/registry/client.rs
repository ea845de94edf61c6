//! The top of the stack: one [`RegistryClient`] per run, and a [`RegistrySource`] per
//! reference that reads through it.

use std::sync::Arc;

use super::body::Body;
use super::cache::FetchCache;
use super::options::{ClientOptions, Stats};
use super::request::{Access, Kind, Part, Request};
use super::retry::Requests;
use super::stream::stream_blob;
use super::transport::Transport;
use super::upload::Writer;
use crate::auth::AuthStore;
use crate::digest::Digest;
use crate::manifest::{MAX_CONFIG_BYTES, MAX_MANIFEST_BYTES};
use crate::reference::RegistryRef;
use crate::source::{BlobFile, BlobStream, FetchError, Fetched, Source};

/// One client shared by every reference of a run: connections and tokens are reused,
/// requests are bounded by a semaphore, and manifests/configs are fetched once per
/// (repository, digest) — existence in one repository proves nothing about another.
/// Registries are learned as they are used: the first request to each tells its scheme.
pub struct RegistryClient {
    requests: Arc<Requests>,
    cache: FetchCache,
}

impl RegistryClient {
    /// Builds the client; the run's deadline (`--timeout`) counts from `clock_start` (or
    /// now). No registry is contacted until a request needs it: loopback hosts, and every
    /// host when `tls_verify` is off, may then speak plain HTTP (the first request tells).
    pub fn new(options: &ClientOptions, auth: AuthStore) -> RegistryClient {
        RegistryClient {
            requests: Arc::new(Requests::new(options, auth)),
            cache: FetchCache::default(),
        }
    }

    /// [`RegistryClient::new`], every request sent through `transport` instead of hyper-util's
    /// pooled client (a test's faults, or a caller's own HTTP stack): what it answers is read
    /// as a registry's answer; TLS files and proxies are its own business.
    pub fn with_transport(
        options: &ClientOptions,
        auth: AuthStore,
        transport: Arc<dyn Transport>,
    ) -> RegistryClient {
        let client = RegistryClient::new(options, auth);
        client.requests.link().http.bring(transport);
        client
    }

    /// Tells the client which references the run will read, as it learns them (a hint:
    /// one token request asks for up to 32 of the run's repositories on a registry).
    pub fn expect(&self, references: &[RegistryRef]) {
        self.requests.sender.auth.tokens.expect(references);
    }

    /// When the run's work must be over (`--timeout`), if it has a deadline: counted from
    /// the run's start, for layouts and local work as for requests.
    pub fn deadline(&self) -> Option<std::time::Instant> {
        self.requests.link().deadline
    }

    /// What the run has fetched so far.
    pub fn stats(&self) -> &Stats {
        &self.requests.link().stats
    }

    /// A source for one reference.
    pub fn source(self: &Arc<Self>, reference: &RegistryRef) -> RegistrySource {
        RegistrySource {
            client: Arc::clone(self),
            access: Access {
                reference: reference.clone(),
                creds: self.requests.sender.auth.store.lookup(reference),
            },
        }
    }
}

/// Serves one registry reference. Holds the reference's credentials; never printed.
pub struct RegistrySource {
    client: Arc<RegistryClient>,
    access: Access,
}

impl RegistrySource {
    /// The reference this source serves.
    pub(super) fn reference(&self) -> &RegistryRef {
        &self.access.reference
    }

    /// Writes to this repository, through the run's requests.
    pub(super) fn writer(&self) -> Writer<'_> {
        Writer {
            requests: &self.client.requests,
            access: &self.access,
        }
    }

    /// Sends `req` with retries and returns its checked body. The request's future (retries,
    /// authentication, redirects, the body read: several KiB) lives on the heap, so the
    /// futures of the walk that await it stay small: moved by value, they were a third of a
    /// batch's instructions in `memcpy` (docs/decisions.md).
    async fn get(&self, req: Request<'_>) -> Result<Body, FetchError> {
        Box::pin(self.client.requests.fetch(&req)).await
    }

    /// The blob `digest` spooled to a temporary file, once it has hashed to `digest`: any
    /// size in bounded memory (retried like any request; each attempt starts a new file).
    pub async fn blob_file(&self, digest: &Digest, limit: u64) -> Result<BlobFile, FetchError> {
        let req = Request {
            spool: true,
            ..self.access.by_digest(Kind::Blob, digest, limit)
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
        let req = self
            .access
            .request(Kind::BlobHead, Part::Digest(digest), None, 0, what);
        match self.get(req).await {
            Ok(_) => Ok(true),
            Err(FetchError::NotFound(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The OCI 1.1 referrers list of the manifest `digest` (`GET /v2/<repo>/referrers/<digest>`,
    /// an image index, read under the manifest cap), or `None` when the registry answers 404:
    /// no referrers API (Distribution 2.8), and the caller falls back to the referrers tag
    /// schema as cosign does.
    pub async fn referrers(&self, digest: &Digest) -> Result<Option<Vec<u8>>, FetchError> {
        let what = format!("referrers of {digest}");
        let req = self.access.request(
            Kind::Referrers,
            Part::Digest(digest),
            None,
            MAX_MANIFEST_BYTES,
            what,
        );
        match self.get(req).await {
            Ok(body) => Ok(Some(body.bytes)),
            Err(FetchError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Runs `fetch` once per (repository, digest) for the whole run.
    async fn cached<Fut: Future<Output = Result<Vec<u8>, FetchError>>>(
        &self,
        digest: &Digest,
        fetch: impl FnOnce() -> Fut,
    ) -> Result<Vec<u8>, FetchError> {
        let stats = self.client.stats();
        let reference = self.reference();
        self.client
            .cache
            .cached(stats, reference, digest, fetch)
            .await
    }
}

impl Source for RegistrySource {
    fn name(&self) -> String {
        self.reference().to_string()
    }

    fn pinned(&self) -> Option<Digest> {
        self.reference().digest.clone()
    }

    /// Every read by digest hashes its body as it arrives and refuses (retries) one that
    /// does not match (`body.rs`); the cache holds only checked bodies.
    fn checks_digests(&self) -> bool {
        true
    }

    async fn top(&self) -> Result<Fetched, FetchError> {
        let reference = self.reference();
        let req = self.access.request(
            Kind::Manifest,
            Part::Text(reference.reference_part()),
            reference.digest.as_ref(),
            MAX_MANIFEST_BYTES,
            format!("manifest {reference}"),
        );
        let body = self.get(req).await?;
        Ok(Fetched {
            bytes: body.bytes,
            media_type: body.media_type,
            claimed_digest: reference.digest.clone(),
            claimed_size: None,
        })
    }

    async fn manifest(&self, digest: &Digest, limit: u64) -> Result<Vec<u8>, FetchError> {
        let fetch = || async {
            let req = self.access.by_digest(Kind::Manifest, digest, limit);
            self.get(req).await.map(|b| b.bytes)
        };
        self.cached(digest, fetch).await
    }

    async fn blob(&self, digest: &Digest, limit: u64) -> Result<Vec<u8>, FetchError> {
        let fetch = || async {
            let req = self.access.by_digest(Kind::Blob, digest, limit);
            self.get(req).await.map(|b| b.bytes)
        };
        // Configs are shared between tags of one repository; layers (--deep) are large and
        // read once, so only small blobs go through the cache.
        if limit <= MAX_CONFIG_BYTES {
            self.cached(digest, fetch).await
        } else {
            fetch().await
        }
    }

    async fn blob_stream(&self, digest: &Digest, limit: u64) -> Result<BlobStream, FetchError> {
        stream_blob(&self.client.requests, &self.access, digest, limit).await
    }
}
