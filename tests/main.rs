//! The integration tests, built as one test binary (`cargo test --test integration`; one area:
//! `cargo test --test integration auth::`). Each file under `tests/` is a module of it, so the
//! imgcheck library and the test dependencies are linked once, not once per file, and the
//! registry harness in [`common`] is compiled once. Every test still starts its own
//! `docker-registry` (see `common`), so sharing the process shares no registry state.
//!
//! `Cargo.toml` sets `autotests = false` and names this file as the only integration test
//! target: a new file under `tests/` must be declared here, which
//! [`every_test_file_is_a_module_here`] checks.

mod common;

mod assemble;
mod auth;
mod batch;
mod binary;
mod build;
mod cluster;
mod codemap;
mod content;
mod csiproxy;
mod deep;
mod dockershim;
mod driver;
mod faults;
mod gate;
mod generate;
mod harness;
mod hostile;
mod junit;
mod mirror;
mod mirror_signatures;
mod nodes;
mod ocmirror;
mod output;
mod placement;
mod realpull;
mod release;
mod rules;
mod sandbox;
mod schema;
mod seeders;
mod selection;
mod signature_policy;
mod signatures;
mod stream;
mod synopsis;
mod tekton;
mod transport;
mod upgrade;
mod verify;
mod wmco;

/// Cargo no longer turns each `tests/*.rs` into a binary of its own (`autotests = false`), so
/// a file not declared above would be silently left out of the suite.
#[test]
fn every_test_file_is_a_module_here() {
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let root = std::fs::read_to_string(tests.join("main.rs")).expect("read tests/main.rs");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&tests).expect("read tests/") {
        let path = entry.expect("tests/ entry").path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let declared = if path.extension().is_some_and(|e| e == "rs") {
            stem == "main" || root.contains(&format!("\nmod {stem};\n"))
        } else {
            // a directory is a module only if it has a mod.rs (like common/)
            !path.join("mod.rs").exists() || root.contains(&format!("\nmod {stem};\n"))
        };
        if !declared {
            missing.push(path.display().to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "not declared in tests/main.rs: {missing:?}"
    );
}
