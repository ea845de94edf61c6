//! The blocks of a tar stream and their fields, shared by the entry walk and the sparse maps:
//! reading whole blocks, the reader's errors, and Go's `archive/tar` field parsers
//! (`parser.parseString`, `parser.parseOctal`, `parser.parseNumeric` in golang/go
//! `src/archive/tar/strconv.go`).

use std::fmt;
use std::io::{self, Read};

/// A tar block's size.
pub(super) const BLOCK: usize = 512;

/// Why the stream is not a tar archive imgcheck can read.
#[derive(Debug)]
pub(crate) enum TarError {
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

/// Fills `buf` as far as the stream goes; how many bytes that was.
pub(super) fn fill(r: &mut impl Read, buf: &mut [u8]) -> Result<usize, TarError> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(filled)
}

/// Fills `buf`; `Ok(false)` at a clean end of the stream before its first byte.
pub(super) fn read_block(r: &mut impl Read, buf: &mut [u8]) -> Result<bool, TarError> {
    match fill(r, buf)? {
        0 if !buf.is_empty() => Ok(false),
        n if n == buf.len() => Ok(true),
        _ => Err(TarError::Corrupt(format!(
            "the stream ends inside a {}-byte block",
            buf.len()
        ))),
    }
}

/// The bytes up to the first NUL (Go's `parser.parseString`).
pub(super) fn c_string(b: &[u8]) -> &[u8] {
    b.iter().position(|x| *x == 0).map_or(b, |n| &b[..n])
}

/// Go's `parser.parseOctal`: spaces and NULs trimmed on both sides, then octal digits up to
/// the first NUL (no sign, at most 64 bits); empty is 0.
pub(super) fn parse_octal(b: &[u8]) -> Option<i64> {
    let pad = |x: &u8| *x == b' ' || *x == 0;
    let start = b.iter().position(|x| !pad(x)).unwrap_or(b.len());
    let end = b.iter().rposition(|x| !pad(x)).map_or(start, |n| n + 1);
    let digits = c_string(&b[start..end]);
    if digits.is_empty() {
        return Some(0);
    }
    if !digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
        return None;
    }
    let text = std::str::from_utf8(digits).ok()?;
    u64::from_str_radix(text, 8).ok().map(|v| v as i64)
}

/// Go's `parser.parseNumeric`: base-256 when the first bit is set, else octal.
pub(super) fn parse_numeric(b: &[u8]) -> Option<i64> {
    let Some(first) = b.first() else {
        return Some(0);
    };
    if first & 0x80 == 0 {
        return parse_octal(b);
    }
    let inv = if first & 0x40 != 0 { 0xff } else { 0 };
    let mut x: u64 = 0;
    for (i, c) in b.iter().enumerate() {
        let mut c = c ^ inv;
        if i == 0 {
            c &= 0x7f;
        }
        if x >> 56 > 0 {
            return None;
        }
        x = (x << 8) | u64::from(c);
    }
    if x >> 63 > 0 {
        return None;
    }
    Some(if inv == 0xff { !(x as i64) } else { x as i64 })
}
