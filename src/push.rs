//! The I/O of `imgcheck assemble` (and of `imgcheck build`'s lists): read each child through
//! the [`crate::source`] layer, copy it into the target repository by digest, push the list
//! built by [`crate::assemble`] as raw bytes by digest, read it back by digest for the verify
//! engine, and only then move the tag to it. A list that fails its policy (or cannot be
//! verified) never replaces what the tag names, unless the caller forces it.
//!
//! [`push_image`] pushes one image under a tag (a per-platform tag of `imgcheck build`), its
//! base's blobs taken from the base's repository.
//!
//! Writes go through the run's registry client ([`RegistrySource::upload_blob`] and its
//! siblings), retried like reads. Every byte copied is checked against its digest (and size)
//! first, so a corrupt layout or a lying registry cannot make us publish other content under a
//! digest. Foreign layers (`urls`, non-distributable types) are never copied: they live
//! elsewhere.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use futures::StreamExt;
use reqwest::header::HeaderValue;

use crate::assemble::{AssembledIndex, ChildImage, ChildSpec, IndexFormat, Refusal, build_index};
use crate::digest::Digest;
use crate::engine::{ImageReport, Verdict, judge};
use crate::graph::{Content, Image, MAX_LAYER_BYTES, Node, Problem, WalkOptions, walk};
use crate::manifest::{Descriptor, MAX_MANIFEST_BYTES, OCI_MANIFEST};
use crate::platform::Platform;
use crate::policy::Policy;
use crate::reference::{ImageRef, LayoutRef, RegistryRef};
use crate::session::Session;
use crate::source::layout::LayoutSource;
use crate::source::registry::{RegistryClient, RegistrySource};
use crate::source::{BlobFile, FetchError, Fetched, Source};

/// Blob copies in flight at once.
const COPY_JOBS: usize = 4;

/// Why assemble stopped. The first four are bad input ([`Fault::Input`](crate::error::Fault)),
/// raised before anything is written except for a child whose blobs turn out unreadable while
/// copying; the others mean a registry write or read-back failed
/// ([`Fault::Unavailable`](crate::error::Fault)). See [`crate::error::Blame`].
#[derive(Debug, Clone, thiserror::Error)]
pub enum Failure {
    /// The list cannot be built from the children.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// A child cannot be used, for the reason given.
    #[error("child {origin}: {reason}")]
    Child {
        /// The child as the user named it (`REF`, or `REF (entry N, DIGEST)`).
        origin: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A child, or one object of it, cannot be read: the user named something that cannot be
    /// used, whether it is absent, corrupt or on a registry that cannot be reached.
    #[error("child {origin}{}", object.as_ref().map(|o| format!(": {o}")).unwrap_or_default())]
    ChildUnreadable {
        /// The child as the user named it.
        origin: String,
        /// The object that could not be read (`manifest DIGEST`, `blob DIGEST`), if not the
        /// child itself.
        object: Option<String>,
        /// Why.
        #[source]
        source: ReadFailure,
    },
    /// A manifest's media type cannot be sent as a `Content-Type`.
    #[error("media type '{media_type}'")]
    MediaType {
        /// The media type.
        media_type: String,
        /// Why it is not a header value.
        #[source]
        source: Arc<reqwest::header::InvalidHeaderValue>,
    },
    /// A write to the target repository failed.
    #[error("{target}: cannot {action}")]
    Write {
        /// The target, as given.
        target: String,
        /// What was being done (`upload blob DIGEST`, `push manifest REF`, …).
        action: String,
        /// The registry client's error (after its retries).
        #[source]
        source: FetchError,
    },
    /// The session cannot write to registries (it was made without the target).
    #[error("{target}: no registry client")]
    NoRegistryClient {
        /// The target, as given.
        target: String,
    },
    /// The pushed manifest (a list or an image) cannot be read back; the tag was not moved to it.
    #[error("{pushed}: cannot read the pushed manifest back")]
    ReadBack {
        /// What was pushed: `TARGET@DIGEST` (or the tag just moved).
        pushed: String,
        /// Why.
        #[source]
        source: FetchError,
    },
    /// The target tag names another list than the one pushed.
    #[error("{target} now names {now}, not the pushed {pushed}: another push replaced it")]
    Replaced {
        /// The target, as given.
        target: String,
        /// What the tag names now.
        now: Digest,
        /// What was pushed.
        pushed: Digest,
    },
}

/// Why a child's object could not be read.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReadFailure {
    /// The source could not deliver it.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// Its descriptor does not hold a usable digest.
    #[error(transparent)]
    Descriptor(#[from] crate::manifest::ManifestError),
    /// Its local copy cannot be opened.
    #[error(transparent)]
    File(Arc<std::io::Error>),
}

/// What to assemble.
#[derive(Debug, Clone)]
pub struct Request {
    /// Where the list goes (a tag; never a digest).
    pub target: RegistryRef,
    /// The children, as given.
    pub children: Vec<ChildSpec>,
    /// The list format; `None` picks from the children (see [`build_index`]).
    pub format: Option<IndexFormat>,
    /// Index annotations.
    pub annotations: BTreeMap<String, String>,
    /// Build and print only; write nothing.
    pub dry_run: bool,
    /// The policy the list must pass (read back by digest) before the tag moves to it.
    pub policy: Policy,
    /// Move the tag even when the list fails the policy or cannot be fully verified.
    pub force: bool,
}

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

/// What happened to the blobs and manifests of the children.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyStats {
    /// Child manifests written into the target repository.
    pub manifests: usize,
    /// Blobs the target repository already had.
    pub present: usize,
    /// Blobs mounted from another repository of the same registry.
    pub mounted: usize,
    /// Blobs uploaded.
    pub uploaded: usize,
    /// Foreign layers left out.
    pub foreign: usize,
}

