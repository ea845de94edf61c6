//! The I/O of `imgcheck assemble`: read each child through the [`crate::source`] layer, copy it
//! into the target repository by digest, push the list built by [`crate::assemble`] as raw
//! bytes, and read it back for the verify engine.
//!
//! Writes go through oci-client's `blob_exists`, `mount_blob`, `push_blob` and
//! `push_manifest_raw`; never `push_manifest_list`, which re-serialises the list and so changes
//! its digest (docs/decisions.md). Every byte copied is checked against its digest (and size) first,
//! so a corrupt layout or a lying registry cannot make us publish other content under a digest.
//! Foreign layers (`urls`, non-distributable types) are never copied: they live elsewhere.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use futures::StreamExt;
use reqwest::header::HeaderValue;

use crate::assemble::{AssembledIndex, ChildImage, ChildSpec, IndexFormat, Refusal, build_index};
use crate::digest::Digest;
use crate::engine::{ImageReport, judge};
use crate::graph::{Content, Image, MAX_LAYER_BYTES, Node, Problem, WalkOptions, walk};
use crate::manifest::{Descriptor, MAX_MANIFEST_BYTES, OCI_MANIFEST};
use crate::platform::Platform;
use crate::policy::Policy;
use crate::reference::{ImageRef, RegistryRef};
use crate::session::Session;
use crate::source::layout::LayoutSource;
use crate::source::registry::RegistrySource;
use crate::source::{BlobFile, FetchError, Fetched, Source};

/// Blob copies in flight at once.
const COPY_JOBS: usize = 4;
/// Bytes per piece of an upload (oci-client sends each as one PATCH, at most 4 MiB).
const UPLOAD_CHUNK: usize = 4 * 1024 * 1024;

/// Why assemble stopped. The first four are bad input (exit 2), raised before anything is
/// written except for a child whose blobs turn out unreadable while copying; the others mean a
/// registry write or read-back failed (exit 3). See [`crate::exit::Classify`].
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
        /// The registry client's error.
        #[source]
        source: Arc<oci_client::errors::OciDistributionError>,
    },
    /// The session cannot write to registries (it was made without the target).
    #[error("{target}: no registry client")]
    NoRegistryClient {
        /// The target, as given.
        target: String,
    },
    /// The pushed list cannot be read back.
    #[error("{target}: cannot read the pushed list back")]
    ReadBack {
        /// The target, as given.
        target: String,
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
/// the child's problem (exit 2), whether it is absent, corrupt or on a registry that cannot be
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

/// Writes into the target repository.
struct Writer<'a> {
    client: &'a oci_client::Client,
    target: &'a RegistryRef,
    oci_target: oci_client::Reference,
}

impl Writer<'_> {
    fn failed(&self, action: String, e: oci_client::errors::OciDistributionError) -> Failure {
        Failure::Write {
            target: self.target.to_string(),
            action,
            source: Arc::new(e),
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
            .client
            .blob_exists(&self.oci_target, &digest.to_string())
            .await
            .map_err(|e| self.failed(format!("check blob {digest}"), e))?;
        if exists {
            return Ok(BlobCopy::Present);
        }
        if let ChildSource::Registry(_, from) = source
            && from.registry == self.target.registry
            && self
                .client
                .mount_blob(&self.oci_target, &from.to_oci(), &digest.to_string())
                .await
                .is_ok()
        {
            return Ok(BlobCopy::Mounted);
        }
        // Through a file (the layout's own, or a spooled download) and streamed to the
        // registry in chunks: layers of any size in bounded memory. The registry checks the
        // digest again when the upload is committed.
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
        let file = tokio::fs::File::open(&blob.path).await.map_err(|e| {
            let why = ReadFailure::File(Arc::new(e));
            unreadable(origin, Some(format!("blob {digest}")), why)
        })?;
        let chunks = tokio_util::io::ReaderStream::with_capacity(file, UPLOAD_CHUNK)
            .map(|r| r.map_err(oci_client::errors::OciDistributionError::from));
        self.client
            .push_blob_stream(
                &self.oci_target,
                chunks,
                &digest.to_string(),
                Some(blob.size),
            )
            .await
            .map_err(|e| self.failed(format!("upload blob {digest}"), e))?;
        drop(blob);
        Ok(BlobCopy::Uploaded)
    }

    async fn put_manifest(
        &self,
        reference: &RegistryRef,
        bytes: Vec<u8>,
        media_type: &str,
    ) -> Result<(), Failure> {
        let content_type = HeaderValue::from_str(media_type).map_err(|e| Failure::MediaType {
            media_type: media_type.to_string(),
            source: Arc::new(e),
        })?;
        // By digest, the tag is set to the digest too: the URL is the same, and oci-client
        // 0.18 then survives registries that answer without a Location header (it rebuilds
        // the URL by stripping the tag, and panics when there is none).
        let oci_ref = match &reference.digest {
            Some(d) => oci_client::Reference::with_tag_and_digest(
                reference.registry.clone(),
                reference.repository.clone(),
                d.to_string(),
                d.to_string(),
            ),
            None => reference.to_oci(),
        };
        self.client
            .push_manifest_raw(&oci_ref, bytes, content_type)
            .await
            .map_err(|e| self.failed(format!("push manifest {reference}"), e))?;
        Ok(())
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
        let at = self.target.with_digest(&piece.image.digest);
        self.put_manifest(&at, piece.manifest.clone(), &piece.image.media_type)
            .await?;
        stats.manifests += 1;
        Ok(())
    }
}

