//! Registry credentials (containers-auth.json(5), Docker config files, credential helpers)
//! and per-registry TLS material (containers-certs.d(5)).
//!
//! Lookup order (docs/credentials.md): `--no-creds` (none), `--creds USER:PASS` (for every registry),
//! `--authfile` (only that file), else every file that exists of `REGISTRY_AUTH_FILE`,
//! `$XDG_RUNTIME_DIR/containers/auth.json`, `${XDG_CONFIG_HOME:-~/.config}/containers/auth.json`,
//! `$DOCKER_CONFIG/config.json` or `~/.docker/config.json`, `~/.dockercfg`, in that order; the
//! first file with an answer wins. Within a file: `credHelpers[host]`
//! (`docker-credential-<name> get`), then `auths` with the most specific key
//! (`host/namespace/repo`, then `host/namespace`, then `host`), then `credsStore`. An
//! `identitytoken` (or a helper's `<token>` user name) is an OAuth2 refresh token for the
//! registry's token service. Credentials never appear in `Debug` output or messages.
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;

use crate::reference::RegistryRef;

/// The user name Docker uses for an identity (refresh) token.
pub const IDENTITY_TOKEN_USER: &str = "<token>";

/// How a helper that is not on `PATH` is reported.
const NOT_INSTALLED: &str = "not installed";

/// How long a credential helper may take before imgcheck gives up on it.
const HELPER_TIMEOUT: Duration = Duration::from_secs(30);

/// A username and password (or token) for one registry.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// User name; [`IDENTITY_TOKEN_USER`] when `password` is an identity token.
    pub username: String,
    /// Password or token. Never printed.
    pub password: String,
}

impl Credentials {
    /// Is this an identity token (an OAuth2 refresh token) rather than a password?
    pub fn is_identity_token(&self) -> bool {
        self.username == IDENTITY_TOKEN_USER
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Credentials({}, <redacted>)", self.username)
    }
}

/// A credentials file (or helper, or `--creds` value) that cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct AuthError {
    /// What is wrong: `auth file PATH`, `credential helper NAME` or `--creds`.
    pub path: String,
    /// What is wrong with it.
    pub reason: String,
    /// The failure underneath (reading the file, parsing it, running the helper), if any.
    #[source]
    pub cause: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl AuthError {
    /// `path` cannot be used because of `reason`.
    fn new(path: String, reason: impl Into<String>) -> AuthError {
        AuthError {
            path,
            reason: reason.into(),
            cause: None,
        }
    }

    /// `path` cannot be used because of `reason`, which `cause` explains.
    fn caused(
        path: String,
        reason: impl Into<String>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> AuthError {
        AuthError {
            cause: Some(Arc::new(cause)),
            ..AuthError::new(path, reason)
        }
    }
}

#[derive(serde::Deserialize, Default)]
struct AuthFile {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
    #[serde(default, rename = "credHelpers")]
    cred_helpers: BTreeMap<String, String>,
    #[serde(default, rename = "credsStore")]
    creds_store: Option<String>,
}

#[derive(serde::Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    identitytoken: Option<String>,
}

/// What one auth file says.
#[derive(Debug, Clone)]
struct FileData {
    path: PathBuf,
    entries: BTreeMap<String, Credentials>,
    helpers: BTreeMap<String, String>,
    store: Option<String>,
}

#[derive(Debug, Clone, Default)]
enum Mode {
    /// Look in the auth files.
    #[default]
    Files,
    /// `--creds`: these for every registry.
    Fixed(Credentials),
    /// `--no-creds`: anonymous everywhere.
    Anonymous,
}

type HelperCache = Arc<Mutex<HashMap<(String, String), Option<Credentials>>>>;

/// Where a run's credentials come from.
#[derive(Debug, Clone, Default)]
pub struct AuthStore {
    mode: Mode,
    files: Vec<FileData>,
    helper_cache: HelperCache,
}

