//! One run's connection to the world: a shared registry client, the source of each reference
//! ([`Session::open`], layout or registry, chosen here once) and the walk of its graph.

use std::sync::Arc;
use std::time::Instant;

use crate::auth::AuthStore;
use crate::digest::Digest;
use crate::graph::{Graph, WalkOptions, walk};
use crate::reference::{ImageRef, RegistryRef};
use crate::source::FetchError;
use crate::source::layout::LayoutSource;
use crate::source::registry::{ClientOptions, RegistryClient, RegistrySource, Stats};
use crate::source::store::Store;

/// Shared state for a run over one or more references.
pub struct Session {
    client: Option<Arc<RegistryClient>>,
    options: ClientOptions,
    auth: AuthStore,
    /// When the run's registry work must be over (`--timeout`), fixed when the run starts.
    deadline: Option<Instant>,
}

/// The registry references among `refs`.
fn registries(refs: &[ImageRef]) -> Vec<RegistryRef> {
    refs.iter()
        .filter_map(|r| match r {
            ImageRef::Registry(r) => Some(r.clone()),
            ImageRef::Layout(_) => None,
        })
        .collect()
}

impl Session {
    /// Prepares a session for `refs`: the registry client is built (and plain-HTTP hosts
    /// probed) only when a registry reference is present.
    pub async fn new(options: &ClientOptions, auth: AuthStore, refs: &[ImageRef]) -> Session {
        let deadline = options.deadline.map(|d| Instant::now() + d);
        Session::until(options, auth, refs, deadline).await
    }

    async fn until(
        options: &ClientOptions,
        auth: AuthStore,
        refs: &[ImageRef],
        deadline: Option<Instant>,
    ) -> Session {
        let registries = registries(refs);
        let client = if registries.is_empty() {
            None
        } else {
            Some(Arc::new(
                RegistryClient::until(options, auth.clone(), &registries, deadline).await,
            ))
        };
        Session {
            client,
            options: options.clone(),
            auth,
            deadline,
        }
    }

    /// A session for references this run learned only from what it read (a release's
    /// components, `--from-release`): the same options and credentials, plain-HTTP probing
    /// and token scopes for `refs`, and the same deadline (`--timeout` bounds the whole run;
    /// it does not start again). Its request counters ([`Session::stats`]) are its own.
    pub async fn successor(&self, refs: &[ImageRef]) -> Session {
        Session::until(&self.options, self.auth.clone(), refs, self.deadline).await
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
        self.registry_source(reference)?.blob_exists(digest).await
    }

    /// The source of one reference: its layout, checked to be one, or its registry repository
    /// through the run's client. The one place that tells layouts and registries apart.
    pub fn open(&self, reference: &ImageRef) -> Result<Store, FetchError> {
        match reference {
            ImageRef::Layout(l) => LayoutSource::open(l).map(Store::Layout),
            ImageRef::Registry(r) => Ok(Store::Registry {
                source: self.registry_source(r)?,
                reference: r.clone(),
            }),
        }
    }

    /// Walks the graph of one reference.
    pub async fn graph(
        &self,
        reference: &ImageRef,
        options: WalkOptions,
    ) -> Result<Graph, FetchError> {
        walk(&self.open(reference)?, options).await
    }

    /// The source serving a registry reference; an error when the session was created
    /// without registry references (no client).
    pub fn registry_source(&self, reference: &RegistryRef) -> Result<RegistrySource, FetchError> {
        let client = self.client.as_ref().ok_or_else(|| {
            FetchError::bad_input(format!(
                "{reference}: session was created without registry references"
            ))
        })?;
        Ok(client.source(reference))
    }

    /// The shared registry client, when the session has registry references.
    pub fn registry_client(&self) -> Option<&Arc<RegistryClient>> {
        self.client.as_ref()
    }
}
