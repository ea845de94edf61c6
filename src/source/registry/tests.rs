//! What a failed fetch says, against a real listener on loopback: the one line a report's
//! finding carries (`error::one_line`), and the causes behind it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::{ClientOptions, RegistryClient, Sending, Transport};
use crate::auth::AuthStore;
use crate::error::one_line;
use crate::reference::ImageRef;
use crate::source::{FetchError, Source};

/// What the listener answers a manifest GET with: a whole HTTP response, or nothing ever.
#[derive(Clone, Copy)]
enum Answer {
    Http(&'static str),
    Stall,
}

/// A server on 127.0.0.1 that answers `/v2/` with 200 (so it is taken for plain HTTP) and
/// every other request with `answer`, one request per connection.
async fn serve(answer: Answer) -> u16 {
    serve_counting_probes(answer).await.0
}

/// [`serve`], and how many `/v2/` probes it was asked.
async fn serve_counting_probes(answer: Answer) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let probes = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&probes);
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let counted = Arc::clone(&counted);
            tokio::spawn(async move {
                let Some(head) = read_head(&mut conn).await else {
                    return;
                };
                let response = if head.starts_with(b"GET /v2/ ") {
                    counted.fetch_add(1, Ordering::SeqCst);
                    response("200 OK", "", "{}")
                } else {
                    match answer {
                        Answer::Http(r) => r.to_string(),
                        Answer::Stall => {
                            tokio::time::sleep(Duration::from_secs(60)).await;
                            return;
                        }
                    }
                };
                let _ = conn.write_all(response.as_bytes()).await;
            });
        }
    });
    (port, probes)
}

/// The head of the request on `conn` (request line and headers, up to the blank line), or
/// `None` when the connection ends before it does.
pub(super) async fn read_head(conn: &mut tokio::net::TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    Some(head)
}

fn response(status: &str, headers: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: application/json\r\n\
         Connection: close\r\n{headers}\r\n{body}",
        body.len()
    )
}

/// A port nothing listens on.
async fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

/// The request timeout of [`fetch_error`]'s client.
const REQUEST_TIMEOUT: Duration = Duration::from_millis(300);

/// The error fetching `127.0.0.1:port/x:y` ends with (one retry, short timeouts).
async fn fetch_error(port: u16) -> FetchError {
    let reference = format!("127.0.0.1:{port}/x:y");
    let ImageRef::Registry(r) = reference.parse::<ImageRef>().unwrap() else {
        panic!("{reference} is a registry reference");
    };
    let options = ClientOptions {
        retries: 1,
        backoff: Duration::from_millis(1),
        request_timeout: REQUEST_TIMEOUT,
        ..ClientOptions::default()
    };
    let client = Arc::new(RegistryClient::new(&options, AuthStore::anonymous()));
    client.expect(std::slice::from_ref(&r));
    client.source(&r).top().await.unwrap_err()
}

const MANIFEST_UNKNOWN: &str =
    r#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown","detail":{"Tag":"y"}}]}"#;
const UNAUTHORIZED: &str =
    r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required","detail":null}]}"#;
const DENIED: &str = r#"{"errors":[{"code":"DENIED","message":"requested access to the resource is denied","detail":null}]}"#;