/// Normalises an auth-file key: strips a scheme and trailing `/v1/`/`/v2/`, maps Docker Hub
/// aliases to `docker.io`.
fn normalize_key(key: &str) -> String {
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let key = key
        .trim_end_matches('/')
        .trim_end_matches("/v1")
        .trim_end_matches("/v2");
    match key.split_once('/') {
        Some((host, rest)) => format!("{}/{rest}", hub_alias(host)),
        None => hub_alias(key).to_string(),
    }
}

fn hub_alias(host: &str) -> &str {
    match host {
        "index.docker.io" | "registry-1.docker.io" => "docker.io",
        h => h,
    }
}

impl AuthStore {
    /// Loads an explicit auth file (which must exist), or every file of the lookup order
    /// that exists.
    pub fn load(explicit: Option<&Path>) -> Result<AuthStore, AuthError> {
        if let Some(path) = explicit {
            return AuthStore::read(path);
        }
        let mut store = AuthStore::default();
        for path in default_paths() {
            if path.is_file() {
                store.files.push(read_file(&path)?);
            }
        }
        Ok(store)
    }

    /// Reads one auth file.
    pub fn read(path: &Path) -> Result<AuthStore, AuthError> {
        Ok(AuthStore {
            files: vec![read_file(path)?],
            ..AuthStore::default()
        })
    }

    /// `--creds USER[:PASSWORD]`: the same credentials for every registry.
    pub fn with_creds(user_pass: &str) -> Result<AuthStore, AuthError> {
        let (username, password) = user_pass
            .split_once(':')
            .ok_or_else(|| AuthError::new("--creds".to_string(), "expected USER:PASSWORD"))?;
        if username.is_empty() {
            return Err(AuthError::new(
                "--creds".to_string(),
                "the user name is empty",
            ));
        }
        Ok(AuthStore {
            mode: Mode::Fixed(Credentials {
                username: username.to_string(),
                password: password.to_string(),
            }),
            ..AuthStore::default()
        })
    }

    /// `--no-creds`: anonymous access everywhere, whatever the auth files say.
    pub fn anonymous() -> AuthStore {
        AuthStore {
            mode: Mode::Anonymous,
            ..AuthStore::default()
        }
    }

    /// The first file credentials are looked up in, if any.
    pub fn path(&self) -> Option<&Path> {
        self.files.first().map(|f| f.path.as_path())
    }

