//! The run's fetch cache: manifests and small blobs are fetched once per (repository,
//! digest) — existence in one repository proves nothing about another — and every later
//! caller gets the same bytes, or the same error, while the answer is kept. The cache is
//! bounded ([`CACHE_BYTES`]): past the bound the answers used least recently are dropped
//! (a later caller fetches again), so a whole catalog is checked in bounded memory.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use tokio::sync::OnceCell;

use super::mutex::lock;
use super::options::Stats;
use crate::digest::Digest;
use crate::reference::RegistryRef;
use crate::source::FetchError;

/// (`registry/repository`, digest); shared between the map and the order of use.
type CacheKey = (String, Digest);
type CacheSlot = Arc<OnceCell<Result<Arc<Vec<u8>>, FetchError>>>;

/// The bytes the cache keeps at most, answers and keys counted (an answer is at most a
/// manifest's or a config's limit, far below this): enough for the children and configs of
/// the images in flight and of many images before them (a catalog's tags share children).
pub(super) const CACHE_BYTES: usize = 8 * 1024 * 1024;

/// What an entry costs besides its bytes and key (the map's and the order's bookkeeping,
/// the slot, an error's text).
const ENTRY_OVERHEAD: usize = 256;

/// Fetch results by (`registry/repository`, digest), the least recently used dropped past
/// the bound.
pub(super) struct FetchCache {
    bound: usize,
    state: Mutex<State>,
}

impl Default for FetchCache {
    fn default() -> FetchCache {
        FetchCache::bounded(CACHE_BYTES)
    }
}

/// The entries, their order of last use and their cost.
#[derive(Default)]
struct State {
    /// Hashed with foldhash, randomly seeded per run: SipHash was 630 instructions per
    /// lookup, two lookups per request. Keys come from registries' answers, so the seed is
    /// random (an answer cannot aim at one bucket without knowing it), and the map holds
    /// at most [`CACHE_BYTES`] / [`ENTRY_OVERHEAD`] entries whatever happens.
    entries: HashMap<Arc<CacheKey>, Entry, foldhash::fast::RandomState>,
    /// Keys by their last use (a tick), oldest first.
    order: BTreeMap<u64, Arc<CacheKey>>,
    tick: u64,
    /// The cost of the entries whose answer is in.
    bytes: usize,
}

struct Entry {
    /// Its key, as the map and the order of use hold it.
    key: Arc<CacheKey>,
    slot: CacheSlot,
    /// Its last use.
    used: u64,
    /// Its cost once its answer is in (0 before).
    cost: usize,
}

impl FetchCache {
    /// A cache that keeps at most `bound` bytes of answers (and their keys).
    pub(super) fn bounded(bound: usize) -> FetchCache {
        FetchCache {
            bound,
            state: Mutex::new(State::default()),
        }
    }

    /// Runs `fetch` once per (repository, digest) while its answer is kept; later callers
    /// get the same bytes (or the same error), each counted in `stats` as a cache hit.
    /// Callers that come while it runs wait for it. `fetch` makes the fetch's future only
    /// when it runs, so this future holds it once.
    pub(super) async fn cached<F, Fut>(
        &self,
        stats: &Stats,
        reference: &RegistryRef,
        digest: &Digest,
        fetch: F,
    ) -> Result<Vec<u8>, FetchError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Vec<u8>, FetchError>>,
    {
        let (registry, repository) = (&reference.registry, &reference.repository);
        let mut name = String::with_capacity(registry.len() + 1 + repository.len());
        name.push_str(registry);
        name.push('/');
        name.push_str(repository);
        let (key, slot) = lock(&self.state).slot((name, digest.clone()));
        let mut ran = false;
        let result = slot
            .get_or_init(|| {
                ran = true;
                fetch().map(|r| r.map(Arc::new))
            })
            .await;
        if ran {
            let size = result.as_ref().map_or(0, |b| b.len());
            lock(&self.state).answered(&key, &slot, size, self.bound);
        } else {
            Stats::count(&stats.cache_hits);
        }
        result.clone().map(|b| b.as_ref().clone())
    }

    /// The cost of the answers kept now.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        lock(&self.state).bytes
    }
}

impl State {
    /// The slot of `key` and the key as the books share it, the slot made if missing and
    /// marked as used now. A new key is moved into its entry, never copied: the entry and
    /// the order of use share it.
    fn slot(&mut self, key: CacheKey) -> (Arc<CacheKey>, CacheSlot) {
        self.tick += 1;
        let tick = self.tick;
        let (shared, slot) = match self.entries.get_mut(&key) {
            Some(entry) => {
                self.order.remove(&entry.used);
                entry.used = tick;
                (Arc::clone(&entry.key), Arc::clone(&entry.slot))
            }
            None => {
                let shared = Arc::new(key);
                let slot = CacheSlot::default();
                let entry = Entry {
                    key: Arc::clone(&shared),
                    slot: Arc::clone(&slot),
                    used: tick,
                    cost: 0,
                };
                self.entries.insert(Arc::clone(&shared), entry);
                (shared, slot)
            }
        };
        self.order.insert(tick, Arc::clone(&shared));
        (shared, slot)
    }

