//! The Windows stage composed without Buildah (as ko and `crane append` do): the stage's files
//! come from a Buildah build of the Linux stages plus a `FROM scratch` stage of its
//! `COPY`/`ADD` ([`stage`]), written as ONE layer in the Windows layer format by
//! [`crate::builder::windows_layer::LayerWriter`]; the base's manifest and config are read
//! remotely, the config edited ([`config`]), and the new layer, config and manifest pushed
//! with [`crate::assemble::push_image`], the base's layers mounted from the base's repository (or
//! copied through a file from another registry) — never downloaded to build.

pub mod config;
pub mod lex;
pub mod paths;
pub mod stage;

use std::path::Path;
use std::sync::Arc;

use serde_json::json;

use crate::builder::error::BuildRunError;
use crate::builder::jobs::{ComposeJob, Job};
use crate::builder::stage_image::{
    StageError, config_digest, fetch_error, now, push_written, read_json, same_layer_count,
};
use crate::builder::windows_layer::{LayerError, LayerTimes, LayerWriter, Rewritten};
use crate::digest::Digest;
use crate::graph::MAX_LAYER_BYTES;
use crate::manifest::OCI_MANIFEST;
use crate::reference::{LayoutRef, RegistryRef};
use crate::session::Session;
use crate::source::BlobFile;
use crate::source::layout::{LayoutSource, LayoutWriter};
use config::{Added, compose_config};
use stage::{Decision, StagePlan, decide};

/// How the Windows stages of a run are made (`build --windows-stage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StageMode {
    /// Composed when the stage can be ([`stage::decide`]), else built by Buildah.
    #[default]
    Auto,
    /// Always built by Buildah (its layers rewritten when Buildah is older than 1.44).
    Buildah,
    /// Always composed; a stage that cannot be is an error.
    Compose,
}

/// Decides how the Windows stage of `job` is made. For a composed stage, writes the
/// Containerfile of its files next to the job's log and points the job's `buildah build` at
/// it. Sets and returns the job's stage note; `None` for a Linux job.
pub fn choose(job: &mut Job, mode: StageMode) -> Result<Option<String>, BuildRunError> {
    let in_registry = job.base_image.is_some();
    let note = preview(job, mode, in_registry)?;
    if let Some(c) = &job.compose {
        let file = &job.spec.containerfile;
        std::fs::write(file, &c.plan.files_containerfile)
            .map_err(|e| BuildRunError::StageFile(file.clone(), Arc::new(e)))?;
    }
    Ok(note)
}

/// What [`choose`] decides, without writing anything (`build --dry-run`): the job is changed
/// as for the build (a composed stage's `buildah build` names the files Containerfile, not
/// yet written). `in_registry` says whether the Windows base is an image in a registry.
pub fn preview(
    job: &mut Job,
    mode: StageMode,
    in_registry: bool,
) -> Result<Option<String>, BuildRunError> {
    if job.target.os != "windows" {
        return Ok(None);
    }
    let decision = match (mode, in_registry, &job.target.base) {
        (StageMode::Buildah, _, _) => Decision::Buildah("--windows-stage buildah".into()),
        (_, true, Some(base)) => {
            let file = &job.spec.containerfile;
            let text = std::fs::read_to_string(file)
                .map_err(|e| BuildRunError::StageFile(file.clone(), Arc::new(e)))?;
            decide(&text, base, &job.spec.build_args)
        }
        _ => Decision::Buildah("the Windows base is not in a registry".into()),
    };
    let note = match decision {
        Decision::Compose(plan) => {
            job.spec.containerfile = job.log.with_extension("files.Containerfile");
            job.spec.tag.push_str("-files");
            job.compose = Some(ComposeJob {
                plan,
                files: job.log.with_extension("files"),
            });
            "Windows stage composed by imgcheck: Buildah builds only its files, the base is \
             not downloaded"
                .to_string()
        }
        Decision::Buildah(reason) if mode == StageMode::Compose => {
            return Err(BuildRunError::NotComposable {
                image: job.image.clone(),
                target: job.target.label(),
                reason,
            });
        }
        Decision::Buildah(reason) => format!("Windows stage built by Buildah: {reason}"),
    };
    job.stage_note = Some(note.clone());
    Ok(Some(note))
}

/// Docker's image manifest media type: its layers keep Docker's media types.
const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";

/// One Windows image to compose.
pub struct ComposeImage<'a> {
    /// Its per-platform tag.
    pub push_to: &'a RegistryRef,
    /// The OCI layout Buildah pushed the stage's files image to, and that image's digest.
    pub files: (&'a Path, &'a Digest),
    /// The Windows base, pinned to the image a node of the planned build pulls.
    pub base: &'a RegistryRef,
    /// The stage.
    pub plan: &'a StagePlan,
    /// A directory for the composed image (an OCI layout of its new blobs).
    pub work: &'a Path,
    /// `SOURCE_DATE_EPOCH` / `--timestamp`.
    pub clamp: Option<u64>,
    /// os.version for a base whose config has none.
    pub os_version: Option<String>,
}

