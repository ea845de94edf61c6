//! The layer check over generated tar, gzip and zstd streams, hostile ones included.

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use super::*;

/// A tar stream of one-byte files; `end` adds the end-of-archive marker.
fn tar_of(names: &[&str], end: bool) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for n in names {
        let mut h = tar::Header::new_gnu();
        h.set_size(1);
        h.set_mode(0o644);
        b.append_data(&mut h, n, &b"x"[..]).unwrap();
    }
    let mut raw = b.into_inner().unwrap();
    if !end {
        raw.truncate(raw.len() - 1024);
    }
    raw
}

/// One raw header block naming `name` (no checks on the name, unlike `tar::Builder`).
fn raw_entry(name: &[u8], size: u64) -> Vec<u8> {
    let mut h = tar::Header::new_ustar();
    h.as_mut_bytes()[..name.len()].copy_from_slice(name);
    h.set_size(size);
    h.set_mode(0o644);
    h.set_entry_type(tar::EntryType::Regular);
    h.set_cksum();
    let mut out = h.as_bytes().to_vec();
    out.resize(512 + (size as usize).div_ceil(512) * 512, b'x');
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

fn zstd(bytes: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(bytes, ruzstd::encoding::CompressionLevel::Fastest)
}

/// A zstd frame: a raw block holding `first`, then `rle_blocks` blocks of 128 KiB of zeros,
/// 4 bytes each (a 32768:1 "bomb").
fn zstd_bomb(first: &[u8], rle_blocks: usize) -> Vec<u8> {
    let block = |kind: u32, size: u32, last: bool| {
        let v = (size << 3) | (kind << 1) | u32::from(last);
        v.to_le_bytes()[..3].to_vec()
    };
    // No content size, no checksum; window 2^17.
    let mut out = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38];
    out.extend(block(0, first.len() as u32, rle_blocks == 0));
    out.extend_from_slice(first);
    for i in 0..rle_blocks {
        out.extend(block(1, 128 * 1024, i + 1 == rle_blocks));
        out.push(0);
    }
    out
}

