use super::*;

/// The registry client is hyper-util's pooled client (issue 34: a well-kept library, not
/// a pool of our own), behind the `Transport` seam; reqwest (whose redirect and retry
/// layers the layers above replace) is no dependency of the program, only of its tests.
#[test]
fn the_client_is_hyper_utils_behind_the_transport_seam() {
    let manifest: toml::Table = toml::from_str(include_str!("../../../../Cargo.toml")).unwrap();
    let deps = manifest["dependencies"].as_table().unwrap();
    for wanted in ["hyper", "hyper-util", "hyper-rustls", "http-body-util"] {
        assert!(deps.contains_key(wanted), "{wanted} is a dependency");
    }
    assert!(!deps.contains_key("reqwest"), "reqwest is no dependency");
    let legacy = concat!("hyper_util::client::legacy::", "Client;");
    assert!(include_str!("../transport.rs").contains(legacy));
    let own = concat!("hyper::client::", "conn");
    for (file, text) in [
        ("wire.rs", include_str!("../wire.rs")),
        ("transport.rs", include_str!("../transport.rs")),
        ("connect.rs", include_str!("../connect.rs")),
    ] {
        assert!(
            !text.contains(own),
            "{file} drives hyper's connections itself"
        );
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

/// A client through the proxy on `port`.
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
    let client = proxied_client(port);
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
    let matcher = Arc::new(matcher);
    for uri in [
        "http://registry.example/v2/",
        "https://registry.example/v2/",
    ] {
        let proxies = Some(Arc::clone(&matcher));
        let client = HttpClient::new(tls_config(), Duration::from_secs(5), proxies);
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
    /// Reads the first request and closes without an answer.
    CloseAfterReadingFirst,
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
                    let unanswered = match how {
                        Serve::CloseAfterReading => 2,
                        Serve::CloseAfterReadingFirst => 1,
                        _ => 0,
                    };
                    if n == unanswered {
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

fn plain_client() -> HttpClient {
    HttpClient::new(tls_config(), Duration::from_secs(5), None)
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
    let client = plain_client();
    for _ in 0..5 {
        assert_eq!(get(&client, port).await.unwrap(), StatusCode::OK);
    }
    assert_eq!(seen.accepted.load(Ordering::SeqCst), 1, "one connection");
    assert_eq!(seen.heads.lock().unwrap().len(), 5);

    let (port, seen) = hand_server(Serve::KeepAlive);
    let client = plain_client();
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
/// new one, each request sent once.
#[tokio::test]
async fn closed_idle_connections_are_replaced() {
    use std::sync::atomic::Ordering;
    let (port, seen) = hand_server(Serve::CloseWhenIdle);
    let client = plain_client();
    assert_eq!(get(&client, port).await.unwrap(), StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(get(&client, port).await.unwrap(), StatusCode::OK);
    assert_eq!(seen.accepted.load(Ordering::SeqCst), 2);
    assert_eq!(
        seen.heads.lock().unwrap().len(),
        2,
        "each request sent once"
    );
}

/// Issue 33, item 18: a GET on a reused connection that the server closes after reading
/// it, before any byte of the answer, goes again at once on a new connection (Go's
/// net/http `persistConn.shouldRetryRequest`: a replayable request, a reused
/// connection, nothing read). A POST the server read is never sent again: its error
/// names the URL.
#[tokio::test]
async fn a_get_a_stale_connection_lost_goes_again_on_a_new_one_a_post_never() {
    use std::sync::atomic::Ordering;
    let (port, seen) = hand_server(Serve::CloseAfterReading);
    let client = plain_client();
    assert_eq!(get(&client, port).await.unwrap(), StatusCode::OK);
    assert_eq!(get(&client, port).await.unwrap(), StatusCode::OK);
    assert_eq!(
        seen.accepted.load(Ordering::SeqCst),
        2,
        "one new connection"
    );
    assert_eq!(
        seen.heads.lock().unwrap().len(),
        3,
        "the lost GET sent twice"
    );

    let (port, seen) = hand_server(Serve::CloseAfterReading);
    let client = plain_client();
    assert_eq!(get(&client, port).await.unwrap(), StatusCode::OK);
    let uri = format!("http://127.0.0.1:{port}/v2/x/blobs/uploads/");
    let post = Outgoing::new(Method::POST, uri.parse().unwrap());
    let err = client.send(post).await.err().expect("no answer");
    let text = super::super::failure::error_chain(&err);
    assert_eq!(
        text,
        format!(
            "error sending request for url (http://127.0.0.1:{port}/v2/x/blobs/uploads/): \
             client error (SendRequest): connection closed before message completed"
        )
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(seen.accepted.load(Ordering::SeqCst), 1, "not sent again");
    assert_eq!(seen.heads.lock().unwrap().len(), 2);
}

/// A GET on a new connection that the server closes unanswered is not sent again here
/// (a new connection would fail alike: the retry layer above backs off first).
#[tokio::test]
async fn a_get_a_new_connection_lost_is_not_sent_again_here() {
    use std::sync::atomic::Ordering;
    let (port, seen) = hand_server(Serve::CloseAfterReadingFirst);
    let err = get(&plain_client(), port).await.unwrap_err();
    let text = super::super::failure::error_chain(&err);
    assert!(
        text.ends_with("connection closed before message completed"),
        "{text}"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(seen.accepted.load(Ordering::SeqCst), 1, "not sent again");
}

/// Over HTTP/1.1 a request goes out in origin-form with `Host: host:port` (the port left
/// out only when it is the scheme's own), as hyper-util's legacy client writes it
/// (src/client/legacy/client.rs, `Client::try_send_request` with `origin_form` and
/// `get_non_default_port`).
#[tokio::test]
async fn requests_go_out_in_origin_form_with_their_host() {
    let (port, seen) = hand_server(Serve::KeepAlive);
    let client = plain_client();
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
    let client = rt.block_on(async { plain_client() });
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
/// (this test's own URI included): 18 through hyper-util's pooled client alone (its
/// boxed send future, the task spawned to put the connection back, the `Host` header
/// formatted, the pool key cloned and its waiters), 10 through the pool of our own it
/// replaced for a while, 22 through the `Transport` seam (its boxed future and the
/// answer's boxed body, the request's copy kept to send again, the connection's `Wear`
/// in the answer's extensions). Four allocations are about 0.1 µs.
const REQUEST_BUDGET: usize = 22;
