//! Per-OS pull plans (no network): the manifest requests a node makes for one reference, in
//! order, and the [`PullPlan`] the mirror check follows for it.
//!
//! - **Linux** nodes (CRI-O) read registries.conf, which the Machine Config Operator renders
//!   from IDMS, ITMS and ICSP: containers/image's rules ([`resolve`](super::resolve)).
//! - **Windows** nodes (containerd 1.7) read the hosts.toml files WMCO renders from IDMS and
//!   ITMS only, one per source registry host ([`hosts::wmco`](super::hosts::wmco)), or those
//!   of a `config_path` directory ([`hosts::dir`](super::hosts::dir)); containerd asks them as
//!   [`hosts::containerd`](super::hosts::containerd) says.

use std::fmt;

use super::config::{MirrorSet, MirrorSetKind, PullFrom};
use super::hosts::containerd::READS_SERVER_ONLY_FROM;
use super::hosts::containerd::{Attempt, AttemptKind, HostsReader, attempts, manifest_url, object};
use super::hosts::model::{Capabilities, ConfiguredBy, HostsConfig, HostsFile, RegistryHost};
use super::plan::{PullPlan, plan};
use super::resolve::{MirrorLocation, MirrorResolution, match_prefix};
use crate::engine::{Finding, Rule, Severity};
use crate::platform::RuntimeProfile;
use crate::policy::Policy;
use crate::reference::RegistryRef;

/// The operating system of the nodes a plan is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NodeOs {
    /// OpenShift Linux nodes: CRI-O, registries.conf.
    Linux,
    /// OpenShift Windows nodes: containerd 1.7, hosts.toml.
    Windows,
}

impl NodeOs {
    /// `linux` or `windows`.
    pub fn name(self) -> &'static str {
        match self {
            NodeOs::Linux => "linux",
            NodeOs::Windows => "windows",
        }
    }

    /// The container runtime that pulls: `cri-o` or `containerd-1.7`.
    pub fn runtime(self) -> &'static str {
        match self {
            NodeOs::Linux => "cri-o",
            NodeOs::Windows => "containerd-1.7",
        }
    }

    /// `policy` narrowed to its hosts of this OS: what the nodes of this OS must be able to
    /// run.
    pub fn scope(self, policy: &Policy) -> Policy {
        let windows = self == NodeOs::Windows;
        policy.scoped(|h| h.platform.is_windows() == windows, policy.isolation())
    }

    /// The file the runtime reads its mirrors from: `registries.conf` or `hosts.toml`.
    pub fn configured_by(self) -> &'static str {
        match self {
            NodeOs::Linux => "registries.conf",
            NodeOs::Windows => "hosts.toml",
        }
    }
}

impl fmt::Display for NodeOs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The node OSes a run covers: those asked (`--os`), else those of the node list (`--nodes`),
/// else Linux, and Windows too when the policy has Windows hosts.
pub fn oses_in_scope(asked: &[NodeOs], policy: &Policy) -> Vec<NodeOs> {
    let mut oses: Vec<NodeOs> = match (asked.is_empty(), &policy.node_hosts) {
        (false, _) => asked.to_vec(),
        (true, Some(hosts)) => hosts
            .iter()
            .map(|h| match h.platform.is_windows() {
                true => NodeOs::Windows,
                false => NodeOs::Linux,
            })
            .collect(),
        (true, None) => {
            let windows = policy.hosts().iter().any(|h| h.platform.is_windows());
            [Some(NodeOs::Linux), windows.then_some(NodeOs::Windows)]
                .into_iter()
                .flatten()
                .collect()
        }
    };
    oses.sort();
    oses.dedup();
    oses
}

/// How the nodes of one OS pull one reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePlan {
    /// The source reference.
    pub reference: RegistryRef,
    /// The nodes' OS.
    pub os: NodeOs,
    /// The manifest requests of the pull as the reference names it (by digest or by tag), in
    /// order.
    pub attempts: Vec<Attempt>,
    /// What the mirror check asks, with the findings about the plan itself.
    pub plan: PullPlan,
    /// Windows: where the other OS's nodes find their mirrors (Linux rows: empty); when the
    /// Windows places lack the image, `mirror-windows-path` looks there.
    pub elsewhere: Vec<MirrorLocation>,
}