/// The layers of the files image, in order, each with whether it is gzip'd; and the image's
/// name for errors.
async fn files_layers(
    image: &ComposeImage<'_>,
) -> Result<(String, Vec<(BlobFile, bool)>), StageError> {
    let (dir, digest) = image.files;
    let name = format!("{}@{digest}", dir.display());
    let layout = LayoutRef {
        dir: dir.to_path_buf(),
        tag: None,
        digest: Some(digest.clone()),
    };
    let source = LayoutSource::open(&layout).map_err(|e| fetch_error(&name, "layout", e))?;
    let manifest = read_json(&source, &name, "manifest", digest).await?;
    let mut inputs = Vec::new();
    for layer in manifest["layers"].as_array().into_iter().flatten() {
        let d: Digest = layer["digest"]
            .as_str()
            .and_then(|d| d.parse().ok())
            .ok_or_else(|| StageError::Unusable {
                image: name.clone(),
                what: "manifest",
                reason: "a layer without a digest".into(),
            })?;
        let gzip = layer["mediaType"].as_str().unwrap_or("").ends_with("gzip");
        let file = source
            .blob_file(&d, MAX_LAYER_BYTES)
            .await
            .map_err(|e| fetch_error(&name, format!("layer {d}"), e))?;
        inputs.push((file, gzip));
    }
    Ok((name, inputs))
}

/// Writes the layers of the files image (`inputs`, from [`files_layers`]) as one
/// Windows-format layer into the work layout.
async fn write_layer(
    image: &ComposeImage<'_>,
    work: &LayoutWriter,
    name: String,
    inputs: Vec<(BlobFile, bool)>,
) -> Result<Rewritten, StageError> {
    let times = LayerTimes {
        dirs: image.clamp.unwrap_or_else(now),
        clamp: image.clamp,
    };
    let (work, spool) = (work.clone(), work.spool("composing"));
    let done = tokio::task::spawn_blocking(move || {
        let output = std::io::BufWriter::new(std::fs::File::create(&spool)?);
        let mut writer = LayerWriter::new(output, times)?;
        for (file, gzip) in &inputs {
            let input = std::io::BufReader::new(std::fs::File::open(&file.path)?);
            writer.append_tar(input, *gzip)?;
        }
        let done = writer.finish()?;
        work.put_spooled(&spool, &done.digest)?;
        Ok::<_, LayerError>(done)
    })
    .await
    .map_err(|e| StageError::Task(Arc::new(e)))?;
    done.map_err(|e| StageError::Layer {
        image: name,
        digest: "of the stage's files".into(),
        source: Arc::new(e),
    })
}

/// Composes the image and pushes it under its per-platform tag; returns its digest.
pub async fn compose_image(
    session: &Session,
    image: &ComposeImage<'_>,
) -> Result<Digest, StageError> {
    let base_name = image.base.to_string();
    let client = session
        .registry_client()
        .ok_or_else(|| StageError::NoRegistryClient(base_name.clone()))?;
    let source = client.source(image.base);
    let base_digest = image
        .base
        .digest
        .clone()
        .ok_or_else(|| StageError::Unusable {
            image: base_name.clone(),
            what: "manifest",
            reason: "the base is not pinned by digest".into(),
        })?;
    let mut manifest = read_json(&source, &base_name, "manifest", &base_digest).await?;
    let config_digest = config_digest(&manifest, &base_name)?;
    let config = read_json(&source, &base_name, "config", &config_digest).await?;
    same_layer_count(&manifest, &config, &base_name)?;
    let (name, inputs) = files_layers(image).await?;
    let work = LayoutWriter::create(image.work)?;
    let layer = write_layer(image, &work, name, inputs).await?;
    let added = Added {
        diff_id: layer.diff_id.clone(),
        created: image.clamp.unwrap_or_else(now),
        os_version: image.os_version.clone(),
    };
    let config =
        compose_config(config, image.plan, &added).map_err(|source| StageError::Config {
            image: base_name.clone(),
            source,
        })?;
    let config_bytes = config.to_string().into_bytes();
    let config_digest = work.put_blob(&config_bytes)?;
    let media_type = manifest["mediaType"]
        .as_str()
        .unwrap_or(OCI_MANIFEST)
        .to_string();
    let layer_type = if media_type == DOCKER_MANIFEST {
        "application/vnd.docker.image.rootfs.diff.tar.gzip"
    } else {
        "application/vnd.oci.image.layer.v1.tar+gzip"
    };
    manifest["config"]["digest"] = json!(config_digest.to_string());
    manifest["config"]["size"] = json!(config_bytes.len());
    let new_layer = json!({
        "mediaType": layer_type,
        "digest": layer.digest.to_string(),
        "size": layer.size,
    });
    match manifest["layers"].as_array_mut() {
        Some(l) => l.push(new_layer),
        None => manifest["layers"] = json!([new_layer]),
    }
    push_written(
        session,
        &work,
        image.work,
        &manifest,
        image.push_to,
        image.base,
    )
    .await
}
