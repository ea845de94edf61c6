//! registries.d(5): where containers/image looks for signatures of an image
//! (`docker/registries_d.go`). Every `*.yaml` file of the directory is read; a scope (or
//! `default-docker`) set in two files is an error, as there. What matters for `sigstoreSigned`
//! is `use-sigstore-attachments`: without it (the default is false) sigstore signatures are
//! not read at all and the requirement finds none. `lookaside` serves GPG signatures
//! (`signedBy`) only, and is recorded, not read.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::scope::search_order;
use crate::input::InputError;
use crate::reference::RegistryRef;

/// The registries.d configuration a node has (`--registries-d`), plus the scopes MCO marks
/// for `ClusterImagePolicy` (their mirrors get `use-sigstore-attachments: true` too).
#[derive(Debug, Clone, Default)]
pub struct RegistriesD {
    /// `default-docker.use-sigstore-attachments`.
    default: Option<bool>,
    /// `docker.<scope>.use-sigstore-attachments`.
    docker: BTreeMap<String, Option<bool>>,
    /// Scopes of image policies: MCO's `generateSigstoreRegistriesdConfig` sets
    /// `use-sigstore-attachments: true` for each and for every mirror of it.
    policy_scopes: Vec<String>,
}

#[derive(Deserialize, Default)]
struct RawFile {
    #[serde(rename = "default-docker")]
    default_docker: Option<RawNamespace>,
    #[serde(default)]
    docker: BTreeMap<String, RawNamespace>,
}

#[derive(Deserialize, Default)]
struct RawNamespace {
    #[serde(rename = "use-sigstore-attachments")]
    use_sigstore_attachments: Option<bool>,
}

/// The most files read from the directory, and the largest file.
const MAX_FILES: usize = 1000;
const MAX_FILE_BYTES: u64 = 1024 * 1024;

impl RegistriesD {
    /// Reads every `*.yaml` file of `dir` (sorted by name).
    pub fn load(dir: &Path) -> Result<RegistriesD, InputError> {
        let origin = |p: &Path| format!("--registries-d {}", p.display());
        let entries = std::fs::read_dir(dir)
            .map_err(|e| InputError::new(origin(dir), "cannot read the directory").caused_by(e))?;
        let mut files: Vec<_> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .take(MAX_FILES + 1)
            .collect();
        if files.len() > MAX_FILES {
            return Err(InputError::new(
                origin(dir),
                format!("more than {MAX_FILES} .yaml files"),
            ));
        }
        files.sort();
        let mut out = RegistriesD::default();
        for file in files {
            let text = crate::input::read_file(&file, MAX_FILE_BYTES)
                .map_err(|e| InputError::new(origin(&file), e.reason))?;
            out.add(&text)
                .map_err(|e| InputError::new(origin(&file), e))?;
        }
        Ok(out)
    }

    /// Adds one file's `text`.
    pub fn add(&mut self, text: &str) -> Result<(), String> {
        crate::yaml::check_yaml(text).map_err(|e| e.to_string())?;
        let raw: Option<RawFile> =
            serde_yaml_ng::from_str(text).map_err(|e| format!("not a registries.d file: {e}"))?;
        let raw = raw.unwrap_or_default();
        if let Some(d) = raw.default_docker {
            if self.default.is_some() {
                return Err("default-docker is set in another file too".into());
            }
            self.default = Some(d.use_sigstore_attachments.unwrap_or(false));
        }
        for (scope, ns) in raw.docker {
            if self.docker.contains_key(&scope) {
                return Err(format!("docker scope {scope:?} is set in another file too"));
            }
            self.docker.insert(scope, ns.use_sigstore_attachments);
        }
        Ok(())
    }

    /// Marks an image policy's scope as MCO does for it and its mirrors.
    pub fn add_policy_scope(&mut self, scope: &str) {
        self.policy_scopes.push(scope.to_string());
    }

    /// Are sigstore signatures read when pulling from `physical` (the repository asked,
    /// a mirror or the source) an image named `logical`?
    pub fn use_sigstore_attachments(&self, logical: &RegistryRef, physical: &RegistryRef) -> bool {
        let logical_keys = search_order(logical);
        if (self.policy_scopes.iter()).any(|s| logical_keys.contains(s)) {
            return true;
        }
        let found = search_order(physical)
            .iter()
            .find_map(|k| self.docker.get(k).copied().flatten());
        found.or(self.default).unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> RegistryRef {
        RegistryRef::parse_pull_spec(s).unwrap()
    }

    /// containers/image `useSigstoreAttachments` (docker/registries_d.go): identity, then
    /// namespaces, then `default-docker`, else false; looked up for the repository pulled
    /// from. MCO's scopes cover their mirrors.
    #[test]
    fn attachments_are_looked_up_for_the_repository_pulled_from() {
        let mut d = RegistriesD::default();
        let (src, mirror) = (r("q.io/a/b:v1"), r("mirror.local/a/b:v1"));
        assert!(!d.use_sigstore_attachments(&src, &src));
        d.add("docker:\n  q.io/a:\n    use-sigstore-attachments: true\n  q.io/a/c:\n    lookaside: https://x\n")
            .unwrap();
        assert!(d.use_sigstore_attachments(&src, &src));
        assert!(!d.use_sigstore_attachments(&src, &mirror));
        d.add("default-docker:\n  use-sigstore-attachments: true\n")
            .unwrap();
        assert!(d.use_sigstore_attachments(&src, &mirror));
        assert!(d.add("default-docker: {}\n").is_err());
        assert!(d.add("docker:\n  q.io/a: {}\n").is_err());
        let mut mco = RegistriesD::default();
        mco.add_policy_scope("q.io/a");
        assert!(mco.use_sigstore_attachments(&src, &mirror));
        assert!(!mco.use_sigstore_attachments(&r("q.io/z:v1"), &r("q.io/z:v1")));
    }
}
