//! Index, manifest and config types over raw bytes.
//!
//! These are our own serde types rather than `oci_spec::image::ImageIndex`: oci-spec 0.10's
//! descriptor `Platform` drops `os.version` and `os.features` (see `docs/decisions.md`), the
//! two fields this tool exists to check. Parsing is strict where a runtime is strict (schemaVersion,
//! digests) and tolerant where registries are (unknown fields).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::digest::{Digest, DigestError};
use crate::platform::Platform;

mod lenient;
#[cfg(test)]
mod once_tests;
mod unique;

use lenient::{Labels, Lenient, Text, Texts, lenient};
use unique::Key;

/// OCI image index.
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// OCI image manifest.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// OCI image config.
pub const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
/// Docker manifest list.
pub const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
/// Docker schema2 manifest.
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// Docker image config.
pub const DOCKER_CONFIG: &str = "application/vnd.docker.container.image.v1+json";
/// Docker schema1 manifest (obsolete).
pub const DOCKER_SCHEMA1: &str = "application/vnd.docker.distribution.manifest.v1+json";
/// Signed Docker schema1 manifest (obsolete).
pub const DOCKER_SCHEMA1_SIGNED: &str = "application/vnd.docker.distribution.manifest.v1+prettyjws";
/// Docker foreign layer.
pub const DOCKER_FOREIGN_LAYER: &str = "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip";

/// Every manifest media type a registry may answer with; sent as `Accept`.
pub const ACCEPTED_MANIFEST_TYPES: [&str; 6] = [
    OCI_INDEX,
    DOCKER_LIST,
    OCI_MANIFEST,
    DOCKER_MANIFEST,
    DOCKER_SCHEMA1_SIGNED,
    DOCKER_SCHEMA1,
];

/// Largest manifest or index accepted (distribution's own cap, see `docs/images.md`).
pub const MAX_MANIFEST_BYTES: u64 = 4 * 1024 * 1024;
/// Largest image config accepted.
pub const MAX_CONFIG_BYTES: u64 = 8 * 1024 * 1024;

/// Most entries an index, or layers a manifest, may have. Real indexes have tens of entries
/// and Windows images a handful of layers; thousands are an attack on the walk, not an image.
pub const MAX_ENTRIES: usize = 1000;

/// Annotation buildx puts on attestation entries.
pub const ANNOTATION_REFERENCE_TYPE: &str = "vnd.docker.reference.type";

/// A content descriptor (index entry, config, layer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Descriptor {
    /// Media type of the referenced content.
    #[serde(rename = "mediaType", default)]
    pub media_type: String,
    /// Digest of the referenced content, as written (validated by [`Descriptor::digest`]).
    pub digest: String,
    /// Size in bytes of the referenced content.
    pub size: i64,
    /// Platform of an index entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// External URLs (foreign layers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub urls: Vec<String>,
}

impl Descriptor {
    /// The validated digest.
    pub fn digest(&self) -> Result<Digest, ManifestError> {
        self.digest.parse().map_err(ManifestError::Digest)
    }

    /// True for buildx attestation entries and other entries marked as not runnable: an
    /// `unknown/unknown` platform or a `vnd.docker.reference.type` annotation. Reported as
    /// such; the annotation does not keep a runtime from selecting the entry (see
    /// [`Descriptor::never_selected`]).
    pub fn is_attestation(&self) -> bool {
        self.annotations.contains_key(ANNOTATION_REFERENCE_TYPE) || self.never_selected()
    }

    /// True for an `unknown/unknown` platform, which no runtime's matcher accepts: containerd
    /// compares the normalised OS with the host's, containers/image compares it exactly. An
    /// annotated entry with a real platform, or with none, can be selected.
    pub fn never_selected(&self) -> bool {
        self.platform
            .as_ref()
            .is_some_and(|p| p.os == "unknown" && p.architecture == "unknown")
    }

    /// True when a mirroring tool would leave this layer out: foreign or non-distributable
    /// media types, or any `urls`.
    pub fn is_foreign_layer(&self) -> bool {
        !self.urls.is_empty()
            || self.media_type == DOCKER_FOREIGN_LAYER
            || self
                .media_type
                .starts_with("application/vnd.oci.image.layer.nondistributable.")
    }
}

