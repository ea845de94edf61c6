//! The bench seeders against a real `docker-registry`: scripts/bench-seed.py (scripts/bench)
//! and scripts/bench-catalog-seed.py (scripts/bench-catalog) push what their reference and URL
//! lists say, each with the registry client, stand-in layers and child images of
//! scripts/benchlib.py, which they share instead of each holding a copy.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{Registry, run_imgcheck, sha256_digest};
use serde_json::Value;

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts")
}

/// Runs `python3 scripts/SCRIPT ARGS`; it must succeed.
fn python(script: &str, args: &[&str]) {
    let out = Command::new("python3")
        .arg(scripts().join(script))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 (apt-get install python3): {e}"));
    assert!(
        out.status.success(),
        "{script} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().map(str::to_string).collect()
}

/// The index `repo:tag` as served, its 6 children (4 Linux, 2 Windows) each served with the
/// bytes of its digest.
fn served_index(registry: &Registry, repo: &str, tag: &str) -> Value {
    let (status, body) = registry.get_manifest(repo, tag);
    assert_eq!(status, 200, "{repo}:{tag}");
    let index: Value = serde_json::from_slice(&body).unwrap();
    let children = index["manifests"].as_array().unwrap();
    let oses: Vec<&str> = children
        .iter()
        .map(|c| c["platform"]["os"].as_str().unwrap())
        .collect();
    assert_eq!(
        oses,
        ["linux", "linux", "linux", "linux", "windows", "windows"]
    );
    for child in children {
        let digest = child["digest"].as_str().unwrap();
        let (status, body) = registry.get_manifest(repo, digest);
        assert_eq!((status, sha256_digest(&body)), (200, digest.to_string()));
    }
    index
}

/// The code the two seeders share is in scripts/benchlib.py only (before, each held its own
/// registry client, digest, JSON, layer and child-image code: about 60 lines twice).
#[test]
fn the_seeders_share_one_library() {
    for script in ["bench-seed.py", "bench-catalog-seed.py"] {
        let text = std::fs::read_to_string(scripts().join(script)).unwrap();
        assert!(text.contains("\nfrom benchlib import "), "{script}");
        for own in [
            "class Registry",
            "def digest(",
            "def dumps(",
            "def layer(",
            "OCI_LAYER = ",
            "\"rootfs\":",
        ] {
            assert!(
                !text.contains(own),
                "{script} has its own {own}: it belongs in scripts/benchlib.py"
            );
        }
    }
}

/// bench-seed.py: N images, each an index of 6 children; the reference list names each, the
/// URL list every manifest and config a check fetches (all served), and imgcheck passes them.
/// bench-catalog-seed.py: REPOS repositories of PUSHED tags over one pool of children; the
/// list names LISTED tags of each, those past PUSHED absent.
#[test]
fn each_seeder_pushes_what_its_lists_name() {
    let registry = Registry::start();
    let host = registry.host();
    let dir = tempfile::tempdir().unwrap();
    let (refs, urls) = (dir.path().join("refs.txt"), dir.path().join("urls.txt"));
    python(
        "bench-seed.py",
        &[&host, "2", refs.to_str().unwrap(), urls.to_str().unwrap()],
    );
    assert_eq!(
        lines(&refs),
        [
            format!("{host}/bench/img0:v1"),
            format!("{host}/bench/img1:v1")
        ]
    );
    let urls = lines(&urls);
    assert_eq!(urls.len(), 2 * (6 * 2 + 1), "{urls:#?}");
    for line in &urls {
        let path = line.split('\t').next().unwrap();
        let (repo, kind, reference) = match path.split_once("/manifests/") {
            Some((repo, r)) => (repo, "manifests", r),
            None => {
                let (repo, r) = path.split_once("/blobs/").unwrap();
                (repo, "blobs", r)
            }
        };
        let repo = repo.strip_prefix("/v2/").unwrap();
        let (status, body) = match kind {
            "manifests" => registry.get_manifest(repo, reference),
            _ => registry.get_blob(repo, reference),
        };
        assert_eq!(status, 200, "{line}");
        if reference.starts_with("sha256:") {
            assert_eq!(sha256_digest(&body), reference, "{line}");
        }
    }
    served_index(&registry, "bench/img1", "v1");
    let out = run_imgcheck(&["verify", &format!("{host}/bench/img1:v1")]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    let catalog = dir.path().join("catalog.txt");
    python(
        "bench-catalog-seed.py",
        &[&host, "2", "2", "3", catalog.to_str().unwrap(), "2"],
    );
    let want: Vec<String> = (0..2)
        .flat_map(|r| (0..3).map(move |t| (r, t)))
        .map(|(r, t)| format!("{host}/cat/r{r}:t{t}"))
        .collect();
    assert_eq!(lines(&catalog), want);
    for repo in ["cat/r0", "cat/r1"] {
        let t0 = served_index(&registry, repo, "t0");
        let t1 = served_index(&registry, repo, "t1");
        assert_eq!(t0["manifests"], t1["manifests"], "{repo}: one pool");
        assert_eq!(t1["annotations"]["org.opencontainers.image.ref.name"], "t1");
        assert_eq!(registry.get_manifest(repo, "t2").0, 404, "{repo}:t2");
    }
}
