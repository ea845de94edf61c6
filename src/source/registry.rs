//! A registry speaking the OCI distribution API, read through our own small client on
//! `reqwest` (docs/decisions.md says why not oci-client for reads).
//!
//! What the read path does:
//! - `GET /v2/<repo>/manifests/<ref>` with every manifest media type in `Accept`;
//!   `GET /v2/<repo>/blobs/<digest>`, following redirects by hand and never sending the
//!   registry's `Authorization` to another origin (S3-backed registries redirect blob GETs);
//! - `WWW-Authenticate` challenges: Basic, and Bearer tokens cached per (registry,
//!   repository, credentials) and reused; one token request asks for up to 32 of the run's
//!   repositories on that registry with the same credentials (one fetch at a time per
//!   registry, so concurrent requests wait for it instead of each asking); a token the
//!   registry refuses is replaced by one for that repository alone; a token service that
//!   refuses is reported as such, not as a bare 401;
//! - retries with exponential backoff and jitter for connection errors, timeouts, 408/429/5xx
//!   (honouring `Retry-After`), broken-off bodies, and bodies that do not hash to the digest
//!   that named them; never for answers that cannot heal (other 4xx, too large);
//! - a per-request timeout and an overall deadline; every retry counted and, with `-v`, told;
//! - size caps applied while streaming: an oversized body is refused before it is buffered.
//!
//! Writes ([`crate::push`]) still go through oci-client: [`RegistryClient::oci`].

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OnceCell, Semaphore};

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use reqwest::header::{
    ACCEPT, AUTHORIZATION, CONTENT_TYPE, LOCATION, RETRY_AFTER, WWW_AUTHENTICATE,
};
use reqwest::{StatusCode, Url};
use sha2::Digest as _;

use super::transport::{
    Challenge, backoff, is_retryable_status, parse_challenge, parse_retry_after,
    summarize_error_body,
};
use super::{BlobFile, FetchError, Fetched, Source};
use crate::auth::{AuthStore, CERTS_D_ROOTS, Credentials, TlsFiles};
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
    /// `--cert-dir`: TLS files for every registry, instead of the certs.d directories.
    pub cert_dir: Option<PathBuf>,
    /// Longest wait for an answer, or for the next piece of its body, before the request
    /// counts as stalled (and is retried).
    pub request_timeout: Duration,
    /// `--timeout`: the whole run's registry work must finish within this.
    pub deadline: Option<Duration>,
    /// Retries after the first attempt, for faults that may heal.
    pub retries: u32,
    /// First backoff step; each retry doubles it (with jitter).
    pub backoff: Duration,
    /// Tell every retry on standard error (`-v`).
    pub verbose: bool,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            tls_verify: true,
            max_requests: 16,
            cert_dir: None,
            request_timeout: Duration::from_secs(30),
            deadline: None,
            retries: 4,
            backoff: Duration::from_millis(200),
            verbose: false,
        }
    }
}

/// Counters of what a run asked the registries for (`verify --stats`).
#[derive(Debug, Default)]
pub struct Stats {
    /// Manifest GETs sent (retries included).
    pub manifest_requests: AtomicU64,
    /// Blob GETs sent (retries included).
    pub blob_requests: AtomicU64,
    /// Body bytes received.
    pub bytes: AtomicU64,
    /// Fetches answered from the run's cache (same repository, same digest).
    pub cache_hits: AtomicU64,
    /// Time spent waiting for a request slot, in microseconds.
    pub queue_wait_micros: AtomicU64,
    /// Time spent in requests, summed over concurrent requests, in microseconds.
    pub request_micros: AtomicU64,
    /// Requests repeated after a fault that may heal.
    pub retries: AtomicU64,
    /// Tokens fetched from token services.
    pub token_requests: AtomicU64,
}

impl Stats {
    /// A one-line summary.
    pub fn summary(&self) -> String {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        format!(
            "requests: {} manifest, {} blob, {} token; {} retries; {} bytes; {} cache hits; {:.3}s queued, {:.3}s in requests",
            get(&self.manifest_requests),
            get(&self.blob_requests),
            get(&self.token_requests),
            get(&self.retries),
            get(&self.bytes),
            get(&self.cache_hits),
            get(&self.queue_wait_micros) as f64 / 1e6,
            get(&self.request_micros) as f64 / 1e6,
        )
    }
}

type CacheKey = (String, Digest);
type CacheSlot = Arc<OnceCell<Result<Arc<Vec<u8>>, FetchError>>>;
/// (registry, repository, credentials fingerprint).
type TokenKey = (String, String, String);

/// A bearer token and when to stop using it.
struct Token {
    value: String,
    expires: Instant,
}

/// Tokens shorter-lived than this are refreshed early; distribution's default is 60 s.
const TOKEN_MARGIN: Duration = Duration::from_secs(10);
/// Most repositories asked for in one token request (keeps the URL well under 8 KiB).
const MAX_SCOPES: usize = 32;
/// Redirect hops followed for one request.
const MAX_REDIRECTS: usize = 5;
/// Largest token-service answer or error body read.
const MAX_SMALL_BODY: u64 = 64 * 1024;

