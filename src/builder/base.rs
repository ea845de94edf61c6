//! The Windows side of a build before it starts: whether this Buildah may build Windows
//! targets at all, and whether each Windows base is a Windows image of the planned build
//! (docs/buildah.md).

use std::sync::Arc;

use crate::builder::buildah::{Version, WINDOWS_LAYERS_SINCE};
use crate::digest::Digest;
use crate::engine::resolve;
use crate::graph::{Content, Graph, Node, Problem, WalkOptions};
use crate::platform::{Platform, RuntimeProfile, WindowsVersion};
use crate::reference::{ImageRef, ReferenceError, RegistryRef};
use crate::session::Session;
use crate::source::FetchError;

/// The note a run shows when this Buildah does not write Windows layers itself: imgcheck
/// writes them (`builder::rewrite`). `None` when there is nothing to say.
pub fn windows_layers_note(version: Version, has_windows: bool) -> Option<String> {
    (has_windows && !version.writes_windows_layers()).then(|| {
        format!(
            "buildah {version} writes the layers it adds to a Windows image in the Linux layout \
             (Buildah writes the Windows layout from {WINDOWS_LAYERS_SINCE} on); imgcheck \
             writes the layers each Windows stage adds (Files/, Hives/, PAX records), by \
             composing the stage or by rewriting Buildah's layers, and verifies the lists \
             with --deep"
        )
    })
}

/// What a Windows base image turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseInfo {
    /// Its config's os.version, if any.
    pub os_version: Option<String>,
    /// Its layers, in order: a Windows image built on it starts with them.
    pub layers: Vec<Digest>,
    /// The image a node of the planned build pulls, pinned by digest (`None` for a base in an
    /// OCI layout): a composed Windows stage reads its manifest and config there.
    pub image: Option<RegistryRef>,
}

/// Why a Windows base cannot be used for a build.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BaseError {
    /// The base is not a reference.
    #[error("Windows base {0}")]
    Reference(String, #[source] Arc<ReferenceError>),
    /// The registry could not be reached.
    #[error("cannot read Windows base {0}")]
    Unreachable(String, #[source] Arc<FetchError>),
    /// The base cannot be read as given (not found, bad input, …).
    #[error("Windows base {0}")]
    Fetch(String, #[source] Arc<FetchError>),
    /// The base is a list without an entry for the planned node.
    #[error("Windows base {base} has no entry for windows/{arch} build {build}")]
    NoEntry {
        /// The base.
        base: String,
        /// The planned architecture.
        arch: String,
        /// The planned build (`any` for a HostProcess base).
        build: String,
    },
    /// The entry a node would pull could not be read.
    #[error("Windows base {0}: entry {1} could not be read")]
    EntryUnreadable(String, String),
    /// The base's image manifest could not be fetched.
    #[error("cannot read Windows base {0}: {1}")]
    ImageUnreachable(String, String),
    /// The base is not an image (schema 1, a problem, …), as debug text.
    #[error("Windows base {0} is not a readable image ({1})")]
    NotAnImage(String, String),
    /// The base's config could not be fetched.
    #[error("cannot read the config of Windows base {0}: {1}")]
    ConfigUnreachable(String, String),
    /// The base's config is unusable, as debug text.
    #[error("Windows base {0}: config unusable: {1}")]
    ConfigUnusable(String, String),
    /// The base is not a Windows image.
    #[error("Windows base {0} is a {1} image, not a Windows one")]
    NotWindows(String, String),
    /// The base is another Windows build than planned.
    #[error(
        "Windows base {base} is build {found} (os.version {os_version}), but the plan builds it \
         as {planned}"
    )]
    WrongBuild {
        /// The base.
        base: String,
        /// Its build.
        found: u16,
        /// Its os.version.
        os_version: String,
        /// The planned build.
        planned: u16,
    },
    /// The base's os.version does not parse.
    #[error("Windows base {0}: os.version '{1}' is unreadable")]
    OsVersionUnreadable(String, String),
}

impl BaseError {
    /// Whether the base could not be read (network, registry) rather than being wrong.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            BaseError::Unreachable(..)
                | BaseError::ImageUnreachable(..)
                | BaseError::ConfigUnreachable(..)
        )
    }
}

