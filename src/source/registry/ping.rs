//! Which scheme each registry speaks, learned the first time the registry is used. Every
//! host is HTTPS but loopback hosts (and every host when TLS verification is off), which may
//! speak plain HTTP. For a read, the first real request is the probe: it is sent over plain
//! HTTP, and its answer tells the scheme as an answer to `/v2/` would (and brings the auth
//! challenge with it), so a cold run takes no round trip of its own for the probe. A write
//! probes `/v2/` first, as it did. Concurrent first users of a registry wait for the one
//! that probes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Method, StatusCode, Uri};
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

use super::body::read_small;
use super::failure::{backoff, error_chain, is_retryable_status};
use super::link::Link;
use super::mutex::lock;
use super::options::Stats;
use super::request::api_host;
use super::wire::{Origin, Outgoing, Response};
use crate::reference::RegistryRef;

/// What is known of a registry's scheme: `Some(true)` plain HTTP, `Some(false)` HTTPS,
/// `None` not learned yet.
type Known = Option<bool>;

/// Whether each probed registry speaks plain HTTP, by registry.
#[derive(Default)]
pub(super) struct Schemes {
    probed: Mutex<HashMap<String, Arc<AsyncMutex<Known>>>>,
    /// The origin of each registry whose scheme is known, by registry: a request finds it
    /// with one lookup (no probe lock, no URL built).
    origins: Mutex<HashMap<String, Origin>>,
}

/// Where a request goes: a base URL already known, or the plain-HTTP base of a registry
/// whose scheme the request itself is to find out.
pub(super) enum Base {
    /// `scheme://host`, known.
    Known(Origin),
    /// The registry may speak plain HTTP and has not been asked yet: the holder sends its
    /// request to `plain` first and tells what the answer showed ([`Probing::learned`]);
    /// other first users of the registry wait until it has.
    Probing(Probing),
}

/// The right to find out a registry's scheme with a real request (see [`Base::Probing`]).
pub(super) struct Probing {
    known: OwnedMutexGuard<Known>,
    host: String,
    /// Whether an attempt ended in a fault that may heal before the scheme was learned.
    faults: bool,
}

impl Probing {
    /// `http://host`, where the probing request goes.
    pub(super) fn plain(&self) -> Origin {
        Origin::new(true, &self.host)
    }

    /// `https://host`.
    pub(super) fn tls(&self) -> Origin {
        Origin::new(false, &self.host)
    }

    /// Records what an answer showed: `true` plain HTTP, `false` HTTPS. Later requests
    /// (and the waiting first users) go there.
    pub(super) fn learned(&mut self, plain: bool) {
        *self.known = Some(plain);
    }

    /// Whether the scheme is learned yet, and which.
    pub(super) fn known(&self) -> Known {
        *self.known
    }

    /// Notes that an attempt ended in a fault that may heal, the scheme still unknown.
    pub(super) fn fault(&mut self) {
        self.faults = true;
    }

    /// After the last attempt: when faults that may heal kept the scheme unknown, the answer
    /// is HTTPS, as for a `/v2/` probe none of whose faults healed. `Some(https://host)` then.
    pub(super) fn give_up(&mut self) -> Option<Origin> {
        (self.known.is_none() && self.faults).then(|| {
            self.learned(false);
            self.tls()
        })
    }
}

impl Schemes {
    /// `scheme://host` for the API host of `reference`'s registry, its registry probed on
    /// `/v2/` for plain HTTP first when it is one to probe and has not been probed yet (for
    /// writes; reads use [`Schemes::base`]).
    pub(super) async fn base_url(&self, link: &Link, reference: &RegistryRef) -> Origin {
        match self.base(link, reference).await {
            Base::Known(base) => base,
            Base::Probing(mut probing) => {
                let plain = probe(link, &probing.host).await;
                probing.learned(plain);
                match plain {
                    true => probing.plain(),
                    false => probing.tls(),
                }
            }
        }
    }

