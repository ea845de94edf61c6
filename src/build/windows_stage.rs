//! The Windows stage's layers, written by imgcheck when Buildah is older than 1.44: the image
//! Buildah pushed is read back (manifest, config, the layers the stage added — never the base
//! image's), each added layer is rewritten into the Windows layer format
//! ([`crate::build::windows_layer`]), the config's `diff_ids` and the manifest are fixed, and
//! the result is pushed under the same per-platform tag through [`crate::assemble`]. The base's
//! layers keep their digests and are not uploaded again.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::assemble::{Failure, ReadFailure, push_image};
use crate::build::windows_layer::{LayerError, LayerTimes, Rewritten, rewrite};
use crate::digest::Digest;
use crate::graph::MAX_LAYER_BYTES;
use crate::manifest::{MAX_CONFIG_BYTES, MAX_MANIFEST_BYTES, OCI_MANIFEST};
use crate::reference::{LayoutRef, RegistryRef};
use crate::session::Session;
use crate::source::registry::RegistrySource;
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
        source: crate::build::compose::config::ConfigError,
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
    /// The rewritten image cannot be written to the work directory.
    #[error("cannot write {}", .0.display())]
    Write(PathBuf, #[source] Arc<std::io::Error>),
    /// The rewriting task ended abnormally.
    #[error("the layer rewrite ended abnormally")]
    Task(#[source] Arc<tokio::task::JoinError>),
    /// The rewritten image cannot be pushed.
    #[error("cannot push the rewritten image to {0}")]
    Push(String, #[source] Arc<Failure>),
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

/// One Windows image to rewrite.
pub struct StageImage<'a> {
    /// Where Buildah pushed it (its per-platform tag); the rewrite is pushed there too.
    pub pushed: &'a RegistryRef,
    /// The digest Buildah pushed.
    pub digest: &'a Digest,
    /// The layers of its Windows base, in order.
    pub base_layers: &'a [Digest],
    /// A directory for the rewritten image (an OCI layout).
    pub work: &'a Path,
    /// `SOURCE_DATE_EPOCH` / `--timestamp`.
    pub clamp: Option<u64>,
}

/// The gzip media type for a layer media type the writer reads; `None` for any other.
fn gzip_media_type(media_type: &str) -> Option<&'static str> {
    match media_type {
        "application/vnd.oci.image.layer.v1.tar+gzip"
        | "application/vnd.oci.image.layer.v1.tar" => {
            Some("application/vnd.oci.image.layer.v1.tar+gzip")
        }
        "application/vnd.docker.image.rootfs.diff.tar.gzip"
        | "application/vnd.docker.image.rootfs.diff.tar" => {
            Some("application/vnd.docker.image.rootfs.diff.tar.gzip")
        }
        _ => None,
    }
}

impl StageImage<'_> {
    fn name(&self) -> String {
        self.pushed.with_digest(self.digest).to_string()
    }

    fn fetch_error(&self, what: impl Into<String>) -> impl FnOnce(FetchError) -> StageError {
        let image = self.name();
        let what = what.into();
        move |e| StageError::Fetch {
            image,
            what,
            source: Arc::new(e),
        }
    }

    fn unusable(&self, what: &'static str, reason: impl Into<String>) -> StageError {
        StageError::Unusable {
            image: self.name(),
            what,
            reason: reason.into(),
        }
    }

    /// A verified manifest or config, parsed.
    async fn json(
        &self,
        source: &RegistrySource,
        what: &'static str,
        digest: &Digest,
    ) -> Result<(Value, Vec<u8>), StageError> {
        let bytes = if what == "manifest" {
            source.manifest(digest, MAX_MANIFEST_BYTES).await
        } else {
            source.blob(digest, MAX_CONFIG_BYTES).await
        }
        .map_err(self.fetch_error(what))?;
        if !digest.matches(&bytes) {
            return Err(self.unusable(what, format!("its bytes do not hash to {digest}")));
        }
        let value: Value =
            serde_json::from_slice(&bytes).map_err(|e| self.unusable(what, e.to_string()))?;
        Ok((value, bytes))
    }

    /// Downloads one added layer and rewrites it into `blobs/sha256/` of the work layout.
    async fn rewrite_layer(
        &self,
        source: &RegistrySource,
        layer: &Value,
        created: u64,
    ) -> Result<(Rewritten, &'static str), StageError> {
        let digest_text = layer["digest"].as_str().unwrap_or_default().to_string();
        let media_type = layer["mediaType"].as_str().unwrap_or_default();
        let out_type = gzip_media_type(media_type).ok_or_else(|| StageError::MediaType {
            image: self.name(),
            digest: digest_text.clone(),
            media_type: media_type.to_string(),
        })?;
        let digest: Digest = digest_text
            .parse()
            .map_err(|e: crate::digest::DigestError| self.unusable("manifest", e.to_string()))?;
        let blob = source
            .blob_file(&digest, MAX_LAYER_BYTES)
            .await
            .map_err(self.fetch_error(format!("layer {digest}")))?;
        let gzip = media_type.ends_with("gzip");
        let times = LayerTimes {
            dirs: self.clamp.unwrap_or(created),
            clamp: self.clamp,
        };
        let blobs = self.work.join("blobs/sha256");
        let spool = blobs.join("rewriting");
        let (image, shown) = (self.name(), digest_text.clone());
        let done = tokio::task::spawn_blocking(move || {
            let input = std::fs::File::open(&blob.path).map_err(LayerError::Io)?;
            let output = std::fs::File::create(&spool).map_err(LayerError::Io)?;
            let mut output = std::io::BufWriter::new(output);
            let done = rewrite(std::io::BufReader::new(input), gzip, &mut output, times)?;
            std::io::Write::flush(&mut output).map_err(LayerError::Io)?;
            std::fs::rename(&spool, blobs.join(done.digest.hex())).map_err(LayerError::Io)?;
            Ok::<_, LayerError>(done)
        })
        .await
        .map_err(|e| StageError::Task(Arc::new(e)))?
        .map_err(|e| StageError::Layer {
            image,
            digest: shown,
            source: Arc::new(e),
        })?;
        Ok((done, out_type))
    }
}

