//! Which manifest a host pulls from a graph: the runtime's selection
//! ([`crate::platform::select`]) applied to each list on the way down — a selected child that
//! is itself an index is walked in turn — with every candidate's story. Every entry is a
//! candidate, attestations too: runtimes select by platform, not by annotation (issue 22).

use std::borrow::Cow;

use serde::Serialize;

use crate::graph::{Content, Graph, Image, Node, Problem};
use crate::manifest::{DOCKER_LIST, Descriptor, Index, OCI_INDEX};
use crate::platform::{
    ANNOTATION_ZSTD, Candidate, Considered, ListFormat, Platform, RuntimeProfile, matches, select,
};

/// The outcome of resolving one host against a graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resolution {
    /// The manifest the host pulls.
    pub digest: Option<String>,
    /// The platform of the selected entry (descriptor, or config for a single image).
    pub platform: Option<Platform>,
    /// The selected image's config platform, when known.
    pub config_platform: Option<Platform>,
    /// Every candidate considered, in the runtime's order.
    pub candidates: Vec<CandidateReport>,
    /// The nested indexes the selection descended into, outermost first (empty when the
    /// selected entry is an entry of the top list).
    pub descended_into: Vec<String>,
    /// Why the selected child could not be judged, if so (missing, corrupt, …).
    #[serde(skip)]
    pub child_problem: Option<Problem>,
}

/// One candidate of a resolution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CandidateReport {
    /// Entry digest.
    pub digest: String,
    /// Entry platform, if any.
    pub platform: Option<Platform>,
    /// Whether it matches the host.
    pub matched: bool,
    /// Why it was or was not taken.
    pub reason: String,
}

/// The config platform of the image at `node`, when it is an image with a usable config.
pub(super) fn config_platform(node: Option<&Node>) -> Option<Platform> {
    node.and_then(Node::image)
        .and_then(|i| i.config.as_ref().ok())
        .map(|c| c.platform())
}

/// Which manifest a node of platform `host` pulls from the graph under `profile`
/// (see `docs/matching.md`): nested indexes are walked the same way.
pub fn resolve(graph: &Graph, host: &Platform, profile: RuntimeProfile) -> Resolution {
    resolve_node(&graph.root, host, profile)
}

fn resolve_node(node: &Node, host: &Platform, profile: RuntimeProfile) -> Resolution {
    match &node.content {
        Content::Index { index, children } => resolve_index(node, index, children, host, profile),
        Content::Image(img) => resolve_image(node, img, host, profile),
        Content::Schema1 => unresolvable(Problem::Bad("schema1 manifest".into())),
        Content::Problem(p) => unresolvable(p.clone()),
    }
}

/// The format of a list: a Docker manifest list or an OCI index.
fn list_format(index: &Index, media_type: &str) -> ListFormat {
    if index.media_type.as_deref() == Some(DOCKER_LIST) || media_type == DOCKER_LIST {
        ListFormat::Docker
    } else {
        ListFormat::Oci
    }
}

/// Is the entry `d` (fetched as `child`) itself a manifest list?
fn is_nested(d: &Descriptor, child: Option<&Node>) -> bool {
    match child {
        Some(c) => matches!(c.content, Content::Index { .. }),
        None => d.media_type == OCI_INDEX || d.media_type == DOCKER_LIST,
    }
}

/// Selects among a list's entries; a selected nested index is resolved in turn, its
/// candidates following the outer list's.
fn resolve_index(
    node: &Node,
    index: &Index,
    children: &[Option<Node>],
    host: &Platform,
    profile: RuntimeProfile,
) -> Resolution {
    let candidates: Vec<Candidate> = index
        .manifests
        .iter()
        .zip(children)
        .map(|(d, child)| Candidate {
            platform: d.platform.as_ref().map(Cow::Borrowed),
            config_platform: config_platform(child.as_ref()),
            zstd: d.annotations.get(ANNOTATION_ZSTD).map(String::as_str) == Some("true"),
            nested: is_nested(d, child.as_ref()),
        })
        .collect();
    let format = list_format(index, &node.media_type);
    let selection = select(profile, host, format, &candidates);
    let report = |c: &Considered| CandidateReport {
        digest: index.manifests[c.index].digest.clone(),
        platform: index.manifests[c.index].platform.clone(),
        matched: c.matched,
        reason: c.reason.clone(),
    };
    let considered: Vec<CandidateReport> = selection.considered.iter().map(report).collect();
    let Some(i) = selection.selected else {
        return Resolution {
            digest: None,
            platform: None,
            config_platform: None,
            candidates: considered,
            descended_into: vec![],
            child_problem: None,
        };
    };
    let child = children[i].as_ref();
    if let Some(child) = child
        && matches!(child.content, Content::Index { .. })
    {
        let mut inner = resolve_node(child, host, profile);
        let mut all = considered;
        all.append(&mut inner.candidates);
        inner.candidates = all;
        inner.descended_into.insert(0, child.digest.to_string());
        return inner;
    }
    Resolution {
        digest: Some(index.manifests[i].digest.clone()),
        platform: index.manifests[i]
            .platform
            .clone()
            .or_else(|| config_platform(child)),
        config_platform: config_platform(child),
        candidates: considered,
        descended_into: vec![],
        child_problem: child.and_then(child_problem),
    }
}

/// Why a selected child cannot be judged, if so.
fn child_problem(child: &Node) -> Option<Problem> {
    match &child.content {
        Content::Problem(p) => Some(p.clone()),
        Content::Image(img) => img.config.as_ref().err().cloned(),
        Content::Schema1 => Some(Problem::Bad("schema1 child".into())),
        Content::Index { .. } => None,
    }
}

/// A single image: the host pulls it when its config matches.
fn resolve_image(node: &Node, img: &Image, host: &Platform, profile: RuntimeProfile) -> Resolution {
    let cfg = img.config.as_ref().ok().map(|c| c.platform());
    let ok = cfg.as_ref().is_some_and(|p| matches(profile, host, p));
    Resolution {
        digest: ok.then(|| node.digest.to_string()),
        platform: cfg.clone().filter(|_| ok),
        config_platform: cfg.clone(),
        candidates: vec![CandidateReport {
            digest: node.digest.to_string(),
            platform: cfg,
            matched: ok,
            reason: if ok {
                "single image; its config matches".into()
            } else {
                "single image; its config does not match the host".into()
            },
        }],
        descended_into: vec![],
        child_problem: img.config.as_ref().err().cloned(),
    }
}

/// Nothing can be selected from a schema1 manifest or an object that could not be read.
fn unresolvable(problem: Problem) -> Resolution {
    Resolution {
        digest: None,
        platform: None,
        config_platform: None,
        candidates: vec![],
        descended_into: vec![],
        child_problem: Some(problem),
    }
}
