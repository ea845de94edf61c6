//! Host rows from a node list: the output of `oc get nodes -o json` or
//! `kubectl get nodes -o json` (a `List` of `Node`, or a single `Node`).
//!
//! Per node: the OS from `status.nodeInfo.operatingSystem` (else the `kubernetes.io/os` label);
//! the architecture from the `kubernetes.io/arch` label (else `status.nodeInfo.architecture`);
//! for Windows nodes the build from the `node.kubernetes.io/windows-build` label (else
//! `status.nodeInfo.kernelVersion`); the runtime profile from
//! `status.nodeInfo.containerRuntimeVersion`. Nodes that agree on all of these share one row.
//! `docs/cluster.md` gives the sources.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;

use crate::platform::{Platform, RuntimeProfile, WindowsVersion};
use crate::policy::{Host, is_known_arch};

/// The label the Windows Machine Config Operator and kubelet set to the node's build.
pub const LABEL_WINDOWS_BUILD: &str = "node.kubernetes.io/windows-build";
/// The kubelet's architecture label.
pub const LABEL_ARCH: &str = "kubernetes.io/arch";
/// The kubelet's OS label.
pub const LABEL_OS: &str = "kubernetes.io/os";

/// The host rows of a node list, with notes about runtime versions no profile covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeHosts {
    /// One row per platform and runtime profile: Linux first, then Windows; each names its
    /// nodes.
    pub hosts: Vec<Host>,
    /// Runtime versions judged with the nearest profile, one line per version and profile.
    pub notes: Vec<String>,
}

/// A node list that cannot be used, naming the input, the node and the field.
#[derive(Debug, Clone, thiserror::Error)]
#[error("nodes {origin}: {reason}")]
pub struct NodesError {
    /// The file path, or `-` for standard input.
    pub origin: String,
    /// What is wrong, naming the node and the field when there is one.
    pub reason: String,
    /// The error behind it, if another library reported it.
    #[source]
    pub source: Option<NodesCause>,
}

