//! The one way a request is sent: hyper-util's pooled client (HTTP/1.1, or HTTP/2 when TLS
//! negotiates it by ALPN) over rustls, used directly. An [`Outgoing`] request goes out as
//! it is (no redirect, retry or decompression layer: the layers above follow redirects by
//! hand and retry by themselves), a [`Response`] comes back with its status, headers and
//! body stream. Connecting (TCP and TLS) is bounded by the connect timeout.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::FutureExt;
use http::header::{ACCEPT, HeaderName, HeaderValue, PROXY_AUTHORIZATION, USER_AGENT};
use http::uri::{Authority, Scheme};
use http::{HeaderMap, Method, StatusCode, Uri};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Body as _;
use hyper_rustls::{HttpsConnector, MaybeHttpsStream};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::dns::{GaiResolver, Name};
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpStream;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How long an idle pooled connection is kept.
const POOL_IDLE: Duration = Duration::from_secs(90);

/// The client of one host and scheme: its connections are pooled and reused.
#[derive(Clone)]
pub(super) struct HttpClient {
    pool: Arc<Client<Connector, Full<Bytes>>>,
    /// The environment's proxies, when it names any.
    proxies: Option<Arc<Matcher>>,
}

impl HttpClient {
    /// A client whose TLS connections use `tls` (its ALPN is set here: `h2`, `http/1.1`),
    /// each connection made within `connect_timeout`, through `proxies` where they say so.
    pub(super) fn new(
        tls: rustls::ClientConfig,
        connect_timeout: Duration,
        proxies: Option<Arc<Matcher>>,
    ) -> HttpClient {
        let mut direct = HttpConnector::new_with_resolver(Resolve(GaiResolver::new()));
        direct.enforce_http(false);
        // reqwest's settings: no Nagle delay; a dead peer found by TCP keepalive probes, and
        // unacknowledged data given up after 30 s.
        direct.set_nodelay(true);
        direct.set_keepalive(Some(Duration::from_secs(15)));
        direct.set_keepalive_interval(Some(Duration::from_secs(15)));
        direct.set_keepalive_retries(Some(3));
        #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
        direct.set_tcp_user_timeout(Some(Duration::from_secs(30)));
        let tcp = Tcp {
            direct,
            proxies: proxies.clone(),
        };
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(tcp);
        let connector = Connector {
            inner: https,
            timeout: connect_timeout,
        };
        let pool = Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(POOL_IDLE)
            .build(connector);
        HttpClient {
            pool: Arc::new(pool),
            proxies,
        }
    }

    /// Sends `out` and returns the answer's head, its body unread. `Accept: */*` unless the
    /// request names what it accepts; imgcheck's `User-Agent`. The request is built here and
    /// now; what is awaited holds only the pool's answer and the URI for its error.
    pub(super) fn send(
        &self,
        out: Outgoing,
    ) -> impl Future<Output = Result<Response, HttpError>> + use<> {
        let Outgoing {
            method,
            uri,
            mut headers,
            body,
        } = out;
        static AGENT: HeaderValue =
            HeaderValue::from_static(concat!("imgcheck/", env!("CARGO_PKG_VERSION")));
        static ANY: HeaderValue = HeaderValue::from_static("*/*");
        headers.insert(USER_AGENT, AGENT.clone());
        headers.entry(ACCEPT).or_insert_with(|| ANY.clone());
        // A plain-HTTP request goes to the proxy whole: its credentials go with it (an HTTPS
        // one gives them in its `CONNECT`).
        if let Some(proxies) = &self.proxies
            && uri.scheme() == Some(&Scheme::HTTP)
            && let Some(auth) = proxies
                .intercept(&uri)
                .and_then(|p| p.basic_auth().cloned())
        {
            headers.insert(PROXY_AUTHORIZATION, auth);
        }
        let mut req = http::Request::new(Full::new(body));
        *req.method_mut() = method;
        *req.uri_mut() = uri.clone();
        *req.headers_mut() = headers;
        self.pool.request(req).map(move |answer| match answer {
            Ok(resp) => {
                let (head, body) = resp.into_parts();
                Ok(Response {
                    status: head.status,
                    headers: head.headers,
                    body: body.boxed(),
                })
            }
            Err(e) => Err(HttpError::sending(&uri, e)),
        })
    }
}

