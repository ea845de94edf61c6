//! The registry behind credentials and TLS: htpasswd Basic auth, token auth with a token
//! server run in the test process, and TLS with a CA generated per test.
//!
//! Fixtures are pushed over plain HTTP first ([`super::Registry::push_layout`]); then
//! [`super::Registry::restart_with`] restarts the same registry (same port, same storage) with
//! auth and/or TLS switched on. After that the harness's own HTTP helpers (which speak plain,
//! unauthenticated HTTP) no longer apply: use [`super::Registry::host`] in references.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use rcgen::{
    BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SigningKey,
};
use tempfile::TempDir;

use super::{
    ACCESS_LOG_OFF, ACCESS_LOG_ON, IDENTITY_HEADER, Registry, Startup, config_yaml, find_on_path,
};

/// A CA and the certificates it issued, as PEM files in a temporary directory.
pub struct Pki {
    dir: TempDir,
    issuer: Issuer<'static, KeyPair>,
}

impl Pki {
    /// A fresh CA with a server certificate for 127.0.0.1/localhost and a client pair.
    pub fn new() -> Pki {
        let dir = tempfile::Builder::new()
            .prefix("imgcheck-pki-")
            .tempdir()
            .expect("pki tempdir");
        let ca_key = KeyPair::generate().expect("CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "imgcheck test CA");
        let ca = params.self_signed(&ca_key).expect("CA cert");
        fs::write(dir.path().join("ca.pem"), ca.pem()).expect("write CA");
        let issuer = Issuer::new(params, ca_key);
        let pki = Pki { dir, issuer };
        pki.issue(
            "server",
            vec!["127.0.0.1".into(), "localhost".into()],
            ExtendedKeyUsagePurpose::ServerAuth,
        );
        pki.issue(
            "client",
            vec!["imgcheck-client".into()],
            ExtendedKeyUsagePurpose::ClientAuth,
        );
        pki
    }

    fn issue(&self, name: &str, sans: Vec<String>, usage: ExtendedKeyUsagePurpose) {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::new(sans).expect("params");
        params.extended_key_usages = vec![usage];
        let cert = params.signed_by(&key, &self.issuer).expect("sign");
        fs::write(self.path(&format!("{name}.pem")), cert.pem()).expect("write cert");
        fs::write(self.path(&format!("{name}.key")), key.serialize_pem()).expect("write key");
    }

    /// A file of the PKI directory (`ca.pem`, `server.pem`, `server.key`, `client.pem`,
    /// `client.key`).
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A `--cert-dir` in certs.d layout: `ca.crt`, and with `client` the pair
    /// `client.cert`/`client.key`.
    pub fn cert_dir(&self, client: bool) -> PathBuf {
        let dir = self
            .dir
            .path()
            .join(if client { "certs-client" } else { "certs" });
        fs::create_dir_all(&dir).expect("cert dir");
        fs::copy(self.path("ca.pem"), dir.join("ca.crt")).expect("copy CA");
        if client {
            fs::copy(self.path("client.pem"), dir.join("client.cert")).expect("copy cert");
            fs::copy(self.path("client.key"), dir.join("client.key")).expect("copy key");
        }
        dir
    }
}

/// How to secure a restarted registry.
#[derive(Default)]
pub struct Secured<'a> {
    /// Basic auth against these users (bcrypt htpasswd file).
    pub htpasswd: Vec<(&'a str, &'a str)>,
    /// Token auth trusting this server.
    pub token: Option<&'a TokenServer>,
    /// TLS with the PKI's server certificate.
    pub tls: Option<&'a Pki>,
    /// With `tls`: require client certificates issued by the PKI's CA.
    pub client_certs: bool,
    /// The access log on: [`Registry::requests`] then lists every request served, with
    /// its protocol (`HTTP/1.1`, `HTTP/2.0`).
    pub access_log: bool,
}