/// A Linux node's plan: registries.conf resolution ([`plan`]), the requests of its mirrors
/// serving this kind of pull, then the source unless blocked.
pub fn linux(reference: &RegistryRef, resolution: Option<&MirrorResolution>) -> NodePlan {
    let by_digest = reference.digest.is_some();
    let object = object(reference);
    let mut requests: Vec<Attempt> = resolution
        .map(|r| r.mirrors_for(by_digest))
        .unwrap_or_default()
        .into_iter()
        .map(|m| request(&m.repository, AttemptKind::Mirror, &object))
        .collect();
    if !resolution.is_some_and(|r| r.source_blocked) {
        requests.push(request(reference, AttemptKind::Source, &object));
    }
    NodePlan {
        reference: reference.clone(),
        os: NodeOs::Linux,
        attempts: requests,
        plan: plan(reference, resolution),
        elsewhere: vec![],
    }
}

/// The request for `repository` at `object` on its registry's `/v2/` API.
fn request(repository: &RegistryRef, kind: AttemptKind, object: &str) -> Attempt {
    let host = RegistryHost::default_for(&repository.registry);
    Attempt {
        url: manifest_url(&host, &repository.repository, object),
        kind,
        repository: Some(RegistryRef {
            tag: None,
            digest: None,
            ..repository.clone()
        }),
        capabilities: Capabilities::ALL,
        override_path: false,
    }
}

/// The mirrors the check asks among `requests`, each once, in order.
fn checked_mirrors(requests: &[Attempt], origin: &str) -> Vec<MirrorLocation> {
    let mut out: Vec<MirrorLocation> = Vec::new();
    for a in requests.iter().filter(|a| a.kind == AttemptKind::Mirror) {
        let Some(repository) = &a.repository else {
            continue;
        };
        if out.iter().any(|m| &m.repository == repository) {
            continue;
        }
        out.push(MirrorLocation {
            repository: repository.clone(),
            pull_from: match a.capabilities.resolve {
                true => PullFrom::All,
                false => PullFrom::DigestOnly,
            },
            origin: origin.to_string(),
        });
    }
    out
}

/// The Windows nodes a plan is for: their mirror configuration (WMCO's rendering of `sets`, or
/// a directory) and their containerd profiles.
#[derive(Debug, Clone, Copy)]
pub struct WindowsNodes<'a> {
    /// The hosts.toml tree.
    pub hosts: &'a HostsConfig,
    /// The mirror sets given (IDMS, ITMS, ICSP).
    pub sets: &'a [MirrorSet],
    /// The profiles the Windows nodes run (a policy's `runtimes`, or the nodes').
    pub runtimes: &'a [RuntimeProfile],
}

