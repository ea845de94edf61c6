//! Registry writes for `assemble`, through the same client as reads (docs/decisions.md
//! says why not oci-client): a cross-repository mount, a blob upload, a manifest PUT. Each
//! is retried like a read (backoff, `Retry-After`, the request timeout, the deadline),
//! authenticated like a read (a failing credential helper fails the write the same way;
//! tokens ask for `pull,push`), told as `tracing` events and counted in [`super::Stats`].
//! The writes themselves are [`RegistrySource`] methods, on top of the stack.

use http::header::HeaderValue;
use http::{Method, StatusCode};
use url::Url;

use super::client::RegistrySource;
use super::request::Payload;
use super::upload::check_stored_digest;
use crate::digest::Digest;
use crate::reference::RegistryRef;
use crate::source::{BlobFile, FetchError};

impl RegistrySource {
    /// Asks the registry to mount the blob `digest` from `from` (another repository of the
    /// same registry) into this repository: `Ok(true)` when it did (201), `Ok(false)` when
    /// it declined (it then opens an upload session, which is left to expire).
    pub async fn mount_blob(
        &self,
        digest: &Digest,
        from: &RegistryRef,
    ) -> Result<bool, FetchError> {
        let what = format!("mount blob {digest} from {}", from.repository);
        let writer = self.writer();
        let mut url = writer.api_url("blobs/uploads/").await?;
        url.query_pairs_mut()
            .append_pair("mount", &digest.to_string())
            .append_pair("from", &from.repository);
        let mounted = writer
            .requests
            .retrying(&what, || async {
                let resp = writer
                    .send_write(&url, Payload::empty(Method::POST), &what)
                    .await?;
                Ok(resp.status() == StatusCode::CREATED)
            })
            .await?;
        if mounted {
            tracing::info!(
                "{}: mounted blob {digest} from {}",
                self.reference(),
                from.repository
            );
        }
        Ok(mounted)
    }

    /// Uploads `blob` (already checked against `digest`) into this repository. Each attempt
    /// starts a new upload session and sends the whole file again; the registry checks the
    /// digest when the upload is committed.
    pub async fn upload_blob(&self, digest: &Digest, blob: &BlobFile) -> Result<(), FetchError> {
        let what = format!("{}: upload blob {digest}", self.reference());
        tracing::info!("{what} ({} bytes)", blob.size);
        let writer = self.writer();
        writer
            .requests
            .retrying(&what, || writer.upload_attempt(digest, blob, &what))
            .await
    }

    /// PUTs `bytes` as the manifest `reference_part` (a tag or a digest) of this repository,
    /// with `media_type` as its Content-Type. The registry's `Docker-Content-Digest`, when
    /// it sends one, must be the hash of `bytes`.
    pub async fn put_manifest(
        &self,
        reference_part: &str,
        bytes: &[u8],
        media_type: &HeaderValue,
    ) -> Result<(), FetchError> {
        let reference = self.reference();
        let what = format!(
            "{}/{}: put manifest {reference_part}",
            reference.registry, reference.repository
        );
        let writer = self.writer();
        let url: Url = writer
            .api_url(&format!("manifests/{reference_part}"))
            .await?;
        let digest = Digest::sha256(bytes);
        let body = bytes::Bytes::copy_from_slice(bytes);
        tracing::info!("{what} ({} bytes, {digest})", bytes.len());
        writer
            .requests
            .retrying(&what, || async {
                let payload = Payload::with_body(Method::PUT, media_type.clone(), body.clone());
                let resp = writer.send_write(&url, payload, &what).await?;
                check_stored_digest(&resp, &digest, Some(bytes))
            })
            .await
    }
}
