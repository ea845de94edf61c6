//! A layer from a source to the check: the source's blob stream is hashed and counted as it
//! passes (it must hash to the layer's digest and have the descriptor's size, whatever its
//! entries look like) and copied into the few large buffers of a pipe (`pipe.rs`) to the
//! reader (the layout check and the program scan of `program.rs`) on the blocking pool,
//! which decodes them in place: download and hashing on one thread, decompression and the
//! tar walk on another. At most [`layer_slots`] layers are read at once in the process, so
//! the memory `--deep` takes depends neither on layer sizes nor on `--jobs`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use tokio::sync::Semaphore;

use super::pipe::{PipeReader, PipeWriter, pipe};
use super::read::Limits;
use crate::digest::{Digest, Hasher};
use crate::graph::model::Problem;
use crate::source::{FetchError, Source};

/// Largest layer `--deep` streams (memory does not grow with it; `--timeout` bounds the time).
pub const MAX_DEEP_LAYER_BYTES: u64 = 256 * 1024 * 1024 * 1024;

/// Bytes the pipes of all the layers read at once may hold together (split evenly over the
/// [`layer_slots`]): on 2 cores, 8 MiB per layer, about 25 ms of zstd decoding, enough for the
/// download to run ahead of the decoder through the scheduler's time slices when other work
/// shares the cores (a 244 MiB zstd layer at load average 5: the decoder waited 24–133 ms
/// in all with 2 MiB, 5–12 ms with 8 MiB; at load 9, 0.33 s with 8 MiB, up to 0.9 s with 2).
const PIPE_BUDGET: usize = 16 * 1024 * 1024;
/// Size of one pipe buffer: one hand-over between the threads per 512 KiB.
const PIPE_BUFFER_BYTES: usize = 512 * 1024;

