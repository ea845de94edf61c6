//! One attempt at a request: the URL, the authenticated send, redirects followed by hand
//! (never sending the registry's `Authorization` to another origin: S3-backed registries
//! redirect blob GETs), the body read, and what an answer other than 200 means.

use http::header::{ACCEPT, AUTHORIZATION, HeaderValue, LOCATION};
use http::{StatusCode, Uri};
use url::Url;

use super::body::{Body, colon, read_body, read_small, summarize_error_body};
use super::challenge::Authenticator;
use super::failure::{Failure, is_retryable_status, retry_after_of, transport_failure};
use super::link::Link;
use super::ping::{Base, Probing, Schemes, is_tls_only_answer};
use super::request::{Kind, Request, api_host};
use super::tls::host_port;
use super::wire::{Origin, Outgoing, Response};
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
    pub(super) async fn base_url(&self, reference: &RegistryRef) -> Origin {
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
        url: &Uri,
    ) -> Result<Response, Failure> {
        self.auth.send(&self.link, req, url).await
    }

    /// One attempt at `req` on the registry at `base` (`scheme://host`): authenticate as the
    /// registry asks, follow redirects, read the body under its cap, and check it.
    pub(super) async fn attempt(&self, req: &Request<'_>, base: &Origin) -> Result<Body, Failure> {
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
        // Each retry with a known scheme is boxed, as are the rare paths below: this runs
        // once per registry, and every request's future would otherwise carry its room.
        match probing.known() {
            Some(true) => return Box::pin(self.attempt(req, &probing.plain())).await,
            Some(false) => return Box::pin(self.attempt(req, &probing.tls())).await,
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
            return Box::pin(self.attempt(req, &probing.tls())).await;
        }
        if is_retryable_status(status.as_u16()) {
            probing.fault();
            return Err(Box::pin(self.refusal(req, resp)).await);
        }
        if status == StatusCode::BAD_REQUEST {
            let retry_after = retry_after_of(&resp);
            let body = read_small(resp, self.link.options.request_timeout).await;
            if is_tls_only_answer(status, &body) {
                probing.learned(false);
                return Box::pin(self.attempt(req, &probing.tls())).await;
            }
            probing.learned(true);
            return Err(refusal_of(req, status, retry_after, &body));
        }
        probing.learned(true);
        self.answer(req, url, resp).await
    }

    /// The registry's answer to `req` at `url`: redirects followed, the body read under its
    /// cap and checked, or what an answer other than 200 means.
    ///
    /// The rare paths (a redirect, a refusal) are boxed: every request's future stays the
    /// size of the common one.
    async fn answer(&self, req: &Request<'_>, url: Uri, resp: Response) -> Result<Body, Failure> {
        let resp = if resp.status().is_redirection() {
            Box::pin(self.follow_redirects(req, url, resp)).await?
        } else {
            resp
        };
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
        Err(Box::pin(self.refusal(req, resp)).await)
    }

    /// Follows up to [`MAX_REDIRECTS`] redirects from `url`. Only the registry's own origin
    /// gets its credentials again.
    async fn follow_redirects(
        &self,
        req: &Request<'_>,
        url: Uri,
        mut resp: Response,
    ) -> Result<Response, Failure> {
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
            let (next, basic) = location_of(&resp, &current).ok_or_else(|| {
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
                let mut out = Outgoing::new(req.kind.method(), next.clone());
                if let Some(accept) = req.kind.accept() {
                    // Without it a registry answers as to an old client (schema1, or 404
                    // for an OCI index).
                    out = out.header(ACCEPT, accept);
                }
                if let Some(basic) = basic {
                    out = out.header(AUTHORIZATION, basic);
                }
                self.link
                    .within(&req.what, client.send(out))
                    .await?
                    .map_err(|e| transport_failure(&req.what, e))?
            };
            current = next;
        }
        Ok(resp)
    }

    /// What an answer other than 200 means: missing, not authorized, worth another attempt
    /// (with its `Retry-After`), or refused for good.
    async fn refusal(&self, req: &Request<'_>, resp: Response) -> Failure {
        let status = resp.status();
        let retry_after = retry_after_of(&resp);
        let body = read_small(resp, self.link.options.request_timeout).await;
        refusal_of(req, status, retry_after, &body)
    }
}

/// Does `resp` (to a request for `url`) redirect to an `https://` URL?
fn redirects_to_https(url: &Uri, resp: &Response) -> bool {
    location_of(resp, url).is_some_and(|(next, _)| next.scheme_str() == Some("https"))
}

