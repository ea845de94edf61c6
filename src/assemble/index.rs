//! Builds a manifest list from per-platform images, without I/O.
//!
//! Each entry's platform is copied from the child's **config** (os, architecture, variant,
//! os.version, os.features), the truth of what the image is (docs/images.md), never from a
//! descriptor someone wrote by hand. The output is deterministic: the same children (in any
//! order) and annotations always give the same bytes, hence the same digest.
//!
//! Order: Linux entries by architecture/variant, then other non-Windows systems, then Windows
//! entries by build and revision, **newest first**. Newest-first is deliberate: runtimes that
//! take the first compatible entry (containerd 1.7–2.1.5, docs/matching.md, containerd#11366;
//! Docker's graphdriver path) then pull the newest image a host can run, e.g. ltsc2025 on a
//! WS2025 host instead of ltsc2022, and ltsc2022 rather than ltsc2019 on a Windows 11 host.
//!
//! The I/O around it (reading children, copying them, pushing) is in the `push` module.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::sync::Arc;

use serde::Serialize;

use super::failure::{AssembleRefusal, refuse};
use crate::digest::Digest;
use crate::manifest::{
    DOCKER_LIST, DOCKER_MANIFEST, Descriptor, ImageConfig, OCI_INDEX, OCI_MANIFEST,
};
use crate::platform::{Platform, WindowsVersion};
use crate::policy::Isolation;

/// The kind of list to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexFormat {
    /// OCI image index (`application/vnd.oci.image.index.v1+json`); entries may be OCI or
    /// Docker schema2 manifests (the OCI spec lets an index reference other media types).
    Oci,
    /// Docker manifest list; every entry must be a Docker schema2 manifest.
    Docker,
}

impl IndexFormat {
    /// The media type of a list in this format.
    pub fn media_type(self) -> &'static str {
        match self {
            IndexFormat::Oci => OCI_INDEX,
            IndexFormat::Docker => DOCKER_LIST,
        }
    }
}

/// One image that becomes one entry of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildImage {
    /// How the user named it, for messages (`REF`, or `entry N of REF` for an index child).
    pub origin: String,
    /// Digest of its manifest.
    pub digest: Digest,
    /// Media type of its manifest.
    pub media_type: String,
    /// Size of its manifest in bytes.
    pub size: u64,
    /// Its config.
    pub config: ImageConfig,
    /// The os.version given on the command line for it, if any.
    pub os_version: Option<String>,
    /// The platform an index it was taken from wrote for it, if it came from an index.
    pub listed: Option<Platform>,
}

/// The list, ready to push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssembledIndex {
    /// The exact bytes to push (pretty JSON ending in a newline).
    pub bytes: Vec<u8>,
    /// Their sha256 digest.
    pub digest: Digest,
    /// The list's media type.
    pub format: IndexFormat,
    /// The entries, in list order.
    pub entries: Vec<Descriptor>,
}

#[derive(Serialize)]
struct IndexBody<'a> {
    #[serde(rename = "schemaVersion")]
    schema_version: u8,
    #[serde(rename = "mediaType")]
    media_type: &'static str,
    manifests: &'a [Descriptor],
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: &'a BTreeMap<String, String>,
}