/// Where a registry's API is reached, `scheme://host[:port]`: parsed once, so a request's
/// URI is this and a path, with no URL parsed per request.
#[derive(Clone)]
pub(super) struct Origin {
    scheme: Scheme,
    /// `None` when the host is no URI authority (the request's URI then fails to parse,
    /// and says so).
    authority: Option<Authority>,
    /// `scheme://host`.
    shown: Arc<str>,
}

impl Origin {
    /// `http://host` when `plain`, else `https://host`.
    pub(super) fn new(plain: bool, host: &str) -> Origin {
        let scheme = if plain { Scheme::HTTP } else { Scheme::HTTPS };
        Origin {
            shown: format!("{scheme}://{host}").into(),
            authority: Authority::try_from(host).ok(),
            scheme,
        }
    }

    /// The URI of `path` (which starts with `/`) here.
    pub(super) fn uri(&self, path: String) -> Result<Uri, http::Error> {
        match &self.authority {
            Some(authority) => Uri::builder()
                .scheme(self.scheme.clone())
                .authority(authority.clone())
                .path_and_query(path)
                .build(),
            None => Ok(format!("{}{path}", self.shown).parse::<Uri>()?),
        }
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// A request as it goes out: method, absolute URI, headers and body.
pub(super) struct Outgoing {
    pub(super) method: Method,
    pub(super) uri: Uri,
    pub(super) headers: HeaderMap,
    pub(super) body: Bytes,
}

impl Outgoing {
    /// `method` on `uri`, without headers or body.
    pub(super) fn new(method: Method, uri: Uri) -> Outgoing {
        Outgoing {
            method,
            uri,
            headers: HeaderMap::with_capacity(4),
            body: Bytes::new(),
        }
    }

    /// The request with the header `name: value` (replacing one of the same name).
    pub(super) fn header(mut self, name: HeaderName, value: HeaderValue) -> Outgoing {
        self.headers.insert(name, value);
        self
    }

    /// The request with `body`.
    pub(super) fn body(mut self, body: Bytes) -> Outgoing {
        self.body = body;
        self
    }
}

/// An answer: status, headers, and the body still to read.
pub(super) struct Response {
    status: StatusCode,
    headers: HeaderMap,
    body: BoxBody<Bytes, hyper::Error>,
}

impl Response {
    /// The status.
    pub(super) fn status(&self) -> StatusCode {
        self.status
    }

    /// The headers.
    pub(super) fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The body's length, when the answer tells it.
    pub(super) fn content_length(&self) -> Option<u64> {
        self.body.size_hint().exact()
    }

    /// The next piece of the body (the connection's own buffer), `None` at its end.
    pub(super) async fn chunk(&mut self) -> Result<Option<Bytes>, HttpError> {
        loop {
            let Some(frame) = self.body.frame().await else {
                return Ok(None);
            };
            let frame = frame.map_err(|e| HttpError {
                url: None,
                source: Box::new(e),
            })?;
            // Trailers carry nothing imgcheck reads.
            if let Ok(data) = frame.into_data() {
                return Ok(Some(data));
            }
        }
    }

    /// An answer made here, not received: for tests of what an answer means.
    #[cfg(test)]
    pub(super) fn fixed(status: u16, headers: &[(&str, &str)], body: &str) -> Response {
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            let name = HeaderName::from_bytes(k.as_bytes()).unwrap();
            map.append(name, HeaderValue::from_str(v).unwrap());
        }
        let body = Full::new(Bytes::from(body.to_string()))
            .map_err(|never| match never {})
            .boxed();
        Response {
            status: StatusCode::from_u16(status).unwrap(),
            headers: map,
            body,
        }
    }
}

/// A request that could not be sent (no answer: connecting, TLS, the connection lost), or
/// a body that broke off. Says which URL, without its credentials or query (a signed URL's
/// signature); the client's error is the cause.
#[derive(Debug)]
pub(super) struct HttpError {
    /// The URL of a request that was not answered; `None` for a body that broke off.
    url: Option<String>,
    source: BoxError,
}

impl HttpError {
    /// The error of a request to `uri` that had no answer.
    pub(super) fn sending(uri: &Uri, e: hyper_util::client::legacy::Error) -> HttpError {
        HttpError {
            url: Some(shown(uri)),
            source: Box::new(e),
        }
    }
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.url {
            Some(url) => write!(f, "error sending request for url ({url})"),
            None => f.write_str("error decoding response body"),
        }
    }
}