impl CopyStats {
    /// One line for the user.
    pub fn summary(&self) -> String {
        format!(
            "{} child manifests copied; blobs: {} uploaded, {} mounted, {} already present, {} foreign not copied",
            self.manifests, self.uploaded, self.mounted, self.present, self.foreign
        )
    }
}

/// The result of a run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The list that was (or, with `dry_run`, would be) pushed.
    pub index: AssembledIndex,
    /// What was copied.
    pub copied: CopyStats,
    /// The list's report, read back by digest (none for a dry run).
    pub report: Option<ImageReport>,
    /// What became of the tag.
    pub tag: Tag,
}

/// Where a child is read from.
enum ChildSource {
    Layout(LayoutSource),
    Registry(RegistrySource, RegistryRef),
}

impl Source for ChildSource {
    fn name(&self) -> String {
        match self {
            ChildSource::Layout(s) => s.name(),
            ChildSource::Registry(s, _) => s.name(),
        }
    }

    fn pinned(&self) -> Option<Digest> {
        match self {
            ChildSource::Layout(s) => s.pinned(),
            ChildSource::Registry(s, _) => s.pinned(),
        }
    }

    async fn top(&self) -> Result<Fetched, FetchError> {
        match self {
            ChildSource::Layout(s) => s.top().await,
            ChildSource::Registry(s, _) => s.top().await,
        }
    }

    async fn manifest(&self, digest: &Digest, limit: u64) -> Result<Vec<u8>, FetchError> {
        match self {
            ChildSource::Layout(s) => s.manifest(digest, limit).await,
            ChildSource::Registry(s, _) => s.manifest(digest, limit).await,
        }
    }

    async fn blob(&self, digest: &Digest, limit: u64) -> Result<Vec<u8>, FetchError> {
        match self {
            ChildSource::Layout(s) => s.blob(digest, limit).await,
            ChildSource::Registry(s, _) => s.blob(digest, limit).await,
        }
    }
}

impl ChildSource {
    /// A blob on disk, checked against its digest, for a copy in bounded memory.
    async fn blob_file(&self, digest: &Digest, limit: u64) -> Result<BlobFile, FetchError> {
        match self {
            ChildSource::Layout(s) => s.blob_file(digest, limit).await,
            ChildSource::Registry(s, _) => s.blob_file(digest, limit).await,
        }
    }
}

/// One image to copy and list.
struct Piece {
    image: ChildImage,
    /// Index into the sources.
    source: usize,
    manifest: Vec<u8>,
    /// Config, then layers.
    blobs: Vec<Descriptor>,
}

