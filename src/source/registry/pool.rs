//! The connections of one HTTP client (one host and scheme): made by a connector (TCP,
//! proxies, TLS with ALPN), driven by hyper's own `client::conn` (HTTP/1.1, or HTTP/2 when
//! ALPN says so), each one's task spawned on the runtime, kept and reused.
//!
//! What it keeps of hyper-util's legacy pool (hyperium/hyper-util
//! `src/client/legacy/client.rs` and `pool.rs`): an HTTP/1.1 connection takes a new request
//! only once hyper says it is ready for one (`PoolClient::is_open` and `is_ready`, which
//! `Client::try_send_request` awaits with `poll_ready` before the connection goes back to
//! the pool: its answer's body read to its end or dropped); HTTP/2 is one connection shared
//! by cloning its sender (`Reservation::Shared`); a request hyper gives back unsent on a
//! reused connection (`TrySendError::take_message`) is sent again, once, on a new one
//! (`Client::send_request` with `retry_canceled_requests`); connections idle for 90 s are
//! dropped (`Builder::pool_idle_timeout`). What it drops, as one client serves one host and
//! scheme (`tls::HttpClients::for_url`): the pool key and its hash, the race between a
//! checkout and a connect (`Client::one_connection_for`), the connect future and connector
//! clone made per request, the task spawned per request to put a connection back once
//! ready, the idle timer task, and the `Host` header formatted per request. A connection in
//! use stays listed and is skipped until hyper readies it, so nothing runs when a body ends.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::FutureExt;
use futures::future::{self, Either};
use http::header::HOST;
use http::uri::{Parts, PathAndQuery};
use http::{HeaderValue, Request, Uri};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::{TrySendError, http1, http2};
use hyper_util::client::legacy::connect::Connection;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tokio::time::Instant;

use super::mutex::lock;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What a request carries: its whole body, known before it is sent (so it can be sent again).
type Body = Full<Bytes>;

/// How long an idle connection is kept.
const POOL_IDLE: Duration = Duration::from_secs(90);

/// The connections of one host and scheme.
pub(super) struct Pool<C> {
    connector: C,
    /// `scheme://host[:port]`, what the connector is asked for; `None` when the host is no
    /// URI authority.
    dst: Option<Uri>,
    /// `host[:port]`, the `Host` header of HTTP/1.1 requests.
    host: Option<HeaderValue>,
    conns: Mutex<Conns>,
}

/// The open connections.
#[derive(Default)]
struct Conns {
    /// HTTP/1.1 connections, idle or answering, the one used last at the end.
    h1: Vec<H1>,
    /// The HTTP/2 connection, shared by every request.
    h2: Option<http2::SendRequest<Body>>,
}

/// An HTTP/1.1 connection.
struct H1 {
    tx: http1::SendRequest<Body>,
    /// To a proxy that takes plain-HTTP requests whole (absolute-form).
    proxied: bool,
    /// When its last request went out.
    since: Instant,
}

/// A connection to send one request on.
enum Sender {
    H1(H1),
    H2(http2::SendRequest<Body>),
}

/// An answer's head, and its body unread.
pub(super) struct Answer {
    pub(super) head: http::response::Parts,
    pub(super) body: Incoming,
}

/// A request that had no answer: why, and its URI (for the error's text).
pub(super) struct Failed {
    pub(super) error: ClientError,
    pub(super) uri: Uri,
}

/// How a send on one connection failed.
enum Tried {
    /// hyper gave the request back unsent (the connection had closed). Boxed: it is rare,
    /// and every answer's future has room for this error.
    Unsent(Box<Request<Body>>, hyper::Error),
    /// The request may have been written: never sent again.
    Lost(hyper::Error),
}

