//! What a node list is read into: the fields of a node imgcheck keeps ([`Node`] and its parts,
//! small `#[serde(default)]` structs), the error a list that cannot be used is
//! ([`NodesError`]), and where a list's `kind` says its nodes are ([`is_single_node`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;

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
    /// The text (starting with `{`) is not JSON.
    #[error(transparent)]
    Json(Arc<serde_json::Error>),
    /// The text is not YAML (nor JSON), or an item does not have a Node's shape.
    #[error(transparent)]
    Yaml(Arc<serde_yaml_ng::Error>),
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct Node {
    pub(super) kind: String,
    pub(super) metadata: Metadata,
    pub(super) spec: Spec,
    pub(super) status: Status,
}

/// What placement reads of a node's `spec` (taints, cordon).
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct Spec {
    pub(super) taints: Option<Vec<RawTaint>>,
    pub(super) unschedulable: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct RawTaint {
    pub(super) key: Option<String>,
    pub(super) value: Option<String>,
    pub(super) effect: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct Metadata {
    pub(super) name: String,
    pub(super) labels: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct Status {
    pub(super) node_info: NodeInfo,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct NodeInfo {
    pub(super) architecture: String,
    pub(super) operating_system: String,
    pub(super) kernel_version: String,
    pub(super) container_runtime_version: String,
}

/// Whether the nodes of a document of `kind` holding `items` nodes (`None`: no `items` array)
/// are the document itself (`true`: a `Node`) or its items (`false`: a `List` or `NodeList`),
/// or why it is not a node list.
pub(super) fn is_single_node(kind: Option<&str>, items: Option<usize>) -> Result<bool, String> {
    match (kind, items) {
        (Some("List" | "NodeList"), None) => Err("the List has no 'items' array".to_string()),
        (Some("List" | "NodeList"), Some(0)) => Err("the list holds no nodes".to_string()),
        (Some("List" | "NodeList"), Some(_)) => Ok(false),
        (Some("Node"), _) => Ok(true),
        (Some(k), _) => Err(format!(
            "not a node list: kind is '{k}' (expected a List of Node, or a Node)"
        )),
        (None, _) => {
            Err("not a node list: no 'kind' (expected a List of Node, or a Node)".to_string())
        }
    }
}