/// Where the redirect `resp` (to a request for `url`) sends the request: its `Location`
/// joined to `url` (the only place a URL is parsed with `url::Url`, for its joining rules),
/// without user and password; and the `Basic` authorization those stood for.
pub(super) fn location_of(resp: &Response, url: &Uri) -> Option<(Uri, Option<HeaderValue>)> {
    let location = resp.headers().get(LOCATION)?.to_str().ok()?;
    let mut next = Url::parse(&url.to_string()).ok()?.join(location).ok()?;
    let basic = (!next.username().is_empty()).then(|| {
        let user = percent_decoded(next.username());
        let password = next.password().map(percent_decoded).unwrap_or_default();
        let pair = format!("{user}:{password}");
        use base64::Engine as _;
        let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
        HeaderValue::from_str(&format!("Basic {encoded}")).ok()
    });
    next.set_username("").ok()?;
    next.set_password(None).ok()?;
    Some((next.as_str().parse().ok()?, basic.flatten()))
}

fn percent_decoded(s: &str) -> String {
    url::form_urlencoded::parse(format!("v={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// `/v2/<repository>/<manifests|blobs>/<reference>` of `req` on the registry at `base`:
/// the origin parsed once, and this path, built in a buffer of exactly its length (the URI
/// then keeps that buffer; one any longer is shared through a second allocation).
fn request_url(req: &Request<'_>, base: &Origin) -> Result<Uri, Failure> {
    let repository = &req.access.reference.repository;
    let (kind, part) = (req.kind.path(), &req.reference_part);
    let pieces = ["/v2/", repository, "/", kind, "/"];
    let mut path =
        String::with_capacity(pieces.iter().map(|p| p.len()).sum::<usize>() + part.len());
    for piece in pieces {
        path.push_str(piece);
    }
    part.push_to(&mut path);
    base.uri(path).map_err(|e| {
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

fn same_origin(a: &Uri, b: &Uri) -> bool {
    a.scheme() == b.scheme() && a.host() == b.host() && port_of(a) == port_of(b)
}

/// The port of `url`, its scheme's own when it names none.
fn port_of(url: &Uri) -> Option<u16> {
    url.port_u16().or(match url.scheme_str() {
        Some("http") => Some(80),
        Some("https") => Some(443),
        _ => None,
    })
}

pub(super) fn origin_is_registry(url: &Uri, reference: &RegistryRef) -> bool {
    host_port(url) == api_host(&reference.registry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        let u = |s: &str| s.parse::<Uri>().unwrap();
        assert!(same_origin(&u("http://a:80/x"), &u("http://a/y")));
        assert!(!same_origin(&u("http://a:5000/x"), &u("http://a:5001/x")));
        assert!(!same_origin(&u("https://a/x"), &u("http://a/x")));
        assert_eq!(api_host("docker.io"), "registry-1.docker.io");
        assert_eq!(api_host("quay.io"), "quay.io");
        assert_eq!(api_host("127.0.0.1:5000"), "127.0.0.1:5000");
    }

    /// Issue 24: a request's URI is its path's one buffer, shared by the URI (a buffer
    /// longer than its text made `http` allocate a second time to share it).
    #[test]
    fn a_request_url_is_one_allocation() {
        use super::super::request::{Access, Kind};
        use crate::digest::{Algorithm, Digest};
        use crate::engine::allocs::allocations;
        use crate::reference::ImageRef;
        let ImageRef::Registry(reference) = "q.io/org/repo:v1".parse().unwrap() else {
            unreachable!("a registry reference")
        };
        let access = Access {
            reference,
            creds: Ok(None),
        };
        for digest in [
            Digest::sha256(b"x"),
            Digest::compute(Algorithm::Sha512, b"x"),
        ] {
            for kind in [Kind::Manifest, Kind::Blob, Kind::BlobHead] {
                let req = access.by_digest(kind, &digest, 7);
                for origin in [
                    Origin::new(true, "127.0.0.1:5000"),
                    Origin::new(false, "q.io"),
                ] {
                    // The origin's authority is shared from its first use on.
                    let _first = request_url(&req, &origin);
                    let (url, n) = allocations(|| request_url(&req, &origin).ok());
                    let url = url.expect("a URL");
                    let path = format!("/v2/org/repo/{}/{digest}", kind.path());
                    assert_eq!(url.to_string(), format!("{origin}{path}"));
                    assert_eq!(n, 1, "{n} allocations for {url}");
                }
            }
        }
    }
}
