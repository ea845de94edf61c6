//! What the two writers of a Windows stage's image share — the rewrite of an image Buildah
//! built (`builder::rewrite`) and the image composed without Buildah
//! (`builder::compose`): why writing it fails ([`StageError`]), the verified manifest
//! and config it starts from, the last step of both (the manifest written into the working
//! layout and the image pushed from it, [`push_written`]), and the time of its layers'
//! directories without a clamp.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::assemble::{Failure, ReadFailure, push_image};
use crate::builder::compose::config::BaseConfigError;
use crate::builder::windows_layer::LayerError;
use crate::digest::Digest;
use crate::manifest::{MAX_CONFIG_BYTES, MAX_MANIFEST_BYTES, OCI_MANIFEST};
use crate::reference::{LayoutRef, RegistryRef};
use crate::session::Session;
use crate::source::layout::{LayoutWriteError, LayoutWriter};
use crate::source::{FetchError, Source};

/// Why the Windows stage's layers could not be written.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StageError {
    /// The session cannot reach registries.
    #[error("{0}: the session has no registry client")]
    NoRegistryClient(String),
    /// An object of the pushed image cannot be read.
    #[error("cannot read {what} of {image}")]
    Fetch {
        /// The image.
        image: String,
        /// `manifest`, `config`, `layer DIGEST`.
        what: String,
        /// Why.
        #[source]
        source: Arc<FetchError>,
    },
    /// The manifest or config is not the JSON expected.
    #[error("{image}: {what} is not an image {what} ({reason})")]
    Unusable {
        /// The image.
        image: String,
        /// `manifest` or `config`.
        what: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The base's config cannot be made the composed image's.
    #[error("{image}: cannot compose its config")]
    Config {
        /// The base.
        image: String,
        /// Why.
        #[source]
        source: BaseConfigError,
    },
    /// The image's first layers are not its base's layers.
    #[error(
        "{image}: its layers do not start with the {base} layers of its Windows base; \
         not rewritten"
    )]
    NotOnBase {
        /// The image.
        image: String,
        /// How many layers the base has.
        base: usize,
    },
    /// An added layer has a media type the writer does not read.
    #[error("{image}: layer {digest} is {media_type}, not a tar or gzip'd tar layer")]
    MediaType {
        /// The image.
        image: String,
        /// The layer.
        digest: String,
        /// Its media type.
        media_type: String,
    },
    /// An added layer cannot be rewritten.
    #[error("{image}: layer {digest}")]
    Layer {
        /// The image.
        image: String,
        /// The layer.
        digest: String,
        /// Why.
        #[source]
        source: Arc<LayerError>,
    },
    /// The image cannot be written to its work directory (an OCI layout).
    #[error(transparent)]
    Write(Arc<LayoutWriteError>),
    /// The rewriting task ended abnormally.
    #[error("the layer rewrite ended abnormally")]
    Task(#[source] Arc<tokio::task::JoinError>),
    /// The rewritten image cannot be pushed.
    #[error("cannot push the rewritten image to {0}")]
    Push(String, #[source] Arc<Failure>),
}

impl From<LayoutWriteError> for StageError {
    fn from(e: LayoutWriteError) -> StageError {
        StageError::Write(Arc::new(e))
    }
}

impl StageError {
    /// Whether the registry could not be reached rather than the image being wrong.
    pub fn is_unavailable(&self) -> bool {
        match self {
            StageError::Fetch { source, .. } => matches!(**source, FetchError::Unavailable(_)),
            // A base layer copied from a registry that cannot be reached: the base was read
            // moments before, so this is the registry, not the user's input.
            StageError::Push(_, f) => match &**f {
                Failure::ChildUnreadable {
                    source: ReadFailure::Fetch(FetchError::Unavailable(_)),
                    ..
                } => true,
                f => crate::error::Blame::fault(f) == crate::error::Fault::Unavailable,
            },
            _ => false,
        }
    }
}

/// `what` (`manifest`, `config`, `layer DIGEST`) of `image` cannot be read.
pub(crate) fn fetch_error(image: &str, what: impl Into<String>, e: FetchError) -> StageError {
    StageError::Fetch {
        image: image.to_string(),
        what: what.into(),
        source: Arc::new(e),
    }
}

/// `what` (`manifest` or `config`) of `image` is not what it should be.
pub(crate) fn unusable(image: &str, what: &'static str, reason: impl Into<String>) -> StageError {
    StageError::Unusable {
        image: image.to_string(),
        what,
        reason: reason.into(),
    }
}

/// A verified manifest or config of `source`, parsed.
pub(crate) async fn read_json(
    source: &impl Source,
    image: &str,
    what: &'static str,
    digest: &Digest,
) -> Result<Value, StageError> {
    let bytes = if what == "manifest" {
        source.manifest(digest, MAX_MANIFEST_BYTES).await
    } else {
        source.blob(digest, MAX_CONFIG_BYTES).await
    }
    .map_err(|e| fetch_error(image, what, e))?;
    if !digest.matches(&bytes) {
        return Err(unusable(
            image,
            what,
            format!("its bytes do not hash to {digest}"),
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| unusable(image, what, e.to_string()))
}

/// The config digest a manifest names.
pub(crate) fn config_digest(manifest: &Value, image: &str) -> Result<Digest, StageError> {
    manifest["config"]["digest"]
        .as_str()
        .and_then(|d| d.parse().ok())
        .ok_or_else(|| unusable(image, "manifest", "no config digest"))
}

/// An image's config must name as many `diff_ids` as its manifest has layers: the composed
/// image appends one to each, the rewrite replaces them by index.
pub(crate) fn same_layer_count(
    manifest: &Value,
    config: &Value,
    image: &str,
) -> Result<(), StageError> {
    let layers = manifest["layers"].as_array().map_or(0, Vec::len);
    let diff_ids = config["rootfs"]["diff_ids"].as_array().map_or(0, Vec::len);
    if layers == diff_ids {
        return Ok(());
    }
    Err(unusable(
        image,
        "config",
        format!("{diff_ids} diff_ids for the manifest's {layers} layers"),
    ))
}

/// Seconds since the epoch now: the time of `Hives/` and `Files/` without a clamp.
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Writes `manifest` into the working layout `work` (at `dir`; its config and layers are there
/// already) as the layout's one image, then pushes that image to `to` through
/// [`push_image`]: the blobs the repository lacks (those of `base` mounted when they are in
/// another repository of the registry), then the manifest by digest and under `to`'s tag.
/// Returns the manifest's digest.
pub async fn push_written(
    session: &Session,
    work: &LayoutWriter,
    dir: &Path,
    manifest: &Value,
    to: &RegistryRef,
    base: &RegistryRef,
) -> Result<Digest, StageError> {
    let bytes = manifest.to_string().into_bytes();
    let digest = work.put_blob(&bytes)?;
    let media_type = manifest["mediaType"].as_str().unwrap_or(OCI_MANIFEST);
    work.put_index(&digest, bytes.len(), media_type)?;
    let layout = LayoutRef {
        dir: dir.to_path_buf(),
        tag: None,
        digest: Some(digest.clone()),
    };
    push_image(session, to, &layout, Some(base))
        .await
        .map_err(|e| StageError::Push(to.to_string(), Arc::new(e)))?;
    Ok(digest)
}