/// Buffers of one layer's pipe when `slots` layers are read at once (at least 2).
fn pipe_buffers(slots: usize) -> usize {
    (PIPE_BUDGET / PIPE_BUFFER_BYTES / slots.max(1)).max(2)
}

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
    F: FnOnce(PipeReader, Limits) -> T + Send + 'static,
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
    let (writer, reader) = pipe(pipe_buffers(layer_slots()), PIPE_BUFFER_BYTES);
    let reader = tokio::task::spawn_blocking(move || read(reader, limits));
    let received = pump(stream.chunks, writer, digest, size, deadline).await;
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
    mut chunks: BoxStream<'static, Result<Bytes, FetchError>>,
    mut writer: PipeWriter,
    digest: &Digest,
    size: Option<u64>,
    deadline: Option<Instant>,
) -> Result<(), Problem> {
    let mut hasher = Hasher::new(digest.algorithm());
    let mut received = 0u64;
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
        // A check that stopped (a finding, a bomb) takes no more bytes (the writer drops
        // them); the digest still needs them.
        writer.write(&chunk).await;
    }
    writer.finish().await;
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

    /// Serves `bytes` in pieces of `piece` bytes through `blob_stream`, breaking off with an
    /// error after `fail_after` pieces when set.
    struct Pieces {
        bytes: Vec<u8>,
        piece: usize,
        fail_after: Option<usize>,
    }

    impl Source for Pieces {
        fn name(&self) -> String {
            "pieces".into()
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
        async fn blob(&self, d: &Digest, _: u64) -> Result<Vec<u8>, FetchError> {
            Err(FetchError::NotFound(d.to_string()))
        }
        async fn blob_stream(
            &self,
            _: &Digest,
            _: u64,
        ) -> Result<crate::source::BlobStream, FetchError> {
            let mut pieces: Vec<Result<Bytes, FetchError>> = self
                .bytes
                .chunks(self.piece)
                .map(|p| Ok(Bytes::copy_from_slice(p)))
                .collect();
            if let Some(n) = self.fail_after {
                pieces.truncate(n);
                pieces.push(Err(FetchError::unavailable("the answer broke off")));
            }
            Ok(crate::source::BlobStream {
                chunks: Box::pin(futures::stream::iter(pieces)),
                deadline: None,
            })
        }
    }

    const MINUTE: std::time::Duration = std::time::Duration::from_secs(60);

    /// However small the network's pieces, the check reads large buffers in place: one hand
    /// over per buffer, not one per piece.
    #[tokio::test]
    async fn small_pieces_reach_the_check_in_full_buffers() {
        let bytes: Vec<u8> = (0..3 * PIPE_BUFFER_BYTES + 5).map(|i| i as u8).collect();
        let digest = Digest::sha256(&bytes);
        let source = Pieces {
            bytes: bytes.clone(),
            piece: 1000,
            fail_after: None,
        };
        let size = Some(bytes.len() as u64);
        let (got, fills) = read_blob(&source, &digest, size, |mut r, _| {
            let (mut got, mut fills) = (Vec::new(), Vec::new());
            loop {
                let n = std::io::BufRead::fill_buf(&mut r).unwrap().len();
                if n == 0 {
                    break (got, fills);
                }
                got.extend_from_slice(std::io::BufRead::fill_buf(&mut r).unwrap());
                fills.push(n);
                std::io::BufRead::consume(&mut r, n);
            }
        })
        .await
        .unwrap();
        assert_eq!(got, bytes);
        let full = PIPE_BUFFER_BYTES;
        assert_eq!(fills, [full, full, full, 5]);
    }

    /// A check that stops at once (a finding, a bomb) leaves the download to run to the end
    /// of a blob many times the pipe's buffers, never waiting on it; the digest is still
    /// checked on every byte.
    #[tokio::test]
    async fn a_check_that_stops_early_still_gets_the_digest_checked() {
        let bytes = vec![9u8; 2 * PIPE_BUDGET];
        let good = Digest::sha256(&bytes);
        let wrong = Digest::sha256(b"other");
        let size = Some(bytes.len() as u64);
        let source = Pieces {
            bytes,
            piece: 64 * 1024,
            fail_after: None,
        };
        let stop = |_: PipeReader, _: Limits| "stopped";
        let got = tokio::time::timeout(MINUTE, read_blob(&source, &good, size, stop)).await;
        assert_eq!(got, Ok(Ok("stopped")));
        let got = tokio::time::timeout(MINUTE, read_blob(&source, &wrong, size, stop)).await;
        assert!(
            matches!(&got, Ok(Err(Problem::DigestMismatch(m))) if m.contains("hashes to")),
            "{got:?}"
        );
    }

    /// A download that breaks off ends the check (which sees the stream end, cancelled) and
    /// the error is the download's: no hang, no verdict from the bytes that came.
    #[tokio::test]
    async fn a_broken_download_ends_the_check() {
        let layer = windows_layer();
        let mut bytes = layer.clone();
        bytes.resize(8 * PIPE_BUFFER_BYTES, 0);
        let digest = Digest::sha256(&bytes);
        let source = Pieces {
            bytes,
            piece: 4096,
            fail_after: Some(3 * PIPE_BUFFER_BYTES / 4096),
        };
        let size = Some(8 * PIPE_BUFFER_BYTES as u64);
        let check = read_blob(&source, &digest, size, check_layer);
        let got = tokio::time::timeout(MINUTE, check).await;
        assert!(
            matches!(&got, Ok(Err(Problem::Unavailable(m))) if m.contains("broke off")),
            "{got:?}"
        );
    }

    /// The pipes of all the layers read at once stay within the budget, whatever the cores.
    #[test]
    fn pipes_together_stay_within_the_budget() {
        for (slots, buffers) in [(1, 32), (2, 16), (3, 10), (4, 8), (6, 5), (8, 4), (64, 2)] {
            assert_eq!(pipe_buffers(slots), buffers, "{slots} slots");
            if slots <= 8 {
                assert!(
                    slots * buffers * PIPE_BUFFER_BYTES <= PIPE_BUDGET,
                    "{slots} slots"
                );
            }
        }
        assert!((2..=8).contains(&layer_slots()));
    }
}