/// An image index or Docker manifest list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Index {
    /// Schema version (2).
    #[serde(rename = "schemaVersion")]
    pub schema_version: i64,
    /// Media type field of the body.
    #[serde(rename = "mediaType", default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// Entries.
    pub manifests: Vec<Descriptor>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// A single-platform image manifest (OCI or Docker schema2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageManifest {
    /// Schema version (2).
    #[serde(rename = "schemaVersion")]
    pub schema_version: i64,
    /// Media type field of the body.
    #[serde(rename = "mediaType", default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The config blob.
    pub config: Descriptor,
    /// Layers, base first.
    #[serde(default)]
    pub layers: Vec<Descriptor>,
}

/// The platform-relevant part of an image config.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ImageConfig {
    /// Operating system.
    #[serde(default)]
    pub os: String,
    /// Architecture.
    #[serde(default)]
    pub architecture: String,
    /// Variant.
    #[serde(default)]
    pub variant: Option<String>,
    /// Windows version.
    #[serde(rename = "os.version", default)]
    pub os_version: Option<String>,
    /// OS features.
    #[serde(rename = "os.features", default)]
    pub os_features: Option<Vec<String>>,
    /// The run settings (`config`: entrypoint, command, environment, labels), read leniently:
    /// a field of the wrong shape is left out, never a reason to refuse the config.
    #[serde(rename = "config", default, deserialize_with = "lenient_run_config")]
    pub run: RunConfig,
}

/// The run settings of an image config (its `config` object; OCI image spec, "Properties"),
/// as far as `--deep` needs them to find the program a container starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunConfig {
    /// `Entrypoint`.
    pub entrypoint: Vec<String>,
    /// `Cmd`.
    pub cmd: Vec<String>,
    /// `Env`, `NAME=value` each.
    pub env: Vec<String>,
    /// `WorkingDir` (empty when unset).
    pub working_dir: String,
    /// `Labels`.
    pub labels: BTreeMap<String, String>,
}

impl RunConfig {
    /// The command a container runs: `Entrypoint` then `Cmd` (what containerd's
    /// `WithImageConfig` and moby's container creation put in the process args); an
    /// `Entrypoint` of one empty string is dropped, as containerd's CRI does for a pod that
    /// sets no `command` (`pkg/cri/opts/spec.go`, `WithProcessArgs`, from moby's
    /// `daemon/commit.go`), so `Cmd` runs alone.
    pub fn argv(&self) -> Vec<String> {
        let entrypoint: &[String] = match self.entrypoint.as_slice() {
            [only] if only.is_empty() => &[],
            all => all,
        };
        entrypoint.iter().chain(&self.cmd).cloned().collect()
    }

    /// The value of the environment variable `name` (case-insensitive when `fold`, as
    /// Windows compares names); the last assignment wins.
    pub fn env_var(&self, name: &str, fold: bool) -> Option<&str> {
        self.env.iter().rev().find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            let same = if fold {
                k.eq_ignore_ascii_case(name)
            } else {
                k == name
            };
            same.then_some(v)
        })
    }
}

fn lenient_run_config<'de, D: serde::Deserializer<'de>>(d: D) -> Result<RunConfig, D::Error> {
    lenient(d)
}

/// The run settings from the `config` object; any other value gives none.
impl<'de> Lenient<'de> for RunConfig {
    fn from_map<A: serde::de::MapAccess<'de>>(mut map: A) -> Result<RunConfig, A::Error> {
        let mut run = RunConfig::default();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            match key.as_ref() {
                "Entrypoint" => run.entrypoint = map.next_value::<Texts>()?.0,
                "Cmd" => run.cmd = map.next_value::<Texts>()?.0,
                "Env" => run.env = map.next_value::<Texts>()?.0,
                "WorkingDir" => run.working_dir = map.next_value::<Text>()?.0.unwrap_or_default(),
                "Labels" => run.labels = map.next_value::<Labels>()?.0,
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(run)
    }
}

impl ImageConfig {
    /// Parses a config blob.
    ///
    /// The config is read once, a key twice in any object refused; a config that reading
    /// refuses is read again the slow way (duplicate keys first, then the fields), whose error
    /// is the one reported.
    pub fn parse(bytes: &[u8]) -> Result<ImageConfig, ManifestError> {
        let config = match unique::read::<ImageConfig>(bytes) {
            Ok(config) => config,
            Err(_) => {
                let context = "image config is not valid JSON";
                check_unique_keys(bytes).map_err(ManifestError::json(context))?;
                serde_json::from_slice(bytes).map_err(ManifestError::json(context))?
            }
        };
        if config.os.is_empty() || config.architecture.is_empty() {
            return Err(ManifestError::invalid(
                "image config has no 'os' or 'architecture'",
            ));
        }
        Ok(config)
    }

