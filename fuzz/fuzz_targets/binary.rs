//! The executable header probe never panics or hangs, whatever the bytes and the chunking:
//! it keeps at most `MAX_KEPT` bytes, gives the same answer as one whole feed, and every
//! answer can be described and checked against a platform.
#![no_main]

use imgcheck::binary::{Format, MAX_KEPT, Probe, dll, parse};
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeSet;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the chunk size; the rest is the file.
    let (chunk, file) = match data.split_first() {
        Some((c, rest)) => (usize::from(*c).max(1), rest),
        None => (1, data),
    };
    let mut probe = Probe::new(file.len() as u64);
    for piece in file.chunks(chunk) {
        probe.feed(piece);
        assert!(probe.kept() <= MAX_KEPT);
    }
    let info = probe.finish();
    assert_eq!(info, parse(file));
    let _ = info.describe();
    let _ = info.platform_mismatch("linux", "arm", Some("v6"));
    let _ = info.platform_mismatch("windows", "amd64", None);
    if let Format::Pe(pe) = &info.format {
        let _ = dll::missing(&pe.imports, &BTreeSet::new());
    }
});
