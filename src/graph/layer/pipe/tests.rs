//! The pipe: bytes in order, few large hand-overs, a hard bound on its buffers, and either
//! end going away ends the other without a hang.

use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use proptest::prelude::*;

use super::*;

/// Reads `reader` to its end on a thread of its own (the pipe's reader blocks); returns the
/// bytes and the length of every non-empty `fill_buf` through the returned channel (the
/// caller waits on it with a time limit).
fn drain(mut reader: PipeReader) -> std_mpsc::Receiver<(Vec<u8>, Vec<usize>)> {
    let (tx, rx) = std_mpsc::channel();
    std::thread::spawn(move || {
        let (mut out, mut fills) = (Vec::new(), Vec::new());
        loop {
            let got = reader.fill_buf().unwrap();
            if got.is_empty() {
                break;
            }
            fills.push(got.len());
            out.extend_from_slice(got);
            let n = got.len();
            reader.consume(n);
        }
        let _ = tx.send((out, fills));
    });
    rx
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

const SECOND: Duration = Duration::from_secs(1);

proptest! {
    /// Whatever the pieces, the reader gets the bytes in order, in full buffers but the last.
    #[test]
    fn bytes_pass_in_order_in_full_buffers(
        data in proptest::collection::vec(any::<u8>(), 0..2000),
        cuts in proptest::collection::vec(0usize..2000, 0..20),
        size in 1usize..300,
        buffers in 0usize..5,
    ) {
        let (out, fills) = runtime().block_on(async {
            let (mut writer, reader) = pipe(buffers, size);
            let done = drain(reader);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(data.len())).collect();
            cuts.sort_unstable();
            let mut at = 0;
            for cut in cuts.into_iter().chain([data.len()]) {
                prop_assert!(writer.write(&data[at..cut]).await || cut == at);
                at = cut;
            }
            writer.finish().await;
            Ok(tokio::task::spawn_blocking(move || done.recv_timeout(10 * SECOND).unwrap())
                .await
                .unwrap())
        })?;
        prop_assert_eq!(&out, &data);
        if let Some((last, whole)) = fills.split_last() {
            prop_assert!(whole.iter().all(|n| *n == size), "{:?}", fills);
            prop_assert!(*last <= size && *last > 0);
        }
        prop_assert_eq!(fills.len(), data.len().div_ceil(size));
    }
}

/// No more than `buffers` buffers ever exist: a writer ahead of its reader by that many waits
/// (here, for ever: nobody reads), and nothing it wrote past them was kept.
#[test]
fn a_writer_waits_once_every_buffer_is_full() {
    let rt = runtime();
    let data: Vec<u8> = (0..100).collect();
    let (out, fills) = rt.block_on(async {
        let (mut writer, reader) = pipe(3, 4);
        let waited = tokio::time::timeout(SECOND / 5, writer.write(&data)).await;
        assert!(waited.is_err(), "the write did not wait for the reader");
        assert_eq!(writer.allocated, 3);
        // Once read, the pipe moves again.
        let done = drain(reader);
        assert!(writer.write(b"tail").await);
        writer.finish().await;
        tokio::task::spawn_blocking(move || done.recv_timeout(10 * SECOND).unwrap())
            .await
            .unwrap()
    });
    let mut want = data[..12].to_vec();
    want.extend_from_slice(b"tail");
    assert_eq!(out, want);
    assert_eq!(fills, [4, 4, 4, 4]);
}

/// A reader that stops (a finding, a bomb, a crash) ends the writer's waiting: its writes
/// say so at once, whether it was waiting for a buffer or not, and never hang.
#[test]
fn a_reader_gone_ends_the_writer() {
    let rt = runtime();
    rt.block_on(async {
        // Gone before anything was written.
        let (mut writer, reader) = pipe(2, 4);
        drop(reader);
        let wrote = tokio::time::timeout(SECOND, writer.write(&[0; 64])).await;
        assert_eq!(wrote, Ok(false));
        // Gone while the writer waits for a buffer back.
        let (mut writer, mut reader) = pipe(2, 4);
        assert!(writer.write(&[1; 8]).await);
        let stop = tokio::task::spawn_blocking(move || {
            let mut one = [0u8; 1];
            reader.read_exact(&mut one).unwrap();
            std::thread::sleep(SECOND / 10);
            drop(reader);
            one[0]
        });
        let wrote = tokio::time::timeout(5 * SECOND, writer.write(&[2; 64])).await;
        assert_eq!(wrote, Ok(false));
        assert_eq!(stop.await.unwrap(), 1);
        // And stays so; finishing is a no-op.
        assert!(!writer.write(&[3]).await);
        writer.finish().await;
    });
}

/// A writer that stops without finishing (the download failed) ends the reader's stream
/// where it stopped: its reads end, they never hang.
#[test]
fn a_writer_gone_ends_the_reader() {
    let rt = runtime();
    let (out, _) = rt.block_on(async {
        let (mut writer, reader) = pipe(4, 8);
        let done = drain(reader);
        assert!(writer.write(&[7; 20]).await);
        drop(writer);
        tokio::task::spawn_blocking(move || done.recv_timeout(5 * SECOND).unwrap())
            .await
            .unwrap()
    });
    // The two full buffers; the part-filled one was never sent.
    assert_eq!(out, [7; 16]);
}
