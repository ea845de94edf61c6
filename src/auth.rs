//! Registry credentials from containers-auth.json(5) / Docker config files.
//!
//! Lookup order (DOMAIN.md §6): `--authfile`, `REGISTRY_AUTH_FILE`,
//! `$XDG_RUNTIME_DIR/containers/auth.json`, `${XDG_CONFIG_HOME:-~/.config}/containers/auth.json`,
//! `$DOCKER_CONFIG/config.json` or `~/.docker/config.json`. Within a file the most specific key
//! wins: `host/namespace/repo`, then `host/namespace`, then `host`. Credentials never appear in
//! `Debug` output or messages.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use base64::Engine as _;

use crate::reference::RegistryRef;

/// A username and password (or token) for one registry.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// User name.
    pub username: String,
    /// Password or token. Never printed.
    pub password: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Credentials({}, <redacted>)", self.username)
    }
}

/// A credentials file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("auth file {path}: {reason}")]
pub struct AuthError {
    /// The file.
    pub path: String,
    /// What is wrong with it.
    pub reason: String,
}

#[derive(serde::Deserialize, Default)]
struct AuthFile {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
}

#[derive(serde::Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
}

/// The credentials found in one auth file (or none).
#[derive(Debug, Clone, Default)]
pub struct AuthStore {
    path: Option<PathBuf>,
    entries: BTreeMap<String, Credentials>,
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
    /// Loads the first auth file that exists in the lookup order, or an explicit one
    /// (which must exist).
    pub fn load(explicit: Option<&Path>) -> Result<AuthStore, AuthError> {
        if let Some(path) = explicit {
            return AuthStore::read(path);
        }
        for path in default_paths() {
            if path.is_file() {
                return AuthStore::read(&path);
            }
        }
        Ok(AuthStore::default())
    }

    /// Reads one auth file.
    pub fn read(path: &Path) -> Result<AuthStore, AuthError> {
        let err = |reason: String| AuthError {
            path: path.display().to_string(),
            reason,
        };
        let text = std::fs::read(path).map_err(|e| err(format!("cannot read: {e}")))?;
        let file: AuthFile =
            serde_json::from_slice(&text).map_err(|e| err(format!("not valid JSON: {e}")))?;
        let mut entries = BTreeMap::new();
        for (key, entry) in file.auths {
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
        Ok(AuthStore {
            path: Some(path.to_path_buf()),
            entries,
        })
    }

    /// The file the credentials came from, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The most specific credentials for a reference's repository.
    pub fn lookup(&self, reference: &RegistryRef) -> Option<&Credentials> {
        let mut key = format!("{}/{}", reference.registry, reference.repository);
        loop {
            if let Some(c) = self.entries.get(&key) {
                return Some(c);
            }
            match key.rsplit_once('/') {
                Some((parent, _)) => key = parent.to_string(),
                None => return None,
            }
        }
    }
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
    paths
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
            b64("all:p1"),
            b64("team:p2"),
            b64("special:p3"),
            b64("hub:p4:with:colons")
        );
        std::fs::write(&path, json).unwrap();
        let store = AuthStore::read(&path).unwrap();
        let user = |r: &str| store.lookup(&reg(r)).map(|c| c.username.clone());
        assert_eq!(user("quay.io/other/img"), Some("all".into()));
        assert_eq!(user("quay.io/team/img"), Some("team".into()));
        assert_eq!(user("quay.io/team/special"), Some("special".into()));
        assert_eq!(user("busybox"), Some("hub".into()));
        assert_eq!(
            store.lookup(&reg("busybox")).unwrap().password,
            "p4:with:colons"
        );
        assert_eq!(user("empty.example/x"), None);
        assert_eq!(user("ghcr.io/x"), None);
        let debug = format!("{:?}", store);
        assert!(!debug.contains("p1") && !debug.contains("p3"), "{debug}");
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
}
