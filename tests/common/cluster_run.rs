//! The setup the node-list tests share (tests/placement.rs, tests/dockershim.rs,
//! tests/nodes.rs): the node lists of fixtures/nodes/, the real manifests of
//! fixtures/realworld/ moved to a test registry (with vsphere-csi-driver's images), a fixture
//! pushed to a registry of its own, the
//! binary run to an expected exit code, and the parts of its reports those tests read.

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use tempfile::TempDir;

use super::{Registry, fixture, fixtures_dir, run_imgcheck};

/// fixtures/nodes/`name` (an `oc get nodes -o json` list), as an argument.
pub fn nodes_file(name: &str) -> String {
    let path = fixtures_dir().join("nodes").join(name);
    path.to_str().unwrap().to_string()
}

/// The real manifest `name` of fixtures/realworld/ with its images moved to `registry`,
/// written into `dir`.
pub fn realworld(dir: &Path, name: &str, registry: &Registry) -> String {
    let text = std::fs::read_to_string(fixtures_dir().join("realworld").join(name)).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text.replace("127.0.0.1:5077", &registry.host())).unwrap();
    path.to_str().unwrap().to_string()
}

/// A registry holding the fixture layout `layout` as `repo:tag`, and that reference.
pub fn registry_with(layout: &str, repo: &str, tag: &str) -> (Registry, String) {
    let registry = Registry::start();
    registry.push_layout(&fixture(layout), repo, tag);
    let reference = registry.docker_ref(repo, tag);
    (registry, reference)
}

/// A registry holding the images of fixtures/realworld/vsphere-csi-driver.yaml (the
/// controller's Linux-only sidecars as `linux-only-list`; the driver, the liveness probe and
/// the node registrar as the fixture layouts named), and that manifest moved to it, written
/// into a temporary folder (removed when the `TempDir` is dropped).
pub fn vsphere_csi(driver: &str, probe: &str, registrar: &str) -> (Registry, TempDir, String) {
    let registry = Registry::start();
    for (layout, repo, tag) in [
        ("linux-only-list", "sig-storage/csi-attacher", "v3.3.0"),
        ("linux-only-list", "sig-storage/csi-resizer", "v1.3.0"),
        ("linux-only-list", "sig-storage/csi-provisioner", "v3.0.0"),
        (
            "linux-only-list",
            "cloud-provider-vsphere/csi/ci/syncer",
            "latest",
        ),
        (driver, "cloud-provider-vsphere/csi/ci/driver", "latest"),
        (probe, "sig-storage/livenessprobe", "v2.4.0"),
        (registrar, "sig-storage/csi-node-driver-registrar", "v2.3.0"),
    ] {
        registry.push_layout(&fixture(layout), repo, tag);
    }
    let dir = tempfile::tempdir().unwrap();
    let manifest = realworld(dir.path(), "vsphere-csi-driver.yaml", &registry);
    (registry, dir, manifest)
}

/// Runs imgcheck with `args`, asserts that it exits with `code` (showing the arguments and
/// both outputs if not), and returns the run.
pub fn run_exiting(args: &[&str], code: i32) -> Output {
    let out = run_imgcheck(args);
    assert_eq!(
        out.status.code(),
        Some(code),
        "imgcheck {args:?}\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The image of a JSON report whose reference contains `repo`.
pub fn image<'a>(doc: &'a Value, repo: &str) -> &'a Value {
    doc["images"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["reference"].as_str().unwrap().contains(repo))
        .unwrap_or_else(|| panic!("no image {repo} in {doc:#}"))
}

/// The message of the first finding of rule `rule` of a JSON report's `image`.
pub fn finding_message<'a>(image: &'a Value, rule: &str) -> &'a str {
    image["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == rule)
        .unwrap_or_else(|| panic!("no {rule} finding in {image:#}"))["message"]
        .as_str()
        .unwrap()
}

/// What the text report of `out` says after its "failing placements" heading.
pub fn failing_placements(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout);
    text.split("failing placements")
        .nth(1)
        .unwrap_or_else(|| panic!("no failing placements in {text}"))
        .to_string()
}
