//! An OCI image layout directory (`oci-layout`, `index.json`, `blobs/<alg>/<hex>`), the
//! format `skopeo copy --all … oci:DIR:TAG` writes.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::{FetchError, Fetched, Source};
use crate::digest::Digest;
use crate::manifest::{Descriptor, MAX_MANIFEST_BYTES};
use crate::reference::LayoutRef;

/// The annotation naming a tagged image in `index.json`.
const REF_NAME: &str = "org.opencontainers.image.ref.name";

/// Reads images from a layout directory. Blob paths are built only from validated digests
/// and must resolve inside the layout (symlinks out of it are refused).
#[derive(Debug, Clone)]
pub struct LayoutSource {
    reference: LayoutRef,
    root: PathBuf,
}

#[derive(serde::Deserialize)]
struct LayoutIndex {
    #[serde(default)]
    manifests: Vec<Descriptor>,
}

impl LayoutSource {
    /// Opens the layout, checking it is one.
    pub fn open(reference: &LayoutRef) -> Result<LayoutSource, FetchError> {
        let dir = &reference.dir;
        let bad = |why: String| FetchError::BadInput(format!("{}: {why}", reference));
        if !dir.is_dir() {
            return Err(bad(format!(
                "'{}' is not a directory (expected an OCI image layout)",
                dir.display()
            )));
        }
        if !dir.join("oci-layout").is_file() {
            return Err(bad(format!(
                "'{}' has no oci-layout file: not an OCI image layout",
                dir.display()
            )));
        }
        let root = dir
            .canonicalize()
            .map_err(|e| bad(format!("cannot resolve '{}': {e}", dir.display())))?;
        Ok(LayoutSource {
            reference: reference.clone(),
            root,
        })
    }

    fn read_limited(&self, path: &Path, what: &str, limit: u64) -> Result<Vec<u8>, FetchError> {
        let meta = match std::fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(FetchError::NotFound(format!("{what} is not in the layout")));
            }
            Err(e) => return Err(FetchError::BadInput(format!("{what}: {e}"))),
        };
        if meta.file_type().is_symlink() {
            let target = path.canonicalize().map_err(|e| {
                FetchError::BadInput(format!("{what}: dangling symlink in the layout ({e})"))
            })?;
            if !target.starts_with(&self.root) {
                return Err(FetchError::BadInput(format!(
                    "{what}: symlink points outside the layout ({})",
                    target.display()
                )));
            }
        }
        let file = std::fs::File::open(path)
            .map_err(|e| FetchError::BadInput(format!("{what}: cannot open: {e}")))?;
        let mut bytes = Vec::new();
        file.take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| FetchError::BadInput(format!("{what}: cannot read: {e}")))?;
        if bytes.len() as u64 > limit {
            return Err(FetchError::TooLarge {
                what: what.to_string(),
                limit,
            });
        }
        Ok(bytes)
    }

    fn blob_path(&self, digest: &Digest) -> PathBuf {
        // The hex part is validated lowercase hex, so it cannot contain a path separator.
        self.root
            .join("blobs")
            .join(digest.algorithm().name())
            .join(digest.hex())
    }

    fn read_blob(&self, digest: &Digest, limit: u64) -> Result<Vec<u8>, FetchError> {
        self.read_limited(&self.blob_path(digest), &format!("blob {digest}"), limit)
    }

    fn pick(&self) -> Result<Descriptor, FetchError> {
        let bytes = self.read_limited(
            &self.root.join("index.json"),
            "index.json",
            MAX_MANIFEST_BYTES,
        )?;
        let bad = |why: String| FetchError::BadInput(format!("{}: {why}", self.reference));
        let index: LayoutIndex = serde_json::from_slice(&bytes)
            .map_err(|e| bad(format!("index.json is not a valid OCI index: {e}")))?;
        let tags = || {
            let names: Vec<&str> = index
                .manifests
                .iter()
                .filter_map(|d| d.annotations.get(REF_NAME).map(String::as_str))
                .collect();
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        };
        if let Some(digest) = &self.reference.digest {
            let wanted = digest.to_string();
            return Ok(index
                .manifests
                .iter()
                .find(|d| d.digest == wanted)
                .cloned()
                .unwrap_or_else(|| Descriptor {
                    media_type: String::new(),
                    digest: wanted,
                    size: -1,
                    platform: None,
                    annotations: Default::default(),
                    urls: vec![],
                }));
        }
        match &self.reference.tag {
            Some(tag) => index
                .manifests
                .iter()
                .find(|d| d.annotations.get(REF_NAME) == Some(tag))
                .cloned()
                .ok_or_else(|| bad(format!("no image tagged '{tag}' (tags: {})", tags()))),
            None => match index.manifests.as_slice() {
                [only] => Ok(only.clone()),
                [] => Err(bad("index.json lists no images".to_string())),
                _ => Err(bad(format!(
                    "the layout holds {} images; name one with oci:DIR:TAG (tags: {})",
                    index.manifests.len(),
                    tags()
                ))),
            },
        }
    }
}

impl Source for LayoutSource {
    fn name(&self) -> String {
        self.reference.to_string()
    }

    fn pinned(&self) -> Option<Digest> {
        self.reference.digest.clone()
    }

    async fn top(&self) -> Result<Fetched, FetchError> {
        let descriptor = self.pick()?;
        let digest = descriptor
            .digest()
            .map_err(|e| FetchError::BadInput(format!("{}: index.json: {e}", self.reference)))?;
        let bytes = self.read_blob(&digest, MAX_MANIFEST_BYTES)?;
        Ok(Fetched {
            bytes,
            media_type: Some(descriptor.media_type).filter(|m| !m.is_empty()),
            claimed_digest: Some(digest),
            claimed_size: u64::try_from(descriptor.size).ok(),
        })
    }

    async fn manifest(&self, digest: &Digest, limit: u64) -> Result<Vec<u8>, FetchError> {
        self.read_blob(digest, limit)
    }

    async fn blob(&self, digest: &Digest, limit: u64) -> Result<Vec<u8>, FetchError> {
        self.read_blob(digest, limit)
    }
}