    /// The answer of `slot` (for `key`) is in, `size` bytes: counted, then the entries used
    /// least recently are dropped until the answers kept fit in `bound` (those still being
    /// fetched stay: their callers wait on them).
    fn answered(&mut self, key: &CacheKey, slot: &CacheSlot, size: usize, bound: usize) {
        let Some(entry) = self.entries.get_mut(key) else {
            return;
        };
        if !Arc::ptr_eq(&entry.slot, slot) {
            return;
        }
        entry.cost = size + key.0.len() + ENTRY_OVERHEAD;
        self.bytes += entry.cost;
        let mut kept = Vec::new();
        while self.bytes > bound {
            let Some((used, oldest)) = self.order.pop_first() else {
                break;
            };
            match self.entries.get(&oldest) {
                Some(e) if e.slot.initialized() => {
                    self.bytes -= e.cost;
                    self.entries.remove(&oldest);
                }
                _ => kept.push((used, oldest)),
            }
        }
        self.order.extend(kept);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::allocs::allocations;
    use std::sync::atomic::Ordering;

    fn digest(i: usize) -> Digest {
        format!("sha256:{:064x}", i).parse().unwrap()
    }

    /// Issue 24: asking for a kept answer again copies no key (it was copied into the map
    /// and again into the order of use at every ask: four allocations), and a new answer's
    /// key is moved in, not copied (copied once it was three allocations more).
    #[test]
    fn the_books_copy_a_key_once() {
        let mut state = State::default();
        let keys: Vec<CacheKey> = (0..64)
            .map(|i| (format!("q.io/org/r{i}"), digest(i)))
            .collect();
        let slots: Vec<CacheSlot> = keys.iter().map(|k| state.slot(k.clone()).1).collect();
        let mut total = 0;
        for (key, slot) in keys.iter().zip(&slots) {
            let asked = key.clone();
            let ((_, again), n) = allocations(|| state.slot(asked));
            assert!(Arc::ptr_eq(&again, slot), "{}", key.0);
            total += n;
        }
        // only the order's tree grows a node now and then
        assert!(total <= 16, "{total} allocations to find 64 keys again");
        state.entries.reserve(1);
        let key = (String::from("q.io/org/new"), digest(99));
        let ((shared, _), n) = allocations(|| state.slot(key));
        assert_eq!(shared.0, "q.io/org/new");
        // the shared key's box, the slot; the order's tree may grow a node
        assert!(n <= 3, "{n} allocations for a new key");
        assert_eq!(state.entries.len(), 65);
        assert_eq!(state.order.len(), 65);
    }

    /// Issue 24: whatever the number of answers, the cache keeps at most its bound; the
    /// answers used recently stay (hits), those dropped are fetched again when asked.
    #[tokio::test]
    async fn the_cache_keeps_at_most_its_bound() {
        let bound = 64 * 1024;
        let cache = FetchCache::bounded(bound);
        let stats = Stats::default();
        let crate::reference::ImageRef::Registry(repo) = "q.io/org/repo:v1".parse().unwrap() else {
            unreachable!("a registry reference")
        };
        let fetches = std::sync::atomic::AtomicUsize::new(0);
        let get = |i: usize| {
            let (cache, stats, repo, fetches) = (&cache, &stats, &repo, &fetches);
            async move {
                let fetch = || async {
                    fetches.fetch_add(1, Ordering::SeqCst);
                    match i % 10 {
                        9 => Err(FetchError::NotFound(format!("blob {i}"))),
                        _ => Ok(vec![i as u8; 4096]),
                    }
                };
                cache.cached(stats, repo, &digest(i), fetch).await
            }
        };
        for round in 0..3 {
            for i in 0..1000 {
                let got = get(i).await;
                assert_eq!(got.is_ok(), i % 10 != 9, "{i}");
                // one answer used all along stays
                assert_eq!(get(0).await.unwrap(), vec![0u8; 4096]);
                assert!(
                    cache.bytes() <= bound,
                    "round {round}, {i}: {}",
                    cache.bytes()
                );
            }
        }
        let hits = stats.cache_hits.load(Ordering::SeqCst) as usize;
        let fetched = fetches.load(Ordering::SeqCst);
        // 3000 asks + 3000 asks of the hot one: the hot one fetched once; the others far
        // more often than once each (dropped, fetched again)
        assert_eq!(hits + fetched, 6000);
        assert!(fetched > 2 * 1000, "{fetched} fetches: nothing was dropped");
        // a small working set stays whole: asked again, no new fetch
        let before = fetches.load(Ordering::SeqCst);
        for i in 2000..2005 {
            get(i).await.unwrap();
            get(i).await.unwrap();
        }
        assert_eq!(fetches.load(Ordering::SeqCst), before + 5);
    }
}
