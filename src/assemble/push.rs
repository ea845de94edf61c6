//! The I/O of `imgcheck assemble` (and of `imgcheck build`'s lists and per-platform tags).
//!
//! [`push_list`] reads each child through the source the session opens for it
//! ([`super::read`]), builds the list ([`super::build_index`]), copies the children into the
//! target repository by digest ([`super::copy`]), pushes the list as raw bytes by digest, reads
//! it and its entries back by digest (other bytes than were pushed are a [`Failure::ReadBack`]:
//! the registry's fault, never a verdict on the list), verifies it, and only then moves the tag
//! to it. A list that fails its policy (or cannot be verified) never replaces what the tag
//! names, unless the caller forces it. A dry run judges the list it would push, read from
//! memory and the children ([`super::unpushed`]), by the same walk and judgement
//! ([`judge_list`]), and writes nothing.
//!
//! [`push_image`] pushes one image under a tag (a per-platform tag of `imgcheck build`), its
//! base's blobs taken from the base's repository.
//!
//! Writes go through [`WriteSink`](crate::source::sink::WriteSink) (a registry repository,
//! through the run's registry client, retried like reads).

use std::collections::HashSet;

use super::copy::{CopyStats, Writer};
use super::failure::{Failure, unreadable, unusable};
use super::index::{AssembledIndex, ChildImage, build_index};
use super::read::{Piece, open_child, read_child};
use super::request::{ChildSpec, Request};
use super::unpushed::Unpushed;
use crate::digest::Digest;
use crate::engine::{ImageReport, Verdict, judge};
use crate::graph::{WalkOptions, walk};
use crate::manifest::MAX_MANIFEST_BYTES;
use crate::policy::Policy;
use crate::reference::{ImageRef, LayoutRef, RegistryRef};
use crate::session::Session;
use crate::source::store::Store;
use crate::source::{FetchError, Source};

/// What became of the target tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    /// It names the new list, which passed its policy.
    Moved,
    /// It names the new list, which did not pass: the caller forced it.
    Forced,
    /// It was left as it was (dry run, or the list did not pass); the list is in the
    /// repository by digest only.
    Held,
}

/// The result of a run.
#[derive(Debug, Clone)]
pub struct PushOutcome {
    /// The list that was (or, with `dry_run`, would be) pushed.
    pub index: AssembledIndex,
    /// What was copied.
    pub copied: CopyStats,
    /// The list's report: read back by digest, or, for a dry run, read from memory and the
    /// children (the verdict the real run would give before moving the tag).
    pub report: Option<ImageReport>,
    /// What became of the tag.
    pub tag: Tag,
}

/// Reads every child and builds the list; with `dry_run`, judges it against the policy and
/// writes nothing; otherwise copies the children into the target repository, pushes the list
/// by digest, verifies it by digest against the policy, and only then moves the tag to it
/// (when it passes, or with `force`). Nothing is written when a child is refused or the list
/// cannot be built; the tag is never moved to a list that was not verified (unless `force`).
pub async fn push_list(session: &Session, request: &Request) -> Result<PushOutcome, Failure> {
    let mut sources = Vec::with_capacity(request.children.len());
    let mut pieces = Vec::new();
    for (i, spec) in request.children.iter().enumerate() {
        let source = open_child(session, spec)?;
        pieces.extend(read_child(&source, i, spec).await?);
        sources.push(source);
    }
    let images: Vec<ChildImage> = pieces.iter().map(|p| p.image.clone()).collect();
    let index = build_index(
        &images,
        request.format,
        &request.annotations,
        request.policy.isolation(),
    )?;
    let mut copied = CopyStats::default();
    if request.dry_run {
        let report = judge_unpushed(request, &index, &pieces, &sources).await?;
        return Ok(PushOutcome {
            index,
            copied,
            report: Some(report),
            tag: Tag::Held,
        });
    }
    let target = &request.target;
    let writer = Writer::open(session, target)?;
    // Blobs shared between children (base layers) are copied once. build_index refused
    // duplicate platforms, so no manifest appears twice.
    let mut done = HashSet::new();
    for piece in &pieces {
        let source = &sources[piece.source];
        let in_target = source
            .registry_ref()
            .is_some_and(|r| r.registry == target.registry && r.repository == target.repository);
        if in_target {
            continue;
        }
        writer
            .copy_piece(source, piece, &mut done, &mut copied)
            .await?;
    }
    let media_type = index.format.media_type();
    writer
        .put_manifest(&index.digest.to_string(), &index.bytes, media_type)
        .await?;
    // Other bytes served for what was just pushed are the registry's fault, not the list's:
    // a read-back failure (as `push_image` has), never a policy verdict.
    read_back(&writer.target, target, &index.digest).await?;
    for piece in &pieces {
        read_back(&writer.target, target, &piece.image.digest).await?;
    }
    let report = verify_by_digest(session, target, &index.digest, &request.policy).await?;
    let tag = if report.verdict == Verdict::Pass {
        Tag::Moved
    } else if request.force {
        Tag::Forced
    } else {
        return Ok(PushOutcome {
            index,
            copied,
            report: Some(report),
            tag: Tag::Held,
        });
    };
    writer
        .put_manifest(&target.reference_part(), &index.bytes, media_type)
        .await?;
    check_tag(&writer.target, target, &index.digest).await?;
    Ok(PushOutcome {
        index,
        copied,
        report: Some(report),
        tag,
    })
}

