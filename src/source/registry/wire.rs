//! The one way a request is sent: an [`Outgoing`] request goes through its host's
//! [`Transport`] (hyper-util's pooled client over rustls, `transport`) as it is (no
//! redirect, retry or decompression layer: the layers above follow redirects by hand and
//! retry by themselves), a [`Response`] comes back with its status, headers and body
//! stream. Connecting (TCP and TLS) is bounded by the connect timeout.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::FutureExt;
use http::header::{ACCEPT, HeaderName, HeaderValue, PROXY_AUTHORIZATION, USER_AGENT};
use http::uri::{Authority, Scheme};
use http::{HeaderMap, Method, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Body as _;
use hyper_util::client::proxy::matcher::Matcher;

use super::connect::{Connector, shown};
use super::transport::{AnswerBody, BoxError, HyperTransport, Transport};

/// The client of one host and scheme: its connections are pooled and reused.
#[derive(Clone)]
pub(super) struct HttpClient {
    transport: Arc<dyn Transport>,
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
        let connector = Connector::new(tls, connect_timeout, proxies.clone());
        HttpClient::over(Arc::new(HyperTransport::new(connector)), proxies)
    }

    /// A client sending through `transport` (a plain-HTTP request to a proxy of `proxies`
    /// carries the proxy's credentials).
    pub(super) fn over(transport: Arc<dyn Transport>, proxies: Option<Arc<Matcher>>) -> HttpClient {
        HttpClient { transport, proxies }
    }

    /// Sends `out` and returns the answer's head, its body unread. `Accept: */*` unless the
    /// request names what it accepts; imgcheck's `User-Agent`. The request is built here and
    /// now; what is awaited is only the transport's answer (and the URI for its error).
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
        self.transport.send(req).map(move |answer| match answer {
            Ok(answer) => {
                let (head, body) = answer.into_parts();
                Ok(Response {
                    status: head.status,
                    headers: head.headers,
                    body,
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
    body: AnswerBody,
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
            let frame = frame.map_err(|source| HttpError { url: None, source })?;
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
        Response {
            status: StatusCode::from_u16(status).unwrap(),
            headers: map,
            body: Full::new(Bytes::from(body.to_string()))
                .map_err(|never| match never {})
                .boxed(),
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
    pub(super) fn sending(uri: &Uri, source: BoxError) -> HttpError {
        HttpError {
            url: Some(shown(uri)),
            source,
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

#[cfg(test)]
mod tests;
