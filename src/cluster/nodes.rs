//! Host rows from a node list: the output of `oc get nodes -o json` or
//! `kubectl get nodes -o json` (or `-o yaml`: a `List` of `Node`, or a single `Node`): JSON
//! when it starts with `{`, as kubectl decides, else YAML through the reader every other YAML
//! input goes through (merge keys); the nesting guard first.
//!
//! Per node: the OS from `status.nodeInfo.operatingSystem` (else the `kubernetes.io/os` label);
//! the architecture from the `kubernetes.io/arch` label (else `status.nodeInfo.architecture`);
//! for Windows nodes the build from the `node.kubernetes.io/windows-build` label (else
//! `status.nodeInfo.kernelVersion`); the runtime profile from
//! `status.nodeInfo.containerRuntimeVersion`. Nodes that agree on all of these share one row.
//! Every value read is trimmed of surrounding whitespace (a kernel version ending in a newline,
//! kubernetes#72659). A node whose runtime or Windows build cannot be read is skipped and said
//! so ([`OddNodes::Skip`]), or refuses the list ([`OddNodes::Refuse`], `--strict-nodes`).
//! `docs/cluster.md` gives the sources.

use std::collections::{BTreeMap, HashSet};
use std::io::BufRead;
use std::sync::Arc;

use serde::Serialize;
use serde_yaml_ng::Value;

use crate::platform::{Platform, RuntimeChoice, RuntimeProfile, WindowsVersion};
use crate::policy::{Host, is_known_arch};
use crate::scheduling::{Effect, NodeFacts, NodeShape, Taint};
use model::{Node, is_single_node};
pub use model::{NodesCause, NodesError};

/// The label the Windows Machine Config Operator and kubelet set to the node's build.
pub const LABEL_WINDOWS_BUILD: &str = "node.kubernetes.io/windows-build";
/// The kubelet's architecture label.
pub const LABEL_ARCH: &str = "kubernetes.io/arch";
/// The kubelet's OS label.
pub const LABEL_OS: &str = "kubernetes.io/os";

/// The host rows of a node list, with notes about runtime versions no profile covers and
/// about the nodes skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeHosts {
    /// One row per platform and runtime profile: Linux first, then Windows; each names its
    /// nodes.
    pub hosts: Vec<Host>,
    /// Runtime versions judged with the nearest profile, one line per version and profile;
    /// then one line per node skipped.
    pub notes: Vec<String>,
    /// The nodes whose runtime or Windows build cannot be read, in the list's order: no row
    /// holds them.
    pub skipped: Vec<SkippedNode>,
    /// What pod placement reads of each node (labels, taints, cordon), in the list's order: the
    /// nodes the rows hold, and the nodes skipped (marked so) whose labels and taints can be
    /// read.
    pub nodes: Vec<NodeFacts>,
    /// One entry per distinct runtime the rows' nodes report, in the order of its text: the
    /// profile it is judged under and why.
    pub runtimes: Vec<NodeRuntime>,
}

/// A runtime as nodes report it, the profile they are judged under and why (JSON
/// `runtimes[]`, `docs/json-schema.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeRuntime {
    /// `status.nodeInfo.containerRuntimeVersion`, trimmed (`containerd://1.6.6`).
    pub version: String,
    /// The profile the nodes are judged under.
    pub profile: RuntimeProfile,
    /// Why: how the version maps to the profile and what its matcher does.
    pub reason: String,
    /// The nodes reporting it, sorted.
    pub nodes: Vec<String>,
}

impl NodeRuntime {
    /// `containerd://1.6.6 (2 nodes): containerd 1.6.6 is in …` (input-derived parts
    /// unescaped).
    pub fn line(&self) -> String {
        let n = self.nodes.len();
        let noun = if n == 1 { "node" } else { "nodes" };
        format!("{} ({n} {noun}): {}", self.version, self.reason)
    }
}

/// What to do with a node whose runtime or Windows build cannot be read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OddNodes {
    /// Skip it, with a note naming the node and the field (the default).
    #[default]
    Skip,
    /// Refuse the whole list, naming the node and the field (`--strict-nodes`).
    Refuse,
}

impl OddNodes {
    /// [`OddNodes::Refuse`] when `strict` (`--strict-nodes`), else [`OddNodes::Skip`].
    pub fn strict(strict: bool) -> OddNodes {
        match strict {
            true => OddNodes::Refuse,
            false => OddNodes::Skip,
        }
    }
}

/// A node left out of the host rows: its runtime or Windows build cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedNode {
    /// `metadata.name`.
    pub node: String,
    /// The field that cannot be read, e.g. `status.nodeInfo.containerRuntimeVersion`.
    pub field: String,
    /// Why, naming the field and its value.
    pub reason: String,
}