    /// The platform the image really is.
    pub fn platform(&self) -> Platform {
        Platform {
            os: self.os.clone(),
            architecture: self.architecture.clone(),
            variant: self.variant.clone().filter(|v| !v.is_empty()),
            os_version: self.os_version.clone().filter(|v| !v.is_empty()),
            os_features: self.os_features.clone().unwrap_or_default(),
        }
    }
}

/// A parsed manifest-like object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Manifest {
    /// A multi-platform list.
    Index(Index),
    /// A single image.
    Image(ImageManifest),
    /// An obsolete Docker schema1 manifest (reported, never judged).
    Schema1,
}

/// Content that cannot be understood, with the reason.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ManifestError {
    /// The content breaks a rule of the format (shape, media type, schema version, limits).
    #[error("{0}")]
    Invalid(String),
    /// The bytes are not the JSON expected.
    #[error("{context}")]
    Json {
        /// What was being read, e.g. `not valid JSON`, `invalid index`.
        context: &'static str,
        /// The parser's error.
        #[source]
        source: Arc<serde_json::Error>,
    },
    /// A descriptor's digest is not a digest.
    #[error(transparent)]
    Digest(#[from] DigestError),
}

impl ManifestError {
    fn invalid(reason: impl Into<String>) -> ManifestError {
        ManifestError::Invalid(reason.into())
    }

    fn json(context: &'static str) -> impl FnOnce(serde_json::Error) -> ManifestError {
        move |e| ManifestError::Json {
            context,
            source: Arc::new(e),
        }
    }

    /// The reason followed by its causes, joined by `: ` (how findings show it).
    pub fn with_causes(&self) -> String {
        let mut text = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(c) = cause {
            text.push_str(": ");
            text.push_str(&c.to_string());
            cause = c.source();
        }
        text
    }
}

/// What a body is, by its media type or shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Index,
    Image,
    Schema1,
}

fn kind_of(media_type: &str) -> Option<Kind> {
    match media_type {
        OCI_INDEX | DOCKER_LIST => Some(Kind::Index),
        OCI_MANIFEST | DOCKER_MANIFEST => Some(Kind::Image),
        DOCKER_SCHEMA1 | DOCKER_SCHEMA1_SIGNED => Some(Kind::Schema1),
        _ => None,
    }
}

fn unsupported(media_type: &str) -> ManifestError {
    ManifestError::Invalid(format!(
        "unsupported media type '{media_type}' (expected an OCI or Docker index or manifest)"
    ))
}

impl Manifest {
    /// Parses manifest bytes. `descriptor_type` is the media type the referrer claimed
    /// (index entry, `index.json`, or the registry's Content-Type), if known.
    ///
    /// The body is read once, a key twice in any object refused in the same walk, both
    /// shapes' fields collected and the kind decided after. A body that one reading cannot
    /// take (a fault, or a field of the wrong type) is read again the old way, in three
    /// passes, whose error is the one reported: the same wording and order of faults.
    pub fn parse(bytes: &[u8], descriptor_type: Option<&str>) -> Result<Manifest, ManifestError> {
        let claimed = descriptor_type.filter(|t| !t.is_empty());
        Body::read(bytes)
            .ok()
            .and_then(|body| body.into_manifest(claimed))
            .unwrap_or_else(|| Manifest::diagnose(bytes, claimed))
    }

    /// The body read three times, each fault found in order: duplicate keys and syntax
    /// anywhere, then the shape, the header, the typed reading (without a line and column).
    /// What [`Manifest::parse`] reports when one reading of the body is not enough.
    fn diagnose(bytes: &[u8], claimed: Option<&str>) -> Result<Manifest, ManifestError> {
        check_unique_keys(bytes).map_err(ManifestError::json("not valid JSON"))?;
        // The body is valid JSON (read above): an object exactly when it opens with `{`.
        if bytes.trim_ascii_start().first() != Some(&b'{') {
            return Err(ManifestError::invalid("not a JSON object"));
        }
        let head: Head =
            serde_json::from_slice(bytes).map_err(ManifestError::json("not valid JSON"))?;
        let shape = Shape {
            manifests: head.manifests,
            config: head.config,
        };
        match header(
            head.schema_version,
            head.media_type.as_ref(),
            shape,
            claimed,
        )? {
            Kind::Index => checked_index(typed(bytes, "invalid index")?),
            Kind::Image => checked_image(typed(bytes, "invalid image manifest")?),
            Kind::Schema1 => Ok(Manifest::Schema1),
        }
    }
}

