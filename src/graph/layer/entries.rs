//! The entries of a tar stream, in bounded memory: each entry's data is handed to the caller
//! as a reader (the `--deep` check reads none of it and it is dropped), PAX and GNU long-name records are read up to [`MAX_RECORD`] bytes. The `tar`
//! crate parses each header; its `Archive` is not used because it buffers PAX and long-name
//! records whole, however large a hostile header says they are (docs/decisions.md).
//!
//! Like Go's `archive/tar` (what containerd and hcsshim read layers with): a PAX `path` or a
//! GNU long name replaces the next entry's name, a PAX `size` its data size, and link,
//! directory and device entries carry no data. Unlike it, zero blocks do not end the walk:
//! entries after an end-of-archive marker are read (and checked) too.

use std::fmt;
use std::io::{self, Read};

/// Largest PAX extended header or GNU long name read.
pub(super) const MAX_RECORD: u64 = 1024 * 1024;

const BLOCK: usize = 512;

/// Why the stream is not a tar archive imgcheck can read.
#[derive(Debug)]
pub(super) enum TarError {
    /// Reading (or decompressing) failed.
    Io(io::Error),
    /// The bytes are not a valid tar stream.
    Corrupt(String),
    /// A valid entry the reader refuses (a file larger than it takes), and why.
    Refused(String),
}

impl fmt::Display for TarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TarError::Io(e) => write!(f, "cannot read the layer: {e}"),
            TarError::Corrupt(m) => write!(f, "corrupt tar archive: {m}"),
            TarError::Refused(m) => f.write_str(m),
        }
    }
}

impl From<io::Error> for TarError {
    fn from(e: io::Error) -> TarError {
        TarError::Io(e)
    }
}

/// Fills `buf`; `Ok(false)` at a clean end of the stream before its first byte.
fn read_block(r: &mut impl Read, buf: &mut [u8]) -> Result<bool, TarError> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) if filled == 0 => return Ok(false),
            Ok(0) => {
                return Err(TarError::Corrupt(format!(
                    "the stream ends inside a {}-byte block",
                    buf.len()
                )));
            }
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(true)
}

