//! Where a run's credentials come from ([`AuthStore`]), and the lookup that answers "which
//! credentials for this reference?" in the order the module docs give.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::credentials::{AuthError, Credentials};
use super::file::{FileData, default_paths, read_file};
use super::helper::{NOT_INSTALLED, run_helper};
use crate::reference::RegistryRef;

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
        use base64::Engine as _;
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
}
