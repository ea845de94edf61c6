//! CSI Proxy compatibility (see `docs/images.md`, "CSI Proxy"): a Windows CSI node plugin
//! does its privileged host work through the CSI Proxy on the node, one named pipe per API
//! group version (`\\.\pipe\csi-proxy-disk-v1`). The driver's program names the group versions
//! it dials (the csi-proxy client packages it embeds, read by `--deep`); [`RELEASES`] says
//! which group versions each CSI Proxy release serves; the policy's `windows.csi_proxy` (or
//! the csi-proxy DaemonSet a run found) says which release the nodes run.
//!
//! `csi-proxy-incompatible` (error): a group the driver uses is served by the nodes' proxy in
//! none of the versions the driver embeds, or the proxy is older than the driver's
//! `windows.csi_proxy.minimum`. `csi-proxy-unknown` (warning): it cannot be told.

use std::collections::{BTreeMap, BTreeSet};

use crate::binary::ModuleVersion;
use crate::engine::binaries::{CsiProxyUse, csi_proxy_use, entry_label};
use crate::engine::finding::Finding;
use crate::engine::rules::Rule;
use crate::graph::{Graph, Image, LookupOutcome, Node};
use crate::policy::{CsiProxyPolicy, Policy};

/// One CSI Proxy release and the API group versions it added; a release serves every group
/// version added by it and the releases before it (the changelogs remove none).
#[derive(Debug, Clone, Copy)]
pub struct ProxyRelease {
    /// The release tag.
    pub version: &'static str,
    /// The group versions it added (`group/version`).
    pub adds: &'static [&'static str],
    /// Where kubernetes-csi/csi-proxy says so.
    pub source: &'static str,
}

/// What each CSI Proxy release serves, oldest first (kubernetes-csi/csi-proxy, `CHANGELOG/`,
/// the "API" section of each release; docs/images.md cites each row).
pub const RELEASES: &[ProxyRelease] = &[
    ProxyRelease {
        version: "v0.1.0",
        adds: &[
            "disk/v1alpha1",
            "filesystem/v1alpha1",
            "smb/v1alpha1",
            "volume/v1alpha1",
        ],
        source: "CHANGELOG-0.2.0.md (v1alpha pipes of v0.1.0); client/api/<group>/v1alpha1/api.proto",
    },
    ProxyRelease {
        version: "v0.2.0",
        adds: &["disk/v1beta1", "volume/v1beta1"],
        source: "CHANGELOG/CHANGELOG-0.2.0.md",
    },
    ProxyRelease {
        version: "v0.2.1",
        adds: &["filesystem/v1beta1", "smb/v1beta1"],
        source: "CHANGELOG/CHANGELOG-0.2.1.md",
    },
    ProxyRelease {
        version: "v0.2.2",
        adds: &[
            "disk/v1beta2",
            "volume/v1beta2",
            "system/v1alpha1",
            "iscsi/v1alpha1",
        ],
        source: "CHANGELOG/CHANGELOG-0.2.2.md",
    },
    ProxyRelease {
        version: "v1.0.0-rc1",
        adds: &[
            "smb/v1beta2",
            "filesystem/v1beta2",
            "disk/v1beta3",
            "volume/v1beta3",
            "iscsi/v1alpha2",
            "disk/v1",
            "volume/v1",
            "filesystem/v1",
            "smb/v1",
        ],
        source: "CHANGELOG/CHANGELOG-1.0.0-rc1.md; CHANGELOG-1.0.0.md (v1: no API change since RC1)",
    },
    ProxyRelease {
        version: "v1.1.0",
        adds: &["filesystem/v2alpha1", "volume/v2alpha1"],
        source: "CHANGELOG/CHANGELOG-1.1.0.md",
    },
    ProxyRelease {
        version: "v1.4.0",
        adds: &[],
        source: "CHANGELOG-1.0.2.md to CHANGELOG-1.4.0.md: no API change",
    },
];