impl std::error::Error for HttpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

/// `scheme://host[:port]/path` of `uri`: no user, password or query.
fn shown(uri: &Uri) -> String {
    let scheme = uri.scheme_str().unwrap_or("http");
    let host = uri.host().unwrap_or("");
    let port = uri.port_u16().map(|p| format!(":{p}")).unwrap_or_default();
    format!("{scheme}://{host}{port}{}", uri.path())
}

/// A connection (TCP, then TLS for `https`) that took longer than the connect timeout.
#[derive(Debug)]
struct TimedOut;

impl std::fmt::Display for TimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("operation timed out")
    }
}

impl std::error::Error for TimedOut {}

/// A host name that did not resolve: the system resolver's error under "error resolving
/// DNS", as the run's messages have always said it.
#[derive(Debug)]
pub(super) struct DnsError(std::io::Error);

impl std::fmt::Display for DnsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("error resolving DNS")
    }
}

impl std::error::Error for DnsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// A resolver (the system's, `getaddrinfo` on a blocking thread) whose errors are
/// [`DnsError`]s.
#[derive(Clone)]
pub(super) struct Resolve<R>(pub(super) R);

impl<R> tower_service::Service<Name> for Resolve<R>
where
    R: tower_service::Service<Name, Error = std::io::Error>,
{
    type Response = R::Response;
    type Error = DnsError;
    type Future = futures::future::MapErr<R::Future, fn(std::io::Error) -> DnsError>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), DnsError>> {
        self.0.poll_ready(cx).map_err(DnsError)
    }

    fn call(&mut self, name: Name) -> Self::Future {
        futures::TryFutureExt::map_err(self.0.call(name), DnsError as fn(_) -> _)
    }
}

/// The proxies the environment names (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, with
/// `NO_PROXY`; upper or lower case), read as reqwest read them; `None` when it names none.
pub(super) fn proxies_from_env() -> Option<Arc<Matcher>> {
    let names = [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
    ];
    let any = names
        .iter()
        .any(|n| std::env::var_os(n).is_some_and(|v| !v.is_empty()));
    any.then(|| Arc::new(Matcher::from_env()))
}

/// A TCP connection, and whether it is to a proxy that takes plain-HTTP requests whole.
struct Io {
    inner: TokioIo<TcpStream>,
    proxied: bool,
}

impl Connection for Io {
    fn connected(&self) -> Connected {
        self.inner.connected().proxy(self.proxied)
    }
}

impl hyper::rt::Read for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }
}

/// TCP connections: to the host, or through the proxy the environment names for it (a
/// `CONNECT` tunnel for HTTPS, with the proxy's credentials; for plain HTTP the proxy is
/// sent the request whole).
#[derive(Clone)]
struct Tcp {
    direct: HttpConnector<Resolve<GaiResolver>>,
    proxies: Option<Arc<Matcher>>,
}

