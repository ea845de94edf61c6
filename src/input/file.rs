//! Reading a user's input file, or standard input for `-` (reference lists, ImageSet
//! configurations, node lists, pod templates, policies, mirror configurations): the one
//! reader every input goes through, bounded by a size limit and decoding text as kubectl
//! does.
//!
//! kubectl reads every file through `unicode.BOMOverride(unicode.UTF8.NewDecoder())`
//! (`FileVisitor.Visit` in k8s.io/cli-runtime `pkg/resource/visitor.go`): a UTF-8
//! byte-order mark is dropped and a UTF-16 one (little- or big-endian) decodes the rest as
//! UTF-16; without one the text is UTF-8. [`read_text`] does the same.

use std::io::Read;
use std::path::Path;

/// The size limit of an input file when none is given (`--max-input-size`): 256 MiB. The
/// largest real inputs are a cluster's node list and its pod templates: a Kubernetes cluster
/// has at most 5,000 nodes, and a node object, with the 50 images the kubelet reports at
/// most (`--node-status-max-images`), is 20–30 KiB of indented JSON: about 150 MiB for
/// `oc get nodes -o json` of the largest cluster.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 256 * 1024 * 1024;

/// An input that cannot be read: what went wrong (naming the limit when it was passed), and
/// the I/O error behind it, if any.
#[derive(Debug)]
pub(crate) struct ReadError {
    /// `cannot read`, `cannot read standard input`, `larger than the input limit of …`.
    pub reason: String,
    /// The error behind it.
    pub source: Option<std::io::Error>,
}

/// The text of `path`, or of standard input for `-`, refused when longer than `max_bytes`
/// (its reason names the limit and `--max-input-size`); decoded as kubectl decodes files.
pub(crate) fn read_text(path: &str, max_bytes: u64) -> Result<String, ReadError> {
    if path == "-" {
        read_capped(
            std::io::stdin().lock(),
            max_bytes,
            "cannot read standard input",
        )
    } else {
        read_file(Path::new(path), max_bytes)
    }
}

/// The text of the file `path`, refused when longer than `max_bytes` (see [`read_text`]).
pub(crate) fn read_file(path: &Path, max_bytes: u64) -> Result<String, ReadError> {
    let file = std::fs::File::open(path).map_err(|e| ReadError {
        reason: "cannot read".to_string(),
        source: Some(e),
    })?;
    read_capped(file, max_bytes, "cannot read")
}

/// An input read as a stream, at most `max` bytes of it: past them a read fails (and
/// [`Capped::passed`] says so), whatever the file's metadata says.
pub(crate) struct Capped {
    inner: Box<dyn Read>,
    left: u64,
    max: u64,
    passed: bool,
}

impl Capped {
    /// The limit's error, when a read went past it.
    pub(crate) fn passed(&self) -> Option<ReadError> {
        self.passed.then(|| ReadError {
            reason: too_large(self.max),
            source: None,
        })
    }
}

impl Read for Capped {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            // One byte more tells whether the input goes on.
            if self.inner.read(&mut [0u8])? == 0 {
                return Ok(0);
            }
            self.passed = true;
            return Err(std::io::Error::other(too_large(self.max)));
        }
        let take = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..take])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// `path` (standard input for `-`) opened for streaming, buffered, at most `max_bytes` of it.
pub(crate) fn open_capped(
    path: &str,
    max_bytes: u64,
) -> Result<std::io::BufReader<Capped>, ReadError> {
    let inner: Box<dyn Read> = match path {
        "-" => Box::new(std::io::stdin().lock()),
        path => Box::new(std::fs::File::open(path).map_err(|e| ReadError {
            reason: "cannot read".to_string(),
            source: Some(e),
        })?),
    };
    Ok(std::io::BufReader::with_capacity(
        64 * 1024,
        Capped {
            inner,
            left: max_bytes,
            max: max_bytes,
            passed: false,
        },
    ))
}

/// The rest of a [`open_capped`] input as text, decoded as [`read_text`] decodes it.
pub(crate) fn read_rest(mut from: std::io::BufReader<Capped>) -> Result<String, ReadError> {
    let mut bytes = Vec::new();
    if let Err(e) = from.read_to_end(&mut bytes) {
        return Err(from.get_ref().passed().unwrap_or(ReadError {
            reason: "cannot read".to_string(),
            source: Some(e),
        }));
    }
    decode(bytes).map_err(|e| ReadError {
        reason: "cannot read".to_string(),
        source: Some(e),
    })
}

/// Why an input is refused past `max_bytes`.
fn too_large(max_bytes: u64) -> String {
    format!(
        "larger than the input limit of {} (raise it with --max-input-size)",
        size(max_bytes)
    )
}

/// What a file is, by its metadata: `a directory`, `a file`, `a FIFO`, `a device`, `a
/// socket` (what an input that must be a regular file is refused as, before it is opened: a
/// FIFO would block the open, a device never end).
pub(crate) fn file_kind(m: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    match () {
        _ if t.is_dir() => "a directory",
        _ if t.is_file() => "a file",
        _ if t.is_fifo() => "a FIFO",
        _ if t.is_char_device() || t.is_block_device() => "a device",
        _ if t.is_socket() => "a socket",
        _ => "of another type",
    }
}

