//! An OCI image layout directory (`oci-layout`, `index.json`, `blobs/<alg>/<hex>`), the
//! format `skopeo copy --all … oci:DIR:TAG` writes: read by [`LayoutSource`], written by
//! [`LayoutWriter`] (the images `imgcheck build` writes before it pushes them).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{BlobFile, BlobStream, FetchError, Fetched, Source};
use crate::digest::Digest;
use crate::manifest::{Descriptor, MAX_MANIFEST_BYTES};
use crate::reference::LayoutRef;

/// The annotation naming a tagged image in `index.json`.
const REF_NAME: &str = "org.opencontainers.image.ref.name";

/// Reads images from a layout directory. Blob paths are built only from validated digests
/// and must resolve inside the layout (symlinks out of it are refused). With a deadline
/// ([`LayoutSource::with_deadline`], the run's `--timeout`), every read ends by then: a blob
/// streamed or hashed stops there, and the layer check decoding it too.
#[derive(Debug, Clone)]
pub struct LayoutSource {
    reference: LayoutRef,
    root: PathBuf,
    deadline: Option<Instant>,
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
            deadline: None,
        })
    }

    /// The same layout read within `deadline` (the run's `--timeout`), if there is one.
    pub fn with_deadline(self, deadline: Option<Instant>) -> LayoutSource {
        LayoutSource { deadline, ..self }
    }

    /// An error once the deadline has passed.
    fn in_time(&self, what: &str) -> Result<(), FetchError> {
        if past(self.deadline) {
            return Err(late(what));
        }
        Ok(())
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
        self.in_time(what)?;
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
        let (algorithm, at, deadline) = (digest.algorithm(), path.clone(), self.deadline);
        let hashed =
            tokio::task::spawn_blocking(move || hash_file(&at, algorithm, limit, deadline))
                .await
                .map_err(|e| FetchError::unavailable_by(what.clone(), e))?;
        let (actual, size) = match hashed {
            Ok(Hashed::Done(digest, size)) => (digest, size),
            Ok(Hashed::TooLarge) => return Err(FetchError::TooLarge { what, limit }),
            Ok(Hashed::Late) => return Err(late(&what)),
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
        self.in_time(&what)?;
        let path = self.checked(&self.blob_path(digest), &what)?;
        let file = tokio::fs::File::open(&path)
            .await
            .map_err(|e| FetchError::bad_input_by(format!("{what}: cannot open"), e))?;
        Ok(BlobStream {
            chunks: Box::pin(file_chunks(file, what, limit, self.deadline)),
            deadline: self.deadline,
        })
    }
}

/// The version `oci-layout` names.
const LAYOUT_FILE: &str = r#"{"imageLayoutVersion":"1.0.0"}"#;

/// Why a layout could not be written: the file or directory, and the I/O error.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}", .path.display())]
pub struct LayoutWriteError {
    /// The file or directory.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: std::io::Error,
}

/// Writes one image into a layout directory: its blobs by digest (`blobs/sha256/<hex>`), then
/// [`LayoutWriter::put_index`] writes `oci-layout` and an `index.json` naming its manifest.
/// What it writes can be read back with [`LayoutSource`].
#[derive(Debug, Clone)]
pub struct LayoutWriter {
    dir: PathBuf,
}

impl LayoutWriter {
    /// Starts a layout in `dir`: creates `dir/blobs/sha256/` (and `dir`, if need be).
    pub fn create(dir: &Path) -> Result<LayoutWriter, LayoutWriteError> {
        let writer = LayoutWriter {
            dir: dir.to_path_buf(),
        };
        let blobs = writer.blobs();
        std::fs::create_dir_all(&blobs).map_err(|source| LayoutWriteError {
            path: blobs,
            source,
        })?;
        Ok(writer)
    }

    /// `blobs/sha256/` of the layout.
    fn blobs(&self) -> PathBuf {
        self.dir.join("blobs/sha256")
    }

    /// Writes `bytes` as a blob; returns its digest (sha256).
    pub fn put_blob(&self, bytes: &[u8]) -> Result<Digest, LayoutWriteError> {
        let digest = Digest::sha256(bytes);
        let path = self.blobs().join(digest.hex());
        std::fs::write(&path, bytes).map_err(|source| LayoutWriteError { path, source })?;
        Ok(digest)
    }