/// Reads every child, builds the list, and (unless `dry_run`) copies the children into the
/// target repository and pushes the list under the target tag. Nothing is written when a child
/// is refused or the list cannot be built.
pub async fn assemble(session: &Session, request: &Request) -> Result<Outcome, Failure> {
    let mut sources = Vec::with_capacity(request.children.len());
    let mut pieces = Vec::new();
    for (i, spec) in request.children.iter().enumerate() {
        let source = open_source(session, spec)?;
        pieces.extend(read_child(&source, i, spec).await?);
        sources.push(source);
    }
    let images: Vec<ChildImage> = pieces.iter().map(|p| p.image.clone()).collect();
    let index = build_index(&images, request.format, &request.annotations)?;
    let mut copied = CopyStats::default();
    if request.dry_run {
        return Ok(Outcome { index, copied });
    }
    let client = session
        .registry_client()
        .ok_or_else(|| Failure::NoRegistryClient {
            target: request.target.to_string(),
        })?;
    let oci_target = request.target.to_oci();
    client
        .oci()
        .store_auth_if_needed(
            oci_target.resolve_registry(),
            &client.auth_for(&request.target),
        )
        .await;
    let writer = Writer {
        client: client.oci(),
        target: &request.target,
        oci_target,
    };
    // Blobs shared between children (base layers) are copied once. build_index refused
    // duplicate platforms, so no manifest appears twice.
    let mut done = HashSet::new();
    for piece in &pieces {
        let source = &sources[piece.source];
        let in_target = matches!(source, ChildSource::Registry(_, r)
            if r.registry == request.target.registry && r.repository == request.target.repository);
        if in_target {
            continue;
        }
        writer
            .copy_piece(source, piece, &mut done, &mut copied)
            .await?;
    }
    writer
        .put_manifest(
            &request.target,
            index.bytes.clone(),
            index.format.media_type(),
        )
        .await?;
    Ok(Outcome { index, copied })
}

/// Reads the pushed tag back and judges it. Fails when the tag no longer names `digest`
/// (someone pushed over it) or cannot be read.
pub async fn verify_pushed(
    session: &Session,
    target: &RegistryRef,
    digest: &Digest,
    policy: &Policy,
) -> Result<ImageReport, Failure> {
    let reference = ImageRef::Registry(target.clone());
    let graph = session
        .graph(&reference, WalkOptions::default())
        .await
        .map_err(|source| Failure::ReadBack {
            target: target.to_string(),
            source,
        })?;
    if graph.root.digest != *digest {
        return Err(Failure::Replaced {
            target: target.to_string(),
            now: graph.root.digest.clone(),
            pushed: digest.clone(),
        });
    }
    Ok(judge(&graph, policy, &policy.runtimes))
}
