//! The tar walk against Go's `archive/tar` (golang/go `src/archive/tar/reader.go`), one row
//! per trick: each row names the function of `reader.go` whose behaviour it pins down.

use super::*;

/// A USTAR header block (magic `ustar\0`, version `00`) for `name`, type `flag`, `size`.
fn header(name: &str, flag: u8, size: u64) -> [u8; BLOCK] {
    let mut b = [0u8; BLOCK];
    b[..name.len()].copy_from_slice(name.as_bytes());
    b[100..107].copy_from_slice(b"0000644");
    b[108..115].copy_from_slice(b"0000000");
    b[116..123].copy_from_slice(b"0000000");
    b[124..135].copy_from_slice(format!("{size:011o}").as_bytes());
    b[136..147].copy_from_slice(b"00000000000");
    b[156] = flag;
    b[257..263].copy_from_slice(b"ustar\0");
    b[263..265].copy_from_slice(b"00");
    seal(b)
}

/// Writes the header's checksum (unsigned sum, the field counted as spaces).
fn seal(mut b: [u8; BLOCK]) -> [u8; BLOCK] {
    b[148..156].copy_from_slice(b"        ");
    let sum: u32 = b.iter().map(|x| u32::from(*x)).sum();
    b[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
    b
}

/// A header followed by its data, padded to whole blocks.
fn with_data(h: [u8; BLOCK], data: &[u8]) -> Vec<u8> {
    let mut out = h.to_vec();
    out.extend_from_slice(data);
    out.resize(BLOCK + data.len().div_ceil(BLOCK) * BLOCK, 0);
    out
}

fn file(name: &str) -> Vec<u8> {
    with_data(header(name, b'0', 1), b"x")
}

/// PAX records (`"%d %s=%s\n"`), the length counting itself.
fn pax_records(records: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in records {
        let body = format!(" {k}={v}\n");
        let mut n = body.len() + 1;
        while format!("{n}{body}").len() != n {
            n += 1;
        }
        out.extend_from_slice(format!("{n}{body}").as_bytes());
    }
    out
}

fn special(flag: u8, data: &[u8]) -> Vec<u8> {
    with_data(header("meta", flag, data.len() as u64), data)
}

fn zero() -> Vec<u8> {
    vec![0; BLOCK]
}

/// The entries' names (with `/dir` after a directory), or the error.
fn walk(bytes: &[u8]) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    for_each_entry(&mut &bytes[..], |e, _| {
        let name = String::from_utf8_lossy(e.name).into_owned();
        names.push(if e.flag == b'5' {
            format!("{name} /dir")
        } else {
            name
        });
        Ok(())
    })
    .map(|_| names)
    .map_err(|e| e.to_string())
}

type Row = (
    &'static str,
    Vec<u8>,
    Result<Vec<&'static str>, &'static str>,
);

fn end_of_archive_rows() -> Vec<Row> {
    vec![
        (
            "Reader.readHeader: two zero blocks are the end (io.EOF): an entry after them is never read",
            [file("a"), zero(), zero(), file("decoy")].concat(),
            Ok(vec!["a"]),
        ),
        (
            "Reader.readHeader: after the end marker, bytes that are no header are not read either",
            [file("a"), zero(), zero(), b"not a header".repeat(50)].concat(),
            Ok(vec!["a"]),
        ),
        (
            "Reader.readHeader: one zero block then the end of the stream is a clean end",
            [file("a"), zero()].concat(),
            Ok(vec!["a"]),
        ),
        (
            "Reader.readHeader: one zero block then a header is ErrHeader",
            [file("a"), zero(), file("decoy"), zero(), zero()].concat(),
            Err("a zero block followed by a header"),
        ),
        (
            "Reader.next (tryReadFull): the stream ending in the last entry's padding is a clean end",
            file("a")[..BLOCK + 100].to_vec(),
            Ok(vec!["a"]),
        ),
    ]
}

