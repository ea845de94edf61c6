//! Self-test of the registry harness in tests/common: a real docker-registry
//! is started, seeded from the fixture layouts, and inspected over HTTP.

use std::fs;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{self, Registry, fixture, layout_top_digest, sha256_digest};
use serde_json::Value;

/// Intact fixtures whose graph this registry accepts.
const INTACT: &[&str] = &[
    "good",
    "no-os-version",
    "ltsc2022-only",
    "platform-mismatch",
    "docker-list",
    "attestation",
    "foreign-layer",
    "single-arch",
    "legacy-buildah",
    "duplicate-platform",
    "with-ltsc2025",
    "os-features",
];

/// Damaged fixtures: pushable, but each into a registry of its own.
const DAMAGED: &[&str] = &["missing-child", "corrupt-config", "truncated-manifest"];

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("registry served non-JSON manifest")
}

/// Whether the layout holds the true bytes of `digest`.
fn layout_has_intact(layout: &Path, digest: &str) -> bool {
    let hex = digest.strip_prefix("sha256:").unwrap();
    fs::read(layout.join("blobs/sha256").join(hex)).is_ok_and(|b| sha256_digest(&b) == digest)
}

fn layout_object(layout: &Path, digest: &str) -> Option<Vec<u8>> {
    let hex = digest.strip_prefix("sha256:").unwrap();
    fs::read(layout.join("blobs/sha256").join(hex)).ok()
}

/// Fetches `digest` from the registry and everything it references,
/// checking that each object is served (200) with bytes matching its digest.
fn assert_all_fetchable(reg: &Registry, repo: &str, digest: &str) {
    let (status, body) = reg.get_manifest(repo, digest);
    assert_eq!(status, 200, "manifest {digest} not served");
    assert_eq!(
        sha256_digest(&body),
        digest,
        "manifest {digest} served with other bytes"
    );
    let doc = json(&body);
    if let Some(children) = doc["manifests"].as_array() {
        for child in children {
            assert_all_fetchable(reg, repo, child["digest"].as_str().unwrap());
        }
        return;
    }
    let config = std::iter::once(&doc["config"]);
    let layers = doc["layers"].as_array().into_iter().flatten();
    for blob in config.chain(layers) {
        if blob["urls"].as_array().is_some_and(|u| !u.is_empty()) {
            continue; // foreign layer: not in this registry
        }
        let d = blob["digest"].as_str().unwrap();
        let (status, bytes) = reg.get_blob(repo, d);
        assert_eq!(status, 200, "blob {d} of {digest} not served");
        assert_eq!(sha256_digest(&bytes), d, "blob {d} served with other bytes");
    }
}

fn probe_v2(url: &str) -> Result<u16, reqwest::Error> {
    reqwest::blocking::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap()
        .get(url)
        .send()
        .map(|r| r.status().as_u16())
}

#[test]
fn registry_starts_and_answers_v2() {
    let reg = Registry::start();
    let host = reg.host();
    assert_eq!(host, format!("127.0.0.1:{}", reg.port()));
    assert_eq!(probe_v2(&format!("http://{host}/v2/")).unwrap(), 200);
    assert!(reg.storage_root().is_dir());
    // Unknown things are 404, not errors.
    assert_eq!(reg.get_manifest("nothing", "latest").0, 404);
}

#[test]
fn push_good_tag_resolves_to_layout_digest_and_children_are_fetchable() {
    let reg = Registry::start();
    let layout = fixture("good");
    let expected = layout_top_digest(&layout);
    let pushed = reg.push_layout(&layout, "good", "latest");
    assert_eq!(pushed, expected);
    assert_eq!(
        reg.manifest_digest("good", "latest").as_deref(),
        Some(expected.as_str())
    );
    let (status, body) = reg.get_manifest("good", "latest");
    assert_eq!(status, 200);
    assert_eq!(sha256_digest(&body), expected);
    assert_eq!(json(&body)["manifests"].as_array().unwrap().len(), 4);
    assert_all_fetchable(&reg, "good", &expected);
    // Pushing the same layout again (blobs already there) is fine.
    assert_eq!(reg.push_layout(&layout, "good", "again"), expected);
    assert_eq!(
        reg.manifest_digest("good", "again").as_deref(),
        Some(expected.as_str())
    );
}

