//! What `inspect` shows of a graph: each entry's list platform next to its config platform
//! and status. Data only; `report` renders it.

use serde::Serialize;

use super::judge::entries::entry_checks;
use super::resolve::config_platform;
use crate::graph::{Content, Graph, Node};
use crate::manifest::Descriptor;
use crate::platform::Platform;

/// One entry as `inspect` shows it: what the list says next to what the image is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntryView {
    /// Entry digest.
    pub digest: String,
    /// Entry media type.
    pub media_type: String,
    /// Platform written in the list.
    pub platform: Option<Platform>,
    /// Platform of the image config.
    pub config_platform: Option<Platform>,
    /// `attestation`, `ok`, the problem with the child, or the rules `verify` (default
    /// policy: process-isolated Windows hosts) reports about the entry itself
    /// (`os-version-missing`, `platform-mismatch`…).
    pub status: String,
}

/// What `inspect` shows for a reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InspectView {
    /// The reference.
    pub reference: String,
    /// Top digest.
    pub digest: String,
    /// `index`, `image`, `schema1` or the problem.
    pub kind: String,
    /// Entries (one for a single image).
    pub entries: Vec<EntryView>,
}

fn status_of(node: Option<&Node>) -> String {
    match node.map(|n| &n.content) {
        None => "not fetched".into(),
        Some(Content::Problem(p)) => p.to_string(),
        Some(Content::Schema1) => "schema1".into(),
        Some(Content::Index { .. }) => "nested index".into(),
        Some(Content::Image(i)) => match &i.config {
            Ok(_) => "ok".into(),
            Err(p) => format!("config {p}"),
        },
    }
}

/// An entry's status: the child's problem, else the rules of the findings `verify` reports
/// about the entry under the default policy (process-isolated Windows hosts), else `ok`.
fn entry_status(d: &Descriptor, child: Option<&Node>) -> String {
    let status = status_of(child);
    if status != "ok" {
        return status;
    }
    let rules: Vec<&str> = entry_checks(d, child, true)
        .iter()
        .map(|f| f.rule.id())
        .collect();
    match rules.is_empty() {
        true => status,
        false => rules.join(", "),
    }
}

/// Builds the `inspect` view of a graph.
pub fn inspect(graph: &Graph) -> InspectView {
    let root = &graph.root;
    let (kind, entries) = match &root.content {
        Content::Index { index, children } => (
            "index".to_string(),
            index
                .manifests
                .iter()
                .zip(children)
                .map(|(d, c)| EntryView {
                    digest: d.digest.clone(),
                    media_type: d.media_type.clone(),
                    platform: d.platform.clone(),
                    config_platform: config_platform(c.as_ref()),
                    status: if d.is_attestation() {
                        "attestation".into()
                    } else {
                        entry_status(d, c.as_ref())
                    },
                })
                .collect(),
        ),
        Content::Image(_) => (
            "image".to_string(),
            vec![EntryView {
                digest: root.digest.to_string(),
                media_type: root.media_type.clone(),
                platform: None,
                config_platform: config_platform(Some(root)),
                status: status_of(Some(root)),
            }],
        ),
        Content::Schema1 => ("schema1".to_string(), vec![]),
        Content::Problem(p) => (p.to_string(), vec![]),
    };
    InspectView {
        reference: graph.reference.clone(),
        digest: root.digest.to_string(),
        kind,
        entries,
    }
}