impl<C> Pool<C>
where
    C: tower_service::Service<Uri> + Clone + Send + Sync + 'static,
    C::Response: hyper::rt::Read + hyper::rt::Write + Connection + Unpin + Send + 'static,
    C::Future: Send,
    C::Error: Into<BoxError>,
{
    /// The pool of `host` (`host[:port]`, the port left out when it is the scheme's own) over
    /// plain HTTP when `plain`, else HTTPS; connections made by `connector`.
    pub(super) fn new(connector: C, plain: bool, host: &str) -> Pool<C> {
        let scheme = if plain { "http" } else { "https" };
        Pool {
            connector,
            dst: format!("{scheme}://{host}").parse().ok(),
            host: HeaderValue::from_str(host).ok(),
            conns: Mutex::default(),
        }
    }

    /// Sends `req` (its URI absolute) on an idle connection or a new one, and returns the
    /// answer's head with its body unread. A request an idle connection gave back unsent is
    /// sent once more, on a new connection; one that may have been written never is.
    ///
    /// On an idle connection the request is handed to hyper here and now: what is awaited
    /// holds hyper's answer and the URI. Connecting and sending again are boxed where they
    /// happen.
    pub(super) fn send(
        self: Arc<Self>,
        req: Request<Body>,
    ) -> impl Future<Output = Result<Answer, Failed>> + Send {
        match self.take() {
            Some(sender) => Either::Left(self.sent(sender, req, true)),
            None => Either::Right(Box::pin(async move {
                match self.connect().await {
                    Ok(sender) => self.sent(sender, req, false).await,
                    Err(error) => {
                        let uri = req.into_parts().0.uri;
                        Err(Failed { error, uri })
                    }
                }
            })),
        }
    }

    /// `req` sent on `sender`; sent once more on a new connection when `reused` and hyper
    /// gives it back unsent.
    fn sent(
        self: &Arc<Self>,
        sender: Sender,
        req: Request<Body>,
        reused: bool,
    ) -> impl Future<Output = Result<Answer, Failed>> + Send + use<C> {
        // Combinators, not an `async` block: a block would hold the attempt twice (as what
        // it captured and as what it awaits).
        let pool = Arc::clone(self);
        self.attempt(sender, req).then(move |result| match result {
            Ok(answer) => Either::Left(future::ready(Ok(answer))),
            Err((Tried::Unsent(given, _), _)) if reused => {
                Either::Right(Box::pin(pool.send_again(*given)))
            }
            Err(failure) => Either::Left(future::ready(Err(failed(failure)))),
        })
    }

    /// `req`, given back unsent by a reused connection, sent on a new one.
    async fn send_again(self: Arc<Self>, req: Request<Body>) -> Result<Answer, Failed> {
        match self.connect().await {
            Ok(sender) => self.attempt(sender, req).await.map_err(failed),
            Err(error) => {
                let uri = req.into_parts().0.uri;
                Err(Failed { error, uri })
            }
        }
    }

    /// A connection ready for a request now: the HTTP/2 one, else the HTTP/1.1 one used
    /// last of those hyper has readied (its last answer's body read to its end, or dropped
    /// and drained). Closed connections, and idle ones past [`POOL_IDLE`], are dropped.
    fn take(&self) -> Option<Sender> {
        let mut conns = lock(&self.conns);
        if let Some(h2) = &conns.h2 {
            if !h2.is_closed() {
                return Some(Sender::H2(h2.clone()));
            }
            conns.h2 = None;
        }
        let now = Instant::now();
        conns.h1.retain(|c| {
            let expired = now.duration_since(c.since) > POOL_IDLE;
            !c.tx.is_closed() && (!c.tx.is_ready() || !expired)
        });
        let at = conns.h1.iter().rposition(|c| c.tx.is_ready())?;
        Some(Sender::H1(conns.h1.remove(at)))
    }

    /// A new connection, its task spawned on the runtime (its end closes the connection,
    /// which the pool drops when it next looks). An HTTP/2 one is shared from then on.
    async fn connect(&self) -> Result<Sender, ClientError> {
        let Some(dst) = self.dst.clone() else {
            let e: BoxError = "the registry's host is no URI authority".into();
            return Err(ClientError::new(Kind::Connect, e));
        };
        // Readied, then called, as hyper-util's `Connect` for any `Service<Uri>` does
        // (src/client/legacy/connect/mod.rs, `sealed::Connect::connect`, a `Oneshot`).
        let mut connector = self.connector.clone();
        future::poll_fn(|cx| connector.poll_ready(cx))
            .await
            .map_err(|e| ClientError::new(Kind::Connect, e))?;
        let io = connector
            .call(dst)
            .await
            .map_err(|e| ClientError::new(Kind::Connect, e))?;
        let connected = io.connected();
        if connected.is_negotiated_h2() {
            let (tx, conn) = http2::Builder::new(TokioExecutor::new())
                .timer(TokioTimer::new())
                .handshake(io)
                .await
                .map_err(|e| ClientError::new(Kind::SendRequest, e))?;
            tokio::spawn(conn);
            let mut conns = lock(&self.conns);
            if let Some(shared) = &conns.h2
                && !shared.is_closed()
            {
                // Another request's connection came first: this one ends when dropped.
                return Ok(Sender::H2(shared.clone()));
            }
            conns.h2 = Some(tx.clone());
            return Ok(Sender::H2(tx));
        }
        let (tx, conn) = http1::handshake(io)
            .await
            .map_err(|e| ClientError::new(Kind::SendRequest, e))?;
        tokio::spawn(conn);
        Ok(Sender::H1(H1 {
            tx,
            proxied: connected.is_proxied(),
            since: Instant::now(),
        }))
    }

    /// Sends `req` on `sender`: over HTTP/1.1 in origin-form with the pool's `Host` (in
    /// absolute-form to a plain-HTTP proxy), the connection listed again at once (busy until
    /// hyper readies it); over HTTP/2 as it is (hyper sets `:authority`). The request is
    /// handed to hyper here and now; an error comes with its absolute URI.
    fn attempt(
        &self,
        sender: Sender,
        mut req: Request<Body>,
    ) -> impl Future<Output = Result<Answer, (Tried, Uri)>> + Send + use<C> {
        let (sending, absolute) = match sender {
            Sender::H2(mut tx) => {
                let uri = req.uri().clone();
                (Either::Left(tx.try_send_request(req)), uri)
            }
            Sender::H1(mut conn) => {
                if let Some(host) = &self.host {
                    req.headers_mut()
                        .entry(HOST)
                        .or_insert_with(|| host.clone());
                }
                let absolute = if conn.proxied {
                    req.uri().clone()
                } else {
                    let origin = origin_form(req.uri());
                    std::mem::replace(req.uri_mut(), origin)
                };
                let sending = conn.tx.try_send_request(req);
                conn.since = Instant::now();
                lock(&self.conns).h1.push(conn);
                (Either::Right(sending), absolute)
            }
        };
        sending.map(move |sent| match sent {
            Ok(resp) => {
                let (head, body) = resp.into_parts();
                Ok(Answer { head, body })
            }
            Err(e) => match tried(e) {
                Tried::Unsent(mut given, e) => {
                    *given.uri_mut() = absolute.clone();
                    Err((Tried::Unsent(given, e), absolute))
                }
                lost => Err((lost, absolute)),
            },
        })
    }
}

