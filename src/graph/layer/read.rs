//! Reading one layer as a stream: gzip (every member, flate2) and zstd (every frame, libzstd
//! through the `zstd` crate) decoded on the fly, the decompressed size capped relative to the
//! compressed size, the run's deadline and cancellation honoured; every tar entry handed to a
//! callback ([`walk_layer`]), and the Windows layout check on top ([`check_layer`]).

use std::io::{self, BufRead, BufReader, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::entries;
use crate::graph::model::{LayerFormat, Problem};

/// Decompressed bytes a layer may always expand to, whatever its compressed size.
pub const EXPANSION_FLOOR: u64 = 1024 * 1024 * 1024;
/// Beyond [`EXPANSION_FLOOR`], how many times its compressed size a layer may expand to.
/// Deflate cannot pass about 1032×; zstd can reach millions (a "bomb").
pub const MAX_EXPANSION_RATIO: u64 = 2048;

/// Bounds on reading one layer.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Most decompressed (tar) bytes read before the check stops.
    pub max_expanded: u64,
    /// When the check must be over (`--timeout`), if ever.
    pub deadline: Option<Instant>,
    /// Set when nobody waits for the result any more: the check stops soon after.
    pub cancel: Arc<AtomicBool>,
}

impl Limits {
    /// The limits for a layer of `compressed` bytes: it may expand to the larger of
    /// [`EXPANSION_FLOOR`] and [`MAX_EXPANSION_RATIO`] times its size.
    pub fn for_compressed_size(compressed: u64) -> Limits {
        Limits {
            max_expanded: compressed
                .saturating_mul(MAX_EXPANSION_RATIO)
                .max(EXPANSION_FLOOR),
            deadline: None,
            cancel: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// Why reading stopped before the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Expanded,
    Deadline,
    Cancelled,
}

/// The decompressed stream, counted and bounded by [`Limits`].
struct Bounded<R> {
    inner: R,
    read: u64,
    limits: Limits,
    stopped: Option<Stop>,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let stop = if self.limits.cancel.load(Ordering::Relaxed) {
            Some(Stop::Cancelled)
        } else if self.limits.deadline.is_some_and(|d| Instant::now() >= d) {
            Some(Stop::Deadline)
        } else if self.read > self.limits.max_expanded {
            Some(Stop::Expanded)
        } else {
            None
        };
        if let Some(stop) = stop {
            self.stopped = Some(stop);
            return Err(io::Error::other("layer check stopped"));
        }
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

/// The compression a layer's first bytes announce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compression {
    Gzip,
    Zstd,
    None,
}

fn sniff(head: &[u8]) -> Compression {
    if head.starts_with(&[0x1f, 0x8b]) {
        Compression::Gzip
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
        // A zstd skippable frame (magic 0x184D2A5?) may come first.
        || (head.len() == 4 && head[0] & 0xf0 == 0x50 && head[1..] == [0x2a, 0x4d, 0x18])
    {
        Compression::Zstd
    } else {
        Compression::None
    }
}

/// The first (up to) four bytes of `reader`, however few each read gives.
fn peek_head(reader: &mut impl Read) -> io::Result<([u8; 4], usize)> {
    let mut head = [0u8; 4];
    let mut n = 0;
    while n < head.len() {
        match reader.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok((head, n))
}

/// Walks the tar stream of a layer (gzip, zstd or uncompressed) from `reader` within
/// `limits`, calling `on_entry` with every entry and a reader of its data; returns how many
/// entries there were, or why the walk could not finish. The decoders read `reader`'s
/// buffer in place (a [`BufRead`]: no copy before decompression).
pub(super) fn walk_layer(
    mut reader: impl BufRead,
    limits: Limits,
    on_entry: impl FnMut(entries::Entry<'_>, &mut dyn Read) -> Result<(), entries::TarError>,
) -> Result<u64, Problem> {
    let (head, n) = match peek_head(&mut reader) {
        Ok(peeked) => peeked,
        Err(e) => return Err(Problem::Bad(format!("cannot read the layer: {e}"))),
    };
    // The peeked bytes go back in front of the stream.
    let head = &head[..n];
    let reader = head.chain(reader);
    let decoded: Box<dyn Read + '_> = match sniff(head) {
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(reader)),
        // libzstd's streaming decoder reads every frame, skips skippable ones, refuses
        // garbage after a frame and a frame cut short, and keeps at most a 128 MiB window
        // (its default `windowLogMax` of 27; a frame asking for more is refused).
        Compression::Zstd => match zstd::stream::read::Decoder::with_buffer(reader) {
            Ok(decoder) => Box::new(decoder),
            Err(e) => return Err(Problem::Bad(format!("cannot read the layer: {e}"))),
        },
        Compression::None => Box::new(reader),
    };
    let mut bounded = Bounded {
        inner: decoded,
        read: 0,
        limits,
        stopped: None,
    };
    // Runtimes read the decompressed stream to its end after the end-of-archive marker
    // (what follows it is no entry, but a broken or endless compression is still an error).
    let walked = entries::for_each_entry(&mut bounded, on_entry).and_then(|count| {
        io::copy(&mut bounded, &mut io::sink())?;
        Ok(count)
    });
    match (walked, bounded.stopped) {
        (_, Some(stop)) => Err(stopped(stop, &bounded.limits)),
        (Err(e @ entries::TarError::Refused(_)), None) => Err(Problem::Bad(e.to_string())),
        (Err(e), None) => Err(Problem::Bad(format!(
            "{} (after {} decompressed bytes)",
            e, bounded.read
        ))),
        (Ok(count), None) => Ok(count),
    }
}

/// Reads a tar layer (gzip, zstd or uncompressed) from `reader` and checks every entry is in
/// the Windows layout, within `limits`.
pub fn check_layer(reader: impl Read, limits: Limits) -> LayerFormat {
    let reader = BufReader::with_capacity(64 * 1024, reader);
    check_layer_with(reader, limits, |_, _| Ok(()))
}

/// [`check_layer`], also handing every entry and a reader of its data to `also` (what
/// `--deep` keeps of the layer to find the image's program: `scan.rs`).
pub(super) fn check_layer_with(
    reader: impl BufRead,
    limits: Limits,
    mut also: impl FnMut(&entries::Entry<'_>, &mut dyn Read) -> Result<(), entries::TarError>,
) -> LayerFormat {
    let mut outside = 0;
    let mut examples = Vec::new();
    let walked = walk_layer(reader, limits, |entry, data| {
        let name = String::from_utf8_lossy(entry.name);
        if !is_windows_layout_path(&name) {
            outside += 1;
            if examples.len() < 3 {
                examples.push(name.into_owned());
            }
        }
        also(&entry, data)
    });
    match walked {
        Err(p) => LayerFormat::Failed(p),
        Ok(0) => LayerFormat::Skipped("empty layer".to_string()),
        Ok(_) if outside == 0 => LayerFormat::Windows,
        Ok(_) => LayerFormat::NotWindows { outside, examples },
    }
}

fn stopped(stop: Stop, limits: &Limits) -> Problem {
    match stop {
        Stop::Expanded => Problem::Bad(format!(
            "the layer expands past {} decompressed bytes (the larger of {} bytes and {}x its \
             compressed size): reading stopped, a decompression bomb or a layer no node should pull",
            limits.max_expanded, EXPANSION_FLOOR, MAX_EXPANSION_RATIO
        )),
        Stop::Deadline => Problem::Unavailable(
            "the overall deadline (--timeout) passed while the layer was read: not checked"
                .to_string(),
        ),
        Stop::Cancelled => Problem::Unavailable("the layer check was cancelled".to_string()),
    }
}

/// Reads a layer held in memory (see [`check_layer`]), with the limits for its size.
pub fn classify_layer(bytes: &[u8]) -> LayerFormat {
    check_layer(bytes, Limits::for_compressed_size(bytes.len() as u64))
}

/// The components of a tar entry's name as an extractor resolves them: `/` and `\` both
/// separate (Windows reads `\` as a separator), empty and `.` components drop out, `..`
/// removes the component before it. `None` when the name climbs above the layer's root.
pub fn normalised_components(name: &str) -> Option<Vec<&str>> {
    let mut parts: Vec<&str> = Vec::new();
    for part in name.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts)
}

/// Is `name` inside the Windows layer layout, once normalised (`Files/../../x` is not)?
pub fn is_windows_layout_path(name: &str) -> bool {
    normalised_components(name).is_some_and(|parts| {
        parts
            .first()
            .is_some_and(|top| ["Files", "Hives", "UtilityVM"].contains(top))
    })
}

/// The components of a tar entry's name as Linux unpacks it (Go's `filepath.Clean`, joined
/// under the root): only `/` separates, empty and `.` components drop out, `..` removes the
/// component before it and stays at the root of an absolute name. `None` when a relative
/// name climbs above the root.
pub(super) fn linux_components(name: &str) -> Option<Vec<&str>> {
    let absolute = name.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() && !absolute {
                    return None;
                }
            }
            p => parts.push(p),
        }
    }
    Some(parts)
}

#[cfg(test)]
mod tests;
