//! Issue 37, item 4: the upgrade gate. `verify --nodes CURRENT --upgrade` (the version from
//! `--from-release`, or `--upgrade-to`) judges the images on the nodes of
//! fixtures/nodes/ocp-wmco.json (Windows nodes on containerd 1.7.27, WMCO 10.18) as they are and
//! as WMCO's upgrade leaves them, and says which nodes change profile and which verdicts
//! change.
//!
//! The list that passes under containerd 1.7 and fails under 2.3 is the `attestation` fixture
//! with `win32k` twice in the WS2022 entry's `os.features` (list and config agree):
//! containerd 2.3 (containerd/platforms rc.4 `matchComparer.Match`) sets aside only the first
//! `win32k` before comparing features, so the entry matches no host; 1.7 never reads
//! `os.features` (`platforms/defaults_windows.go` `windowsmatcher.Match`).

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::cluster_run::nodes_file;
use crate::common::release::push_release;
use crate::common::{Registry, fixture, imgcheck, sha256_digest};
use crate::schema::assert_conforms;
use crate::selection::edited_layout;

/// The WS2022 entry of the `attestation` fixture.
const WS2022: &str = "sha256:8888abdb127247b9029b295a056efda3ab86a1b275850c397f6d51b1be2b1b58";

/// Writes `value` as a blob of `blobs`; its digest and size.
fn blob(blobs: &Path, value: &Value) -> (String, usize) {
    let bytes = serde_json::to_vec(value).unwrap();
    let digest = sha256_digest(&bytes);
    fs::write(blobs.join(digest.trim_start_matches("sha256:")), &bytes).unwrap();
    (digest, bytes.len())
}

/// The `attestation` layout with the WS2022 entry's `os.features` (in the list and in its
/// config) set to `features`.
fn with_features(tmp: &Path, features: Value) -> PathBuf {
    let to = edited_layout(tmp, "features", |_| {});
    let blobs = to.join("blobs").join("sha256");
    let read = |digest: &str| -> Value {
        let path = blobs.join(digest.trim_start_matches("sha256:"));
        serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
    };
    let mut top: Value = serde_json::from_slice(&fs::read(to.join("index.json")).unwrap()).unwrap();
    let mut inner = read(top["manifests"][0]["digest"].as_str().unwrap());
    let entries = inner["manifests"].as_array_mut().unwrap();
    let entry = entries.iter_mut().find(|e| e["digest"] == WS2022).unwrap();
    let mut manifest = read(WS2022);
    let mut config = read(manifest["config"]["digest"].as_str().unwrap());
    config["os.features"] = features.clone();
    let (digest, size) = blob(&blobs, &config);
    manifest["config"]["digest"] = json!(digest);
    manifest["config"]["size"] = json!(size);
    let (digest, size) = blob(&blobs, &manifest);
    entry["digest"] = json!(digest);
    entry["size"] = json!(size);
    entry["platform"]["os.features"] = features;
    let (digest, size) = blob(&blobs, &inner);
    top["manifests"][0]["digest"] = json!(digest);
    top["manifests"][0]["size"] = json!(size);
    fs::write(to.join("index.json"), serde_json::to_vec(&top).unwrap()).unwrap();
    to
}

/// `verify --format json` of `args` (the sandbox image left out: no network): exit code,
/// document, standard error.
fn verify(args: &[&str]) -> (i32, Value, String) {
    let out = imgcheck()
        .args(["verify", "--sandbox-image", "none", "--format", "json"])
        .args(args)
        .output()
        .expect("imgcheck runs");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    let doc = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().expect("exit code"), doc, stderr)
}

