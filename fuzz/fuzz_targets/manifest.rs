//! Manifest, index and config parsing never panic, under every claimed media type.
#![no_main]

use imgcheck::manifest::{ACCEPTED_MANIFEST_TYPES, ImageConfig, Manifest, check_unique_keys};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = check_unique_keys(data);
    let _ = Manifest::parse(data, None);
    for t in ACCEPTED_MANIFEST_TYPES {
        let _ = Manifest::parse(data, Some(t));
    }
    let _ = ImageConfig::parse(data);
});