impl std::fmt::Display for SkippedNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "node {}: {}", self.node, self.reason)
    }
}

/// Reads a node list from a file, or standard input for `-`, of at most `max_bytes`. A JSON
/// one (its first character `{`, after a UTF-8 byte-order mark) is streamed: memory grows with
/// what is kept of each node, not with the file (`nodes/stream.rs`); a YAML one (or a UTF-16 one) is
/// read whole, then parsed ([`parse_nodes`]).
pub fn read_nodes(path: &str, max_bytes: u64, odd: OddNodes) -> Result<NodeHosts, NodesError> {
    let unreadable = |e: crate::input::ReadError| NodesError {
        origin: path.to_string(),
        reason: e.reason,
        source: e.source.map(|e| NodesCause::Read(Arc::new(e))),
    };
    let mut input = crate::input::open_capped(path, max_bytes).map_err(unreadable)?;
    let json = {
        let head = match input.fill_buf() {
            Ok(head) => head,
            Err(e) => {
                let cannot = crate::input::ReadError {
                    reason: "cannot read".to_string(),
                    source: Some(e),
                };
                return Err(unreadable(input.get_ref().passed().unwrap_or(cannot)));
            }
        };
        let bom = usize::from(head.starts_with(b"\xEF\xBB\xBF")) * 3;
        let first = head[bom..].iter().find(|b| !b.is_ascii_whitespace());
        (first == Some(&b'{')).then_some(bom)
    };
    let Some(bom) = json else {
        let text = crate::input::read_rest(input).map_err(unreadable)?;
        return parse_nodes(&text, path, odd);
    };
    input.consume(bom);
    let mut de = serde_json::Deserializer::from_reader(&mut input);
    let nodes = json_hosts(&mut de, path, odd);
    match (nodes, input.get_ref().passed()) {
        (Err(_), Some(limit)) => Err(unreadable(limit)),
        (nodes, _) => nodes,
    }
}

/// Parses a node list (YAML or JSON); `origin` names it in errors.
pub fn parse_nodes(text: &str, origin: &str, odd: OddNodes) -> Result<NodeHosts, NodesError> {
    crate::yaml::check_nesting(text).map_err(|e| NodesError {
        origin: origin.to_string(),
        reason: e.to_string(),
        source: None,
    })?;
    // As kubectl reads files (apimachinery `util/yaml` `NewYAMLOrJSONDecoder`): text that
    // starts with `{` is JSON, which may hold characters YAML refuses (a raw U+009B).
    match text.trim_start().starts_with('{') {
        true => json_hosts(&mut serde_json::Deserializer::from_str(text), origin, odd),
        false => judge_nodes(yaml_nodes(text, origin)?, origin, odd),
    }
}

/// The host rows, notes and facts of the JSON node list `de` reads from `origin`, each node
/// judged as it is read (`nodes/stream.rs`).
fn json_hosts<'de, R: serde_json::de::Read<'de>>(
    de: &mut serde_json::Deserializer<R>,
    origin: &str,
    odd: OddNodes,
) -> Result<NodeHosts, NodesError> {
    let mut judge = Judge::new(odd);
    if let Some(single) = stream::json_nodes(de, origin, &mut |node| judge.take(node))? {
        judge = Judge::new(odd);
        judge.take(single);
    }
    judged(judge, origin)
}

/// The host rows, notes and facts of `nodes` read from `origin`.
fn judge_nodes(nodes: Vec<Node>, origin: &str, odd: OddNodes) -> Result<NodeHosts, NodesError> {
    let mut judge = Judge::new(odd);
    nodes.into_iter().for_each(|node| judge.take(node));
    judged(judge, origin)
}

/// What `judge` found of the nodes read from `origin`, or why the list is refused.
fn judged(judge: Judge, origin: &str) -> Result<NodeHosts, NodesError> {
    judge.finish().map_err(|reason| NodesError {
        origin: origin.to_string(),
        reason,
        source: None,
    })
}

/// A node list judged one node at a time, as it is read: what is kept of each node is its name
/// in its row and runtime, and its [`NodeFacts`], whose labels, taints and OS are kept once per
/// distinct [`NodeShape`]. The first node that refuses the list is remembered (the nodes after
/// it are counted, not judged): [`Judge::finish`] says it.
struct Judge {
    odd: OddNodes,
    /// Nodes taken so far (the next one's index).
    taken: usize,
    /// Why the list is refused, from the first node that refuses it.
    refused: Option<String>,
    rows: BTreeMap<(bool, String, RuntimeProfile), (Platform, Vec<String>)>,
    runtimes: BTreeMap<String, (RuntimeChoice, Vec<String>)>,
    notes: Vec<String>,
    skipped: Vec<SkippedNode>,
    facts: Vec<NodeFacts>,
    /// Every distinct shape kept, each once.
    shapes: HashSet<Arc<NodeShape>>,
}

