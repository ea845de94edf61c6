//! One attempt at a request: the URL, the authenticated send, redirects followed by hand
//! (never sending the registry's `Authorization` to another origin: S3-backed registries
//! redirect blob GETs), the body read, and what an answer other than 200 means.

use reqwest::header::{ACCEPT, LOCATION};
use reqwest::{StatusCode, Url};

use super::body::{Body, colon, read_body, read_small, summarize_error_body};
use super::challenge::Authenticator;
use super::failure::{Failure, is_retryable_status, retry_after_of, transport_failure};
use super::link::Link;
use super::ping::{Base, Probing, Schemes, is_tls_only_answer};
use super::request::{ACCEPT_MANIFESTS, Kind, Request, api_host};
use super::tls::host_port;
use crate::auth::AuthStore;
use crate::reference::RegistryRef;
use crate::source::FetchError;

/// Redirect hops followed for one request.
const MAX_REDIRECTS: usize = 5;

/// Sends requests: the link (options, deadline, counters, HTTP clients), each registry's
/// scheme, and authentication.
pub(super) struct Sender {
    pub(super) link: Link,
    schemes: Schemes,
    pub(super) auth: Authenticator,
}

impl Sender {
    /// A sender for `link`, authenticating with `store`'s credentials.
    pub(super) fn new(link: Link, store: AuthStore) -> Sender {
        Sender {
            link,
            schemes: Schemes::default(),
            auth: Authenticator::new(store),
        }
    }

    /// `scheme://host` of `reference`'s registry API (its scheme probed on `/v2/` on first
    /// use): for writes.
    pub(super) async fn base_url(&self, reference: &RegistryRef) -> String {
        self.schemes.base_url(&self.link, reference).await
    }

    /// Where a read of `reference`'s registry goes: a known base, or the right to learn
    /// the scheme with the read itself ([`Sender::attempt_learning`]).
    pub(super) async fn base(&self, reference: &RegistryRef) -> Base {
        self.schemes.base(&self.link, reference).await
    }

    /// Sends `req` to `url` on the registry, authenticated as the registry asks.
    pub(super) async fn send_authenticated(
        &self,
        req: &Request<'_>,
        url: &Url,
    ) -> Result<reqwest::Response, Failure> {
        self.auth.send(&self.link, req, url).await
    }

    /// One attempt at `req` on the registry at `base` (`scheme://host`): authenticate as the
    /// registry asks, follow redirects, read the body under its cap, and check it.
    pub(super) async fn attempt(&self, req: &Request<'_>, base: &str) -> Result<Body, Failure> {
        let url = request_url(req, base)?;
        let resp = self.send_authenticated(req, &url).await?;
        self.answer(req, url, resp).await
    }

    /// One attempt at `req` that is also the registry's plain-HTTP probe, while the scheme
    /// is unknown: sent over plain HTTP, the answer tells the scheme as `/v2/`'s would. A
    /// redirect to `https://` or Go's "HTTP request to an HTTPS server" 400 means HTTPS (the
    /// request is then sent there); a fault that may heal leaves it unknown; any other answer
    /// (another redirect too: a plain-HTTP registry may send a read elsewhere) is from a
    /// plain-HTTP registry and is the request's answer.
    pub(super) async fn attempt_learning(
        &self,
        req: &Request<'_>,
        probing: &mut Probing,
    ) -> Result<Body, Failure> {
        match probing.known() {
            Some(true) => return self.attempt(req, &probing.plain()).await,
            Some(false) => return self.attempt(req, &probing.tls()).await,
            None => {}
        }
        let url = request_url(req, &probing.plain())?;
        let resp = match self.send_authenticated(req, &url).await {
            Err(Failure::Retry(e, after)) => {
                probing.fault();
                return Err(Failure::Retry(e, after));
            }
            other => other?,
        };
        let status = resp.status();
        if status.is_redirection() && redirects_to_https(&url, &resp) {
            probing.learned(false);
            return self.attempt(req, &probing.tls()).await;
        }
        if is_retryable_status(status.as_u16()) {
            probing.fault();
            return Err(self.refusal(req, resp).await);
        }
        if status == StatusCode::BAD_REQUEST {
            let retry_after = retry_after_of(&resp);
            let body = read_small(resp, self.link.options.request_timeout).await;
            if is_tls_only_answer(status, &body) {
                probing.learned(false);
                return self.attempt(req, &probing.tls()).await;
            }
            probing.learned(true);
            return Err(refusal_of(req, status, retry_after, &body));
        }
        probing.learned(true);
        self.answer(req, url, resp).await
    }

    /// The registry's answer to `req` at `url`: redirects followed, the body read under its
    /// cap and checked, or what an answer other than 200 means.
    async fn answer(
        &self,
        req: &Request<'_>,
        url: Url,
        resp: reqwest::Response,
    ) -> Result<Body, Failure> {
        let resp = self.follow_redirects(req, url, resp).await?;
        let status = resp.status();
        if status == StatusCode::OK && req.kind == Kind::BlobHead {
            return Ok(Body::empty());
        }
        if status == StatusCode::OK && req.stream {
            return Ok(Body::streaming(resp));
        }
        if status == StatusCode::OK {
            return read_body(&self.link, req, resp).await;
        }
        Err(self.refusal(req, resp).await)
    }