#[test]
fn every_intact_fixture_pushes_and_is_fully_fetchable() {
    let reg = Registry::start();
    for name in INTACT {
        let layout = fixture(name);
        let pushed = reg.push_layout(&layout, name, "latest");
        assert_eq!(pushed, layout_top_digest(&layout), "{name}");
        assert_eq!(
            reg.manifest_digest(name, "latest").as_deref(),
            Some(pushed.as_str()),
            "{name}: tag does not resolve to the layout's digest"
        );
        assert_all_fetchable(&reg, name, &pushed);
    }
}

#[test]
fn every_damaged_fixture_pushes_into_its_own_registry() {
    for name in DAMAGED {
        let reg = Registry::start();
        let layout = fixture(name);
        let pushed = reg.push_layout(&layout, name, "latest");
        assert_eq!(pushed, layout_top_digest(&layout), "{name}");
        let (status, body) = reg.get_manifest(name, "latest");
        assert_eq!(
            (status, sha256_digest(&body)),
            (200, pushed),
            "{name}: top not served intact"
        );
    }
}

#[test]
#[should_panic(expected = "already stores corrupt bytes")]
fn intact_push_after_damaged_push_in_same_registry_is_refused() {
    // truncated-manifest corrupts the linux/amd64 manifest that single-arch tags.
    let reg = Registry::start();
    reg.push_layout(&fixture("truncated-manifest"), "tm", "latest");
    reg.push_layout(&fixture("single-arch"), "sa", "latest");
}

#[test]
#[should_panic(expected = "would also corrupt it in [\"good\"]")]
fn damaged_push_after_intact_push_in_same_registry_is_refused() {
    let reg = Registry::start();
    reg.push_layout(&fixture("good"), "good", "latest");
    reg.push_layout(&fixture("corrupt-config"), "cc", "latest");
}

#[test]
fn damaged_and_intact_fixtures_coexist_without_shared_objects() {
    // missing-child only deletes links in its own repository.
    let reg = Registry::start();
    let good = reg.push_layout(&fixture("good"), "good", "latest");
    reg.push_layout(&fixture("missing-child"), "mc", "latest");
    assert_all_fetchable(&reg, "good", &good);
}

