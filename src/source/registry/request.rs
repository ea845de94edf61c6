//! One request of the read path and one attempt at it: the URL, the authenticated send,
//! redirects followed by hand (never sending the registry's `Authorization` to another
//! origin: S3-backed registries redirect blob GETs), and what an answer other than 200 means.

use reqwest::header::{ACCEPT, LOCATION};
use reqwest::{StatusCode, Url};

use super::body::{Body, colon, read_small, summarize_error_body};
use super::retry::{Failure, is_retryable_status, retry_after_of};
use super::tls::host_port;
use super::{RegistryClient, RegistrySource};
use crate::auth::Credentials;
use crate::digest::Digest;
use crate::manifest::ACCEPTED_MANIFEST_TYPES;
use crate::reference::RegistryRef;
use crate::source::FetchError;

/// Redirect hops followed for one request.
const MAX_REDIRECTS: usize = 5;

/// What a request asks for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Manifest,
    Blob,
    /// `HEAD` of a blob: existence only, no body.
    BlobHead,
}

impl Kind {
    fn path(self) -> &'static str {
        match self {
            Kind::Manifest => "manifests",
            Kind::Blob | Kind::BlobHead => "blobs",
        }
    }

    pub(super) fn method(self) -> reqwest::Method {
        match self {
            Kind::BlobHead => reqwest::Method::HEAD,
            _ => reqwest::Method::GET,
        }
    }
}

/// One GET of the read path.
pub(super) struct Request<'a> {
    pub(super) source: &'a RegistrySource,
    pub(super) kind: Kind,
    /// Tag or digest.
    pub(super) reference_part: String,
    /// The digest the body must hash to, when the request names one.
    pub(super) expected: Option<&'a Digest>,
    pub(super) limit: u64,
    pub(super) what: String,
    /// Write the body to a temporary file instead of memory (large layers); needs `expected`.
    pub(super) spool: bool,
    /// Leave a 200 answer's body unread, for the caller to stream (`stream.rs`).
    pub(super) stream: bool,
    /// What a write sends (`upload`): its method, headers and body; `None` for reads. A
    /// write asks for a `pull,push` token.
    pub(super) payload: Option<super::upload::Payload>,
}

impl Request<'_> {
    /// The credentials the request is sent with (to redact them from what the server says).
    pub(super) fn credentials(&self) -> Option<&Credentials> {
        self.source.credentials().ok().flatten()
    }
}

impl RegistrySource {
    pub(super) fn request<'a>(
        &'a self,
        kind: Kind,
        reference_part: String,
        expected: Option<&'a Digest>,
        limit: u64,
        what: String,
    ) -> Request<'a> {
        Request {
            source: self,
            kind,
            reference_part,
            expected,
            limit,
            what,
            spool: false,
            stream: false,
            payload: None,
        }
    }

    /// A request for the manifest or blob `digest`, which its body must hash to.
    pub(super) fn by_digest<'a>(
        &'a self,
        kind: Kind,
        digest: &'a Digest,
        limit: u64,
    ) -> Request<'a> {
        let noun = match kind {
            Kind::Manifest => "manifest",
            Kind::Blob | Kind::BlobHead => "blob",
        };
        let what = format!("{noun} {digest}");
        self.request(kind, digest.to_string(), Some(digest), limit, what)
    }

    /// Sends `req` with retries and returns its checked body.
    pub(super) async fn get(&self, req: Request<'_>) -> Result<Body, FetchError> {
        self.client.fetch(&req).await
    }
}