fn describe(problem: &Problem) -> String {
    match problem {
        Problem::Missing(m) => format!("not found ({m})"),
        Problem::DigestMismatch(m) => format!("content does not match its digest ({m})"),
        Problem::Bad(m) => m.clone(),
        Problem::Unavailable(m) => format!("could not be fetched ({m})"),
    }
}

/// A child that cannot be used, for the reason given.
fn unusable(origin: &str, reason: impl Into<String>) -> Failure {
    Failure::Child {
        origin: origin.to_string(),
        reason: reason.into(),
    }
}

/// A child (`object` `None`) or one of its objects that cannot be read. Every such failure is
/// the child's problem (bad input), whether it is absent, corrupt or on a registry that cannot be
/// reached.
fn unreadable(origin: &str, object: Option<String>, why: impl Into<ReadFailure>) -> Failure {
    Failure::ChildUnreadable {
        origin: origin.to_string(),
        object,
        source: why.into(),
    }
}

fn open_source(session: &Session, spec: &ChildSpec) -> Result<ChildSource, Failure> {
    match &spec.reference {
        ImageRef::Layout(l) => LayoutSource::open(l)
            .map(ChildSource::Layout)
            .map_err(|e| unreadable(&spec.input, None, e)),
        ImageRef::Registry(r) => {
            let client = session
                .registry_client()
                .ok_or_else(|| unusable(&spec.input, "the session has no registry client"))?;
            Ok(ChildSource::Registry(client.source(r), r.clone()))
        }
    }
}

/// Reads one image of a child: its verified manifest bytes and config.
async fn read_piece(
    source: &ChildSource,
    index: usize,
    origin: String,
    node: &Node,
    image: &Image,
    listed: Option<Platform>,
    os_version: Option<String>,
) -> Result<Piece, Failure> {
    let digest = &node.digest;
    let config = image
        .config
        .clone()
        .map_err(|p| unusable(&origin, format!("its config {}", describe(&p))))?;
    let manifest = source
        .manifest(digest, MAX_MANIFEST_BYTES)
        .await
        .map_err(|e| unreadable(&origin, Some(format!("manifest {digest}")), e))?;
    if !digest.matches(&manifest) {
        return Err(unusable(
            &origin,
            format!("manifest {digest}: received content hashes to something else"),
        ));
    }
    let media_type = image
        .manifest
        .media_type
        .clone()
        .filter(|t| !t.is_empty())
        .or_else(|| Some(node.media_type.clone()).filter(|t| !t.is_empty()))
        .unwrap_or_else(|| OCI_MANIFEST.to_string());
    let blobs = std::iter::once(&image.manifest.config)
        .chain(&image.manifest.layers)
        .cloned()
        .collect();
    Ok(Piece {
        image: ChildImage {
            origin,
            digest: digest.clone(),
            media_type,
            size: manifest.len() as u64,
            config,
            os_version,
            listed,
        },
        source: index,
        manifest,
        blobs,
    })
}

/// Reads a child reference: one image, or each runnable entry of an index.
async fn read_child(
    source: &ChildSource,
    index: usize,
    spec: &ChildSpec,
) -> Result<Vec<Piece>, Failure> {
    let input = &spec.input;
    let graph = walk(source, WalkOptions::default())
        .await
        .map_err(|e| unreadable(input, None, e))?;
    let root = &graph.root;
    match &root.content {
        Content::Image(image) => Ok(vec![
            read_piece(
                source,
                index,
                input.clone(),
                root,
                image,
                None,
                spec.os_version.clone(),
            )
            .await?,
        ]),
        Content::Index {
            index: list,
            children,
        } => {
            if spec.os_version.is_some() {
                return Err(Failure::Refused(Refusal::Input(format!(
                    "child {input} is an index: '=os.version=' applies to a single image; name \
                     the Windows entry by digest instead"
                ))));
            }
            let mut pieces = Vec::new();
            for (position, (d, node)) in list.manifests.iter().zip(children).enumerate() {
                let Some(node) = node.as_ref().filter(|_| !d.is_attestation()) else {
                    continue;
                };
                let origin = format!("{input} (entry {position}, {})", node.digest.short());
                match &node.content {
                    Content::Image(image) => pieces.push(
                        read_piece(source, index, origin, node, image, d.platform.clone(), None)
                            .await?,
                    ),
                    Content::Index { .. } => {
                        return Err(unusable(
                            &origin,
                            "is itself an index; nested indexes are not flattened, name its images instead",
                        ));
                    }
                    Content::Schema1 => {
                        return Err(unusable(&origin, "is an obsolete schema1 manifest"));
                    }
                    Content::Problem(p) => return Err(unusable(&origin, describe(p))),
                }
            }
            if pieces.is_empty() {
                return Err(unusable(input, "is an index without runnable entries"));
            }
            Ok(pieces)
        }
        Content::Schema1 => Err(unusable(
            input,
            "is an obsolete Docker schema1 manifest; re-push it with a current tool",
        )),
        Content::Problem(p) => Err(unusable(input, describe(p))),
    }
}

