//! Copying images into the target repository, through the [`WriteSink`] abstraction: each blob
//! checked for first, mounted from another repository of the same registry when it can be, or
//! sent through a file (layers of any size in bounded memory); then the manifest, by digest.
//! Every byte copied was checked against its digest (and size) first, so a corrupt layout or a
//! lying registry cannot make us publish other content under a digest. Foreign layers (`urls`,
//! non-distributable types) are never copied: they live elsewhere.

use std::collections::HashSet;
use std::sync::Arc;

use futures::StreamExt;
use http::header::HeaderValue;

use super::failure::{Failure, unreadable, unusable};
use super::read::Piece;
use crate::graph::MAX_LAYER_BYTES;
use crate::manifest::Descriptor;
use crate::reference::RegistryRef;
use crate::session::Session;
use crate::source::FetchError;
use crate::source::registry::RegistrySource;
use crate::source::sink::WriteSink;
use crate::source::store::Store;

/// Blob copies in flight at once.
const COPY_JOBS: usize = 4;

/// What happened to the blobs and manifests of the children.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyStats {
    /// Child manifests written into the target repository.
    pub manifests: usize,
    /// Blobs the target repository already had.
    pub present: usize,
    /// Blobs mounted from another repository of the same registry.
    pub mounted: usize,
    /// Blobs uploaded.
    pub uploaded: usize,
    /// Foreign layers left out.
    pub foreign: usize,
}

impl CopyStats {
    /// One line for the user.
    pub fn summary(&self) -> String {
        format!(
            "{} child manifests copied; blobs: {} uploaded, {} mounted, {} already present, {} foreign not copied",
            self.manifests, self.uploaded, self.mounted, self.present, self.foreign
        )
    }

    /// Counts one blob copied.
    pub(super) fn count(&mut self, copy: BlobCopy) {
        match copy {
            BlobCopy::Present => self.present += 1,
            BlobCopy::Mounted => self.mounted += 1,
            BlobCopy::Uploaded => self.uploaded += 1,
        }
    }
}

/// How one blob got into the target.
pub(super) enum BlobCopy {
    /// The target had it.
    Present,
    /// Mounted from another repository of the target's registry.
    Mounted,
    /// Sent through a file.
    Uploaded,
}

/// Writes into the target repository.
pub(super) struct Writer<'a, S> {
    /// Where the writes go.
    pub(super) target: S,
    name: &'a RegistryRef,
}

impl<'a> Writer<'a, RegistrySource> {
    /// A writer to `target`, through the session's registry client.
    pub(super) fn open(
        session: &Session,
        target: &'a RegistryRef,
    ) -> Result<Writer<'a, RegistrySource>, Failure> {
        let sink = session
            .registry_source(target)
            .map_err(|_| Failure::NoRegistryClient {
                target: target.to_string(),
            })?;
        Ok(Writer {
            target: sink,
            name: target,
        })
    }
}

impl<S: WriteSink> Writer<'_, S> {
    fn failed(&self, action: String, source: FetchError) -> Failure {
        Failure::Write {
            target: self.name.to_string(),
            action,
            source,
        }
    }

    /// Copies the blob `d` of `source` (named `origin` in messages) unless the target has it.
    pub(super) async fn copy_blob(
        &self,
        source: &Store,
        origin: &str,
        d: &Descriptor,
    ) -> Result<BlobCopy, Failure> {
        let digest = d.digest().map_err(|e| unreadable(origin, None, e))?;
        let exists = self
            .target
            .has_blob(&digest)
            .await
            .map_err(|e| self.failed(format!("check blob {digest}"), e))?;
        if exists {
            return Ok(BlobCopy::Present);
        }
        if let Some(from) = source.registry_ref()
            && from.registry == self.name.registry
        {
            match self.target.mount(&digest, from).await {
                Ok(true) => return Ok(BlobCopy::Mounted),
                Ok(false) => {}
                // A registry that cannot mount can still take an upload.
                Err(e) => tracing::info!(
                    "mount of blob {digest} failed, uploading it: {}",
                    crate::error::one_line(&e)
                ),
            }
        }
        // Through a file (the layout's own, or a spooled download) and sent in chunks:
        // layers of any size in bounded memory. The registry checks the digest again when
        // the upload is committed.
        let blob = source
            .blob_file(&digest, MAX_LAYER_BYTES)
            .await
            .map_err(|e| unreadable(origin, Some(format!("blob {digest}")), e))?;
        if u64::try_from(d.size).ok() != Some(blob.size) {
            return Err(unusable(
                origin,
                format!(
                    "blob {digest}: {} bytes, but the descriptor says {}; not copied",
                    blob.size, d.size
                ),
            ));
        }
        self.target
            .put_blob(&digest, &blob)
            .await
            .map_err(|e| self.failed(format!("upload blob {digest}"), e))?;
        Ok(BlobCopy::Uploaded)
    }

    /// Writes `bytes` as the manifest `reference_part` (a digest or the tag) of the target.
    pub(super) async fn put_manifest(
        &self,
        reference_part: &str,
        bytes: &[u8],
        media_type: &str,
    ) -> Result<(), Failure> {
        // Refused before anything is sent: the media type goes out as a `Content-Type`.
        HeaderValue::from_str(media_type).map_err(|e| Failure::MediaType {
            media_type: media_type.to_string(),
            source: Arc::new(e),
        })?;
        self.target
            .put_manifest(reference_part, bytes, media_type)
            .await
            .map_err(|e| self.failed(format!("push manifest {reference_part}"), e))
    }

    /// Copies one image into the target repository: blobs first, then its manifest by digest.
    pub(super) async fn copy_piece(
        &self,
        source: &Store,
        piece: &Piece,
        done: &mut HashSet<String>,
        stats: &mut CopyStats,
    ) -> Result<(), Failure> {
        let mut pending = Vec::new();
        for d in &piece.blobs {
            if d.is_foreign_layer() {
                stats.foreign += 1;
            } else if done.insert(d.digest.clone()) {
                pending.push(d);
            }
        }
        let origin = piece.image.origin.as_str();
        let results: Vec<Result<BlobCopy, Failure>> = futures::stream::iter(pending)
            .map(|d| self.copy_blob(source, origin, d))
            .buffer_unordered(COPY_JOBS)
            .collect()
            .await;
        for r in results {
            stats.count(r?);
        }
        let digest = piece.image.digest.to_string();
        self.put_manifest(&digest, &piece.manifest, &piece.image.media_type)
            .await?;
        stats.manifests += 1;
        Ok(())
    }
}
