//! The entries of a tar stream read exactly as Go's `archive/tar` reads them (golang/go
//! `src/archive/tar/reader.go`: what containerd, CRI-O's containers/storage, hcsshim and `oc`
//! unpack layers with), in bounded memory: each entry's data is handed to the caller as a
//! reader, PAX and GNU long-name records are read up to [`MAX_RECORD`] bytes (Go's own limit).
//!
//! As `Reader.readHeader`: two zero blocks end the archive (nothing after them is an entry,
//! whatever it holds); one zero block then the end of the stream ends it too; one zero block
//! then anything else is an error. A header is read only when its checksum matches; its
//! format (V7, USTAR/PAX, STAR, GNU) decides where the name's prefix is; every numeric field
//! must parse. As `Reader.next`: a PAX header's records apply to the next entry only and a
//! second PAX header replaces the first; a GNU long name wins over a PAX `path`; a PAX sparse
//! file's `GNU.sparse.name` wins over both; a global header (`g`) ends the pending records;
//! type NUL with a trailing `/` is a directory; links, devices, directories and FIFOs carry
//! no data; the stream ending in the padding after an entry's data is a clean end. As
//! `Reader.handleSparseFile`: a GNU sparse file's map is read and checked (`sparse.rs`), and a
//! map Go refuses is an error.

use std::io::{self, Read};

use pax::Records;

mod block;
mod pax;
mod sparse;

pub(super) use block::TarError;
use block::{BLOCK, c_string, fill, parse_numeric, parse_octal, read_block};

/// Largest PAX extended header or GNU long name read (Go's `maxSpecialFileSize`).
pub(super) const MAX_RECORD: u64 = 1024 * 1024;

/// The next header block, or `None` at the end of the archive (`Reader.readHeader`).
fn next_header(r: &mut impl Read, block: &mut [u8; BLOCK]) -> Result<bool, TarError> {
    if !read_block(r, block)? {
        return Ok(false);
    }
    if block.iter().any(|b| *b != 0) {
        return Ok(true);
    }
    if !read_block(r, block)? || block.iter().all(|b| *b == 0) {
        return Ok(false);
    }
    Err(TarError::Corrupt(
        "a zero block followed by a header: neither the end-of-archive marker (two zero \
         blocks) nor an entry (Go's archive/tar refuses the archive, runtimes cannot unpack it)"
            .into(),
    ))
}

