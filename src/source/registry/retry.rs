//! How often and how long a request is tried: attempts bounded by request slots, the
//! per-request timeout and the run's deadline; retries with exponential backoff and jitter
//! (or the server's `Retry-After`) for faults that may heal, each counted and told as a
//! `tracing` event.

use std::time::{Duration, Instant};

use tokio::sync::{Mutex as AsyncMutex, Semaphore};

use super::attempt::Sender;
use super::body::Body;
use super::failure::{Failure, backoff, error_chain, gave_up};
use super::link::Link;
use super::options::{ClientOptions, Stats};
use super::ping::Base;
use super::request::{Kind, Request};
use crate::auth::AuthStore;
use crate::source::FetchError;

/// Sends requests with retries, at most `--jobs` attempts in flight at once.
pub(super) struct Requests {
    pub(super) sender: Sender,
    slots: Semaphore,
}

impl Requests {
    /// Requests for a run that starts now, with `options` and `store`'s credentials.
    pub(super) fn new(options: &ClientOptions, store: AuthStore) -> Requests {
        Requests {
            sender: Sender::new(Link::new(options), store),
            slots: Semaphore::new(options.max_requests.max(1)),
        }
    }

    /// The run's options, deadline, counters and HTTP clients.
    pub(super) fn link(&self) -> &Link {
        &self.sender.link
    }

    /// One GET with retries. Each attempt takes a request slot, is bounded by the
    /// per-request timeout (and what is left of the deadline), and is counted. On a
    /// registry's first use, the request itself finds out its scheme (see [`Base`]).
    pub(super) async fn fetch(&self, req: &Request<'_>) -> Result<Body, FetchError> {
        let stats = &self.link().stats;
        let count = || {
            Stats::count(match req.kind {
                Kind::Manifest | Kind::Referrers => &stats.manifest_requests,
                Kind::Blob | Kind::BlobHead => &stats.blob_requests,
            })
        };
        let probing = match self.sender.base(&req.access.reference).await {
            Base::Known(base) => {
                return self
                    .retrying(&req.what, || async {
                        count();
                        self.sender.attempt(req, &base).await
                    })
                    .await;
            }
            Base::Probing(probing) => AsyncMutex::new(probing),
        };
        let learning = self
            .retrying(&req.what, || async {
                count();
                let mut probing = probing.lock().await;
                self.sender.attempt_learning(req, &mut probing).await
            })
            .await;
        // Faults that never healed on plain HTTP: HTTPS, as after a `/v2/` probe that
        // never had an answer.
        let Some(base) = probing.into_inner().give_up() else {
            return learning;
        };
        let tls = self
            .retrying(&req.what, || async {
                count();
                self.sender.attempt(req, &base).await
            })
            .await;
        // A server that does not speak TLS either (rustls read no TLS record from it): what
        // it answered over plain HTTP, unreadable as it was, is the error to show.
        match (tls, learning) {
            (Err(tls), Err(plain)) if error_chain(&tls).contains("received corrupt message") => {
                Err(plain)
            }
            (tls, _) => tls,
        }
    }

    /// Runs attempts made by `attempt` until one succeeds, one fails for good, the retries
    /// are used up or the deadline passes; between attempts, the backoff (or the server's
    /// `Retry-After`), each retry counted and told. Reads and writes retry alike.
    pub(super) async fn retrying<T, F, Fut>(
        &self,
        what: &str,
        mut attempt: F,
    ) -> Result<T, FetchError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Failure>>,
    {
        let mut attempts: u32 = 0;
        loop {
            let (err, retry_after) = match self.counted_attempt(what, &mut attempt).await? {
                Ok(body) => return Ok(body),
                Err(Failure::Fatal(e)) => return Err(e),
                Err(Failure::Retry(e, after)) => (e, after),
            };
            attempts += 1;
            if !self.before_retry(attempts, retry_after, &err).await {
                return Err(gave_up(err, attempts));
            }
        }
    }

    /// After `attempts` failed attempts (the last with `err`): waits the backoff step (or
    /// the server's `Retry-After`), counting and telling the retry, and returns true; or
    /// returns false at once when the retries are used up or the deadline would pass first.
    pub(super) async fn before_retry(
        &self,
        attempts: u32,
        retry_after: Option<Duration>,
        err: &FetchError,
    ) -> bool {
        let link = self.link();
        let retries = link.options.retries;
        if attempts > retries {
            return false;
        }
        let delay = retry_after.unwrap_or_else(|| backoff(link.options.backoff, attempts - 1));
        if link.remaining().is_some_and(|left| left <= delay) {
            return false;
        }
        Stats::count(&link.stats.retries);
        let why = if retry_after.is_some() {
            " (Retry-After)"
        } else {
            ""
        };
        tracing::info!(
            "retry {attempts}/{retries} in {:.1}s{why}: {}",
            delay.as_secs_f64(),
            error_chain(err)
        );
        tokio::time::sleep(delay).await;
        true
    }

    /// One attempt in a request slot, its time counted in the stats. The outer error ends
    /// the request at once (deadline passed before it began, slots closed). The attempt is
    /// made here, once the slot is taken, so this future holds it once (inside the deadline's
    /// timeout) rather than also as an argument.
    async fn counted_attempt<T, Fut: Future<Output = Result<T, Failure>>>(
        &self,
        what: &str,
        attempt: impl FnOnce() -> Fut,
    ) -> Result<Result<T, Failure>, FetchError> {
        let link = self.link();
        let left = link.remaining();
        if left.is_some_and(|l| l.is_zero()) {
            return Err(link.deadline_error(what));
        }
        let queued = Instant::now();
        let permit = self
            .slots
            .acquire()
            .await
            .map_err(|_| FetchError::unavailable("request slots closed".to_string()))?;
        Stats::add(&link.stats.queue_wait_micros, micros_since(queued));
        let started = Instant::now();
        // Each step of the attempt (an answer, the next piece of a body) is bounded by
        // the request timeout; the whole attempt by what is left of the deadline.
        let result = match left {
            None => attempt().await,
            Some(left) => match tokio::time::timeout(left, attempt()).await {
                Ok(r) => r,
                Err(_) => Err(Failure::Fatal(link.deadline_error(what))),
            },
        };
        Stats::add(&link.stats.request_micros, micros_since(started));
        drop(permit);
        Ok(result)
    }
}

fn micros_since(start: Instant) -> u64 {
    start.elapsed().as_micros() as u64
}