/// The error of a request that failed on its connection: `Canceled` when hyper gave it
/// back unsent, `SendRequest` when it may have been written.
fn failed((tried, uri): (Tried, Uri)) -> Failed {
    let error = match tried {
        Tried::Unsent(_, e) => ClientError::new(Kind::Canceled, e),
        Tried::Lost(e) => ClientError::new(Kind::SendRequest, e),
    };
    Failed { error, uri }
}

/// What hyper's error says of the request.
fn tried(mut e: TrySendError<Request<Body>>) -> Tried {
    match e.take_message() {
        Some(req) => Tried::Unsent(Box::new(req), e.into_error()),
        None => Tried::Lost(e.into_error()),
    }
}

/// `uri`'s path and query alone (`/` when it has none).
fn origin_form(uri: &Uri) -> Uri {
    let mut parts = Parts::default();
    parts.path_and_query = Some(
        uri.path_and_query()
            .cloned()
            .unwrap_or_else(|| PathAndQuery::from_static("/")),
    );
    Uri::from_parts(parts).unwrap_or_default()
}

/// What went wrong sending a request, told as hyper-util's legacy client told it
/// (`client error (Connect)`, `client error (SendRequest)`, `client error (Canceled)`) with
/// the connector's or hyper's error as its cause: the lines users see are unchanged.
#[derive(Debug)]
pub(super) struct ClientError {
    kind: Kind,
    source: BoxError,
}

/// The step that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Connecting: TCP, a proxy's tunnel, TLS, the connect timeout.
    Connect,
    /// Sending, or reading the answer's head.
    SendRequest,
    /// A new connection that closed before the request went out.
    Canceled,
}

impl ClientError {
    fn new(kind: Kind, source: impl Into<BoxError>) -> ClientError {
        ClientError {
            kind,
            source: source.into(),
        }
    }