fn header_rows() -> Vec<Row> {
    let mut prefix_v = header("image-references", b'0', 0);
    prefix_v[345..362].copy_from_slice(b"release-manifests");
    prefix_v[263..265].copy_from_slice(b"  ");
    let mut star = header("n", b'0', 0);
    star[345..476].fill(b'p');
    star[476..487].copy_from_slice(b"00000000000");
    star[488..499].copy_from_slice(b"00000000000");
    star[508..512].copy_from_slice(b"tar\0");
    let mut gnu_fallback = header("image-references", b'0', 0);
    gnu_fallback[257..265].copy_from_slice(b"ustar  \0");
    gnu_fallback[345..362].copy_from_slice(b"release-manifests");
    let mut bad_mode = header("a", b'0', 0);
    bad_mode[100..107].copy_from_slice(b"0000899");
    let mut plus_size = header("a", b'0', 0);
    plus_size[124..135].copy_from_slice(b"+0000000000");
    let mut spaced_sum = header("a", b'0', 0);
    let sum = seal(spaced_sum);
    spaced_sum[148..156].copy_from_slice(&[
        b' ', b' ', sum[148], sum[149], sum[150], sum[151], sum[152], sum[153],
    ]);
    let mut dir = header("d/", 0, BLOCK as u64).to_vec();
    dir.extend_from_slice(&header("inside-the-data", b'0', 0));
    let mut sparse_ustar = header("s", b'S', 0);
    sparse_ustar = seal(sparse_ustar);
    vec![
        (
            "Reader.readHeader (block.getFormat): magic ustar\\0 is USTAR whatever the version: the prefix counts",
            [seal(prefix_v).to_vec(), zero(), zero()].concat(),
            Ok(vec!["release-manifests/image-references"]),
        ),
        (
            "Reader.readHeader: a STAR header's prefix is 131 bytes, then atime and ctime",
            [seal(star).to_vec(), zero(), zero()].concat(),
            Ok(vec![Box::leak(
                format!("{}/n", "p".repeat(131)).into_boxed_str(),
            )]),
        ),
        (
            "Reader.readHeader: a GNU header whose atime does not parse reads the prefix (Go 1.8 writers)",
            [seal(gnu_fallback).to_vec(), zero(), zero()].concat(),
            Ok(vec!["release-manifests/image-references"]),
        ),
        (
            "Reader.readHeader (parser.parseNumeric): a mode that is not octal is ErrHeader",
            [seal(bad_mode).to_vec(), zero(), zero()].concat(),
            Err("not an octal number"),
        ),
        (
            "parser.parseOctal (strconv.ParseUint): a size with a sign is ErrHeader",
            [seal(plus_size).to_vec(), zero(), zero()].concat(),
            Err("not an octal number"),
        ),
        (
            "block.getFormat (parser.parseOctal): a checksum padded with leading spaces is read",
            [spaced_sum.to_vec(), zero(), zero()].concat(),
            Ok(vec!["a"]),
        ),
        (
            "Reader.next: type NUL with a trailing slash is a directory, which has no data",
            [dir, zero(), zero()].concat(),
            Ok(vec!["d/ /dir", "inside-the-data"]),
        ),
        (
            "Reader.readOldGNUSparseMap: type S outside the GNU format is ErrHeader",
            [sparse_ustar.to_vec(), zero(), zero()].concat(),
            Err("GNU sparse"),
        ),
    ]
}

fn record_rows() -> Vec<Row> {
    vec![
        (
            "Reader.next: a GNU long name wins over a PAX path",
            [
                special(b'x', &pax_records(&[("path", "pax")])),
                special(b'L', b"long\0"),
                file("c"),
            ]
            .concat(),
            Ok(vec!["long"]),
        ),
        (
            "Reader.next (paxHdrs = parsePAX): a second PAX header replaces the first",
            [
                special(b'x', &pax_records(&[("path", "decoy")])),
                special(b'x', &pax_records(&[("mtime", "1")])),
                file("c"),
            ]
            .concat(),
            Ok(vec!["c"]),
        ),
        (
            "Reader.next: a global header is an entry of its own; records pending before it are dropped",
            [
                special(b'x', &pax_records(&[("path", "decoy")])),
                special(b'g', &pax_records(&[("comment", "x")])),
                file("c"),
            ]
            .concat(),
            Ok(vec!["c"]),
        ),
        (
            "mergePAX: an empty value keeps the header's own name",
            [special(b'x', &pax_records(&[("path", "")])), file("c")].concat(),
            Ok(vec!["c"]),
        ),
        (
            "Reader.readGNUSparsePAXHeaders: GNU.sparse.name is the name of a PAX sparse file",
            [
                special(
                    b'x',
                    &pax_records(&[
                        ("path", "decoy"),
                        ("GNU.sparse.major", "1"),
                        ("GNU.sparse.minor", "0"),
                        ("GNU.sparse.name", "real"),
                        ("GNU.sparse.realsize", "0"),
                    ]),
                ),
                with_data(header("c", b'0', BLOCK as u64), b"0\n"),
            ]
            .concat(),
            Ok(vec!["real"]),
        ),
        (
            "mergePAX (parsePAXTime): an mtime that is not a time is ErrHeader",
            [special(b'x', &pax_records(&[("mtime", "soon")])), file("c")].concat(),
            Err("bad PAX record"),
        ),
        (
            "parsePAXRecord: a record whose length is wrong is ErrHeader",
            [special(b'x', b"99 path=a\n"), file("c")].concat(),
            Err("bad PAX record"),
        ),
        (
            "Reader.next (parser.parseString): a GNU long name ends at its first NUL",
            [special(b'L', b"long\0junk"), file("c")].concat(),
            Ok(vec!["long"]),
        ),
    ]
}

