//! The one way a request is sent: our own connection pool (`pool`: hyper's HTTP/1.1, or
//! HTTP/2 when TLS negotiates it by ALPN) over rustls. An [`Outgoing`] request goes out as
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
use http_body_util::{BodyExt, Full};
use hyper::body::{Body as _, Incoming};
use hyper_rustls::{HttpsConnector, MaybeHttpsStream};
use hyper_util::client::legacy::connect::dns::{GaiResolver, Name};
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::pool::{Answer, ClientError, Pool};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The client of one host and scheme: its connections are pooled and reused.
#[derive(Clone)]
pub(super) struct HttpClient {
    pool: Arc<Pool<Connector>>,
    /// The environment's proxies, when it names any.
    proxies: Option<Arc<Matcher>>,
}

impl HttpClient {
    /// The client of `host` (`host[:port]`, the port left out when it is the scheme's own)
    /// over plain HTTP when `plain`, else HTTPS. Its TLS connections use `tls` (its ALPN is
    /// set here: `h2`, `http/1.1`), each connection made within `connect_timeout`, through
    /// `proxies` where they say so.
    pub(super) fn new(
        tls: rustls::ClientConfig,
        connect_timeout: Duration,
        proxies: Option<Arc<Matcher>>,
        plain: bool,
        host: &str,
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
        HttpClient {
            pool: Arc::new(Pool::new(connector, plain, host)),
            proxies,
        }
    }