/// The group versions a release serves, as far as [`RELEASES`] tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Served {
    /// Exactly these.
    Exactly(BTreeSet<&'static str>),
    /// A 1.x release newer than the table: these, and maybe group versions added since.
    AtLeast(BTreeSet<&'static str>),
    /// Not a release the table can place (older than v0.1.0, a pseudo-version or pre-release
    /// that is no row, v2 and later: the library, no pipes).
    Unknown,
}

/// What the CSI Proxy release `version` serves.
pub fn served(version: &ModuleVersion) -> Served {
    let rows: Vec<(ModuleVersion, &ProxyRelease)> = RELEASES
        .iter()
        .filter_map(|r| ModuleVersion::parse(r.version).map(|v| (v, r)))
        .collect();
    let exact_row = rows.iter().any(|(v, _)| v == version);
    let newest = rows.last().map(|(v, _)| v);
    if version.major() >= 2 || !(version.is_release() || exact_row) {
        return Served::Unknown;
    }
    if rows.first().is_none_or(|(v, _)| version < v) {
        return Served::Unknown;
    }
    let set: BTreeSet<&'static str> = rows
        .iter()
        .filter(|(v, _)| v <= version)
        .flat_map(|(_, r)| r.adds.iter().copied())
        .collect();
    match newest.is_some_and(|n| version > n) {
        true => Served::AtLeast(set),
        false => Served::Exactly(set),
    }
}

/// Is `api` a group version some release of the table serves?
fn in_table(api: &str) -> bool {
    RELEASES.iter().any(|r| r.adds.contains(&api))
}

/// The usage of every Windows program of the graph that is a csi-proxy client, with the
/// entries (subjects) and the first digest and path of each.
fn usages(graph: &Graph) -> BTreeMap<CsiProxyUse, (Vec<String>, String, String)> {
    let mut out: BTreeMap<CsiProxyUse, (Vec<String>, String, String)> = BTreeMap::new();
    for node in graph.nodes() {
        let Some(image) = node.image() else { continue };
        if !is_windows(image) {
            continue;
        }
        for program in image.entry.iter().flat_map(|e| &e.programs) {
            let LookupOutcome::Found { path, binary, .. } = &program.outcome else {
                continue;
            };
            let Some(usage) = binary.go.as_ref().and_then(csi_proxy_use) else {
                continue;
            };
            let slot = out
                .entry(usage)
                .or_insert_with(|| (vec![], node.digest.to_string(), path.clone()));
            slot.0.push(subject(node, image));
        }
    }
    out
}

fn is_windows(image: &Image) -> bool {
    image
        .config
        .as_ref()
        .is_ok_and(|c| c.os.eq_ignore_ascii_case("windows"))
}

fn subject(node: &Node, image: &Image) -> String {
    format!("{} entry {}", entry_label(image), node.digest.short())
}

/// The CSI Proxy findings of `graph`, an image known by `names` (its repository's last path
/// component, release components, containers and workloads), when the policy has Windows
/// hosts: each csi-proxy client program of its Windows entries against the nodes' proxy, and
/// the driver's minimum proxy release.
pub fn judge_csi_proxy(graph: &Graph, policy: &Policy, names: &[String]) -> Vec<Finding> {
    let windows_hosts = policy.hosts().iter().any(|h| h.platform.is_windows());
    if !windows_hosts {
        return vec![];
    }
    let proxy = policy
        .windows
        .as_ref()
        .and_then(|w| w.csi_proxy.clone())
        .unwrap_or_default();
    let mut findings = Vec::new();
    for (usage, (subjects, digest, path)) in usages(graph) {
        let who = format!("{} runs {path}", subjects.join(", "));
        if let Some(f) = judge_usage(&usage, &who, &proxy) {
            findings.push(Finding {
                digest: Some(digest),
                ..f
            });
        }
    }
    let has_windows = graph
        .nodes()
        .iter()
        .any(|n| n.image().is_some_and(is_windows));
    if has_windows {
        findings.extend(minimum(&proxy, names, graph));
    }
    findings
}

/// Where to learn the nodes' CSI Proxy release, for a `csi-proxy-unknown` message.
const LEARN: &str = "set windows.csi_proxy.version in the policy, or give the csi-proxy \
    DaemonSet with --from-manifests and --deep";

/// `built with CLIENT, embedding the CSI Proxy API groups A, B`.
fn built_with(usage: &CsiProxyUse) -> String {
    let client = usage
        .client
        .as_deref()
        .map_or("no csi-proxy client module line".to_string(), |c| {
            format!("built with {c}")
        });
    match usage.apis.is_empty() {
        true => format!("{client}, embedding no csi-proxy API group package this check found"),
        false => format!(
            "{client}, embedding the CSI Proxy API groups {}",
            usage.apis.join(", ")
        ),
    }
}

/// The group versions the driver embeds, by group.
fn by_group(apis: &[String]) -> BTreeMap<&str, Vec<&str>> {
    let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for api in apis {
        if let Some((group, version)) = api.split_once('/') {
            groups.entry(group).or_default().push(version);
        }
    }
    groups
}

/// `disk v1alpha1, v1beta1, v1; smb none`: what `set` serves of each group.
fn served_of(groups: &BTreeMap<&str, Vec<&str>>, set: &BTreeSet<&str>) -> String {
    let parts: Vec<String> = groups
        .keys()
        .map(|group| {
            let prefix = format!("{group}/");
            let mut versions: Vec<&str> =
                set.iter().filter_map(|a| a.strip_prefix(&prefix)).collect();
            versions.sort_by_key(|v| api_order(v));
            match versions.is_empty() {
                true => format!("{group} none"),
                false => format!("{group} {}", versions.join(", ")),
            }
        })
        .collect();
    parts.join("; ")
}

/// Kubernetes API versions in release order: by major, then alpha, beta, GA, then number.
fn api_order(version: &str) -> (u64, u8, u64) {
    let rest = version.trim_start_matches('v');
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (major, rest) = rest.split_at(digits);
    let (stage, n) = match (rest.strip_prefix("alpha"), rest.strip_prefix("beta")) {
        (Some(n), _) => (0, n),
        (_, Some(n)) => (1, n),
        _ => (2, "0"),
    };
    (major.parse().unwrap_or(0), stage, n.parse().unwrap_or(0))
}

/// The finding about one driver program's usage, if any.
fn judge_usage(usage: &CsiProxyUse, who: &str, proxy: &CsiProxyPolicy) -> Option<Finding> {
    let built = built_with(usage);
    let Some((version, source)) = proxy.running() else {
        let message = format!(
            "{who}, {built}; the CSI Proxy release the Windows nodes run is not known: {LEARN}"
        );
        return Some(Finding::new(Rule::CsiProxyUnknown, message, None));
    };
    let nodes = format!("the nodes' CSI Proxy {version} ({source})");
    let set = match served(version) {
        Served::Unknown => {
            let message = format!(
                "{who}, {built}; {nodes} is not a release the CSI Proxy table places \
                 (v0.1.0 to v1.x releases): which API group versions it serves cannot be told"
            );
            return Some(Finding::new(Rule::CsiProxyUnknown, message, None));
        }
        Served::Exactly(set) => (set, false),
        Served::AtLeast(set) => (set, true),
    };
    if usage.apis.is_empty() {
        return by_client_version(usage, who, &built, version, &nodes);
    }
    let groups = by_group(&usage.apis);
    let (set, newer) = set;
    let missing: Vec<&str> = groups
        .iter()
        .filter(|(g, vs)| !vs.iter().any(|v| set.contains(format!("{g}/{v}").as_str())))
        .map(|(g, _)| *g)
        .collect();
    if missing.is_empty() {
        return None;
    }
    let wanted = |g: &&str| {
        groups[g]
            .iter()
            .map(|v| format!("{g}/{v}"))
            .collect::<Vec<_>>()
    };
    let (unplaced, absent): (Vec<&str>, Vec<&str>) = missing
        .iter()
        .partition(|g| newer || !wanted(g).iter().all(|a| in_table(a)));
    let serves = served_of(&groups, &set);
    if !absent.is_empty() {
        let needed: Vec<String> = absent.iter().flat_map(wanted).collect();
        let message = format!(
            "{who}, {built}; {nodes} serves {serves}, but none of {}",
            needed.join(", ")
        );
        return Some(Finding::new(Rule::CsiProxyIncompatible, message, None));
    }
    let needed: Vec<String> = unplaced.iter().flat_map(wanted).collect();
    let message = format!(
        "{who}, {built}; {nodes} serves {}{serves}, and whether it serves {} cannot be told \
         (not in the CSI Proxy table)",
        if newer { "at least " } else { "" },
        needed.join(", ")
    );
    Some(Finding::new(Rule::CsiProxyUnknown, message, None))
}

/// A client program whose group packages were not found: compatible when the nodes' proxy is
/// no older than the client (a release serves every group version its client offers), else
/// unknown.
fn by_client_version(
    usage: &CsiProxyUse,
    who: &str,
    built: &str,
    version: &ModuleVersion,
    nodes: &str,
) -> Option<Finding> {
    let client = usage.version.as_deref().and_then(ModuleVersion::parse);
    if client
        .as_ref()
        .is_some_and(|c| c.is_release() && version >= c)
    {
        return None;
    }
    let message = format!(
        "{who}, {built}; {nodes} is older than its client, or either is no release: which API \
         groups it dials cannot be told"
    );
    Some(Finding::new(Rule::CsiProxyUnknown, message, None))
}

/// The driver's minimum CSI Proxy release (`windows.csi_proxy.minimum`) for each of `names`
/// the policy lists.
fn minimum(proxy: &CsiProxyPolicy, names: &[String], graph: &Graph) -> Vec<Finding> {
    let digest = Some(&graph.root.digest);
    let mut out = Vec::new();
    for (name, least) in proxy.minimum.iter().filter(|(n, _)| names.contains(n)) {
        let needs =
            format!("{name} needs CSI Proxy {least} or later (policy windows.csi_proxy.minimum)");
        match proxy.running() {
            Some((version, source)) if version < least => out.push(Finding::new(
                Rule::CsiProxyIncompatible,
                format!("{needs}; the nodes run {version} ({source})"),
                digest,
            )),
            Some(_) => {}
            None => out.push(Finding::new(
                Rule::CsiProxyUnknown,
                format!("{needs}; the release the Windows nodes run is not known: {LEARN}"),
                digest,
            )),
        }
    }
    out
}

#[cfg(test)]
mod tests;
