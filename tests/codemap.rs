//! README's code map against `src/`: every top-level module (each `src/X.rs` and each folder
//! `src/X/`) is named in the "Layout of the code" table, so a new room cannot go unmapped, and
//! the table names no module that is gone.

use std::collections::BTreeSet;
use std::path::Path;

/// README's "Layout of the code" section, up to the next section.
fn code_map() -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("read README.md");
    let start = readme
        .find("\n## Layout of the code\n")
        .expect("README.md: a `## Layout of the code` section");
    let section = &readme[start + 1..];
    let end = section[3..].find("\n## ").map_or(section.len(), |e| e + 3);
    section[..end].to_string()
}

/// `src/X.rs` and `src/X/` for every file and folder directly under `src/`.
fn top_level_modules() -> BTreeSet<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    std::fs::read_dir(&src)
        .expect("read src/")
        .map(|entry| entry.expect("src/ entry").path())
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?.to_string();
            if path.is_dir() {
                Some(format!("src/{name}/"))
            } else {
                name.ends_with(".rs").then(|| format!("src/{name}"))
            }
        })
        .collect()
}

#[test]
fn every_top_level_module_is_in_the_readme_code_map() {
    let map = code_map();
    let modules = top_level_modules();
    assert!(modules.contains("src/lib.rs") && modules.contains("src/cli/"));
    let missing: Vec<&String> = modules
        .iter()
        .filter(|m| !map.contains(&format!("`{m}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "README.md's code map (## Layout of the code) lacks {missing:?}: add a row naming \
         each with one line on what it holds"
    );
}

#[test]
fn the_code_map_names_no_module_that_is_gone() {
    let map = code_map();
    let modules = top_level_modules();
    let gone: Vec<String> = map
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|name| {
            // `src/X.rs` or `src/X/`: a top-level module, not a file inside one.
            name.strip_prefix("src/")
                .is_some_and(|inside| match inside.split_once('/') {
                    None => inside.ends_with(".rs"),
                    Some((_, rest)) => rest.is_empty(),
                })
        })
        .filter(|name| !modules.contains(*name))
        .map(str::to_string)
        .collect();
    assert!(
        gone.is_empty(),
        "README.md's code map names {gone:?}, not in src/"
    );
}

/// Issue 34, item 8: the Rust version `Cargo.toml` declares (`rust-version`) is the one the
/// README asks for, and the Containerfile builds with a toolchain at least as new.
#[test]
fn the_declared_rust_version_is_the_readmes_and_the_containerfiles_meets_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |name: &str| std::fs::read_to_string(root.join(name)).expect(name);
    let manifest = read("Cargo.toml");
    let declared = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .expect("Cargo.toml declares rust-version")
        .trim_matches('"')
        .to_string();
    assert!(
        read("README.md").contains(&format!("Rust {declared} or later")),
        "README.md must ask for Rust {declared} or later"
    );
    let containerfile = read("Containerfile");
    let image = containerfile
        .lines()
        .find_map(|l| l.split("docker.io/library/rust:").nth(1))
        .expect("the Containerfile builds FROM docker.io/library/rust:VERSION-…");
    let version = |v: &str| -> Vec<u32> {
        v.split(['.', '-'])
            .take(2)
            .map(|n| n.parse().expect("a version number"))
            .collect()
    };
    assert!(
        version(image) >= version(&declared),
        "the Containerfile's rust:{image} is older than rust-version {declared}"
    );
}