/// An index whose descriptors are checked.
fn checked_index(index: Index) -> Result<Manifest, ManifestError> {
    check_descriptors(&index.manifests)?;
    Ok(Manifest::Index(index))
}

/// An image manifest whose descriptors are checked.
fn checked_image(image: ImageManifest) -> Result<Manifest, ManifestError> {
    check_descriptors(std::slice::from_ref(&image.config))?;
    check_descriptors(&image.layers)?;
    Ok(Manifest::Image(image))
}

/// Which fields that tell a body's kind by its shape are there, whatever their values.
#[derive(Debug, Clone, Copy)]
struct Shape {
    manifests: bool,
    config: bool,
}

/// What a body is by its header (`schemaVersion` and `mediaType` as written, `None` when
/// absent), its shape and the media type its referrer claimed; or the header's fault.
fn header(
    schema_version: Option<serde_json::Value>,
    media_type: Option<&serde_json::Value>,
    shape: Shape,
    claimed: Option<&str>,
) -> Result<Kind, ManifestError> {
    let body_type = body_media_type(media_type)?;
    match schema_version.as_ref().and_then(|v| v.as_i64()) {
        Some(1) => return Ok(Kind::Schema1),
        Some(2) => {}
        _ => {
            return Err(ManifestError::Invalid(format!(
                "schemaVersion must be 2, found {}",
                schema_version.map_or("nothing".to_string(), |v| v.to_string())
            )));
        }
    }
    kind(shape, body_type, claimed)
}

/// A manifest-like body's fields as one reading meets them: the header as written and the
/// fields of both an index and an image manifest (those the body's own `mediaType`, when
/// read first, rules out are skipped). Its kind is decided once the body is read.
#[derive(Default)]
struct Body {
    schema_version: Option<serde_json::Value>,
    media_type: Option<serde_json::Value>,
    manifests: Option<Vec<Descriptor>>,
    annotations: BTreeMap<String, String>,
    config: Option<Descriptor>,
    layers: Option<Vec<Descriptor>>,
}

impl Body {
    /// Reads `bytes` once, as UTF-8 text, refusing a key twice in any object. Fails on
    /// anything a manifest's reading would fail on, and on a field of either shape that is
    /// not of its type (the body may be of the other kind: the caller reads it again).
    fn read(bytes: &[u8]) -> Result<Body, serde_json::Error> {
        unique::read(bytes)
    }

    /// False when the body's own media type, already read, names another kind than `kind`
    /// (or is not a kind at all, a fault whatever the fields): its fields are then skipped.
    fn wants(&self, kind: Kind) -> bool {
        match &self.media_type {
            None => true,
            Some(serde_json::Value::String(t)) => kind_of(t) == Some(kind),
            Some(_) => false,
        }
    }

    /// The manifest, by the same rules and with the same faults as [`Manifest::diagnose`];
    /// `None` when the kind's fields are missing (the typed reading's error is then wanted).
    fn into_manifest(self, claimed: Option<&str>) -> Option<Result<Manifest, ManifestError>> {
        let shape = Shape {
            manifests: self.manifests.is_some(),
            config: self.config.is_some(),
        };
        let kind = match header(
            self.schema_version,
            self.media_type.as_ref(),
            shape,
            claimed,
        ) {
            Ok(kind) => kind,
            Err(e) => return Some(Err(e)),
        };
        // The header is sound: a schemaVersion of 2 (or 1) and a string media type, or none.
        let media_type = match self.media_type {
            Some(serde_json::Value::String(t)) => Some(t),
            _ => None,
        };
        Some(match kind {
            Kind::Index => checked_index(Index {
                schema_version: 2,
                media_type,
                manifests: self.manifests?,
                annotations: self.annotations,
            }),
            Kind::Image => checked_image(ImageManifest {
                schema_version: 2,
                media_type,
                config: self.config?,
                layers: self.layers.unwrap_or_default(),
            }),
            Kind::Schema1 => Ok(Manifest::Schema1),
        })
    }
}

impl<'de> Deserialize<'de> for Body {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Body, D::Error> {
        d.deserialize_map(BodyVisitor)
    }
}

/// Reads a [`Body`] from a JSON object.
struct BodyVisitor;

