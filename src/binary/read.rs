//! Bounds-checked integer reads from byte slices: every read that would run past the end
//! answers `None` instead of panicking.

use super::info::Endian;

/// `len` bytes at `off`, when they are all there.
pub(super) fn slice(b: &[u8], off: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(off).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    b.get(start..end)
}

/// A 16-bit integer at `off`.
pub(super) fn u16_at(b: &[u8], off: u64, e: Endian) -> Option<u16> {
    let raw: [u8; 2] = slice(b, off, 2)?.try_into().ok()?;
    Some(match e {
        Endian::Little => u16::from_le_bytes(raw),
        Endian::Big => u16::from_be_bytes(raw),
    })
}

/// A 32-bit integer at `off`.
pub(super) fn u32_at(b: &[u8], off: u64, e: Endian) -> Option<u32> {
    let raw: [u8; 4] = slice(b, off, 4)?.try_into().ok()?;
    Some(match e {
        Endian::Little => u32::from_le_bytes(raw),
        Endian::Big => u32::from_be_bytes(raw),
    })
}

/// A 64-bit integer at `off`.
pub(super) fn u64_at(b: &[u8], off: u64, e: Endian) -> Option<u64> {
    let raw: [u8; 8] = slice(b, off, 8)?.try_into().ok()?;
    Some(match e {
        Endian::Little => u64::from_le_bytes(raw),
        Endian::Big => u64::from_be_bytes(raw),
    })
}

/// An unsigned LEB128 / Go `binary.Uvarint` at the start of `b`: the value and the bytes it
/// took; `None` when it is cut short or does not fit 64 bits.
pub(super) fn uleb128(b: &[u8]) -> Option<(u64, usize)> {
    let mut value: u64 = 0;
    for (i, &byte) in b.iter().enumerate().take(10) {
        let part = u64::from(byte & 0x7f);
        if i == 9 && byte > 1 {
            return None;
        }
        value |= part << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// A NUL-terminated string at the start of `b`, at most `max` bytes long (the NUL not counted).
pub(super) fn cstr(b: &[u8], max: usize) -> Option<&[u8]> {
    let end = b.iter().take(max + 1).position(|&c| c == 0)?;
    Some(&b[..end])
}
