//! Integration-test harness around a real registry.
//!
//! Every [`Registry`] is its own `docker-registry` process (distribution 2.8)
//! on a free port of 127.0.0.1 (or [::1]), with filesystem storage in a temporary
//! directory; dropping it kills the process and removes the directory, so
//! each test gets a fresh, isolated registry and may run several at once.
//!
//! [`Registry::push_layout`] seeds a registry from a fixture's OCI image
//! layout over the plain Distribution HTTP API and then reproduces the
//! fixture's damage (objects missing from the layout are deleted from the
//! registry, corrupt ones are overwritten in its storage).
//!
//! Declared once in `tests/main.rs`; the test modules use it as `crate::common`.

pub mod cluster_run;
pub mod proxy;
pub mod release;
pub mod secure;

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reqwest::blocking::{Client, Response};
use reqwest::{Method, Url};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tempfile::TempDir;

pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";

/// Accept header for manifest requests. Without the index/list types the
/// registry would not serve an index as-is (for a Docker list it silently
/// substitutes the linux/amd64 child; for an OCI index it answers 404).
pub const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.index.v1+json, \
     application/vnd.oci.image.manifest.v1+json, \
     application/vnd.docker.distribution.manifest.list.v2+json, \
     application/vnd.docker.distribution.manifest.v2+json";

const REF_NAME: &str = "org.opencontainers.image.ref.name";
const START_ATTEMPTS: usize = 5;
const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
const POLL_INTERVAL: Duration = Duration::from_millis(50);
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);
/// Response header carrying a per-instance token, so the readiness probe
/// cannot mistake another registry that grabbed the same port for ours.
const IDENTITY_HEADER: &str = "X-Imgcheck-Harness";
const NOT_FOUND_MSG: &str =
    "docker-registry not found: install it with 'apt-get install docker-registry' (or run .ci/run)";

static INSTANCE: AtomicU64 = AtomicU64::new(0);

/// A running `docker-registry` serving plain HTTP on 127.0.0.1 (or `[::1]`).
pub struct Registry {
    child: Child,
    /// The loopback address it listens on: `127.0.0.1`, `[::1]`, or another `127.0.0.N`
    /// ([`Registry::start_portless`]).
    bind: String,
    port: u16,
    client: Client,
    // Declared last: removed after `Drop::drop` has stopped the process.
    dir: TempDir,
}

enum Startup {
    Ready,
    Exited(ExitStatus),
    TimedOut,
}

impl Registry {
    /// Starts a fresh registry and waits (at most 10 s) until `GET /v2/`
    /// answers 200. Retries with a new port, up to 5 times, if the process
    /// exits early (typically because the port was taken in the meantime).
    pub fn start() -> Registry {
        Registry::start_on(Bind::Loopback("127.0.0.1"), false)
    }

    /// A registry on port 80 of its own loopback address `127.0.0.N` (N from 2 to 254),
    /// with its access log on: its references name no port (`127.0.0.N/repo:tag`), as a real
    /// source's do (quay.io, registry.redhat.io), so WMCO's hosts.toml for it is in a folder
    /// Windows accepts. Binding port 80 needs root (or `CAP_NET_BIND_SERVICE`), as CI has.
    pub fn start_portless() -> Registry {
        Registry::start_on(Bind::Portless, true)
    }

    /// [`Registry::start`] with the registry's access log on: [`Registry::requests`] then
    /// lists every request it served.
    pub fn start_logging_requests() -> Registry {
        Registry::start_on(Bind::Loopback("127.0.0.1"), true)
    }

    /// The request lines of the access log (`GET /v2/… HTTP/1.1`), in order (empty unless
    /// started with [`Registry::start_logging_requests`]).
    pub fn requests(&self) -> Vec<String> {
        let text = fs::read_to_string(self.log_path()).unwrap_or_default();
        text.lines()
            .filter_map(|l| l.split('"').nth(1))
            .filter(|r| r.contains(" /v2/"))
            .map(String::from)
            .collect()
    }

    /// [`Registry::start`] on the IPv6 loopback, `[::1]`.
    pub fn start_ipv6() -> Registry {
        Registry::start_on(Bind::Loopback("[::1]"), false)
    }

