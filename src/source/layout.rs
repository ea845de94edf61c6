//! An OCI image layout directory (`oci-layout`, `index.json`, `blobs/<alg>/<hex>`), the
//! format `skopeo copy --all … oci:DIR:TAG` writes.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::{BlobFile, BlobStream, FetchError, Fetched, Source};
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
        let bad = |why: String| FetchError::bad_input(format!("{}: {why}", reference));
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
        let root = dir.canonicalize().map_err(|e| {
            let what = format!("{reference}: cannot resolve '{}'", dir.display());
            FetchError::bad_input_by(what, e)
        })?;
        Ok(LayoutSource {
            reference: reference.clone(),
            root,
        })
    }

    /// `path`, if it is a regular file inside the layout (after resolving every symlink).
    fn checked(&self, path: &Path, what: &str) -> Result<PathBuf, FetchError> {
        let meta = match std::fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(FetchError::NotFound(format!("{what} is not in the layout")));
            }
            Err(e) => return Err(FetchError::bad_input_by(what, e)),
        };
        // Any component may be a symlink (blobs/, blobs/sha256/, the file): resolve the whole
        // path and require it to stay inside the layout.
        let target = path.canonicalize().map_err(|e| {
            FetchError::bad_input_by(format!("{what}: cannot resolve its path in the layout"), e)
        })?;
        if !target.starts_with(&self.root) {
            return Err(FetchError::bad_input(format!(
                "{what}: resolves outside the layout ({})",
                target.display()
            )));
        }
        if !meta.is_file() && !target.is_file() {
            return Err(FetchError::bad_input(format!("{what}: not a regular file")));
        }
        Ok(target)
    }

    fn read_limited(&self, path: &Path, what: &str, limit: u64) -> Result<Vec<u8>, FetchError> {
        self.checked(path, what)?;
        let file = std::fs::File::open(path)
            .map_err(|e| FetchError::bad_input_by(format!("{what}: cannot open"), e))?;
        let mut bytes = Vec::new();
        file.take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| FetchError::bad_input_by(format!("{what}: cannot read"), e))?;
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

    /// The blob `digest` as the layout's own file, once it has hashed to `digest` (read in
    /// pieces on the blocking pool, so any size takes bounded memory).
    pub async fn blob_file(&self, digest: &Digest, limit: u64) -> Result<BlobFile, FetchError> {
        let what = format!("blob {digest}");
        let path = self.checked(&self.blob_path(digest), &what)?;
        let (algorithm, at) = (digest.algorithm(), path.clone());
        let hashed = tokio::task::spawn_blocking(move || hash_file(&at, algorithm, limit))
            .await
            .map_err(|e| FetchError::unavailable_by(what.clone(), e))?;
        let (actual, size) = match hashed {
            Ok(Some(found)) => found,
            Ok(None) => return Err(FetchError::TooLarge { what, limit }),
            Err(e) => return Err(FetchError::bad_input_by(format!("{what}: cannot read"), e)),
        };
        if actual != *digest {
            return Err(FetchError::DigestMismatch {
                expected: digest.to_string(),
                actual: actual.to_string(),
            });
        }
        Ok(BlobFile::new(path, size, None))
    }

    fn pick(&self) -> Result<Descriptor, FetchError> {
        let bytes = self.read_limited(
            &self.root.join("index.json"),
            "index.json",
            MAX_MANIFEST_BYTES,
        )?;
        let bad = |why: String| FetchError::bad_input(format!("{}: {why}", self.reference));
        let index: LayoutIndex = serde_json::from_slice(&bytes).map_err(|e| {
            let what = format!("{}: index.json is not a valid OCI index", self.reference);
            FetchError::bad_input_by(what, e)
        })?;
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
            .map_err(|e| FetchError::bad_input_by(format!("{}: index.json", self.reference), e))?;
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

    async fn blob_stream(&self, digest: &Digest, limit: u64) -> Result<BlobStream, FetchError> {
        let what = format!("blob {digest}");
        let path = self.checked(&self.blob_path(digest), &what)?;
        let file = tokio::fs::File::open(&path)
            .await
            .map_err(|e| FetchError::bad_input_by(format!("{what}: cannot open"), e))?;
        Ok(BlobStream {
            chunks: Box::pin(file_chunks(file, what, limit)),
            deadline: None,
        })
    }
}

/// Bytes read from a stream chunk by chunk.
const STREAM_CHUNK: usize = 256 * 1024;