enum BlobCopy {
    Present,
    Mounted,
    Uploaded,
}

/// Writes into the target repository, through the run's registry client.
struct Writer<'a> {
    target: RegistrySource,
    name: &'a RegistryRef,
}

impl<'a> Writer<'a> {
    /// The session's registry client and a writer to `target`.
    fn open(
        session: &Session,
        target: &'a RegistryRef,
    ) -> Result<(Arc<RegistryClient>, Writer<'a>), Failure> {
        let client = session
            .registry_client()
            .ok_or_else(|| Failure::NoRegistryClient {
                target: target.to_string(),
            })?;
        let writer = Writer {
            target: client.source(target),
            name: target,
        };
        Ok((Arc::clone(client), writer))
    }

    fn failed(&self, action: String, source: FetchError) -> Failure {
        Failure::Write {
            target: self.name.to_string(),
            action,
            source,
        }
    }

    async fn copy_blob(
        &self,
        source: &ChildSource,
        origin: &str,
        d: &Descriptor,
    ) -> Result<BlobCopy, Failure> {
        let digest = d.digest().map_err(|e| unreadable(origin, None, e))?;
        let exists = self
            .target
            .blob_exists(&digest)
            .await
            .map_err(|e| self.failed(format!("check blob {digest}"), e))?;
        if exists {
            return Ok(BlobCopy::Present);
        }
        if let ChildSource::Registry(_, from) = source
            && from.registry == self.name.registry
        {
            match self.target.mount_blob(&digest, from).await {
                Ok(true) => return Ok(BlobCopy::Mounted),
                Ok(false) => {}
                // A registry that cannot mount can still take an upload.
                Err(e) => tracing::info!(
                    "mount of blob {digest} failed, uploading it: {}",
                    crate::error::one_line(&e)
                ),
            }
        }
        // Through a file (the layout's own, or a spooled download) and sent in chunks:
        // layers of any size in bounded memory. The registry checks the digest again when
        // the upload is committed.
        let blob = source
            .blob_file(&digest, MAX_LAYER_BYTES)
            .await
            .map_err(|e| unreadable(origin, Some(format!("blob {digest}")), e))?;
        if u64::try_from(d.size).ok() != Some(blob.size) {
            return Err(unusable(
                origin,
                format!(
                    "blob {digest}: {} bytes, but the descriptor says {}; not copied",
                    blob.size, d.size
                ),
            ));
        }
        self.target
            .upload_blob(&digest, &blob)
            .await
            .map_err(|e| self.failed(format!("upload blob {digest}"), e))?;
        Ok(BlobCopy::Uploaded)
    }

    /// PUTs `bytes` as the manifest `reference_part` (a digest or the tag) of the target.
    async fn put_manifest(
        &self,
        reference_part: &str,
        bytes: &[u8],
        media_type: &str,
    ) -> Result<(), Failure> {
        let content_type = HeaderValue::from_str(media_type).map_err(|e| Failure::MediaType {
            media_type: media_type.to_string(),
            source: Arc::new(e),
        })?;
        self.target
            .put_manifest(reference_part, bytes, &content_type)
            .await
            .map_err(|e| self.failed(format!("push manifest {reference_part}"), e))
    }