/// One client shared by every reference of a run: connections and tokens are reused,
/// requests are bounded by a semaphore, and manifests/configs are fetched once per
/// (repository, digest) — existence in one repository proves nothing about another.
pub struct RegistryClient {
    /// Writes only: built on first use, as building it loads the system CA bundle again.
    oci: std::sync::OnceLock<oci_client::Client>,
    /// oci-client's configuration, fixed once the plain-HTTP probes are done; taken when
    /// `oci` is built (`ClientConfig` is not `Clone`).
    oci_config: Mutex<Option<ClientConfig>>,
    auth: AuthStore,
    options: ClientOptions,
    plain_http: HashSet<String>,
    deadline: Option<Instant>,
    /// HTTP clients by (host, plain HTTP).
    http: Mutex<HashMap<(String, bool), reqwest::Client>>,
    challenges: Mutex<HashMap<String, Challenge>>,
    tokens: Mutex<HashMap<TokenKey, Arc<Token>>>,
    /// One token fetch at a time per registry, so requests waiting for a token find the one
    /// fetched for them instead of each asking.
    token_gates: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// The repositories this run reads, per registry, in order: a token request asks for
    /// several of them at once (distribution's token spec allows repeated `scope`).
    run_repositories: HashMap<String, Vec<String>>,
    slots: Semaphore,
    cache: Mutex<HashMap<CacheKey, CacheSlot>>,
    stats: Stats,
}

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
        let mut client = RegistryClient {
            oci: std::sync::OnceLock::new(),
            oci_config: Mutex::new(None),
            auth,
            options: options.clone(),
            plain_http: HashSet::new(),
            deadline: options.deadline.map(|d| Instant::now() + d),
            http: Mutex::new(HashMap::new()),
            challenges: Mutex::new(HashMap::new()),
            tokens: Mutex::new(HashMap::new()),
            token_gates: Mutex::new(HashMap::new()),
            run_repositories: repositories_by_registry(registries),
            slots: Semaphore::new(options.max_requests.max(1)),
            cache: Mutex::new(HashMap::new()),
            stats: Stats::default(),
        };
        let mut plain_http = Vec::new();
        for r in registries {
            if (r.is_loopback() || !options.tls_verify)
                && !plain_http.contains(&r.registry)
                && client.speaks_plain_http(&r.registry).await
            {
                plain_http.push(r.registry.clone());
            }
        }
        // oci-client (writes) must agree on the scheme of each registry, and trust the same
        // extra CAs (client certificates are not supported there).
        let roots: Vec<PathBuf> = CERTS_D_ROOTS.iter().map(PathBuf::from).collect();
        let mut extra_roots = Vec::new();
        for r in registries {
            for ca in TlsFiles::find(&r.registry, options.cert_dir.as_deref(), &roots).ca_files {
                if let Ok(data) = std::fs::read(&ca) {
                    extra_roots.push(oci_client::client::Certificate {
                        encoding: oci_client::client::CertificateEncoding::Pem,
                        data,
                    });
                }
            }
        }
        client.oci_config = Mutex::new(Some(ClientConfig {
            protocol: ClientProtocol::HttpsExcept(plain_http.clone()),
            extra_root_certificates: extra_roots,
            ..oci_config(options)
        }));
        client.plain_http = plain_http.into_iter().collect();
        client
    }

    /// Does `host` answer plain HTTP on `/v2/`? A TLS-only server answers a plain request
    /// with Go's "client sent an HTTP request to an HTTPS server" 400, and a redirect (to https),
    /// which count as no.
    /// Faults that may heal are retried like any request; if none heals, the answer is no.
    async fn speaks_plain_http(&self, host: &str) -> bool {
        let url = format!("http://{host}/v2/");
        // The host's own plain-HTTP client (no redirects followed), so its connection is
        // reused later.
        let Ok(client) = Url::parse(&url)
            .map_err(|e| FetchError::BadInput(e.to_string()))
            .and_then(|u| self.http(&u))
        else {
            return false;
        };
        let retries = self.options.retries;
        for attempt in 0..=retries {
            let mut timeout = self.options.request_timeout.min(Duration::from_secs(10));
            if let Some(left) = self.remaining() {
                timeout = timeout.min(left);
            }
            if timeout.is_zero() {
                break;
            }
            let why = match client.get(&url).timeout(timeout).send().await {
                Ok(resp) if is_retryable_status(resp.status().as_u16()) => {
                    format!("HTTP {}", resp.status().as_u16())
                }
                // A redirect (typically to https://) means "not here over plain HTTP".
                Ok(resp) if resp.status().is_redirection() => return false,
                Ok(resp) => {
                    let status = resp.status();
                    let body = read_small(resp, timeout).await;
                    return !(status == StatusCode::BAD_REQUEST
                        && String::from_utf8_lossy(&body).contains("HTTPS server"));
                }
                Err(e) => error_chain(&e),
            };
            if attempt == retries || self.remaining().is_some_and(|l| l.is_zero()) {
                break;
            }
            let delay = backoff(self.options.backoff, attempt);
            self.stats.retries.fetch_add(1, Ordering::Relaxed);
            self.log(&format!(
                "retry {}/{retries} in {:.1}s: probing {url} for plain HTTP: {why}",
                attempt + 1,
                delay.as_secs_f64()
            ));
            tokio::time::sleep(delay).await;
        }
        false
    }

    /// What the run has fetched so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// A source for one reference.
    pub fn source(self: &Arc<Self>, reference: &RegistryRef) -> RegistrySource {
        let creds = self.auth.lookup(reference).map_err(|e| e.to_string());
        RegistrySource {
            client: Arc::clone(self),
            reference: reference.clone(),
            creds,
        }
    }

    /// The credentials this run uses for `reference` (anonymous when none are stored), for
    /// oci-client writes.
    pub fn auth_for(&self, reference: &RegistryRef) -> RegistryAuth {
        match self.auth.lookup(reference) {
            Ok(Some(c)) => RegistryAuth::Basic(c.username, c.password),
            _ => RegistryAuth::Anonymous,
        }
    }

    /// The underlying oci-client, for registry writes ([`crate::push`]).
    pub fn oci(&self) -> &oci_client::Client {
        self.oci.get_or_init(|| {
            let config = lock(&self.oci_config).take();
            oci_client::Client::new(config.unwrap_or_else(|| oci_config(&self.options)))
        })
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
        let slot = Arc::clone(lock(&self.cache).entry(key).or_default());
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

    /// The HTTP client for `url`'s host (`host[:port]`), with its certs.d (or `--cert-dir`)
    /// CAs and client certificate. Built once per host and scheme: a plain-HTTP client gets
    /// no CA roots, as loading the system bundle was three quarters of the instructions of a
    /// single-reference `verify` against a plain-HTTP registry (docs/decisions.md).
    fn http(&self, url: &Url) -> Result<reqwest::Client, FetchError> {
        let host = host_port(url);
        let plain = url.scheme() == "http";
        let key = (host, plain);
        if let Some(c) = lock(&self.http).get(&key) {
            return Ok(c.clone());
        }
        let (host, _) = &key;
        let builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(self.options.request_timeout.min(Duration::from_secs(10)))
            .user_agent(concat!("imgcheck/", env!("CARGO_PKG_VERSION")));
        let builder = if plain {
            builder.tls_certs_only(Vec::new())
        } else {
            self.with_tls_files(builder, host)?
        };
        let client = builder
            .build()
            .map_err(|e| FetchError::Unavailable(format!("cannot set up HTTP for {host}: {e}")))?;
        lock(&self.http).insert(key, client.clone());
        Ok(client)
    }

    /// `builder` with the certs.d (or `--cert-dir`) CAs and client certificate for `host`.
    fn with_tls_files(
        &self,
        mut builder: reqwest::ClientBuilder,
        host: &str,
    ) -> Result<reqwest::ClientBuilder, FetchError> {
        let roots: Vec<PathBuf> = CERTS_D_ROOTS.iter().map(PathBuf::from).collect();
        let files = TlsFiles::find(host, self.options.cert_dir.as_deref(), &roots);
        let bad = |path: &std::path::Path, e: String| {
            FetchError::BadInput(format!("TLS file {}: {e}", path.display()))
        };
        builder = builder.tls_danger_accept_invalid_certs(!self.options.tls_verify);
        for path in &files.ca_files {
            let pem = std::fs::read(path).map_err(|e| bad(path, e.to_string()))?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| bad(path, format!("not PEM certificates: {e}")))?;
            for c in certs {
                builder = builder.add_root_certificate(c);
            }
        }
        if let Some((cert, key)) = files.client_pairs.first() {
            let mut pem = std::fs::read(cert).map_err(|e| bad(cert, e.to_string()))?;
            pem.push(b'\n');
            pem.extend(std::fs::read(key).map_err(|e| bad(key, e.to_string()))?);
            let identity = reqwest::Identity::from_pem(&pem)
                .map_err(|e| bad(cert, format!("not a PEM certificate and key: {e}")))?;
            builder = builder.identity(identity);
        }
        Ok(builder)
    }

    fn base_url(&self, host: &str) -> String {
        let scheme = if self.plain_http.contains(host) {
            "http"
        } else {
            "https"
        };
        format!("{scheme}://{host}")
    }

    fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    fn deadline_error(&self, what: &str) -> FetchError {
        FetchError::Unavailable(format!(
            "{what}: the overall deadline (--timeout {}s) passed",
            self.options.deadline.unwrap_or_default().as_secs_f64()
        ))
    }

    /// Runs one step of a request (an answer, the next piece of a body) within the request
    /// timeout; a step that takes longer is a fault that may heal.
    async fn within<T>(&self, what: &str, step: impl Future<Output = T>) -> Result<T, Failure> {
        let limit = self.options.request_timeout;
        tokio::time::timeout(limit, step).await.map_err(|_| {
            Failure::Retry(
                FetchError::Unavailable(format!(
                    "{what}: nothing received for {:.1}s (--request-timeout)",
                    limit.as_secs_f64()
                )),
                None,
            )
        })
    }

    fn log(&self, message: &str) {
        if self.options.verbose {
            eprintln!("imgcheck: {message}");
        }
    }

    /// One GET with retries. Each attempt takes a request slot, is bounded by the
    /// per-request timeout (and what is left of the deadline), and is counted.
    async fn fetch(&self, req: &Request<'_>) -> Result<Body, FetchError> {
        let retries = self.options.retries;
        let mut attempt: u32 = 0;
        loop {
            let left = self.remaining();
            if left.is_some_and(|l| l.is_zero()) {
                return Err(self.deadline_error(&req.what));
            }
            let queued = Instant::now();
            let permit = self
                .slots
                .acquire()
                .await
                .map_err(|_| FetchError::Unavailable("request slots closed".to_string()))?;
            self.stats
                .queue_wait_micros
                .fetch_add(queued.elapsed().as_micros() as u64, Ordering::Relaxed);
            let counter = match req.kind {
                Kind::Manifest => &self.stats.manifest_requests,
                Kind::Blob | Kind::BlobHead => &self.stats.blob_requests,
            };
            counter.fetch_add(1, Ordering::Relaxed);
            let started = Instant::now();
            // Each step of the attempt (an answer, the next piece of a body) is bounded by
            // the request timeout; the whole attempt by what is left of the deadline.
            let result = match left {
                None => self.attempt(req).await,
                Some(left) => match tokio::time::timeout(left, self.attempt(req)).await {
                    Ok(r) => r,
                    Err(_) => Err(Failure::Fatal(self.deadline_error(&req.what))),
                },
            };
            self.stats
                .request_micros
                .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
            drop(permit);
            let (err, retry_after) = match result {
                Ok(body) => return Ok(body),
                Err(Failure::Fatal(e)) => return Err(e),
                Err(Failure::Retry(e, after)) => (e, after),
            };
            if attempt >= retries {
                return Err(gave_up(err, attempt + 1));
            }
            let delay = retry_after.unwrap_or_else(|| backoff(self.options.backoff, attempt));
            if self.remaining().is_some_and(|left| left <= delay) {
                return Err(gave_up(err, attempt + 1));
            }
            attempt += 1;
            self.stats.retries.fetch_add(1, Ordering::Relaxed);
            self.log(&format!(
                "retry {attempt}/{retries} in {:.1}s{}: {err}",
                delay.as_secs_f64(),
                if retry_after.is_some() {
                    " (Retry-After)"
                } else {
                    ""
                }
            ));
            tokio::time::sleep(delay).await;
        }
    }

    /// One attempt: authenticate as the registry asks, follow redirects, read the body under
    /// its cap, and check it.
    async fn attempt(&self, req: &Request<'_>) -> Result<Body, Failure> {
        let reference = &req.source.reference;
        let url = format!(
            "{}/v2/{}/{}/{}",
            self.base_url(api_host(&reference.registry)),
            reference.repository,
            req.kind.path(),
            req.reference_part
        );
        let url = Url::parse(&url).map_err(|e| {
            Failure::Fatal(FetchError::BadInput(format!("{}: bad URL: {e}", req.what)))
        })?;
        let mut resp = self.send_authenticated(req, &url).await?;
        let mut current = url;
        let mut hops = 0;
        while resp.status().is_redirection() {
            hops += 1;
            if hops > MAX_REDIRECTS {
                return Err(Failure::Fatal(FetchError::Unavailable(format!(
                    "{}: more than {MAX_REDIRECTS} redirects",
                    req.what
                ))));
            }
            let next = resp
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|l| current.join(l).ok())
                .ok_or_else(|| {
                    Failure::Fatal(FetchError::Unavailable(format!(
                        "{}: HTTP {} without a usable Location",
                        req.what,
                        resp.status().as_u16()
                    )))
                })?;
            resp = if same_origin(&next, &current) && origin_is_registry(&next, reference) {
                self.send_authenticated(req, &next).await?
            } else {
                // Another host (object storage): the URL carries its own authorisation, and the
                // registry's credentials must not travel there.
                let client = self.http(&next).map_err(Failure::Fatal)?;
                self.within(
                    &req.what,
                    client.request(req.kind.method(), next.clone()).send(),
                )
                .await?
                .map_err(|e| transport_failure(&req.what, &e))?
            };
            current = next;
        }
        let status = resp.status();
        if status == StatusCode::OK && req.kind == Kind::BlobHead {
            return Ok(Body {
                bytes: Vec::new(),
                media_type: None,
                file: None,
            });
        }
        if status == StatusCode::OK {
            return self.read_body(req, resp).await;
        }
        let retry_after = resp
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let body = read_small(resp, self.options.request_timeout).await;
        let detail = summarize_error_body(&body);
        let message = format!("{} (HTTP {}{})", req.what, status.as_u16(), colon(&detail));
        Err(match status.as_u16() {
            404 => Failure::Fatal(FetchError::NotFound(message)),
            401 | 403 => Failure::Fatal(FetchError::Unavailable(format!(
                "{message}: not authorized; check --creds, --authfile, or log in with 'podman login'"
            ))),
            s if is_retryable_status(s) => {
                Failure::Retry(FetchError::Unavailable(message), retry_after)
            }
            _ => Failure::Fatal(FetchError::Unavailable(message)),
        })
    }

    /// Reads a 200 body under the request's cap, then checks it against the digest that
    /// named it and the registry's `Docker-Content-Digest`, and a manifest's Content-Type.
    async fn read_body(
        &self,
        req: &Request<'_>,
        mut resp: reqwest::Response,
    ) -> Result<Body, Failure> {
        let too_large = || {
            Failure::Fatal(FetchError::TooLarge {
                what: req.what.clone(),
                limit: req.limit,
            })
        };
        if resp.content_length().is_some_and(|n| n > req.limit) {
            return Err(too_large());
        }
        let content_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or("").trim().to_string());
        let header_digest = resp
            .headers()
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let spool_error = |e: std::io::Error| {
            Failure::Fatal(FetchError::Unavailable(format!(
                "{}: cannot write a temporary file: {e}",
                req.what
            )))
        };
        let mut sink = match (req.spool, req.expected) {
            (true, Some(expected)) => Sink::File {
                file: tempfile::NamedTempFile::new().map_err(spool_error)?,
                hasher: Box::new(crate::digest::Hasher::new(expected.algorithm())),
            },
            _ => Sink::Memory(Vec::with_capacity(
                resp.content_length().unwrap_or(0).min(1 << 20) as usize,
            )),
        };
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
                            error_chain(&e)
                        )),
                        None,
                    ));
                }
            };
            self.stats
                .bytes
                .fetch_add(chunk.len() as u64, Ordering::Relaxed);
            received += chunk.len() as u64;
            if received > req.limit {
                return Err(too_large());
            }
            match &mut sink {
                Sink::Memory(bytes) => bytes.extend_from_slice(&chunk),
                Sink::File { file, hasher } => {
                    hasher.update(&chunk);
                    std::io::Write::write_all(file, &chunk).map_err(spool_error)?;
                }
            }
        }
        let (bytes, actual, file) = match sink {
            Sink::Memory(bytes) => {
                let actual = req.expected.map(|e| Digest::compute(e.algorithm(), &bytes));
                (bytes, actual, None)
            }
            Sink::File { file, hasher } => {
                let path = file.into_temp_path();
                (Vec::new(), Some(hasher.finish()), Some((path, received)))
            }
        };
        if let (Some(expected), Some(actual)) = (req.expected, &actual)
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
        if let Some(claimed) = &header_digest {
            let actual = match claimed.parse::<Digest>() {
                Ok(d) => match &actual {
                    Some(a) if a.algorithm() == d.algorithm() => (*a != d).then(|| a.clone()),
                    // A spooled body was hashed with the expected digest's algorithm only.
                    _ if file.is_some() => None,
                    _ => (!d.matches(&bytes)).then(|| Digest::compute(d.algorithm(), &bytes)),
                },
                Err(_) => Some(actual.clone().unwrap_or_else(|| Digest::sha256(&bytes))),
            };
            if let Some(actual) = actual {
                return Err(Failure::Retry(
                    FetchError::DigestMismatch {
                        expected: format!(
                            "{} (the registry's Docker-Content-Digest)",
                            claimed.chars().take(150).collect::<String>()
                        ),
                        actual: actual.to_string(),
                    },
                    None,
                ));
            }
        }
        if req.kind == Kind::Manifest
            && let Some(ct) = &content_type
            && !ct.is_empty()
            && ct != "application/json"
            && !ACCEPTED_MANIFEST_TYPES.contains(&ct.as_str())
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
        let media_type = content_type.filter(|ct| ACCEPTED_MANIFEST_TYPES.contains(&ct.as_str()));
        Ok(Body {
            bytes,
            media_type,
            file,
        })
    }

    /// Sends a GET to the registry with whatever authentication it needs, answering one
    /// 401 challenge (Basic, or Bearer with a token for this repository).
    async fn send_authenticated(
        &self,
        req: &Request<'_>,
        url: &Url,
    ) -> Result<reqwest::Response, Failure> {
        let source = req.source;
        let reference = &source.reference;
        let creds = source
            .creds
            .as_ref()
            .map_err(|e| Failure::Fatal(FetchError::Unavailable(e.clone())))?
            .as_ref();
        let host = api_host(&reference.registry);
        let client = self.http(url).map_err(Failure::Fatal)?;
        let known = lock(&self.challenges).get(host).cloned();
        let mut header = match &known {
            Some(challenge) => self.authorization(req, challenge, creds, false).await?,
            None => None,
        };
        let mut answered_challenge = false;
        loop {
            let mut builder = client.request(req.kind.method(), url.clone());
            if req.kind == Kind::Manifest {
                builder = builder.header(ACCEPT, ACCEPTED_MANIFEST_TYPES.join(", "));
            }
            if let Some(h) = &header {
                builder = builder.header(AUTHORIZATION, h);
            }
            let resp = self
                .within(&req.what, builder.send())
                .await?
                .map_err(|e| transport_failure(&req.what, &e))?;
            if resp.status() != StatusCode::UNAUTHORIZED || answered_challenge {
                return Ok(resp);
            }
            let challenge = resp
                .headers()
                .get_all(WWW_AUTHENTICATE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .find_map(parse_challenge);
            let Some(challenge) = challenge else {
                return Ok(resp);
            };
            if creds.is_none() && challenge == Challenge::Basic {
                return Err(Failure::Fatal(FetchError::Unavailable(format!(
                    "{}: the registry requires credentials (HTTP 401, Basic); pass --creds USER:PASS or --authfile FILE",
                    req.what
                ))));
            }
            lock(&self.challenges).insert(host.to_string(), challenge.clone());
            // A token we sent was refused (expired early, revoked): fetch a fresh one.
            let refresh = header.is_some();
            header = self.authorization(req, &challenge, creds, refresh).await?;
            answered_challenge = true;
        }
    }

    /// The `Authorization` value for a challenge: Basic credentials, or a bearer token
    /// for this repository (cached, or fetched now).
    async fn authorization(
        &self,
        req: &Request<'_>,
        challenge: &Challenge,
        creds: Option<&Credentials>,
        refresh: bool,
    ) -> Result<Option<String>, Failure> {
        match challenge {
            Challenge::Basic => Ok(creds.map(basic_header)),
            Challenge::Bearer {
                realm,
                service,
                scope: _,
            } => {
                let reference = &req.source.reference;
                let fp = fingerprint(creds);
                let key = (
                    reference.registry.clone(),
                    reference.repository.clone(),
                    fp.clone(),
                );
                if !refresh && let Some(t) = self.valid_token(&key) {
                    return Ok(Some(t));
                }
                let gate = {
                    let mut gates = lock(&self.token_gates);
                    Arc::clone(gates.entry(reference.registry.clone()).or_default())
                };
                let _turn = gate.lock().await;
                if !refresh && let Some(t) = self.valid_token(&key) {
                    return Ok(Some(t));
                }
                // A refused token is replaced by one for this repository alone: the batch
                // may have been granted without it.
                let repositories = if refresh {
                    vec![reference.repository.clone()]
                } else {
                    self.token_batch(reference, &fp)
                };
                let token = match self
                    .fetch_token(req, realm, service.as_deref(), creds, &repositories)
                    .await
                {
                    Err(Failure::Fatal(_)) if repositories.len() > 1 => {
                        // Some token services refuse a request when any scope is denied.
                        let own = [reference.repository.clone()];
                        let token = self
                            .fetch_token(req, realm, service.as_deref(), creds, &own)
                            .await?;
                        return Ok(Some(self.keep_token(&reference.registry, &own, &fp, token)));
                    }
                    other => other?,
                };
                Ok(Some(self.keep_token(
                    &reference.registry,
                    &repositories,
                    &fp,
                    token,
                )))
            }
        }
    }

    /// The cached `Authorization` value for `key`, if still valid.
    fn valid_token(&self, key: &TokenKey) -> Option<String> {
        lock(&self.tokens)
            .get(key)
            .filter(|t| t.expires > Instant::now())
            .map(|t| format!("Bearer {}", t.value))
    }

    /// Caches `token` for every repository it was asked for; returns its header value.
    fn keep_token(
        &self,
        registry: &str,
        repositories: &[String],
        fp: &str,
        token: Token,
    ) -> String {
        let value = format!("Bearer {}", token.value);
        let token = Arc::new(token);
        let mut tokens = lock(&self.tokens);
        for repo in repositories {
            tokens.insert(
                (registry.to_string(), repo.clone(), fp.to_string()),
                Arc::clone(&token),
            );
        }
        value
    }

    /// `reference`'s repository, then up to [`MAX_SCOPES`]` - 1` other repositories of this
    /// run on the same registry that have no valid token yet and use the same credentials.
    fn token_batch(&self, reference: &RegistryRef, fp: &str) -> Vec<String> {
        let mut batch = vec![reference.repository.clone()];
        let Some(repos) = self.run_repositories.get(&reference.registry) else {
            return batch;
        };
        let now = Instant::now();
        for repo in repos {
            if batch.len() == MAX_SCOPES {
                break;
            }
            if *repo == reference.repository {
                continue;
            }
            let key = (reference.registry.clone(), repo.clone(), fp.to_string());
            if lock(&self.tokens)
                .get(&key)
                .is_some_and(|t| t.expires > now)
            {
                continue;
            }
            let other = RegistryRef {
                repository: repo.clone(),
                ..reference.clone()
            };
            if matches!(self.auth.lookup(&other), Ok(c) if fingerprint(c.as_ref()) == fp) {
                batch.push(repo.clone());
            }
        }
        batch
    }

    /// Asks a token service for one pull token for `repositories` (the request's own
    /// first): distribution's token spec, one `scope` parameter each; OAuth2 refresh-token
    /// grant for identity tokens.
    async fn fetch_token(
        &self,
        req: &Request<'_>,
        realm: &str,
        service: Option<&str>,
        creds: Option<&Credentials>,
        repositories: &[String],
    ) -> Result<Token, Failure> {
        let scopes: Vec<String> = repositories
            .iter()
            .map(|r| format!("repository:{r}:pull"))
            .collect();
        let scope = match scopes.len() {
            0 | 1 => scopes.concat(),
            n => format!("{} (and {} more)", scopes[0], n - 1),
        };
        let mut url = Url::parse(realm).map_err(|e| {
            Failure::Fatal(FetchError::Unavailable(format!(
                "{}: the registry's token realm '{realm}' is not a URL: {e}",
                req.what
            )))
        })?;
        if url.scheme() != "https" && url.scheme() != "http" {
            return Err(Failure::Fatal(FetchError::Unavailable(format!(
                "{}: the registry's token realm '{realm}' is not an HTTP URL",
                req.what
            ))));
        }
        let client = self.http(&url).map_err(Failure::Fatal)?;
        self.stats.token_requests.fetch_add(1, Ordering::Relaxed);
        self.log(&format!("token for {scope} from {realm}"));
        let builder = match creds {
            Some(c) if c.is_identity_token() => {
                let mut form = Url::parse("http://form.invalid/")
                    .map_err(|e| Failure::Fatal(FetchError::Unavailable(e.to_string())))?;
                {
                    let mut pairs = form.query_pairs_mut();
                    pairs
                        .append_pair("grant_type", "refresh_token")
                        .append_pair("refresh_token", &c.password)
                        .append_pair("client_id", "imgcheck");
                    // OAuth2: one space-separated scope parameter.
                    pairs.append_pair("scope", &scopes.join(" "));
                    if let Some(s) = service {
                        pairs.append_pair("service", s);
                    }
                }
                client
                    .post(url)
                    .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
                    .body(form.query().unwrap_or("").to_string())
            }
            _ => {
                {
                    let mut pairs = url.query_pairs_mut();
                    if let Some(s) = service {
                        pairs.append_pair("service", s);
                    }
                    for s in &scopes {
                        pairs.append_pair("scope", s);
                    }
                }
                let b = client.get(url);
                match creds {
                    Some(c) => b.header(AUTHORIZATION, basic_header(c)),
                    None => b,
                }
            }
        };
        let what = format!("{}: token service {realm}", req.what);
        let resp = self
            .within(&what, builder.send())
            .await?
            .map_err(|e| transport_failure(&what, &e))?;
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let body = read_small(resp, self.options.request_timeout).await;
        if status != StatusCode::OK {
            let mut detail = summarize_error_body(&body);
            if let Some(c) = creds
                && !c.password.is_empty()
            {
                detail = detail.replace(&c.password, "<redacted>");
            }
            let who = match creds {
                Some(c) if c.is_identity_token() => "the identity token".to_string(),
                Some(c) => format!("the credentials of user '{}'", c.username),
                None => "anonymous access".to_string(),
            };
            let message = format!(
                "{}: the registry's token service {realm} refused {who} for {scope} (HTTP {}{})",
                req.what,
                status.as_u16(),
                colon(&detail)
            );
            return Err(if is_retryable_status(status.as_u16()) {
                Failure::Retry(FetchError::Unavailable(message), retry_after)
            } else {
                Failure::Fatal(FetchError::Unavailable(message))
            });
        }
        #[derive(serde::Deserialize)]
        struct Answer {
            #[serde(default)]
            token: Option<String>,
            #[serde(default)]
            access_token: Option<String>,
            #[serde(default)]
            expires_in: Option<u64>,
        }
        let answer: Answer = serde_json::from_slice(&body).map_err(|_| {
            Failure::Retry(
                FetchError::Unavailable(format!(
                    "{}: the token service {realm} answered something that is not a token",
                    req.what
                )),
                None,
            )
        })?;
        let value = answer
            .token
            .or(answer.access_token)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                Failure::Fatal(FetchError::Unavailable(format!(
                    "{}: the token service {realm} answered without a token",
                    req.what
                )))
            })?;
        let lifetime = Duration::from_secs(answer.expires_in.unwrap_or(60).max(1));
        Ok(Token {
            value,
            expires: Instant::now() + lifetime.saturating_sub(TOKEN_MARGIN),
        })
    }
}