impl Judge {
    /// Nothing judged yet; `odd` says what a node whose runtime or build cannot be read does.
    fn new(odd: OddNodes) -> Judge {
        Judge {
            odd,
            taken: 0,
            refused: None,
            rows: BTreeMap::new(),
            runtimes: BTreeMap::new(),
            notes: Vec::new(),
            skipped: Vec::new(),
            facts: Vec::new(),
            shapes: HashSet::new(),
        }
    }

    /// Judges the next node of the list, unless an earlier one refused it.
    fn take(&mut self, node: Node) {
        let index = self.taken;
        self.taken += 1;
        if self.refused.is_none()
            && let Err(reason) = self.judge(&node, index)
        {
            self.refused = Some(reason);
        }
    }

    /// Puts `node`, item `index`, in its row, or in the nodes skipped; `Err`: why it refuses
    /// the list.
    fn judge(&mut self, node: &Node, index: usize) -> Result<(), String> {
        let (platform, version, choice) = match node_host(node, index) {
            Ok(host) => host,
            Err(Unusable::Odd(s)) if self.odd == OddNodes::Skip => {
                if let Ok(f) = node_facts(node, &mut self.shapes) {
                    self.facts.push(NodeFacts {
                        skipped: Some(s.to_string()),
                        ..f
                    });
                }
                self.skipped.push(s);
                return Ok(());
            }
            Err(Unusable::Odd(s)) => return Err(s.to_string()),
            Err(Unusable::Refused(reason)) => return Err(reason),
        };
        self.notes.extend(choice.note().map(str::to_string));
        self.facts.push(node_facts(node, &mut self.shapes)?);
        let name = node.metadata.name.trim().to_string();
        let key = (platform.is_windows(), platform.to_string(), choice.profile);
        (self.rows.entry(key).or_insert_with(|| (platform, vec![])).1).push(name.clone());
        let runtime = self.runtimes.entry(version);
        runtime.or_insert_with(|| (choice, vec![])).1.push(name);
        Ok(())
    }

    /// The host rows, notes and facts of the nodes taken, or why the list is refused.
    fn finish(self) -> Result<NodeHosts, String> {
        if let Some(reason) = self.refused {
            return Err(reason);
        }
        let (mut notes, skipped) = (self.notes, self.skipped);
        if self.rows.is_empty() {
            let first = skipped.first().map(ToString::to_string).unwrap_or_default();
            return Err(format!(
                "no node can be judged: all {} skipped (first: {first})",
                skipped.len()
            ));
        }
        notes.sort();
        notes.dedup();
        notes.extend(skipped.iter().map(|s| {
            format!("{s}: node skipped, its pods are judged on the other nodes (--strict-nodes refuses the list)")
        }));
        let hosts = (self.rows.into_iter())
            .map(|((_, _, runtime), (platform, mut nodes))| {
                nodes.sort();
                Host {
                    platform,
                    runtime: Some(runtime),
                    nodes,
                }
            })
            .collect();
        Ok(NodeHosts {
            hosts,
            notes,
            skipped,
            nodes: self.facts,
            runtimes: node_runtimes(self.runtimes),
        })
    }
}

/// One [`NodeRuntime`] per runtime as reported, from its choice and nodes.
fn node_runtimes(runtimes: BTreeMap<String, (RuntimeChoice, Vec<String>)>) -> Vec<NodeRuntime> {
    runtimes
        .into_iter()
        .map(|(version, (choice, mut nodes))| {
            nodes.sort();
            NodeRuntime {
                version,
                profile: choice.profile,
                reason: choice.reason,
                nodes,
            }
        })
        .collect()
}

