//! A registry speaking the OCI distribution API, through `oci-client`.
//!
//! oci-client does the token dance (anonymous and Basic-authenticated bearer tokens, Basic
//! auth) and checks manifest bodies against a pinned digest; we recheck every body ourselves
//! in the graph walker anyway. Known limits (DOMAIN.md §7), handled by the hardening work:
//! manifests are buffered before the size check, and there are no retries.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::{OnceCell, Semaphore};

use futures::StreamExt;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;

use super::{FetchError, Fetched, Source};
use crate::auth::AuthStore;
use crate::digest::Digest;
use crate::manifest::{ACCEPTED_MANIFEST_TYPES, MAX_MANIFEST_BYTES};
use crate::reference::RegistryRef;

/// How to reach registries.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Verify TLS certificates and require HTTPS (except on loopback).
    pub tls_verify: bool,
    /// Requests in flight at once, across every reference of the run.
    pub max_requests: usize,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            tls_verify: true,
            max_requests: 16,
        }
    }
}

/// Counters of what a run asked the registries for (`verify --stats`).
#[derive(Debug, Default)]
pub struct Stats {
    /// Manifest GETs sent.
    pub manifest_requests: AtomicU64,
    /// Blob GETs sent.
    pub blob_requests: AtomicU64,
    /// Body bytes received.
    pub bytes: AtomicU64,
    /// Fetches answered from the run's cache (same repository, same digest).
    pub cache_hits: AtomicU64,
    /// Time spent waiting for a request slot, in microseconds.
    pub queue_wait_micros: AtomicU64,
    /// Time spent in requests, summed over concurrent requests, in microseconds.
    pub request_micros: AtomicU64,
}

impl Stats {
    /// A one-line summary.
    pub fn summary(&self) -> String {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        format!(
            "requests: {} manifest, {} blob; {} bytes; {} cache hits; {:.3}s queued, {:.3}s in requests",
            get(&self.manifest_requests),
            get(&self.blob_requests),
            get(&self.bytes),
            get(&self.cache_hits),
            get(&self.queue_wait_micros) as f64 / 1e6,
            get(&self.request_micros) as f64 / 1e6,
        )
    }
}

type CacheKey = (String, Digest);
type CacheSlot = Arc<OnceCell<Result<Arc<Vec<u8>>, FetchError>>>;

/// One client shared by every reference of a run: connections and tokens are reused,
/// requests are bounded by a semaphore, and manifests/configs are fetched once per
/// (repository, digest) — existence in one repository proves nothing about another.
pub struct RegistryClient {
    client: oci_client::Client,
    auth: AuthStore,
    slots: Semaphore,
    cache: Mutex<HashMap<CacheKey, CacheSlot>>,
    stats: Stats,
}

impl RegistryClient {
    /// Builds the client. `registries` are the hosts this run will contact: loopback hosts,
    /// and every host when `tls_verify` is off, are probed once for plain HTTP.
    pub async fn new(
        options: &ClientOptions,
        auth: AuthStore,
        registries: &[RegistryRef],
    ) -> RegistryClient {
        let mut plain_http = Vec::new();
        for r in registries {
            if (r.is_loopback() || !options.tls_verify)
                && !plain_http.contains(&r.registry)
                && speaks_plain_http(&r.registry).await
            {
                plain_http.push(r.registry.clone());
            }
        }
        let config = ClientConfig {
            protocol: ClientProtocol::HttpsExcept(plain_http),
            accept_invalid_certificates: !options.tls_verify,
            platform_resolver: None,
            connect_timeout: Some(std::time::Duration::from_secs(10)),
            read_timeout: Some(std::time::Duration::from_secs(60)),
            user_agent: concat!("imgcheck/", env!("CARGO_PKG_VERSION")),
            ..ClientConfig::default()
        };
        RegistryClient {
            client: oci_client::Client::new(config),
            auth,
            slots: Semaphore::new(options.max_requests.max(1)),
            cache: Mutex::new(HashMap::new()),
            stats: Stats::default(),
        }
    }