/// Each common failure's finding line (`{P}` is the port), and the text of the cause under
/// the top message when there is one.
///
/// The "timeout" row runs on a paused clock. Its HTTPS attempts end when two equal timers
/// run out: the HTTP client's connect timeout (the request timeout, at most 10s:
/// `tls::HttpClients::new`) and the step bound around the send (`Link::within`). On a real
/// clock, each deadline is rounded up to the next millisecond when its timer is made, and the
/// step timer is made first; when a busy machine lets a millisecond pass between the two, the
/// step timer fires alone and the line read "nothing received for 0.3s" (1 run in 120 under
/// busy loops on both cores). On the paused clock both deadlines are the same instant, so the
/// client's connect error (polled first, inside the step) is the answer every time; time
/// moves only when every task waits, so the row also shows that each of the 4 attempts
/// (2 over plain HTTP, then 2 over HTTPS) waited out the request timeout, and no longer.
#[tokio::test]
async fn common_failures_keep_their_one_line_and_their_causes() {
    let not_found = response("404 Not Found", "", MANIFEST_UNKNOWN);
    let unauthorized = response("401 Unauthorized", "", UNAUTHORIZED);
    let forbidden = response("403 Forbidden", "", DENIED);
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let table: [(&str, Option<Answer>, &str, Option<&str>); 5] = [
        (
            "connection refused",
            None,
            "manifest 127.0.0.1:{P}/x:y (gave up after 2 attempts): error sending request \
             for url (https://127.0.0.1:{P}/v2/x/manifests/y): client error (Connect): tcp \
             connect error: Connection refused (os error 111)",
            Some("error sending request for url (https://127.0.0.1:{P}/v2/x/manifests/y)"),
        ),
        (
            // Plain HTTP is asked first (the first read is the probe); a server that never
            // answers leaves the scheme unknown, so HTTPS is tried, as after a `/v2/` probe
            // that never had an answer: its TLS handshake times out.
            "timeout",
            Some(Answer::Stall),
            "manifest 127.0.0.1:{P}/x:y (gave up after 2 attempts): error sending request for \
             url (https://127.0.0.1:{P}/v2/x/manifests/y): client error (Connect): operation \
             timed out",
            Some("error sending request for url (https://127.0.0.1:{P}/v2/x/manifests/y)"),
        ),
        (
            "404",
            Some(Answer::Http(leak(not_found))),
            "not found: manifest 127.0.0.1:{P}/x:y (HTTP 404: MANIFEST_UNKNOWN: manifest \
             unknown)",
            None,
        ),
        (
            "401 without a challenge",
            Some(Answer::Http(leak(unauthorized))),
            "manifest 127.0.0.1:{P}/x:y (HTTP 401: UNAUTHORIZED: authentication required): \
             not authorized; check --creds, --authfile, or log in with 'podman login'",
            None,
        ),
        (
            "403",
            Some(Answer::Http(leak(forbidden))),
            "manifest 127.0.0.1:{P}/x:y (HTTP 403: DENIED: requested access to the resource \
             is denied): not authorized; check --creds, --authfile, or log in with 'podman \
             login'",
            None,
        ),
    ];
    for (name, answer, want, cause) in table {
        let port = match answer {
            Some(a) => serve(a).await,
            None => closed_port().await,
        };
        let stall = matches!(answer, Some(Answer::Stall));
        if stall {
            tokio::time::pause();
        }
        let started = tokio::time::Instant::now();
        let err = fetch_error(port).await;
        if stall {
            let waited = started.elapsed();
            tokio::time::resume();
            // 4 attempts of REQUEST_TIMEOUT each, and 2 backoffs of 1ms at the most.
            let least = REQUEST_TIMEOUT * 4;
            assert!(
                waited >= least && waited <= least + Duration::from_millis(10),
                "{name}: {waited:?}"
            );
        }
        let p = port.to_string();
        assert_eq!(one_line(&err), want.replace("{P}", &p), "{name}");
        let first = std::error::Error::source(&err).map(|c| c.to_string());
        assert_eq!(first, cause.map(|c| c.replace("{P}", &p)), "{name}");
    }
}

/// A transport error keeps the client's error as its cause (callers can ask it what
/// happened: hyper-util's error, under the one that names the URL).
#[tokio::test]
async fn a_transport_error_is_the_cause() {
    let err = fetch_error(closed_port().await).await;
    let cause = std::error::Error::source(&err).expect("a cause");
    let sent = cause
        .downcast_ref::<super::wire::HttpError>()
        .expect("the client's error");
    let client = std::error::Error::source(sent)
        .and_then(|e| e.downcast_ref::<hyper_util::client::legacy::Error>());
    assert!(client.is_some_and(|e| e.is_connect()), "{sent:?}");
    assert!(matches!(err, FetchError::Unavailable(_)));
}

/// A redirect to a URL with credentials and a signed query: the cause's URL shows neither.
#[tokio::test]
async fn causes_never_show_credentials_or_signatures_of_urls() {
    let closed = closed_port().await;
    let location =
        format!("Location: http://user:s3cret@127.0.0.1:{closed}/blob?X-Amz-Signature=sig0123\r\n");
    let redirect = response("307 Temporary Redirect", &location, "");
    let port = serve(Answer::Http(Box::leak(redirect.into_boxed_str()))).await;
    let line = one_line(&fetch_error(port).await);
    for secret in ["s3cret", "user", "sig0123", "X-Amz"] {
        assert!(!line.contains(secret), "{secret} in {line}");
    }
    assert!(
        line.contains(&format!("(http://127.0.0.1:{closed}/blob)")),
        "{line}"
    );
}