impl<'de> serde::de::Visitor<'de> for BodyVisitor {
    type Value = Body;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Body, A::Error> {
        let mut body = Body::default();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            match key.as_ref() {
                "schemaVersion" => body.schema_version = Some(map.next_value()?),
                "mediaType" => body.media_type = Some(map.next_value()?),
                "manifests" if body.wants(Kind::Index) => body.manifests = Some(map.next_value()?),
                "annotations" if body.wants(Kind::Index) => body.annotations = map.next_value()?,
                "config" if body.wants(Kind::Image) => body.config = Some(map.next_value()?),
                "layers" if body.wants(Kind::Image) => body.layers = Some(map.next_value()?),
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(body)
    }
}

/// What tells a body's kind, read without building the body as a JSON value: `schemaVersion`
/// and `mediaType` as written (`null` included), and whether `manifests` and `config` are
/// there at all.
#[derive(Deserialize)]
struct Head {
    #[serde(rename = "schemaVersion", default, deserialize_with = "written")]
    schema_version: Option<serde_json::Value>,
    #[serde(rename = "mediaType", default, deserialize_with = "written")]
    media_type: Option<serde_json::Value>,
    #[serde(default, deserialize_with = "there")]
    manifests: bool,
    #[serde(default, deserialize_with = "there")]
    config: bool,
}

/// A field's value as written, `null` too (an absent field is `None`).
fn written<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<serde_json::Value>, D::Error> {
    serde_json::Value::deserialize(d).map(Some)
}

/// The field is there, whatever its value.
fn there<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}

/// `T` read straight from the body. When that fails, the error is the one of the body read as
/// a JSON value first, the wording findings show (without a line and column).
fn typed<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    context: &'static str,
) -> Result<T, ManifestError> {
    serde_json::from_slice(bytes).or_else(|_| {
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(ManifestError::json("not valid JSON"))?;
        serde_json::from_value(value).map_err(ManifestError::json(context))
    })
}

/// The body's own `mediaType`, which must be a string naming an index or manifest.
fn body_media_type(media_type: Option<&serde_json::Value>) -> Result<Option<&str>, ManifestError> {
    let body_type = match media_type {
        None => return Ok(None),
        Some(serde_json::Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(ManifestError::Invalid(format!(
                "mediaType is not a string: {other}"
            )));
        }
    };
    match kind_of(body_type) {
        Some(_) => Ok(Some(body_type)),
        None => Err(unsupported(body_type)),
    }
}

/// What a schemaVersion 2 body is: by the body's media type, else the referrer's, else (OCI
/// allows omitting mediaType) by its shape. The two media types may differ only in format
/// (OCI vs Docker), never in kind.
fn kind(
    shape: Shape,
    body_type: Option<&str>,
    claimed: Option<&str>,
) -> Result<Kind, ManifestError> {
    if let (Some(body), Some(claimed)) = (body_type, claimed)
        && body != claimed
        && kind_of(body) != kind_of(claimed)
    {
        return Err(ManifestError::Invalid(format!(
            "mediaType '{body}' in the body disagrees with '{claimed}' in the descriptor"
        )));
    }
    match body_type.or(claimed) {
        Some(t) => kind_of(t).ok_or_else(|| unsupported(t)),
        None if shape.manifests => Ok(Kind::Index),
        None if shape.config => Ok(Kind::Image),
        None => Err(ManifestError::invalid("neither an index nor a manifest")),
    }
}

/// Refuses more than [`MAX_ENTRIES`] descriptors, invalid digests and negative sizes.
fn check_descriptors(ds: &[Descriptor]) -> Result<(), ManifestError> {
    if ds.len() > MAX_ENTRIES {
        return Err(ManifestError::Invalid(format!(
            "{} entries: more than the {MAX_ENTRIES} imgcheck accepts",
            ds.len()
        )));
    }
    for d in ds {
        // Checked in place: the walk parses the digests it follows, once each.
        crate::digest::check(&d.digest)?;
        if d.size < 0 {
            return Err(ManifestError::Invalid(format!(
                "descriptor {} has a negative size",
                d.digest
            )));
        }
    }
    Ok(())
}

/// Refuses JSON with a key twice in one object. Parsers disagree on which copy wins (Go's
/// encoding/json, which containerd uses, takes the last; others the first), so such a body
/// could show imgcheck one index and a node another.
pub fn check_unique_keys(bytes: &[u8]) -> Result<(), serde_json::Error> {
    unique::check(bytes)
}

#[cfg(test)]
mod tests;