    /// What the run has fetched so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Runs `fetch` once per (repository, digest) for the whole run; later callers get the
    /// same bytes (or the same error).
    async fn cached<F>(
        &self,
        reference: &RegistryRef,
        digest: &Digest,
        fetch: F,
    ) -> Result<Vec<u8>, FetchError>
    where
        F: Future<Output = Result<Vec<u8>, FetchError>>,
    {
        let key = (
            format!("{}/{}", reference.registry, reference.repository),
            digest.clone(),
        );
        let slot = {
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            Arc::clone(cache.entry(key).or_default())
        };
        let mut ran = false;
        let result = slot
            .get_or_init(|| {
                ran = true;
                async { fetch.await.map(Arc::new) }
            })
            .await;
        if !ran {
            self.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
        }
        result.clone().map(|b| b.as_ref().clone())
    }

    /// Waits for a request slot and times the request.
    async fn metered<T, F>(&self, counter: &AtomicU64, fetch: F) -> Result<T, FetchError>
    where
        F: Future<Output = Result<T, FetchError>>,
    {
        let queued = Instant::now();
        let _permit = self
            .slots
            .acquire()
            .await
            .map_err(|_| FetchError::Unavailable("request slots closed".to_string()))?;
        self.stats
            .queue_wait_micros
            .fetch_add(queued.elapsed().as_micros() as u64, Ordering::Relaxed);
        counter.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        let result = fetch.await;
        self.stats
            .request_micros
            .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        result
    }

    /// A source for one reference.
    pub fn source(self: &Arc<Self>, reference: &RegistryRef) -> RegistrySource {
        let auth = match self.auth.lookup(reference) {
            Some(c) => RegistryAuth::Basic(c.username.clone(), c.password.clone()),
            None => RegistryAuth::Anonymous,
        };
        RegistrySource {
            client: Arc::clone(self),
            reference: reference.clone(),
            auth,
        }
    }

    /// The credentials this run uses for `reference` (anonymous when none are stored).
    pub fn auth_for(&self, reference: &RegistryRef) -> RegistryAuth {
        match self.auth.lookup(reference) {
            Some(c) => RegistryAuth::Basic(c.username.clone(), c.password.clone()),
            None => RegistryAuth::Anonymous,
        }
    }

    /// The underlying oci-client, for registry writes ([`crate::push`]).
    pub fn oci(&self) -> &oci_client::Client {
        &self.client
    }
}

/// Does `host` answer plain HTTP on `/v2/`? A TLS-only server answers a plain request with
/// Go's "client sent an HTTP request to an HTTPS server" 400, which counts as no.
async fn speaks_plain_http(host: &str) -> bool {
    let Ok(client) = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(5))
        .build()
    else {
        return false;
    };
    match client.get(format!("http://{host}/v2/")).send().await {
        Ok(resp) => {
            let status = resp.status();
            let body = resp.text().await.unwrap_or_default();
            !(status == reqwest::StatusCode::BAD_REQUEST && body.contains("HTTPS server"))
        }
        Err(_) => false,
    }
}

/// Serves one registry reference.
pub struct RegistrySource {
    client: Arc<RegistryClient>,
    reference: RegistryRef,
    auth: RegistryAuth,
}

/// Maps oci-client errors to what they mean for a verdict. Messages carry URLs and registry
/// error texts, never credentials.
fn map_error(what: &str, err: OciDistributionError) -> FetchError {
    let not_found = |c: &OciErrorCode| {
        matches!(
            c,
            OciErrorCode::ManifestUnknown
                | OciErrorCode::BlobUnknown
                | OciErrorCode::NameUnknown
                | OciErrorCode::NotFound
        )
    };
    match err {
        OciDistributionError::DigestError(e) => FetchError::DigestMismatch {
            expected: what.to_string(),
            actual: e.to_string(),
        },
        OciDistributionError::ServerError { code: 404, .. } => {
            FetchError::NotFound(format!("{what} (HTTP 404)"))
        }
        OciDistributionError::RegistryError { envelope, url }
            if envelope.errors.iter().any(|e| not_found(&e.code)) =>
        {
            let _ = url;
            FetchError::NotFound(format!("{what}: {envelope}"))
        }
        OciDistributionError::UnauthorizedError { url } => FetchError::Unavailable(format!(
            "{what}: not authorized ({url}); check --authfile or log in with 'podman login'"
        )),
        OciDistributionError::AuthenticationFailure(reason) => FetchError::Unavailable(format!(
            "{what}: the registry's token service refused the credentials: {}",
            reason.chars().take(200).collect::<String>()
        )),
        other => FetchError::Unavailable(format!("{what}: {other}")),
    }
}

