//! The manifest requests containerd 1.7 makes for one reference under a [`HostsConfig`]
//! (`remotes/docker/resolver.go`): the hosts of the source registry's hosts.toml in file
//! order, then its `server`; for a pull by digest those with `pull`, for a pull by tag those
//! with `pull` and `resolve` (`Resolve`, `filterHosts`); each request at
//! `scheme://host` + `path.Join(host path, source repository, "manifests", digest or tag)`
//! (`dockerBase.request`): the **source** repository, whatever the mirror. A file without a
//! `host` table is read as the node's containerd release reads it ([`HostsReader`]).

use std::fmt;

use super::model::{Capabilities, HostsConfig, HostsFile, RegistryHost};
use crate::platform::{ContainerdVersion, RuntimeProfile};
use crate::reference::RegistryRef;

/// The first containerd 1.7 release that reads a hosts.toml without a `host` table: v1.7.32
/// (its release notes: containerd#10028, commit 24007441d, "Fix error parsing hosts.toml
/// without any `host` tree"). containerd 2.0 and later read it with go-toml v2.
pub const READS_SERVER_ONLY_FROM: ContainerdVersion = (1, 7, 32);

/// How a containerd release reads a hosts.toml that has no `host` table (only `server` and
/// other top-level fields): the one place where releases read the same file differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostsReader {
    /// containerd 1.5 – 1.7.31 (go-toml v1, `remotes/docker/config/hosts.go`):
    /// `getSortedHosts` fails ("invalid `host` tree"), `loadHostDir` logs it and reads the
    /// folder for certificates only (`loadCertFiles`): the registry itself, `server` ignored.
    IgnoresServerOnly,
    /// containerd 1.7.32 and later 1.7, 2.0 and later (`core/remotes/docker/config/hosts.go`
    /// `getSortedHosts` with go-toml v2: no `[host."…"]` header is no hosts): the `server` is
    /// asked.
    ReadsServerOnly,
}

impl HostsReader {
    /// How the releases of `profile` read such a file: [`HostsReader::IgnoresServerOnly`] when
    /// any release it covers ignores it (the `containerd-1.7` row covers 1.7.0 – 1.7.31 too);
    /// `None` for a runtime that reads no hosts.toml (Docker Engine, CRI-O).
    pub fn of(profile: RuntimeProfile) -> Option<HostsReader> {
        match profile.releases() {
            Some((first, _)) if first < READS_SERVER_ONLY_FROM => {
                Some(HostsReader::IgnoresServerOnly)
            }
            Some(_) => Some(HostsReader::ReadsServerOnly),
            None if RuntimeProfile::CONTAINERD.contains(&profile) => {
                Some(HostsReader::ReadsServerOnly)
            }
            None => None,
        }
    }

    /// How the nodes under `runtimes` read such a file, taken as the strictest of them (a
    /// node that ignores the `server` pulls from the source), with the profiles that ignore
    /// it.
    pub fn of_nodes(runtimes: &[RuntimeProfile]) -> (HostsReader, Vec<RuntimeProfile>) {
        let ignoring: Vec<RuntimeProfile> = (runtimes.iter().copied())
            .filter(|p| HostsReader::of(*p) == Some(HostsReader::IgnoresServerOnly))
            .collect();
        match ignoring.is_empty() {
            true => (HostsReader::ReadsServerOnly, ignoring),
            false => (HostsReader::IgnoresServerOnly, ignoring),
        }
    }

    /// Whether this reader ignores `file`'s `server`: it has one and no `host` table.
    pub fn ignores_server_of(self, file: &HostsFile) -> bool {
        self == HostsReader::IgnoresServerOnly && file.server.is_some() && !file.host_table
    }
}

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
/// the registry itself), in order, with their capabilities, as `reader` reads the file.
pub fn hosts_for(
    config: &HostsConfig,
    reference: &RegistryRef,
    reader: HostsReader,
) -> Vec<RegistryHost> {
    let source = RegistryHost::default_for(&reference.registry);
    let Some(file) = config.file_for(&reference.registry) else {
        return vec![source];
    };
    if reader.ignores_server_of(file) {
        return vec![source];
    }
    let server = file.server.clone().unwrap_or(source);
    file.hosts.iter().cloned().chain([server]).collect()
}

/// The manifest requests of a pull of `reference` by digest (`by_digest`) or by tag, in
/// order, at `object` (digest or tag), by nodes whose containerd reads the files as `reader`.
pub fn attempts(
    config: &HostsConfig,
    reference: &RegistryRef,
    (by_digest, object): (bool, &str),
    reader: HostsReader,
) -> Vec<Attempt> {
    let source = RegistryHost::default_for(&reference.registry);
    hosts_for(config, reference, reader)
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