/// Reads and drops `n` bytes; `Ok(false)` when the stream ends first.
fn skip(r: &mut impl Read, n: u64, scratch: &mut [u8]) -> Result<bool, TarError> {
    let mut left = n;
    while left > 0 {
        let want = left.min(scratch.len() as u64) as usize;
        match r.read(&mut scratch[..want]) {
            Ok(0) => return Ok(false),
            Ok(k) => left -= k as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(true)
}

/// Skips `n` data bytes, which the stream must hold.
fn skip_data(r: &mut impl Read, n: u64, scratch: &mut [u8]) -> Result<(), TarError> {
    if skip(r, n, scratch)? {
        Ok(())
    } else {
        Err(TarError::Corrupt(
            "the stream ends before the entry's data does".into(),
        ))
    }
}

/// Bytes of padding after `n` data bytes.
fn padding(n: u64) -> u64 {
    n.next_multiple_of(BLOCK as u64) - n
}

/// A header's format, as Go's `block.getFormat` guesses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    V7,
    Ustar,
    Star,
    Gnu,
}

/// The format, or `None` when the checksum (unsigned or signed sum) does not match.
fn format_of(b: &[u8; BLOCK]) -> Option<Format> {
    let stored = parse_octal(&b[148..156])?;
    let spaces = 8 * i64::from(b' ');
    let rest = || b[..148].iter().chain(&b[156..]);
    let unsigned: i64 = rest().map(|x| i64::from(*x)).sum::<i64>() + spaces;
    let signed: i64 = rest().map(|x| i64::from(*x as i8)).sum::<i64>() + spaces;
    if stored != unsigned && stored != signed {
        return None;
    }
    Some(match (&b[257..263], &b[263..265], &b[508..512]) {
        (b"ustar\0", _, b"tar\0") => Format::Star,
        (b"ustar\0", _, _) => Format::Ustar,
        (b"ustar ", b" \0", _) => Format::Gnu,
        _ => Format::V7,
    })
}

/// One header as `Reader.readHeader` unpacks it: the name (prefix applied), type, size.
struct Header {
    format: Format,
    name: Vec<u8>,
    /// The link name (`linkname` field), for hard and symbolic links.
    link: Vec<u8>,
    flag: u8,
    size: i64,
    /// The mode field (permission bits and, in old writers, the file type bits).
    mode: i64,
}

fn numeric(b: &[u8], field: &str, at: u64) -> Result<i64, TarError> {
    parse_numeric(b).ok_or_else(|| {
        TarError::Corrupt(format!(
            "header {at}: its {field} field is not an octal number"
        ))
    })
}

fn parse_header(b: &[u8; BLOCK], at: u64) -> Result<Header, TarError> {
    let format = format_of(b).ok_or_else(|| {
        TarError::Corrupt(format!(
            "header {at} has a bad checksum (not a tar stream, or damaged)"
        ))
    })?;
    let size = numeric(&b[124..136], "size", at)?;
    let mode = numeric(&b[100..108], "mode", at)?;
    for (range, field) in [(108..116, "uid"), (116..124, "gid")] {
        numeric(&b[range], field, at)?;
    }
    numeric(&b[136..148], "mtime", at)?;
    let mut prefix: &[u8] = &[];
    if format != Format::V7 {
        numeric(&b[329..337], "devmajor", at)?;
        numeric(&b[337..345], "devminor", at)?;
    }
    match format {
        Format::V7 => {}
        Format::Ustar => prefix = c_string(&b[345..500]),
        Format::Star => {
            prefix = c_string(&b[345..476]);
            numeric(&b[476..488], "atime", at)?;
            numeric(&b[488..500], "ctime", at)?;
        }
        Format::Gnu => {
            // Go 1.8 and older wrote a USTAR prefix where GNU keeps atime and ctime: when
            // those do not parse, an ASCII prefix is read there.
            let bad = |r: std::ops::Range<usize>| b[r.start] != 0 && parse_numeric(&b[r]).is_none();
            let fallback = c_string(&b[345..500]);
            if (bad(345..357) || bad(357..369)) && fallback.is_ascii() {
                prefix = fallback;
            }
        }
    }
    let mut name = Vec::new();
    if !prefix.is_empty() {
        name.extend_from_slice(prefix);
        name.push(b'/');
    }
    name.extend_from_slice(c_string(&b[..100]));
    Ok(Header {
        format,
        name,
        link: c_string(&b[157..257]).to_vec(),
        flag: b[156],
        size,
        mode,
    })
}

/// Reads a record (PAX header, GNU long name) of `size` bytes; its padding is left.
fn read_record(r: &mut impl Read, size: i64) -> Result<Vec<u8>, TarError> {
    let size = u64::try_from(size)
        .map_err(|_| TarError::Corrupt(format!("a record of negative size {size}")))?;
    if size > MAX_RECORD {
        return Err(TarError::Corrupt(format!(
            "a {size}-byte PAX or long-name record (the limit is {MAX_RECORD} bytes)"
        )));
    }
    let mut record = vec![0u8; size as usize];
    if fill(r, &mut record)? < record.len() {
        return Err(TarError::Corrupt("the stream ends inside a record".into()));
    }
    Ok(record)
}

/// What the meta headers before an entry say about it (`Reader.next`'s locals).
#[derive(Default)]
struct Pending {
    pax: Records,
    long_name: Option<Vec<u8>>,
    long_link: Option<Vec<u8>>,
}

/// One entry of a tar stream, as [`for_each_entry`] hands it on.
pub(super) struct Entry<'a> {
    /// The name, PAX and long-name records applied, not normalised.
    pub name: &'a [u8],
    /// The link target of a hard (`1`) or symbolic (`2`) link, PAX `linkpath` and GNU long
    /// link records applied (as Go's `Reader.next`); empty for other entries.
    pub link: &'a [u8],
    /// The type flag (`0` regular file, `2` symbolic link, `5` directory…); NUL is `0`, or
    /// `5` when the name ends with `/`.
    pub flag: u8,
    /// How many data bytes follow the header (0 for links, devices and directories; for a PAX
    /// 1.0 sparse file, those after its map).
    pub size: u64,
    /// A GNU sparse file (old `S` type or PAX records): its data is a sparse encoding.
    pub sparse: bool,
    /// The permission bits of the header's mode field (`0o7777` of it, as Go's
    /// `Header.FileInfo().Mode()` gives runtimes; no PAX record overrides it).
    pub mode: u32,
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
    let mut pending = Pending::default();
    let mut count = 0u64;
    let mut headers = 0u64;
    while next_header(r, &mut block)? {
        headers += 1;
        let header = parse_header(&block, headers)?;
        let physical = match header.flag {
            b'x' | b'g' | b'L' | b'K' => {
                let record = read_record(r, header.size)?;
                meta(&header, &record, &mut pending)?;
                record.len() as u64
            }
            _ => {
                let pending = std::mem::take(&mut pending);
                let map = match header.flag {
                    b'S' => Some((sparse::Map::OldGnu, Vec::new())),
                    _ => sparse::pax_map(&pending.pax),
                };
                let mut entry = resolve(header, pending)?;
                let physical = entry.data;
                if let Some(map) = map {
                    let size = i64::try_from(physical).unwrap_or(i64::MAX);
                    let took = sparse::check(r, map, &block, (entry.flag, size, physical))?;
                    entry.data = physical - took;
                }
                count += 1;
                let mut body = (&mut *r).take(entry.data);
                on_entry(entry.as_entry(), &mut body)?;
                let unread = body.limit();
                skip_data(r, unread, &mut scratch)?;
                physical
            }
        };
        if !skip(r, padding(physical), &mut scratch)? {
            break;
        }
    }
    Ok(count)
}

