//! GNU sparse maps checked as Go's `archive/tar` checks them (golang/go
//! `src/archive/tar/reader.go`: `Reader.handleSparseFile`, `readOldGNUSparseMap`,
//! `readGNUSparsePAXHeaders`, `readGNUSparseMap0x1`, `readGNUSparseMap1x0`; `common.go`:
//! `validateSparseEntries`; the data against the map as `sparseFileReader.Read` reads it). A map
//! Go refuses is an error there, so no runtime unpacks the layer: here too. Only the map is
//! read; the entry's data is not expanded.

use std::io::Read;

use super::block::{BLOCK, TarError, fill, parse_numeric, read_block};
use super::pax::Records;

/// Where an entry's sparse map is.
pub(super) enum Map {
    /// In the old GNU header (type `S`) and its extension blocks.
    OldGnu,
    /// In the PAX records (formats 0.0 and 0.1): `GNU.sparse.map`, `GNU.sparse.numblocks`.
    Pax0 { map: Vec<u8>, blocks: Vec<u8> },
    /// In blocks that lead the entry's data (format 1.0).
    Pax1,
}

/// The sparse map `records` announce, and the real size they give (`GNU.sparse.size`, else
/// `GNU.sparse.realsize`), as `readGNUSparsePAXHeaders` reads them; `None` when they make no
/// sparse file (an unknown version is none either).
pub(super) fn pax_map(records: &Records) -> Option<(Map, Vec<u8>)> {
    let map = match (
        records.get("GNU.sparse.major"),
        records.get("GNU.sparse.minor"),
    ) {
        (b"1", b"0") => Map::Pax1,
        (b"0", b"0" | b"1") => pax0(records),
        (b"", b"") if !records.get("GNU.sparse.map").is_empty() => pax0(records),
        _ => return None,
    };
    let size = match records.get("GNU.sparse.size") {
        b"" => records.get("GNU.sparse.realsize"),
        s => s,
    };
    Some((map, size.to_vec()))
}

fn pax0(records: &Records) -> Map {
    Map::Pax0 {
        map: records.get("GNU.sparse.map").to_vec(),
        blocks: records.get("GNU.sparse.numblocks").to_vec(),
    }
}

fn bad(what: &str) -> TarError {
    TarError::Corrupt(format!(
        "a GNU sparse map Go's archive/tar refuses ({what}): runtimes cannot unpack the layer"
    ))
}

/// Go's `strconv.ParseInt(s, 10, 64)`.
fn int(b: &[u8]) -> Option<i64> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// Checks the sparse map of an entry of type `flag` (`Reader.handleSparseFile`): reads it
/// (from `header` and extension blocks after it for type `S`, from the leading blocks of the
/// data for 1.0), checks it against the real size (`size`: the PAX one when given, else
/// `fallback`) and checks that the `physical` data bytes are what its regions hold. Returns
/// how many data bytes the map took (1.0), which the entry's data does not hold.
pub(super) fn check(
    r: &mut impl Read,
    (map, size): (Map, Vec<u8>),
    header: &[u8; BLOCK],
    (flag, fallback, physical): (u8, i64, u64),
) -> Result<u64, TarError> {
    if (b'1'..=b'6').contains(&flag) {
        return Err(bad("on an entry that has no data"));
    }
    let (regions, real, took) = match map {
        Map::OldGnu => {
            let real = parse_numeric(&header[483..495]).ok_or_else(|| bad("its real size"))?;
            (old_gnu(r, header)?, real, 0)
        }
        Map::Pax0 { map, blocks } => (pax0_regions(&map, &blocks)?, real_size(&size, fallback)?, 0),
        Map::Pax1 => {
            let (regions, took) = pax1_regions(&mut r.take(physical))?;
            (regions, real_size(&size, fallback)?, took)
        }
    };
    if !valid(&regions, real) {
        return Err(bad("its regions, validateSparseEntries"));
    }
    let data: i64 = regions.iter().map(|(_, length)| length).sum();
    if u64::try_from(data).ok() != Some(physical - took) {
        return Err(bad(&format!(
            "its regions hold {data} bytes, the entry {} (sparseFileReader.Read)",
            physical - took
        )));
    }
    Ok(took)
}

fn real_size(size: &[u8], fallback: i64) -> Result<i64, TarError> {
    match size {
        b"" => Ok(fallback),
        s => int(s).ok_or_else(|| bad("its real size is no number")),
    }
}

