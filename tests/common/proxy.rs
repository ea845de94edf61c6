//! A fault-injecting HTTP proxy between imgcheck and a real registry.
//!
//! [`FaultProxy`] listens on 127.0.0.1 (random port) and forwards each request to an upstream
//! base URL, one request per connection (`Connection: close`), unless a [`Rule`] matches:
//! then it injects its [`Fault`] instead of, or into, the upstream answer. Every request is
//! recorded ([`FaultProxy::seen`]) with its `Authorization` header, so tests can check which
//! credentials went where. Dropping the proxy stops it; every stall is bounded.

use std::io::Write;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// What the proxy does to a matching request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Answer with this status and an empty body, without asking upstream.
    Status(u16),
    /// Answer with this status and body, without asking upstream (a registry's error body).
    Answer {
        /// The status.
        status: u16,
        /// The body.
        body: String,
    },
    /// 429 with `Retry-After: <value>` (delay-seconds or an HTTP-date).
    TooMany {
        /// The header's value.
        retry_after: String,
    },
    /// Close the connection without any answer.
    Reset,
    /// Wait this long, then close without any answer (bounded by the proxy's max stall).
    Stall(Duration),
    /// Forward, but send only the first half of the body under the full Content-Length.
    Truncate,
    /// Forward the headers and half the body, then stall this long (bounded) and close.
    StallBody(Duration),
    /// Forward (upstream acts on the request), then close without any answer: a write
    /// that happened but whose answer was lost.
    DropAnswer,
    /// Forward the headers, then the body one byte at a time, one every this long (bounded
    /// by [`MAX_TRICKLE`] in all): never quiet long enough to trip a per-piece timeout.
    Trickle(Duration),
    /// Forward with one body byte flipped (same length).
    FlipByte,
    /// Forward with this Content-Type instead of upstream's.
    ContentType(&'static str),
    /// Forward with a `Docker-Content-Digest` that names other bytes.
    LyingDigestHeader,
    /// Answer 307 to the same path on this other base URL (`http://127.0.0.1:PORT`).
    Redirect(String),
    /// Answer 200 with `size` filler bytes in 64 KiB writes, without asking upstream; with
    /// `declare` the Content-Length says so, without it the body is chunked (so only counting
    /// while streaming can stop it). Stops writing when the client goes away.
    Huge {
        /// Body size offered.
        size: usize,
        /// Send Content-Length.
        declare: bool,
    },
}

/// Which requests a rule applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Match {
    /// Every request.
    All,
    /// `GET /v2/<repo>/manifests/<ref>`.
    Manifests,
    /// `GET /v2/<repo>/blobs/<digest>`.
    Blobs,
    /// Paths containing this text.
    PathContains(String),
    /// Requests whose `METHOD path` contains this text (`"PATCH "`, `"PUT /v2/x/manifests/v1"`).
    Request(String),
}

impl Match {
    fn hits(&self, method: &str, path: &str) -> bool {
        match self {
            Match::All => true,
            Match::Manifests => path.contains("/manifests/"),
            Match::Blobs => path.contains("/blobs/"),
            Match::PathContains(s) => path.contains(s.as_str()),
            Match::Request(s) => format!("{method} {path}").contains(s.as_str()),
        }
    }
}

/// A fault for matching requests, a number of times (`None`: forever).
#[derive(Debug, Clone)]
pub struct Rule {
    /// Which requests.
    pub on: Match,
    /// What happens to them.
    pub fault: Fault,
    /// How many more times; `None` for every matching request.
    pub times: Option<usize>,
    /// With `times`: count each `METHOD path` apart (each gets the fault `times` times);
    /// the counts so far.
    pub per_request: Option<std::collections::HashMap<String, usize>>,
}

impl Rule {
    /// A fault for the next `n` matching requests.
    pub fn times(on: Match, fault: Fault, n: usize) -> Rule {
        Rule {
            on,
            fault,
            times: Some(n),
            per_request: None,
        }
    }

    /// A fault for the first `n` times each distinct matching `METHOD path` is asked (a
    /// registry that fails every request twice before it answers).
    pub fn per_request(on: Match, fault: Fault, n: usize) -> Rule {
        Rule {
            on,
            fault,
            times: Some(n),
            per_request: Some(std::collections::HashMap::new()),
        }
    }

