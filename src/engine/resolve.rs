//! Which manifest a host pulls from a graph: the runtime's selection
//! ([`crate::platform::select`]) applied to each list on the way down — a selected child that
//! is itself an index is walked in turn — with every candidate's story. Every entry is a
//! candidate, attestations too: runtimes select by platform, not by annotation (issue 22).

use std::borrow::Cow;
use std::rc::Rc;

use serde::Serialize;

use super::memo;
use crate::graph::{Content, Graph, Image, Node, Problem};
use crate::manifest::{DOCKER_LIST, Descriptor, Index, OCI_INDEX};
use crate::platform::{
    ANNOTATION_ZSTD, Candidate, ListFormat, Platform, RuntimeProfile, Selection, matches,
};

/// The outcome of resolving one host against a graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostResolution {
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
pub fn resolve(graph: &Graph, host: &Platform, profile: RuntimeProfile) -> HostResolution {
    pick(graph, host, profile).resolution()
}

/// One list the walk selected from: the list and the runtime's selection (shared with the
/// memo).
struct Step<'g> {
    index: &'g Index,
    selection: Rc<Selection>,
}

/// Where a walk ends.
enum End<'g> {
    /// No entry of the last list is selected.
    Nothing,
    /// Entry `i` of the last list is selected; its node when it was fetched.
    Entry(usize, Option<&'g Node>),
    /// The root is a single image; `matched` when its config matches the host.
    Image(&'g Image, bool),
    /// Nothing can be selected from the root (schema1, or an object that could not be read).
    Unresolvable(Problem),
}

/// What a host pulls from a graph, borrowed from it: the lists the selection walked, outermost
/// first, and where it ended. The judge reads the outcome; [`Pick::resolution`] adds every
/// candidate's story for `resolve`.
pub(crate) struct Pick<'g> {
    root: &'g Node,
    steps: Vec<Step<'g>>,
    /// The nested indexes descended into, outermost first.
    nested: Vec<&'g Node>,
    end: End<'g>,
}

/// Walks the graph from its root as a node of platform `host` does under `profile`: a
/// selected child that is itself an index is selected from in turn.
pub(crate) fn pick<'g>(graph: &'g Graph, host: &Platform, profile: RuntimeProfile) -> Pick<'g> {
    let root = &graph.root;
    let mut pick = Pick {
        root,
        steps: Vec::new(),
        nested: Vec::new(),
        end: End::Nothing,
    };
    let mut node = root;
    pick.end = loop {
        let (index, children) = match &node.content {
            Content::Index { index, children } => (index, children),
            Content::Image(img) => {
                let cfg = img.config.as_ref().ok().map(|c| c.platform());
                break End::Image(img, cfg.is_some_and(|p| matches(profile, host, &p)));
            }
            Content::Schema1 => break End::Unresolvable(Problem::Bad("schema1 manifest".into())),
            Content::Problem(p) => break End::Unresolvable(p.clone()),
        };
        let selection = select_in(node, index, children, host, profile);
        let selected = selection.selected;
        pick.steps.push(Step { index, selection });
        let Some(i) = selected else {
            break End::Nothing;
        };
        // CRI-O reads the entry by the type the registry serves; containerd by the list's.
        match children[i].as_ref().map(|c| c.read_by(profile)) {
            // containers/image takes one list level only (copy's `determineManifestConversion`
            // → `manifest.FromBlob` of the instance: "Unexpectedly received a manifest list
            // instead of a manifest for a single image").
            Some(child)
                if matches!(child.content, Content::Index { .. }) && profile.one_list_level() =>
            {
                break End::Entry(i, Some(child));
            }
            Some(child) if matches!(child.content, Content::Index { .. }) => {
                pick.nested.push(child);
                node = child;
            }
            child => break End::Entry(i, child),
        }
    };
    pick
}

/// The runtime's selection among a list's entries, from this thread's memo when the list,
/// host and profile were seen lately.
fn select_in(
    node: &Node,
    index: &Index,
    children: &[Option<Node>],
    host: &Platform,
    profile: RuntimeProfile,
) -> Rc<Selection> {
    let candidates: Vec<Candidate> = index
        .manifests
        .iter()
        .zip(
            children
                .iter()
                .map(|c| c.as_ref().map(|c| c.read_by(profile))),
        )
        .map(|(d, child)| Candidate {
            platform: d.platform.as_ref().map(Cow::Borrowed),
            // Read only for an entry without platform (`platform::consider`).
            config_platform: d
                .platform
                .is_none()
                .then(|| config_platform(child))
                .flatten(),
            zstd: d.annotations.get(ANNOTATION_ZSTD).map(String::as_str) == Some("true"),
            nested: is_nested(d, child),
        })
        .collect();
    memo::selection(
        profile,
        host,
        list_format(index, &node.media_type),
        &candidates,
    )
}

