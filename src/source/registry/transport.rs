//! The seam where a request leaves imgcheck: a [`Transport`] sends it and brings back the
//! answer's head with its body unread. The program's own is [`HyperTransport`], hyper-util's
//! pooled client (HTTP/1.1 keep-alive, HTTP/2 by ALPN with one shared connection per host,
//! idle connections dropped after 90 s) over the connections of `connect`; tests put faults
//! in their own, and a caller may bring one (`RegistryClient::with_transport`).
//!
//! One rule is added to hyper-util's: a request a stale kept-alive connection lost goes
//! again, at once and once, on a new connection (issue 33, item 18).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use http::Method;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::connect::{Connector, Worn};

/// A boxed error, as a transport gives it.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// An answer's body as a transport hands it on: its frames, each a piece of the body (or
/// trailers), until it ends or breaks off.
pub type AnswerBody = BoxBody<Bytes, BoxError>;

/// What a transport's `send` returns: the answer's head with its body unread, or why there
/// was no answer.
pub type Sending =
    Pin<Box<dyn Future<Output = Result<http::Response<AnswerBody>, BoxError>> + Send>>;

/// Sends requests to registries. A request comes with an absolute URI (`https://host/...`),
/// its headers (`User-Agent`, `Accept`, credentials) and its whole body; it goes out as it
/// is: the layers above follow redirects, authenticate and retry by themselves.
pub trait Transport: Send + Sync {
    /// Sends `req`; resolves to the answer's head (the body still to read), or an error
    /// when no answer came (connecting, TLS, the connection lost).
    fn send(&self, req: http::Request<Full<Bytes>>) -> Sending;
}

/// How long an idle connection is kept.
const POOL_IDLE: Duration = Duration::from_secs(90);

/// hyper-util's pooled client over the connections of one host and scheme.
pub(super) struct HyperTransport {
    /// Connections kept while idle and reused.
    pooled: Client<Connector, Full<Bytes>>,
    /// The same connector, nothing kept: where a request a stale connection lost goes again,
    /// so it never meets another stale connection.
    fresh: Client<Connector, Full<Bytes>>,
}

impl HyperTransport {
    /// The transport over `connector`'s connections.
    pub(super) fn new(connector: Connector) -> HyperTransport {
        // hyper-util's own retry of a request given back unsent is off: it takes the next
        // connection from the pool, which may be as stale. `send` retries on `fresh`.
        let pooled = Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(POOL_IDLE)
            .retry_canceled_requests(false)
            .build(connector.clone());
        let fresh = Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_max_idle_per_host(0)
            .retry_canceled_requests(false)
            .build(connector);
        HyperTransport { pooled, fresh }
    }
}

impl Transport for HyperTransport {
    /// Sends `req` on an idle connection or a new one. A request the connection lost with
    /// no answer ([`lost_to_a_stale_connection`]) goes again on a new connection.
    fn send(&self, req: http::Request<Full<Bytes>>) -> Sending {
        let again = copy(&req);
        let first = self.pooled.request(req);
        let fresh = self.fresh.clone();
        Box::pin(async move {
            let e = match first.await {
                Ok(answer) => {
                    if let Some(Worn(wear)) = answer.extensions().get::<Worn>() {
                        wear.answered();
                    }
                    return Ok(answer.map(|body| body.map_err(BoxError::from).boxed()));
                }
                Err(e) => e,
            };
            if !lost_to_a_stale_connection(&e, again.method()) {
                return Err(e.into());
            }
            tracing::debug!("a kept-alive connection closed unanswered: sent again on a new one");
            match fresh.request(again).await {
                Ok(answer) => Ok(answer.map(|body| body.map_err(BoxError::from).boxed())),
                Err(e) => Err(e.into()),
            }
        })
    }
}

/// `req` again: what hyper-util takes it sends, and a lost request is sent once more.
fn copy(req: &http::Request<Full<Bytes>>) -> http::Request<Full<Bytes>> {
    let mut again = http::Request::new(req.body().clone());
    *again.method_mut() = req.method().clone();
    *again.uri_mut() = req.uri().clone();
    *again.headers_mut() = req.headers().clone();
    again
}

/// Whether a request whose `method` failed with `e` was lost by a stale HTTP/1.1
/// connection (one that had answered before, which the server closed meanwhile) with no
/// byte of its answer: see [`super::connect::Wear::lost_unanswered`]. Connecting errors and
/// HTTP/2 are never: a new connection that fails would fail again, and an HTTP/2 connection
/// is shared.
fn lost_to_a_stale_connection(e: &hyper_util::client::legacy::Error, method: &Method) -> bool {
    let Some(info) = e.connect_info().filter(|_| !e.is_connect()) else {
        return false;
    };
    if info.is_negotiated_h2() {
        return false;
    }
    let mut extensions = http::Extensions::new();
    info.get_extras(&mut extensions);
    extensions
        .get::<Worn>()
        .is_some_and(|Worn(wear)| wear.lost_unanswered(method.is_safe()))
}