/// The error behind a [`NodesError`].
#[derive(Debug, Clone, thiserror::Error)]
pub enum NodesCause {
    /// The file cannot be read.
    #[error(transparent)]
    Read(Arc<std::io::Error>),
    /// The text is not JSON.
    #[error(transparent)]
    Json(Arc<serde_json::Error>),
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Node {
    kind: String,
    metadata: Metadata,
    status: Status,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Metadata {
    name: String,
    labels: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Status {
    node_info: NodeInfo,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct NodeInfo {
    architecture: String,
    operating_system: String,
    kernel_version: String,
    container_runtime_version: String,
}

/// Reads a node list from a file, or standard input for `-`, of at most `max_bytes`.
pub fn read_nodes(path: &str, max_bytes: u64) -> Result<NodeHosts, NodesError> {
    let text = crate::input::read_text(path, max_bytes).map_err(|e| NodesError {
        origin: path.to_string(),
        reason: e.reason,
        source: e.source.map(|e| NodesCause::Read(Arc::new(e))),
    })?;
    parse_nodes(&text, path)
}

/// Parses a node list; `origin` names it in errors.
pub fn parse_nodes(text: &str, origin: &str) -> Result<NodeHosts, NodesError> {
    let err = |reason: String| NodesError {
        origin: origin.to_string(),
        reason,
        source: None,
    };
    crate::yaml::check_nesting(text).map_err(|e| err(e.to_string()))?;
    let doc: serde_json::Value = serde_json::from_str(text).map_err(|e| NodesError {
        source: Some(NodesCause::Json(Arc::new(e))),
        ..err("not JSON (expected `oc get nodes -o json` output)".to_string())
    })?;
    let items = match doc.get("kind").and_then(|k| k.as_str()) {
        Some("List" | "NodeList") => match doc.get("items").and_then(|i| i.as_array()) {
            Some(items) => items.clone(),
            None => return Err(err("the List has no 'items' array".to_string())),
        },
        Some("Node") => vec![doc],
        Some(k) => {
            return Err(err(format!(
                "not a node list: kind is '{k}' (expected a List of Node, or a Node)"
            )));
        }
        None => {
            return Err(err(
                "not a node list: no 'kind' (expected a List of Node, or a Node)".to_string(),
            ));
        }
    };
    if items.is_empty() {
        return Err(err("the list holds no nodes".to_string()));
    }
    type Row = (Platform, Vec<String>);
    let mut rows: BTreeMap<(bool, String, RuntimeProfile), Row> = BTreeMap::new();
    let mut notes = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let node: Node = serde_json::from_value(item).map_err(|e| NodesError {
            source: Some(NodesCause::Json(Arc::new(e))),
            ..err(format!("item {i} is not a Node"))
        })?;
        let (platform, runtime, note) = node_host(&node, i).map_err(err)?;
        notes.extend(note);
        rows.entry((platform.is_windows(), platform.to_string(), runtime))
            .or_insert_with(|| (platform, vec![]))
            .1
            .push(node.metadata.name);
    }
    notes.sort();
    notes.dedup();
    let hosts = rows
        .into_iter()
        .map(|((_, _, runtime), (platform, mut nodes))| {
            nodes.sort();
            Host {
                platform,
                runtime: Some(runtime),
                nodes,
            }
        })
        .collect();
    Ok(NodeHosts { hosts, notes })
}

/// One node's platform and runtime profile (with a note when no profile covers its runtime
/// version), or what is wrong, naming the node and the field.
fn node_host(
    node: &Node,
    index: usize,
) -> Result<(Platform, RuntimeProfile, Option<String>), String> {
    if node.kind != "Node" {
        let kind = if node.kind.is_empty() {
            "no kind"
        } else {
            &node.kind
        };
        return Err(format!("item {index} is not a Node ({kind})"));
    }
    let name = node.metadata.name.as_str();
    if name.is_empty() {
        return Err(format!("item {index}: metadata.name is missing"));
    }
    let info = &node.status.node_info;
    let field = |label: &str, label_value: Option<&String>, info_field: &str, info_value: &str| {
        match label_value.filter(|v| !v.is_empty()) {
            Some(v) => Ok((format!("metadata.labels[\"{label}\"]"), v.clone())),
            None if !info_value.is_empty() => Ok((
                format!("status.nodeInfo.{info_field}"),
                info_value.to_string(),
            )),
            None => Err(format!(
                "node {name}: neither the {label} label nor status.nodeInfo.{info_field} is set"
            )),
        }
    };
    let labels = &node.metadata.labels;
    let os = if info.operating_system.is_empty() {
        field(LABEL_OS, labels.get(LABEL_OS), "operatingSystem", "")?.1
    } else {
        info.operating_system.clone()
    };
    let (arch_field, arch) = field(
        LABEL_ARCH,
        labels.get(LABEL_ARCH),
        "architecture",
        &info.architecture,
    )?;
    if !is_known_arch(&arch) {
        return Err(format!(
            "node {name}: {arch_field} '{arch}' is not a known architecture"
        ));
    }
    let platform = match os.as_str() {
        "linux" => Platform::new("linux", &arch),
        "windows" => {
            let (f, v) = field(
                LABEL_WINDOWS_BUILD,
                labels.get(LABEL_WINDOWS_BUILD),
                "kernelVersion",
                &info.kernel_version,
            )?;
            let build = windows_build(&v).ok_or_else(|| {
                format!("node {name}: {f} '{v}' is not a Windows version such as 10.0.17763")
            })?;
            Platform::new("windows", &arch)
                .with_os_version(&WindowsVersion::host(build).to_string())
        }
        other => {
            return Err(format!(
                "node {name}: operating system '{other}' is neither linux nor windows"
            ));
        }
    };
    let rv = &info.container_runtime_version;
    let field = "status.nodeInfo.containerRuntimeVersion";
    let (runtime, note) =
        runtime_profile(rv).map_err(|why| format!("node {name}: {field} '{rv}' {why}"))?;
    if platform.is_windows() && !runtime.runs_windows() {
        return Err(format!(
            "node {name}: {field} '{rv}' on a Windows node (cri-o runs Linux nodes only)"
        ));
    }
    Ok((platform, runtime, note))
}

/// The build of a Windows version (`10.0.17763` or `10.0.17763.6893`), when it has container
/// support (14393, Windows Server 2016, or later).
fn windows_build(s: &str) -> Option<u16> {
    if !WindowsVersion::is_well_formed(s) {
        return None;
    }
    let v = WindowsVersion::parse(s)?;
    (v.major == 10 && v.minor == 0 && v.build >= 14393).then_some(v.build)
}

/// The runtime profile of a `containerRuntimeVersion` (`containerd://1.7.27`, `cri-o://1.31.6`),
/// with a note when no profile covers the version; `Err` says why it is unusable. Which
/// containerd releases a profile covers, and the nearest for the others, is the profile
/// table's ([`RuntimeProfile::of_containerd`]).
pub fn runtime_profile(version: &str) -> Result<(RuntimeProfile, Option<String>), String> {
    let Some((scheme, rest)) = version.split_once("://") else {
        return Err("is not RUNTIME://VERSION".to_string());
    };
    match scheme {
        "cri-o" => return Ok((RuntimeProfile::CriO, None)),
        "containerd" => {}
        other => {
            return Err(format!(
                "names runtime '{other}' (imgcheck models containerd and cri-o)"
            ));
        }
    }
    let core = rest.trim_start_matches('v');
    let core = core.split(['-', '+', '~']).next().unwrap_or("");
    let nums: Vec<u32> = core
        .split('.')
        .map(|f| f.parse::<u32>())
        .collect::<Result<_, _>>()
        .map_err(|_| "has no version MAJOR.MINOR.PATCH".to_string())?;
    let [major, minor, patch] = nums[..] else {
        return Err("has no version MAJOR.MINOR.PATCH".to_string());
    };
    let (profile, covered) = RuntimeProfile::of_containerd((major, minor, patch));
    if covered {
        return Ok((profile, None));
    }
    let note = format!(
        "containerd {core}: no runtime profile covers this version; judged as {profile}, the nearest"
    );
    Ok((profile, Some(note)))
}

crate::error::input_errors!(NodesError);

#[cfg(test)]
mod tests;