    /// The credentials for a reference's repository, or `None` for anonymous access. May run
    /// a credential helper (once per helper and registry for the store's lifetime).
    pub fn lookup(&self, reference: &RegistryRef) -> Result<Option<Credentials>, AuthError> {
        match &self.mode {
            Mode::Anonymous => return Ok(None),
            Mode::Fixed(c) => return Ok(Some(c.clone())),
            Mode::Files => {}
        }
        let host = reference.registry.as_str();
        for file in &self.files {
            if let Some(helper) = file.helpers.get(host) {
                if let Some(c) = self.helper(helper, host)? {
                    return Ok(Some(c));
                }
                continue;
            }
            let mut key = format!("{host}/{}", reference.repository);
            loop {
                if let Some(c) = file.entries.get(&key) {
                    return Ok(Some(c.clone()));
                }
                match key.rsplit_once('/') {
                    Some((parent, _)) => key = parent.to_string(),
                    None => break,
                }
            }
            // A default store whose helper is not installed (a Docker Desktop config copied
            // elsewhere) answers nothing; a helper named for this host must work.
            if let Some(store) = &file.store {
                match self.helper(store, host) {
                    Ok(Some(c)) => return Ok(Some(c)),
                    Ok(None) => {}
                    Err(e) if e.reason.starts_with(NOT_INSTALLED) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(None)
    }

    fn helper(&self, name: &str, host: &str) -> Result<Option<Credentials>, AuthError> {
        let key = (name.to_string(), host.to_string());
        if let Some(c) = self
            .helper_cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Ok(c.clone());
        }
        let found = run_helper(name, host)?;
        self.helper_cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, found.clone());
        Ok(found)
    }
}

fn read_file(path: &Path) -> Result<FileData, AuthError> {
    let name = || format!("auth file {}", path.display());
    let err = |reason: String| AuthError::new(name(), reason);
    let text = std::fs::read(path).map_err(|e| AuthError::caused(name(), "cannot read", e))?;
    let not_json = |e| AuthError::caused(name(), "not valid JSON", e);
    // ~/.dockercfg is the legacy format: the `auths` map at the top level.
    let legacy = path.file_name().is_some_and(|n| n == ".dockercfg");
    let file: AuthFile = if legacy {
        AuthFile {
            auths: serde_json::from_slice(&text).map_err(not_json)?,
            ..AuthFile::default()
        }
    } else {
        serde_json::from_slice(&text).map_err(not_json)?
    };
    let mut entries = BTreeMap::new();
    for (key, entry) in file.auths {
        if let Some(token) = entry.identitytoken.filter(|t| !t.is_empty()) {
            entries.insert(
                normalize_key(&key),
                Credentials {
                    username: IDENTITY_TOKEN_USER.to_string(),
                    password: token,
                },
            );
            continue;
        }
        let Some(auth) = entry.auth.filter(|a| !a.is_empty()) else {
            continue;
        };
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(auth.trim())
            .map_err(|_| err(format!("the 'auth' value for '{key}' is not base64")))?;
        let decoded = String::from_utf8(decoded)
            .map_err(|_| err(format!("the 'auth' value for '{key}' is not UTF-8")))?;
        let (username, password) = decoded
            .split_once(':')
            .ok_or_else(|| err(format!("the 'auth' value for '{key}' is not USER:PASSWORD")))?;
        entries.insert(
            normalize_key(&key),
            Credentials {
                username: username.to_string(),
                password: password.to_string(),
            },
        );
    }
    let helpers = file
        .cred_helpers
        .into_iter()
        .map(|(k, v)| (normalize_key(&k), v))
        .collect();
    Ok(FileData {
        path: path.to_path_buf(),
        entries,
        helpers,
        store: file.creds_store.filter(|s| !s.is_empty()),
    })
}

/// Runs `docker-credential-<name> get` with the server URL on standard input (Docker's
/// credential-helper protocol). "credentials not found" is `None`; anything else that goes
/// wrong is an error naming the helper (never its output's secret).
fn run_helper(name: &str, host: &str) -> Result<Option<Credentials>, AuthError> {
    let helper = Helper {
        program: format!("docker-credential-{name}"),
    };
    if name.is_empty() || name.contains(['/', '\\']) {
        return Err(helper.err("not a valid credential helper name"));
    }
    let server = if host == "docker.io" {
        "https://index.docker.io/v1/"
    } else {
        host
    };
    let mut child = helper.spawn(server)?;
    let status = helper.wait(&mut child)?;
    let (stdout, stderr) = read_output(&mut child);
    if !status.success() {
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        );
        if said.to_ascii_lowercase().contains("credentials not found") {
            return Ok(None);
        }
        return Err(helper.err(format!(
            "'get' for {server} failed with {status}: {}",
            said.trim().chars().take(200).collect::<String>()
        )));
    }
    helper.answer(server, &stdout)
}

/// One credential helper program.
struct Helper {
    program: String,
}

impl Helper {
    fn err(&self, reason: impl Into<String>) -> AuthError {
        AuthError::new(format!("credential helper {}", self.program), reason)
    }

    fn caused(&self, reason: &str, cause: std::io::Error) -> AuthError {
        AuthError::caused(format!("credential helper {}", self.program), reason, cause)
    }

