//! Gathering the evidence a mirror check is judged on (all of its I/O): the source graph,
//! what each mirror a node would try holds, the layer blobs of the mirror that holds the
//! image (a `HEAD` each, foreign layers included, since a disconnected node cannot follow
//! their `urls`), and, when no mirror holds the digest, what a mirror holds under the tag.
//! The result is a plain [`Evidence`] value; the `judge` module turns it into findings.

use std::collections::{BTreeMap, BTreeSet};

use futures::StreamExt;

use super::plan::PullPlan;
use super::pull::{NodeOs, NodePlan};
use super::resolve::MirrorLocation;
use crate::digest::Digest;
use crate::graph::{Graph, WalkOptions};
use crate::manifest::{Descriptor, ManifestError};
use crate::reference::{ImageRef, RegistryRef};
use crate::session::Session;
use crate::source::FetchError;

/// Everything a mirror check of one source reference is judged on.
#[derive(Debug, Clone)]
pub struct Evidence {
    /// The source reference.
    pub reference: RegistryRef,
    /// The OS of the nodes that pull it.
    pub os: NodeOs,
    /// How a node pulls it.
    pub plan: PullPlan,
    /// What the source gave.
    pub source: SourceEvidence,
    /// What each mirror of the plan holds, in plan order, up to the first that holds
    /// something under the pulled name (a node stops there too). Empty when the source
    /// digest is unknown.
    pub mirrors: Vec<Look>,
    /// When every mirror lacks the digest: the first mirror that holds other content under
    /// the reference's tag (the list was rebuilt).
    pub rebuilt: Option<Rebuilt>,
    /// The manifest requests of the pull, as the node makes them (their URLs).
    pub requests: Vec<String>,
    /// Windows: when every mirror of the plan lacks the digest, the place Linux nodes look
    /// that holds it (`mirror-windows-path`).
    pub elsewhere: Option<RegistryRef>,
}

/// What the source gave.
#[derive(Debug, Clone)]
pub enum SourceEvidence {
    /// The source graph.
    Fetched(Graph),
    /// The source could not be reached, or was not asked (`--disconnected`), but the
    /// reference pins the digest the mirrors must hold (a check from inside the disconnected
    /// network).
    Pinned {
        /// The pinned digest.
        digest: Digest,
        /// Why the source could not be reached (`None`: it was not asked).
        error: Option<FetchError>,
    },
    /// The source could not be reached and the reference is a tag: nothing to compare.
    Unavailable(FetchError),
}

impl SourceEvidence {
    /// The digest the mirrors must hold, when known.
    pub fn digest(&self) -> Option<&Digest> {
        match self {
            SourceEvidence::Fetched(g) => Some(&g.root.digest),
            SourceEvidence::Pinned { digest, .. } => Some(digest),
            SourceEvidence::Unavailable(_) => None,
        }
    }

    /// The source graph, when fetched.
    pub fn graph(&self) -> Option<&Graph> {
        match self {
            SourceEvidence::Fetched(g) => Some(g),
            _ => None,
        }
    }
}

/// What one mirror holds under the name a node pulls.
#[derive(Debug, Clone)]
pub struct Look {
    /// The name pulled from the mirror (its repository, with the digest or the tag).
    pub target: RegistryRef,
    /// What it holds there.
    pub held: Held,
}

/// What one mirror holds for the pull.
#[derive(Debug, Clone)]
pub enum Held {
    /// The source's top digest: the mirror graph, and whether each of its layers is there.
    Same {
        /// The mirror's graph (children and configs fetched and verified by digest).
        graph: Graph,
        /// Whether the mirror holds each layer blob.
        blobs: BlobPresence,
    },
    /// Other content under the name (a tag pull of a rebuilt list).
    Other(Graph),
    /// Nothing.
    Absent,
    /// The mirror could not be asked; a node falls through to the next one.
    Unreachable(FetchError),
}

/// A mirror holding other content than the source's digest under the reference's tag.
#[derive(Debug, Clone)]
pub struct Rebuilt {
    /// The tagged name in the mirror.
    pub target: RegistryRef,
    /// What it holds.
    pub graph: Graph,
}

