//! A layer from a source to the check: the source's blob stream is hashed and counted as it
//! passes (it must hash to the layer's digest and have the descriptor's size, whatever its
//! entries look like) and handed through a small bounded channel to the reader (the layout
//! check and the program scan of `program.rs`) on the blocking pool. At most [`layer_slots`] layers are read at once in the process, so the
//! memory `--deep` takes depends neither on layer sizes nor on `--jobs`.

use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use futures::StreamExt;
use futures::stream::BoxStream;
use tokio::sync::{Semaphore, mpsc};

use super::read::Limits;
use crate::digest::{Digest, Hasher};
use crate::graph::model::Problem;
use crate::source::{FetchError, Source};

/// Largest layer `--deep` streams (memory does not grow with it; `--timeout` bounds the time).
pub const MAX_DEEP_LAYER_BYTES: u64 = 256 * 1024 * 1024 * 1024;

/// Chunks in flight between the download and the check, per layer.
const CHANNEL_CHUNKS: usize = 4;

/// Layers read at once in the process: one per core, at least 2, at most 8.
pub fn layer_slots() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8))
}

fn slots() -> &'static Semaphore {
    static SLOTS: OnceLock<Semaphore> = OnceLock::new();
    SLOTS.get_or_init(|| Semaphore::new(layer_slots()))
}

/// Stops the blocking check when the future waiting for it goes away (a deadline, an error).
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Streams the blob `digest` (of `size` bytes, when the descriptor says) from `source` to
/// `read` on the blocking pool, within the limits for its size and the stream's deadline.
/// Every byte is hashed and counted as it passes, to the end of the blob even when `read`
/// stops early: bytes that are not the blob's are an error, whatever `read` made of them.
pub(crate) async fn read_blob<S, T, F>(
    source: &S,
    digest: &Digest,
    size: Option<u64>,
    read: F,
) -> Result<T, Problem>
where
    S: Source,
    T: Send + 'static,
    F: FnOnce(ChannelReader, Limits) -> T + Send + 'static,
{
    let Ok(_permit) = slots().acquire().await else {
        return Err(Problem::Unavailable("layer check slots closed".into()));
    };
    let limit = size
        .unwrap_or(MAX_DEEP_LAYER_BYTES)
        .min(MAX_DEEP_LAYER_BYTES);
    let stream = source
        .blob_stream(digest, limit)
        .await
        .map_err(Problem::from_fetch)?;
    let cancel = CancelOnDrop(Arc::new(AtomicBool::new(false)));
    let deadline = stream.deadline;
    let limits = Limits {
        deadline: stream.deadline,
        cancel: Arc::clone(&cancel.0),
        ..Limits::for_compressed_size(size.unwrap_or(0))
    };
    let (tx, rx) = mpsc::channel(CHANNEL_CHUNKS);
    let reader = tokio::task::spawn_blocking(move || read(ChannelReader::new(rx), limits));
    let received = pump(stream.chunks, tx, digest, size, deadline).await;
    if received.is_err() {
        cancel.0.store(true, Ordering::Relaxed);
    }
    let out = reader
        .await
        .map_err(|e| Problem::Bad(format!("layer reader crashed: {e}")));
    // Bytes that are not the layer's say nothing about it, however their entries look.
    received?;
    out
}

/// Hashes and counts every chunk, handing each to the check while it still reads, until
/// `deadline` (the run's `--timeout`).
async fn pump(
    mut chunks: BoxStream<'static, Result<Vec<u8>, FetchError>>,
    tx: mpsc::Sender<Vec<u8>>,
    digest: &Digest,
    size: Option<u64>,
    deadline: Option<Instant>,
) -> Result<(), Problem> {
    let mut hasher = Hasher::new(digest.algorithm());
    let mut received = 0u64;
    let mut checking = true;
    while let Some(chunk) = chunks.next().await {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(Problem::Unavailable(format!(
                "{digest}: the overall deadline (--timeout) passed while the layer was read: \
                 not checked"
            )));
        }
        let chunk = chunk.map_err(Problem::from_fetch)?;
        received += chunk.len() as u64;
        if let Some(size) = size
            && received > size
        {
            return Err(Problem::DigestMismatch(format!(
                "{digest}: descriptor says {size} bytes, received more"
            )));
        }
        hasher.update(&chunk);
        // A check that stopped (a finding, a bomb) needs no more bytes; the digest still does.
        checking = checking && tx.send(chunk).await.is_ok();
    }
    drop(tx);
    if let Some(size) = size
        && size != received
    {
        return Err(Problem::DigestMismatch(format!(
            "{digest}: descriptor says {size} bytes, received {received}"
        )));
    }
    let actual = hasher.finish();
    if actual != *digest {
        return Err(Problem::DigestMismatch(format!(
            "{digest}: received content hashes to {actual}"
        )));
    }
    Ok(())
}