/// Why one attempt failed, and whether asking again may help.
enum Failure {
    /// Will not heal: report it.
    Fatal(FetchError),
    /// May heal: retry, after `Retry-After` when the server said so.
    Retry(FetchError, Option<Duration>),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Manifest,
    Blob,
    /// `HEAD` of a blob: existence only, no body.
    BlobHead,
}

impl Kind {
    fn path(self) -> &'static str {
        match self {
            Kind::Manifest => "manifests",
            Kind::Blob | Kind::BlobHead => "blobs",
        }
    }

    fn method(self) -> reqwest::Method {
        match self {
            Kind::BlobHead => reqwest::Method::HEAD,
            _ => reqwest::Method::GET,
        }
    }
}

/// One GET of the read path.
struct Request<'a> {
    source: &'a RegistrySource,
    kind: Kind,
    /// Tag or digest.
    reference_part: String,
    /// The digest the body must hash to, when the request names one.
    expected: Option<&'a Digest>,
    limit: u64,
    what: String,
    /// Write the body to a temporary file instead of memory (large layers); needs `expected`.
    spool: bool,
}

/// A checked body.
struct Body {
    /// The bytes; empty when spooled.
    bytes: Vec<u8>,
    /// The Content-Type, when it is a manifest media type.
    media_type: Option<String>,
    /// The spooled body and its length, for `spool` requests.
    file: Option<(tempfile::TempPath, u64)>,
}