fn outside(names: &[&str]) -> LayerFormat {
    LayerFormat::NotWindows {
        outside: names.len(),
        examples: names.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn windows_layout_paths() {
    for ok in [
        "Files",
        "Files/",
        "Files/a.exe",
        "./Hives/Software",
        "UtilityVM/Files/x",
        "Files/./a",
        "Files/x/../y",
        "/Files/abs",
        "Files\\Windows\\a.dll",
    ] {
        assert!(is_windows_layout_path(ok), "{ok}");
    }
    for bad in [
        "csi.exe",
        "Filesystem/x",
        "files/a",
        "bin/app",
        "",
        ".",
        "./",
        "Files/../../x",
        "Files/../bin/x",
        "Files/..",
        "Files\\..\\..\\x",
        "..",
        "../Files/x",
    ] {
        assert!(!is_windows_layout_path(bad), "{bad}");
    }
    assert_eq!(
        normalised_components("a//b/./c/"),
        Some(vec!["a", "b", "c"])
    );
    assert_eq!(normalised_components("a/../.."), None);
}

#[test]
fn classifies_layers() {
    let windows = tar_of(&["Files/a.exe", "Hives/Software_Base"], true);
    let linux = tar_of(&["Files/a.exe", "csi.exe", "bin/x", "c", "d"], true);
    let cases: Vec<(&str, Vec<u8>, LayerFormat)> = vec![
        ("plain windows", windows.clone(), LayerFormat::Windows),
        ("gzip windows", gzip(&windows), LayerFormat::Windows),
        ("zstd windows", zstd(&windows), LayerFormat::Windows),
        (
            "plain linux",
            linux.clone(),
            outside(&["csi.exe", "bin/x", "c"]),
        ),
        (
            "gzip linux",
            gzip(&linux),
            outside(&["csi.exe", "bin/x", "c"]),
        ),
        (
            "zstd linux",
            zstd(&linux),
            outside(&["csi.exe", "bin/x", "c"]),
        ),
        (
            "dot-dot escape",
            [raw_entry(b"Files/../../x", 1), vec![0; 1024]].concat(),
            outside(&["Files/../../x"]),
        ),
        (
            "no entries",
            tar_of(&[], true),
            LayerFormat::Skipped("empty layer".into()),
        ),
        (
            "nothing",
            vec![],
            LayerFormat::Skipped("empty layer".into()),
        ),
    ];
    for (what, bytes, want) in cases {
        let got = classify_layer(&bytes);
        let want = match want {
            LayerFormat::NotWindows { examples, .. } if what.contains("linux") => {
                LayerFormat::NotWindows {
                    outside: 4,
                    examples,
                }
            }
            w => w,
        };
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn entries_cannot_hide() {
    let first = tar_of(&["Files/a.exe"], false);
    let second = tar_of(&["csi.exe"], true);
    let whole = |parts: &[Vec<u8>]| parts.concat();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        // The tar stream continues in a second gzip member.
        ("second gzip member", whole(&[gzip(&first), gzip(&second)])),
        ("second zstd frame", whole(&[zstd(&first), zstd(&second)])),
        (
            "after a skippable frame",
            whole(&[
                vec![0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3],
                zstd(&first),
                zstd(&second),
            ]),
        ),
        // A PAX path record renames the next entry.
        ("PAX path", {
            let mut b = tar::Builder::new(Vec::new());
            b.append_pax_extensions([("path", &b"csi.exe"[..])])
                .unwrap();
            let mut h = tar::Header::new_ustar();
            h.set_size(1);
            b.append_data(&mut h, "Files/a.exe", &b"x"[..]).unwrap();
            b.into_inner().unwrap()
        }),
        // Windows reads a backslash as a separator.
        (
            "backslash escape",
            [raw_entry(b"Files\\..\\..\\csi.exe", 1), vec![0; 1024]].concat(),
        ),
    ];
    for (what, bytes) in cases {
        let got = classify_layer(&bytes);
        assert!(
            matches!(&got, LayerFormat::NotWindows { outside: 1, .. }),
            "{what}: {got:?}"
        );
    }
    // What follows the end-of-archive marker is no entry: Go's archive/tar (reader.go,
    // Reader.readHeader) stops there and so does every runtime's layer unpacking.
    for (what, bytes) in [
        (
            "member after the end marker",
            whole(&[gzip(&tar_of(&["Files/a.exe"], true)), gzip(&second)]),
        ),
        (
            "after the end marker",
            whole(&[tar_of(&["Files/a.exe"], true), second.clone()]),
        ),
    ] {
        assert_eq!(classify_layer(&bytes), LayerFormat::Windows, "{what}");
    }
    // A GNU long name (over 100 bytes) is the entry's name.
    let long = format!("bin/{}", "x".repeat(150));
    assert!(matches!(
        classify_layer(&gzip(&tar_of(&[long.as_str(), "Files/a"], true))),
        LayerFormat::NotWindows { outside: 1, examples } if examples[0] == long
    ));
}

#[test]
fn broken_and_hostile_streams_fail_clearly() {
    let mut bad_sum = tar_of(&["Files/a"], true);
    bad_sum[0] ^= 1;
    let mut cut_gzip = gzip(&tar_of(&["Files/a"], true));
    cut_gzip.truncate(cut_gzip.len() - 4);
    let mut huge_pax = raw_entry(b"PaxHeaders/x", 0);
    huge_pax[156] = b'x';
    {
        let mut h = tar::Header::from_byte_slice(&huge_pax[..512]).clone();
        h.set_size(1 << 40);
        h.set_cksum();
        huge_pax[..512].copy_from_slice(h.as_bytes());
    }
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "gzip header only",
            vec![0x1f, 0x8b, 1, 2, 3],
            "cannot read the layer",
        ),
        (
            "zstd magic only",
            vec![0x28, 0xb5, 0x2f, 0xfd],
            "cannot read the layer",
        ),
        ("bad checksum", bad_sum, "bad checksum"),
        ("not tar", b"hello, world".repeat(100), "bad checksum"),
        ("cut gzip", cut_gzip, "cannot read the layer"),
        ("huge PAX record", huge_pax, "PAX or long-name record"),
        (
            "data cut short",
            raw_entry(b"Files/a", 4096)[..1024].to_vec(),
            "before the entry's data does",
        ),
    ];
    for (what, bytes, want) in cases {
        let got = classify_layer(&bytes);
        assert!(
            matches!(&got, LayerFormat::Failed(Problem::Bad(m)) if m.contains(want)),
            "{what}: {got:?}"
        );
    }
}

#[test]
fn decompression_is_bounded_in_size_time_and_by_cancellation() {
    // A file entry claiming 1 TiB of data, whose zeros come from 128 KiB RLE blocks.
    let mut header = tar::Header::new_gnu();
    header.set_path("Files/big").unwrap();
    header.set_size(1 << 40);
    header.set_cksum();
    let bomb = zstd_bomb(header.as_bytes(), 64); // 8 MiB from about 800 bytes
    let small = |max| Limits {
        max_expanded: max,
        ..Limits::for_compressed_size(bomb.len() as u64)
    };
    let got = check_layer(&bomb[..], small(1024 * 1024));
    assert!(
        matches!(&got, LayerFormat::Failed(Problem::Bad(m)) if m.contains("expands past 1048576 decompressed bytes")),
        "{got:?}"
    );
    // Within the size cap, the stream itself is too short for the entry it announces.
    let got = check_layer(&bomb[..], small(1 << 30));
    assert!(
        matches!(&got, LayerFormat::Failed(Problem::Bad(m)) if m.contains("before the entry's data does")),
        "{got:?}"
    );
    let past = Limits {
        deadline: Some(Instant::now() - Duration::from_millis(1)),
        ..small(1 << 30)
    };
    let got = check_layer(&bomb[..], past);
    assert!(
        matches!(&got, LayerFormat::Failed(Problem::Unavailable(m)) if m.contains("--timeout")),
        "{got:?}"
    );
    let cancelled = small(1 << 30);
    cancelled.cancel.store(true, Ordering::Relaxed);
    assert!(matches!(
        check_layer(&bomb[..], cancelled),
        LayerFormat::Failed(Problem::Unavailable(_))
    ));
    // The default limits: the floor, then the ratio.
    assert_eq!(
        Limits::for_compressed_size(10).max_expanded,
        EXPANSION_FLOOR
    );
    assert_eq!(
        Limits::for_compressed_size(1 << 30).max_expanded,
        MAX_EXPANSION_RATIO << 30
    );
}

/// Hands out at most `step` bytes per read, as a network stream may.
struct Trickle<'a> {
    bytes: &'a [u8],
    step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.step).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

