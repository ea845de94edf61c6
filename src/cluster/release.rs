//! What an OpenShift release image ships (`--from-release`): the `ImageStream` at
//! `release-manifests/image-references` in its layers names one image per component
//! (`spec.tags[].name` → `spec.tags[].from.name`), as `oc adm release info --pullspecs` lists it.
//!
//! [`read_release`] fetches the release's top object (a single-arch manifest, or the `-multi`
//! index, whose linux/amd64 child is read), then its layers from the last to the first,
//! streamed and decompressed in bounded memory by the `--deep` reader
//! ([`crate::graph::layer::find_file`]), until one holds the file. Each layer read is read to
//! its end and must hash to its digest and have its descriptor's size before its file is
//! trusted (a file found early cannot be trusted on a layer cut short). Entries are read as
//! Go's `archive/tar` reads them and applied as containers/storage applies them, so a decoy a
//! Linux runtime never sees (after the end-of-archive marker, under a name with a backslash)
//! is not read either. A whiteout of the file in a later layer means the release deleted it; a
//! link at the file or at `release-manifests` is refused.
//! See `docs/cluster.md`, "Release payloads".

use std::collections::HashSet;

use serde_json::Value;

use crate::digest::Digest;
use crate::graph::layer::{FileInLayer, fetch::read_blob, find_file};
use crate::graph::{Problem, verify};
use crate::manifest::{Descriptor, ImageManifest, MAX_MANIFEST_BYTES, Manifest, ManifestError};
use crate::reference::{ImageRef, ReferenceError, RegistryRef};
use crate::session::Session;
use crate::source::{FetchError, Source};

impl crate::error::Blame for ReleaseError {
    fn fault(&self) -> crate::error::Fault {
        use crate::error::Fault;
        match self.kind {
            // A release tag or repository that does not exist is the user's reference, not
            // a verdict on an image: bad input, like a release image that is not one.
            ReleaseErrorKind::NotARelease | ReleaseErrorKind::NotFound => Fault::Input,
            ReleaseErrorKind::Unavailable => Fault::Unavailable,
        }
    }
}

#[cfg(test)]
mod tests;

/// Where a release image keeps its component list.
pub const IMAGE_REFERENCES: &str = "release-manifests/image-references";
/// Largest `image-references` file read (real ones are a few hundred KiB).
pub const MAX_IMAGE_REFERENCES_BYTES: u64 = 8 * 1024 * 1024;

/// One component of a release payload: `spec.tags[i]` of `release-manifests/image-references`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseTag {
    /// The component's name (`spec.tags[i].name`, e.g. `azure-file-csi-driver`).
    pub name: String,
    /// Its image (`spec.tags[i].from.name`).
    pub image: ImageRef,
}

/// What imgcheck read from a release image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    /// The release reference as given.
    pub reference: String,
    /// Digest of the single-arch release image manifest whose layers were read.
    pub digest: String,
    /// When the reference names an index (a `-multi` release): its digest and the platform
    /// of the child that was read (`linux/amd64`, else the first Linux child).
    pub from_index: Option<(String, String)>,
    /// The layer that held `image-references`.
    pub layer: String,
    /// The `ImageStream`'s `metadata.name` (the release version, e.g. `4.18.0`).
    pub version: Option<String>,
    /// The components, in file order.
    pub tags: Vec<ReleaseTag>,
}

/// Whose fault a [`ReleaseError`] is (see [`crate::error::Blame`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseErrorKind {
    /// The image is not a release image imgcheck can read: no `image-references`, a bad
    /// `ImageStream`, a manifest or layer that cannot be used.
    NotARelease,
    /// The release reference (its repository or tag) does not exist.
    NotFound,
    /// The release could not be read completely (network, registry, `--timeout`, bytes that
    /// do not match their digest).
    Unavailable,
}