    /// Sends `out` and returns the answer's head, its body unread. `Accept: */*` unless the
    /// request names what it accepts; imgcheck's `User-Agent`. The request is built here and
    /// now; what is awaited is only the pool's answer.
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
        *req.uri_mut() = uri;
        *req.headers_mut() = headers;
        Arc::clone(&self.pool).send(req).map(|answer| match answer {
            Ok(Answer { head, body }) => Ok(Response {
                status: head.status,
                headers: head.headers,
                body: Body::Wire(Box::new(body)),
            }),
            Err(failed) => Err(HttpError::sending(&failed.uri, failed.error)),
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
            headers: HeaderMap::with_capacity(6),
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
    body: Body,
}

/// An answer's body.
enum Body {
    /// As it comes from the connection. Boxed: an answer is held in several of a request's
    /// futures at once, and each would have room for hyper's body (40 bytes, not 8).
    Wire(Box<Incoming>),
    /// Made here: all of it, until it is read.
    #[cfg(test)]
    Fixed(Box<Bytes>),
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
        match &self.body {
            Body::Wire(body) => body.size_hint().exact(),
            #[cfg(test)]
            Body::Fixed(bytes) => Some(bytes.len() as u64),
        }
    }

    /// The next piece of the body (the connection's own buffer), `None` at its end.
    pub(super) async fn chunk(&mut self) -> Result<Option<Bytes>, HttpError> {
        match &mut self.body {
            Body::Wire(body) => loop {
                let Some(frame) = body.frame().await else {
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
            },
            #[cfg(test)]
            Body::Fixed(bytes) => Ok(Some(std::mem::take(&mut **bytes)).filter(|b| !b.is_empty())),
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
        Response {
            status: StatusCode::from_u16(status).unwrap(),
            headers: map,
            body: Body::Fixed(Box::new(Bytes::from(body.to_string()))),
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
    pub(super) fn sending(uri: &Uri, e: ClientError) -> HttpError {
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

    /// The registry client is hyper's, with our own pool and hyper-util's connectors: reqwest
    /// (whose redirect and retry layers cost a fifth of a request's instructions,
    /// docs/decisions.md) is no dependency of the program, only of its tests; hyper-util's
    /// legacy `Client` (about 10 k instructions per request, most of them its pool) is not
    /// used.
    #[test]
    fn the_client_is_hyper_without_reqwest_or_the_legacy_pool() {
        let manifest: toml::Table = toml::from_str(include_str!("../../../Cargo.toml")).unwrap();
        let deps = manifest["dependencies"].as_table().unwrap();
        for wanted in ["hyper", "hyper-util", "hyper-rustls", "http-body-util"] {
            assert!(deps.contains_key(wanted), "{wanted} is a dependency");
        }
        assert!(!deps.contains_key("reqwest"), "reqwest is no dependency");
        let legacy = concat!("legacy::", "Client");
        for (file, text) in [
            ("wire.rs", include_str!("wire.rs")),
            ("pool.rs", include_str!("pool.rs")),
        ] {
            assert!(!text.contains(legacy), "{file} uses hyper-util's {legacy}");
        }
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

    /// A client of `host` over plain HTTP when `plain`, through the proxy on `port`.
    fn proxied_client(port: u16, plain: bool, host: &str) -> HttpClient {
        let proxy = format!("http://user:pw@127.0.0.1:{port}");
        let matcher = Matcher::builder().http(proxy.clone()).https(proxy).build();
        HttpClient::new(
            tls_config(),
            Duration::from_secs(5),
            Some(Arc::new(matcher)),
            plain,
            host,
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
        let client = proxied_client(port, true, "registry.example:5000");
        let resp = client.send(out).await.unwrap();
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
        let err = proxied_client(port, false, "registry.example")
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
        let matcher = Arc::new(matcher);
        for (plain, uri) in [
            (true, "http://registry.example/v2/"),
            (false, "https://registry.example/v2/"),
        ] {
            let proxies = Some(Arc::clone(&matcher));
            let client = HttpClient::new(
                tls_config(),
                Duration::from_secs(5),
                proxies,
                plain,
                "registry.example",
            );
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

    /// What a hand-written HTTP/1.1 server on 127.0.0.1 does on each connection it accepts.
    #[derive(Clone, Copy)]
    enum Serve {
        /// Answers every request, keeping the connection open.
        KeepAlive,
        /// Answers the first request, keeping the connection open, then closes it.
        CloseWhenIdle,
        /// Answers the first request, then reads the second and closes without an answer.
        CloseAfterReading,
    }

    /// What the server saw: connections accepted and each request's head, in order.
    #[derive(Default)]
    struct Seen {
        accepted: std::sync::atomic::AtomicUsize,
        heads: std::sync::Mutex<Vec<String>>,
    }

    /// A server on its own OS thread (its allocations are not the client's): each accepted
    /// connection served by `how` on a thread of its own.
    fn hand_server(how: Serve) -> (u16, Arc<Seen>) {
        use std::io::Write;
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Seen::default());
        let shared = Arc::clone(&seen);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                shared.accepted.fetch_add(1, Ordering::SeqCst);
                let seen = Arc::clone(&shared);
                std::thread::spawn(move || {
                    for n in 1.. {
                        let Some(head) = read_head_blocking(&mut conn) else {
                            return;
                        };
                        seen.heads.lock().unwrap().push(head);
                        if n == 2 && matches!(how, Serve::CloseAfterReading) {
                            return;
                        }
                        let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
                        if conn.write_all(ok.as_bytes()).is_err() {
                            return;
                        }
                        if matches!(how, Serve::CloseWhenIdle) {
                            std::thread::sleep(Duration::from_millis(20));
                            return;
                        }
                    }
                });
            }
        });
        (port, seen)
    }

    /// The head of the next request on `conn`, `None` at its end.
    fn read_head_blocking(conn: &mut std::net::TcpStream) -> Option<String> {
        use std::io::Read;
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            match conn.read(&mut byte) {
                Ok(1) => head.push(byte[0]),
                _ => return None,
            }
        }
        Some(String::from_utf8_lossy(&head).into_owned())
    }

    fn plain_client(port: u16) -> HttpClient {
        let host = format!("127.0.0.1:{port}");
        HttpClient::new(tls_config(), Duration::from_secs(5), None, true, &host)
    }

    /// `GET http://127.0.0.1:port/v2/x/manifests/y`, its body read to its end.
    async fn get(client: &HttpClient, port: u16) -> Result<StatusCode, HttpError> {
        let uri = format!("http://127.0.0.1:{port}/v2/x/manifests/y");
        let mut resp = client
            .send(Outgoing::new(Method::GET, uri.parse().unwrap()))
            .await?;
        while resp.chunk().await?.is_some() {}
        Ok(resp.status())
    }

    /// Sequential requests go over one connection; concurrent ones over one each at most.
    #[tokio::test]
    async fn requests_reuse_idle_connections() {
        use std::sync::atomic::Ordering;
        let (port, seen) = hand_server(Serve::KeepAlive);
        let client = plain_client(port);
        for _ in 0..5 {
            assert_eq!(get(&client, port).await.unwrap(), StatusCode::OK);
        }
        assert_eq!(seen.accepted.load(Ordering::SeqCst), 1, "one connection");
        assert_eq!(seen.heads.lock().unwrap().len(), 5);

        let (port, seen) = hand_server(Serve::KeepAlive);
        let client = plain_client(port);
        for _ in 0..3 {
            let answers = futures::future::join_all((0..4).map(|_| get(&client, port))).await;
            assert!(answers.iter().all(|a| matches!(a, Ok(StatusCode::OK))));
        }
        let accepted = seen.accepted.load(Ordering::SeqCst);
        assert!(
            (1..=4).contains(&accepted),
            "{accepted} connections for 4 at once"
        );
        assert_eq!(seen.heads.lock().unwrap().len(), 12);
    }

    /// An idle connection the server closed is not used again: the next request goes over a
    /// new one. A request the server read before closing is never sent again: its error
    /// names the URL.
    #[tokio::test]
    async fn closed_connections_are_replaced_and_read_requests_never_resent() {
        use std::sync::atomic::Ordering;
        let (port, seen) = hand_server(Serve::CloseWhenIdle);
        let client = plain_client(port);
        assert_eq!(get(&client, port).await.unwrap(), StatusCode::OK);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(get(&client, port).await.unwrap(), StatusCode::OK);
        assert_eq!(seen.accepted.load(Ordering::SeqCst), 2);
        assert_eq!(
            seen.heads.lock().unwrap().len(),
            2,
            "each request sent once"
        );

        let (port, seen) = hand_server(Serve::CloseAfterReading);
        let client = plain_client(port);
        assert_eq!(get(&client, port).await.unwrap(), StatusCode::OK);
        let err = get(&client, port).await.unwrap_err();
        let text = super::super::failure::error_chain(&err);
        assert_eq!(
            text,
            format!(
                "error sending request for url (http://127.0.0.1:{port}/v2/x/manifests/y): \
                 client error (SendRequest): connection closed before message completed"
            )
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(seen.accepted.load(Ordering::SeqCst), 1, "not sent again");
        assert_eq!(seen.heads.lock().unwrap().len(), 2);
    }

    /// Over HTTP/1.1 a request goes out in origin-form with `Host: host:port` (the port left
    /// out only when it is the scheme's own), as hyper-util's legacy client writes it
    /// (src/client/legacy/client.rs, `Client::try_send_request` with `origin_form` and
    /// `get_non_default_port`).
    #[tokio::test]
    async fn requests_go_out_in_origin_form_with_their_host() {
        let (port, seen) = hand_server(Serve::KeepAlive);
        let client = plain_client(port);
        for _ in 0..2 {
            assert_eq!(get(&client, port).await.unwrap(), StatusCode::OK);
        }
        for head in seen.heads.lock().unwrap().iter() {
            let head = head.to_lowercase();
            assert!(
                head.starts_with("get /v2/x/manifests/y http/1.1\r\n"),
                "{head}"
            );
            assert_eq!(
                head.matches("\r\nhost: ").count(),
                1,
                "one Host header: {head}"
            );
            assert!(
                head.contains(&format!("\r\nhost: 127.0.0.1:{port}\r\n")),
                "{head}"
            );
        }
    }

    /// Issue 24: a request on an idle pooled connection, its body read to its end, allocates
    /// within its budget (client and connection task on this thread; the server on its own).
    #[test]
    fn a_request_on_an_idle_connection_allocates_within_budget() {
        use crate::engine::allocs::allocations;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (port, _) = hand_server(Serve::KeepAlive);
        let client = rt.block_on(async { plain_client(port) });
        rt.block_on(get(&client, port)).unwrap();
        let mut counts = Vec::new();
        for _ in 0..5 {
            let (answer, n) = allocations(|| rt.block_on(get(&client, port)));
            assert_eq!(answer.unwrap(), StatusCode::OK);
            counts.push(n);
        }
        let least = counts.iter().copied().min().unwrap();
        assert!(
            least <= REQUEST_BUDGET,
            "{counts:?} allocations per request"
        );
    }

    /// Allocations allowed for [`a_request_on_an_idle_connection_allocates_within_budget`]
    /// (this test's own URI included): 18 through hyper-util's legacy pool (its boxed send
    /// future, the task spawned to put the connection back, the `Host` header formatted, the
    /// pool key cloned and its waiters), 10 through our own (the answer's body boxed, as it
    /// was: see `sizes`).
    const REQUEST_BUDGET: usize = 10;
}