impl tower_service::Service<Uri> for Tcp {
    type Response = Io;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Io, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.direct.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let proxy = self.proxies.as_ref().and_then(|m| m.intercept(&dst));
        let Some(proxy) = proxy else {
            let connecting = self.direct.call(dst);
            return Box::pin(async move {
                let inner = connecting.await?;
                Ok(Io {
                    inner,
                    proxied: false,
                })
            });
        };
        if proxy.uri().scheme() != Some(&Scheme::HTTP) {
            // Spoken to in plain text, a TLS proxy would get the request and its credentials
            // in the clear: refused before connecting.
            let message = format!(
                "proxy {}: only http:// proxies are supported (not TLS to the proxy); nothing \
                 was sent to it",
                shown(proxy.uri()).trim_end_matches('/')
            );
            return Box::pin(async move { Err(message.into()) });
        }
        if dst.scheme() == Some(&Scheme::HTTPS) {
            let mut tunnel = Tunnel::new(proxy.uri().clone(), self.direct.clone());
            if let Some(auth) = proxy.basic_auth() {
                tunnel = tunnel.with_auth(auth.clone());
            }
            return Box::pin(async move {
                let inner = tunnel.call(dst).await?;
                Ok(Io {
                    inner,
                    proxied: false,
                })
            });
        }
        let connecting = self.direct.call(proxy.uri().clone());
        Box::pin(async move {
            let inner = connecting.await?;
            Ok(Io {
                inner,
                proxied: true,
            })
        })
    }
}

/// hyper-rustls's connector, each connection within a timeout.
#[derive(Clone)]
struct Connector {
    inner: HttpsConnector<Tcp>,
    timeout: Duration,
}

type Connecting = Pin<Box<dyn Future<Output = Result<MaybeHttpsStream<Io>, BoxError>> + Send>>;