/// A Windows node's plan under `nodes`' configuration; `elsewhere`: where Linux nodes look for
/// it. A hosts.toml that sets `server` without a `host` table is read as the strictest of the
/// nodes' containerd releases reads it ([`HostsReader::of_nodes`]).
pub fn windows(
    reference: &RegistryRef,
    nodes: WindowsNodes<'_>,
    elsewhere: Vec<MirrorLocation>,
) -> NodePlan {
    let WindowsNodes { hosts, sets, .. } = nodes;
    let by_digest = reference.digest.is_some();
    let object = object(reference);
    let (reader, ignoring) = HostsReader::of_nodes(nodes.runtimes);
    let file = hosts.file_for(&reference.registry);
    let server_ignored = file.filter(|f| reader.ignores_server_of(f));
    let mut findings = Vec::new();
    let (requests, origin) = match hosts.unusable.get(&reference.registry) {
        Some(why) => {
            let f = Finding::new(
                Rule::MirrorWindowsPath,
                format!(
                    "{}: {why}; a Windows node finds no mirror configuration for {} and requests {}",
                    reference,
                    reference.registry,
                    request(reference, AttemptKind::Source, &object).url
                ),
                None,
            );
            findings.push(f.with_hint(PORT_HINT));
            (
                vec![request(reference, AttemptKind::Source, &object)],
                String::new(),
            )
        }
        None => (
            attempts(hosts, reference, (by_digest, &object), reader),
            file.map(|f| f.origin.clone()).unwrap_or_default(),
        ),
    };
    let mut checked = checked_mirrors(&requests, &origin);
    let mut check_by_digest = by_digest;
    let configured = !origin.is_empty();
    if configured && checked.is_empty() && !by_digest {
        let digest_requests = attempts(hosts, reference, (true, &object), reader);
        checked = checked_mirrors(&digest_requests, &origin);
        if !checked.is_empty() {
            findings.push(tag_ignored(reference, &origin, requests.is_empty()));
            check_by_digest = true;
        }
    }
    findings.extend(
        (requests.iter())
            .filter(|a| a.repository.is_none())
            .map(outside_the_api),
    );
    if let Some(file) = server_ignored {
        findings.push(server_ignored_finding(reference, file, &ignoring));
    } else if checked.is_empty() && !hosts.unusable.contains_key(&reference.registry) {
        let unaskable = requests.iter().any(|a| a.repository.is_none());
        let how = (configured, unaskable);
        findings.push(windows_not_configured(reference, hosts, sets, how));
    }
    let source_blocked = !requests.iter().any(|a| a.kind == AttemptKind::Source);
    let elsewhere = elsewhere
        .into_iter()
        .filter(|e| !checked.iter().any(|m| m.repository == e.repository))
        .collect();
    NodePlan {
        reference: reference.clone(),
        os: NodeOs::Windows,
        attempts: requests,
        plan: PullPlan {
            by_digest: check_by_digest,
            mirrors: checked,
            source_blocked,
            findings,
        },
        elsewhere,
    }
}

/// `mirror-windows-path` for a request outside a registry's `/v2/` API: with
/// `override_path = true` and no `/v2` in the host's URL, a registry cannot answer it (an
/// error: the node asks, misses, and moves on); otherwise the host serves its API under a
/// path prefix, which imgcheck cannot ask (a warning).
fn outside_the_api(a: &Attempt) -> Finding {
    let (why, severity) = match a.override_path {
        true => (
            "its host in hosts.toml sets override_path = true and its URL has no /v2, so the \
             request is outside the registry API (/v2/…) and a registry answers it 404: the node \
             moves on to the next host; write the host's URL with its /v2 \
             (https://HOST/v2/PATH) or drop override_path",
            Severity::Error,
        ),
        false => (
            "imgcheck cannot check it: the host's path is not under /v2/ (containerd appends \
             /v2 after the path written)",
            Severity::Warning,
        ),
    };
    let mut f = Finding::new(
        Rule::MirrorWindowsPath,
        format!("a Windows node requests {}: {why}", a.url),
        None,
    );
    f.severity = severity;
    f.with_hint(OUTSIDE_THE_API_HINT)
}

/// The hint of a source with a port, whose hosts.toml no Windows node reads.
const PORT_HINT: &str = "Windows nodes cannot use a mirror configuration for a source registry \
    with a port: WMCO writes its hosts.toml to the folder HOST:PORT, a name Windows refuses \
    (':' is reserved); serve the source registry without a port (on 443), or have the Windows \
    workloads pull the image by the mirror's own name";

/// The hint of a request outside a registry's `/v2/` API.
const OUTSIDE_THE_API_HINT: &str = "in hosts.toml, write each mirror host as WMCO does, \
    https://HOST/v2/PATH with override_path = true (PATH: the mirror's namespace), or as \
    https://HOST without a path";

/// `mirror-tag-ignored` for a Windows node: no host of the hosts.toml may resolve tags.
fn tag_ignored(reference: &RegistryRef, origin: &str, fails: bool) -> Finding {
    let mut f = Finding::new(
        Rule::MirrorTagIgnored,
        format!(
            "{reference} is a tag reference, but no mirror in {origin} has the 'resolve' capability \
             (ImageDigestMirrorSet mirrors get 'pull' only): a Windows node pulling this tag {}; \
             checking the mirrors at the source's digest instead",
            match fails {
                true => "fails, since no host may resolve it",
                false => "goes to the source",
            }
        ),
        None,
    );
    if fails {
        f.severity = Severity::Error;
    }
    f
}