/// What caused a [`ReleaseError`].
#[derive(Debug, thiserror::Error)]
pub enum ReleaseCause {
    /// Fetching from the source.
    #[error(transparent)]
    Fetch(FetchError),
    /// A manifest that does not parse.
    #[error("{}", .0.with_causes())]
    Manifest(ManifestError),
    /// Reading a layer.
    #[error(transparent)]
    Layer(Problem),
    /// `image-references` is not JSON.
    #[error(transparent)]
    Json(serde_json::Error),
    /// `image-references` is not YAML.
    #[error(transparent)]
    Yaml(serde_yaml_ng::Error),
    /// `image-references` nests too deep, or its aliases expand too far, to be parsed safely.
    #[error(transparent)]
    Guard(crate::yaml::Refused),
    /// A `from.name` that is not an image reference.
    #[error(transparent)]
    Reference(ReferenceError),
}

/// A release image that cannot be read: the release (or file) it is about, what is wrong,
/// and the cause.
#[derive(Debug, thiserror::Error)]
#[error("release {release}: {what}")]
pub struct ReleaseError {
    /// The release reference, or the origin of the `image-references` bytes.
    pub release: String,
    /// What is wrong.
    pub what: String,
    /// Whose fault it is.
    pub kind: ReleaseErrorKind,
    /// The underlying error, if any.
    #[source]
    pub cause: Option<ReleaseCause>,
}

impl ReleaseError {
    fn new(release: &str, kind: ReleaseErrorKind, what: impl Into<String>) -> ReleaseError {
        ReleaseError {
            release: release.to_string(),
            what: what.into(),
            kind,
            cause: None,
        }
    }

    fn caused(mut self, cause: ReleaseCause) -> ReleaseError {
        self.cause = Some(cause);
        self
    }

    fn fetch(release: &str, what: impl Into<String>, e: FetchError) -> ReleaseError {
        let kind = match e {
            FetchError::NotFound(_) => ReleaseErrorKind::NotFound,
            FetchError::BadInput(_) => ReleaseErrorKind::NotARelease,
            FetchError::DigestMismatch { .. }
            | FetchError::TooLarge { .. }
            | FetchError::Unavailable(_) => ReleaseErrorKind::Unavailable,
        };
        ReleaseError::new(release, kind, what).caused(ReleaseCause::Fetch(e))
    }

    fn problem(release: &str, what: impl Into<String>, p: Problem) -> ReleaseError {
        let kind = match p {
            Problem::Missing(_) => ReleaseErrorKind::NotFound,
            Problem::Bad(_) => ReleaseErrorKind::NotARelease,
            Problem::DigestMismatch(_) | Problem::Unavailable(_) => ReleaseErrorKind::Unavailable,
        };
        ReleaseError::new(release, kind, what).caused(ReleaseCause::Layer(p))
    }
}

/// Reads the release image `reference`: its `image-references` and the components it names.
pub async fn read_release(
    session: &Session,
    reference: &ImageRef,
) -> Result<Release, ReleaseError> {
    let name = reference.to_string();
    let open_error = |e| ReleaseError::fetch(&name, "cannot open the release image", e);
    read_from(&session.open(reference).map_err(open_error)?, &name).await
}

/// The release image's manifest, the digest it was read under, and the index it was chosen
/// from (digest, platform), if any.
type Chosen = (ImageManifest, Digest, Option<(String, String)>);

async fn read_from<S: Source>(source: &S, name: &str) -> Result<Release, ReleaseError> {
    let (manifest, digest, from_index) = release_manifest(source, name).await?;
    let (layer, bytes) = image_references(source, name, &manifest).await?;
    let origin = format!("{name}: layer {layer}: {IMAGE_REFERENCES}");
    let (version, tags) = parse_image_references(&bytes, &origin)?;
    Ok(Release {
        reference: name.to_string(),
        digest: digest.to_string(),
        from_index,
        layer: layer.to_string(),
        version,
        tags,
    })
}