    /// A fault for every matching request.
    pub fn always(on: Match, fault: Fault) -> Rule {
        Rule {
            on,
            fault,
            times: None,
            per_request: None,
        }
    }
}

/// One request the proxy saw.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Method and path, e.g. `GET /v2/x/manifests/latest`.
    pub request: String,
    /// The `Authorization` header the client sent, if any.
    pub authorization: Option<String>,
    /// The fault injected, if any.
    pub fault: Option<Fault>,
}

/// Longest any stall lasts, whatever a rule asks.
const MAX_STALL: Duration = Duration::from_secs(5);
/// Longest a trickle lasts, whatever its body.
const MAX_TRICKLE: Duration = Duration::from_secs(30);
/// Longest the proxy waits for a request head.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

struct Shared {
    /// The proxy's own base URL: upstream `Location`s are rewritten to it.
    base: String,
    huge_sent: std::sync::atomic::AtomicUsize,
    upstream: String,
    upstream_auth: Option<String>,
    rules: Mutex<Vec<Rule>>,
    seen: Mutex<Vec<Seen>>,
    client: reqwest::blocking::Client,
    /// Whether answers say `Connection: close` before the connection is closed.
    announce_close: bool,
}

/// A running proxy; stops when dropped.
pub struct FaultProxy {
    port: u16,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl FaultProxy {
    /// A proxy to `upstream` (`http://127.0.0.1:PORT`, or an https URL with a CA-trusting
    /// client) with these rules.
    pub fn start(upstream: &str, rules: Vec<Rule>) -> FaultProxy {
        FaultProxy::start_with(upstream, rules, None)
    }

    /// Like [`FaultProxy::start`], replacing the client's `Authorization` with
    /// `upstream_auth` when forwarding (a stand-in for object storage that has its own
    /// access to the bytes).
    pub fn start_with(
        upstream: &str,
        rules: Vec<Rule>,
        upstream_auth: Option<String>,
    ) -> FaultProxy {
        FaultProxy::launch(upstream, rules, upstream_auth, true)
    }

    /// A pass-through to `upstream` that closes each connection after one answer without
    /// saying so (no `Connection: close`), as a load balancer dropping idle connections
    /// does: a client that keeps the connection alive finds it stale on its next request.
    pub fn start_closing_unannounced(upstream: &str) -> FaultProxy {
        FaultProxy::launch(upstream, vec![], None, false)
    }

    fn launch(
        upstream: &str,
        rules: Vec<Rule>,
        upstream_auth: Option<String>,
        announce_close: bool,
    ) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        listener
            .set_nonblocking(true)
            .expect("nonblocking listener");
        let port = listener.local_addr().expect("proxy address").port();
        let client = reqwest::blocking::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .build()
            .expect("proxy upstream client");
        let shared = Arc::new(Shared {
            base: format!("http://127.0.0.1:{port}"),
            huge_sent: std::sync::atomic::AtomicUsize::new(0),
            upstream: upstream.trim_end_matches('/').to_string(),
            upstream_auth,
            rules: Mutex::new(rules),
            seen: Mutex::new(Vec::new()),
            client,
            announce_close,
        });
        let stop = Arc::new(AtomicBool::new(false));
        let accept = {
            let shared = Arc::clone(&shared);
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let shared = Arc::clone(&shared);
                            thread::spawn(move || handle(stream, &shared));
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            thread::sleep(Duration::from_millis(5));
                        }
                        Err(_) => thread::sleep(Duration::from_millis(5)),
                    }
                }
            })
        };
        FaultProxy {
            port,
            shared,
            stop,
            accept: Some(accept),
        }
    }

    /// "127.0.0.1:PORT", for image references.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// "http://127.0.0.1:PORT".
    pub fn base_url(&self) -> String {
        format!("http://{}", self.host())
    }

    /// Replaces the rules.
    pub fn set_rules(&self, rules: Vec<Rule>) {
        *self.shared.rules.lock().unwrap() = rules;
    }

    /// Every request seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// Body bytes the proxy managed to write for [`Fault::Huge`] answers.
    pub fn huge_bytes_sent(&self) -> usize {
        self.shared.huge_sent.load(Ordering::Relaxed)
    }

    /// How many faults were injected so far.
    pub fn faults_injected(&self) -> usize {
        self.seen().iter().filter(|s| s.fault.is_some()).count()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

fn take_fault(shared: &Shared, method: &str, path: &str) -> Option<Fault> {
    let mut rules = shared.rules.lock().unwrap();
    for rule in rules.iter_mut() {
        if !rule.on.hits(method, path) {
            continue;
        }
        if let (Some(n), Some(counts)) = (rule.times, rule.per_request.as_mut()) {
            let seen = counts.entry(format!("{method} {path}")).or_insert(0);
            if *seen >= n {
                continue;
            }
            *seen += 1;
            return Some(rule.fault.clone());
        }
        match &mut rule.times {
            Some(0) => continue,
            Some(n) => *n -= 1,
            None => {}
        }
        return Some(rule.fault.clone());
    }
    None
}

fn handle(stream: TcpStream, shared: &Shared) {
    let Some(request) = super::read_http_request(&stream, READ_TIMEOUT, 16 << 20) else {
        return;
    };
    let super::HttpRequest {
        method,
        target: path,
        headers,
        body,
    } = request;
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let fault = take_fault(shared, &method, &path);
    shared.seen.lock().unwrap().push(Seen {
        request: format!("{method} {path}"),
        authorization: header("authorization"),
        fault: fault.clone(),
    });
    let mut out = stream;
    match &fault {
        Some(Fault::Status(code)) => {
            return respond(shared, &mut out, *code, &[], b"");
        }
        Some(Fault::Answer { status, body }) => {
            return respond(shared, &mut out, *status, &[], body.as_bytes());
        }
        Some(Fault::TooMany { retry_after }) => {
            return respond(
                shared,
                &mut out,
                429,
                &[("Retry-After".to_string(), retry_after.clone())],
                b"",
            );
        }
        Some(Fault::Reset) => {
            let _ = out.shutdown(Shutdown::Both);
            return;
        }
        Some(Fault::Stall(d)) => {
            let until = Instant::now() + (*d).min(MAX_STALL);
            while Instant::now() < until {
                thread::sleep(Duration::from_millis(20));
            }
            let _ = out.shutdown(Shutdown::Both);
            return;
        }
        Some(Fault::Huge { size, declare }) => {
            let _ = out.set_write_timeout(Some(Duration::from_secs(10)));
            let framing = if *declare {
                format!("Content-Length: {size}")
            } else {
                "Transfer-Encoding: chunked".to_string()
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.index.v1+json\r\n{framing}\r\nConnection: close\r\n\r\n"
            );
            if out.write_all(head.as_bytes()).is_err() {
                return;
            }
            let chunk = vec![b' '; 64 * 1024];
            let mut sent = 0;
            while sent < *size {
                let n = chunk.len().min(size - sent);
                let ok = if *declare {
                    out.write_all(&chunk[..n])
                } else {
                    out.write_all(format!("{n:x}\r\n").as_bytes())
                        .and_then(|_| out.write_all(&chunk[..n]))
                        .and_then(|_| out.write_all(b"\r\n"))
                };
                if ok.is_err() {
                    break;
                }
                sent += n;
                shared.huge_sent.fetch_add(n, Ordering::Relaxed);
            }
            if !*declare && sent >= *size {
                let _ = out.write_all(b"0\r\n\r\n");
            }
            let _ = out.shutdown(Shutdown::Both);
            return;
        }
        Some(Fault::Redirect(base)) => {
            let location = format!("{}{path}", base.trim_end_matches('/'));
            return respond(
                shared,
                &mut out,
                307,
                &[("Location".to_string(), location)],
                b"",
            );
        }
        _ => {}
    }
    // Forward upstream.
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap_or(reqwest::Method::GET);
    let mut req = shared
        .client
        .request(method, format!("{}{path}", shared.upstream));
    for (k, v) in &headers {
        let lower = k.to_ascii_lowercase();
        if matches!(lower.as_str(), "host" | "connection" | "content-length")
            || (lower == "authorization" && shared.upstream_auth.is_some())
        {
            continue;
        }
        req = req.header(k.as_str(), v.as_str());
    }
    if let Some(auth) = &shared.upstream_auth {
        req = req.header("Authorization", auth.as_str());
    }
    if !body.is_empty() {
        req = req.body(body);
    }
    let resp = match req.send() {
        Ok(r) => r,
        Err(_) => return respond(shared, &mut out, 502, &[], b""),
    };
    let status = resp.status().as_u16();
    let mut resp_headers: Vec<(String, String)> = resp
        .headers()
        .iter()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "connection" | "content-length" | "transfer-encoding" | "keep-alive"
            )
        })
        .filter_map(|(k, v)| Some((k.to_string(), v.to_str().ok()?.to_string())))
        .collect();
    // Upload sessions continue at the upstream's absolute Location: keep them on the proxy.
    for (k, v) in resp_headers.iter_mut() {
        if k.eq_ignore_ascii_case("location") && v.starts_with(&shared.upstream) {
            *v = format!("{}{}", shared.base, &v[shared.upstream.len()..]);
        }
    }
    let mut bytes = resp.bytes().map(|b| b.to_vec()).unwrap_or_default();
    let set = |hs: &mut Vec<(String, String)>, name: &str, value: String| {
        hs.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        hs.push((name.to_string(), value));
    };
    match &fault {
        Some(Fault::DropAnswer) => {
            let _ = out.shutdown(Shutdown::Both);
            return;
        }
        Some(Fault::FlipByte) if !bytes.is_empty() => {
            let at = bytes.len() / 2;
            bytes[at] ^= 0x01;
        }
        Some(Fault::ContentType(ct)) => set(&mut resp_headers, "Content-Type", ct.to_string()),
        Some(Fault::LyingDigestHeader) => set(
            &mut resp_headers,
            "Docker-Content-Digest",
            super::sha256_digest(b"not these bytes"),
        ),
        Some(Fault::StallBody(d)) => {
            let full = bytes.len();
            let _ = out.write_all(&head_bytes(shared, status, &resp_headers, full));
            let _ = out.write_all(&bytes[..full / 2]);
            let _ = out.flush();
            let until = Instant::now() + (*d).min(MAX_STALL);
            while Instant::now() < until {
                thread::sleep(Duration::from_millis(20));
            }
            let _ = out.shutdown(Shutdown::Both);
            return;
        }
        Some(Fault::Trickle(every)) => {
            let _ = out.write_all(&head_bytes(shared, status, &resp_headers, bytes.len()));
            let until = Instant::now() + MAX_TRICKLE;
            for b in &bytes {
                if Instant::now() >= until
                    || out.write_all(&[*b]).and_then(|_| out.flush()).is_err()
                {
                    break;
                }
                thread::sleep(*every);
            }
            let _ = out.shutdown(Shutdown::Both);
            return;
        }
        Some(Fault::Truncate) => {
            let full = bytes.len();
            let head = head_bytes(shared, status, &resp_headers, full);
            let _ = out.write_all(&head);
            let _ = out.write_all(&bytes[..full / 2]);
            let _ = out.flush();
            let _ = out.shutdown(Shutdown::Both);
            return;
        }
        _ => {}
    }
    respond(shared, &mut out, status, &resp_headers, &bytes);
}

fn head_bytes(shared: &Shared, status: u16, headers: &[(String, String)], len: usize) -> Vec<u8> {
    let mut head = format!("HTTP/1.1 {status} X\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {len}\r\n"));
    if shared.announce_close {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    head.into_bytes()
}

fn respond(
    shared: &Shared,
    out: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
) {
    let _ = out.write_all(&head_bytes(shared, status, headers, body.len()));
    let _ = out.write_all(body);
    let _ = out.flush();
    if shared.announce_close {
        let _ = out.shutdown(Shutdown::Write);
    } else {
        // Unannounced: the connection stays open a moment, long enough for a client to
        // send its next request on it, then closes (the caller drops it) without reading it.
        thread::sleep(UNANNOUNCED_LINGER);
    }
}

/// How long an unannounced close waits after the answer ([`FaultProxy::start_closing_unannounced`]).
const UNANNOUNCED_LINGER: Duration = Duration::from_millis(20);