#[test]
fn an_upgrade_to_containerd_2_3_fails_a_list_that_passes_under_1_7() {
    let tmp = tempfile::tempdir().unwrap();
    let layout = with_features(tmp.path(), json!(["win32k", "win32k"]));
    let reference = format!("oci:{}", layout.display());
    let nodes = nodes_file("ocp-wmco.json");
    let (code, doc, err) = verify(&["--nodes", &nodes, &reference]);
    assert_eq!(code, 0, "as the nodes are today: {doc:#}\n{err}");
    assert!(doc.get("upgrade").is_none(), "{doc:#}");

    let (code, doc, err) = verify(&[
        "--nodes",
        &nodes,
        "--upgrade-to",
        "containerd-2.3",
        &reference,
    ]);
    assert_eq!(code, 1, "after the upgrade: {doc:#}\n{err}");
    assert_conforms("imagesReport", "verify --upgrade-to", &doc);
    let upgrade = &doc["upgrade"];
    assert_eq!(
        upgrade["target"]["profile"], "containerd-2.3",
        "{upgrade:#}"
    );
    assert_eq!(upgrade["target"]["from"], "--upgrade-to", "{upgrade:#}");
    let rows: Vec<(&str, &str, &str)> = upgrade["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let p = c["platform"].as_str().unwrap();
            (
                p,
                c["before"].as_str().unwrap(),
                c["after"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (
                "windows/amd64:10.0.17763",
                "containerd-1.7",
                "containerd-2.3"
            ),
            (
                "windows/amd64:10.0.20348",
                "containerd-1.7",
                "containerd-2.3"
            ),
            (
                "windows/amd64:10.0.26100",
                "containerd-1.7",
                "containerd-2.3"
            ),
        ]
    );
    assert_eq!(
        upgrade["nodes"][1]["reported"],
        json!(["containerd://1.7.27"])
    );
    // The WS2019 entry has no os.features: its row is ok before and after, not listed.
    let changed: Vec<(&str, &str, &str)> = upgrade["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            let n = v["nodes"][0].as_str().unwrap();
            (
                n,
                v["before_status"].as_str().unwrap(),
                v["after_status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        changed,
        [
            ("winworker-7xk2p", "ok", "no-match"),
            ("winworker-m5q8d", "ok", "no-match")
        ]
    );
    // The rows of today are still judged: the nodes run the new images before WMCO
    // reaches them.
    let rows: Vec<(&str, &str, &str)> = doc["images"][0]["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["platform"] == "windows/amd64:10.0.20348")
        .map(|h| {
            let runtime = h["runtime"].as_str().unwrap();
            (
                h["platform"].as_str().unwrap(),
                runtime,
                h["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("windows/amd64:10.0.20348", "containerd-1.7", "ok"),
            ("windows/amd64:10.0.20348", "containerd-2.3", "no-match"),
        ]
    );
    // The text report says it too.
    let out = imgcheck()
        .args(["verify", "--sandbox-image", "none", "--nodes", &nodes])
        .args(["--upgrade-to", "containerd://2.3.1", &reference])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(
            "1 Windows node (winworker-7xk2p) on windows/amd64:10.0.20348: containerd://1.7.27 \
             (containerd-1.7 → containerd-2.3)"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "ok under containerd-1.7 today, no-match under containerd-2.3 after the upgrade"
        ),
        "{text}"
    );
}

#[test]
fn the_release_payload_names_the_wmco_and_the_containerd_after_the_upgrade() {
    let registry = Registry::start();
    registry.push_layout(&fixture("good"), "ocp/csi-driver", "v1");
    let image = format!("{}/ocp/csi-driver:v1", registry.host());
    let release = push_release(
        &registry,
        "ocp/release",
        "4.18.0-x86_64",
        &[("csi-driver", &image)],
    );
    let nodes = nodes_file("ocp-wmco.json");
    let (code, doc, err) = verify(&[
        "--from-release",
        &release,
        "--release-image",
        "csi-driver",
        "--nodes",
        &nodes,
        "--upgrade",
    ]);
    assert_eq!(code, 0, "{doc:#}\n{err}");
    assert_conforms("imagesReport", "verify --from-release --upgrade", &doc);
    let target = &doc["upgrade"]["target"];
    assert_eq!(target["version"], "4.18.0", "{target:#}");
    assert_eq!(target["openshift"], "4.18", "{target:#}");
    assert_eq!(target["wmco"], "10.18", "{target:#}");
    assert_eq!(target["containerd"], "1.7.x", "{target:#}");
    assert_eq!(target["profile"], "containerd-1.7", "{target:#}");
    let from = target["from"].as_str().unwrap();
    assert!(from.contains("ocp/release:4.18.0-x86_64"), "{target:#}");
    assert!(
        target["reason"].as_str().unwrap().contains("PR #1755"),
        "{target:#}"
    );
    for c in doc["upgrade"]["nodes"].as_array().unwrap() {
        assert_eq!(
            c["before"], c["after"],
            "WMCO 10.18 keeps containerd 1.7: {c:#}"
        );
    }
    assert!(
        doc["upgrade"].get("images").is_none_or(|i| i == &json!([])),
        "{doc:#}"
    );
}

#[test]
fn an_upgrade_without_a_version_it_can_place_is_bad_input_naming_it() {
    let nodes = nodes_file("ocp-wmco.json");
    let good = format!("oci:{}", fixture("good").display());
    let cases: [(&[&str], &str); 4] = [
        (&["--upgrade-to", "4.99"], "--upgrade-to '4.99'"),
        (&["--upgrade-to", "banana"], "--upgrade-to 'banana'"),
        (&["--upgrade-to", "4.14"], "no WMCO source was read"),
        (&["--upgrade"], "--upgrade-to VERSION"),
    ];
    for (flags, want) in cases {
        let (code, _, err) = verify(&[&["--nodes", nodes.as_str(), good.as_str()], flags].concat());
        assert_eq!(code, 2, "{flags:?}: {err}");
        assert!(err.contains(want), "{flags:?}: {err}");
    }
    // The gate judges a cluster's nodes: without --nodes, clap refuses the flag.
    let (code, _, err) = verify(&["--upgrade-to", "4.18", good.as_str()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--nodes"), "{err}");
}
