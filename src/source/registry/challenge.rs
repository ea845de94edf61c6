//! Answering a registry's `WWW-Authenticate` challenge (RFC 7235, distribution's token
//! spec): Basic credentials on every request, or a bearer token for the repository. The
//! challenge is remembered per registry, so later requests authenticate up front.

use http::header::{ACCEPT, AUTHORIZATION, HeaderValue, WWW_AUTHENTICATE};
use http::{StatusCode, Uri};

use std::collections::HashMap;
use std::sync::Mutex;

use super::failure::{Failure, transport_failure};
use super::link::Link;
use super::mutex::lock;
use super::request::{Request, api_host};
use super::token::{TokenRequest, Tokens, basic_header};
use super::wire::{Outgoing, Response};
use crate::auth::{AuthStore, Credentials};
use crate::source::FetchError;

/// How a registry asked to be authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Challenge {
    /// `Basic realm=…`: send the credentials on every request.
    Basic,
    /// `Bearer realm=…,service=…,scope=…`: fetch a token from `realm`.
    Bearer {
        /// Token endpoint.
        realm: String,
        /// `service` parameter for the token request.
        service: Option<String>,
        /// `scope` the registry asked for, if any.
        scope: Option<String>,
    },
}

/// How the run authenticates: its credentials, the last challenge of each registry's API
/// host, and its bearer tokens.
pub(super) struct Authenticator {
    pub(super) store: AuthStore,
    /// The last challenge of each registry's API host.
    challenges: Mutex<HashMap<String, Challenge>>,
    pub(super) tokens: Tokens,
}

impl Authenticator {
    /// Authenticates with `store`'s credentials; no challenge or token known yet.
    pub(super) fn new(store: AuthStore) -> Authenticator {
        Authenticator {
            store,
            challenges: Mutex::new(HashMap::new()),
            tokens: Tokens::new(),
        }
    }

    /// Sends a request to the registry with whatever authentication it needs, answering one
    /// 401 challenge (Basic, or Bearer with a token for this repository).
    pub(super) async fn send(
        &self,
        link: &Link,
        req: &Request<'_>,
        url: &Uri,
    ) -> Result<Response, Failure> {
        let creds = req.access.credentials().map_err(Failure::Fatal)?;
        let host = api_host(&req.access.reference.registry);
        let client = link.http.for_url(url).map_err(Failure::Fatal)?;
        let known = lock(&self.challenges).get(host).cloned();
        let mut header = match &known {
            Some(challenge) => {
                self.authorization(link, req, challenge, creds, false)
                    .await?
            }
            None => None,
        };
        let mut answered_challenge = false;
        loop {
            let mut out = match &req.payload {
                Some(payload) => payload.build(url),
                None => Outgoing::new(req.kind.method(), url.clone()),
            };
            if let Some(accept) = req.kind.accept().filter(|_| req.payload.is_none()) {
                out = out.header(ACCEPT, accept);
            }
            if let Some(h) = &header {
                out = out.header(AUTHORIZATION, h.clone());
            }
            let resp = link
                .within(&req.what, client.send(out))
                .await?
                .map_err(|e| transport_failure(&req.what, e))?;
            if resp.status() != StatusCode::UNAUTHORIZED || answered_challenge {
                return Ok(resp);
            }
            let Some(challenge) = challenge_of(&resp) else {
                return Ok(resp);
            };
            if creds.is_none() && challenge == Challenge::Basic {
                return Err(Failure::Fatal(FetchError::unavailable(format!(
                    "{}: the registry requires credentials (HTTP 401, Basic); pass --creds USER:PASS or --authfile FILE",
                    req.what
                ))));
            }
            lock(&self.challenges).insert(host.to_string(), challenge.clone());
            // A token we sent was refused (expired early, revoked): fetch a fresh one.
            let refresh = header.is_some();
            header = self
                .authorization(link, req, &challenge, creds, refresh)
                .await?;
            answered_challenge = true;
        }
    }

    /// The `Authorization` value for a challenge: Basic credentials, or a bearer token
    /// for this repository (cached, or fetched now).
    async fn authorization(
        &self,
        link: &Link,
        req: &Request<'_>,
        challenge: &Challenge,
        creds: Option<&Credentials>,
        refresh: bool,
    ) -> Result<Option<HeaderValue>, Failure> {
        match challenge {
            Challenge::Basic => Ok(creds.map(basic_header)),
            Challenge::Bearer {
                realm,
                service,
                scope: _,
            } => {
                let ask = TokenRequest {
                    req,
                    realm,
                    service: service.as_deref(),
                    creds,
                };
                let token = self.tokens.bearer(link, &self.store, &ask, refresh).await?;
                Ok(Some(token))
            }
        }
    }
}