/// `readOldGNUSparseMap`: four slots in the header, 21 in each extension block; a slot whose
/// offset starts with NUL ends the block's list.
fn old_gnu(r: &mut impl Read, header: &[u8; BLOCK]) -> Result<Vec<(i64, i64)>, TarError> {
    let mut regions = Vec::new();
    let mut slots = |b: &[u8], count: usize| -> Result<(), TarError> {
        for slot in b.chunks_exact(24).take(count) {
            if slot[0] == 0 {
                break;
            }
            let offset = parse_numeric(&slot[..12]).ok_or_else(|| bad("an offset"))?;
            let length = parse_numeric(&slot[12..24]).ok_or_else(|| bad("a length"))?;
            regions.push((offset, length));
        }
        Ok(())
    };
    slots(&header[386..482], 4)?;
    let mut extended = header[482] != 0;
    let mut block = [0u8; BLOCK];
    while extended {
        if !read_block(r, &mut block)? {
            return Err(TarError::Corrupt(
                "the stream ends in a sparse header".into(),
            ));
        }
        slots(&block[..504], 21)?;
        extended = block[504] != 0;
    }
    Ok(regions)
}

/// `readGNUSparseMap0x1`: `numblocks` pairs in the comma-separated map.
fn pax0_regions(map: &[u8], blocks: &[u8]) -> Result<Vec<(i64, i64)>, TarError> {
    let count = int(blocks)
        .filter(|n| *n >= 0 && n.checked_mul(2).is_some())
        .ok_or_else(|| bad("GNU.sparse.numblocks"))?;
    let values: Vec<&[u8]> = match map {
        b"" => Vec::new(),
        m => m.split(|b| *b == b',').collect(),
    };
    if values.len() as i64 != 2 * count {
        return Err(bad("GNU.sparse.numblocks is not the map's pairs"));
    }
    values
        .chunks_exact(2)
        .map(|p| match (int(p[0]), int(p[1])) {
            (Some(o), Some(l)) => Ok((o, l)),
            _ => Err(bad("a map value that is no number")),
        })
        .collect()
}

/// `readGNUSparseMap1x0`: whole blocks, read only as far as needed, of newline-ended numbers
/// (the count, then offset and length pairs); returns the regions and the bytes taken.
fn pax1_regions(r: &mut impl Read) -> Result<(Vec<(i64, i64)>, u64), TarError> {
    let mut text: Vec<u8> = Vec::new();
    let mut taken = 0u64;
    let mut read_upto = |text: &mut Vec<u8>, lines: i64| -> Result<(), TarError> {
        let mut block = [0u8; BLOCK];
        while (text.iter().filter(|b| **b == b'\n').count() as i64) < lines {
            if fill(r, &mut block)? < BLOCK {
                return Err(bad("the data ends inside the map"));
            }
            taken += BLOCK as u64;
            text.extend_from_slice(&block);
        }
        Ok(())
    };
    read_upto(&mut text, 1)?;
    let mut tokens = text.split(|b| *b == b'\n');
    let count = tokens
        .next()
        .and_then(int)
        .filter(|n| *n >= 0 && n.checked_mul(2).is_some())
        .ok_or_else(|| bad("its count"))?;
    // A map cannot hold more numbers than the data has bytes: the blocks are read first.
    read_upto(&mut text, 1 + 2 * count)?;
    let mut tokens = text.split(|b| *b == b'\n').skip(1);
    let mut regions = Vec::new();
    for _ in 0..count {
        match (tokens.next().and_then(int), tokens.next().and_then(int)) {
            (Some(o), Some(l)) => regions.push((o, l)),
            _ => return Err(bad("a map value that is no number")),
        }
    }
    Ok((regions, taken))
}

/// `validateSparseEntries`: no negative value, no overflow, every region inside `size`, in
/// order and not overlapping.
fn valid(regions: &[(i64, i64)], size: i64) -> bool {
    if size < 0 {
        return false;
    }
    let mut previous_end = 0i64;
    for &(offset, length) in regions {
        if offset < 0 || length < 0 || offset > i64::MAX - length {
            return false;
        }
        let end = offset + length;
        if end > size || previous_end > offset {
            return false;
        }
        previous_end = end;
    }
    true
}
