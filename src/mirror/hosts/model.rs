//! The rendered `hosts.toml` files as data: per source registry host, the registry hosts
//! containerd tries in order, each with its URL, capabilities and `override_path`, the
//! `server` last (containerd `remotes/docker/config/hosts.go`, `parseHostsFile` and
//! `parseHostConfig`).

use std::collections::BTreeMap;

/// What a registry host may be asked (containerd `docker.HostCapabilities`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// `pull`: fetch content by digest.
    pub pull: bool,
    /// `resolve`: turn a tag into a digest.
    pub resolve: bool,
    /// `push`.
    pub push: bool,
}

impl Capabilities {
    /// Every capability: what containerd gives a host whose `capabilities` are not set.
    pub const ALL: Capabilities = Capabilities {
        pull: true,
        resolve: true,
        push: true,
    };
    /// `["pull"]`: what WMCO writes for an ImageDigestMirrorSet mirror.
    pub const PULL: Capabilities = Capabilities {
        pull: true,
        resolve: false,
        push: false,
    };
    /// `["pull", "resolve"]`: what WMCO writes for an ImageTagMirrorSet mirror.
    pub const PULL_RESOLVE: Capabilities = Capabilities {
        pull: true,
        resolve: true,
        push: false,
    };

    /// Is the host asked for a pull by digest (`true`: it needs `pull`) or by tag (`false`:
    /// `pull` and `resolve`)? containerd `remotes/docker/resolver.go`, `Resolve` and
    /// `filterHosts`.
    pub fn serves(self, by_digest: bool) -> bool {
        self.pull && (by_digest || self.resolve)
    }

    /// The capability names, as hosts.toml spells them.
    pub fn names(self) -> Vec<&'static str> {
        [
            (self.pull, "pull"),
            (self.resolve, "resolve"),
            (self.push, "push"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }
}

/// One registry host of a hosts.toml, as containerd builds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryHost {
    /// `https` or `http`.
    pub scheme: String,
    /// `host[:port]`.
    pub host: String,
    /// The API root path: the URL's path (cleaned), with `/v2` appended unless it ends with
    /// `/v2` or `override_path` is set.
    pub path: String,
    /// What it may be asked.
    pub capabilities: Capabilities,
    /// `override_path = true` was set.
    pub override_path: bool,
}

impl RegistryHost {
    /// The default host of a registry without configuration: `https://HOST/v2` with every
    /// capability, Docker Hub at `registry-1.docker.io` (containerd `ConfigureHosts`).
    pub fn default_for(registry: &str) -> RegistryHost {
        let host = match registry {
            "docker.io" => "registry-1.docker.io",
            other => other,
        };
        RegistryHost {
            scheme: "https".into(),
            host: host.into(),
            path: "/v2".into(),
            capabilities: Capabilities::ALL,
            override_path: false,
        }
    }

    /// `scheme://host/path`, the prefix of every request URL.
    pub fn base(&self) -> String {
        format!("{}://{}{}", self.scheme, self.host, self.path)
    }
}

/// The `hosts.toml` of one source registry host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostsFile {
    /// Where it comes from: the file, or the mirror sets WMCO renders it from.
    pub origin: String,
    /// The `[host."…"]` entries, in file order.
    pub hosts: Vec<RegistryHost>,
    /// The `server`, tried last; `None`: the registry itself ([`RegistryHost::default_for`]).
    pub server: Option<RegistryHost>,
    /// The file has a `host` table (`[host."URL"]` entries, or an empty `[host]`): without
    /// one, containerd 1.5 – 1.7.31 refuse the whole file and ignore its `server`
    /// (`containerd.rs`, `HostsReader`).
    pub host_table: bool,
}

/// Who wrote the hosts.toml files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfiguredBy {
    /// Rendered by WMCO from the ImageDigestMirrorSets and ImageTagMirrorSets given.
    Wmco,
    /// Read from a `config_path` directory (`--hosts-dir`).
    Directory,
}

/// containerd's `config_path` tree: a hosts.toml per source registry host (`host[:port]`),
/// and `_default`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostsConfig {
    /// Who wrote it.
    pub configured_by: ConfiguredBy,
    /// By folder name, as a node looks them up ([`host_paths`]): a source registry host
    /// without a port, `host_port_`, `hostport`, `_default`.
    pub files: BTreeMap<String, HostsFile>,
    /// Source registry hosts whose hosts.toml a node cannot use, and why (WMCO names the
    /// folder of a source with a port `host:port`).
    pub unusable: BTreeMap<String, String>,
}

impl HostsConfig {
    /// An empty tree written by `configured_by`.
    pub fn new(configured_by: ConfiguredBy) -> HostsConfig {
        HostsConfig {
            configured_by,
            files: BTreeMap::new(),
            unusable: BTreeMap::new(),
        }
    }

    /// The hosts.toml containerd reads for `registry` (`host[:port]`): the one of the first
    /// folder of [`host_paths`] there is.
    pub fn file_for(&self, registry: &str) -> Option<&HostsFile> {
        host_paths(registry).iter().find_map(|f| self.files.get(f))
    }
}

/// The folders a Windows node looks up for `registry` (`host[:port]`), in order (containerd
/// 1.7 `config_windows.go` `hostPaths`, `hosts.go` `hostDirectory`): `host_port_` (from the
/// last `:`), then the host with every `:` taken out, then `_default`.
pub fn host_paths(registry: &str) -> Vec<String> {
    let mut paths = Vec::new();
    if let Some(i) = registry.rfind(':').filter(|i| *i > 0) {
        let folder = format!("{}_{}_", &registry[..i], &registry[i + 1..]);
        paths.push(folder.replace(':', ""));
    }
    paths.push(registry.replace(':', ""));
    paths.push("_default".to_string());
    paths
}
