//! The per-node answer of a run with `--nodes` and pod templates: which node would pull which
//! image for which workload, and what it gets ([`NodePlacement`]); and what a report carries
//! besides its images ([`RunExtras`]): notes, placements, and the nodes' runtimes with the
//! profile each is judged under and why ([`NodeRuntime`]).

use serde::Serialize;

use super::finding::HostStatus;
use super::rules::Rule;
use crate::cluster::nodes::NodeRuntime;
use crate::cluster::upgrade::UpgradeReport;
use crate::platform::RuntimeProfile;

/// One container of one workload on one node: the image it pulls there and what the node's
/// runtime selects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodePlacement {
    /// The node's name.
    pub node: String,
    /// The workload's kind (`DaemonSet`).
    pub kind: String,
    /// The workload's namespace, when the manifest gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The workload's name.
    pub name: String,
    /// The container's name.
    pub container: String,
    /// Whether it is an init container.
    pub init: bool,
    /// The image, as its report names it.
    pub image: String,
    /// The node's host row (`windows/amd64:10.0.17763`); `null` when the image could not be
    /// judged for it.
    pub platform: Option<String>,
    /// The runtime profile the node was judged under.
    pub runtime: Option<RuntimeProfile>,
    /// The node's runtime as it reports it (`containerd://1.6.6`); `None` for a node skipped
    /// (its runtime or build unread).
    pub runtime_version: Option<String>,
    /// Why the node is judged under `runtime` (its [`NodeRuntime`]'s reason); `None` for a
    /// node skipped.
    pub runtime_reason: Option<String>,
    /// The digest the node pulls; `null` for none.
    pub selected: Option<String>,
    /// `ok`, or the rule of the problem.
    pub status: HostStatus,
}

impl NodePlacement {
    /// Whether the node cannot pull (or run) the image.
    pub fn fails(&self) -> bool {
        self.status != HostStatus::Ok
    }

    /// `winworker-4kq8x: DaemonSet ns/name, container c: no matching manifest for
    /// windows/amd64 10.0.17763 under containerd-1.7` (input-derived parts unescaped).
    pub fn line(&self) -> String {
        let workload = match &self.namespace {
            Some(ns) => format!("{} {ns}/{}", self.kind, self.name),
            None => format!("{} {}", self.kind, self.name),
        };
        let container = if self.init {
            "init container"
        } else {
            "container"
        };
        let under = self
            .runtime
            .map_or(String::new(), |r| format!(" under {r}"));
        let platform = self.platform.as_deref().unwrap_or("").replacen(':', " ", 1);
        let what = match self.status {
            HostStatus::Ok => format!("pulls {}", self.selected.as_deref().unwrap_or("")),
            HostStatus::Fails(Rule::NoMatch) => format!("no matching manifest for {platform}"),
            HostStatus::Fails(rule) => match &self.selected {
                Some(d) => format!("{rule} ({platform} selects {d})"),
                None => format!("{rule}"),
            },
        };
        format!(
            "{}: {workload}, {container} {}: {what}{under}",
            self.node, self.container
        )
    }
}

/// What a report shows besides its images: the notes about the run's inputs and the
/// per-node answer.
#[derive(Debug, Clone, Default)]
pub struct RunExtras {
    /// The notes (also printed on standard error as they arise), one line each.
    pub notes: Vec<String>,
    /// The per-node answer (`--nodes` with `--from-manifests`).
    pub placements: Vec<NodePlacement>,
    /// The runtimes the nodes report (`--nodes`), each with its profile and why.
    pub runtimes: Vec<NodeRuntime>,
    /// The upgrade gate (`--upgrade`): the runtime after the upgrade, the Windows rows before
    /// and after, and the rows whose verdict it changes.
    pub upgrade: Option<UpgradeReport>,
}