/// Reads at most `max_bytes` (one more tells that there is more, whatever the file's
/// metadata says: `/dev/zero` and pipes have none), then decodes.
fn read_capped(from: impl Read, max_bytes: u64, cannot: &str) -> Result<String, ReadError> {
    let mut bytes = Vec::new();
    from.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError {
            reason: cannot.to_string(),
            source: Some(e),
        })?;
    if bytes.len() as u64 > max_bytes {
        return Err(ReadError {
            reason: too_large(max_bytes),
            source: None,
        });
    }
    decode(bytes).map_err(|e| ReadError {
        reason: cannot.to_string(),
        source: Some(e),
    })
}

/// The text of `bytes` as kubectl decodes a file: a UTF-8 byte-order mark is dropped, a
/// UTF-16 one decodes the rest as UTF-16 (little- or big-endian); else UTF-8.
fn decode(bytes: Vec<u8>) -> std::io::Result<String> {
    let invalid = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
    let utf16 = |rest: &[u8], unit: fn([u8; 2]) -> u16| {
        if rest.len() % 2 == 1 {
            return Err(invalid(
                "UTF-16 text (by its byte-order mark) of an odd length",
            ));
        }
        let units: Vec<u16> = rest.chunks_exact(2).map(|c| unit([c[0], c[1]])).collect();
        String::from_utf16(&units).map_err(|_| invalid("not valid UTF-16 (by its byte-order mark)"))
    };
    match bytes.as_slice() {
        [0xEF, 0xBB, 0xBF, rest @ ..] => String::from_utf8(rest.to_vec())
            .map_err(|_| invalid("stream did not contain valid UTF-8")),
        [0xFF, 0xFE, rest @ ..] => utf16(rest, u16::from_le_bytes),
        [0xFE, 0xFF, rest @ ..] => utf16(rest, u16::from_be_bytes),
        _ => String::from_utf8(bytes).map_err(|_| invalid("stream did not contain valid UTF-8")),
    }
}

/// `max_bytes` as a person reads it: `256 MiB`, `1 KiB`, else bytes.
fn size(max_bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    UNITS
        .iter()
        .find(|(unit, _)| max_bytes >= *unit && max_bytes.is_multiple_of(*unit))
        .map_or_else(
            || format!("{max_bytes} bytes"),
            |(unit, name)| format!("{} {name}", max_bytes / unit),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Table: bytes → the text kubectl reads (cli-runtime `FileVisitor.Visit`:
    /// `unicode.BOMOverride(unicode.UTF8.NewDecoder())`), or an error.
    #[test]
    fn text_is_decoded_as_kubectl_decodes_files() {
        let utf16le: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain("kind: Pod".encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        let utf16be: Vec<u8> = [0xFE, 0xFF]
            .into_iter()
            .chain("kind: Pod".encode_utf16().flat_map(u16::to_be_bytes))
            .collect();
        let cases: [(Vec<u8>, Option<&str>); 7] = [
            (b"kind: Pod".to_vec(), Some("kind: Pod")),
            (b"\xEF\xBB\xBFkind: Pod".to_vec(), Some("kind: Pod")),
            (
                b"\xEF\xBB\xBF{\"kind\":\"List\"}".to_vec(),
                Some("{\"kind\":\"List\"}"),
            ),
            (utf16le, Some("kind: Pod")),
            (utf16be, Some("kind: Pod")),
            (b"\xFF\xFEk".to_vec(), None),
            (b"kind: \xFF".to_vec(), None),
        ];
        for (bytes, want) in cases {
            let got = decode(bytes.clone()).ok();
            assert_eq!(got.as_deref(), want, "{bytes:?}");
        }
    }

    /// Every input is read through one capped reader: past the limit it is refused naming
    /// the limit, whatever the file's metadata says (`/dev/zero` has a length of 0).
    #[test]
    fn inputs_past_the_limit_are_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nodes.json");
        std::fs::write(&path, vec![b' '; 2048]).unwrap();
        let path = path.to_str().unwrap();
        assert_eq!(read_text(path, 2048).unwrap().len(), 2048);
        let cases = [
            (path, 2047, "larger than the input limit of 2047 bytes"),
            (path, 1024, "larger than the input limit of 1 KiB"),
            ("/dev/zero", 1 << 20, "larger than the input limit of 1 MiB"),
        ];
        for (path, max, want) in cases {
            let e = read_text(path, max).unwrap_err();
            assert!(e.reason.starts_with(want), "{path} {max}: {}", e.reason);
            assert!(e.reason.ends_with("(raise it with --max-input-size)"));
        }
        let e = read_text("/nonexistent/nodes.json", 1024).unwrap_err();
        assert_eq!(e.reason, "cannot read");
        assert!(e.source.is_some());
    }
}
