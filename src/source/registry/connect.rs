//! How a connection to a registry is made: TCP (the system resolver, reqwest's socket
//! settings), through the proxy the environment names (a `CONNECT` tunnel for HTTPS), TLS
//! with ALPN (`h2`, `http/1.1`) by hyper-rustls, all within the connect timeout; and each
//! connection's traffic above TLS metered ([`Wear`]), so the transport can tell a request
//! a stale connection lost from one a server refused to answer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use http::Uri;
use http::uri::Scheme;
use hyper_rustls::{HttpsConnector, MaybeHttpsStream};
use hyper_util::client::legacy::connect::dns::{GaiResolver, Name};
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// `scheme://host[:port]/path` of `uri`: no user, password or query.
pub(super) fn shown(uri: &Uri) -> String {
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

/// hyper's I/O traits for a connection type, handed to its `inner` stream.
macro_rules! hyper_io_through_inner {
    ($type:ty) => {
        impl hyper::rt::Read for $type {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: hyper::rt::ReadBufCursor<'_>,
            ) -> Poll<std::io::Result<()>> {
                hyper::rt::Read::poll_read(Pin::new(&mut self.get_mut().inner), cx, buf)
            }
        }

        impl hyper::rt::Write for $type {
            fn poll_write(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<std::io::Result<usize>> {
                hyper::rt::Write::poll_write(Pin::new(&mut self.get_mut().inner), cx, buf)
            }

            fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
                hyper::rt::Write::poll_flush(Pin::new(&mut self.get_mut().inner), cx)
            }

            fn poll_shutdown(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
            ) -> Poll<std::io::Result<()>> {
                hyper::rt::Write::poll_shutdown(Pin::new(&mut self.get_mut().inner), cx)
            }

            fn is_write_vectored(&self) -> bool {
                hyper::rt::Write::is_write_vectored(&self.inner)
            }

            fn poll_write_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> Poll<std::io::Result<usize>> {
                let inner = Pin::new(&mut self.get_mut().inner);
                hyper::rt::Write::poll_write_vectored(inner, cx, bufs)
            }
        }
    };
}

hyper_io_through_inner!(Io);

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

/// The connections of one host and scheme: hyper-rustls's connector (TLS with ALPN `h2`,
/// `http/1.1`, or plain HTTP) over [`Tcp`], each connection made within a timeout and
/// metered ([`Metered`]).
#[derive(Clone)]
pub(super) struct Connector {
    inner: HttpsConnector<Tcp>,
    timeout: Duration,
}

impl Connector {
    /// Connections whose TLS uses `tls` (its ALPN is set here), each made within
    /// `connect_timeout`, through `proxies` where they say so.
    pub(super) fn new(
        tls: rustls::ClientConfig,
        connect_timeout: Duration,
        proxies: Option<Arc<Matcher>>,
    ) -> Connector {
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
        let tcp = Tcp { direct, proxies };
        let inner = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(tcp);
        Connector {
            inner,
            timeout: connect_timeout,
        }
    }
}

type Connecting = Pin<Box<dyn Future<Output = Result<Metered, BoxError>> + Send>>;

impl tower_service::Service<Uri> for Connector {
    type Response = Metered;
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
                Ok(made) => Ok(Metered::new(made?)),
                Err(_) => Err(Box::new(TimedOut) as BoxError),
            }
        })
    }
}

/// What one connection carried, above TLS: read by the transport when a request on it
/// failed, to tell whether the connection had answered before and whether any byte of this
/// request's answer came. HTTP/1.1 only: a request is written whole before its answer is
/// read, so a write after bytes were read begins the next request.
#[derive(Debug, Default)]
pub(super) struct Wear {
    /// Requests begun: writes (attempted, even if they failed) after the last bytes read.
    begun: AtomicU32,
    /// Answers whose head arrived (counted by the transport).
    answered: AtomicU32,
    /// Bytes read since the last request began.
    heard: AtomicU64,
}

impl Wear {
    /// A write is attempted: the first since bytes were read begins a request.
    fn writing(&self) {
        if self.heard.swap(0, Ordering::Relaxed) > 0 || self.begun.load(Ordering::Relaxed) == 0 {
            self.begun.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `n` bytes were read.
    fn heard(&self, n: usize) {
        if n > 0 {
            self.heard.fetch_add(n as u64, Ordering::Relaxed);
        }
    }

    /// An answer's head arrived.
    pub(super) fn answered(&self) {
        self.answered.fetch_add(1, Ordering::Relaxed);
    }

    /// What a request that failed on this connection, with no answer, may do: go again on
    /// a new connection when the connection had answered before (it was reused, and went
    /// stale) and either the request was never begun on it (any method) or it was begun
    /// and not a byte of its answer came (`safe` methods only: the server may have acted on
    /// it). Go's net/http does the same (`persistConn.shouldRetryRequest`).
    pub(super) fn lost_unanswered(&self, safe: bool) -> bool {
        let begun = self.begun.load(Ordering::Relaxed);
        let answered = self.answered.load(Ordering::Relaxed);
        let unsent = begun == answered;
        let unheard = begun == answered + 1 && self.heard.load(Ordering::Relaxed) == 0;
        answered >= 1 && (unsent || (safe && unheard))
    }
}

/// A connection's [`Wear`], as hyper-util hands it back (with an error's connection
/// information, and in each answer's extensions).
#[derive(Clone, Debug)]
pub(super) struct Worn(pub(super) Arc<Wear>);

/// A connection as hyper speaks on it: TLS (or not) over [`Io`], its traffic metered.
pub(super) struct Metered {
    inner: TokioIo<Counting>,
}

/// The byte counts of [`Metered`], over tokio's I/O traits (whose read buffer says how much
/// a read filled).
struct Counting {
    inner: TokioIo<MaybeHttpsStream<Io>>,
    wear: Arc<Wear>,
}

impl Metered {
    fn new(stream: MaybeHttpsStream<Io>) -> Metered {
        let counting = Counting {
            inner: TokioIo::new(stream),
            wear: Arc::default(),
        };
        Metered {
            inner: TokioIo::new(counting),
        }
    }
}

impl Connection for Metered {
    fn connected(&self) -> Connected {
        let counting = self.inner.inner();
        let wear = Worn(Arc::clone(&counting.wear));
        counting.inner.inner().connected().extra(wear)
    }
}

hyper_io_through_inner!(Metered);

impl AsyncRead for Counting {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        this.wear.heard(buf.filled().len() - before);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Counting {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        this.wear.writing();
        Pin::new(&mut this.inner).poll_write(cx, buf)
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
        let this = self.get_mut();
        this.wear.writing();
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }
}