/// A PAX (`x`, `g`) or GNU long name/link (`L`, `K`) record applied to what is pending.
fn meta(header: &Header, record: &[u8], pending: &mut Pending) -> Result<(), TarError> {
    match header.flag {
        b'x' => pending.pax = pax::parse(record).map_err(TarError::Corrupt)?,
        b'g' => {
            // Go returns a global header as an entry (runtimes skip it); the next call starts
            // afresh, so what was pending is dropped.
            pax::parse(record).map_err(TarError::Corrupt)?;
            *pending = Pending::default();
        }
        b'L' => pending.long_name = Some(c_string(record).to_vec()),
        b'K' => pending.long_link = Some(c_string(record).to_vec()),
        _ => {}
    }
    Ok(())
}

/// An entry with its records applied.
struct Resolved {
    name: Vec<u8>,
    link: Vec<u8>,
    flag: u8,
    sparse: bool,
    /// Data bytes in the stream (padding follows them).
    data: u64,
    mode: u32,
}

impl Resolved {
    fn as_entry(&self) -> Entry<'_> {
        Entry {
            name: &self.name,
            link: &self.link,
            flag: self.flag,
            size: self.data,
            sparse: self.sparse,
            mode: self.mode,
        }
    }
}

/// `Reader.next` for a header that is an entry: PAX records, then the GNU long name, then
/// type NUL, then the PAX sparse name; the data size (0 for header-only types).
fn resolve(header: Header, pending: Pending) -> Result<Resolved, TarError> {
    let (mut name, mut size) = (header.name, header.size);
    pending
        .pax
        .merge(&mut name, &mut size)
        .map_err(TarError::Corrupt)?;
    if let Some(long) = pending.long_name.filter(|n| !n.is_empty()) {
        name = long;
    }
    let mut link = header.link;
    if let Some(path) = pending.pax.link_path() {
        link = path.to_vec();
    }
    if let Some(long) = pending.long_link.filter(|n| !n.is_empty()) {
        link = long;
    }
    let flag = match header.flag {
        0 if name.ends_with(b"/") => b'5',
        0 => b'0',
        f => f,
    };
    if flag == b'S' && header.format != Format::Gnu {
        return Err(TarError::Corrupt(format!(
            "a GNU sparse entry (type S) in a {:?} header",
            header.format
        )));
    }
    let mut sparse = flag == b'S';
    if let Some(sparse_name) = pending.pax.sparse_name() {
        sparse = true;
        if !sparse_name.is_empty() {
            name = sparse_name.to_vec();
        }
    }
    let data = if (b'1'..=b'6').contains(&flag) {
        0
    } else {
        u64::try_from(size)
            .map_err(|_| TarError::Corrupt(format!("an entry of negative size {size}")))?
    };
    Ok(Resolved {
        name,
        link,
        flag,
        sparse,
        data,
        mode: (header.mode & 0o7777) as u32,
    })
}

#[cfg(test)]
mod tests;