/// `mirror-not-configured` for a hosts.toml whose `server` the Windows nodes under `ignoring`
/// never ask: it has no `host` table, so their containerd refuses the file and pulls from the
/// source ([`HostsReader::IgnoresServerOnly`]).
fn server_ignored_finding(
    reference: &RegistryRef,
    file: &HostsFile,
    ignoring: &[RuntimeProfile],
) -> Finding {
    let name = format!("{}/{}", reference.registry, reference.repository);
    let server = file
        .server
        .as_ref()
        .map(RegistryHost::base)
        .unwrap_or_default();
    let profiles: Vec<&str> = ignoring.iter().map(|p| p.name()).collect();
    let (major, minor, patch) = READS_SERVER_ONLY_FROM;
    let message = format!(
        "{} sets server = {server} but has no [host.\"URL\"] table: containerd 1.5 – \
         {major}.{minor}.{} (go-toml v1; hosts.go getSortedHosts: \"invalid `host` tree\") \
         refuses the whole file and loadHostDir falls back to the registry itself, so Windows \
         nodes under {} never ask the server and pull {name} from the source, which a \
         disconnected cluster cannot reach ({major}.{minor}.{patch} and 2.x ask the server)",
        file.origin,
        patch - 1,
        profiles.join(", "),
    );
    Finding::new(Rule::MirrorNotConfigured, message, None).with_hint(SERVER_ONLY_HINT)
}

/// The hint of a hosts.toml whose `server` older containerd releases ignore.
const SERVER_ONLY_HINT: &str = "write the mirror as a [host.\"https://MIRROR-HOST/v2/PATH\"] \
    table (capabilities = [\"pull\"], override_path = true), as WMCO does, or add an empty \
    [host] table below the server: every containerd release then reads the file";

/// `mirror-not-configured` for a Windows node, saying why: only an ICSP or a wildcard source
/// covers it, only registries.conf does, or nothing; `(configured, unaskable)`: a hosts.toml
/// covers its registry, and some of its hosts are outside a registry's `/v2/` API.
fn windows_not_configured(
    reference: &RegistryRef,
    hosts: &HostsConfig,
    sets: &[MirrorSet],
    (configured, unaskable): (bool, bool),
) -> Finding {
    let name = format!("{}/{}", reference.registry, reference.repository);
    let covering: Vec<&MirrorSet> = sets
        .iter()
        .filter(|s| match_prefix(&name, &s.source).is_some())
        .collect();
    let icsp: Vec<&str> = covering
        .iter()
        .filter(|s| s.kind == MirrorSetKind::Icsp)
        .map(|s| s.origin.as_str())
        .collect();
    let wildcard: Vec<&str> = covering
        .iter()
        .filter(|s| s.kind != MirrorSetKind::Icsp && s.source.starts_with("*."))
        .map(|s| s.source.as_str())
        .collect();
    let host = &reference.registry;
    let why = if configured {
        let outside = match unaskable {
            true => " (its hosts outside a registry's /v2/ API are named apart)",
            false => "",
        };
        format!("the hosts.toml for {host} has no mirror serving digest pulls of {name}{outside}")
    } else if hosts.configured_by == ConfiguredBy::Directory {
        format!(
            "the hosts directory has none of the folders a Windows node looks up for {host} ({})",
            crate::mirror::hosts::model::host_paths(host).join(", ")
        )
    } else if !icsp.is_empty() {
        format!(
            "only the ImageContentSourcePolicy {} covers {name}; Windows nodes do not read ICSP \
             (WMCO renders ImageDigestMirrorSets and ImageTagMirrorSets only; ICSP is deprecated \
             since OpenShift 4.13): convert it to an ImageDigestMirrorSet ('oc adm migrate icsp')",
            icsp.join(", ")
        )
    } else if !wildcard.is_empty() {
        format!(
            "only the wildcard source {} covers {name}; WMCO writes it to a folder of that name, \
             which containerd never looks up: add an ImageDigestMirrorSet entry for {host}",
            wildcard.join(", ")
        )
    } else {
        format!(
            "no ImageDigestMirrorSet or ImageTagMirrorSet source is on the registry host {host}"
        )
    };
    Finding::new(
        Rule::MirrorNotConfigured,
        format!(
            "{why}; a Windows node pulls {name} from the source, which a disconnected cluster cannot reach"
        ),
        None,
    )
}