/// The file's bytes in chunks of at most [`STREAM_CHUNK`]; an error once it passes `limit`.
fn file_chunks(
    file: tokio::fs::File,
    what: String,
    limit: u64,
) -> impl futures::Stream<Item = Result<Vec<u8>, FetchError>> + Send + 'static {
    use tokio::io::AsyncReadExt;
    let state = Some((file, 0u64));
    futures::stream::unfold(state, move |state| {
        let what = what.clone();
        async move {
            let (mut file, read) = state?;
            let mut chunk = vec![0u8; STREAM_CHUNK];
            match file.read(&mut chunk).await {
                Ok(0) => None,
                Ok(n) if read + n as u64 > limit => {
                    Some((Err(FetchError::TooLarge { what, limit }), None))
                }
                Ok(n) => {
                    chunk.truncate(n);
                    Some((Ok(chunk), Some((file, read + n as u64))))
                }
                Err(e) => Some((
                    Err(FetchError::bad_input_by(format!("{what}: cannot read"), e)),
                    None,
                )),
            }
        }
    })
}

/// The digest and size of the file at `path`; `None` when it is longer than `limit`.
fn hash_file(
    path: &Path,
    algorithm: crate::digest::Algorithm,
    limit: u64,
) -> std::io::Result<Option<(Digest, u64)>> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = crate::digest::Hasher::new(algorithm);
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(Some((hasher.finish(), size)));
        }
        size += n as u64;
        if size > limit {
            return Ok(None);
        }
        hasher.update(&buf[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn layout_with(blob: &[u8]) -> (tempfile::TempDir, LayoutRef, Digest) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("layout");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
        let digest = Digest::sha256(blob);
        let index = format!(
            r#"{{"schemaVersion":2,"manifests":[{{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"{digest}","size":{}}}]}}"#,
            blob.len()
        );
        std::fs::write(root.join("index.json"), index).unwrap();
        let reference = LayoutRef {
            dir: root,
            tag: None,
            digest: None,
        };
        (dir, reference, digest)
    }

    fn read(reference: &LayoutRef, digest: &Digest) -> Result<Vec<u8>, FetchError> {
        LayoutSource::open(reference)?.read_blob(digest, 1024)
    }

    #[test]
    fn paths_must_stay_inside_the_layout() {
        let blob = b"{}";
        // Intact: a plain file.
        let (_d, r, digest) = layout_with(blob);
        let blobs = r.dir.join("blobs/sha256");
        std::fs::create_dir_all(&blobs).unwrap();
        std::fs::write(blobs.join(digest.hex()), blob).unwrap();
        assert_eq!(read(&r, &digest).unwrap(), blob);
        // A symlink inside the layout is fine.
        std::fs::rename(blobs.join(digest.hex()), r.dir.join("elsewhere")).unwrap();
        symlink(r.dir.join("elsewhere"), blobs.join(digest.hex())).unwrap();
        assert_eq!(read(&r, &digest).unwrap(), blob);

        // The blob file a symlink out of the layout.
        let (d, r, digest) = layout_with(blob);
        let outside = d.path().join("secret");
        std::fs::write(&outside, blob).unwrap();
        let blobs = r.dir.join("blobs/sha256");
        std::fs::create_dir_all(&blobs).unwrap();
        symlink(&outside, blobs.join(digest.hex())).unwrap();
        let err = read(&r, &digest).unwrap_err();
        assert!(
            matches!(&err, FetchError::BadInput(m) if m.message().contains("outside the layout")),
            "{err}"
        );

        // A directory on the way (blobs/) a symlink out of the layout.
        let (d, r, digest) = layout_with(blob);
        let outside = d.path().join("other-blobs");
        std::fs::create_dir_all(outside.join("sha256")).unwrap();
        std::fs::write(outside.join("sha256").join(digest.hex()), blob).unwrap();
        symlink(&outside, r.dir.join("blobs")).unwrap();
        let err = read(&r, &digest).unwrap_err();
        assert!(
            matches!(&err, FetchError::BadInput(m) if m.message().contains("outside the layout")),
            "{err}"
        );

        // Not a regular file (a directory where the blob should be).
        let (_d, r, digest) = layout_with(blob);
        std::fs::create_dir_all(r.dir.join("blobs/sha256").join(digest.hex())).unwrap();
        assert!(matches!(read(&r, &digest), Err(FetchError::BadInput(_))));

        // Missing is missing, not bad input.
        let (_d, r, digest) = layout_with(blob);
        assert!(matches!(read(&r, &digest), Err(FetchError::NotFound(_))));
    }
}