impl RegistryClient {
    /// One attempt: authenticate as the registry asks, follow redirects, read the body under
    /// its cap, and check it.
    pub(super) async fn attempt(&self, req: &Request<'_>) -> Result<Body, Failure> {
        let reference = &req.source.reference;
        let url = format!(
            "{}/v2/{}/{}/{}",
            self.base_url(api_host(&reference.registry)),
            reference.repository,
            req.kind.path(),
            req.reference_part
        );
        let url = Url::parse(&url).map_err(|e| {
            Failure::Fatal(FetchError::bad_input_by(
                format!("{}: bad URL", req.what),
                e,
            ))
        })?;
        let resp = self.send_authenticated(req, &url).await?;
        let resp = self.follow_redirects(req, url, resp).await?;
        let status = resp.status();
        if status == StatusCode::OK && req.kind == Kind::BlobHead {
            return Ok(Body::empty());
        }
        if status == StatusCode::OK && req.stream {
            return Ok(Body::streaming(resp));
        }
        if status == StatusCode::OK {
            return self.read_body(req, resp).await;
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
        let reference = &req.source.reference;
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
                let client = self.http.for_url(&next).map_err(Failure::Fatal)?;
                let mut builder = client.request(req.kind.method(), next.clone());
                if req.kind == Kind::Manifest {
                    // Without it a registry answers as to an old client (schema1, or 404
                    // for an OCI index).
                    builder = builder.header(ACCEPT, ACCEPTED_MANIFEST_TYPES.join(", "));
                }
                self.within(&req.what, builder.send())
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
        let body = read_small(resp, self.options.request_timeout).await;
        let detail = summarize_error_body(&body, req.credentials());
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
}

/// A connection-level failure: worth another attempt, except a certificate the client does
/// not trust (that does not heal by asking again). The reqwest error is the cause, its URL
/// without credentials.
pub(super) fn transport_failure(what: &str, e: reqwest::Error) -> Failure {
    let e = scrubbed(e);
    if error_chain(&e).contains("invalid peer certificate") {
        return Failure::Fatal(FetchError::unavailable_by(
            format!(
                "{what}: the registry's certificate is not trusted; trust its CA with --cert-dir \
                 DIR (DIR/ca.crt) or /etc/containers/certs.d/HOST:PORT/ca.crt, or pass \
                 --tls-verify=false"
            ),
            e,
        ));
    }
    Failure::Retry(FetchError::unavailable_by(what, e), None)
}

/// `e` with the credentials (user, password) and the query (a signed URL's signature, a
/// session token) taken out of its URL, which its `Display` shows.
pub(super) fn scrubbed(mut e: reqwest::Error) -> reqwest::Error {
    if let Some(url) = e.url_mut() {
        // Only URLs that cannot have credentials refuse these; they have none to hide.
        let _ = url.set_username("");
        let _ = url.set_password(None);
        url.set_query(None);
    }
    e
}

/// An error and its causes on one line (`a: b: c`), each cause once (a cause whose text its
/// error already includes is left out).
pub(super) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

/// Where a registry's API lives: Docker Hub's references say `docker.io`, its API answers at
/// `registry-1.docker.io`.
pub(super) fn api_host(registry: &str) -> &str {
    match registry {
        "docker.io" => "registry-1.docker.io",
        other => other,
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

    /// A resolver that knows no name, as the system's answers for a host that does not exist.
    struct NoSuchHost;

    impl reqwest::dns::Resolve for NoSuchHost {
        fn resolve(&self, _: reqwest::dns::Name) -> reqwest::dns::Resolving {
            let gai = "failed to lookup address information: Name or service not known";
            Box::pin(async move { Err(std::io::Error::other(gai).into()) })
        }
    }

    /// A DNS failure keeps its line (the note after the request, the reqwest error's chain
    /// after that) and is retried; the reqwest error is the cause.
    #[tokio::test]
    async fn a_dns_failure_keeps_its_line_and_its_cause() {
        let client = reqwest::Client::builder()
            .dns_resolver(NoSuchHost)
            .build()
            .unwrap();
        let e = client
            .get("https://registry.invalid/v2/x/manifests/y")
            .send()
            .await
            .unwrap_err();
        let Failure::Retry(err, None) = transport_failure("manifest registry.invalid/x:y", e)
        else {
            panic!("a DNS failure is worth another attempt");
        };
        let err = super::super::retry::gave_up(err, 5);
        assert_eq!(
            crate::error::one_line(&err),
            "manifest registry.invalid/x:y (gave up after 5 attempts): error sending request for \
             url (https://registry.invalid/v2/x/manifests/y): client error (Connect): dns error: \
             error resolving DNS: failed to lookup address information: Name or service not known"
        );
        let cause = std::error::Error::source(&err).unwrap();
        assert!(
            cause
                .downcast_ref::<reqwest::Error>()
                .is_some_and(|e| e.is_connect())
        );
    }
}