/// A registry's scheme is learned once, on first use, from the first read itself (no `/v2/`
/// probe of its own): concurrent first users wait for it, and a client told of no reference
/// still reaches the registry.
#[tokio::test]
async fn a_registry_is_probed_once_when_first_used() {
    let not_found = response("404 Not Found", "", MANIFEST_UNKNOWN);
    let (port, probes) =
        serve_counting_probes(Answer::Http(Box::leak(not_found.into_boxed_str()))).await;
    let client = Arc::new(RegistryClient::new(
        &ClientOptions::default(),
        AuthStore::anonymous(),
    ));
    assert_eq!(
        probes.load(Ordering::SeqCst),
        0,
        "nothing is probed up front"
    );
    let fetches = (0..8).map(|i| {
        let reference = format!("127.0.0.1:{port}/repo{i}:y");
        let ImageRef::Registry(r) = reference.parse::<ImageRef>().unwrap() else {
            panic!("{reference} is a registry reference");
        };
        let client = Arc::clone(&client);
        async move { client.source(&r).top().await.unwrap_err() }
    });
    for err in futures::future::join_all(fetches).await {
        // Plain HTTP was learned: the answer is the server's 404, not a TLS failure.
        assert!(matches!(err, FetchError::NotFound(_)), "{err}");
    }
    assert_eq!(probes.load(Ordering::SeqCst), 0, "no /v2/ round trip alone");
}

/// A transport that answers every request with `answer` (or fails it when `None`),
/// counting what it was sent: faults injected at the `Transport` seam.
struct Scripted {
    answer: Option<(u16, &'static str)>,
    sent: Mutex<Vec<String>>,
}

impl Transport for Scripted {
    fn send(&self, req: http::Request<Full<Bytes>>) -> Sending {
        self.sent.lock().unwrap().push(req.uri().to_string());
        let Some((status, body)) = self.answer else {
            return Box::pin(async { Err("injected: connection reset by peer".into()) });
        };
        let answer = http::Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from_static(body.as_bytes())))
            .map(|r| r.map(|b| b.map_err(|never| match never {}).boxed()));
        Box::pin(async move { answer.map_err(Into::into) })
    }
}

/// Issue 34: a transport the caller brings gets every request; what it answers is read as
/// a registry's answer, and its faults as the connection's (retried, then told with the
/// URL).
#[tokio::test]
async fn a_transport_the_caller_brings_gets_every_request() {
    let ImageRef::Registry(r) = "registry.example/x:y".parse::<ImageRef>().unwrap() else {
        panic!("a registry reference");
    };
    let options = ClientOptions {
        retries: 1,
        backoff: Duration::from_millis(1),
        ..ClientOptions::default()
    };
    for (answer, want, sent) in [
        (
            None,
            "manifest registry.example/x:y (gave up after 2 attempts): error sending request \
             for url (https://registry.example/v2/x/manifests/y): injected: connection reset \
             by peer",
            2,
        ),
        (
            Some((404, MANIFEST_UNKNOWN)),
            "not found: manifest registry.example/x:y (HTTP 404: MANIFEST_UNKNOWN: manifest \
             unknown)",
            1,
        ),
    ] {
        let scripted = Arc::new(Scripted {
            answer,
            sent: Mutex::default(),
        });
        let transport: Arc<dyn Transport> = scripted.clone();
        let client = Arc::new(RegistryClient::with_transport(
            &options,
            AuthStore::anonymous(),
            transport,
        ));
        let err = client.source(&r).top().await.unwrap_err();
        assert_eq!(one_line(&err), want);
        let asked = scripted.sent.lock().unwrap().clone();
        assert_eq!(asked.len(), sent, "{asked:?}");
        assert!(
            asked
                .iter()
                .all(|u| u == "https://registry.example/v2/x/manifests/y"),
            "{asked:?}"
        );
    }
}

/// Issue 33, item 19: a plain-HTTP loopback registry whose answer is malformed: the error
/// shown is that answer's ("invalid HTTP version parsed"), not the HTTPS fallback's
/// ("received corrupt message") that only says the server does not speak TLS.
#[tokio::test]
async fn a_malformed_plain_http_answer_is_the_error_shown() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                // A request over plain HTTP, or a TLS ClientHello: the same garbage back.
                let mut buf = [0u8; 1024];
                let _ = conn.read(&mut buf).await;
                let _ = conn.write_all(b"HTTX/1.1 200 OK\r\n\r\n").await;
            });
        }
    });
    let line = one_line(&fetch_error(port).await);
    assert!(line.contains("invalid HTTP version parsed"), "{line}");
    assert!(
        line.contains(&format!("(http://127.0.0.1:{port}/v2/x/manifests/y)")),
        "{line}"
    );
    assert!(!line.contains("corrupt message"), "{line}");
}