    /// Follows up to [`MAX_REDIRECTS`] redirects from `url`. Only the registry's own origin
    /// gets its credentials again.
    async fn follow_redirects(
        &self,
        req: &Request<'_>,
        url: Url,
        mut resp: reqwest::Response,
    ) -> Result<reqwest::Response, Failure> {
        let reference = &req.access.reference;
        let mut current = url;
        let mut hops = 0;
        while resp.status().is_redirection() {
            hops += 1;
            if hops > MAX_REDIRECTS {
                return Err(Failure::Fatal(FetchError::unavailable(format!(
                    "{}: more than {MAX_REDIRECTS} redirects",
                    req.what
                ))));
            }
            let next = resp
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|l| current.join(l).ok())
                .ok_or_else(|| {
                    Failure::Fatal(FetchError::unavailable(format!(
                        "{}: HTTP {} without a usable Location",
                        req.what,
                        resp.status().as_u16()
                    )))
                })?;
            resp = if same_origin(&next, &current) && origin_is_registry(&next, reference) {
                self.send_authenticated(req, &next).await?
            } else {
                // Another host (object storage): the URL carries its own authorisation, and the
                // registry's credentials must not travel there.
                let client = self.link.http.for_url(&next).map_err(Failure::Fatal)?;
                let mut builder = client.request(req.kind.method(), next.clone());
                if req.kind == Kind::Manifest {
                    // Without it a registry answers as to an old client (schema1, or 404
                    // for an OCI index).
                    builder = builder.header(ACCEPT, ACCEPT_MANIFESTS.clone());
                }
                self.link
                    .within(&req.what, builder.send())
                    .await?
                    .map_err(|e| transport_failure(&req.what, e))?
            };
            current = next;
        }
        Ok(resp)
    }

    /// What an answer other than 200 means: missing, not authorized, worth another attempt
    /// (with its `Retry-After`), or refused for good.
    async fn refusal(&self, req: &Request<'_>, resp: reqwest::Response) -> Failure {
        let status = resp.status();
        let retry_after = retry_after_of(&resp);
        let body = read_small(resp, self.link.options.request_timeout).await;
        refusal_of(req, status, retry_after, &body)
    }
}

/// Does `resp` (to a request for `url`) redirect to an `https://` URL?
fn redirects_to_https(url: &Url, resp: &reqwest::Response) -> bool {
    resp.headers()
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|l| url.join(l).ok())
        .is_some_and(|next| next.scheme() == "https")
}

/// `/v2/<repository>/<manifests|blobs>/<reference>` of `req` on the registry at `base`.
fn request_url(req: &Request<'_>, base: &str) -> Result<Url, Failure> {
    let reference = &req.access.reference;
    let url = format!(
        "{base}/v2/{}/{}/{}",
        reference.repository,
        req.kind.path(),
        req.reference_part
    );
    Url::parse(&url).map_err(|e| {
        Failure::Fatal(FetchError::bad_input_by(
            format!("{}: bad URL", req.what),
            e,
        ))
    })
}

/// What an answer other than 200 (its status, `Retry-After` and body) means.
fn refusal_of(
    req: &Request<'_>,
    status: StatusCode,
    retry_after: Option<std::time::Duration>,
    body: &[u8],
) -> Failure {
    let detail = summarize_error_body(body, req.credentials());
    let message = format!("{} (HTTP {}{})", req.what, status.as_u16(), colon(&detail));
    match status.as_u16() {
        404 => Failure::Fatal(FetchError::NotFound(message)),
        401 | 403 => Failure::Fatal(FetchError::unavailable(format!(
            "{message}: not authorized; check --creds, --authfile, or log in with 'podman login'"
        ))),
        s if is_retryable_status(s) => {
            Failure::Retry(FetchError::unavailable(message), retry_after)
        }
        _ => Failure::Fatal(FetchError::unavailable(message)),
    }
}

fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

pub(super) fn origin_is_registry(url: &Url, reference: &RegistryRef) -> bool {
    host_port(url) == api_host(&reference.registry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        let u = |s: &str| Url::parse(s).unwrap();
        assert!(same_origin(&u("http://a:80/x"), &u("http://a/y")));
        assert!(!same_origin(&u("http://a:5000/x"), &u("http://a:5001/x")));
        assert!(!same_origin(&u("https://a/x"), &u("http://a/x")));
        assert_eq!(api_host("docker.io"), "registry-1.docker.io");
        assert_eq!(api_host("quay.io"), "quay.io");
        assert_eq!(api_host("127.0.0.1:5000"), "127.0.0.1:5000");
    }
}