/// Fetches the top object; an index leads to its linux/amd64 child (else its first Linux one).
async fn release_manifest<S: Source>(source: &S, name: &str) -> Result<Chosen, ReleaseError> {
    let top = source
        .top()
        .await
        .map_err(|e| ReleaseError::fetch(name, "cannot fetch the release image", e))?;
    let digest = top
        .claimed_digest
        .clone()
        .unwrap_or_else(|| Digest::sha256(&top.bytes));
    verify(&top.bytes, &digest, top.claimed_size)
        .map_err(|p| ReleaseError::problem(name, "the release image's manifest", p))?;
    let not_release = |what: String| ReleaseError::new(name, ReleaseErrorKind::NotARelease, what);
    let parse = |bytes: &[u8], claimed: Option<&str>, what: &str| {
        Manifest::parse(bytes, claimed).map_err(|e| {
            not_release(format!("{what} does not parse")).caused(ReleaseCause::Manifest(e))
        })
    };
    match parse(&top.bytes, top.media_type.as_deref(), "the top manifest")? {
        Manifest::Image(m) => Ok((m, digest, None)),
        Manifest::Schema1 => Err(not_release(
            "a Docker schema1 manifest, not a release image".into(),
        )),
        Manifest::Index(index) => {
            let (child, platform) = linux_child(&index.manifests).ok_or_else(|| {
                not_release(format!(
                    "index {digest} has no linux child (a release image has one per architecture)"
                ))
            })?;
            let child_digest = child.digest().map_err(|e| {
                not_release("a bad child digest".into()).caused(ReleaseCause::Manifest(e))
            })?;
            let what = format!("child {child_digest} ({platform}) of index {digest}");
            let bytes = source
                .manifest(&child_digest, MAX_MANIFEST_BYTES)
                .await
                .map_err(|e| ReleaseError::fetch(name, format!("cannot fetch {what}"), e))?;
            verify(&bytes, &child_digest, u64::try_from(child.size).ok())
                .map_err(|p| ReleaseError::problem(name, what.clone(), p))?;
            match parse(&bytes, Some(&child.media_type), &what)? {
                Manifest::Image(m) => Ok((m, child_digest, Some((digest.to_string(), platform)))),
                _ => Err(not_release(format!("{what} is not an image manifest"))),
            }
        }
    }
}

/// The linux/amd64 entry of an index, else its first Linux one (attestations skipped), with
/// its platform as `os/arch[/variant]`.
fn linux_child(entries: &[Descriptor]) -> Option<(&Descriptor, String)> {
    let linux: Vec<&Descriptor> = entries
        .iter()
        .filter(|d| !d.is_attestation() && d.platform.as_ref().is_some_and(|p| p.os == "linux"))
        .collect();
    let chosen = linux
        .iter()
        .find(|d| {
            d.platform
                .as_ref()
                .is_some_and(|p| p.architecture == "amd64")
        })
        .or(linux.first())?;
    let p = chosen.platform.as_ref()?;
    let platform = match &p.variant {
        Some(v) => format!("{}/{}/{v}", p.os, p.architecture),
        None => format!("{}/{}", p.os, p.architecture),
    };
    Some((chosen, platform))
}

/// The `image-references` bytes and the layer that holds them, searching from the last layer.
async fn image_references<S: Source>(
    source: &S,
    name: &str,
    manifest: &ImageManifest,
) -> Result<(Digest, Vec<u8>), ReleaseError> {
    for layer in manifest.layers.iter().rev() {
        let digest = layer.digest().map_err(|e| {
            ReleaseError::new(name, ReleaseErrorKind::NotARelease, "a bad layer digest")
                .caused(ReleaseCause::Manifest(e))
        })?;
        let read = |reader, limits| {
            find_file(reader, limits, IMAGE_REFERENCES, MAX_IMAGE_REFERENCES_BYTES)
        };
        let found: FileInLayer = read_blob(source, &digest, u64::try_from(layer.size).ok(), read)
            .await
            .and_then(|r| r)
            .map_err(|p| ReleaseError::problem(name, format!("layer {digest}"), p))?;
        match found {
            FileInLayer {
                file: Some(bytes), ..
            } => return Ok((digest, bytes)),
            FileInLayer {
                hidden_below: true, ..
            } => {
                return Err(ReleaseError::new(
                    name,
                    ReleaseErrorKind::NotARelease,
                    format!(
                        "layer {digest} deletes {IMAGE_REFERENCES} (a whiteout, or a \
                         non-directory in place of a directory above it): not a release image"
                    ),
                ));
            }
            FileInLayer { .. } => {}
        }
    }
    Err(ReleaseError::new(
        name,
        ReleaseErrorKind::NotARelease,
        format!(
            "none of its {} layers holds {IMAGE_REFERENCES}: not an OpenShift release image",
            manifest.layers.len()
        ),
    ))
}