/// Judges the list of a dry run ([`judge_list`]) as it would be pushed: `index` from memory,
/// its entries' manifests from `pieces`, their blobs from the children's `sources`.
async fn judge_unpushed(
    request: &Request,
    index: &AssembledIndex,
    pieces: &[Piece],
    sources: &[Store],
) -> Result<ImageReport, Failure> {
    let unpushed = Unpushed {
        name: request.target.with_digest(&index.digest).to_string(),
        index,
        pieces,
        sources,
    };
    // The top object is in memory: the walk cannot fail to fetch it.
    judge_list(&unpushed, &request.policy)
        .await
        .map_err(|source| Failure::ReadBack {
            pushed: unpushed.name.clone(),
            source,
        })
}

/// Reads the list pushed as `target@digest` back and judges it ([`judge_list`]).
async fn verify_by_digest(
    session: &Session,
    target: &RegistryRef,
    digest: &Digest,
    policy: &Policy,
) -> Result<ImageReport, Failure> {
    let pinned = target.with_digest(digest);
    let read_back = |source| Failure::ReadBack {
        pushed: pinned.to_string(),
        source,
    };
    let source = session
        .open(&ImageRef::Registry(pinned.clone()))
        .map_err(read_back)?;
    judge_list(&source, policy).await.map_err(read_back)
}

/// The verdict on a list: `source` walked as `verify` walks an image and judged against
/// `policy` (its runtimes' matching included), the report named after the source. The one
/// judgement of `assemble`, for the list pushed and read back by digest and for the list of a
/// dry run.
async fn judge_list(source: &impl Source, policy: &Policy) -> Result<ImageReport, FetchError> {
    let graph = walk(source, WalkOptions::default()).await?;
    let mut report = judge(&graph, policy, &policy.runtimes);
    report.reference = source.name();
    Ok(report)
}

/// The tag must now name `digest`: otherwise another push replaced it in between.
async fn check_tag(
    source: &impl Source,
    target: &RegistryRef,
    digest: &Digest,
) -> Result<(), Failure> {
    let top = source.top().await.map_err(|source| Failure::ReadBack {
        pushed: target.to_string(),
        source,
    })?;
    let now = Digest::compute(digest.algorithm(), &top.bytes);
    if now != *digest {
        return Err(Failure::Replaced {
            target: target.to_string(),
            now,
            pushed: digest.clone(),
        });
    }
    Ok(())
}

/// The manifest pushed as `target@digest` must read back as those bytes before a tag names
/// it: a registry that stored (or serves) other bytes fails the push, the tag left as it was.
async fn read_back(
    source: &impl Source,
    target: &RegistryRef,
    digest: &Digest,
) -> Result<(), Failure> {
    let pushed = target.with_digest(digest).to_string();
    let bytes = source
        .manifest(digest, MAX_MANIFEST_BYTES)
        .await
        .map_err(|source| Failure::ReadBack {
            pushed: pushed.clone(),
            source,
        })?;
    if digest.matches(&bytes) {
        return Ok(());
    }
    Err(Failure::ReadBack {
        pushed,
        source: FetchError::DigestMismatch {
            expected: digest.to_string(),
            actual: Digest::compute(digest.algorithm(), &bytes).to_string(),
        },
    })
}

/// Whether the layout holds the blob `digest` itself.
fn layout_has(layout: &LayoutRef, digest: &Digest) -> bool {
    layout
        .dir
        .join("blobs")
        .join(digest.algorithm().name())
        .join(digest.hex())
        .is_file()
}

/// Pushes one image under a tag: the image manifest itself, not a list of it (a per-platform
/// tag of `imgcheck build`). The image is read from `layout` (its `index.json`, or the digest
/// the reference pins); each blob the layout lacks (the layers of the image's base) is taken
/// from `base`: already present, mounted from it on the same registry, or copied through a
/// file. Nothing is held whole in memory but the manifest. The manifest is pushed by digest
/// and read back (its bytes must hash to the digest) before the tag is moved to it; the tag is
/// read back too. Returns the manifest's digest and what was copied.
pub async fn push_image(
    session: &Session,
    target: &RegistryRef,
    layout: &LayoutRef,
    base: Option<&RegistryRef>,
) -> Result<(Digest, CopyStats), Failure> {
    let input = layout.to_string();
    let spec = ChildSpec {
        input: input.clone(),
        reference: ImageRef::Layout(layout.clone()),
        os_version: None,
    };
    let source = open_child(session, &spec)?;
    let mut pieces = read_child(&source, 0, &spec).await?;
    let piece = match (pieces.pop(), pieces.is_empty()) {
        (Some(p), true) if p.image.listed.is_none() => p,
        _ => return Err(unusable(&input, "is not a single image")),
    };
    let writer = Writer::open(session, target)?;
    // The writer proved the session has a registry client: the base opens.
    let from_base = base
        .map(|b| session.open(&ImageRef::Registry(b.clone())))
        .transpose()
        .map_err(|_| Failure::NoRegistryClient {
            target: target.to_string(),
        })?;
    let mut stats = CopyStats::default();
    for d in &piece.blobs {
        if d.is_foreign_layer() {
            stats.foreign += 1;
            continue;
        }
        let digest = d.digest().map_err(|e| unreadable(&input, None, e))?;
        let from = match &from_base {
            Some(b) if !layout_has(layout, &digest) => b,
            _ => &source,
        };
        stats.count(writer.copy_blob(from, &input, d).await?);
    }
    let digest = piece.image.digest.clone();
    let media_type = piece.image.media_type.as_str();
    writer
        .put_manifest(&digest.to_string(), &piece.manifest, media_type)
        .await?;
    read_back(&writer.target, target, &digest).await?;
    writer
        .put_manifest(&target.reference_part(), &piece.manifest, media_type)
        .await?;
    check_tag(&writer.target, target, &digest).await?;
    stats.manifests += 1;
    Ok((digest, stats))
}