impl Registry {
    /// Stops the registry and starts it again on the same port and storage with auth and/or
    /// TLS. Waits (at most 10 s) until `/v2/` answers, whatever the status.
    pub fn restart_with(&mut self, secured: &Secured<'_>) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut http_extra = String::new();
        let mut extra = String::new();
        let quote = |p: &Path| serde_json::to_string(&p.to_string_lossy()).expect("quote");
        if let Some(pki) = secured.tls {
            http_extra.push_str(&format!(
                "  tls:\n    certificate: {}\n    key: {}\n",
                quote(&pki.path("server.pem")),
                quote(&pki.path("server.key"))
            ));
            if secured.client_certs {
                http_extra.push_str(&format!(
                    "    clientcas:\n      - {}\n",
                    quote(&pki.path("ca.pem"))
                ));
            }
        }
        if !secured.htpasswd.is_empty() {
            let path = self.dir.path().join("htpasswd");
            let lines: String = secured
                .htpasswd
                .iter()
                .map(|(u, p)| format!("{u}:{}\n", bcrypt::hash(p, 4).expect("bcrypt")))
                .collect();
            fs::write(&path, lines).expect("write htpasswd");
            extra.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: imgcheck-test\n    path: {}\n",
                quote(&path)
            ));
        } else if let Some(t) = secured.token {
            extra.push_str(&format!(
                "auth:\n  token:\n    realm: {}\n    service: {SERVICE}\n    issuer: {ISSUER}\n    rootcertbundle: {}\n",
                quote(Path::new(&t.realm())),
                quote(&t.bundle_path())
            ));
        }
        let identity = format!(
            "restart-{}-{}",
            std::process::id(),
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        );
        let config = self.dir.path().join("config.yml");
        let storage = self.storage_root();
        let mut text = config_yaml(&storage, &self.host(), &identity, &http_extra, &extra);
        if secured.access_log {
            text = text.replacen(ACCESS_LOG_OFF, ACCESS_LOG_ON, 1);
        }
        fs::write(&config, text).expect("write registry config");
        let bin = find_on_path("docker-registry").expect("docker-registry on PATH");
        let log = fs::File::create(self.log_path()).expect("registry log");
        self.child = Command::new(bin)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone log"))
            .stderr(log)
            .spawn()
            .expect("restart docker-registry");
        let scheme = if secured.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let mut probe = reqwest::blocking::Client::builder()
            .no_proxy()
            .danger_accept_invalid_certs(true);
        if let (Some(pki), true) = (secured.tls, secured.client_certs) {
            let mut pem = fs::read(pki.path("client.pem")).expect("client cert");
            pem.extend(fs::read(pki.path("client.key")).expect("client key"));
            probe = probe.identity(reqwest::Identity::from_pem(&pem).expect("identity"));
        }
        let probe = probe.build().expect("probe client");
        let url = format!("{scheme}://{}/v2/", self.host());
        let deadline = Instant::now() + Duration::from_secs(10);
        let outcome = loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                break Startup::Exited(status);
            }
            if let Ok(resp) = probe.get(&url).timeout(Duration::from_millis(500)).send()
                && resp
                    .headers()
                    .get(IDENTITY_HEADER)
                    .is_some_and(|v| v.as_bytes() == identity.as_bytes())
            {
                break Startup::Ready;
            }
            if Instant::now() >= deadline {
                break Startup::TimedOut;
            }
            thread::sleep(Duration::from_millis(50));
        };
        assert!(
            matches!(outcome, Startup::Ready),
            "restarted docker-registry did not come up; log tail:\n{}",
            self.log_tail()
        );
    }
}

/// The `service` the token server and the registry agree on.
pub const SERVICE: &str = "imgcheck-test-registry";
/// The token issuer the registry trusts.
pub const ISSUER: &str = "imgcheck-test-issuer";

/// One request the token server answered.
#[derive(Debug, Clone)]
pub struct TokenRequest {
    /// The user it authenticated, if any (`<anonymous>` otherwise).
    pub user: String,
    /// The scopes asked for, in order (repeated `scope` parameters, or OAuth2's one
    /// space-separated `scope`).
    pub scopes: Vec<String>,
    /// The HTTP status answered.
    pub status: u16,
}

struct TokenState {
    users: HashMap<String, (String, Vec<String>)>,
    identity_tokens: HashMap<String, String>,
    requests: Mutex<Vec<TokenRequest>>,
    /// Refusals quote the request's `Authorization` header and form body back, as some
    /// token services do in their error messages.
    echo: AtomicBool,
    key: KeyPair,
    cert_der: Vec<u8>,
}