    /// A file named `name` beside the blobs, to write a blob to whose digest is known only
    /// once it is written (a layer, streamed); [`LayoutWriter::put_spooled`] then files it.
    pub fn spool(&self, name: &str) -> PathBuf {
        self.blobs().join(name)
    }

    /// Files the blob written to `spool` (from [`LayoutWriter::spool`]) under `digest`, the
    /// sha256 of its bytes as the writer of the spool computed it. Only an I/O error is
    /// returned: the caller knows the blob it was writing.
    pub fn put_spooled(&self, spool: &Path, digest: &Digest) -> std::io::Result<()> {
        std::fs::rename(spool, self.blobs().join(digest.hex()))
    }

    /// Writes `oci-layout` and an `index.json` naming the manifest `manifest` (`size` bytes,
    /// of `media_type`), whose blob is written already.
    pub fn put_index(
        &self,
        manifest: &Digest,
        size: usize,
        media_type: &str,
    ) -> Result<(), LayoutWriteError> {
        let index = serde_json::json!({
            "schemaVersion": 2,
            "manifests": [{"mediaType": media_type, "digest": manifest.to_string(), "size": size}],
        });
        for (name, text) in [
            ("oci-layout", LAYOUT_FILE.to_string()),
            ("index.json", index.to_string()),
        ] {
            let path = self.dir.join(name);
            std::fs::write(&path, text).map_err(|source| LayoutWriteError { path, source })?;
        }
        Ok(())
    }
}

/// Bytes read from a stream chunk by chunk.
const STREAM_CHUNK: usize = 256 * 1024;

/// The file's bytes in chunks of at most [`STREAM_CHUNK`]; an error once it passes `limit`.
fn file_chunks(
    file: tokio::fs::File,
    what: String,
    limit: u64,
    deadline: Option<Instant>,
) -> impl futures::Stream<Item = Result<bytes::Bytes, FetchError>> + Send + 'static {
    use tokio::io::AsyncReadExt;
    let state = Some((file, 0u64));
    futures::stream::unfold(state, move |state| {
        let what = what.clone();
        async move {
            let (mut file, read) = state?;
            if past(deadline) {
                return Some((Err(late(&what)), None));
            }
            let mut chunk = vec![0u8; STREAM_CHUNK];
            match file.read(&mut chunk).await {
                Ok(0) => None,
                Ok(n) if read + n as u64 > limit => {
                    Some((Err(FetchError::TooLarge { what, limit }), None))
                }
                Ok(n) => {
                    chunk.truncate(n);
                    Some((Ok(chunk.into()), Some((file, read + n as u64))))
                }
                Err(e) => Some((
                    Err(FetchError::bad_input_by(format!("{what}: cannot read"), e)),
                    None,
                )),
            }
        }
    })
}

