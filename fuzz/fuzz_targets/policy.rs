//! Policy parsing never panics; a policy that parses prints as YAML that parses again.
#![no_main]

use imgcheck::policy::Policy;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(p) = Policy::parse(text, "fuzz") {
        let yaml = p.to_yaml();
        if let Err(e) = Policy::parse(&yaml, "fuzz-again") {
            panic!("{text:?} parsed, but its YAML does not: {e}\n{yaml}");
        }
    }
});
