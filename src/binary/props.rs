//! Property tests: whatever the bytes (arbitrary, or valid headers with random edits, extreme
//! 32-bit values and cuts), in whatever chunks and whatever size the caller claims, the probe
//! never panics, keeps at most `MAX_KEPT` bytes, and gives a bounded answer — the same one
//! whatever the chunk size.

use super::tests::{elf_arm, go_blob, pe_image};
use super::*;
use proptest::collection::vec;
use proptest::prelude::*;

fn samples() -> [Vec<u8>; 5] {
    let blob = go_blob(
        "go1.21.0",
        "path\tx\nbuild\tGOOS=linux\nbuild\tGOARCH=arm\n",
        2,
    );
    [
        pe_image(0x8664, 3, &["KERNEL32.dll", "NETAPI32.dll"]),
        elf_arm(Some(10), &blob),
        elf_arm(None, &blob),
        b"#!/usr/bin/env python3 -u\nprint()\n".to_vec(),
        super::tests::elf_header(2, 1, 62),
    ]
}

/// Feeds `bytes` in `chunk`-sized pieces to a probe told the file has `claimed` bytes.
fn probe(bytes: &[u8], claimed: u64, chunk: usize) -> Result<BinaryInfo, TestCaseError> {
    let mut probe = Probe::new(claimed);
    for piece in bytes.chunks(chunk) {
        probe.feed(piece);
        prop_assert!(probe.kept() <= MAX_KEPT);
    }
    Ok(probe.finish())
}

fn check(bytes: &[u8], claimed: u64, chunk: usize) -> Result<(), TestCaseError> {
    let info = probe(bytes, claimed, chunk)?;
    prop_assert_eq!(&info, &probe(bytes, claimed, bytes.len().max(1))?);
    prop_assert!(info.incomplete.len() <= 16, "{:?}", info.incomplete);
    prop_assert!(!info.describe().is_empty());
    if let BinaryFormat::Pe(pe) = &info.format {
        prop_assert!(pe.imports.len() <= bytes.len() / 20 + 1);
        prop_assert!(pe.imports.iter().all(|n| n.len() <= 260 * 3));
    }
    for (os, arch, variant) in [("windows", "amd64", None), ("linux", "arm", Some("v6"))] {
        let _ = info.platform_mismatch(os, arch, variant);
    }
    Ok(())
}

proptest! {
    #[test]
    fn arbitrary_bytes(bytes in vec(any::<u8>(), 0..3000), chunk in 1usize..700) {
        check(&bytes, bytes.len() as u64, chunk)?;
    }

    #[test]
    fn edited_headers(
        which in 0usize..5,
        edits in vec((any::<u16>(), any::<u8>()), 0..12),
        words in vec((0u16..0x400, prop_oneof![Just(0u32), Just(u32::MAX), Just(0x7fff_ffff), Just(0x1000), any::<u32>()]), 0..6),
        cut in any::<Option<u16>>(),
        claimed_delta in -64i64..64,
        chunk in 1usize..700,
    ) {
        let mut bytes = samples()[which].clone();
        for (at, value) in edits {
            let i = usize::from(at) % bytes.len();
            bytes[i] = value;
        }
        for (at, value) in words {
            let i = usize::from(at) % bytes.len().saturating_sub(4).max(1);
            if let Some(slot) = bytes.get_mut(i..i + 4) {
                slot.copy_from_slice(&value.to_le_bytes());
            }
        }
        if let Some(cut) = cut {
            bytes.truncate(usize::from(cut) % (bytes.len() + 1));
        }
        let claimed = (bytes.len() as i64 + claimed_delta).max(0) as u64;
        check(&bytes, claimed, chunk)?;
    }
}
