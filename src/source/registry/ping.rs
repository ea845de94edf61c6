//! Which scheme each registry speaks: loopback hosts, and every host when TLS verification
//! is off, are probed once for plain HTTP on `/v2/`; every other host is HTTPS.

use std::time::Duration;

use reqwest::{StatusCode, Url};

use super::body::read_small;
use super::request::error_chain;
use super::retry::{backoff, is_retryable_status};
use super::{RegistryClient, Stats};
use crate::reference::RegistryRef;

impl RegistryClient {
    /// The registries of `registries` that answer plain HTTP (each probed once).
    pub(super) async fn plain_http_hosts(&self, registries: &[RegistryRef]) -> Vec<String> {
        let mut plain_http = Vec::new();
        for r in registries {
            if (r.is_loopback() || !self.options.tls_verify)
                && !plain_http.contains(&r.registry)
                && self.speaks_plain_http(&r.registry).await
            {
                plain_http.push(r.registry.clone());
            }
        }
        plain_http
    }

    /// `scheme://host` for a registry's API host.
    pub(super) fn base_url(&self, host: &str) -> String {
        let scheme = if self.plain_http.contains(host) {
            "http"
        } else {
            "https"
        };
        format!("{scheme}://{host}")
    }

    /// Does `host` answer plain HTTP on `/v2/`? A TLS-only server answers a plain request
    /// with Go's "client sent an HTTP request to an HTTPS server" 400, and a redirect (to https),
    /// which count as no.
    /// Faults that may heal are retried like any request; if none heals, the answer is no.
    async fn speaks_plain_http(&self, host: &str) -> bool {
        let url = format!("http://{host}/v2/");
        // The host's own plain-HTTP client (no redirects followed), so its connection is
        // reused later.
        let Some(client) = Url::parse(&url)
            .ok()
            .and_then(|u| self.http.for_url(&u).ok())
        else {
            return false;
        };
        let retries = self.options.retries;
        for attempt in 0..=retries {
            let mut timeout = self.options.request_timeout.min(Duration::from_secs(10));
            if let Some(left) = self.remaining() {
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
            if attempt == retries || self.remaining().is_some_and(|l| l.is_zero()) {
                break;
            }
            let delay = backoff(self.options.backoff, attempt);
            Stats::count(&self.stats.retries);
            tracing::info!(
                "retry {}/{retries} in {:.1}s: probing {url} for plain HTTP: {why}",
                attempt + 1,
                delay.as_secs_f64()
            );
            tokio::time::sleep(delay).await;
        }
        false
    }
}

/// Is a final answer to the plain-HTTP probe from a server that speaks plain HTTP (anything
/// but Go's "client sent an HTTP request to an HTTPS server" 400)?
async fn answers_plain_http(resp: reqwest::Response, timeout: Duration) -> bool {
    let status = resp.status();
    let body = read_small(resp, timeout).await;
    !(status == StatusCode::BAD_REQUEST && String::from_utf8_lossy(&body).contains("HTTPS server"))
}