/// A PAX sparse file of the 0.x formats: `records` then a regular header `s` with `data`.
fn pax_sparse(records: &[(&str, &str)], data: &[u8]) -> Vec<u8> {
    [
        special(b'x', &pax_records(records)),
        with_data(header("s", b'0', data.len() as u64), data),
    ]
    .concat()
}

/// A PAX sparse file of format 1.0 (its map leads its data) of real size `size`.
fn pax_sparse_1x0(size: &str, data: &[u8]) -> Vec<u8> {
    let records = [
        ("GNU.sparse.major", "1"),
        ("GNU.sparse.minor", "0"),
        ("GNU.sparse.name", "s"),
        ("GNU.sparse.realsize", size),
    ];
    [
        special(b'x', &pax_records(&records)),
        with_data(header("p", b'0', data.len() as u64), data),
    ]
    .concat()
}

/// An old GNU sparse header (type `S`, magic `ustar  `): `map` in its own four slots (more in
/// one extension block), real size `size`, then `data`.
fn old_gnu_sparse(map: &[(u64, u64)], size: u64, data: &[u8]) -> Vec<u8> {
    let mut h = header("s", b'S', data.len() as u64);
    h[257..265].copy_from_slice(b"ustar  \0");
    h[345..369].fill(0);
    let slot = |b: &mut [u8], at: usize, (offset, length): (u64, u64)| {
        b[at..at + 11].copy_from_slice(format!("{offset:011o}").as_bytes());
        b[at + 12..at + 23].copy_from_slice(format!("{length:011o}").as_bytes());
    };
    for (i, m) in map.iter().take(4).enumerate() {
        slot(&mut h, 386 + 24 * i, *m);
    }
    h[483..494].copy_from_slice(format!("{size:011o}").as_bytes());
    let mut ext = [0u8; BLOCK];
    for (i, m) in map.iter().skip(4).enumerate() {
        slot(&mut ext, 24 * i, *m);
    }
    h[482] = u8::from(map.len() > 4);
    let mut out = seal(h).to_vec();
    if map.len() > 4 {
        out.extend_from_slice(&ext);
    }
    out.extend_from_slice(&with_data([0; BLOCK], data)[BLOCK..]);
    out
}

/// PAX records of a 0.1 sparse file `s`: its map, pairs and real size.
fn v01(
    map: &'static str,
    blocks: &'static str,
    size: &'static str,
) -> [(&'static str, &'static str); 6] {
    [
        ("GNU.sparse.major", "0"),
        ("GNU.sparse.minor", "1"),
        ("GNU.sparse.name", "s"),
        ("GNU.sparse.size", size),
        ("GNU.sparse.numblocks", blocks),
        ("GNU.sparse.map", map),
    ]
}

/// Issue 22: sparse maps are checked as Go's `Reader.handleSparseFile` checks them (a map on
/// a header-only type, or one `validateSparseEntries` in `common.go` refuses, is ErrHeader),
/// and the data must be what the map says (`sparseFileReader.Read`: errMissData,
/// errUnrefData), else a runtime cannot unpack the layer.
fn sparse_rows() -> Vec<Row> {
    vec![
        (
            "readGNUSparseMap0x1 + validateSparseEntries: a 0.1 map inside the real size is read",
            pax_sparse(&v01("0,1,4,1", "2", "10"), b"ab"),
            Ok(vec!["s"]),
        ),
        (
            "validateSparseEntries: a region past the real size is ErrHeader",
            pax_sparse(&v01("0,10", "1", "5"), &[1; 10]),
            Err("sparse map"),
        ),
        (
            "validateSparseEntries: regions out of order (or overlapping) are ErrHeader",
            pax_sparse(&v01("5,2,0,2", "2", "10"), b"abcd"),
            Err("sparse map"),
        ),
        (
            "validateSparseEntries: a negative offset is ErrHeader",
            pax_sparse(&v01("-1,1", "1", "10"), b"a"),
            Err("sparse map"),
        ),
        (
            "readGNUSparseMap0x1: numblocks that is not the map's pairs is ErrHeader",
            pax_sparse(&v01("0,1", "2", "10"), b"a"),
            Err("sparse map"),
        ),
        (
            "readGNUSparseMap0x1: a map value that is not a number is ErrHeader",
            pax_sparse(&v01("0,x", "1", "10"), b"a"),
            Err("sparse map"),
        ),
        (
            "readGNUSparsePAXHeaders: a real size that is not a number is ErrHeader",
            pax_sparse(&v01("0,1", "1", "ten"), b"a"),
            Err("sparse map"),
        ),
        (
            "parsePAX (0.0 offset/numbytes records) + validateSparseEntries: past the size",
            pax_sparse(
                &[
                    ("GNU.sparse.size", "2"),
                    ("GNU.sparse.numblocks", "1"),
                    ("GNU.sparse.offset", "0"),
                    ("GNU.sparse.numbytes", "3"),
                ],
                b"abc",
            ),
            Err("sparse map"),
        ),
    ]
}

