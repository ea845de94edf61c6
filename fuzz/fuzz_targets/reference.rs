//! Reference parsing never panics, and a parsed reference prints as text that parses back to
//! the same reference.
#![no_main]

use imgcheck::reference::ImageRef;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(r) = text.parse::<ImageRef>() {
        let shown = r.to_string();
        let again: ImageRef = shown
            .parse()
            .unwrap_or_else(|e| panic!("{text:?} parsed, but its display {shown:?} does not: {e}"));
        assert_eq!(again, r, "{text:?} → {shown:?}");
    }
});
