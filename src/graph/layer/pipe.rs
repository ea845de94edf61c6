//! The bounded channel between a layer's download (async: hashes and counts the pieces) and
//! its check (a blocking thread: decompresses and walks the tar stream). The download copies
//! its pieces, whatever their size, into a few large buffers that travel to the check and
//! back empty: the check reads them in place ([`BufRead`], no copy on its side), hands
//! over happen once per buffer rather than once per network piece, and the buffers absorb
//! the scheduling hiccups of two threads (and a local registry) sharing the cores. At most
//! `buffers` buffers of `size` bytes ever exist per pipe: the memory bound.

use std::io::{self, BufRead, Read};

use tokio::sync::mpsc;

/// Creates a pipe of at most `buffers` buffers (at least 2) of `size` bytes each.
pub(super) fn pipe(buffers: usize, size: usize) -> (PipeWriter, PipeReader) {
    let buffers = buffers.max(2);
    let (full_tx, full_rx) = mpsc::channel(buffers);
    let (empty_tx, empty_rx) = mpsc::channel(buffers);
    let writer = PipeWriter {
        full: full_tx,
        empty: empty_rx,
        buffer: Vec::new(),
        allocated: 0,
        buffers,
        size: size.max(1),
        open: true,
    };
    let reader = PipeReader {
        full: full_rx,
        empty: empty_tx,
        buffer: Vec::new(),
        at: 0,
    };
    (writer, reader)
}

/// The download's end: copies pieces into buffers, sending each when full.
pub(super) struct PipeWriter {
    full: mpsc::Sender<Vec<u8>>,
    empty: mpsc::Receiver<Vec<u8>>,
    /// The buffer being filled (no capacity when none is held).
    buffer: Vec<u8>,
    /// Buffers made so far (at most `buffers`).
    allocated: usize,
    buffers: usize,
    size: usize,
    /// False once the reader went away: bytes are dropped from then on.
    open: bool,
}

impl PipeWriter {
    /// Copies `bytes` in, waiting while every buffer is full and unread; false once the
    /// reader has gone away (it needs no more bytes).
    pub(super) async fn write(&mut self, mut bytes: &[u8]) -> bool {
        while self.open && !bytes.is_empty() {
            if self.buffer.capacity() == 0 {
                match self.take().await {
                    Some(buffer) => self.buffer = buffer,
                    None => {
                        self.open = false;
                        break;
                    }
                }
            }
            let n = (self.size - self.buffer.len()).min(bytes.len());
            self.buffer.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if self.buffer.len() == self.size {
                self.send().await;
            }
        }
        self.open
    }

    /// Sends what the last buffer holds; the reader then sees the end of the stream.
    pub(super) async fn finish(mut self) {
        if self.open && !self.buffer.is_empty() {
            self.send().await;
        }
    }

    async fn send(&mut self) {
        let full = std::mem::take(&mut self.buffer);
        self.open = self.full.send(full).await.is_ok();
    }

    /// An empty buffer: one the reader gave back, a new one while fewer than `buffers`
    /// exist, else the next one given back. `None` when the reader is gone.
    async fn take(&mut self) -> Option<Vec<u8>> {
        if let Ok(buffer) = self.empty.try_recv() {
            return Some(buffer);
        }
        if self.allocated < self.buffers {
            self.allocated += 1;
            return Some(Vec::with_capacity(self.size));
        }
        self.empty.recv().await
    }
}

/// The check's end: a blocking reader of the buffers in order, read in place.
pub(crate) struct PipeReader {
    full: mpsc::Receiver<Vec<u8>>,
    empty: mpsc::Sender<Vec<u8>>,
    buffer: Vec<u8>,
    at: usize,
}

impl BufRead for PipeReader {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.at == self.buffer.len() {
            let mut done = match self.full.blocking_recv() {
                Some(next) => std::mem::replace(&mut self.buffer, next),
                None => {
                    self.buffer = Vec::new();
                    self.at = 0;
                    break;
                }
            };
            self.at = 0;
            if done.capacity() > 0 {
                done.clear();
                // Never full (at most as many buffers as its room); a writer gone needs none.
                let _ = self.empty.try_send(done);
            }
        }
        Ok(&self.buffer[self.at..])
    }

    fn consume(&mut self, n: usize) {
        self.at = (self.at + n).min(self.buffer.len());
    }
}

impl Read for PipeReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = buf.len().min(available.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests;