/// The platform to write for a child: its config's, with the command-line os.version filling
/// a missing one. Refuses a Windows child that would end up without a usable os.version, and a
/// child whose index entry disagrees with its config.
pub fn entry_platform(
    child: &ChildImage,
    isolation: Isolation,
) -> Result<Platform, AssembleRefusal> {
    let origin = &child.origin;
    let mut platform = child.config.platform();
    if let Some(given) = &child.os_version {
        if !platform.is_windows() {
            return refuse(format!(
                "child {origin} is {}: os.version only applies to Windows images",
                platform.os_arch()
            ));
        }
        match &platform.os_version {
            Some(own) if own != given => {
                return refuse(format!(
                    "child {origin}: its config says os.version {own}; the given {given} would \
                     make the list disagree with the image (drop '=os.version=')"
                ));
            }
            _ => platform.os_version = Some(given.clone()),
        }
    }
    if platform.is_windows() {
        match &platform.os_version {
            // A HostProcess image runs on every Windows build: no os.version is its right
            // shape (docs/matching.md, HostProcess pods).
            None if isolation == Isolation::Hostprocess => {}
            None => {
                return refuse(format!(
                    "child {origin} is a Windows image whose config has no os.version: its entry \
                     would match every Windows host; rebuild it from a versioned base image, or \
                     give the build as {origin}=os.version=10.0.BUILD.REVISION; a HostProcess \
                     image (no os.version by design) is assembled with --policy \
                     openshift-hostprocess"
                ));
            }
            Some(v) if WindowsVersion::parse(v).is_none() => {
                return refuse(format!(
                    "child {origin}: its config's os.version '{v}' is not \
                     MAJOR.MINOR.BUILD[.REVISION]; a Windows node would never select it"
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(listed) = &child.listed
        && let Some(why) = conflict(listed, &platform)
    {
        return refuse(format!(
            "child {origin}: the index it comes from says {why}; fix or rebuild that index, or \
             name the right images by digest"
        ));
    }
    Ok(platform)
}

/// How an index entry's platform conflicts with its image's, if it does. A missing os.version
/// in the entry is not a conflict: assemble exists to fill it.
fn conflict(listed: &Platform, config: &Platform) -> Option<String> {
    if listed.normalized() != config.normalized() {
        return Some(format!(
            "{} but the image config says {}",
            listed.os_arch(),
            config.os_arch()
        ));
    }
    if let Some(lv) = &listed.os_version {
        let build = |v: Option<WindowsVersion>| v.map(|v| (v.major, v.minor, v.build));
        if build(listed.windows_version()) != build(config.windows_version()) {
            return Some(format!(
                "os.version {lv} but the image config says {}",
                config.os_version.as_deref().unwrap_or("none")
            ));
        }
    }
    let set = |v: &[String]| v.iter().cloned().collect::<BTreeSet<_>>();
    if !listed.os_features.is_empty() && set(&listed.os_features) != set(&config.os_features) {
        return Some(format!(
            "os.features [{}] but the image config says [{}]",
            listed.os_features.join(","),
            config.os_features.join(",")
        ));
    }
    None
}

type PlatformKey = (String, String, String, Option<(u8, u8, u16)>, Vec<String>);

/// What two entries must not share: normalised os/arch/variant, the Windows
/// `major.minor.build`, and the os.features a node checks (`win32k` is ignored by containerd).
fn platform_key(p: &Platform) -> PlatformKey {
    let (os, arch, variant) = p.normalized();
    let build = p.windows_version().map(|v| (v.major, v.minor, v.build));
    let mut features: Vec<String> = p
        .os_features
        .iter()
        .filter(|f| f.as_str() != "win32k")
        .cloned()
        .collect();
    features.sort();
    features.dedup();
    (os, arch, variant, build, features)
}

type OrderKey = (
    u8,
    String,
    Reverse<(u8, u8, u16, u32)>,
    String,
    String,
    Vec<String>,
    String,
);

/// The list order: Linux, other systems by name, Windows; Linux and others by
/// architecture/variant; Windows newest build and revision first. Features and digest break
/// the remaining ties so the order never depends on the input order.
fn order_key(p: &Platform, digest: &Digest) -> OrderKey {
    let (os, arch, variant) = p.normalized();
    let rank = match os.as_str() {
        "linux" => 0,
        "windows" => 2,
        _ => 1,
    };
    let version = p
        .windows_version()
        .map_or((0, 0, 0, 0), |v| (v.major, v.minor, v.build, v.revision));
    let mut features = p.os_features.clone();
    features.sort();
    (
        rank,
        os,
        Reverse(version),
        arch,
        variant,
        features,
        digest.to_string(),
    )
}

/// Builds the list. `format` `None` picks Docker when every child is a Docker schema2 manifest
/// and OCI otherwise.
pub fn build_index(
    children: &[ChildImage],
    format: Option<IndexFormat>,
    annotations: &BTreeMap<String, String>,
    isolation: Isolation,
) -> Result<AssembledIndex, AssembleRefusal> {
    if children.is_empty() {
        return refuse("no child images: give at least one CHILD_REF");
    }
    let mut entries = Vec::with_capacity(children.len());
    for child in children {
        if child.media_type != OCI_MANIFEST && child.media_type != DOCKER_MANIFEST {
            return refuse(format!(
                "child {}: media type '{}' is not an OCI or Docker schema2 image manifest",
                child.origin, child.media_type
            ));
        }
        entries.push((child, entry_platform(child, isolation)?));
    }
    let all_docker = children.iter().all(|c| c.media_type == DOCKER_MANIFEST);
    let format = format.unwrap_or(if all_docker {
        IndexFormat::Docker
    } else {
        IndexFormat::Oci
    });
    if format == IndexFormat::Docker {
        if let Some(c) = children.iter().find(|c| c.media_type != DOCKER_MANIFEST) {
            return refuse(format!(
                "child {} is an OCI image manifest: a Docker manifest list may only reference \
                 Docker schema2 manifests; use --format oci",
                c.origin
            ));
        }
        if !annotations.is_empty() {
            return refuse(
                "a Docker manifest list has no annotations; use --format oci with --annotation",
            );
        }
    }
    let mut seen: BTreeMap<_, &ChildImage> = BTreeMap::new();
    for (child, platform) in &entries {
        if let Some(first) = seen.insert(platform_key(platform), child) {
            return refuse(format!(
                "children {} and {} are both {platform}: a node would only ever pull one of \
                 them; keep one",
                first.origin, child.origin
            ));
        }
    }
    entries.sort_by_cached_key(|(child, platform)| order_key(platform, &child.digest));
    let mut descriptors = Vec::with_capacity(entries.len());
    for (child, platform) in entries {
        descriptors.push(Descriptor {
            media_type: child.media_type.clone(),
            digest: child.digest.to_string(),
            size: i64::try_from(child.size).map_err(|_| {
                AssembleRefusal::Input(format!("child {}: size out of range", child.origin))
            })?,
            platform: Some(platform),
            annotations: BTreeMap::new(),
            urls: vec![],
        });
    }
    let body = IndexBody {
        schema_version: 2,
        media_type: format.media_type(),
        manifests: &descriptors,
        annotations,
    };
    let mut bytes =
        serde_json::to_vec_pretty(&body).map_err(|e| AssembleRefusal::Serialise(Arc::new(e)))?;
    bytes.push(b'\n');
    Ok(AssembledIndex {
        digest: Digest::sha256(&bytes),
        bytes,
        format,
        entries: descriptors,
    })
}

#[cfg(test)]
mod tests;