impl RegistrySource {
    async fn pull_manifest(
        &self,
        reference: &RegistryRef,
        what: &str,
        limit: u64,
    ) -> Result<Vec<u8>, FetchError> {
        let client = &self.client;
        let (bytes, _digest) = client
            .metered(&client.stats.manifest_requests, async {
                client
                    .client
                    .pull_manifest_raw(&reference.to_oci(), &self.auth, &ACCEPTED_MANIFEST_TYPES)
                    .await
                    .map_err(|e| map_error(what, e))
            })
            .await?;
        client
            .stats
            .bytes
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        if bytes.len() as u64 > limit {
            return Err(FetchError::TooLarge {
                what: what.to_string(),
                limit,
            });
        }
        Ok(bytes.to_vec())
    }
}

impl RegistrySource {
    /// Does the repository hold the blob `digest`? A `HEAD` on `/v2/<repo>/blobs/<digest>`:
    /// `Ok(false)` on 404, an error when the registry cannot answer.
    pub async fn blob_exists(&self, digest: &Digest) -> Result<bool, FetchError> {
        let what = format!("blob {digest}");
        let oci_ref = self.reference.to_oci();
        let client = &self.client;
        client
            .metered(&client.stats.blob_requests, async {
                client
                    .client
                    .store_auth_if_needed(oci_ref.resolve_registry(), &self.auth)
                    .await;
                client
                    .client
                    .blob_exists(&oci_ref, &digest.to_string())
                    .await
                    .map_err(|e| map_error(&what, e))
            })
            .await
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
        let what = format!("manifest {}", self.reference);
        let bytes = self
            .pull_manifest(&self.reference, &what, MAX_MANIFEST_BYTES)
            .await?;
        Ok(Fetched {
            bytes,
            media_type: None,
            claimed_digest: self.reference.digest.clone(),
            claimed_size: None,
        })
    }

    async fn manifest(&self, digest: &Digest, limit: u64) -> Result<Vec<u8>, FetchError> {
        let reference = self.reference.with_digest(digest);
        let what = format!("manifest {digest}");
        self.client
            .cached(
                &self.reference,
                digest,
                self.pull_manifest(&reference, &what, limit),
            )
            .await
    }

    async fn blob(&self, digest: &Digest, limit: u64) -> Result<Vec<u8>, FetchError> {
        // Configs are shared between tags of one repository; layers (--deep) are large and
        // read once, so only small blobs go through the cache.
        if limit <= crate::manifest::MAX_CONFIG_BYTES {
            self.client
                .cached(&self.reference, digest, self.pull_blob(digest, limit))
                .await
        } else {
            self.pull_blob(digest, limit).await
        }
    }
}

impl RegistrySource {
    async fn pull_blob(&self, digest: &Digest, limit: u64) -> Result<Vec<u8>, FetchError> {
        let client = &self.client;
        client
            .metered(&client.stats.blob_requests, self.stream_blob(digest, limit))
            .await
    }

    async fn stream_blob(&self, digest: &Digest, limit: u64) -> Result<Vec<u8>, FetchError> {
        let what = format!("blob {digest}");
        let oci_ref = self.reference.to_oci();
        self.client
            .client
            .store_auth_if_needed(oci_ref.resolve_registry(), &self.auth)
            .await;
        let descriptor = OciDescriptor {
            digest: digest.to_string(),
            ..OciDescriptor::default()
        };
        let mut stream = self
            .client
            .client
            .pull_blob_stream(&oci_ref, &descriptor)
            .await
            .map_err(|e| map_error(&what, e))?;
        if stream.content_length.is_some_and(|n| n > limit) {
            return Err(FetchError::TooLarge { what, limit });
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| {
                if e.to_string().contains("digest") {
                    FetchError::DigestMismatch {
                        expected: digest.to_string(),
                        actual: e.to_string(),
                    }
                } else {
                    FetchError::Unavailable(format!("{what}: {e}"))
                }
            })?;
            bytes.extend_from_slice(&chunk);
            self.client
                .stats
                .bytes
                .fetch_add(chunk.len() as u64, Ordering::Relaxed);
            if bytes.len() as u64 > limit {
                return Err(FetchError::TooLarge { what, limit });
            }
        }
        Ok(bytes)
    }
}
