//! Bearer tokens (distribution's token spec): cached per (registry, repository,
//! credentials, actions: `pull`, or `pull,push` for writes) and reused until shortly before
//! they expire; one token request asks for up to [`MAX_SCOPES`] of the run's repositories on
//! that registry with the same credentials
//! (one fetch at a time per registry, so concurrent requests wait for it instead of each
//! asking); a token the registry refuses is replaced by one for that repository alone; a
//! token service that refuses is reported as such, not as a bare 401.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use http::{Method, StatusCode, Uri};
use sha2::Digest as _;
use url::Url;

use super::body::{colon, read_small, summarize_error_body};
use super::failure::{Failure, is_retryable_status, retry_after_of, transport_failure};
use super::link::Link;
use super::mutex::lock;
use super::options::Stats;
use super::request::{PULL, Request};
use super::wire::Outgoing;
use crate::auth::{AuthStore, Credentials};
use crate::reference::RegistryRef;
use crate::source::FetchError;

/// Tokens shorter-lived than this are refreshed early; distribution's default is 60 s.
const TOKEN_MARGIN: Duration = Duration::from_secs(10);
/// Most repositories asked for in one token request (keeps the URL well under 8 KiB).
const MAX_SCOPES: usize = 32;

/// (registry, repository, credentials fingerprint, actions: `pull` or `pull,push`).
type TokenKey = (String, String, String, &'static str);

/// A bearer token and when to stop using it.
struct Token {
    /// `Bearer <token>`, as sent.
    header: HeaderValue,
    expires: Instant,
}

/// The run's tokens, and what a token request may ask for.
pub(super) struct Tokens {
    cached: Mutex<HashMap<TokenKey, Arc<Token>>>,
    /// One token fetch at a time per registry, so requests waiting for a token find the one
    /// fetched for them instead of each asking.
    gates: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// The repositories this run reads, per registry, in the order the run named them: a
    /// token request asks for several of them at once (distribution's token spec allows
    /// repeated `scope`).
    run_repositories: Mutex<HashMap<String, Vec<String>>>,
}

impl Tokens {
    /// No tokens yet, and no repositories expected.
    pub(super) fn new() -> Tokens {
        Tokens {
            cached: Mutex::new(HashMap::new()),
            gates: Mutex::new(HashMap::new()),
            run_repositories: Mutex::new(HashMap::new()),
        }
    }

    /// The run will read `references` (a hint for batching): their repositories join those a
    /// token request may ask for, each once, in first-seen order.
    pub(super) fn expect(&self, references: &[RegistryRef]) {
        let mut by = lock(&self.run_repositories);
        // Those already known, per registry touched: a set, so that a run of many
        // repositories is told in linear time (a list scan per reference was quadratic).
        let mut known: HashMap<&str, HashSet<String>> = HashMap::new();
        for r in references {
            let repos = by.entry(r.registry.clone()).or_default();
            let known = known
                .entry(&r.registry)
                .or_insert_with(|| repos.iter().cloned().collect());
            if known.insert(r.repository.clone()) {
                repos.push(r.repository.clone());
            }
        }
    }

    /// The cached `Authorization` value for `key`, if still valid.
    fn valid(&self, key: &TokenKey) -> Option<HeaderValue> {
        lock(&self.cached)
            .get(key)
            .filter(|t| t.expires > Instant::now())
            .map(|t| t.header.clone())
    }

    /// Caches `token` for every repository it was asked for (the first with `actions`, the
    /// others with `pull`); returns its header value.
    fn keep(
        &self,
        registry: &str,
        repositories: &[String],
        (fp, actions): (&str, &'static str),
        token: Token,
    ) -> HeaderValue {
        let value = token.header.clone();
        let token = Arc::new(token);
        let mut cached = lock(&self.cached);
        let first = repositories.first().map(|r| (r, actions));
        for (repo, actions) in first
            .into_iter()
            .chain(repositories.iter().map(|r| (r, PULL)))
        {
            cached.insert(
                (registry.to_string(), repo.clone(), fp.to_string(), actions),
                Arc::clone(&token),
            );
        }
        value
    }

    /// The gate that lets one token fetch for `registry` run at a time.
    fn gate(&self, registry: &str) -> Arc<tokio::sync::Mutex<()>> {
        Arc::clone(lock(&self.gates).entry(registry.to_string()).or_default())
    }

    /// The `Authorization` value for a Bearer challenge: a cached token for the request's
    /// repository, or one fetched now (a fresh one when `refresh`: the last was refused).
    /// `store` tells which other repositories share the request's credentials.
    pub(super) async fn bearer(
        &self,
        link: &Link,
        store: &AuthStore,
        ask: &TokenRequest<'_>,
        refresh: bool,
    ) -> Result<HeaderValue, Failure> {
        let reference = &ask.req.access.reference;
        let fp = fingerprint(ask.creds);
        let actions = ask.req.actions();
        let key = (
            reference.registry.clone(),
            reference.repository.clone(),
            fp.clone(),
            actions,
        );
        if !refresh && let Some(t) = self.valid(&key) {
            return Ok(t);
        }
        let gate = self.gate(&reference.registry);
        let _turn = gate.lock().await;
        if !refresh && let Some(t) = self.valid(&key) {
            return Ok(t);
        }
        // A refused token is replaced by one for this repository alone: the batch may have
        // been granted without it.
        let mut repositories = if refresh {
            vec![reference.repository.clone()]
        } else {
            self.token_batch(store, reference, &fp)
        };
        // Boxed: a token is fetched once per scope, and every request's future would
        // otherwise carry the room for it.
        let token = match Box::pin(fetch_token(link, ask, &repositories)).await {
            Err(Failure::Fatal(_)) if repositories.len() > 1 => {
                // Some token services refuse a request when any scope is denied.
                repositories = vec![reference.repository.clone()];
                Box::pin(fetch_token(link, ask, &repositories)).await?
            }
            other => other?,
        };
        Ok(self.keep(&reference.registry, &repositories, (&fp, actions), token))
    }

    /// `reference`'s repository, then up to [`MAX_SCOPES`]` - 1` other repositories of this
    /// run on the same registry that have no valid token yet and use the same credentials.
    fn token_batch(&self, store: &AuthStore, reference: &RegistryRef, fp: &str) -> Vec<String> {
        let mut batch = vec![reference.repository.clone()];
        let Some(repos) = lock(&self.run_repositories)
            .get(&reference.registry)
            .cloned()
        else {
            return batch;
        };
        for repo in &repos {
            if batch.len() == MAX_SCOPES {
                break;
            }
            if *repo == reference.repository {
                continue;
            }
            let key = (
                reference.registry.clone(),
                repo.clone(),
                fp.to_string(),
                PULL,
            );
            if self.valid(&key).is_some() {
                continue;
            }
            let other = RegistryRef {
                repository: repo.clone(),
                ..reference.clone()
            };
            if matches!(store.lookup(&other), Ok(c) if fingerprint(c.as_ref()) == fp) {
                batch.push(repo.clone());
            }
        }
        batch
    }
}

/// Asks a token service for one token for `repositories`: the request's own first
/// (`pull,push` for a write), the others `pull`.
async fn fetch_token(
    link: &Link,
    ask: &TokenRequest<'_>,
    repositories: &[String],
) -> Result<Token, Failure> {
    let actions = std::iter::once(ask.req.actions()).chain(std::iter::repeat(PULL));
    let scopes: Vec<String> = repositories
        .iter()
        .zip(actions)
        .map(|(r, a)| format!("repository:{r}:{a}"))
        .collect();
    let scope = match scopes.len() {
        0 | 1 => scopes.concat(),
        n => format!("{} (and {} more)", scopes[0], n - 1),
    };
    let url = ask.realm_url()?;
    Stats::count(&link.stats.token_requests);
    tracing::info!("token for {scope} from {}", ask.realm);
    let out = ask.build(url, &scopes)?;
    let client = link.http.for_url(&out.uri).map_err(Failure::Fatal)?;
    let what = format!("{}: token service {}", ask.req.what, ask.realm);
    let resp = link
        .within(&what, client.send(out))
        .await?
        .map_err(|e| transport_failure(&what, e))?;
    let status = resp.status();
    let retry_after = retry_after_of(&resp);
    let body = read_small(resp, link.options.request_timeout).await;
    if status != StatusCode::OK {
        let refused = FetchError::unavailable(ask.refusal(status, &body, &scope));
        return Err(if is_retryable_status(status.as_u16()) {
            Failure::Retry(refused, retry_after)
        } else {
            Failure::Fatal(refused)
        });
    }
    ask.token_of(&body)
}

/// One question to a token service: for `req`, at `realm`, with these credentials.
pub(super) struct TokenRequest<'a> {
    pub(super) req: &'a Request<'a>,
    pub(super) realm: &'a str,
    pub(super) service: Option<&'a str>,
    pub(super) creds: Option<&'a Credentials>,
}

impl TokenRequest<'_> {
    fn unavailable(&self, why: String) -> FetchError {
        FetchError::unavailable(format!("{}: {why}", self.req.what))
    }

    /// The realm, which must be an HTTP(S) URL.
    fn realm_url(&self) -> Result<Url, Failure> {
        let realm = self.realm;
        let url = Url::parse(realm).map_err(|e| {
            let what = &self.req.what;
            Failure::Fatal(FetchError::unavailable_by(
                format!("{what}: the registry's token realm '{realm}' is not a URL"),
                e,
            ))
        })?;
        if url.scheme() != "https" && url.scheme() != "http" {
            return Err(Failure::Fatal(self.unavailable(format!(
                "the registry's token realm '{realm}' is not an HTTP URL"
            ))));
        }
        Ok(url)
    }

    /// The HTTP request: distribution's token spec (a GET, one `scope` parameter each,
    /// Basic credentials), or an OAuth2 refresh-token grant for an identity token.
    fn build(&self, mut url: Url, scopes: &[String]) -> Result<Outgoing, Failure> {
        if let Some(c) = self.creds.filter(|c| c.is_identity_token()) {
            let mut form = Url::parse("http://form.invalid/").map_err(|e| {
                Failure::Fatal(FetchError::unavailable_by("the OAuth2 token form", e))
            })?;
            {
                let mut pairs = form.query_pairs_mut();
                pairs
                    .append_pair("grant_type", "refresh_token")
                    .append_pair("refresh_token", &c.password)
                    .append_pair("client_id", "imgcheck");
                // OAuth2: one space-separated scope parameter.
                pairs.append_pair("scope", &scopes.join(" "));
                if let Some(s) = self.service {
                    pairs.append_pair("service", s);
                }
            }
            let form = bytes::Bytes::from(form.query().unwrap_or("").to_string());
            return Ok(Outgoing::new(Method::POST, self.uri(&url)?)
                .header(
                    CONTENT_TYPE,
                    HeaderValue::from_static("application/x-www-form-urlencoded"),
                )
                .body(form));
        }
        {
            let mut pairs = url.query_pairs_mut();
            if let Some(s) = self.service {
                pairs.append_pair("service", s);
            }
            for s in scopes {
                pairs.append_pair("scope", s);
            }
        }
        let out = Outgoing::new(Method::GET, self.uri(&url)?);
        Ok(match self.creds {
            Some(c) => out.header(AUTHORIZATION, basic_header(c)),
            None => out,
        })
    }

    /// `url` as the client sends it (a realm with user or password in it keeps them out).
    fn uri(&self, url: &Url) -> Result<Uri, Failure> {
        let mut url = url.clone();
        let _ = url.set_username("");
        let _ = url.set_password(None);
        url.as_str().parse().map_err(|e| {
            let realm = self.realm;
            Failure::Fatal(FetchError::unavailable_by(
                format!(
                    "{}: the registry's token realm '{realm}' is not a URL",
                    self.req.what
                ),
                e,
            ))
        })
    }

    /// Says who the token service refused, for what, and what it said (never the secret).
    fn refusal(&self, status: StatusCode, body: &[u8], scope: &str) -> String {
        let detail = summarize_error_body(body, self.creds);
        let who = match self.creds {
            Some(c) if c.is_identity_token() => "the identity token".to_string(),
            Some(c) => format!("the credentials of user '{}'", c.username),
            None => "anonymous access".to_string(),
        };
        format!(
            "{}: the registry's token service {} refused {who} for {scope} (HTTP {}{})",
            self.req.what,
            self.realm,
            status.as_u16(),
            colon(&detail)
        )
    }

    /// The token in a 200 answer (`token`, or OAuth2's `access_token`) and its lifetime.
    fn token_of(&self, body: &[u8]) -> Result<Token, Failure> {
        #[derive(serde::Deserialize)]
        struct Answer {
            #[serde(default)]
            token: Option<String>,
            #[serde(default)]
            access_token: Option<String>,
            #[serde(default)]
            expires_in: Option<u64>,
        }
        let realm = self.realm;
        let answer: Answer = serde_json::from_slice(body).map_err(|_| {
            Failure::Retry(
                self.unavailable(format!(
                    "the token service {realm} answered something that is not a token"
                )),
                None,
            )
        })?;
        let value = answer
            .token
            .or(answer.access_token)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                Failure::Fatal(self.unavailable(format!(
                    "the token service {realm} answered without a token"
                )))
            })?;
        let lifetime = Duration::from_secs(answer.expires_in.unwrap_or(60).max(1));
        let mut header = HeaderValue::from_str(&format!("Bearer {value}")).map_err(|_| {
            Failure::Fatal(self.unavailable(format!(
                "the token service {realm} answered a token that cannot be sent in a header"
            )))
        })?;
        header.set_sensitive(true);
        Ok(Token {
            header,
            expires: Instant::now() + lifetime.saturating_sub(TOKEN_MARGIN),
        })
    }
}