/// Parses `image-references` (an `ImageStream`, JSON or YAML) read from `origin`: the
/// stream's `metadata.name` (the release version) and its tags in file order.
pub fn parse_image_references(
    bytes: &[u8],
    origin: &str,
) -> Result<(Option<String>, Vec<ReleaseTag>), ReleaseError> {
    let bad = |what: String| ReleaseError::new(origin, ReleaseErrorKind::NotARelease, what);
    crate::yaml::check_yaml(&String::from_utf8_lossy(bytes))
        .map_err(|e| bad("refused".into()).caused(ReleaseCause::Guard(e)))?;
    let value = document(bytes).map_err(|c| bad("neither JSON nor YAML".into()).caused(c))?;
    let field = |path: &str| lookup(&value, path);
    let kind = field("kind").and_then(Value::as_str);
    let api = field("apiVersion").and_then(Value::as_str);
    if kind != Some("ImageStream") || api != Some("image.openshift.io/v1") {
        return Err(bad(format!(
            "kind {} apiVersion {}: expected an ImageStream of image.openshift.io/v1",
            shown(field("kind")),
            shown(field("apiVersion"))
        )));
    }
    let version = match field("metadata.name") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => return Err(bad(format!("metadata.name is {other}, not a string"))),
    };
    let Some(Value::Array(items)) = field("spec.tags") else {
        return Err(bad(format!(
            "spec.tags is {}, expected a list of tags",
            shown(field("spec.tags"))
        )));
    };
    if items.is_empty() {
        return Err(bad("spec.tags is empty: the release names no images".into()));
    }
    let mut seen = HashSet::new();
    let mut tags = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let tag = parse_tag(item, i).map_err(|(what, cause)| {
            let e = bad(what);
            match cause {
                Some(c) => e.caused(c),
                None => e,
            }
        })?;
        if !seen.insert(tag.name.clone()) {
            return Err(bad(format!(
                "spec.tags[{i}]: the name \"{}\" appears twice",
                tag.name
            )));
        }
        tags.push(tag);
    }
    Ok((version, tags))
}

/// What is wrong with one tag, and its cause.
type TagError = (String, Option<ReleaseCause>);

fn parse_tag(item: &Value, i: usize) -> Result<ReleaseTag, TagError> {
    let name = match lookup(item, "name") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        other => {
            return Err((
                format!("spec.tags[{i}].name is {}, expected a name", shown(other)),
                None,
            ));
        }
    };
    let at = format!("spec.tags[{i}] (\"{name}\")");
    match lookup(item, "from.kind").and_then(Value::as_str) {
        Some("DockerImage") => {}
        _ => {
            return Err((
                format!(
                    "{at}: from.kind is {}, expected DockerImage",
                    shown(lookup(item, "from.kind"))
                ),
                None,
            ));
        }
    }
    let Some(Value::String(pullspec)) = lookup(item, "from.name") else {
        return Err((
            format!(
                "{at}: from.name is {}, expected an image reference",
                shown(lookup(item, "from.name"))
            ),
            None,
        ));
    };
    if pullspec.starts_with("oci:") {
        return Err((
            format!("{at}: from.name \"{pullspec}\" is not a registry reference"),
            None,
        ));
    }
    let image = RegistryRef::parse_pull_spec(pullspec).map_err(|e| {
        (
            format!("{at}: from.name \"{pullspec}\" is not an image reference"),
            Some(ReleaseCause::Reference(e)),
        )
    })?;
    Ok(ReleaseTag {
        name,
        image: ImageRef::Registry(image),
    })
}

/// The document: JSON (what releases carry) when it starts with `{`, else YAML.
fn document(bytes: &[u8]) -> Result<Value, ReleaseCause> {
    let json = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    if json {
        serde_json::from_slice(bytes).map_err(ReleaseCause::Json)
    } else {
        serde_yaml_ng::from_slice(bytes).map_err(ReleaseCause::Yaml)
    }
}

/// The value at a dotted `path` of objects.
fn lookup<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(value, |v, key| v.get(key))
}

/// A field's value as an error shows it.
fn shown(value: Option<&Value>) -> String {
    match value {
        None => "missing".to_string(),
        Some(v) => v.to_string(),
    }
}