/// Where a body goes while it is read.
enum Sink {
    Memory(Vec<u8>),
    File {
        file: tempfile::NamedTempFile,
        hasher: Box<crate::digest::Hasher>,
    },
}

fn gave_up(err: FetchError, attempts: u32) -> FetchError {
    match err {
        FetchError::Unavailable(m) if attempts > 1 => {
            FetchError::Unavailable(format!("{m} (gave up after {attempts} attempts)"))
        }
        other => other,
    }
}

fn colon(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

/// A connection-level failure: worth another attempt, except a certificate the client does
/// not trust (that does not heal by asking again).
fn transport_failure(what: &str, e: &reqwest::Error) -> Failure {
    let chain = error_chain(e);
    if chain.contains("invalid peer certificate") {
        return Failure::Fatal(FetchError::Unavailable(format!(
            "{what}: {chain}; trust the registry's CA with --cert-dir DIR (DIR/ca.crt) or \
             /etc/containers/certs.d/HOST:PORT/ca.crt, or pass --tls-verify=false"
        )));
    }
    Failure::Retry(FetchError::Unavailable(format!("{what}: {chain}")), None)
}

/// An error and its causes on one line (`a: b: c`), without URLs' query strings.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
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

/// Reads at most [`MAX_SMALL_BODY`] bytes of an answer (error bodies, tokens), waiting at
/// most `timeout` for each piece.
async fn read_small(mut resp: reqwest::Response, timeout: Duration) -> Vec<u8> {
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

fn basic_header(c: &Credentials) -> String {
    use base64::Engine as _;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", c.username, c.password))
    )
}

/// Tells credentials apart in the token cache without keeping another copy of the secret.
/// The run's repositories per registry, each once, in first-seen order.
fn repositories_by_registry(registries: &[RegistryRef]) -> HashMap<String, Vec<String>> {
    let mut by: HashMap<String, Vec<String>> = HashMap::new();
    let mut seen = HashSet::new();
    for r in registries {
        if seen.insert((&r.registry, &r.repository)) {
            by.entry(r.registry.clone())
                .or_default()
                .push(r.repository.clone());
        }
    }
    by
}

fn fingerprint(creds: Option<&Credentials>) -> String {
    match creds {
        None => "anonymous".to_string(),
        Some(c) => {
            let mut h = sha2::Sha256::new();
            h.update(c.username.as_bytes());
            h.update([0]);
            h.update(c.password.as_bytes());
            hex::encode(&h.finalize()[..16])
        }
    }
}

/// Where a registry's API lives: Docker Hub's references say `docker.io`, its API answers at
/// `registry-1.docker.io`.
fn api_host(registry: &str) -> &str {
    match registry {
        "docker.io" => "registry-1.docker.io",
        other => other,
    }
}

/// `host[:port]` of a URL, as certs.d names directories.
fn host_port(url: &Url) -> String {
    let host = url.host_str().unwrap_or("");
    match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    }
}

fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

fn origin_is_registry(url: &Url, reference: &RegistryRef) -> bool {
    host_port(url) == api_host(&reference.registry)
}

/// oci-client's configuration for writes (scheme per registry set by the caller).
fn oci_config(options: &ClientOptions) -> ClientConfig {
    ClientConfig {
        protocol: ClientProtocol::HttpsExcept(Vec::new()),
        accept_invalid_certificates: !options.tls_verify,
        platform_resolver: None,
        connect_timeout: Some(Duration::from_secs(10)),
        read_timeout: Some(Duration::from_secs(60)),
        user_agent: concat!("imgcheck/", env!("CARGO_PKG_VERSION")),
        ..ClientConfig::default()
    }
}

/// Serves one registry reference. Holds the reference's credentials; never printed.
pub struct RegistrySource {
    client: Arc<RegistryClient>,
    reference: RegistryRef,
    /// The credentials for this repository, or why they could not be looked up.
    creds: Result<Option<Credentials>, String>,
}

impl RegistrySource {
    fn request<'a>(
        &'a self,
        kind: Kind,
        reference_part: String,
        expected: Option<&'a Digest>,
        limit: u64,
        what: String,
    ) -> Request<'a> {
        Request {
            source: self,
            kind,
            reference_part,
            expected,
            limit,
            what,
            spool: false,
        }
    }

    /// A request for the manifest or blob `digest`, which its body must hash to.
    fn by_digest<'a>(&'a self, kind: Kind, digest: &'a Digest, limit: u64) -> Request<'a> {
        let noun = match kind {
            Kind::Manifest => "manifest",
            Kind::Blob | Kind::BlobHead => "blob",
        };
        let what = format!("{noun} {digest}");
        self.request(kind, digest.to_string(), Some(digest), limit, what)
    }

    async fn get(
        &self,
        kind: Kind,
        reference_part: String,
        expected: Option<&Digest>,
        limit: u64,
        what: String,
    ) -> Result<Body, FetchError> {
        let req = self.request(kind, reference_part, expected, limit, what);
        self.client.fetch(&req).await
    }

    /// The blob `digest` spooled to a temporary file, once it has hashed to `digest`: any
    /// size in bounded memory (retried like any request; each attempt starts a new file).
    pub async fn blob_file(&self, digest: &Digest, limit: u64) -> Result<BlobFile, FetchError> {
        let req = Request {
            spool: true,
            ..self.by_digest(Kind::Blob, digest, limit)
        };
        let body = self.client.fetch(&req).await?;
        let (path, size) = body.file.ok_or_else(|| {
            FetchError::Unavailable(format!("blob {digest}: the body was not spooled"))
        })?;
        Ok(BlobFile::new(path.to_path_buf(), size, Some(path)))
    }
}