/// A token server (distribution's token-auth spec) signing ES256 JWTs with an `x5c` chain
/// that the registry's `rootcertbundle` trusts. Users may pull (and push) only repositories
/// under their listed prefixes. Stops when dropped.
pub struct TokenServer {
    port: u16,
    dir: TempDir,
    state: Arc<TokenState>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl TokenServer {
    /// Starts a token server. `users`: (name, password, repository prefixes it may pull);
    /// `identity_tokens`: (refresh token, user name).
    pub fn start(users: &[(&str, &str, &[&str])], identity_tokens: &[(&str, &str)]) -> TokenServer {
        let dir = tempfile::Builder::new()
            .prefix("imgcheck-token-")
            .tempdir()
            .expect("token tempdir");
        let key = KeyPair::generate().expect("token key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "imgcheck test token signer");
        let cert = params.self_signed(&key).expect("token cert");
        fs::write(dir.path().join("bundle.pem"), cert.pem()).expect("write bundle");
        let state = Arc::new(TokenState {
            users: users
                .iter()
                .map(|(u, p, repos)| {
                    (
                        u.to_string(),
                        (p.to_string(), repos.iter().map(|r| r.to_string()).collect()),
                    )
                })
                .collect(),
            identity_tokens: identity_tokens
                .iter()
                .map(|(t, u)| (t.to_string(), u.to_string()))
                .collect(),
            requests: Mutex::new(Vec::new()),
            echo: AtomicBool::new(false),
            key,
            cert_der: cert.der().to_vec(),
        });
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind token server");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("address").port();
        let stop = Arc::new(AtomicBool::new(false));
        let accept = {
            let state = Arc::clone(&state);
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let state = Arc::clone(&state);
                            thread::spawn(move || serve_token(stream, &state));
                        }
                        Err(_) => thread::sleep(Duration::from_millis(5)),
                    }
                }
            })
        };
        TokenServer {
            port,
            dir,
            state,
            stop,
            accept: Some(accept),
        }
    }

    /// The token endpoint.
    pub fn realm(&self) -> String {
        format!("http://127.0.0.1:{}/token", self.port)
    }

    /// The certificate bundle the registry trusts.
    pub fn bundle_path(&self) -> PathBuf {
        self.dir.path().join("bundle.pem")
    }

    /// From now on, refusals quote the request's `Authorization` header and form body in
    /// their error message (a careless token service).
    pub fn echo_credentials_in_errors(&self) {
        self.state.echo.store(true, Ordering::Relaxed);
    }

    /// Every token request so far.
    pub fn requests(&self) -> Vec<TokenRequest> {
        self.state.requests.lock().unwrap().clone()
    }
}

impl Drop for TokenServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// An ECDSA signature as JWS wants it (`r || s`, 32 bytes each) from ring's ASN.1 DER.
fn jws_signature(der: &[u8]) -> Vec<u8> {
    if der.len() == 64 {
        return der.to_vec();
    }
    // SEQUENCE { INTEGER r, INTEGER s }
    let mut i = 2;
    if der[1] & 0x80 != 0 {
        i += (der[1] & 0x7f) as usize;
    }
    let mut out = Vec::new();
    for _ in 0..2 {
        assert_eq!(der[i], 0x02, "DER INTEGER expected");
        let len = der[i + 1] as usize;
        let int = &der[i + 2..i + 2 + len];
        let int = &int[int.len().saturating_sub(32)..];
        out.extend(std::iter::repeat_n(0u8, 32 - int.len()));
        out.extend_from_slice(int);
        i += 2 + len;
    }
    out
}

fn sign_token(state: &TokenState, user: &str, repos: &[String]) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let header = serde_json::json!({
        "alg": "ES256",
        "typ": "JWT",
        "x5c": [base64::engine::general_purpose::STANDARD.encode(&state.cert_der)],
    });
    let access: Vec<serde_json::Value> = repos
        .iter()
        .map(|r| serde_json::json!({"type": "repository", "name": r, "actions": ["pull", "push"]}))
        .collect();
    let claims = serde_json::json!({
        "iss": ISSUER,
        "sub": user,
        "aud": SERVICE,
        "exp": now + 300,
        "nbf": now - 10,
        "iat": now,
        "jti": format!("{now}-{user}-{}", repos.join(",")),
        "access": access,
    });
    let signing_input = format!(
        "{}.{}",
        b64url(header.to_string().as_bytes()),
        b64url(claims.to_string().as_bytes())
    );
    let sig = state
        .key
        .sign(signing_input.as_bytes())
        .expect("sign token");
    format!("{signing_input}.{}", b64url(&jws_signature(&sig)))
}