/// Why a layer blob's presence in the mirror is unknown.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BlobCheckError {
    /// The `HEAD` request failed.
    #[error(transparent)]
    Head(#[from] FetchError),
    /// The layer descriptor's digest is not a digest.
    #[error(transparent)]
    Descriptor(#[from] ManifestError),
}

/// Whether the mirror holds each layer blob (by digest string): `Ok(held)` or why the
/// `HEAD` failed.
pub type BlobPresence = BTreeMap<String, Result<bool, BlobCheckError>>;

/// Gathers the evidence for one source reference under one node OS's plan; the source of a
/// pinned reference is not asked when `ask_pinned_source` is off (`--disconnected`). `Err`
/// only for bad input; a source or mirror that cannot be reached is part of the evidence.
pub async fn gather(
    session: &Session,
    node_plan: &NodePlan,
    options: WalkOptions,
    ask_pinned_source: bool,
) -> Result<Evidence, FetchError> {
    let reference = &node_plan.reference;
    let source = match (&reference.digest, ask_pinned_source) {
        (Some(digest), false) => SourceEvidence::Pinned {
            digest: digest.clone(),
            error: None,
        },
        _ => match session
            .graph(&ImageRef::Registry(reference.clone()), options)
            .await
        {
            Ok(g) => SourceEvidence::Fetched(g),
            Err(e @ FetchError::BadInput(_)) => return Err(e),
            Err(e) => unreached(reference, e),
        },
    };
    let mut evidence = Evidence {
        reference: reference.clone(),
        os: node_plan.os,
        plan: node_plan.plan.clone(),
        source,
        mirrors: vec![],
        rebuilt: None,
        requests: node_plan.attempts.iter().map(|a| a.url.clone()).collect(),
        elsewhere: None,
    };
    let Some(digest) = evidence.source.digest().cloned() else {
        return Ok(evidence);
    };
    evidence.mirrors = look_in_mirrors(session, &evidence, &digest, options).await?;
    if all_absent(&evidence) {
        evidence.elsewhere = look_elsewhere(session, &node_plan.elsewhere, &digest, options).await;
    }
    if wants_rebuilt(&evidence) {
        evidence.rebuilt = look_under_tag(session, &evidence, &digest, options).await;
    }
    Ok(evidence)
}

/// The source could not be fetched: a pinned digest still says what the mirrors must hold.
fn unreached(reference: &RegistryRef, error: FetchError) -> SourceEvidence {
    match &reference.digest {
        Some(digest) => SourceEvidence::Pinned {
            digest: digest.clone(),
            error: Some(error),
        },
        None => SourceEvidence::Unavailable(error),
    }
}

/// Asks each mirror of the plan in turn, stopping at the first that holds something.
async fn look_in_mirrors(
    session: &Session,
    evidence: &Evidence,
    digest: &Digest,
    options: WalkOptions,
) -> Result<Vec<Look>, FetchError> {
    let plan = &evidence.plan;
    let mut looks = Vec::new();
    for m in &plan.mirrors {
        let target = plan.pulled_name(m, &evidence.reference, digest);
        let held = match look(session, &target, options).await {
            Ok(None) => Held::Absent,
            Ok(Some(g)) if g.root.digest == *digest => Held::Same {
                blobs: blob_presence(session, &target, &g, options.jobs).await,
                graph: g,
            },
            Ok(Some(g)) => Held::Other(g),
            Err(e @ FetchError::BadInput(_)) => return Err(e),
            Err(e) => Held::Unreachable(e),
        };
        let decisive = matches!(held, Held::Same { .. } | Held::Other(_));
        looks.push(Look { target, held });
        if decisive {
            break;
        }
    }
    Ok(looks)
}

/// Every mirror of the plan was asked and answered that it lacks the image.
fn all_absent(evidence: &Evidence) -> bool {
    !evidence.mirrors.is_empty()
        && evidence
            .mirrors
            .iter()
            .all(|l| matches!(l.held, Held::Absent))
}

/// A rebuilt list explains a digest no mirror holds: worth a look when every mirror answered
/// that it lacks the digest and the reference also names a tag.
fn wants_rebuilt(evidence: &Evidence) -> bool {
    evidence.plan.by_digest && evidence.reference.tag.is_some() && all_absent(evidence)
}

/// The first of `places` (where the other OS's nodes look) holding `digest`.
async fn look_elsewhere(
    session: &Session,
    places: &[MirrorLocation],
    digest: &Digest,
    options: WalkOptions,
) -> Option<RegistryRef> {
    for m in places {
        let target = m.repository.with_digest(digest);
        if let Ok(Some(g)) = look(session, &target, options).await
            && g.root.digest == *digest
        {
            return Some(target);
        }
    }
    None
}

/// The first mirror holding other content than `digest` under the reference's tag.
async fn look_under_tag(
    session: &Session,
    evidence: &Evidence,
    digest: &Digest,
    options: WalkOptions,
) -> Option<Rebuilt> {
    let tag = evidence.reference.tag.as_ref()?;
    for m in &evidence.plan.mirrors {
        let target = RegistryRef {
            tag: Some(tag.clone()),
            ..m.repository.clone()
        };
        if let Ok(Some(graph)) = look(session, &target, options).await
            && graph.root.digest != *digest
        {
            return Some(Rebuilt { target, graph });
        }
    }
    None
}

/// The graph under `target`, `None` when it does not exist.
async fn look(
    session: &Session,
    target: &RegistryRef,
    options: WalkOptions,
) -> Result<Option<Graph>, FetchError> {
    match session
        .graph(&ImageRef::Registry(target.clone()), options)
        .await
    {
        Ok(g) => Ok(Some(g)),
        Err(FetchError::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Every layer of every image in the graph, once per digest.
pub fn layers(graph: &Graph) -> Vec<Descriptor> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for node in graph.nodes() {
        if let Some(img) = node.image() {
            for l in &img.layers {
                if seen.insert(l.descriptor.digest.clone()) {
                    out.push(l.descriptor.clone());
                }
            }
        }
    }
    out
}

/// `HEAD`s every layer blob of the mirror graph, `jobs` at a time.
async fn blob_presence(
    session: &Session,
    target: &RegistryRef,
    graph: &Graph,
    jobs: usize,
) -> BlobPresence {
    let pending = layers(graph).into_iter().map(|d| async move {
        let result = match d.digest() {
            Ok(digest) => session
                .blob_exists(target, &digest)
                .await
                .map_err(BlobCheckError::from),
            Err(e) => Err(BlobCheckError::from(e)),
        };
        (d.digest, result)
    });
    futures::stream::iter(pending)
        .buffer_unordered(jobs.max(1))
        .collect()
        .await
}