/// The receiving end of the channel as a blocking reader.
pub(crate) struct ChannelReader {
    rx: mpsc::Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    at: usize,
}

impl ChannelReader {
    fn new(rx: mpsc::Receiver<Vec<u8>>) -> ChannelReader {
        ChannelReader {
            rx,
            chunk: Vec::new(),
            at: 0,
        }
    }
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.chunk.len() {
            match self.rx.blocking_recv() {
                Some(chunk) => {
                    self.chunk = chunk;
                    self.at = 0;
                }
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len() - self.at);
        buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::layer::read::check_layer;
    use crate::graph::model::LayerFormat;
    use crate::manifest::Descriptor;
    use crate::source::Fetched;

    /// Streams the layer `d` from `source` and checks its format and its digest.
    async fn check_blob<S: Source>(source: &S, d: &Descriptor, digest: &Digest) -> LayerFormat {
        read_blob(source, digest, u64::try_from(d.size).ok(), check_layer)
            .await
            .unwrap_or_else(LayerFormat::Failed)
    }

    /// Serves the same bytes for every blob, through the default `blob_stream`.
    struct Blob(Vec<u8>);

    impl Source for Blob {
        fn name(&self) -> String {
            "blob".into()
        }
        fn pinned(&self) -> Option<Digest> {
            None
        }
        async fn top(&self) -> Result<Fetched, FetchError> {
            Err(FetchError::NotFound("top".into()))
        }
        async fn manifest(&self, d: &Digest, _: u64) -> Result<Vec<u8>, FetchError> {
            Err(FetchError::NotFound(d.to_string()))
        }
        async fn blob(&self, _: &Digest, _: u64) -> Result<Vec<u8>, FetchError> {
            Ok(self.0.clone())
        }
    }

    fn windows_layer() -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_size(1);
        b.append_data(&mut h, "Files/a.exe", &b"x"[..]).unwrap();
        b.into_inner().unwrap()
    }

    fn descriptor(digest: &Digest, size: usize) -> Descriptor {
        Descriptor {
            media_type: "application/vnd.oci.image.layer.v1.tar".to_string(),
            digest: digest.to_string(),
            size: size as i64,
            platform: None,
            annotations: Default::default(),
            urls: vec![],
        }
    }

    #[tokio::test]
    async fn bytes_must_be_the_layers_own() {
        let good = windows_layer();
        let digest = Digest::sha256(&good);
        let source = Blob(good.clone());
        let got = check_blob(&source, &descriptor(&digest, good.len()), &digest).await;
        assert_eq!(got, LayerFormat::Windows);
        // Other bytes, every entry in the layout all the same: a mismatch, never a pass.
        let mut other = good.clone();
        other[600] = b'y';
        let source = Blob(other);
        let got = check_blob(&source, &descriptor(&digest, good.len()), &digest).await;
        assert!(
            matches!(&got, LayerFormat::Failed(Problem::DigestMismatch(m)) if m.contains("hashes to")),
            "{got:?}"
        );
        // The right bytes under a descriptor with another size.
        let source = Blob(good.clone());
        for size in [good.len() - 1, good.len() + 1] {
            let got = check_blob(&source, &descriptor(&digest, size), &digest).await;
            assert!(
                matches!(&got, LayerFormat::Failed(Problem::DigestMismatch(m)) if m.contains("descriptor says")),
                "{size}: {got:?}"
            );
        }
    }
}
