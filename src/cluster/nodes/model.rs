//! What a node list is read into: the fields of a node imgcheck keeps ([`Node`] and its parts,
//! small `#[serde(default)]` structs), the error a list that cannot be used is
//! ([`NodesError`]), and the nodes a list's `kind` gives ([`nodes_of_kind`]).

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

/// The nodes of a document of `kind` with `items` (a `List` or `NodeList`), or the document
/// itself (`single`, a `Node`), or why it is not a node list.
pub(super) fn nodes_of_kind<T>(
    kind: Option<&str>,
    items: Option<Vec<T>>,
    single: impl FnOnce() -> T,
) -> Result<Vec<T>, String> {
    let nodes = match kind {
        Some("List" | "NodeList") => items.ok_or("the List has no 'items' array")?,
        Some("Node") => vec![single()],
        Some(k) => {
            return Err(format!(
                "not a node list: kind is '{k}' (expected a List of Node, or a Node)"
            ));
        }
        None => {
            return Err(
                "not a node list: no 'kind' (expected a List of Node, or a Node)".to_string(),
            );
        }
    };
    match nodes.is_empty() {
        true => Err("the list holds no nodes".to_string()),
        false => Ok(nodes),
    }
}
