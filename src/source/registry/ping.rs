//! Which scheme each registry speaks, learned the first time the registry is used: loopback
//! hosts, and every host when TLS verification is off, are probed once for plain HTTP on
//! `/v2/` (concurrent first users wait for the one probe); every other host is HTTPS.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::{StatusCode, Url};
use tokio::sync::OnceCell;

use super::body::read_small;
use super::failure::{backoff, error_chain, is_retryable_status};
use super::link::Link;
use super::mutex::lock;
use super::options::Stats;
use super::request::api_host;
use crate::reference::RegistryRef;

/// Whether each probed registry speaks plain HTTP, by registry.
#[derive(Default)]
pub(super) struct Schemes {
    probed: Mutex<HashMap<String, Arc<OnceCell<bool>>>>,
}

impl Schemes {
    /// `scheme://host` for the API host of `reference`'s registry, its registry probed for
    /// plain HTTP first when it is one to probe and has not been probed yet.
    pub(super) async fn base_url(&self, link: &Link, reference: &RegistryRef) -> String {
        let registry = &reference.registry;
        let host = api_host(registry);
        // The answer is the registry's own: Docker Hub's API host is never taken for plain
        // HTTP from a probe of `docker.io`.
        let plain = (reference.is_loopback() || !link.options.tls_verify)
            && self.speaks_plain_http(link, registry).await
            && host == registry;
        let scheme = if plain { "http" } else { "https" };
        format!("{scheme}://{host}")
    }

    /// Does `registry` answer plain HTTP? Probed once; later callers (and concurrent ones)
    /// get the first probe's answer.
    async fn speaks_plain_http(&self, link: &Link, registry: &str) -> bool {
        let cell = Arc::clone(lock(&self.probed).entry(registry.to_string()).or_default());
        *cell.get_or_init(|| probe(link, registry)).await
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
    let Some(client) = Url::parse(&url)
        .ok()
        .and_then(|u| link.http.for_url(&u).ok())
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
        let why = match client.get(&url).timeout(timeout).send().await {
            Ok(resp) if is_retryable_status(resp.status().as_u16()) => {
                format!("HTTP {}", resp.status().as_u16())
            }
            // A redirect (typically to https://) means "not here over plain HTTP".
            Ok(resp) if resp.status().is_redirection() => return false,
            Ok(resp) => return answers_plain_http(resp, timeout).await,
            Err(e) => error_chain(&e),
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
async fn answers_plain_http(resp: reqwest::Response, timeout: Duration) -> bool {
    let status = resp.status();
    let body = read_small(resp, timeout).await;
    !(status == StatusCode::BAD_REQUEST && String::from_utf8_lossy(&body).contains("HTTPS server"))
}
