//! The registry transport's conformance suite (issue 34): imgcheck against real servers on
//! loopback — Debian's docker-registry, plain and with TLS, behind the fault proxy
//! (`tests/common/proxy.rs`) or a byte relay of this file that counts connections and
//! speaks `CONNECT`. HTTP/1.1 keep-alive and stale connections, HTTP/2 by ALPN with
//! concurrent streams, a `CONNECT` proxy, redirects to another host without credentials,
//! retries; and what the transport's errors and a closed standard output end in (issue 33,
//! items 18 to 20).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::Output;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::common::proxy::{Fault, FaultProxy, Match, Rule};
use crate::common::secure::{Pki, Secured};
use crate::common::{Registry, fixture, imgcheck};
use serde_json::Value;

/// Longest a relayed connection stays quiet before the relay drops it.
const RELAY_IDLE: Duration = Duration::from_secs(30);

/// A TCP relay on 127.0.0.1: each accepted connection is spliced to an upstream, byte for
/// byte (TLS passes through). To a fixed upstream, or as an HTTP proxy that takes
/// `CONNECT host:port` (loopback targets only) and tunnels. Counts what it accepted; stops
/// when dropped.
struct Relay {
    port: u16,
    accepted: Arc<AtomicUsize>,
    /// The `CONNECT` request lines, in order.
    connects: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl Relay {
    /// A relay to `upstream` (`127.0.0.1:PORT`).
    fn to(upstream: &str) -> Relay {
        Relay::start(Some(upstream.to_string()))
    }

    /// An HTTP proxy that only tunnels (`CONNECT`).
    fn connect_proxy() -> Relay {
        Relay::start(None)
    }

    fn start(upstream: Option<String>) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind relay");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("relay address").port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let connects = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, lines, stopped) = (accepted.clone(), connects.clone(), stop.clone());
        thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                let Ok((client, _)) = listener.accept() else {
                    thread::sleep(Duration::from_millis(5));
                    continue;
                };
                count.fetch_add(1, Ordering::SeqCst);
                let (upstream, lines) = (upstream.clone(), lines.clone());
                thread::spawn(move || relay_one(client, upstream, &lines));
            }
        });
        Relay {
            port,
            accepted,
            connects,
            stop,
        }
    }

    /// `127.0.0.1:PORT`.
    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Splices `client` to `upstream`, or to the target of its `CONNECT` when `upstream` is
/// `None` (answered 200 once connected).
fn relay_one(client: TcpStream, upstream: Option<String>, connects: &Mutex<Vec<String>>) {
    let _ = client.set_nonblocking(false);
    let _ = client.set_read_timeout(Some(RELAY_IDLE));
    let target = match upstream {
        Some(u) => u,
        None => {
            let mut reader = BufReader::new(client.try_clone().expect("clone"));
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                    break;
                }
            }
            connects.lock().unwrap().push(line.trim_end().to_string());
            let target = line.split_whitespace().nth(1).unwrap_or("").to_string();
            if !target.starts_with("127.0.0.1:") {
                let _ = (&client).write_all(b"HTTP/1.1 403 Forbidden\r\n\r\n");
                return;
            }
            let _ = (&client).write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
            target
        }
    };
    let Ok(server) = TcpStream::connect(&target) else {
        return;
    };
    let _ = server.set_read_timeout(Some(RELAY_IDLE));
    let (c2, s2) = (
        client.try_clone().expect("clone"),
        server.try_clone().expect("clone"),
    );
    let back = thread::spawn(move || pipe(s2, c2));
    pipe(client, server);
    let _ = back.join();
}