#[test]
fn missing_child_is_404_while_index_is_served() {
    let reg = Registry::start();
    let layout = fixture("missing-child");
    let top = reg.push_layout(&layout, "mc", "latest");

    let (status, body) = reg.get_manifest("mc", "latest");
    assert_eq!(status, 200, "index must still be served");
    assert_eq!(sha256_digest(&body), top);
    let children: Vec<String> = json(&body)["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["digest"].as_str().unwrap().to_string())
        .collect();
    let (missing, present): (Vec<_>, Vec<_>) = children
        .iter()
        .partition(|d| layout_object(&layout, d).is_none());
    assert!(!missing.is_empty(), "fixture has no missing child");
    for d in &missing {
        assert_eq!(
            reg.get_manifest("mc", d).0,
            404,
            "missing child {d} is served"
        );
    }
    for d in &present {
        assert_all_fetchable(&reg, "mc", d);
    }
}

#[test]
fn corrupt_config_is_served_with_wrong_bytes() {
    let reg = Registry::start();
    let layout = fixture("corrupt-config");
    let top = reg.push_layout(&layout, "cc", "latest");
    let (_, body) = reg.get_manifest("cc", &top);
    let mut corrupt = Vec::new();
    for child in json(&body)["manifests"].as_array().unwrap() {
        let (status, m) = reg.get_manifest("cc", child["digest"].as_str().unwrap());
        assert_eq!(status, 200);
        let config = json(&m)["config"]["digest"].as_str().unwrap().to_string();
        if !layout_has_intact(&layout, &config) {
            corrupt.push(config);
        }
    }
    assert!(!corrupt.is_empty(), "fixture has no corrupt config");
    for d in &corrupt {
        let (status, bytes) = reg.get_blob("cc", d);
        assert_eq!(status, 200, "corrupt config {d} should still be served");
        assert_ne!(
            sha256_digest(&bytes),
            *d,
            "registry served the true bytes of {d}"
        );
        assert_eq!(
            Some(bytes),
            layout_object(&layout, d),
            "served bytes are not the layout's corrupt bytes"
        );
    }
}

#[test]
fn truncated_manifest_is_stored_truncated() {
    let reg = Registry::start();
    let layout = fixture("truncated-manifest");
    let top = reg.push_layout(&layout, "tm", "latest");
    let (status, body) = reg.get_manifest("tm", "latest");
    assert_eq!((status, sha256_digest(&body)), (200, top));
    let damaged: Vec<String> = json(&body)["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["digest"].as_str().unwrap().to_string())
        .filter(|d| !layout_has_intact(&layout, d))
        .collect();
    assert!(!damaged.is_empty(), "fixture has no truncated child");
    for d in &damaged {
        let stored = fs::read(reg.blob_data_path(d)).unwrap();
        assert_eq!(Some(stored), layout_object(&layout, d));
        // The registry cannot parse it any more: it does not serve it as 200.
        let (status, _) = reg.get_manifest("tm", d);
        assert_ne!(status, 200, "truncated manifest {d} served as 200");
    }
}

#[test]
#[should_panic(expected = "fixture schema1")]
fn schema1_is_refused_with_fixture_name() {
    Registry::start().push_layout(&fixture("schema1"), "s1", "latest");
}

#[test]
#[should_panic(expected = "fixture bad-json")]
fn bad_json_is_refused_with_fixture_name() {
    Registry::start().push_layout(&fixture("bad-json"), "bj", "latest");
}

#[test]
#[should_panic(expected = "fixture wrong-media-type")]
fn config_as_top_is_refused_with_fixture_name() {
    Registry::start().push_layout(&fixture("wrong-media-type"), "wmt", "latest");
}

#[test]
fn two_registries_run_side_by_side() {
    let source = Registry::start();
    let mirror = Registry::start();
    assert_ne!(source.port(), mirror.port());
    assert_ne!(source.storage_root(), mirror.storage_root());
    assert_eq!(probe_v2(&source.url("/v2/")).unwrap(), 200);
    assert_eq!(probe_v2(&mirror.url("/v2/")).unwrap(), 200);

    let top = source.push_layout(&fixture("good"), "app", "1");
    assert_eq!(
        mirror.get_manifest("app", "1").0,
        404,
        "registries share state"
    );

    common::skopeo_copy_all(
        &source.docker_ref("app", "1"),
        &mirror.docker_ref("app", "1"),
    );
    assert_eq!(
        mirror.manifest_digest("app", "1").as_deref(),
        Some(top.as_str())
    );
    assert_all_fetchable(&mirror, "app", &top);
}

#[test]
fn skopeo_copies_an_oci_layout_into_a_registry() {
    let reg = Registry::start();
    let layout = fixture("good");
    let src = format!("oci:{}:latest", layout.display());
    common::skopeo_copy_all(&src, &reg.docker_ref("good", "latest"));
    let top = layout_top_digest(&layout);
    assert_eq!(
        reg.manifest_digest("good", "latest").as_deref(),
        Some(top.as_str())
    );
    assert_all_fetchable(&reg, "good", &top);
}

#[test]
#[should_panic(expected = "skopeo copy --all")]
fn skopeo_failure_panics_with_stderr() {
    let reg = Registry::start();
    common::skopeo_copy_all(
        &reg.docker_ref("absent", "latest"),
        &reg.docker_ref("copy", "latest"),
    );
}

#[test]
fn dropped_registry_stops_answering() {
    let reg = Registry::start();
    let url = reg.url("/v2/");
    let dir = reg.storage_root();
    assert_eq!(probe_v2(&url).unwrap(), 200);
    drop(reg);
    assert!(probe_v2(&url).is_err(), "registry still answers after drop");
    assert!(!dir.exists(), "tempdir not removed");
}

#[test]
fn registry_is_stopped_when_a_test_panics() {
    let url = Arc::new(Mutex::new(String::new()));
    let seen = Arc::clone(&url);
    let result = panic::catch_unwind(AssertUnwindSafe(move || {
        let reg = Registry::start();
        *seen.lock().unwrap() = reg.url("/v2/");
        panic!("test failure while the registry runs");
    }));
    assert!(result.is_err());
    let url = url.lock().unwrap().clone();
    assert!(url.starts_with("http://127.0.0.1:"));
    assert!(probe_v2(&url).is_err(), "registry survived the panic");
}

#[test]
fn imgcheck_binary_is_built() {
    let cmd = common::imgcheck();
    assert!(Path::new(cmd.get_program()).is_file());
}
