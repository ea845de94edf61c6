//! Where image bytes go: the write side of a [`Source`](super::Source). A [`WriteSink`] takes
//! blobs by digest and manifests by digest or under a tag; `assemble` writes through it, never
//! naming a registry's own write calls. A registry repository is one (its writes are those of
//! `registry/writes.rs`, retried like reads); an OCI image layout can be one too (blobs at
//! `blobs/<alg>/<hex>`, manifests by digest the same way, a tag as an `index.json` entry).

use std::future::Future;

use http::header::HeaderValue;

use super::registry::RegistrySource;
use super::{BlobFile, FetchError};
use crate::digest::Digest;
use crate::reference::RegistryRef;

/// A place that takes the blobs and manifests of images.
pub trait WriteSink: Send + Sync {
    /// Does it hold the blob `digest` already?
    fn has_blob(&self, digest: &Digest) -> impl Future<Output = Result<bool, FetchError>> + Send;

    /// Takes the blob `digest` from `from` (another repository of the same registry) without
    /// copying its bytes: `Ok(true)` when it did, `Ok(false)` when it declined or cannot (the
    /// caller then copies the blob). The default cannot.
    fn mount(
        &self,
        digest: &Digest,
        from: &RegistryRef,
    ) -> impl Future<Output = Result<bool, FetchError>> + Send {
        let _ = (digest, from);
        async { Ok(false) }
    }

    /// Stores `blob`, whose bytes already hashed to `digest`.
    fn put_blob(
        &self,
        digest: &Digest,
        blob: &BlobFile,
    ) -> impl Future<Output = Result<(), FetchError>> + Send;

    /// Stores `bytes` as the manifest `reference` (its digest, or a tag to point at it), of
    /// media type `media_type`.
    fn put_manifest(
        &self,
        reference: &str,
        bytes: &[u8],
        media_type: &str,
    ) -> impl Future<Output = Result<(), FetchError>> + Send;
}

/// A registry repository takes writes through the run's client: a `HEAD`, a cross-repository
/// mount, a chunked upload and a manifest `PUT`, each retried like a read.
impl WriteSink for RegistrySource {
    async fn has_blob(&self, digest: &Digest) -> Result<bool, FetchError> {
        self.blob_exists(digest).await
    }

    async fn mount(&self, digest: &Digest, from: &RegistryRef) -> Result<bool, FetchError> {
        self.mount_blob(digest, from).await
    }

    async fn put_blob(&self, digest: &Digest, blob: &BlobFile) -> Result<(), FetchError> {
        self.upload_blob(digest, blob).await
    }

    async fn put_manifest(
        &self,
        reference: &str,
        bytes: &[u8],
        media_type: &str,
    ) -> Result<(), FetchError> {
        let content_type = HeaderValue::from_str(media_type)
            .map_err(|e| FetchError::bad_input_by(format!("media type '{media_type}'"), e))?;
        RegistrySource::put_manifest(self, reference, bytes, &content_type).await
    }
}