/// Copies `from` to `to` until `from` ends (or stays quiet for [`RELAY_IDLE`]), then ends
/// `to`'s writing side.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = [0u8; 16 * 1024];
    while let Ok(n @ 1..) = from.read(&mut buf) {
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// `imgcheck verify REFS… --format json` with `extra` options and `env`, its report parsed.
fn verify(refs: &[String], extra: &[&str], env: &[(&str, &str)]) -> (Output, Value) {
    let mut cmd = imgcheck();
    cmd.arg("verify")
        .args(refs)
        .args(["--format", "json"])
        .args(extra);
    for name in [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
    ] {
        cmd.env_remove(name);
    }
    cmd.env_remove("NO_PROXY").env_remove("no_proxy");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("imgcheck runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (out, doc)
}

/// Every image's verdict.
fn verdicts(doc: &Value) -> Vec<String> {
    doc["images"]
        .as_array()
        .expect("images")
        .iter()
        .map(|i| i["verdict"].as_str().unwrap_or("").to_string())
        .collect()
}

/// A registry holding the good fixture as `csi/driverN:v1` for N below `n`; their references
/// on `host`.
fn seeded(n: usize, host: impl Fn(&Registry) -> String) -> (Registry, Vec<String>) {
    let registry = Registry::start();
    let host = host(&registry);
    let refs = (0..n)
        .map(|i| {
            registry.push_layout(&fixture("good"), &format!("csi/driver{i}"), "v1");
            format!("{host}/csi/driver{i}:v1")
        })
        .collect();
    (registry, refs)
}

/// HTTP/1.1: one job's requests go over one kept-alive connection.
#[test]
fn http1_connections_are_kept_alive() {
    let (registry, refs) = seeded(3, |_| String::new());
    let relay = Relay::to(&registry.host());
    let refs: Vec<String> = refs
        .iter()
        .map(|r| format!("{}{r}", relay.host()))
        .collect();
    let (out, doc) = verify(&refs, &["--jobs", "1", "--stats"], &[]);
    assert_eq!(out.status.code(), Some(0), "{doc}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("requests: 15 manifest, 12 blob"),
        "{stderr}"
    );
    assert_eq!(relay.accepted(), 1, "one connection: {stderr}");
}

/// Issue 33, item 18: a registry that closes each connection after one answer, without
/// saying so. Every kept-alive connection goes stale; a GET it loses unanswered goes again
/// at once on a new connection, so 40 images with `--jobs 16` all pass, without one retry.
#[test]
fn stale_connections_lose_no_request() {
    let (registry, refs) = seeded(40, |_| String::new());
    let front = FaultProxy::start_closing_unannounced(&registry.base_url());
    let refs: Vec<String> = refs
        .iter()
        .map(|r| format!("{}{r}", front.host()))
        .collect();
    let (out, doc) = verify(&refs, &["--jobs", "16", "-v", "--retries", "1"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(verdicts(&doc), vec!["pass"; 40], "{stderr}");
    let retries = stderr.lines().filter(|l| l.contains("retry ")).count();
    assert_eq!(retries, 0, "{stderr}");
}

/// HTTP/2 by ALPN over TLS: every request is HTTP/2 (the registry's access log says so),
/// and `--jobs 16` shares few connections (concurrent streams), where HTTP/1.1 would open
/// one per request in flight.
#[test]
fn http2_is_negotiated_by_alpn_and_streams_share_a_connection() {
    let (mut registry, refs) = seeded(12, |_| String::new());
    let pki = Pki::new();
    registry.restart_with(&Secured {
        tls: Some(&pki),
        access_log: true,
        ..Secured::default()
    });
    let relay = Relay::to(&registry.host());
    let refs: Vec<String> = refs
        .iter()
        .map(|r| format!("{}{r}", relay.host()))
        .collect();
    let certs = pki.cert_dir(false);
    let certs = certs.to_str().expect("path");
    let (out, doc) = verify(&refs, &["--jobs", "16", "--cert-dir", certs], &[]);
    assert_eq!(out.status.code(), Some(0), "{doc}");
    let requests = registry.requests();
    assert!(requests.len() >= 36, "{requests:#?}");
    assert!(
        requests.iter().all(|r| r.ends_with(" HTTP/2.0")),
        "{requests:#?}"
    );
    // The plain-HTTP probe of the loopback registry, and one TLS connection shared by every
    // request (measured: 2 for 109 requests).
    let connections = relay.accepted();
    assert!(
        connections <= 2,
        "{connections} connections for {} requests",
        requests.len()
    );
}

/// HTTPS through the environment's proxy: a `CONNECT` tunnel to the registry, TLS inside
/// it end to end.
#[test]
fn https_goes_through_a_connect_proxy() {
    let (mut registry, refs) = seeded(2, |r| r.host());
    let pki = Pki::new();
    registry.restart_with(&Secured {
        tls: Some(&pki),
        ..Secured::default()
    });
    let proxy = Relay::connect_proxy();
    let url = format!("http://{}", proxy.host());
    let certs = pki.cert_dir(false);
    let certs = certs.to_str().expect("path");
    let (out, doc) = verify(&refs, &["--cert-dir", certs], &[("HTTPS_PROXY", &url)]);
    assert_eq!(out.status.code(), Some(0), "{doc}");
    assert_eq!(verdicts(&doc), ["pass", "pass"]);
    let connects = proxy.connects.lock().unwrap().clone();
    let want = format!("CONNECT {} HTTP/1.1", registry.host());
    assert!(
        !connects.is_empty() && connects.iter().all(|c| *c == want),
        "{connects:?}"
    );
}

/// A blob redirected to another host: followed, and the registry's credentials
/// (`--creds`) stay behind.
#[test]
fn redirects_to_another_host_carry_no_credentials() {
    let (mut registry, _) = seeded(1, |_| String::new());
    registry.restart_with(&Secured {
        htpasswd: vec![("erin", "erin-Secret-4c1d")],
        ..Secured::default()
    });
    let basic = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            "erin:erin-Secret-4c1d"
        )
    );
    let storage = FaultProxy::start_with(&registry.base_url(), vec![], Some(basic));
    let redirect = Fault::Redirect(storage.base_url());
    let front = FaultProxy::start(
        &registry.base_url(),
        vec![Rule::always(Match::Blobs, redirect)],
    );
    let refs = [format!("{}/csi/driver0:v1", front.host())];
    let (out, doc) = verify(&refs, &["--creds", "erin:erin-Secret-4c1d"], &[]);
    assert_eq!(out.status.code(), Some(0), "{doc}");
    let blobs: Vec<_> = storage
        .seen()
        .into_iter()
        .filter(|s| s.request.contains("/blobs/"))
        .collect();
    assert!(!blobs.is_empty(), "the blobs were redirected");
    assert!(blobs.iter().all(|s| s.authorization.is_none()), "{blobs:?}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("erin-Secret"));
}

/// Faults that heal (a reset connection, a 503, a stall past the request timeout) are
/// retried, each retry counted, and the images pass.
#[test]
fn faults_that_heal_are_retried() {
    let (registry, _) = seeded(1, |_| String::new());
    let rules = vec![
        Rule::times(Match::Manifests, Fault::Reset, 2),
        Rule::times(Match::Blobs, Fault::Status(503), 2),
        Rule::times(Match::Blobs, Fault::Stall(Duration::from_secs(3)), 1),
    ];
    let front = FaultProxy::start(&registry.base_url(), rules);
    let refs = [format!("{}/csi/driver0:v1", front.host())];
    let quick = ["--request-timeout", "1s", "--retries", "5", "--stats", "-v"];
    let (out, doc) = verify(&refs, &quick, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(verdicts(&doc), ["pass"]);
    assert_eq!(front.faults_injected(), 5, "{stderr}");
    assert!(stderr.contains(" 5 retries;"), "{stderr}");
}

/// Issue 33, item 19: a plain-HTTP loopback registry that answers with a malformed
/// response: the error shown is that response's, not the HTTPS fallback's.
#[test]
fn a_malformed_answer_is_the_error_shown() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    listener.set_nonblocking(true).expect("nonblocking");
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let server = thread::spawn(move || {
        let until = Instant::now() + Duration::from_secs(60);
        while !stopped.load(Ordering::Relaxed) && Instant::now() < until {
            let Ok((mut conn, _)) = listener.accept() else {
                thread::sleep(Duration::from_millis(5));
                continue;
            };
            let _ = conn.set_nonblocking(false);
            let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = conn.read(&mut [0u8; 1024]);
            let _ = conn.write_all(b"HTTX/1.1 200 OK\r\n\r\n");
        }
    });
    let refs = [format!("127.0.0.1:{port}/csi/driver:v1")];
    let (out, doc) = verify(&refs, &["--retries", "1"], &[]);
    stop.store(true, Ordering::Relaxed);
    let _ = server.join();
    assert_eq!(out.status.code(), Some(3), "{doc}");
    let text = doc.to_string();
    assert!(text.contains("invalid HTTP version parsed"), "{text}");
    assert!(
        text.contains(&format!("http://127.0.0.1:{port}/v2/")),
        "{text}"
    );
    assert!(!text.contains("corrupt message"), "{text}");
}

/// Issue 33, item 20: a standard output closed at start (`>&-`) cannot take the report:
/// exit 3, naming standard output, in every format; `/dev/null` takes it (exit 0).
#[test]
fn a_closed_standard_output_is_an_incomplete_run() {
    let bin = env!("CARGO_BIN_EXE_imgcheck");
    let good = format!("oci:{}", fixture("good").display());
    for (format, redirect, code) in [
        ("text", ">&-", 3),
        ("json", ">&-", 3),
        ("text", ">/dev/null", 0),
    ] {
        let script = format!("exec '{bin}' verify '{good}' --format {format} {redirect}");
        let out = std::process::Command::new("sh")
            .args(["-c", &script])
            .output()
            .expect("sh runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{script}: {stderr}");
        if code == 3 {
            assert!(
                stderr.contains("imgcheck: cannot write to standard output")
                    && stderr.contains("Bad file descriptor"),
                "{script}: {stderr}"
            );
        }
    }
}