    /// Starts `<program> get` and writes `server` to its standard input.
    fn spawn(&self, server: &str) -> Result<Child, AuthError> {
        let mut child = Command::new(&self.program)
            .arg("get")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    self.err(format!("{NOT_INSTALLED} (not found on PATH)"))
                } else {
                    self.caused("cannot run it", e)
                }
            })?;
        if let Some(mut stdin) = child.stdin.take() {
            // A helper that exits without reading its input is judged by its exit status.
            let _ = stdin.write_all(server.as_bytes());
        }
        Ok(child)
    }

    /// Waits at most [`HELPER_TIMEOUT`] for the helper to exit; kills it after that.
    fn wait(&self, child: &mut Child) -> Result<ExitStatus, AuthError> {
        let started = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return Ok(status),
                Ok(None) if started.elapsed() < HELPER_TIMEOUT => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(self.err(format!("no answer within {}s", HELPER_TIMEOUT.as_secs())));
                }
                Err(e) => return Err(self.caused("cannot wait for it", e)),
            }
        }
    }

    /// The credentials in a successful helper's output; an empty secret is none.
    fn answer(&self, server: &str, stdout: &[u8]) -> Result<Option<Credentials>, AuthError> {
        #[derive(serde::Deserialize)]
        struct Answer {
            #[serde(rename = "Username", default)]
            username: String,
            #[serde(rename = "Secret", default)]
            secret: String,
        }
        let answer: Answer = serde_json::from_slice(stdout).map_err(|_| {
            self.err(format!(
                "'get' for {server} did not print the expected JSON"
            ))
        })?;
        if answer.secret.is_empty() {
            return Ok(None);
        }
        Ok(Some(Credentials {
            username: answer.username,
            password: answer.secret,
        }))
    }
}

/// What an exited helper printed: at most 1 MiB of standard output, 64 KiB of standard error.
fn read_output(child: &mut Child) -> (Vec<u8>, Vec<u8>) {
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    if let Some(out) = child.stdout.take() {
        let _ = out.take(1 << 20).read_to_end(&mut stdout);
    }
    if let Some(e) = child.stderr.take() {
        let _ = e.take(1 << 16).read_to_end(&mut stderr);
    }
    (stdout, stderr)
}

fn default_paths() -> Vec<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = env("HOME");
    let mut paths = Vec::new();
    if let Some(p) = env("REGISTRY_AUTH_FILE") {
        paths.push(p);
    }
    if let Some(p) = env("XDG_RUNTIME_DIR") {
        paths.push(p.join("containers/auth.json"));
    }
    match (env("XDG_CONFIG_HOME"), &home) {
        (Some(p), _) => paths.push(p.join("containers/auth.json")),
        (None, Some(h)) => paths.push(h.join(".config/containers/auth.json")),
        _ => {}
    }
    match (env("DOCKER_CONFIG"), &home) {
        (Some(p), _) => paths.push(p.join("config.json")),
        (None, Some(h)) => paths.push(h.join(".docker/config.json")),
        _ => {}
    }
    if let Some(h) = &home {
        paths.push(h.join(".dockercfg"));
    }
    paths
}

/// TLS material for one registry host (containers-certs.d(5)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// Extra CA certificates (`*.crt`), trusted in addition to the system roots.
    pub ca_files: Vec<PathBuf>,
    /// Client certificate and key pairs (`NAME.cert` with `NAME.key`).
    pub client_pairs: Vec<(PathBuf, PathBuf)>,
}

/// The system-wide certs.d roots, searched in this order.
pub const CERTS_D_ROOTS: [&str; 2] = ["/etc/containers/certs.d", "/etc/docker/certs.d"];

