//! The source of one reference, layout or registry, chosen once: `Session::open`
//! makes a [`Store`] from an [`ImageRef`](crate::reference::ImageRef), and everything that reads
//! an image by its reference (the graph walk, a release image, `assemble`'s children) reads it
//! through that, never matching the reference's kind again.

use super::layout::LayoutSource;
use super::registry::RegistrySource;
use super::{BlobFile, BlobStream, FetchError, Fetched, Source};
use crate::digest::Digest;
use crate::reference::RegistryRef;

/// A layout directory or a registry repository, serving one reference: every [`Source`] method,
/// and [`Store::blob_file`] for copies.
pub enum Store {
    /// An OCI image layout directory.
    Layout(LayoutSource),
    /// A repository of a registry.
    Registry {
        /// The source.
        source: RegistrySource,
        /// The reference it serves (a mount names its repository).
        reference: RegistryRef,
    },
}

impl Store {
    /// The registry reference served, when this is a registry.
    pub fn registry_ref(&self) -> Option<&RegistryRef> {
        match self {
            Store::Layout(_) => None,
            Store::Registry { reference, .. } => Some(reference),
        }
    }

    /// A blob on disk, checked against its digest, for a copy in bounded memory: the layout's
    /// own file, or a registry blob spooled to a temporary file.
    pub async fn blob_file(&self, digest: &Digest, limit: u64) -> Result<BlobFile, FetchError> {
        match self {
            Store::Layout(s) => s.blob_file(digest, limit).await,
            Store::Registry { source, .. } => source.blob_file(digest, limit).await,
        }
    }
}

impl Source for Store {
    fn name(&self) -> String {
        match self {
            Store::Layout(s) => s.name(),
            Store::Registry { source, .. } => source.name(),
        }
    }

    fn pinned(&self) -> Option<Digest> {
        match self {
            Store::Layout(s) => s.pinned(),
            Store::Registry { source, .. } => source.pinned(),
        }
    }

    fn checks_digests(&self) -> bool {
        match self {
            Store::Layout(s) => s.checks_digests(),
            Store::Registry { source, .. } => source.checks_digests(),
        }
    }

    async fn top(&self) -> Result<Fetched, FetchError> {
        match self {
            Store::Layout(s) => s.top().await,
            Store::Registry { source, .. } => source.top().await,
        }
    }

    async fn manifest(&self, digest: &Digest, limit: u64) -> Result<Vec<u8>, FetchError> {
        match self {
            Store::Layout(s) => s.manifest(digest, limit).await,
            Store::Registry { source, .. } => source.manifest(digest, limit).await,
        }
    }

    async fn blob(&self, digest: &Digest, limit: u64) -> Result<Vec<u8>, FetchError> {
        match self {
            Store::Layout(s) => s.blob(digest, limit).await,
            Store::Registry { source, .. } => source.blob(digest, limit).await,
        }
    }

    async fn blob_stream(&self, digest: &Digest, limit: u64) -> Result<BlobStream, FetchError> {
        match self {
            Store::Layout(s) => s.blob_stream(digest, limit).await,
            Store::Registry { source, .. } => source.blob_stream(digest, limit).await,
        }
    }
}
