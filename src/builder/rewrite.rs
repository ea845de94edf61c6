//! The Windows stage's layers, written by imgcheck when Buildah is older than 1.44: the image
//! Buildah pushed is read back (manifest, config, the layers the stage added — never the base
//! image's), each added layer is rewritten into the Windows layer format
//! ([`crate::builder::windows_layer`]), the config's `diff_ids` and the manifest are fixed, the
//! result is written as an OCI layout ([`crate::source::layout::LayoutWriter`]) and pushed
//! under the same per-platform tag through [`crate::assemble`]. The base's layers keep their
//! digests and are not uploaded again.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::builder::stage_image::{
    StageError, config_digest, fetch_error, now, push_written, read_json, same_layer_count,
    unusable,
};
use crate::builder::windows_layer::{LayerError, LayerTimes, Rewritten, rewrite};
use crate::digest::Digest;
use crate::graph::MAX_LAYER_BYTES;
use crate::reference::RegistryRef;
use crate::session::Session;
use crate::source::layout::LayoutWriter;
use crate::source::registry::RegistrySource;

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

    /// Downloads one added layer and rewrites it into the work layout.
    async fn rewrite_layer(
        &self,
        source: &RegistrySource,
        work: &LayoutWriter,
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
            .map_err(|e: crate::digest::DigestError| {
                unusable(&self.name(), "manifest", e.to_string())
            })?;
        let blob = source
            .blob_file(&digest, MAX_LAYER_BYTES)
            .await
            .map_err(|e| fetch_error(&self.name(), format!("layer {digest}"), e))?;
        let gzip = media_type.ends_with("gzip");
        let times = LayerTimes {
            dirs: self.clamp.unwrap_or(created),
            clamp: self.clamp,
        };
        let (work, spool) = (work.clone(), work.spool("rewriting"));
        let (image, shown) = (self.name(), digest_text.clone());
        let done = tokio::task::spawn_blocking(move || {
            let input = std::fs::File::open(&blob.path).map_err(LayerError::Io)?;
            let output = std::fs::File::create(&spool).map_err(LayerError::Io)?;
            let mut output = std::io::BufWriter::new(output);
            let done = rewrite(std::io::BufReader::new(input), gzip, &mut output, times)?;
            std::io::Write::flush(&mut output).map_err(LayerError::Io)?;
            work.put_spooled(&spool, &done.digest)
                .map_err(LayerError::Io)?;
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
    let name = image.name();
    let mut manifest = read_json(&source, &name, "manifest", image.digest).await?;
    let config_digest = config_digest(&manifest, &name)?;
    let mut config = read_json(&source, &name, "config", &config_digest).await?;
    let layers = manifest["layers"].as_array().cloned().unwrap_or_default();
    let base = image.base_layers.len();
    let starts_with_base = layers.len() >= base
        && layers
            .iter()
            .zip(image.base_layers)
            .all(|(l, b)| l["digest"] == b.to_string());
    if !starts_with_base {
        return Err(StageError::NotOnBase { image: name, base });
    }
    // Each rewritten layer replaces its diff_id by index: a config naming another number of
    // diff_ids than the manifest's layers is refused, not indexed past its end.
    same_layer_count(&manifest, &config, &name)?;
    let work = LayoutWriter::create(image.work)?;
    for (i, layer) in layers.iter().enumerate().skip(base) {
        let (done, media_type) = image.rewrite_layer(&source, &work, layer, now()).await?;
        manifest["layers"][i] = json!({
            "mediaType": media_type,
            "digest": done.digest.to_string(),
            "size": done.size,
        });
        config["rootfs"]["diff_ids"][i] = json!(done.diff_id.to_string());
    }
    let config_bytes = config.to_string().into_bytes();
    let config_digest = work.put_blob(&config_bytes)?;
    manifest["config"]["digest"] = json!(config_digest.to_string());
    manifest["config"]["size"] = json!(config_bytes.len());
    push_written(
        session,
        &work,
        image.work,
        &manifest,
        image.pushed,
        image.pushed,
    )
    .await
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