/// The first challenge of a 401 that imgcheck can answer.
fn challenge_of(resp: &Response) -> Option<Challenge> {
    resp.headers()
        .get_all(WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(parse_challenge)
}

/// Parses one `WWW-Authenticate` value. Unknown schemes and a Bearer challenge without a
/// realm give `None`.
fn parse_challenge(header: &str) -> Option<Challenge> {
    let header = header.trim();
    let (scheme, rest) = match header.find(char::is_whitespace) {
        Some(i) => (&header[..i], &header[i..]),
        None => (header, ""),
    };
    if scheme.eq_ignore_ascii_case("basic") {
        return Some(Challenge::Basic);
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let params = parse_params(rest);
    let get = |k: &str| {
        params
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(k))
            .map(|(_, v)| v.clone())
    };
    Some(Challenge::Bearer {
        realm: get("realm").filter(|r| !r.is_empty())?,
        service: get("service"),
        scope: get("scope"),
    })
}

/// `key=value` / `key="quoted, value"` pairs separated by commas.
fn parse_params(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c == ',' {
                break;
            }
            key.push(c);
            chars.next();
        }
        if key.is_empty() {
            return out;
        }
        if chars.next() != Some('=') {
            continue;
        }
        let value = if chars.peek() == Some(&'"') {
            chars.next();
            quoted(&mut chars)
        } else {
            let mut value = String::new();
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                value.push(c);
                chars.next();
            }
            value
        };
        out.push((key.trim().to_string(), value.trim().to_string()));
    }
}

/// The rest of a quoted string (after its opening quote), with `\` escapes resolved.
fn quoted(chars: &mut impl Iterator<Item = char>) -> String {
    let mut value = String::new();
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => {
                if let Some(n) = chars.next() {
                    value.push(n);
                }
            }
            c => value.push(c),
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges() {
        assert_eq!(
            parse_challenge(
                r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push""#
            ),
            Some(Challenge::Bearer {
                realm: "https://auth.example/token".into(),
                service: Some("registry.example".into()),
                scope: Some("repository:a/b:pull,push".into()),
            })
        );
        assert_eq!(
            parse_challenge("bearer realm=http://127.0.0.1:1/t"),
            Some(Challenge::Bearer {
                realm: "http://127.0.0.1:1/t".into(),
                service: None,
                scope: None
            })
        );
        assert_eq!(
            parse_challenge(r#"Basic realm="Registry Realm""#),
            Some(Challenge::Basic)
        );
        assert_eq!(parse_challenge("Basic"), Some(Challenge::Basic));
        assert_eq!(parse_challenge(r#"Bearer service="x""#), None);
        assert_eq!(parse_challenge("Negotiate abc"), None);
        assert_eq!(parse_challenge(""), None);
        // Escapes and junk do not panic.
        assert!(matches!(
            parse_challenge(r#"Bearer realm="a\"b",,=,x"#),
            Some(Challenge::Bearer { realm, .. }) if realm == "a\"b"
        ));
        assert_eq!(parse_challenge(r#"Bearer realm=""#), None);
    }

    /// Issue 34, item 7: the `WWW-Authenticate` parser on random and mutated values never
    /// panics (it is linear: one pass over the characters), and a Bearer challenge written
    /// with quoted values, escapes and commas in them reads back as written.
    mod properties {
        use proptest::prelude::*;

        use super::*;

        /// `value` as a quoted string: `"` and `\` escaped.
        fn quote(value: &str) -> String {
            let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
            format!("\"{escaped}\"")
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            #[test]
            fn any_value_never_panics(header in "\\PC{0,200}") {
                let _ = parse_challenge(&header);
            }

            #[test]
            fn mutated_challenges_never_panic(
                cut in any::<usize>(),
                junk in "[\"\\\\,= a-z]{0,12}",
                at in any::<usize>(),
            ) {
                let mut header = r#"Bearer realm="https://auth.example/token",service="r",scope="repository:a/b:pull""#.to_string();
                header.truncate(cut % (header.len() + 1));
                let at = at % (header.len() + 1);
                header.insert_str(at, &junk);
                let _ = parse_challenge(&header);
            }

            #[test]
            fn bearer_challenges_read_back(
                realm in "[ -~]{1,40}",
                service in "[ -~]{0,20}",
                scope in "[ -~]{0,40}",
            ) {
                let header = format!(
                    "Bearer realm={},service={},scope={}",
                    quote(&realm), quote(&service), quote(&scope)
                );
                let trimmed = |s: &str| s.trim().to_string();
                let want = (!trimmed(&realm).is_empty()).then(|| Challenge::Bearer {
                    realm: trimmed(&realm),
                    service: Some(trimmed(&service)),
                    scope: Some(trimmed(&scope)),
                });
                prop_assert_eq!(parse_challenge(&header), want);
            }
        }
    }
}