impl RegistrySource {
    /// Does the repository hold the blob `digest`? A `HEAD` on `/v2/<repo>/blobs/<digest>`
    /// (retried like any request): `Ok(false)` on 404, an error when the registry cannot
    /// answer.
    pub async fn blob_exists(&self, digest: &Digest) -> Result<bool, FetchError> {
        match self
            .get(
                Kind::BlobHead,
                digest.to_string(),
                None,
                0,
                format!("blob {digest}"),
            )
            .await
        {
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
        let body = self
            .get(
                Kind::Manifest,
                self.reference.reference_part(),
                self.reference.digest.as_ref(),
                MAX_MANIFEST_BYTES,
                format!("manifest {}", self.reference),
            )
            .await?;
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
            self.client.fetch(&req).await.map(|b| b.bytes)
        };
        self.client.cached(&self.reference, digest, fetch).await
    }

    async fn blob(&self, digest: &Digest, limit: u64) -> Result<Vec<u8>, FetchError> {
        let fetch = async {
            let req = self.by_digest(Kind::Blob, digest, limit);
            self.client.fetch(&req).await.map(|b| b.bytes)
        };
        // Configs are shared between tags of one repository; layers (--deep) are large and
        // read once, so only small blobs go through the cache.
        if limit <= crate::manifest::MAX_CONFIG_BYTES {
            self.client.cached(&self.reference, digest, fetch).await
        } else {
            fetch.await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        let u = |s: &str| Url::parse(s).unwrap();
        assert!(same_origin(&u("http://a:80/x"), &u("http://a/y")));
        assert!(!same_origin(&u("http://a:5000/x"), &u("http://a:5001/x")));
        assert!(!same_origin(&u("https://a/x"), &u("http://a/x")));
        assert_eq!(
            host_port(&u("https://h.example:5000/v2/")),
            "h.example:5000"
        );
        assert_eq!(host_port(&u("https://h.example/v2/")), "h.example");
        assert_eq!(api_host("docker.io"), "registry-1.docker.io");
        assert_eq!(api_host("quay.io"), "quay.io");
        assert_eq!(api_host("127.0.0.1:5000"), "127.0.0.1:5000");
    }

    #[test]
    fn fingerprints_tell_credentials_apart_without_the_secret() {
        let c = |u: &str, p: &str| Credentials {
            username: u.into(),
            password: p.into(),
        };
        let a = fingerprint(Some(&c("u", "secret-one")));
        assert_ne!(a, fingerprint(Some(&c("u", "secret-two"))));
        assert_ne!(a, fingerprint(Some(&c("v", "secret-one"))));
        assert_ne!(a, fingerprint(None));
        assert!(!a.contains("secret"));
    }

    #[test]
    fn giving_up_says_how_often() {
        let e = gave_up(FetchError::Unavailable("x".into()), 5);
        assert_eq!(e.to_string(), "x (gave up after 5 attempts)");
        let d = FetchError::DigestMismatch {
            expected: "a".into(),
            actual: "b".into(),
        };
        assert_eq!(gave_up(d.clone(), 5), d);
    }
}