    /// Where a request to `reference`'s registry goes: its known base, or the right to learn
    /// the scheme with this request (while the caller holds it, other first users wait).
    pub(super) async fn base(&self, link: &Link, reference: &RegistryRef) -> Base {
        let registry = &reference.registry;
        if let Some(origin) = lock(&self.origins).get(registry.as_str()) {
            return Base::Known(origin.clone());
        }
        let host = api_host(registry);
        // The answer is the registry's own: Docker Hub's API host is never taken for plain
        // HTTP because `docker.io` is asked for.
        let may_be_plain =
            (reference.is_loopback() || !link.options.tls_verify) && host == registry;
        if !may_be_plain {
            return Base::Known(self.known(registry, Origin::new(false, host)));
        }
        let cell = Arc::clone(lock(&self.probed).entry(registry.to_string()).or_default());
        let known = cell.lock_owned().await;
        match *known {
            Some(plain) => Base::Known(self.known(registry, Origin::new(plain, host))),
            None => Base::Probing(Probing {
                known,
                host: host.to_string(),
                faults: false,
            }),
        }
    }
}

impl Schemes {
    /// Remembers `origin` as `registry`'s, for the requests that follow.
    fn known(&self, registry: &str, origin: Origin) -> Origin {
        lock(&self.origins).insert(registry.to_string(), origin.clone());
        origin
    }
}

/// Does `host` answer plain HTTP on `/v2/`? A TLS-only server answers a plain request
/// with Go's "client sent an HTTP request to an HTTPS server" 400, and a redirect (to https),
/// which count as no.
/// Faults that may heal are retried like any request; if none heals, the answer is no.
async fn probe(link: &Link, host: &str) -> bool {
    let url = format!("http://{host}/v2/");
    // The host's own plain-HTTP client (no redirects followed), so its connection is
    // reused later.
    let Some((uri, client)) = url
        .parse::<Uri>()
        .ok()
        .and_then(|u| Some((u.clone(), link.http.for_url(&u).ok()?)))
    else {
        return false;
    };
    let retries = link.options.retries;
    for attempt in 0..=retries {
        let mut timeout = link.options.request_timeout.min(Duration::from_secs(10));
        if let Some(left) = link.remaining() {
            timeout = timeout.min(left);
        }
        if timeout.is_zero() {
            break;
        }
        let sent = client.send(Outgoing::new(Method::GET, uri.clone()));
        let why = match tokio::time::timeout(timeout, sent).await {
            Err(_) => format!("no answer within {:.1}s", timeout.as_secs_f64()),
            Ok(Err(e)) => error_chain(&e),
            Ok(Ok(resp)) if is_retryable_status(resp.status().as_u16()) => {
                format!("HTTP {}", resp.status().as_u16())
            }
            // A redirect (typically to https://) means "not here over plain HTTP".
            Ok(Ok(resp)) if resp.status().is_redirection() => return false,
            Ok(Ok(resp)) => return answers_plain_http(resp, timeout).await,
        };
        if attempt == retries || link.remaining().is_some_and(|l| l.is_zero()) {
            break;
        }
        let delay = backoff(link.options.backoff, attempt);
        Stats::count(&link.stats.retries);
        tracing::info!(
            "retry {}/{retries} in {:.1}s: probing {url} for plain HTTP: {why}",
            attempt + 1,
            delay.as_secs_f64()
        );
        tokio::time::sleep(delay).await;
    }
    false
}

/// Is a final answer to the plain-HTTP probe from a server that speaks plain HTTP (anything
/// but Go's "client sent an HTTP request to an HTTPS server" 400)?
async fn answers_plain_http(resp: Response, timeout: Duration) -> bool {
    let status = resp.status();
    let body = read_small(resp, timeout).await;
    !is_tls_only_answer(status, &body)
}

/// Is this Go's answer to a plain-HTTP request on a TLS port ("client sent an HTTP request
/// to an HTTPS server", 400)?
pub(super) fn is_tls_only_answer(status: StatusCode, body: &[u8]) -> bool {
    status == StatusCode::BAD_REQUEST && String::from_utf8_lossy(body).contains("HTTPS server")
}