/// Reads a Windows base's config (through a list when it is one, selecting as a node of that
/// build would) and checks it is a Windows image of the planned build. `build` is `None` for
/// the base of a HostProcess image, which runs on every build.
pub async fn inspect_base(
    session: &Session,
    base: &str,
    arch: &str,
    build: Option<u16>,
) -> Result<BaseInfo, BaseError> {
    let reference: ImageRef = base
        .parse()
        .map_err(|e| BaseError::Reference(base.to_string(), Arc::new(e)))?;
    let graph = match session.graph(&reference, WalkOptions::default()).await {
        Ok(g) => g,
        Err(e @ FetchError::Unavailable(_)) => {
            return Err(BaseError::Unreachable(base.to_string(), Arc::new(e)));
        }
        Err(e) => return Err(BaseError::Fetch(base.to_string(), Arc::new(e))),
    };
    let node = node_for(&graph, base, arch, build)?;
    let (platform, layers) = config_platform(node, base)?;
    if !platform.is_windows() {
        return Err(BaseError::NotWindows(base.to_string(), platform.os_arch()));
    }
    if let (Some(v), Some(build)) = (&platform.os_version, build) {
        match WindowsVersion::parse(v) {
            Some(w) if w.build == build => {}
            Some(w) => {
                return Err(BaseError::WrongBuild {
                    base: base.to_string(),
                    found: w.build,
                    os_version: v.clone(),
                    planned: build,
                });
            }
            None => return Err(BaseError::OsVersionUnreadable(base.to_string(), v.clone())),
        }
    }
    let image = match &reference {
        ImageRef::Registry(r) => Some(r.with_digest(&node.digest)),
        ImageRef::Layout(_) => None,
    };
    Ok(BaseInfo {
        os_version: platform.os_version,
        layers,
        image,
    })
}

/// The image a Windows node of `build` pulls from the base: the base itself, or the entry of
/// its list that such a node selects.
fn node_for<'g>(
    graph: &'g Graph,
    base: &str,
    arch: &str,
    build: Option<u16>,
) -> Result<&'g Node, BaseError> {
    let Content::Index { index, children } = &graph.root.content else {
        return Ok(&graph.root);
    };
    let mut host = Platform::new("windows", arch);
    if let Some(b) = build {
        host = host.with_os_version(&WindowsVersion::host(b).to_string());
    }
    let digest = resolve(graph, &host, RuntimeProfile::DEFAULT)
        .digest
        .ok_or_else(|| BaseError::NoEntry {
            base: base.to_string(),
            arch: arch.to_string(),
            build: build.map_or_else(|| "any".to_string(), |b| b.to_string()),
        })?;
    index
        .manifests
        .iter()
        .zip(children)
        .find(|(d, _)| d.digest == digest)
        .and_then(|(_, c)| c.as_ref())
        .ok_or_else(|| BaseError::EntryUnreadable(base.to_string(), digest.to_string()))
}

/// The platform of an image node's config, and the image's layers.
fn config_platform(node: &Node, base: &str) -> Result<(Platform, Vec<Digest>), BaseError> {
    let image = match &node.content {
        Content::Image(i) => i,
        Content::Problem(Problem::Unavailable(m)) => {
            return Err(BaseError::ImageUnreachable(base.to_string(), m.clone()));
        }
        other => {
            return Err(BaseError::NotAnImage(
                base.to_string(),
                format!("{other:?}"),
            ));
        }
    };
    let layers = image
        .manifest
        .layers
        .iter()
        .filter_map(|d| d.digest().ok())
        .collect();
    match &image.config {
        Ok(c) => Ok((c.platform(), layers)),
        Err(Problem::Unavailable(m)) => {
            Err(BaseError::ConfigUnreachable(base.to_string(), m.clone()))
        }
        Err(p) => Err(BaseError::ConfigUnusable(
            base.to_string(),
            format!("{p:?}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn buildah_before_1_44_gets_a_note_not_a_refusal() {
        // (version, Windows targets) → a note?
        let cases = [
            ("1.28.2", true, true),
            ("1.43.9", true, true),
            ("1.28.2", false, false),
            ("1.44.0", true, false),
            ("1.45.1", true, false),
        ];
        for (version, windows, want) in cases {
            let note = windows_layers_note(v(version), windows);
            assert_eq!(note.is_some(), want, "{version} windows={windows}");
            if let Some(n) = note {
                assert!(
                    n.contains(&format!("buildah {version} writes"))
                        && n.contains("imgcheck writes the layers each Windows stage adds")
                        && n.contains("--deep"),
                    "{n}"
                );
            }
        }
    }
}