impl TlsFiles {
    /// TLS files for `host` (`host[:port]`): `cert_dir` alone when given (`--cert-dir`), else
    /// `<root>/<host>` under each of `roots` (normally [`CERTS_D_ROOTS`]).
    pub fn find(host: &str, cert_dir: Option<&Path>, roots: &[PathBuf]) -> TlsFiles {
        let dirs: Vec<PathBuf> = match cert_dir {
            Some(d) => vec![d.to_path_buf()],
            None => roots
                .iter()
                .filter(|_| !host.is_empty() && !host.contains(['/', '\\']) && host != "..")
                .map(|r| r.join(host))
                .collect(),
        };
        let mut files = TlsFiles::default();
        for dir in dirs {
            let Ok(read) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut names: Vec<PathBuf> = read.flatten().map(|e| e.path()).collect();
            names.sort();
            for path in names {
                match path.extension().and_then(|e| e.to_str()) {
                    Some("crt") => files.ca_files.push(path),
                    Some("cert") => {
                        let key = path.with_extension("key");
                        if key.is_file() {
                            files.client_pairs.push((path, key));
                        }
                    }
                    _ => {}
                }
            }
        }
        files
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::ImageRef;

    fn reg(s: &str) -> RegistryRef {
        match s.parse::<ImageRef>().unwrap() {
            ImageRef::Registry(r) => r,
            _ => unreachable!(),
        }
    }

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn most_specific_key_wins() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        let json = format!(
            r#"{{"auths":{{
                "quay.io":{{"auth":"{}"}},
                "quay.io/team":{{"auth":"{}"}},
                "quay.io/team/special":{{"auth":"{}"}},
                "https://index.docker.io/v1/":{{"auth":"{}"}},
                "empty.example":{{}}
            }}}}"#,
            b64("all:Secret-One"),
            b64("team:Secret-Two"),
            b64("special:Secret-Three"),
            b64("hub:p4:with:colons")
        );
        std::fs::write(&path, json).unwrap();
        let store = AuthStore::read(&path).unwrap();
        let user = |r: &str| store.lookup(&reg(r)).unwrap().map(|c| c.username);
        assert_eq!(user("quay.io/other/img"), Some("all".into()));
        assert_eq!(user("quay.io/team/img"), Some("team".into()));
        assert_eq!(user("quay.io/team/special"), Some("special".into()));
        assert_eq!(user("busybox"), Some("hub".into()));
        assert_eq!(
            store.lookup(&reg("busybox")).unwrap().unwrap().password,
            "p4:with:colons"
        );
        assert_eq!(user("empty.example/x"), None);
        assert_eq!(user("ghcr.io/x"), None);
        let debug = format!("{:?}", store);
        assert!(
            !debug.contains("Secret-One") && !debug.contains("Secret-Three"),
            "{debug}"
        );
    }

    #[test]
    fn bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        for (content, want) in [
            ("{", "not valid JSON"),
            (r#"{"auths":{"x":{"auth":"!!"}}}"#, "not base64"),
            (
                &format!(r#"{{"auths":{{"x":{{"auth":"{}"}}}}}}"#, b64("nocolon")),
                "USER:PASSWORD",
            ),
        ] {
            std::fs::write(&path, content).unwrap();
            let err = AuthStore::read(&path).unwrap_err().to_string();
            assert!(err.contains("auth.json") && err.contains(want), "{err}");
        }
        let err = AuthStore::load(Some(&dir.path().join("missing.json"))).unwrap_err();
        assert!(err.to_string().contains("missing.json"));
    }
    #[test]
    fn identity_tokens_legacy_files_and_modes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(
            &path,
            r#"{"auths":{"reg.example":{"auth":"","identitytoken":"refresh-secret"}},
                "credHelpers":{"helped.example":"imgcheck-test-none"}}"#,
        )
        .unwrap();
        let store = AuthStore::read(&path).unwrap();
        let c = store.lookup(&reg("reg.example/a/b")).unwrap().unwrap();
        assert!(c.is_identity_token());
        assert_eq!(c.password, "refresh-secret");
        // A helper that is not installed is a named error, never a silent anonymous pull.
        let err = store.lookup(&reg("helped.example/x")).unwrap_err();
        assert!(
            err.to_string()
                .contains("docker-credential-imgcheck-test-none"),
            "{err}"
        );

        // A default store whose helper is missing answers nothing.
        let store_path = dir.path().join("store.json");
        std::fs::write(&store_path, r#"{"credsStore":"imgcheck-test-none"}"#).unwrap();
        let store = AuthStore::read(&store_path).unwrap();
        assert_eq!(store.lookup(&reg("any.example/x")).unwrap(), None);

        let legacy = dir.path().join(".dockercfg");
        std::fs::write(
            &legacy,
            format!(
                r#"{{"old.example":{{"auth":"{}","email":"x"}}}}"#,
                b64("u:legacy-pw")
            ),
        )
        .unwrap();
        let store = AuthStore::read(&legacy).unwrap();
        assert_eq!(
            store
                .lookup(&reg("old.example/r"))
                .unwrap()
                .unwrap()
                .password,
            "legacy-pw"
        );

        let fixed = AuthStore::with_creds("me:pa:ss").unwrap();
        let c = fixed.lookup(&reg("any.example/r")).unwrap().unwrap();
        assert_eq!((c.username.as_str(), c.password.as_str()), ("me", "pa:ss"));
        assert!(!format!("{fixed:?}").contains("pa:ss"));
        assert!(AuthStore::with_creds("nocolon").is_err());
        assert!(AuthStore::with_creds(":pw").is_err());
        assert_eq!(
            AuthStore::anonymous()
                .lookup(&reg("old.example/r"))
                .unwrap(),
            None
        );
    }

    #[test]
    fn first_file_with_an_answer_wins() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.json");
        let b = dir.path().join("b.json");
        std::fs::write(
            &a,
            format!(
                r#"{{"auths":{{"one.example":{{"auth":"{}"}}}}}}"#,
                b64("a:1")
            ),
        )
        .unwrap();
        std::fs::write(
            &b,
            format!(
                r#"{{"auths":{{"one.example":{{"auth":"{}"}},"two.example":{{"auth":"{}"}}}}}}"#,
                b64("b:1"),
                b64("b:2")
            ),
        )
        .unwrap();
        let store = AuthStore {
            files: vec![read_file(&a).unwrap(), read_file(&b).unwrap()],
            ..AuthStore::default()
        };
        let user = |r: &str| store.lookup(&reg(r)).unwrap().map(|c| c.username);
        assert_eq!(user("one.example/x"), Some("a".into()));
        assert_eq!(user("two.example/x"), Some("b".into()));
        assert_eq!(store.path(), Some(a.as_path()));
    }

    #[test]
    fn certs_d_layout() {
        let dir = tempfile::tempdir().unwrap();
        let root1 = dir.path().join("containers");
        let root2 = dir.path().join("docker");
        let host = root1.join("reg.example:5000");
        std::fs::create_dir_all(&host).unwrap();
        std::fs::create_dir_all(root2.join("reg.example:5000")).unwrap();
        for f in [
            "ca.crt",
            "client.cert",
            "client.key",
            "lonely.cert",
            "notes.txt",
        ] {
            std::fs::write(host.join(f), "x").unwrap();
        }
        std::fs::write(root2.join("reg.example:5000/other.crt"), "x").unwrap();
        let roots = [root1.clone(), root2.clone()];
        let files = TlsFiles::find("reg.example:5000", None, &roots);
        assert_eq!(
            files.ca_files,
            vec![
                host.join("ca.crt"),
                root2.join("reg.example:5000/other.crt")
            ]
        );
        assert_eq!(
            files.client_pairs,
            vec![(host.join("client.cert"), host.join("client.key"))]
        );
        assert_eq!(
            TlsFiles::find("reg.example", None, &roots),
            TlsFiles::default()
        );
        assert_eq!(TlsFiles::find("../x", None, &roots), TlsFiles::default());
        // --cert-dir replaces the system directories.
        let only = TlsFiles::find(
            "reg.example:5000",
            Some(&root2.join("reg.example:5000")),
            &roots,
        );
        assert_eq!(
            only.ca_files,
            vec![root2.join("reg.example:5000/other.crt")]
        );
    }
}