    /// Copies one image into the target repository: blobs first, then its manifest by digest.
    async fn copy_piece(
        &self,
        source: &ChildSource,
        piece: &Piece,
        done: &mut HashSet<String>,
        stats: &mut CopyStats,
    ) -> Result<(), Failure> {
        let mut pending = Vec::new();
        for d in &piece.blobs {
            if d.is_foreign_layer() {
                stats.foreign += 1;
            } else if done.insert(d.digest.clone()) {
                pending.push(d);
            }
        }
        let origin = piece.image.origin.as_str();
        let results: Vec<Result<BlobCopy, Failure>> = futures::stream::iter(pending)
            .map(|d| self.copy_blob(source, origin, d))
            .buffer_unordered(COPY_JOBS)
            .collect()
            .await;
        for r in results {
            match r? {
                BlobCopy::Present => stats.present += 1,
                BlobCopy::Mounted => stats.mounted += 1,
                BlobCopy::Uploaded => stats.uploaded += 1,
            }
        }
        let digest = piece.image.digest.to_string();
        self.put_manifest(&digest, &piece.manifest, &piece.image.media_type)
            .await?;
        stats.manifests += 1;
        Ok(())
    }
}

/// Reads every child and builds the list; unless `dry_run`, copies the children into the
/// target repository, pushes the list by digest, verifies it by digest against the policy,
/// and only then moves the tag to it (when it passes, or with `force`). Nothing is written
/// when a child is refused or the list cannot be built; the tag is never moved to a list
/// that was not verified (unless `force`).
pub async fn assemble(session: &Session, request: &Request) -> Result<Outcome, Failure> {
    let mut sources = Vec::with_capacity(request.children.len());
    let mut pieces = Vec::new();
    for (i, spec) in request.children.iter().enumerate() {
        let source = open_source(session, spec)?;
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
        return Ok(Outcome {
            index,
            copied,
            report: None,
            tag: Tag::Held,
        });
    }
    let target = &request.target;
    let (_, writer) = Writer::open(session, target)?;
    // Blobs shared between children (base layers) are copied once. build_index refused
    // duplicate platforms, so no manifest appears twice.
    let mut done = HashSet::new();
    for piece in &pieces {
        let source = &sources[piece.source];
        let in_target = matches!(source, ChildSource::Registry(_, r)
            if r.registry == target.registry && r.repository == target.repository);
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
    let report = verify_by_digest(session, target, &index.digest, &request.policy).await?;
    let tag = if report.verdict == Verdict::Pass {
        Tag::Moved
    } else if request.force {
        Tag::Forced
    } else {
        return Ok(Outcome {
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
    Ok(Outcome {
        index,
        copied,
        report: Some(report),
        tag,
    })
}

/// Reads the list pushed as `target@digest` back and judges it.
async fn verify_by_digest(
    session: &Session,
    target: &RegistryRef,
    digest: &Digest,
    policy: &Policy,
) -> Result<ImageReport, Failure> {
    let pinned = target.with_digest(digest);
    let graph = session
        .graph(&ImageRef::Registry(pinned.clone()), WalkOptions::default())
        .await
        .map_err(|source| Failure::ReadBack {
            pushed: pinned.to_string(),
            source,
        })?;
    let mut report = judge(&graph, policy, &policy.runtimes);
    report.reference = pinned.to_string();
    Ok(report)
}

/// The tag must now name `digest`: otherwise another push replaced it in between.
async fn check_tag(
    source: &RegistrySource,
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
    source: &RegistrySource,
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
    let source = open_source(session, &spec)?;
    let mut pieces = read_child(&source, 0, &spec).await?;
    let piece = match (pieces.pop(), pieces.is_empty()) {
        (Some(p), true) if p.image.listed.is_none() => p,
        _ => return Err(unusable(&input, "is not a single image")),
    };
    let (client, writer) = Writer::open(session, target)?;
    let from_base = base.map(|b| ChildSource::Registry(client.source(b), b.clone()));
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
        match writer.copy_blob(from, &input, d).await? {
            BlobCopy::Present => stats.present += 1,
            BlobCopy::Mounted => stats.mounted += 1,
            BlobCopy::Uploaded => stats.uploaded += 1,
        }
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

impl crate::error::Blame for Failure {
    fn fault(&self) -> crate::error::Fault {
        use crate::error::Fault;
        match self {
            Failure::Refused(_)
            | Failure::Child { .. }
            | Failure::ChildUnreadable { .. }
            | Failure::MediaType { .. } => Fault::Input,
            Failure::Write { .. }
            | Failure::NoRegistryClient { .. }
            | Failure::ReadBack { .. }
            | Failure::Replaced { .. } => Fault::Unavailable,
        }
    }
}