impl BufRead for Trickle<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let n = self.step.min(self.bytes.len());
        Ok(&self.bytes[..n])
    }
    fn consume(&mut self, n: usize) {
        self.bytes = &self.bytes[n..];
    }
}

/// The compression is told by the stream's first four bytes however the stream is cut: a
/// reader handing out one byte at a time (a registry's first piece of body may be that short)
/// is read as the gzip or zstd stream it is, never as an uncompressed tar.
#[test]
fn compression_is_sniffed_whatever_the_first_read_gives() {
    let tar = tar_of(&["Files/a", "Hives/b"], true);
    let cases = [
        ("gzip", gzip(&tar)),
        ("zstd", zstd(&tar)),
        ("tar", tar.clone()),
    ];
    for (what, bytes) in &cases {
        for step in [1, 2, 3, 4, 5, 511, 4096] {
            let limits = Limits::for_compressed_size(bytes.len() as u64);
            let trickle = Trickle { bytes, step };
            assert_eq!(
                check_layer(trickle, limits.clone()),
                LayerFormat::Windows,
                "{what}, {step} bytes a read"
            );
            let trickle = Trickle { bytes, step };
            let (format, _) =
                crate::graph::layer::scan::scan_windows_layer(trickle, limits, &Default::default());
            assert_eq!(
                format,
                LayerFormat::Windows,
                "{what}, {step} bytes a fill_buf"
            );
        }
    }
}