    fn start_on(how: Bind, access_log: bool) -> Registry {
        let bin = find_on_path("docker-registry").unwrap_or_else(|| panic!("{NOT_FOUND_MSG}"));
        let client = http_client();
        let mut failures = Vec::new();
        for attempt in 1..=START_ATTEMPTS {
            let dir = tempfile::Builder::new()
                .prefix("imgcheck-registry-")
                .tempdir()
                .expect("create registry tempdir");
            let (bind, port) = how.address(attempt);
            let bind = bind.as_str();
            let token = format!(
                "{}-{}-{}-{}",
                std::process::id(),
                INSTANCE.fetch_add(1, Ordering::Relaxed),
                port,
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or(0)
            );
            let storage = dir.path().join("storage");
            fs::create_dir_all(&storage).expect("create registry storage dir");
            let config = dir.path().join("config.yml");
            let mut text = config_yaml(&storage, &format!("{bind}:{port}"), &token, "", "");
            if access_log {
                text = text.replacen(ACCESS_LOG_OFF, ACCESS_LOG_ON, 1);
            }
            fs::write(&config, text).expect("write registry config");
            let log = File::create(dir.path().join("registry.log")).expect("create registry log");
            let child = match Command::new(&bin)
                .arg("serve")
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("clone log handle"))
                .stderr(log)
                .spawn()
            {
                Ok(child) => child,
                Err(e) if e.kind() == ErrorKind::NotFound => panic!("{NOT_FOUND_MSG}"),
                Err(e) => panic!("cannot spawn {}: {e}", bin.display()),
            };
            let mut registry = Registry {
                child,
                bind: bind.to_string(),
                port,
                client: client.clone(),
                dir,
            };
            match registry.wait_ready(&token) {
                Startup::Ready => return registry,
                Startup::Exited(status) => {
                    failures.push(format!(
                        "attempt {attempt} (port {port}): docker-registry exited early with {status}; log tail:\n{}",
                        registry.log_tail()
                    ));
                    // `registry` is dropped here: reaps the process, removes the tempdir.
                }
                Startup::TimedOut => panic!(
                    "docker-registry on port {port} did not answer 200 on /v2/ within {STARTUP_TIMEOUT:?}; log tail:\n{}",
                    registry.log_tail()
                ),
            }
        }
        panic!(
            "docker-registry failed to start after {START_ATTEMPTS} attempts:\n{}",
            failures.join("\n")
        );
    }

    fn wait_ready(&mut self, token: &str) -> Startup {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        let url = format!("{}/v2/", self.base_url());
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Startup::Exited(status),
                Ok(None) => {}
                Err(e) => panic!("cannot poll docker-registry process: {e}"),
            }
            if let Ok(resp) = self.client.get(&url).timeout(PROBE_TIMEOUT).send() {
                let ours = resp
                    .headers()
                    .get(IDENTITY_HEADER)
                    .is_some_and(|v| v.as_bytes() == token.as_bytes());
                if resp.status().as_u16() == 200 && ours {
                    return Startup::Ready;
                }
            }
            if Instant::now() >= deadline {
                return Startup::TimedOut;
            }
            thread::sleep(POLL_INTERVAL);
        }
    }

    /// "127.0.0.1:PORT" (or "[::1]:PORT"; "127.0.0.N" on port 80), as used in image
    /// references.
    pub fn host(&self) -> String {
        match self.port {
            80 => self.bind.clone(),
            port => format!("{}:{port}", self.bind),
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// "http://127.0.0.1:PORT" (no trailing slash).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.host())
    }

    /// `skopeo`-style reference: "docker://127.0.0.1:PORT/REPO:TAG".
    pub fn docker_ref(&self, repo: &str, tag: &str) -> String {
        format!("docker://{}/{repo}:{tag}", self.host())
    }

    /// The registry's filesystem storage root (`storage.filesystem.rootdirectory`).
    pub fn storage_root(&self) -> PathBuf {
        self.dir.path().join("storage")
    }

    /// Where the registry keeps the bytes of `digest` (shared by all repositories).
    pub fn blob_data_path(&self, digest: &str) -> PathBuf {
        let hex = sha256_hex(digest);
        self.storage_root()
            .join("docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// Overwrites the stored bytes of `digest` (blob or manifest) in every
    /// repository; the registry serves them without re-checking the digest.
    pub fn corrupt_blob(&self, digest: &str, bytes: &[u8]) {
        let path = self.blob_data_path(digest);
        assert!(
            path.is_file(),
            "cannot corrupt {digest}: {} does not exist",
            path.display()
        );
        fs::write(&path, bytes).unwrap_or_else(|e| panic!("overwrite {}: {e}", path.display()));
    }

    /// Repositories of this registry that reference `digest` (as a layer,
    /// config or manifest revision), found in its storage.
    pub fn repos_linking(&self, digest: &str) -> Vec<String> {
        let hex = sha256_hex(digest);
        let repos = self.storage_root().join("docker/registry/v2/repositories");
        let mut found = Vec::new();
        let mut stack = vec![repos.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            let mut is_repo = false;
            for entry in entries.flatten() {
                let fname = entry.file_name();
                let fname = fname.to_string_lossy();
                if fname == "_layers" || fname == "_manifests" || fname == "_uploads" {
                    is_repo = true;
                } else if entry.path().is_dir() {
                    stack.push(entry.path());
                }
            }
            let links = [
                dir.join("_layers/sha256").join(hex).join("link"),
                dir.join("_manifests/revisions/sha256")
                    .join(hex)
                    .join("link"),
            ];
            if is_repo && links.iter().any(|l| l.is_file()) {
                let rel = dir.strip_prefix(&repos).unwrap_or(&dir);
                found.push(rel.to_string_lossy().into_owned());
            }
        }
        found.sort();
        found
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("registry.log")
    }

    /// The last 40 lines of the registry's stdout/stderr.
    pub fn log_tail(&self) -> String {
        let text = fs::read(self.log_path())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_else(|e| format!("<cannot read log: {e}>"));
        let lines: Vec<&str> = text.lines().collect();
        let tail = &lines[lines.len().saturating_sub(40)..];
        if tail.is_empty() {
            "<empty log>".to_string()
        } else {
            tail.join("\n")
        }
    }

    /// The blocking HTTP client used by the harness (no proxy).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Absolute URL for a path such as "/v2/".
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url())
    }

    /// GET `/v2/REPO/manifests/REFERENCE` accepting OCI and Docker manifests
    /// and indexes. Returns the status and the body.
    pub fn get_manifest(&self, repo: &str, reference: &str) -> (u16, Vec<u8>) {
        let resp = self
            .request(Method::GET, &format!("/v2/{repo}/manifests/{reference}"))
            .header("Accept", MANIFEST_ACCEPT)
            .send()
            .unwrap_or_else(|e| panic!("GET manifest {repo}:{reference}: {e}"));
        status_and_body(resp)
    }

    /// Digest the registry reports (Docker-Content-Digest of a HEAD) for a
    /// tag or digest, or None if it answers anything but 200.
    pub fn manifest_digest(&self, repo: &str, reference: &str) -> Option<String> {
        let resp = self
            .request(Method::HEAD, &format!("/v2/{repo}/manifests/{reference}"))
            .header("Accept", MANIFEST_ACCEPT)
            .send()
            .unwrap_or_else(|e| panic!("HEAD manifest {repo}:{reference}: {e}"));
        if resp.status().as_u16() != 200 {
            return None;
        }
        header_str(&resp, "Docker-Content-Digest")
    }

    /// GET `/v2/REPO/blobs/DIGEST`. Returns the status and the body.
    pub fn get_blob(&self, repo: &str, digest: &str) -> (u16, Vec<u8>) {
        let resp = self
            .request(Method::GET, &format!("/v2/{repo}/blobs/{digest}"))
            .send()
            .unwrap_or_else(|e| panic!("GET blob {repo}@{digest}: {e}"));
        status_and_body(resp)
    }

    fn request(&self, method: Method, path: &str) -> reqwest::blocking::RequestBuilder {
        self.client.request(method, self.url(path))
    }

    /// Pushes the image tagged "latest" (or the only one) in an OCI layout
    /// to `REPO:TAG` and returns its digest, then reproduces the fixture's
    /// damage: objects whose file is missing from the layout are deleted
    /// from the repository, objects whose file is corrupt get the corrupt
    /// bytes written over the registry's storage.
    ///
    /// True bytes of missing/corrupt objects come from `fixtures/seed/`
    /// (found as `layout/../../seed`). Foreign layers (non-empty `urls`)
    /// are neither uploaded nor looked up. Panics, naming the fixture, if
    /// anything in the graph is not an index or a schema2/OCI manifest
    /// (schema1, non-JSON, config blobs...), which this registry refuses.
    pub fn push_layout(&self, layout: &Path, repo: &str, tag: &str) -> String {
        let plan = Plan::build(layout);
        let name = &plan.name;

        for blob in &plan.blobs {
            self.upload_blob(name, repo, &blob.digest, &blob.bytes);
        }
        let (top, children) = plan
            .manifests
            .split_last()
            .expect("plan always holds the top manifest");
        for m in children {
            self.put_manifest(name, repo, &m.digest, m);
        }
        self.put_manifest(name, repo, tag, top);

        // Blob bytes live once per registry, shared by all repositories: a
        // corrupt object pushed earlier (by a damaged fixture) would silently
        // stay corrupt here, since the registry does not rewrite known blobs.
        for obj in plan.objects() {
            let path = self.blob_data_path(obj.digest);
            let stored =
                fs::read(&path).unwrap_or_else(|e| panic!("{name}: read {}: {e}", path.display()));
            assert!(
                sha256_digest(&stored) == obj.digest,
                "{name}: this registry already stores corrupt bytes for {}, left by a damaged \
                 fixture pushed earlier; push damaged fixtures to a Registry of their own",
                obj.digest
            );
        }

        for obj in plan.objects() {
            if let Damage::Missing = obj.damage {
                let kind = if obj.is_manifest {
                    "manifests"
                } else {
                    "blobs"
                };
                let resp = self
                    .request(Method::DELETE, &format!("/v2/{repo}/{kind}/{}", obj.digest))
                    .send()
                    .unwrap_or_else(|e| panic!("{name}: DELETE {kind} {}: {e}", obj.digest));
                let status = resp.status().as_u16();
                let body = body_text(resp);
                assert_eq!(
                    status, 202,
                    "{name}: DELETE /v2/{repo}/{kind}/{} answered {status}: {body}",
                    obj.digest
                );
            }
        }
        for obj in plan.objects() {
            if let Damage::Corrupt(bytes) = &obj.damage {
                let others: Vec<String> = self
                    .repos_linking(obj.digest)
                    .into_iter()
                    .filter(|r| r != repo)
                    .collect();
                assert!(
                    others.is_empty(),
                    "{name}: corrupting {} would also corrupt it in {others:?} of this registry \
                     (blob bytes are shared); push damaged fixtures to a Registry of their own",
                    obj.digest
                );
                self.corrupt_blob(obj.digest, bytes);
            }
        }
        top.digest.clone()
    }

    fn blob_exists(&self, repo: &str, digest: &str) -> bool {
        let resp = self
            .request(Method::HEAD, &format!("/v2/{repo}/blobs/{digest}"))
            .send()
            .unwrap_or_else(|e| panic!("HEAD blob {repo}@{digest}: {e}"));
        resp.status().as_u16() == 200
    }

    pub fn upload_blob(&self, fixture: &str, repo: &str, digest: &str, bytes: &[u8]) {
        if self.blob_exists(repo, digest) {
            return;
        }
        let resp = self
            .request(Method::POST, &format!("/v2/{repo}/blobs/uploads/"))
            .send()
            .unwrap_or_else(|e| panic!("{fixture}: POST upload for {digest}: {e}"));
        let status = resp.status().as_u16();
        let location = header_str(&resp, "Location");
        let body = body_text(resp);
        assert_eq!(
            status, 202,
            "{fixture}: POST /v2/{repo}/blobs/uploads/ answered {status}: {body}"
        );
        let location =
            location.unwrap_or_else(|| panic!("{fixture}: upload response has no Location"));
        // Location may be absolute or relative, and may carry a query already.
        let base = Url::parse(&self.url("/")).expect("base url");
        let mut url = base
            .join(&location)
            .unwrap_or_else(|e| panic!("{fixture}: bad upload Location {location:?}: {e}"));
        url.query_pairs_mut().append_pair("digest", digest);

        let resp = self
            .client
            .put(url)
            .header("Content-Type", "application/octet-stream")
            .body(bytes.to_vec())
            .send()
            .unwrap_or_else(|e| panic!("{fixture}: PUT blob {digest}: {e}"));
        let status = resp.status().as_u16();
        let got = header_str(&resp, "Docker-Content-Digest");
        let body = body_text(resp);
        assert_eq!(
            status, 201,
            "{fixture}: PUT blob {digest} answered {status}: {body}"
        );
        assert_eq!(
            got.as_deref(),
            Some(digest),
            "{fixture}: registry stored blob under another digest"
        );
    }

    fn put_manifest(&self, fixture: &str, repo: &str, reference: &str, m: &ManifestObj) {
        let resp = self
            .request(Method::PUT, &format!("/v2/{repo}/manifests/{reference}"))
            .header("Content-Type", &m.content_type)
            .body(m.bytes.clone())
            .send()
            .unwrap_or_else(|e| panic!("{fixture}: PUT manifest {repo}:{reference}: {e}"));
        let status = resp.status().as_u16();
        let got = header_str(&resp, "Docker-Content-Digest");
        let body = body_text(resp);
        assert_eq!(
            status, 201,
            "{fixture}: PUT manifest {} ({}) as {repo}:{reference} answered {status}: {body}",
            m.digest, m.content_type
        );
        assert_eq!(
            got.as_deref(),
            Some(m.digest.as_str()),
            "{fixture}: registry stored manifest {repo}:{reference} under another digest"
        );
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        // Also runs while unwinding from a failed test.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The access log's setting in [`config_yaml`], off; and on.
const ACCESS_LOG_OFF: &str = "accesslog:\n    disabled: true";
const ACCESS_LOG_ON: &str = "accesslog:\n    disabled: false";

/// The registry's config; `http_extra` lines go under `http:` (indented two spaces),
/// `extra` sections at the top level.
fn config_yaml(storage: &Path, addr: &str, token: &str, http_extra: &str, extra: &str) -> String {
    // JSON strings are valid YAML scalars: quotes any odd path safely.
    let root = serde_json::to_string(&storage.to_string_lossy()).expect("quote path");
    format!(
        "version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: {root}
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
validation:
  manifests:
    urls:
      allow: [\"^https?://\"]
http:
  addr: \"{addr}\"
  headers:
    {IDENTITY_HEADER}: [\"{token}\"]
{http_extra}{extra}"
    )
}

fn http_client() -> Client {
    Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("build reqwest blocking client")
}

/// Where a test registry listens.
#[derive(Clone, Copy)]
enum Bind {
    /// A free port of this loopback address.
    Loopback(&'static str),
    /// Port 80 of a loopback address `127.0.0.N` of its own.
    Portless,
}

impl Bind {
    /// The address and port for the `attempt`-th start (from 1): a free port of the loopback
    /// address; or port 80 of a `127.0.0.N` whose port 80 was free a moment ago, N picked by
    /// the process and the registries it started (another test process may hold some).
    fn address(self, attempt: usize) -> (String, u16) {
        if let Bind::Loopback(bind) = self {
            return (bind.to_string(), free_port(bind));
        }
        let seed = u64::from(std::process::id()) * 31 + attempt as u64 * 7;
        for i in 0..253 {
            let n = 2 + (seed + INSTANCE.fetch_add(1, Ordering::Relaxed) + i) % 253;
            let bind = format!("127.0.0.{n}");
            match TcpListener::bind(format!("{bind}:80")) {
                Ok(_) => return (bind, 80),
                Err(e) if e.kind() == ErrorKind::PermissionDenied => panic!(
                    "binding {bind}:80 needs root or CAP_NET_BIND_SERVICE (run the suite as root, as .ci/run does): {e}"
                ),
                Err(_) => continue,
            }
        }
        panic!("no 127.0.0.N:80 is free for a port-less registry")
    }
}

/// A port of `bind` that was free a moment ago (bind port 0, then release).
fn free_port(bind: &str) -> u16 {
    TcpListener::bind(format!("{bind}:0"))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("bind {bind}:0: {e} (is the loopback interface up?)"))
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            fs::metadata(p)
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

fn header_str(resp: &Response, name: &str) -> Option<String> {
    resp.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

fn status_and_body(resp: Response) -> (u16, Vec<u8>) {
    let status = resp.status().as_u16();
    let body = resp.bytes().expect("read response body").to_vec();
    (status, body)
}

fn body_text(resp: Response) -> String {
    resp.text()
        .unwrap_or_else(|e| format!("<unreadable body: {e}>"))
}

// ---------------------------------------------------------------------------
// Fixtures and other processes

/// `<CARGO_MANIFEST_DIR>/fixtures`.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// `<CARGO_MANIFEST_DIR>/fixtures/layouts/<name>`.
pub fn fixture(name: &str) -> PathBuf {
    fixtures_dir().join("layouts").join(name)
}

/// The embedded `openshift` policy with `deep: {linux: false}`, written into `dir`: for the
/// `--deep` tests about Windows layers on fixtures whose Linux entries name a program their
/// layers do not hold (`--deep` reads Linux entries by default, issue 33 item 10).
pub fn openshift_without_linux_deep(dir: &Path) -> String {
    let path = dir.join("openshift-no-linux-deep.yaml");
    let text = include_str!("../../policies/openshift.yaml");
    std::fs::write(&path, format!("{text}deep:\n  linux: false\n")).unwrap();
    path.to_string_lossy().into_owned()
}

/// The imgcheck binary built for this test run. The Windows nodes' sandbox image is not
/// checked (`IMGCHECK_SANDBOX_IMAGE=none`): the policies name Microsoft's, which a test
/// registry does not hold; `tests/sandbox.rs` sets its own.
pub fn imgcheck() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_imgcheck"));
    cmd.env("IMGCHECK_SANDBOX_IMAGE", "none");
    cmd
}

/// Runs imgcheck with `args` to the end.
pub fn run_imgcheck(args: &[&str]) -> std::process::Output {
    imgcheck().args(args).output().expect("imgcheck runs")
}

/// The JSON document imgcheck printed; panics with its standard output and error if it is
/// not JSON.
pub fn json_of(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// `skopeo copy --all --preserve-digests SRC DST`, with TLS verification
/// off for each side that is a `docker://` reference (the flags only apply
/// to that transport). No signature policy is consulted. Panics with
/// skopeo's stderr on failure.
pub fn skopeo_copy_all(src: &str, dst: &str) {
    let mut cmd = Command::new("skopeo");
    cmd.args(["--insecure-policy", "copy", "--all", "--preserve-digests"]);
    if src.starts_with("docker://") {
        cmd.arg("--src-tls-verify=false");
    }
    if dst.starts_with("docker://") {
        cmd.arg("--dest-tls-verify=false");
    }
    cmd.arg(src).arg(dst).stdin(Stdio::null());
    let out = match cmd.output() {
        Ok(out) => out,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            panic!("skopeo not found: install it with 'apt-get install skopeo' (or run .ci/run)")
        }
        Err(e) => panic!("cannot run skopeo: {e}"),
    };
    assert!(
        out.status.success(),
        "skopeo copy --all {src} {dst} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
}

/// "sha256:<hex>" of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

fn sha256_hex(digest: &str) -> &str {
    let hex = digest
        .strip_prefix("sha256:")
        .unwrap_or_else(|| panic!("unsupported digest {digest:?}: only sha256 is handled"));
    assert!(
        hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
        "malformed digest {digest:?}"
    );
    hex
}

/// The descriptor in a layout's index.json tagged "latest" (or its only one).
pub fn layout_top_descriptor(layout: &Path) -> Value {
    let name = fixture_name(layout);
    let path = layout.join("index.json");
    let bytes = fs::read(&path).unwrap_or_else(|e| panic!("{name}: read {}: {e}", path.display()));
    let index: Value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("{name}: {} is not JSON: {e}", path.display()));
    let descs = index["manifests"]
        .as_array()
        .unwrap_or_else(|| panic!("{name}: index.json has no manifests[]"));
    let tagged: Vec<&Value> = descs
        .iter()
        .filter(|d| d["annotations"][REF_NAME].as_str() == Some("latest"))
        .collect();
    match (tagged.as_slice(), descs.as_slice()) {
        ([one], _) => (*one).clone(),
        ([], [one]) => one.clone(),
        _ => panic!(
            "{name}: index.json needs exactly one descriptor tagged \"latest\" (or only one descriptor)"
        ),
    }
}

/// Digest of the layout's top descriptor (see [`layout_top_descriptor`]).
pub fn layout_top_digest(layout: &Path) -> String {
    layout_top_descriptor(layout)["digest"]
        .as_str()
        .unwrap_or_else(|| panic!("{}: top descriptor has no digest", fixture_name(layout)))
        .to_string()
}

fn fixture_name(layout: &Path) -> String {
    layout
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| layout.display().to_string())
}

// ---------------------------------------------------------------------------
// Push plan: the object graph of a layout, children before parents.

enum Damage {
    None,
    /// Not in the layout; the registry copy must be deleted after the push.
    Missing,
    /// In the layout with these (wrong) bytes; they replace the registry's copy.
    Corrupt(Vec<u8>),
}

struct BlobObj {
    digest: String,
    bytes: Vec<u8>,
    damage: Damage,
}

struct ManifestObj {
    digest: String,
    content_type: String,
    bytes: Vec<u8>,
    damage: Damage,
}

struct ObjRef<'a> {
    digest: &'a str,
    is_manifest: bool,
    damage: &'a Damage,
}

struct Plan {
    name: String,
    layout: PathBuf,
    seed: PathBuf,
    seen: HashSet<String>,
    blobs: Vec<BlobObj>,
    /// Post-order: every manifest after its children, the top one last.
    manifests: Vec<ManifestObj>,
}

impl Plan {
    fn build(layout: &Path) -> Plan {
        let name = fixture_name(layout);
        let fixtures = layout.parent().and_then(Path::parent).unwrap_or_else(|| {
            panic!(
                "{name}: layout {} is not under fixtures/layouts/",
                layout.display()
            )
        });
        let mut plan = Plan {
            name,
            layout: layout.to_path_buf(),
            seed: fixtures.join("seed").join("sha256"),
            seen: HashSet::new(),
            blobs: Vec::new(),
            manifests: Vec::new(),
        };
        let top = layout_top_descriptor(layout);
        plan.visit_manifest(&top);
        plan
    }

    fn objects(&self) -> impl Iterator<Item = ObjRef<'_>> {
        let blobs = self.blobs.iter().map(|b| ObjRef {
            digest: &b.digest,
            is_manifest: false,
            damage: &b.damage,
        });
        let manifests = self.manifests.iter().map(|m| ObjRef {
            digest: &m.digest,
            is_manifest: true,
            damage: &m.damage,
        });
        blobs.chain(manifests)
    }

    fn digest_of(&self, desc: &Value) -> String {
        desc["digest"]
            .as_str()
            .unwrap_or_else(|| panic!("{}: descriptor without digest: {desc}", self.name))
            .to_string()
    }

    /// True bytes of `digest`, and how the layout damaged them.
    fn load(&self, digest: &str) -> (Vec<u8>, Damage) {
        let name = &self.name;
        let hex = sha256_hex(digest);
        let path = self.layout.join("blobs").join("sha256").join(hex);
        let damage = match fs::read(&path) {
            Ok(bytes) if sha256_digest(&bytes) == digest => return (bytes, Damage::None),
            Ok(bytes) => Damage::Corrupt(bytes),
            Err(e) if e.kind() == ErrorKind::NotFound => Damage::Missing,
            Err(e) => panic!("{name}: read {}: {e}", path.display()),
        };
        let seed = self.seed.join(hex);
        let bytes = fs::read(&seed).unwrap_or_else(|e| {
            panic!(
                "{name}: {digest} is missing or corrupt in the layout and has no true bytes at {}: {e}",
                seed.display()
            )
        });
        assert_eq!(
            sha256_digest(&bytes),
            digest,
            "{name}: seed file {} does not hash to its name",
            seed.display()
        );
        (bytes, damage)
    }

    fn visit_blob(&mut self, desc: &Value) {
        let has_urls = desc["urls"].as_array().is_some_and(|u| !u.is_empty());
        if has_urls {
            return; // foreign layer: lives elsewhere, never uploaded
        }
        let digest = self.digest_of(desc);
        if !self.seen.insert(digest.clone()) {
            return;
        }
        let (bytes, damage) = self.load(&digest);
        self.blobs.push(BlobObj {
            digest,
            bytes,
            damage,
        });
    }

    fn visit_manifest(&mut self, desc: &Value) {
        let digest = self.digest_of(desc);
        if !self.seen.insert(digest.clone()) {
            return;
        }
        let name = self.name.clone();
        let desc_type = desc["mediaType"].as_str().unwrap_or("").to_string();
        let (bytes, damage) = self.load(&digest);
        let unpushable = |why: &str| -> ! {
            panic!(
                "fixture {name}: {digest} ({desc_type}) cannot be pushed to docker-registry: {why}; \
                 only OCI/Docker indexes and schema2/OCI image manifests can"
            )
        };
        let doc: Value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| unpushable(&format!("not JSON ({e})")));
        if doc["schemaVersion"].as_u64() == Some(1) {
            unpushable("Docker schema1 manifest");
        }
        let own_type = doc["mediaType"].as_str().unwrap_or("").to_string();
        // The registry parses by Content-Type and rejects a body whose own
        // mediaType disagrees, so the body's own field wins over the descriptor.
        let content_type = if !own_type.is_empty() {
            own_type
        } else if !desc_type.is_empty() {
            desc_type.clone()
        } else if doc.get("manifests").is_some() {
            OCI_INDEX.to_string()
        } else {
            OCI_MANIFEST.to_string()
        };
        match content_type.as_str() {
            OCI_INDEX | DOCKER_LIST => {
                let children = doc["manifests"]
                    .as_array()
                    .unwrap_or_else(|| unpushable("index without manifests[]"));
                for child in children {
                    self.visit_manifest(child);
                }
            }
            OCI_MANIFEST | DOCKER_MANIFEST => {
                if doc.get("config").is_none() {
                    unpushable("image manifest without config");
                }
                self.visit_blob(&doc["config"]);
                for layer in doc["layers"].as_array().into_iter().flatten() {
                    self.visit_blob(layer);
                }
            }
            other => unpushable(&format!(
                "media type {other:?} is neither an index nor an image manifest"
            )),
        }
        self.manifests.push(ManifestObj {
            digest,
            content_type,
            bytes,
            damage,
        });
    }
}

/// One HTTP/1.1 request read from a test server's socket.
pub struct HttpRequest {
    /// Method (`GET`, `POST`, …).
    pub method: String,
    /// Request target (path and query).
    pub target: String,
    /// Headers in arrival order.
    pub headers: Vec<(String, String)>,
    /// Body (`Content-Length` bytes, at most `max_body`).
    pub body: Vec<u8>,
}

impl HttpRequest {
    /// A header's value (case-insensitive name).
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    }
}

/// Reads one request (request line, headers, `Content-Length` body capped at `max_body`)
/// for the harness's hand-written servers; `None` when the peer closes or the read fails.
pub fn read_http_request(
    stream: &std::net::TcpStream,
    timeout: std::time::Duration,
    max_body: usize,
) -> Option<HttpRequest> {
    use std::io::{BufRead, BufReader, Read};
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(timeout));
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("/").to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let mut request = HttpRequest {
        method,
        target,
        headers,
        body: Vec::new(),
    };
    if let Some(n) = request
        .header("content-length")
        .and_then(|v| v.parse::<usize>().ok())
    {
        request.body.resize(n.min(max_body), 0);
        reader.read_exact(&mut request.body).ok()?;
    }
    Some(request)
}
