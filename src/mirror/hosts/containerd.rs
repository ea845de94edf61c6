//! The manifest requests containerd 1.7 makes for one reference under a [`HostsConfig`]
//! (`remotes/docker/resolver.go`): the hosts of the source registry's hosts.toml in file
//! order, then its `server`; for a pull by digest those with `pull`, for a pull by tag those
//! with `pull` and `resolve` (`Resolve`, `filterHosts`); each request at
//! `scheme://host` + `path.Join(host path, source repository, "manifests", digest or tag)`
//! (`dockerBase.request`): the **source** repository, whatever the mirror.

use std::fmt;

use super::model::{Capabilities, HostsConfig, RegistryHost};
use crate::reference::RegistryRef;

/// Whether a request goes to a mirror or to the source registry itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptKind {
    /// A mirror (or a `server` that is not the source registry).
    Mirror,
    /// The source registry's own API (`https://HOST/v2`).
    Source,
}

impl AttemptKind {
    /// `mirror` or `source`.
    pub fn name(self) -> &'static str {
        match self {
            AttemptKind::Mirror => "mirror",
            AttemptKind::Source => "source",
        }
    }
}

impl fmt::Display for AttemptKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One manifest request of a pull, in the order the node makes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The full request URL.
    pub url: String,
    /// Mirror or source.
    pub kind: AttemptKind,
    /// The repository the URL names on a registry that serves its API at `/v2/` (what
    /// imgcheck asks for it); `None` when the host's path is not under `/v2`.
    pub repository: Option<RegistryRef>,
    /// What the host may be asked.
    pub capabilities: Capabilities,
    /// Its host sets `override_path = true`: its URL path is the API root as written.
    pub override_path: bool,
}

/// `path.Join` of Go: the parts joined by `/`, cleaned (empty and `.` segments dropped, `..`
/// removing the one before), always absolute.
pub fn join_path(parts: &[&str]) -> String {
    let mut segments: Vec<&str> = Vec::new();
    for part in parts {
        for s in part.split('/') {
            match s {
                "" | "." => {}
                ".." => {
                    segments.pop();
                }
                s => segments.push(s),
            }
        }
    }
    format!("/{}", segments.join("/"))
}

/// The manifest URL containerd requests from `host` for `repository` at `object` (a digest
/// or a tag).
pub fn manifest_url(host: &RegistryHost, repository: &str, object: &str) -> String {
    let path = join_path(&[&host.path, repository, "manifests", object]);
    format!("{}://{}{path}", host.scheme, host.host)
}

/// The repository a request to `host` for `repository` names, when the host serves the
/// registry API at `/v2/…`.
fn repository_at(host: &RegistryHost, repository: &str) -> Option<RegistryRef> {
    let path = join_path(&[&host.path]);
    let below = match path.strip_prefix("/v2") {
        Some("") => "",
        Some(rest) => rest.strip_prefix('/')?,
        None => return None,
    };
    let registry = match host.host.as_str() {
        "registry-1.docker.io" => "docker.io".to_string(),
        other => other.to_string(),
    };
    let repository = match below {
        "" => repository.to_string(),
        below => format!("{below}/{repository}"),
    };
    Some(RegistryRef {
        registry,
        repository,
        tag: None,
        digest: None,
    })
}

/// The object a pull of `reference` asks for: its digest, else its tag (`latest` when it has
/// neither).
pub fn object(reference: &RegistryRef) -> String {
    match (&reference.digest, &reference.tag) {
        (Some(d), _) => d.to_string(),
        (None, Some(t)) => t.clone(),
        (None, None) => "latest".into(),
    }
}

/// The hosts containerd tries for `reference` (its hosts.toml's hosts, then the server or
/// the registry itself), in order, with their capabilities.
pub fn hosts_for(config: &HostsConfig, reference: &RegistryRef) -> Vec<RegistryHost> {
    let Some(file) = config.file_for(&reference.registry) else {
        return vec![RegistryHost::default_for(&reference.registry)];
    };
    let server = file
        .server
        .clone()
        .unwrap_or_else(|| RegistryHost::default_for(&reference.registry));
    file.hosts.iter().cloned().chain([server]).collect()
}

/// The manifest requests of a pull of `reference` by digest (`by_digest`) or by tag, in
/// order, at `object` (digest or tag).
pub fn attempts(
    config: &HostsConfig,
    reference: &RegistryRef,
    by_digest: bool,
    object: &str,
) -> Vec<Attempt> {
    let source = RegistryHost::default_for(&reference.registry);
    hosts_for(config, reference)
        .into_iter()
        .filter(|h| h.capabilities.serves(by_digest))
        .map(|h| Attempt {
            url: manifest_url(&h, &reference.repository, object),
            kind: if h.host == source.host && join_path(&[&h.path]) == "/v2" {
                AttemptKind::Source
            } else {
                AttemptKind::Mirror
            },
            repository: repository_at(&h, &reference.repository),
            capabilities: h.capabilities,
            override_path: h.override_path,
        })
        .collect()
}
