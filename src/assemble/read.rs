//! Reading `assemble`'s children: each child reference through the [`Store`] the session opens
//! for it, walked and checked, one [`Piece`] per image (an index child gives one per runnable
//! entry): its verified manifest bytes, its config, and the blobs to copy.

use super::failure::{AssembleRefusal, Failure, unreadable, unusable};
use super::index::ChildImage;
use super::request::ChildSpec;
use crate::graph::{Content, Image, Node, Problem, WalkOptions, walk};
use crate::manifest::{Descriptor, MAX_MANIFEST_BYTES, OCI_MANIFEST};
use crate::platform::Platform;
use crate::reference::ImageRef;
use crate::session::Session;
use crate::source::Source;
use crate::source::store::Store;

/// One image to copy and list.
pub(super) struct Piece {
    /// The list entry it becomes.
    pub(super) image: ChildImage,
    /// Index into the sources.
    pub(super) source: usize,
    /// Its manifest, as read.
    pub(super) manifest: Vec<u8>,
    /// Config, then layers.
    pub(super) blobs: Vec<Descriptor>,
}

/// What a graph problem means for a child, as its message says it.
fn describe(problem: &Problem) -> String {
    match problem {
        Problem::Missing(m) => format!("not found ({m})"),
        Problem::DigestMismatch(m) => format!("content does not match its digest ({m})"),
        Problem::Bad(m) => m.clone(),
        Problem::Unavailable(m) => format!("could not be fetched ({m})"),
    }
}

/// Opens a child through the session: its layout, or its repository through the run's registry
/// client.
pub(super) fn open_child(session: &Session, spec: &ChildSpec) -> Result<Store, Failure> {
    session
        .open(&spec.reference)
        .map_err(|e| match &spec.reference {
            // A registry reference cannot be opened only when the session has no registry client.
            ImageRef::Registry(_) => unusable(&spec.input, "the session has no registry client"),
            ImageRef::Layout(_) => unreadable(&spec.input, None, e),
        })
}

/// Reads one image of a child: its verified manifest bytes and config.
async fn read_piece(
    source: &Store,
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
pub(super) async fn read_child(
    source: &Store,
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
                return Err(Failure::Refused(AssembleRefusal::Input(format!(
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