/// What placement reads of `node`: its name, labels (values trimmed), taints and cordon, its
/// shape taken from `shapes` when a node of the same shape was read before (else added); a
/// taint without a key or with an unknown effect is refused, naming the node and the field.
fn node_facts(node: &Node, shapes: &mut HashSet<Arc<NodeShape>>) -> Result<NodeFacts, String> {
    let name = node.metadata.name.trim().to_string();
    let mut taints = Vec::new();
    for (i, t) in node.spec.taints.iter().flatten().enumerate() {
        let text = |o: &Option<String>| o.as_deref().unwrap_or("").trim().to_string();
        let field = format!("spec.taints[{i}]");
        let key = text(&t.key);
        if key.is_empty() {
            return Err(format!("node {name}: {field}.key is missing"));
        }
        let effect = Effect::parse(&text(&t.effect)).ok_or_else(|| {
            format!(
                "node {name}: {field}.effect '{}' is not NoSchedule, PreferNoSchedule or NoExecute",
                text(&t.effect)
            )
        })?;
        taints.push(Taint {
            key,
            value: text(&t.value),
            effect,
        });
    }
    let os = match node.status.node_info.operating_system.trim() {
        "" => node.metadata.labels.get(LABEL_OS).map_or("", |v| v.trim()),
        os => os,
    };
    let labels = (node.metadata.labels.iter())
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let shape = NodeShape::new(&name, labels, taints, os);
    let shape = match shapes.get(&shape) {
        Some(kept) => Arc::clone(kept),
        None => {
            let shape = Arc::new(shape);
            shapes.insert(Arc::clone(&shape));
            shape
        }
    };
    Ok(NodeFacts {
        shape,
        unschedulable: node.spec.unschedulable.unwrap_or(false),
        skipped: None,
        name,
    })
}

/// The nodes of a YAML node list (a `List` or `NodeList`'s items, or the one `Node`), or why
/// it is not one: read whole, through the reader every other YAML input goes through (the
/// alias guard, merge keys).
fn yaml_nodes(text: &str, origin: &str) -> Result<Vec<Node>, NodesError> {
    let err = |reason: String| NodesError {
        origin: origin.to_string(),
        reason,
        source: None,
    };
    crate::yaml::check_yaml(text).map_err(|e| err(e.to_string()))?;
    let mut doc: Value = serde_yaml_ng::from_str(text).map_err(|e| NodesError {
        source: Some(NodesCause::Yaml(Arc::new(e))),
        ..err("not YAML or JSON (expected `oc get nodes -o yaml` or `-o json` output)".to_string())
    })?;
    crate::yaml::merge_keys(&mut doc).map_err(|e| err(e.to_string()))?;
    let kind = doc.get("kind").and_then(Value::as_str).map(str::to_string);
    let items = match doc.get_mut("items").map(std::mem::take) {
        Some(Value::Sequence(items)) => Some(items),
        _ => None,
    };
    let items = match is_single_node(kind.as_deref(), items.as_ref().map(Vec::len)) {
        Ok(true) => vec![doc],
        Ok(false) => items.unwrap_or_default(),
        Err(reason) => return Err(err(reason)),
    };
    (items.into_iter().enumerate())
        .map(|(i, item)| {
            serde_yaml_ng::from_value(item).map_err(|e| NodesError {
                source: Some(NodesCause::Yaml(Arc::new(e))),
                ..err(format!("item {i} is not a Node"))
            })
        })
        .collect()
}

/// Why a node gives no host row.
enum Unusable {
    /// Its runtime or Windows build cannot be read: skipped unless `--strict-nodes`.
    Odd(SkippedNode),
    /// Anything else: the list is refused, naming the node and the field.
    Refused(String),
}