impl tower_service::Service<Uri> for Connector {
    type Response = MaybeHttpsStream<Io>;
    type Error = BoxError;
    type Future = Connecting;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, dst: Uri) -> Connecting {
        let connecting = self.inner.call(dst);
        let timeout = self.timeout;
        Box::pin(async move {
            match tokio::time::timeout(timeout, connecting).await {
                Ok(made) => made,
                Err(_) => Err(Box::new(TimedOut) as BoxError),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registry client is hyper-util's, used directly: reqwest (whose redirect and retry
    /// layers cost a fifth of a request's instructions, docs/decisions.md) is no dependency
    /// of the program, only of its tests.
    #[test]
    fn the_client_is_hyper_util_without_reqwest() {
        let manifest: toml::Table = toml::from_str(include_str!("../../../Cargo.toml")).unwrap();
        let deps = manifest["dependencies"].as_table().unwrap();
        for wanted in ["hyper-util", "hyper-rustls", "http-body-util"] {
            assert!(deps.contains_key(wanted), "{wanted} is a dependency");
        }
        assert!(!deps.contains_key("reqwest"), "reqwest is no dependency");
    }

    #[test]
    fn request_uris_are_an_origin_and_a_path() {
        let rows = [
            (
                true,
                "127.0.0.1:5000",
                "http://127.0.0.1:5000/v2/x/manifests/y",
            ),
            (false, "quay.io", "https://quay.io/v2/x/manifests/y"),
            (false, "[::1]:5000", "https://[::1]:5000/v2/x/manifests/y"),
        ];
        for (plain, host, want) in rows {
            let origin = Origin::new(plain, host);
            let uri = origin.uri("/v2/x/manifests/y".to_string()).unwrap();
            assert_eq!(uri.to_string(), want);
            assert_eq!(format!("{origin}/v2/x/manifests/y"), want);
        }
        let bad = Origin::new(false, "a b");
        assert!(bad.uri("/v2/".to_string()).is_err());
        assert!(Origin::new(false, "h").uri("/a b".to_string()).is_err());
    }

    /// What a proxy was asked on one connection: its head (request line and headers).
    async fn proxy_sees(answer: &'static str) -> (u16, tokio::sync::oneshot::Receiver<String>) {
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.unwrap();
            let head = super::super::tests::read_head(&mut conn)
                .await
                .unwrap_or_default();
            let _ = tx.send(String::from_utf8_lossy(&head).to_lowercase());
            let _ = conn.write_all(answer.as_bytes()).await;
        });
        (port, rx)
    }

    fn tls_config() -> rustls::ClientConfig {
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth()
    }

    fn proxied_client(port: u16) -> HttpClient {
        let proxy = format!("http://user:pw@127.0.0.1:{port}");
        let matcher = Matcher::builder().http(proxy.clone()).https(proxy).build();
        HttpClient::new(
            tls_config(),
            Duration::from_secs(5),
            Some(Arc::new(matcher)),
        )
    }

    /// The environment's proxy is used as reqwest used it (hyper-util's matcher, as reqwest
    /// reads `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY`): plain HTTP is sent to it whole, with its
    /// credentials; HTTPS goes through a `CONNECT` tunnel, with them too.
    #[tokio::test]
    async fn requests_go_through_the_environments_proxy() {
        let basic = "proxy-authorization: basic dxnlcjpwdw==";
        let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
        let (port, seen) = proxy_sees(ok).await;
        let uri: Uri = "http://registry.example:5000/v2/x/manifests/y"
            .parse()
            .unwrap();
        let out = Outgoing::new(Method::GET, uri);
        let resp = proxied_client(port).send(out).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let head = seen.await.unwrap();
        assert!(
            head.starts_with("get http://registry.example:5000/v2/x/manifests/y http/1.1\r\n"),
            "{head}"
        );
        assert!(head.contains(basic), "{head}");

        let refused = "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n";
        let (port, seen) = proxy_sees(refused).await;
        let uri: Uri = "https://registry.example/v2/".parse().unwrap();
        let err = proxied_client(port)
            .send(Outgoing::new(Method::GET, uri))
            .await
            .err()
            .expect("the proxy refused the tunnel");
        let head = seen.await.unwrap();
        assert!(
            head.starts_with("connect registry.example:443 http/1.1\r\n"),
            "{head}"
        );
        assert!(head.contains(basic), "{head}");
        assert!(
            err.to_string().contains("https://registry.example/v2/"),
            "{err}"
        );
    }

    /// A proxy named `https://` is refused before anything reaches it: spoken to in plain text
    /// it would get the request and the proxy's credentials in the clear.
    #[tokio::test]
    async fn a_tls_proxy_is_refused_before_anything_is_sent() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let proxy = format!("https://user:s3cret@127.0.0.1:{port}");
        let matcher = Matcher::builder().http(proxy.clone()).https(proxy).build();
        let client = HttpClient::new(
            tls_config(),
            Duration::from_secs(5),
            Some(Arc::new(matcher)),
        );
        for uri in [
            "http://registry.example/v2/",
            "https://registry.example/v2/",
        ] {
            let sent = client.send(Outgoing::new(Method::GET, uri.parse().unwrap()));
            let err = tokio::time::timeout(Duration::from_secs(2), sent)
                .await
                .expect("refused at once, not sent and waited on")
                .err()
                .expect("a TLS proxy is refused");
            let text = format!("{err:?} {}", super::super::failure::error_chain(&err));
            assert!(
                text.contains(&format!(
                    "proxy https://127.0.0.1:{port}: only http:// proxies are supported"
                )),
                "{uri}: {text}"
            );
            assert!(!text.contains("s3cret"), "{uri}: {text}");
        }
        let connected = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
        assert!(connected.is_err(), "nothing may connect to the proxy");
    }

    #[test]
    fn urls_are_shown_without_credentials_or_query() {
        let rows = [
            (
                "https://127.0.0.1:5000/v2/x/manifests/y",
                "https://127.0.0.1:5000/v2/x/manifests/y",
            ),
            (
                "http://user:s3cret@h.example/blob?X-Amz-Signature=sig",
                "http://h.example/blob",
            ),
            ("https://[::1]:443/v2/", "https://[::1]:443/v2/"),
        ];
        for (uri, want) in rows {
            assert_eq!(shown(&uri.parse().unwrap()), want, "{uri}");
        }
    }
}