impl<'g> Pick<'g> {
    /// The digest of the manifest the host pulls, as the list writes it.
    pub(crate) fn digest(&self) -> Option<Cow<'g, str>> {
        match self.end {
            End::Entry(i, _) => self.steps.last().map(|s| {
                let d: &'g str = &s.index.manifests[i].digest;
                Cow::Borrowed(d)
            }),
            End::Image(_, true) => Some(Cow::Owned(self.root.digest.to_string())),
            _ => None,
        }
    }

    /// The image whose config tells what the host runs: the selected entry's (when fetched),
    /// or the single image's, matched or not.
    pub(crate) fn image(&self) -> Option<&'g Node> {
        match self.end {
            End::Entry(_, child) => child,
            End::Image(..) => Some(self.root),
            End::Nothing | End::Unresolvable(_) => None,
        }
    }

    /// Why the runtime refuses what it selected, though it could be fetched and read: a
    /// manifest list where CRI-O wants an image, or an attestation (its layers in-toto
    /// statements, which no runtime unpacks).
    pub(crate) fn refusal(&self) -> Option<&'static str> {
        let End::Entry(_, Some(child)) = self.end else {
            return None;
        };
        match &child.content {
            Content::Index { .. } => Some(NESTED_LIST_REFUSED),
            Content::Image(img) if is_attestation_image(img) => Some(ATTESTATION_REFUSED),
            _ => None,
        }
    }

    /// Why the selected child (or the root) cannot be judged or pulled, if so.
    pub(crate) fn problem(&self) -> Option<Problem> {
        if let Some(why) = self.refusal() {
            return Some(Problem::Bad(why.to_string()));
        }
        match &self.end {
            End::Entry(_, child) => child.and_then(child_problem),
            End::Image(img, _) => img.config.as_ref().err().cloned(),
            End::Unresolvable(p) => Some(p.clone()),
            End::Nothing => None,
        }
    }

    /// The nested indexes the selection descended into, outermost first.
    pub(crate) fn descended_into(&self) -> Vec<String> {
        self.nested.iter().map(|n| n.digest.to_string()).collect()
    }

    /// The resolution with every candidate's story.
    pub(crate) fn resolution(&self) -> HostResolution {
        let config = config_platform(self.image());
        let mut candidates: Vec<CandidateReport> = self
            .steps
            .iter()
            .flat_map(|s| {
                s.selection.considered.iter().map(|c| CandidateReport {
                    digest: s.index.manifests[c.index].digest.clone(),
                    platform: s.index.manifests[c.index].platform.clone(),
                    matched: c.matched,
                    reason: c.reason.clone(),
                })
            })
            .collect();
        let platform = match &self.end {
            End::Entry(i, _) => self.steps.last().and_then(|s| {
                s.index.manifests[*i]
                    .platform
                    .clone()
                    .or_else(|| config.clone())
            }),
            End::Image(_, matched) => config.clone().filter(|_| *matched),
            End::Nothing | End::Unresolvable(_) => None,
        };
        if let End::Image(_, ok) = self.end {
            candidates.push(CandidateReport {
                digest: self.root.digest.to_string(),
                platform: config.clone(),
                matched: ok,
                reason: if ok {
                    "single image; its config matches".into()
                } else {
                    "single image; its config does not match the host".into()
                },
            });
        }
        HostResolution {
            digest: self.digest().map(Cow::into_owned),
            platform,
            config_platform: config,
            candidates,
            descended_into: self.descended_into(),
            child_problem: self.problem(),
        }
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

/// CRI-O's refusal of a selected entry that is itself a manifest list.
const NESTED_LIST_REFUSED: &str = "it is itself a manifest list, which containers/image \
    refuses where it wants an image (\"Unexpectedly received a manifest list instead of a \
    manifest for a single image\")";

/// Every runtime's refusal of a selected attestation manifest.
const ATTESTATION_REFUSED: &str = "it is an attestation manifest (its layers are in-toto \
    statements, not filesystem layers), which no runtime can unpack";

/// The media type of an in-toto statement layer (buildx and Tekton Chains attestations).
const IN_TOTO: &str = "application/vnd.in-toto+json";

/// Is `img` an attestation manifest: every layer an in-toto statement?
fn is_attestation_image(img: &Image) -> bool {
    let layers = &img.manifest.layers;
    !layers.is_empty() && layers.iter().all(|l| l.media_type == IN_TOTO)
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
