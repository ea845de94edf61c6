//! Issue 22, items 10–12: `resolve` selects as each runtime's own code does, through a real
//! `docker-registry`, on lists edited from the `attestation` fixture (its four runnable entries,
//! then two buildx attestations with `unknown/unknown` platforms):
//!
//! - item 11: containerd (`core/images/image.go` `Manifest`, `core/images/handlers.go`
//!   `LimitManifests`) and CRI-O (containers/image `internal/manifest/oci_index.go`
//!   `chooseInstance`) select by platform, never by the `vnd.docker.reference.type`
//!   annotation;
//! - item 10, reverted by issue 33 item 5: containerd 2.3 and main set aside only the first
//!   `win32k` before the features are compared, so `win32k` twice matches no default host;
//! - item 12: containerd 1.6/1.7 read `os.version` with Go's `strconv.Atoi` (a leading `+`
//!   is a number), and 1.6 compares the entry's OS as written.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::{Registry, fixture, imgcheck, sha256_digest};

/// The attestation fixture's entries, by digest.
pub(crate) const LINUX_AMD64: &str =
    "sha256:6fcf813d4eb7845e239cee66bcb6de35e33e1f69ea98eb8ff7b48dbe7de7ab00";
pub(crate) const WS2019: &str =
    "sha256:a41a56813feb41490c49d16e773932b1b976e7ea274765a1ba60d9676e655d9f";
pub(crate) const WS2022: &str =
    "sha256:8888abdb127247b9029b295a056efda3ab86a1b275850c397f6d51b1be2b1b58";
pub(crate) const ATTESTATION: &str =
    "sha256:bc67b1f6f93daede32030a10b7992b82d0c0a07f7f6b7b426dc359bf0230f43c";

/// Copies the `attestation` layout to `tmp/layouts/NAME` with its inner index's entries
/// replaced by `edit` of them, and returns the new layout's path.
pub(crate) fn edited_layout(tmp: &Path, name: &str, edit: impl FnOnce(&mut Vec<Value>)) -> PathBuf {
    let from = fixture("attestation");
    let to = tmp.join("layouts").join(name);
    let blobs = to.join("blobs").join("sha256");
    fs::create_dir_all(&blobs).unwrap();
    for entry in fs::read_dir(from.join("blobs").join("sha256")).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), blobs.join(entry.file_name())).unwrap();
    }
    fs::copy(from.join("oci-layout"), to.join("oci-layout")).unwrap();
    let mut top: Value =
        serde_json::from_slice(&fs::read(from.join("index.json")).unwrap()).unwrap();
    let inner_digest = top["manifests"][0]["digest"].as_str().unwrap().to_string();
    let inner_path = blobs.join(inner_digest.trim_start_matches("sha256:"));
    let mut inner: Value = serde_json::from_slice(&fs::read(&inner_path).unwrap()).unwrap();
    let mut entries = inner["manifests"].as_array().unwrap().clone();
    edit(&mut entries);
    inner["manifests"] = Value::Array(entries);
    let bytes = serde_json::to_vec(&inner).unwrap();
    let digest = sha256_digest(&bytes);
    fs::write(blobs.join(digest.trim_start_matches("sha256:")), &bytes).unwrap();
    top["manifests"][0]["digest"] = json!(digest);
    top["manifests"][0]["size"] = json!(bytes.len());
    fs::write(to.join("index.json"), serde_json::to_vec(&top).unwrap()).unwrap();
    to
}

/// The entry of `entries` with this digest.
pub(crate) fn entry<'a>(entries: &'a mut [Value], digest: &str) -> &'a mut Value {
    entries
        .iter_mut()
        .find(|e| e["digest"] == digest)
        .unwrap_or_else(|| panic!("no entry {digest}"))
}