/// `Basic base64(user:password)`.
pub(super) fn basic_header(c: &Credentials) -> HeaderValue {
    use base64::Engine as _;
    let pair = format!("{}:{}", c.username, c.password);
    let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
    let mut value = HeaderValue::try_from(format!("Basic {encoded}"))
        .unwrap_or_else(|_| HeaderValue::from_static("Basic"));
    value.set_sensitive(true);
    value
}

/// Tells credentials apart in the token cache without keeping another copy of the secret.
fn fingerprint(creds: Option<&Credentials>) -> String {
    match creds {
        None => "anonymous".to_string(),
        Some(c) => {
            let mut h = sha2::Sha256::new();
            h.update(c.username.as_bytes());
            h.update([0]);
            h.update(c.password.as_bytes());
            hex::encode(&h.finalize()[..16])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_tell_credentials_apart_without_the_secret() {
        let c = |u: &str, p: &str| Credentials {
            username: u.into(),
            password: p.into(),
        };
        let a = fingerprint(Some(&c("u", "secret-one")));
        assert_ne!(a, fingerprint(Some(&c("u", "secret-two"))));
        assert_ne!(a, fingerprint(Some(&c("v", "secret-one"))));
        assert_ne!(a, fingerprint(None));
        assert!(!a.contains("secret"));
    }
}
