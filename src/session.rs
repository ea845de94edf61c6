//! One run's connection to the world: a shared registry client and the walk of each
//! reference through the right [`Source`](crate::source::Source).

use std::sync::Arc;

use crate::auth::AuthStore;
use crate::digest::Digest;
use crate::graph::{Graph, WalkOptions, walk};
use crate::reference::{ImageRef, RegistryRef};
use crate::source::FetchError;
use crate::source::layout::LayoutSource;
use crate::source::registry::{ClientOptions, RegistryClient, Stats};

/// Shared state for a run over one or more references.
pub struct Session {
    client: Option<Arc<RegistryClient>>,
}

impl Session {
    /// Prepares a session for `refs`: the registry client is built (and plain-HTTP hosts
    /// probed) only when a registry reference is present.
    pub async fn new(options: &ClientOptions, auth: AuthStore, refs: &[ImageRef]) -> Session {
        let registries: Vec<RegistryRef> = refs
            .iter()
            .filter_map(|r| match r {
                ImageRef::Registry(r) => Some(r.clone()),
                ImageRef::Layout(_) => None,
            })
            .collect();
        let client = if registries.is_empty() {
            None
        } else {
            Some(Arc::new(
                RegistryClient::new(options, auth, &registries).await,
            ))
        };
        Session { client }
    }

    /// Registry request counters, when a registry was contacted.
    pub fn stats(&self) -> Option<&Stats> {
        self.client.as_deref().map(RegistryClient::stats)
    }

    /// Does the registry repository of `reference` hold the blob `digest` (a `HEAD`)?
    pub async fn blob_exists(
        &self,
        reference: &RegistryRef,
        digest: &Digest,
    ) -> Result<bool, FetchError> {
        let client = self.client.as_ref().ok_or_else(|| {
            FetchError::BadInput(format!(
                "{reference}: session was created without registry references"
            ))
        })?;
        client.source(reference).blob_exists(digest).await
    }

    /// Walks the graph of one reference.
    pub async fn graph(
        &self,
        reference: &ImageRef,
        options: WalkOptions,
    ) -> Result<Graph, FetchError> {
        match reference {
            ImageRef::Layout(l) => walk(&LayoutSource::open(l)?, options).await,
            ImageRef::Registry(r) => {
                let client = self.client.as_ref().ok_or_else(|| {
                    FetchError::BadInput(format!(
                        "{r}: session was created without registry references"
                    ))
                })?;
                walk(&client.source(r), options).await
            }
        }
    }

    /// The shared registry client, when the session has registry references.
    pub fn registry_client(&self) -> Option<&Arc<RegistryClient>> {
        self.client.as_ref()
    }
}