/// Writes `bytes` as a blob of the work layout; returns its digest.
pub(crate) fn put_blob(work: &Path, bytes: &[u8]) -> Result<Digest, StageError> {
    let digest = Digest::sha256(bytes);
    let path = work.join("blobs/sha256").join(digest.hex());
    std::fs::write(&path, bytes).map_err(|e| StageError::Write(path, Arc::new(e)))?;
    Ok(digest)
}

/// Writes `oci-layout` and an `index.json` naming the manifest.
pub(crate) fn put_index(
    work: &Path,
    manifest: &Digest,
    size: usize,
    media_type: &str,
) -> Result<(), StageError> {
    let index = json!({
        "schemaVersion": 2,
        "manifests": [{"mediaType": media_type, "digest": manifest.to_string(), "size": size}],
    });
    for (name, text) in [
        (
            "oci-layout",
            r#"{"imageLayoutVersion":"1.0.0"}"#.to_string(),
        ),
        ("index.json", index.to_string()),
    ] {
        let path = work.join(name);
        std::fs::write(&path, text).map_err(|e| StageError::Write(path, Arc::new(e)))?;
    }
    Ok(())
}

/// Seconds since the epoch now: the time of `Hives/` and `Files/` without a clamp.
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Rewrites the layers the Windows stage added to `image` and pushes the result under the
/// same tag; returns the new manifest's digest.
pub async fn rewrite_image(
    session: &Session,
    image: &StageImage<'_>,
) -> Result<Digest, StageError> {
    let client = session
        .registry_client()
        .ok_or_else(|| StageError::NoRegistryClient(image.name()))?;
    let source = client.source(&image.pushed.with_digest(image.digest));
    let (mut manifest, _) = image.json(&source, "manifest", image.digest).await?;
    let config_digest: Digest = manifest["config"]["digest"]
        .as_str()
        .and_then(|d| d.parse().ok())
        .ok_or_else(|| image.unusable("manifest", "no config digest"))?;
    let (mut config, _) = image.json(&source, "config", &config_digest).await?;
    let layers = manifest["layers"].as_array().cloned().unwrap_or_default();
    let base = image.base_layers.len();
    let starts_with_base = layers.len() >= base
        && layers
            .iter()
            .zip(image.base_layers)
            .all(|(l, b)| l["digest"] == b.to_string());
    if !starts_with_base {
        return Err(StageError::NotOnBase {
            image: image.name(),
            base,
        });
    }
    // Each rewritten layer replaces its diff_id by index: a config naming another number of
    // diff_ids than the manifest's layers is refused, not indexed past its end.
    crate::build::compose::same_layer_count(&manifest, &config, &image.name())?;
    let blobs = image.work.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).map_err(|e| StageError::Write(blobs, Arc::new(e)))?;
    for (i, layer) in layers.iter().enumerate().skip(base) {
        let (done, media_type) = image.rewrite_layer(&source, layer, now()).await?;
        manifest["layers"][i] = json!({
            "mediaType": media_type,
            "digest": done.digest.to_string(),
            "size": done.size,
        });
        config["rootfs"]["diff_ids"][i] = json!(done.diff_id.to_string());
    }
    let config_bytes = config.to_string().into_bytes();
    let config_digest = put_blob(image.work, &config_bytes)?;
    manifest["config"]["digest"] = json!(config_digest.to_string());
    manifest["config"]["size"] = json!(config_bytes.len());
    let manifest_bytes = manifest.to_string().into_bytes();
    let digest = put_blob(image.work, &manifest_bytes)?;
    let media_type = manifest["mediaType"]
        .as_str()
        .unwrap_or(OCI_MANIFEST)
        .to_string();
    put_index(image.work, &digest, manifest_bytes.len(), &media_type)?;
    push(session, image, &digest).await?;
    Ok(digest)
}

/// Pushes the rewritten image (its blobs that the repository lacks, its manifest) through
/// [`crate::assemble::push_image`]: the per-platform tag names the image itself. The base's layers
/// are in the repository already (Buildah pushed them there).
async fn push(
    session: &Session,
    image: &StageImage<'_>,
    digest: &Digest,
) -> Result<(), StageError> {
    let layout = LayoutRef {
        dir: image.work.to_path_buf(),
        tag: None,
        digest: Some(digest.clone()),
    };
    push_image(session, image.pushed, &layout, Some(image.pushed))
        .await
        .map_err(|e| StageError::Push(image.pushed.to_string(), Arc::new(e)))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewritten_layers_are_gzip_of_the_same_family() {
        let oci = "application/vnd.oci.image.layer.v1.tar+gzip";
        let docker = "application/vnd.docker.image.rootfs.diff.tar.gzip";
        let cases = [
            ("application/vnd.oci.image.layer.v1.tar+gzip", Some(oci)),
            ("application/vnd.oci.image.layer.v1.tar", Some(oci)),
            (
                "application/vnd.docker.image.rootfs.diff.tar.gzip",
                Some(docker),
            ),
            ("application/vnd.docker.image.rootfs.diff.tar", Some(docker)),
            ("application/vnd.oci.image.layer.v1.tar+zstd", None),
            (
                "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
                None,
            ),
            ("", None),
        ];
        for (input, want) in cases {
            assert_eq!(gzip_media_type(input), want, "{input}");
        }
    }
}