/// `resolve --format json`: the exit code and the selected digest (`None` for no match).
fn resolve(reference: &str, platform: &str, runtime: &str) -> (i32, Option<String>) {
    let out = imgcheck()
        .args(["resolve", reference, "--platform", platform])
        .args(["--runtime", runtime, "--format", "json"])
        .output()
        .expect("imgcheck runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{reference}: not JSON ({e}): {}\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let code = out.status.code().expect("exit code");
    (code, doc["digest"].as_str().map(str::to_string))
}

/// Pushes `layout` to `repo` and returns its reference.
fn pushed(registry: &Registry, layout: &Path, repo: &str) -> String {
    registry.push_layout(layout, repo, "t");
    registry.docker_ref(repo, "t")
}

/// One row: a list, a host, a runtime, and the entry the runtime's own code takes.
struct Row {
    source: &'static str,
    repo: &'static str,
    platform: &'static str,
    runtime: &'static str,
    want: Option<&'static str>,
}

#[test]
fn resolve_selects_as_each_runtime_does() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = Registry::start();
    let mut refs = std::collections::BTreeMap::new();
    let mut add = |repo: &'static str, edit: &dyn Fn(&mut Vec<Value>)| {
        let layout = edited_layout(tmp.path(), repo, edit);
        refs.insert(repo, pushed(&registry, &layout, repo));
    };
    // Item 11: the WS2019 entry carries the attestation annotation but a real platform.
    add("annotated", &|e| {
        entry(e, WS2019)["annotations"] =
            json!({"vnd.docker.reference.type": "attestation-manifest"});
    });
    // Item 11: an attestation without platform listed before a platform-less WS2019 image.
    add("platformless", &|e| {
        let mut attestation = entry(e, ATTESTATION).clone();
        let mut image = entry(e, WS2019).clone();
        attestation.as_object_mut().unwrap().remove("platform");
        image.as_object_mut().unwrap().remove("platform");
        *e = vec![attestation, image];
    });
    // Item 10: `win32k` twice on the WS2022 entry.
    add("win32k-twice", &|e| {
        entry(e, WS2022)["platform"]["os.features"] = json!(["win32k", "win32k"]);
    });
    // Item 12: a leading `+` in the build, and an upper-case OS.
    add("plus-build", &|e| {
        entry(e, WS2019)["platform"]["os.version"] = json!("10.0.+17763.5830");
    });
    add("upper-os", &|e| {
        entry(e, WS2019)["platform"]["os"] = json!("Windows");
    });
    let ws2019 = "windows/amd64:10.0.17763";
    let rows = [
        Row {
            source: "containerd core/images/image.go Manifest: an annotated entry with a real \
                     platform is a candidate",
            repo: "annotated",
            platform: ws2019,
            runtime: "containerd-2.3",
            want: Some(WS2019),
        },
        Row {
            source: "containerd v1.7 images/image.go Manifest: the same",
            repo: "annotated",
            platform: ws2019,
            runtime: "containerd-1.7",
            want: Some(WS2019),
        },
        Row {
            source: "containerd core/images/handlers.go LimitManifests (limit 1) + image.go \
                     Manifest: the first platform-less candidate is an attestation whose config \
                     does not match: no match",
            repo: "platformless",
            platform: ws2019,
            runtime: "containerd-2.3",
            want: None,
        },
        Row {
            source: "containers/image oci_index.go chooseInstance: the first platform-less entry \
                     is the last resort, annotation or not",
            repo: "platformless",
            platform: "linux/amd64",
            runtime: "cri-o",
            want: Some(ATTESTATION),
        },
        Row {
            source: "containers/image oci_index.go chooseInstance: an annotated entry with the \
                     host's platform is taken",
            repo: "annotated",
            platform: "linux/amd64",
            runtime: "cri-o",
            want: Some(LINUX_AMD64),
        },
        Row {
            source: "containerd/platforms matcher.Match as containerd 2.3 vendors it \
                     (platforms#31): only the first win32k is set aside, so win32k twice \
                     matches no default host (issue 33, item 5)",
            repo: "win32k-twice",
            platform: "windows/amd64:10.0.20348",
            runtime: "containerd-2.3",
            want: None,
        },
        Row {
            source: "containerd/platforms v0.2 defaults_windows.go getOSVersion (strconv.Atoi): \
                     a leading + is a number",
            repo: "plus-build",
            platform: ws2019,
            runtime: "containerd-1.7",
            want: Some(WS2019),
        },
        Row {
            source: "containerd/platforms platform_windows_compat.go getWindowsOSVersion \
                     (strconv.ParseUint): a leading + is 0.0.0",
            repo: "plus-build",
            platform: ws2019,
            runtime: "containerd-2.3",
            want: None,
        },
        Row {
            source: "containerd 1.6 (issue 22 differential run): the entry's OS compared as \
                     written",
            repo: "upper-os",
            platform: ws2019,
            runtime: "containerd-1.6",
            want: None,
        },
        Row {
            source: "containerd/platforms v0.2 platforms.go Normalize (lower-cases the OS)",
            repo: "upper-os",
            platform: ws2019,
            runtime: "containerd-1.7",
            want: Some(WS2019),
        },
    ];
    let wrong: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            let (code, got) = resolve(&refs[r.repo], r.platform, r.runtime);
            // A selected attestation is selected, but its pull fails (issue 33, item 7 c).
            let want_code = match r.want {
                Some(d) if d != ATTESTATION => 0,
                _ => 1,
            };
            (got.as_deref() != r.want || code != want_code).then(|| {
                format!(
                    "{} ({}, {} on {}): got {got:?} (exit {code}), want {:?}",
                    r.source, r.runtime, r.platform, r.repo, r.want
                )
            })
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "rows resolved wrongly:\n{}",
        wrong.join("\n")
    );
}

