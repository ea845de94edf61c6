//! The run's fetch cache: manifests and small blobs are fetched once per (repository,
//! digest) — existence in one repository proves nothing about another — and every later
//! caller gets the same bytes, or the same error.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use super::mutex::lock;
use super::options::Stats;
use crate::digest::Digest;
use crate::reference::RegistryRef;
use crate::source::FetchError;

type CacheKey = (String, Digest);
type CacheSlot = Arc<OnceCell<Result<Arc<Vec<u8>>, FetchError>>>;

/// Fetch results by (`registry/repository`, digest).
#[derive(Default)]
pub(super) struct FetchCache {
    slots: Mutex<HashMap<CacheKey, CacheSlot>>,
}

impl FetchCache {
    /// Runs `fetch` once per (repository, digest) for the whole run; later callers get the
    /// same bytes (or the same error), each counted in `stats` as a cache hit.
    pub(super) async fn cached<F>(
        &self,
        stats: &Stats,
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
        let slot = Arc::clone(lock(&self.slots).entry(key).or_default());
        let mut ran = false;
        let result = slot
            .get_or_init(|| {
                ran = true;
                async { fetch.await.map(Arc::new) }
            })
            .await;
        if !ran {
            Stats::count(&stats.cache_hits);
        }
        result.clone().map(|b| b.as_ref().clone())
    }
}
