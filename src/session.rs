//! One run's connection to the world: a shared registry client, the source of each reference
//! ([`Session::open`], layout or registry, chosen here once) and the walk of its graph.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::auth::AuthStore;
use crate::digest::Digest;
use crate::graph::{Graph, WalkOptions, walk};
use crate::reference::{ImageRef, RegistryRef};
use crate::source::FetchError;
use crate::source::layout::LayoutSource;
use crate::source::registry::{ClientOptions, RegistryClient, RegistrySource, Stats};
use crate::source::store::Store;

/// Shared state for a whole run, whose references are learned as it goes (a release's
/// components only once the release is read): one registry client, one `--timeout`
/// deadline, one set of request counters.
pub struct Session {
    client: Arc<RegistryClient>,
    /// Was the session told of a registry reference ([`Session::expect`])? Until then it
    /// serves no registry and has no request counters.
    registries: AtomicBool,
}

impl Session {
    /// A session with these options and credentials; the run's deadline (`--timeout`)
    /// starts now. No registry is contacted until a reference needs it.
    pub fn new(options: &ClientOptions, auth: AuthStore) -> Session {
        Session {
            client: Arc::new(RegistryClient::new(options, auth)),
            registries: AtomicBool::new(false),
        }
    }

    /// Tells the session the references the run will read, as it learns them (once at the
    /// start, again after a release is read): the registry ones are served from then on,
    /// and a token request asks for several of their repositories at once.
    pub fn expect(&self, refs: &[ImageRef]) {
        let registries: Vec<RegistryRef> = refs
            .iter()
            .filter_map(|r| match r {
                ImageRef::Registry(r) => Some(r.clone()),
                ImageRef::Layout(_) => None,
            })
            .collect();
        if !registries.is_empty() {
            self.client.expect(&registries);
            self.registries.store(true, Ordering::Relaxed);
        }
    }

    /// Registry request counters, when the session was told of a registry reference.
    pub fn stats(&self) -> Option<&Stats> {
        self.registry_client().map(|c| c.stats())
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
            ImageRef::Layout(l) => LayoutSource::open(l)
                .map(|s| Store::Layout(s.with_deadline(self.client.deadline()))),
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

    /// The source serving a registry reference; an error when the session was told of no
    /// registry reference.
    pub fn registry_source(&self, reference: &RegistryRef) -> Result<RegistrySource, FetchError> {
        let client = self.registry_client().ok_or_else(|| {
            FetchError::bad_input(format!(
                "{reference}: session was created without registry references"
            ))
        })?;
        Ok(client.source(reference))
    }

    /// The shared registry client, when the session was told of a registry reference.
    pub fn registry_client(&self) -> Option<&Arc<RegistryClient>> {
        self.registries
            .load(Ordering::Relaxed)
            .then_some(&self.client)
    }
}