/// One node's platform, runtime as reported (trimmed) and runtime profile with why, or why it
/// gives no row, naming the node and the field.
fn node_host(node: &Node, index: usize) -> Result<(Platform, String, RuntimeChoice), Unusable> {
    let kind = node.kind.trim();
    if kind != "Node" {
        let kind = if kind.is_empty() { "no kind" } else { kind };
        return Err(Unusable::Refused(format!(
            "item {index} is not a Node ({kind})"
        )));
    }
    let name = node.metadata.name.trim();
    if name.is_empty() {
        return Err(Unusable::Refused(format!(
            "item {index}: metadata.name is missing"
        )));
    }
    let info = &node.status.node_info;
    let labels = &node.metadata.labels;
    let label = |key: &str| labels.get(key).map_or("", |v| v.trim());
    let field =
        |key: &str, info_field: &str, info_value: &str| match (label(key), info_value.trim()) {
            ("", "") => Err(format!(
                "node {name}: neither the {key} label nor status.nodeInfo.{info_field} is set"
            )),
            ("", v) => Ok((format!("status.nodeInfo.{info_field}"), v.to_string())),
            (v, _) => Ok((format!("metadata.labels[\"{key}\"]"), v.to_string())),
        };
    let os = match info.operating_system.trim() {
        "" => {
            field(LABEL_OS, "operatingSystem", "")
                .map_err(Unusable::Refused)?
                .1
        }
        os => os.to_string(),
    };
    let (arch_field, arch) =
        field(LABEL_ARCH, "architecture", &info.architecture).map_err(Unusable::Refused)?;
    if !is_known_arch(&arch) {
        return Err(Unusable::Refused(format!(
            "node {name}: {arch_field} '{arch}' is not a known architecture"
        )));
    }
    let odd = |field: &str, reason: String| {
        Unusable::Odd(SkippedNode {
            node: name.to_string(),
            field: field.to_string(),
            reason,
        })
    };
    let platform = match os.as_str() {
        "linux" => Platform::new("linux", &arch),
        "windows" => {
            let kernel = "status.nodeInfo.kernelVersion";
            let (f, v) = field(LABEL_WINDOWS_BUILD, "kernelVersion", &info.kernel_version)
                .map_err(|why| odd(kernel, why.replacen(&format!("node {name}: "), "", 1)))?;
            let build = windows_build(&v).ok_or_else(|| {
                odd(
                    &f,
                    format!("{f} '{v}' is not a Windows version such as 10.0.17763"),
                )
            })?;
            Platform::new("windows", &arch)
                .with_os_version(&WindowsVersion::host(build).to_string())
        }
        other => {
            return Err(Unusable::Refused(format!(
                "node {name}: operating system '{other}' is neither linux nor windows"
            )));
        }
    };
    let version = info.container_runtime_version.trim();
    let choice = node_runtime(name, &platform, version)?;
    Ok((platform, version.to_string(), choice))
}

/// A node's runtime profile, and why, from its `containerRuntimeVersion` `rv`, or why it
/// cannot be read.
fn node_runtime(name: &str, platform: &Platform, rv: &str) -> Result<RuntimeChoice, Unusable> {
    let rv = rv.trim();
    let field = "status.nodeInfo.containerRuntimeVersion";
    let odd = |reason: String| {
        Unusable::Odd(SkippedNode {
            node: name.to_string(),
            field: field.to_string(),
            reason,
        })
    };
    let choice = runtime_profile(rv).map_err(|why| odd(format!("{field} '{rv}' {why}")))?;
    if platform.is_windows() && !choice.profile.runs_windows() {
        return Err(odd(format!(
            "{field} '{rv}' on a Windows node (cri-o runs Linux nodes only)"
        )));
    }
    if !platform.is_windows() && choice.profile.is_docker() {
        return Err(odd(format!(
            "{field} '{rv}' on a Linux node: {} follows moby's Windows pull only \
             (distribution/pull_v2_unix.go is not modelled)",
            choice.profile
        )));
    }
    Ok(choice)
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

/// The runtime profile of a `containerRuntimeVersion` (`containerd://1.7.27`, `cri-o://1.31.6`,
/// `docker://19.3.14`) and why ([`RuntimeChoice::note`] when no profile covers a containerd
/// version); `Err` says why it is unusable. Which releases a profile covers, and the nearest for
/// other containerd releases, is the profile table's ([`RuntimeProfile::of_containerd`],
/// [`RuntimeProfile::of_docker`]); a Docker Engine release no row covers has no nearest: its
/// code was not read.
pub fn runtime_profile(version: &str) -> Result<RuntimeChoice, String> {
    let Some((scheme, rest)) = version.split_once("://") else {
        return Err("is not RUNTIME://VERSION".to_string());
    };
    match scheme {
        "cri-o" => Ok(RuntimeChoice::as_reported(
            RuntimeProfile::CRI_O,
            scheme,
            rest,
        )),
        "containerd" => Ok(RuntimeChoice::containerd(release_version(rest)?.1)),
        "docker" => {
            let (core, release) = release_version(rest)?;
            RuntimeProfile::of_docker(release)
                .map(|p| RuntimeChoice::as_reported(p, scheme, core))
                .ok_or_else(|| {
                    format!(
                        "is Docker Engine {core}, a release whose Windows pull code (moby \
                         distribution/pull_v2_windows.go) was not read: imgcheck follows moby {}",
                        RuntimeProfile::docker_releases().join(", ")
                    )
                })
        }
        other => Err(format!(
            "names runtime '{other}' (imgcheck models containerd, docker and cri-o)"
        )),
    }
}

/// The `MAJOR.MINOR.PATCH` of a runtime version (a leading `v` and any `-…`, `+…`, `~…`
/// suffix ignored), as text and as numbers.
fn release_version(rest: &str) -> Result<(&str, (u32, u32, u32)), String> {
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
    Ok((core, (major, minor, patch)))
}

crate::error::input_errors!(NodesError);

mod model;
mod stream;
#[cfg(test)]
mod tests;