/// Item 11: an annotated entry with a real platform is still reported as an attestation
/// (`info`), but no longer as one "never pulled": a node selects it by its platform.
#[test]
fn an_annotated_entry_with_a_platform_is_reported_as_selectable() {
    let tmp = tempfile::tempdir().unwrap();
    let layout = edited_layout(tmp.path(), "annotated", |e| {
        entry(e, WS2019)["annotations"] =
            json!({"vnd.docker.reference.type": "attestation-manifest"});
    });
    let out = imgcheck()
        .args(["verify", &format!("oci:{}", layout.display())])
        .args(["--format", "json"])
        .output()
        .expect("imgcheck runs");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let image = &doc["images"][0];
    assert_eq!(image["verdict"], "pass", "{doc:#}");
    let attestations: Vec<&Value> = image["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "attestation")
        .collect();
    assert_eq!(attestations.len(), 3, "{doc:#}");
    assert!(attestations.iter().all(|f| f["severity"] == "info"));
    let annotated = attestations
        .iter()
        .find(|f| f["message"].as_str().unwrap().contains(WS2019))
        .expect("the annotated WS2019 entry");
    let message = annotated["message"].as_str().unwrap();
    assert!(
        message.contains("windows/amd64") && !message.contains("never pulled"),
        "{message}"
    );
}

/// Issue 21, item 5: `inspect` and `verify` agree about each entry. An entry `verify` (default
/// policy) reports on its own — no `os.version` on a Windows entry, one its config lacks, a
/// malformed one, a platform its config contradicts — is not `ok` in `inspect`: its status
/// names the same rules (one function decides both).
#[test]
fn inspect_and_verify_agree_about_each_entry() {
    use crate::common::{json_of, run_imgcheck};
    let entry_rules = [
        "os-version-missing",
        "os-version-not-in-config",
        "platform-mismatch",
    ];
    let mut flagged = 0;
    for name in [
        "no-os-version",
        "windows-hp",
        "hp-claimed-version",
        "platform-mismatch",
        "good",
    ] {
        let layout = format!("oci:{}", fixture(name).display());
        let verified = json_of(&run_imgcheck(&["verify", "--format", "json", &layout]));
        let inspected = json_of(&run_imgcheck(&["inspect", "--format", "json", &layout]));
        for entry in inspected["entries"].as_array().unwrap() {
            let digest = entry["digest"].as_str().unwrap();
            let mut want: Vec<&str> = verified["images"][0]["findings"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["digest"] == digest)
                .filter_map(|f| f["rule"].as_str())
                .filter(|r| entry_rules.contains(r))
                .collect();
            want.sort();
            let status = entry["status"].as_str().unwrap();
            if want.is_empty() {
                assert_eq!(status, "ok", "{name} {digest}");
            } else {
                flagged += 1;
                let mut got: Vec<&str> = status.split(", ").collect();
                got.sort();
                assert_eq!(got, want, "{name} {digest}");
            }
        }
    }
    assert!(flagged >= 4, "the fixtures flag entries: {flagged}");
}

/// `resolve` and `verify` of a layout: the exit code and standard error of `resolve`, and the
/// verify report's `bad-manifest` findings.
fn refused(layout: &Path, platform: &str, runtime: &str) -> (i32, String, Vec<String>) {
    let reference = format!("oci:{}", layout.display());
    let out = imgcheck()
        .args([
            "resolve",
            &reference,
            "--platform",
            platform,
            "--runtime",
            runtime,
        ])
        .output()
        .expect("imgcheck runs");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let verified = imgcheck()
        .args([
            "verify",
            &reference,
            "--runtime",
            runtime,
            "--format",
            "json",
        ])
        .output()
        .expect("imgcheck runs");
    let doc: Value = serde_json::from_slice(&verified.stdout).unwrap();
    let bad = doc["images"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "bad-manifest" && f["severity"] == "error")
        .map(|f| f["message"].as_str().unwrap().to_string())
        .collect();
    (out.status.code().expect("exit code"), stderr, bad)
}

/// The `attestation` layout with its linux/amd64 entry wrapped in an index of its own: the
/// outer descriptor names an index whose one entry is the linux/amd64 image.
pub(crate) fn nested_layout(tmp: &Path, name: &str) -> PathBuf {
    let nested = std::cell::RefCell::new(Vec::new());
    let layout = edited_layout(tmp, name, |e| {
        let linux = entry(e, LINUX_AMD64).clone();
        let inner = json!({"schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [linux]});
        let bytes = serde_json::to_vec(&inner).unwrap();
        let slot = entry(e, LINUX_AMD64);
        slot["mediaType"] = json!("application/vnd.oci.image.index.v1+json");
        slot["digest"] = json!(sha256_digest(&bytes));
        slot["size"] = json!(bytes.len());
        *nested.borrow_mut() = bytes;
    });
    let bytes = nested.into_inner();
    let name = sha256_digest(&bytes);
    let blob = layout
        .join("blobs/sha256")
        .join(name.trim_start_matches("sha256:"));
    fs::write(blob, &bytes).unwrap();
    layout
}

/// Issue 33, item 7 (a): CRI-O (containers/image) takes one list level: an entry it selects
/// that is itself an index is refused ("Unexpectedly received a manifest list instead of a
/// manifest for a single image"), where containerd descends into it.
#[test]
fn cri_o_refuses_a_nested_list_that_containerd_descends_into() {
    let tmp = tempfile::tempdir().unwrap();
    let layout = nested_layout(tmp.path(), "nested");
    let (code, stderr, bad) = refused(&layout, "linux/amd64", "cri-o");
    assert_ne!(code, 0, "{stderr}");
    assert!(
        stderr.contains("Unexpectedly received a manifest list"),
        "{stderr}"
    );
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(
        bad[0].contains("under cri-o") && bad[0].contains("the pull fails"),
        "{bad:?}"
    );
    let (code, stderr, bad) = refused(&layout, "linux/amd64", "containerd-2.3");
    assert_eq!(
        code, 0,
        "containerd descends into the nested list: {stderr}"
    );
    // verify judges Linux hosts under the policy's linux.runtimes (cri-o) whatever --runtime
    // says, so the refusal stays.
    assert_eq!(bad.len(), 1, "{bad:?}");
}

/// Issue 33, item 7 (c): an attestation manifest a runtime selects by its platform (in-toto
/// statement layers) cannot be unpacked: `resolve` says the pull fails, `verify` fails it.
#[test]
fn a_selected_attestation_cannot_be_pulled() {
    let tmp = tempfile::tempdir().unwrap();
    let layout = edited_layout(tmp.path(), "attested", |e| {
        e.retain(|d| d["digest"] != LINUX_AMD64);
        entry(e, ATTESTATION)["platform"] = json!({"os": "linux", "architecture": "amd64"});
    });
    for runtime in ["cri-o", "containerd-2.3"] {
        let (code, stderr, bad) = refused(&layout, "linux/amd64", runtime);
        assert_ne!(code, 0, "{runtime}: {stderr}");
        assert!(
            stderr.contains("attestation manifest"),
            "{runtime}: {stderr}"
        );
        assert_eq!(bad.len(), 1, "{runtime}: {bad:?}");
        assert!(bad[0].contains("in-toto"), "{runtime}: {bad:?}");
    }
}