    /// Whether connecting failed (nothing was sent): what the tests ask of a cause.
    #[cfg(test)]
    pub(super) fn is_connect(&self) -> bool {
        self.kind == Kind::Connect
    }
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "client error ({:?})", self.kind)
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Poll};

    use hyper_util::client::legacy::connect::Connected;
    use hyper_util::rt::TokioIo;
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    use super::*;

    /// One end of an in-memory connection, as a connector hands it out.
    struct Piped(TokioIo<DuplexStream>);

    impl Connection for Piped {
        fn connected(&self) -> Connected {
            Connected::new()
        }
    }

    impl hyper::rt::Read for Piped {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: hyper::rt::ReadBufCursor<'_>,
        ) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
        }
    }

    impl hyper::rt::Write for Piped {
        fn poll_write(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
        }

        fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.get_mut().0).poll_flush(cx)
        }

        fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
        }
    }

    /// A connector handing out the client ends of in-memory connections, first made first,
    /// counting what it was asked.
    #[derive(Clone)]
    struct Pipes {
        ends: Arc<Mutex<Vec<DuplexStream>>>,
        made: Arc<AtomicUsize>,
    }

    impl tower_service::Service<Uri> for Pipes {
        type Response = Piped;
        type Error = std::io::Error;
        type Future = future::Ready<Result<Piped, std::io::Error>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), std::io::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: Uri) -> Self::Future {
            self.made.fetch_add(1, Ordering::SeqCst);
            let mut ends = lock(&self.ends);
            future::ready(match ends.is_empty() {
                true => Err(std::io::Error::other("no connection left")),
                false => Ok(Piped(TokioIo::new(ends.remove(0)))),
            })
        }
    }

    /// Reads one request head on the server's end, answers `{}` keeping the connection.
    async fn answer(server: &mut DuplexStream) -> String {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            assert_eq!(server.read(&mut byte).await.unwrap(), 1, "a request");
            head.push(byte[0]);
        }
        let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        server.write_all(ok.as_bytes()).await.unwrap();
        String::from_utf8(head).unwrap()
    }

    async fn get(pool: &Arc<Pool<Pipes>>) -> Result<Answer, Failed> {
        let mut req = Request::new(Full::default());
        *req.uri_mut() = "http://h.example:5000/v2/x".parse().unwrap();
        Arc::clone(pool).send(req).await
    }

    /// An idle connection the server closed just before a request was handed to it: hyper
    /// gives the request back unsent, and it goes once more on a new connection (as
    /// hyper-util's `Client::send_request` does with `retry_canceled_requests`).
    #[tokio::test]
    async fn a_request_an_idle_connection_gave_back_goes_once_more_on_a_new_one() {
        let (first, mut server1) = tokio::io::duplex(4096);
        let (second, mut server2) = tokio::io::duplex(4096);
        let pipes = Pipes {
            ends: Arc::new(Mutex::new(vec![first, second])),
            made: Arc::default(),
        };
        let made = Arc::clone(&pipes.made);
        let pool = Arc::new(Pool::new(pipes, true, "h.example:5000"));

        let (answered, head) = tokio::join!(get(&pool), answer(&mut server1));
        let Ok(Answer { mut body, .. }) = answered else {
            panic!("the first request is answered");
        };
        assert!(head.starts_with("GET /v2/x HTTP/1.1\r\n"), "{head}");
        assert!(head.contains("host: h.example:5000\r\n"), "{head}");
        while http_body_util::BodyExt::frame(&mut body).await.is_some() {}
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        {
            let conns = lock(&pool.conns);
            assert_eq!(conns.h1.len(), 1);
            assert!(conns.h1[0].tx.is_ready(), "idle, and ready for a request");
        }

        // The server closes the idle connection; the request is handed to it before its
        // task has seen the end.
        drop(server1);
        let both = async { tokio::join!(get(&pool), answer(&mut server2)) };
        let (answered, head) = tokio::time::timeout(Duration::from_secs(5), both)
            .await
            .expect("the request reaches the second connection");
        assert!(answered.is_ok(), "sent again on a new connection");
        assert!(head.starts_with("GET /v2/x HTTP/1.1\r\n"), "{head}");
        assert_eq!(made.load(Ordering::SeqCst), 2, "exactly one new connection");
    }
}
