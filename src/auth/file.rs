//! Auth files: containers-auth.json(5), Docker's `config.json` and the legacy
//! `~/.dockercfg`, where they are looked for, and what one says.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use base64::Engine as _;

use super::credentials::{AuthError, Credentials, IDENTITY_TOKEN_USER};

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
pub(super) struct FileData {
    pub(super) path: PathBuf,
    /// Credentials by normalised key (`host`, `host/namespace`, …).
    pub(super) entries: BTreeMap<String, Credentials>,
    /// `credHelpers`: helper names by host.
    pub(super) helpers: BTreeMap<String, String>,
    /// `credsStore`: the default helper.
    pub(super) store: Option<String>,
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

/// The largest auth file read: 16 MiB. Real ones hold a few entries (a few KiB); the cap
/// keeps a wrong path (`/dev/zero`, a FIFO fed forever) from growing without end.
const MAX_AUTH_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Reads (at most [`MAX_AUTH_FILE_BYTES`]) and decodes one auth file.
pub(super) fn read_file(path: &Path) -> Result<FileData, AuthError> {
    let name = || format!("auth file {}", path.display());
    let err = |reason: String| AuthError::new(name(), reason);
    let mut text = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_AUTH_FILE_BYTES + 1).read_to_end(&mut text))
        .map_err(|e| AuthError::caused(name(), "cannot read", e))?;
    if text.len() as u64 > MAX_AUTH_FILE_BYTES {
        return Err(err(format!(
            "larger than {} MiB: not an auth file",
            MAX_AUTH_FILE_BYTES >> 20
        )));
    }
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

/// The auth files of the lookup order, whether or not they exist.
pub(super) fn default_paths() -> Vec<PathBuf> {
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

#[cfg(test)]
mod tests {
    use super::super::store::AuthStore;

    fn b64(s: &str) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(s)
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
    fn endless_files_stop_at_the_cap() {
        // /dev/zero never ends: the read stops one byte past the cap and says so.
        let err = AuthStore::read(std::path::Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("/dev/zero") && err.contains("larger than 16 MiB"),
            "{err}"
        );
    }
}