/// Reads and drops `n` bytes; the stream must hold them.
fn skip(r: &mut impl Read, n: u64, scratch: &mut [u8]) -> Result<(), TarError> {
    let mut left = n;
    while left > 0 {
        let want = left.min(scratch.len() as u64) as usize;
        match r.read(&mut scratch[..want]) {
            Ok(0) => {
                return Err(TarError::Corrupt(format!(
                    "the stream ends {left} bytes before the entry's data does"
                )));
            }
            Ok(k) => left -= k as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// `n` rounded up to whole blocks.
fn padded(n: u64) -> u64 {
    n.div_ceil(BLOCK as u64) * BLOCK as u64
}

/// Reads a record (PAX header, GNU long name) of `size` bytes plus its padding.
fn read_record(r: &mut impl Read, size: u64, scratch: &mut [u8]) -> Result<Vec<u8>, TarError> {
    if size > MAX_RECORD {
        return Err(TarError::Corrupt(format!(
            "a {size}-byte PAX or long-name record (the limit is {MAX_RECORD} bytes)"
        )));
    }
    let mut record = vec![0u8; size as usize];
    if !read_block(r, &mut record)? && size > 0 {
        return Err(TarError::Corrupt("the stream ends inside a record".into()));
    }
    skip(r, padded(size) - size, scratch)?;
    Ok(record)
}

/// The header's stored checksum agrees with its bytes (unsigned or, as old tars wrote it,
/// signed sum, with the checksum field counted as spaces).
fn checksum_ok(block: &[u8]) -> bool {
    let field = &block[148..156];
    let text: String = field
        .iter()
        .take_while(|b| **b != 0 && **b != b' ')
        .map(|b| *b as char)
        .collect();
    let text = text.trim_start_matches(' ');
    let Ok(stored) = u64::from_str_radix(text, 8) else {
        return false;
    };
    let spaces = 8 * u64::from(b' ');
    let unsigned: u64 = block[..148]
        .iter()
        .chain(&block[156..])
        .map(|b| u64::from(*b))
        .sum();
    let signed: i64 = block[..148]
        .iter()
        .chain(&block[156..])
        .map(|b| i64::from(*b as i8))
        .sum();
    stored == unsigned + spaces || stored as i64 == signed + spaces as i64
}

/// What PAX records say about the next entry.
#[derive(Default)]
struct Overrides {
    path: Option<Vec<u8>>,
    size: Option<u64>,
}

fn pax_overrides(record: &[u8], into: &mut Overrides) -> Result<(), TarError> {
    for ext in tar::PaxExtensions::new(record) {
        let ext = ext.map_err(|e| TarError::Corrupt(format!("bad PAX record: {e}")))?;
        match ext.key() {
            Ok("path") => into.path = Some(ext.value_bytes().to_vec()),
            Ok("size") => {
                let size = ext
                    .value()
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| TarError::Corrupt("bad PAX size record".into()))?;
                into.size = Some(size);
            }
            _ => {}
        }
    }
    Ok(())
}

/// One entry of a tar stream, as [`for_each_entry`] hands it on.
pub(super) struct Entry<'a> {
    /// The name, PAX and long-name records applied, not normalised.
    pub name: &'a [u8],
    /// The type flag (`0` or NUL regular file, `2` symbolic link, `5` directory…).
    pub flag: u8,
    /// How many data bytes follow the header (0 for links, devices and directories).
    pub size: u64,
}

/// Calls `on_entry` with every entry and a reader of its data (at most `entry.size` bytes;
/// what it leaves unread is skipped); returns how many entries there were. An error from
/// `on_entry` ends the walk.
pub(super) fn for_each_entry(
    r: &mut impl Read,
    mut on_entry: impl FnMut(Entry<'_>, &mut dyn Read) -> Result<(), TarError>,
) -> Result<u64, TarError> {
    let mut block = [0u8; BLOCK];
    let mut scratch = vec![0u8; 64 * 1024];
    let mut next = Overrides::default();
    let mut gnu_name: Option<Vec<u8>> = None;
    let mut count = 0u64;
    while read_block(r, &mut block)? {
        if block.iter().all(|b| *b == 0) {
            continue;
        }
        if !checksum_ok(&block) {
            return Err(TarError::Corrupt(format!(
                "header {} has a bad checksum (not a tar stream, or damaged)",
                count + 1
            )));
        }
        let header = tar::Header::from_byte_slice(&block);
        let size = header
            .entry_size()
            .map_err(|e| TarError::Corrupt(format!("header {}: {e}", count + 1)))?;
        match block[156] {
            b'x' => pax_overrides(&read_record(r, size, &mut scratch)?, &mut next)?,
            b'L' => {
                let mut name = read_record(r, size, &mut scratch)?;
                while name.last() == Some(&0) {
                    name.pop();
                }
                gnu_name = Some(name);
            }
            b'g' | b'K' => skip(r, padded(size), &mut scratch)?,
            flag => {
                if flag == b'S' && block[482] != 0 {
                    skip_sparse_extensions(r)?;
                }
                let name = next
                    .path
                    .take()
                    .or(gnu_name.take())
                    .unwrap_or_else(|| header.path_bytes().into_owned());
                count += 1;
                let data = match (next.size.take(), flag) {
                    // Links, character and block devices, directories, FIFOs: no data.
                    (_, b'1'..=b'6') => 0,
                    (Some(pax), _) => pax,
                    (None, _) => size,
                };
                let mut body = (&mut *r).take(data);
                let entry = Entry {
                    name: &name,
                    flag,
                    size: data,
                };
                on_entry(entry, &mut body)?;
                let unread = body.limit();
                skip(r, unread + padded(data) - data, &mut scratch)?;
            }
        }
    }
    Ok(count)
}

/// GNU sparse headers are followed by extension blocks, each saying whether another follows.
fn skip_sparse_extensions(r: &mut impl Read) -> Result<(), TarError> {
    let mut ext = [0u8; BLOCK];
    loop {
        if !read_block(r, &mut ext)? {
            return Err(TarError::Corrupt(
                "the stream ends in a sparse header".into(),
            ));
        }
        if ext[504] == 0 {
            return Ok(());
        }
    }
}