/// [`sparse_rows`] continued: maps on header-only types, data against the map, the 1.0
/// and old GNU formats.
fn sparse_rows_2() -> Vec<Row> {
    let five: Vec<(u64, u64)> = (0..5).map(|i| (10 * i, 1)).collect();
    vec![
        (
            "Reader.handleSparseFile: a sparse map on a header-only type (a link) is ErrHeader",
            [
                special(b'x', &pax_records(&v01("0,1", "1", "10"))),
                header("l", b'2', 0).to_vec(),
            ]
            .concat(),
            Err("sparse map"),
        ),
        (
            "sparseFileReader.Read: less data than the map names is errMissData",
            pax_sparse(&v01("0,4", "1", "10"), b"a"),
            Err("sparse map"),
        ),
        (
            "sparseFileReader.Read: more data than the map names is errUnrefData",
            pax_sparse(&v01("0,1", "1", "10"), b"abc"),
            Err("sparse map"),
        ),
        (
            "readGNUSparseMap1x0: a 1.0 map in the data, inside the real size",
            pax_sparse_1x0(
                "8",
                &[b"1\n2\n3\n".to_vec(), vec![0; 506], b"abc".to_vec()].concat(),
            ),
            Ok(vec!["s"]),
        ),
        (
            "readGNUSparseMap1x0 + validateSparseEntries: a 1.0 region past the real size",
            pax_sparse_1x0(
                "4",
                &[b"1\n0\n8\n".to_vec(), vec![0; 506], vec![1; 8]].concat(),
            ),
            Err("sparse map"),
        ),
        (
            "readGNUSparseMap1x0: a count that is not a number is ErrHeader",
            pax_sparse_1x0("4", &[b"x\n".to_vec(), vec![0; 510]].concat()),
            Err("sparse map"),
        ),
        (
            "readGNUSparseMap1x0 (mustReadFull): a map longer than the data is an error",
            pax_sparse_1x0("4", b"1\n0\n"),
            Err("sparse map"),
        ),
        (
            "readOldGNUSparseMap: a type S map, four slots and an extension block, is read",
            old_gnu_sparse(&five, 50, b"abcde"),
            Ok(vec!["s"]),
        ),
        (
            "readOldGNUSparseMap + validateSparseEntries: a type S region past the real size",
            old_gnu_sparse(&[(0, 20)], 10, &[1; 20]),
            Err("sparse map"),
        ),
    ]
}

#[test]
fn reads_tar_as_go_archive_tar_does() {
    let rows = [
        end_of_archive_rows(),
        header_rows(),
        record_rows(),
        sparse_rows(),
        sparse_rows_2(),
    ]
    .concat();
    let mut wrong = Vec::new();
    for (what, bytes, want) in rows {
        let got = walk(&bytes);
        let ok = match (&got, &want) {
            (Ok(names), Ok(want)) => names == want,
            (Err(e), Err(want)) => e.contains(want),
            _ => false,
        };
        if !ok {
            wrong.push(format!("{what}: got {got:?}, want {want:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Issue 34, item 7: the tar walk on random and mutated archives never panics, ends (each
/// header read moves the reader forward), and never reports more entries than headers it
/// could have read; a well-formed archive of files keeps its names whatever trails it.
mod properties {
    use proptest::prelude::*;

    use super::*;

    /// A small well-formed archive of `names` (one byte of data each), then two zero blocks.
    fn archive(names: &[String]) -> Vec<u8> {
        let mut out: Vec<u8> = names.iter().flat_map(|n| file(n)).collect();
        out.extend(zero());
        out.extend(zero());
        out
    }

    fn names() -> impl Strategy<Value = Vec<String>> {
        proptest::collection::vec("[a-z][a-z0-9./_-]{0,40}", 0..6)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4 * BLOCK)) {
            if let Ok(entries) = walk(&bytes) {
                prop_assert!(entries.len() <= bytes.len() / BLOCK);
            }
        }

        #[test]
        fn mutated_archives_never_panic(
            names in names(),
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..24),
            cut in any::<usize>(),
        ) {
            let mut bytes = archive(&names);
            for (at, value) in flips {
                let i = at % bytes.len();
                bytes[i] = value;
            }
            bytes.truncate(cut % (bytes.len() + 1));
            if let Ok(entries) = walk(&bytes) {
                prop_assert!(entries.len() <= bytes.len() / BLOCK);
            }
        }

        #[test]
        fn well_formed_archives_keep_their_names(names in names()) {
            let got = walk(&archive(&names)).map_err(TestCaseError::fail)?;
            prop_assert_eq!(got, names);
        }
    }
}