/// Has `deadline` passed?
fn past(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// The error of a read the run's deadline cut off.
fn late(what: &str) -> FetchError {
    FetchError::unavailable(format!(
        "{what}: the overall deadline (--timeout) passed while the layout was read"
    ))
}

/// What hashing a file came to.
enum Hashed {
    /// Its digest and size.
    Done(Digest, u64),
    /// It is longer than the limit.
    TooLarge,
    /// The deadline passed first.
    Late,
}

/// The digest and size of the file at `path`, at most `limit` bytes, by `deadline`.
fn hash_file(
    path: &Path,
    algorithm: crate::digest::Algorithm,
    limit: u64,
    deadline: Option<Instant>,
) -> std::io::Result<Hashed> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = crate::digest::Hasher::new(algorithm);
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        if past(deadline) {
            return Ok(Hashed::Late);
        }
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(Hashed::Done(hasher.finish(), size));
        }
        size += n as u64;
        if size > limit {
            return Ok(Hashed::TooLarge);
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

    /// Issue 22, item 3: past the run's deadline every read of the layout stops, saying so.
    #[tokio::test]
    async fn reads_end_at_the_deadline() {
        let blob = b"{}";
        let (_d, r, digest) = layout_with(blob);
        let blobs = r.dir.join("blobs/sha256");
        std::fs::create_dir_all(&blobs).unwrap();
        std::fs::write(blobs.join(digest.hex()), blob).unwrap();
        let past = Some(Instant::now() - std::time::Duration::from_millis(1));
        let late = LayoutSource::open(&r).unwrap().with_deadline(past);
        let stream = late.blob_stream(&digest, 1024).await.err();
        let file = late.blob_file(&digest, 1024).await.err();
        let bytes = late.blob(&digest, 1024).await.err();
        for err in [stream, file, bytes] {
            let text = err.map(|e| e.to_string()).unwrap_or_default();
            assert!(text.contains("--timeout"), "{text}");
        }
        let on_time = LayoutSource::open(&r)
            .unwrap()
            .with_deadline(Some(Instant::now() + std::time::Duration::from_secs(60)));
        assert_eq!(on_time.blob(&digest, 1024).await.unwrap(), blob);
        assert!(on_time.blob_file(&digest, 1024).await.is_ok());
    }

    #[tokio::test]
    async fn what_the_writer_writes_reads_back_by_digest() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("work/image.oci");
        let writer = LayoutWriter::create(&root).unwrap();
        assert!(root.join("blobs/sha256").is_dir());
        let config = br#"{"architecture":"amd64","os":"windows"}"#;
        let config_digest = writer.put_blob(config).unwrap();
        assert_eq!(config_digest, Digest::sha256(config));
        let layer = b"a layer, streamed";
        let spool = writer.spool("spooling");
        std::fs::write(&spool, layer).unwrap();
        let layer_digest = Digest::sha256(layer);
        writer.put_spooled(&spool, &layer_digest).unwrap();
        assert!(!spool.exists());
        let manifest = format!(
            r#"{{"schemaVersion":2,"config":{{"digest":"{config_digest}"}},"layers":[{{"digest":"{layer_digest}"}}]}}"#
        );
        let manifest_digest = writer.put_blob(manifest.as_bytes()).unwrap();
        let media_type = "application/vnd.oci.image.manifest.v1+json";
        writer
            .put_index(&manifest_digest, manifest.len(), media_type)
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("oci-layout")).unwrap(),
            r#"{"imageLayoutVersion":"1.0.0"}"#
        );
        assert_eq!(
            std::fs::read_to_string(root.join("index.json")).unwrap(),
            format!(
                r#"{{"manifests":[{{"digest":"{manifest_digest}","mediaType":"{media_type}","size":{}}}],"schemaVersion":2}}"#,
                manifest.len()
            )
        );

        let reference = LayoutRef {
            dir: root,
            tag: None,
            digest: None,
        };
        let source = LayoutSource::open(&reference).unwrap();
        let top = source.top().await.unwrap();
        assert_eq!(top.bytes, manifest.as_bytes());
        assert_eq!(top.media_type.as_deref(), Some(media_type));
        assert_eq!(top.claimed_digest, Some(manifest_digest.clone()));
        assert_eq!(top.claimed_size, Some(manifest.len() as u64));
        assert_eq!(source.blob(&config_digest, 1024).await.unwrap(), config);
        // blob_file hashes the file: it is the layer's digest.
        let file = source.blob_file(&layer_digest, 1024).await.unwrap();
        assert_eq!(file.size, layer.len() as u64);
        assert_eq!(std::fs::read(&file.path).unwrap(), layer);
    }

    #[test]
    fn a_layout_that_cannot_be_written_names_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("image.oci");
        std::fs::write(&root, "a file where the layout should be").unwrap();
        let err = LayoutWriter::create(&root).unwrap_err();
        assert_eq!(err.path, root.join("blobs/sha256"));
        assert_eq!(
            err.to_string(),
            format!("cannot write {}", root.join("blobs/sha256").display())
        );

        let root = dir.path().join("other.oci");
        let writer = LayoutWriter::create(&root).unwrap();
        std::fs::create_dir(root.join("index.json")).unwrap();
        let err = writer
            .put_index(
                &Digest::sha256(b"{}"),
                2,
                "application/vnd.oci.image.manifest.v1+json",
            )
            .unwrap_err();
        assert_eq!(err.path, root.join("index.json"));
        // oci-layout comes first, and is written.
        assert!(root.join("oci-layout").is_file());
    }
}