fn query_param(query: &str, name: &str) -> Option<String> {
    query_params(query, name).into_iter().next()
}

fn query_params(query: &str, name: &str) -> Vec<String> {
    reqwest::Url::parse(&format!("http://x/?{query}"))
        .map(|u| {
            u.query_pairs()
                .filter(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn serve_token(stream: TcpStream, state: &TokenState) {
    let Some(request) = super::read_http_request(&stream, Duration::from_secs(10), 1 << 16) else {
        return;
    };
    let authorization = request.header("authorization");
    let super::HttpRequest {
        method,
        target,
        body,
        ..
    } = request;
    let query = match method.as_str() {
        "POST" => String::from_utf8_lossy(&body).into_owned(),
        _ => target
            .split_once('?')
            .map(|(_, q)| q.to_string())
            .unwrap_or_default(),
    };
    let scopes: Vec<String> = query_params(&query, "scope")
        .iter()
        .flat_map(|s| s.split(' '))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    // Who is asking?
    let user: Result<Option<String>, ()> = if method == "POST" {
        match (
            query_param(&query, "grant_type").as_deref(),
            query_param(&query, "refresh_token"),
        ) {
            (Some("refresh_token"), Some(t)) => {
                state.identity_tokens.get(&t).cloned().map(Some).ok_or(())
            }
            _ => Err(()),
        }
    } else {
        match authorization
            .as_deref()
            .and_then(|a| a.strip_prefix("Basic "))
        {
            None => Ok(None),
            Some(b64) => {
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(b64.trim())
                    .ok()
                    .and_then(|d| String::from_utf8(d).ok())
                    .unwrap_or_default();
                match decoded.split_once(':') {
                    Some((u, p)) if state.users.get(u).is_some_and(|(pw, _)| pw == p) => {
                        Ok(Some(u.to_string()))
                    }
                    _ => Err(()),
                }
            }
        }
    };
    let repos: Vec<String> = scopes
        .iter()
        .filter_map(|s| s.strip_prefix("repository:")?.rsplit_once(':'))
        .map(|(name, _)| name.to_string())
        .collect();
    let echoed = format!(
        "invalid username, password or token (Authorization: {}; body: {})",
        authorization.as_deref().unwrap_or("none"),
        String::from_utf8_lossy(&body)
    );
    let (status, answer) = match &user {
        Err(()) if state.echo.load(Ordering::Relaxed) => (
            401,
            serde_json::json!({"errors": [{"code": "UNAUTHORIZED", "message": echoed}]}),
        ),
        Err(()) => (
            401,
            serde_json::json!({"errors": [{"code": "UNAUTHORIZED", "message": "invalid username, password or token"}]}),
        ),
        Ok(who) => {
            // Like distribution's token servers: grant the requested scopes the user may
            // have, silently drop the others.
            let allowed: Vec<String> = match who {
                Some(u) => repos
                    .iter()
                    .filter(|r| {
                        state.users.get(u).is_some_and(|(_, prefixes)| {
                            prefixes.iter().any(|p| r.starts_with(p.as_str()))
                        })
                    })
                    .cloned()
                    .collect(),
                None => Vec::new(),
            };
            let token = sign_token(state, who.as_deref().unwrap_or(""), &allowed);
            let key = if method == "POST" {
                "access_token"
            } else {
                "token"
            };
            (200, serde_json::json!({ key: token, "expires_in": 300 }))
        }
    };
    state.requests.lock().unwrap().push(TokenRequest {
        user: match &user {
            Ok(Some(u)) => u.clone(),
            Ok(None) => "<anonymous>".to_string(),
            Err(()) => "<refused>".to_string(),
        },
        scopes,
        status,
    });
    let body = answer.to_string();
    let mut out = stream;
    let _ = out.write_all(
        format!(
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    let _ = out.flush();
    let _ = out.shutdown(Shutdown::Write);
}
