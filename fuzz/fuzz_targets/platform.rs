//! `--platform` and Windows os.version parsing never panic, and matching a parsed platform
//! against itself never panics either.
#![no_main]

use imgcheck::platform::{Platform, WindowsVersion};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = WindowsVersion::parse(text);
    if let Ok(p) = Platform::parse(text) {
        let _ = p.to_string();
        let _ = p.os_arch();
    }
});
