//! A registry speaking the OCI distribution API, through `oci-client`.
//!
//! oci-client does the token dance (anonymous and Basic-authenticated bearer tokens, Basic
//! auth) and checks manifest bodies against a pinned digest; we recheck every body ourselves
//! in the graph walker anyway. Known limits (DOMAIN.md §7), handled by the hardening work:
//! manifests are buffered before the size check, and there are no retries.

use std::sync::Arc;

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
}

/// One client shared by every reference of a run: connections and tokens are reused.
pub struct RegistryClient {
    client: oci_client::Client,
    auth: AuthStore,
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
        }
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
        let (bytes, _digest) = self
            .client
            .client
            .pull_manifest_raw(&reference.to_oci(), &self.auth, &ACCEPTED_MANIFEST_TYPES)
            .await
            .map_err(|e| map_error(what, e))?;
        if bytes.len() as u64 > limit {
            return Err(FetchError::TooLarge {
                what: what.to_string(),
                limit,
            });
        }
        Ok(bytes.to_vec())
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
        self.pull_manifest(&reference, &format!("manifest {digest}"), limit)
            .await
    }

    async fn blob(&self, digest: &Digest, limit: u64) -> Result<Vec<u8>, FetchError> {
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
            if bytes.len() as u64 > limit {
                return Err(FetchError::TooLarge { what, limit });
            }
        }
        Ok(bytes)
    }
}
