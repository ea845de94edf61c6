//! `imgcheck verify`, `resolve` and `inspect` end to end: every fixture as an OCI layout and
//! through a real `docker-registry`, plus bad inputs.

use std::collections::BTreeSet;
use std::process::Output;

use crate::common::{self, Registry, fixture, imgcheck, openshift_without_linux_deep};
use serde_json::Value;

/// Expected outcome of `verify` under the default policy.
struct Case {
    name: &'static str,
    verdict: &'static str,
    /// Rule ids of error findings (exact set).
    errors: &'static [&'static str],
    /// Rule ids of warning and info findings that must be present.
    notes: &'static [&'static str],
    /// Can it be stored in docker-registry 2.8?
    pushable: bool,
    /// Does pushing it damage shared blob storage (needs a registry of its own)?
    damaged: bool,
}

const CASES: &[Case] = &[
    Case {
        name: "good",
        verdict: "pass",
        errors: &[],
        notes: &[],
        pushable: true,
        damaged: false,
    },
    Case {
        name: "no-os-version",
        verdict: "fail",
        errors: &["os-version-missing", "wrong-build-selected"],
        notes: &[],
        pushable: true,
        damaged: false,
    },
    Case {
        name: "ltsc2022-only",
        verdict: "fail",
        errors: &["no-match"],
        notes: &[],
        pushable: true,
        damaged: false,
    },
    Case {
        name: "platform-mismatch",
        verdict: "fail",
        errors: &["platform-mismatch", "wrong-build-selected"],
        notes: &[],
        pushable: true,
        damaged: false,
    },
    Case {
        name: "docker-list",
        verdict: "pass",
        errors: &[],
        notes: &[],
        pushable: true,
        damaged: false,
    },
    Case {
        name: "attestation",
        verdict: "pass",
        errors: &[],
        notes: &["attestation"],
        pushable: true,
        damaged: false,
    },
    Case {
        name: "foreign-layer",
        verdict: "pass",
        errors: &[],
        notes: &["foreign-layer"],
        pushable: true,
        damaged: false,
    },
    Case {
        name: "missing-child",
        verdict: "fail",
        errors: &["child-missing"],
        notes: &[],
        pushable: true,
        damaged: false,
    },
    Case {
        name: "corrupt-config",
        verdict: "fail",
        errors: &["digest-mismatch"],
        notes: &[],
        pushable: true,
        damaged: true,
    },
    Case {
        name: "truncated-manifest",
        verdict: "fail",
        errors: &["digest-mismatch"],
        notes: &[],
        pushable: false, // the registry answers 500 for it: covered in its own test
        damaged: true,
    },
    Case {
        name: "single-arch",
        verdict: "fail",
        errors: &["not-an-index"],
        notes: &[],
        pushable: true,
        damaged: false,
    },
    Case {
        name: "legacy-buildah",
        verdict: "pass",
        errors: &[],
        notes: &[],
        pushable: true,
        damaged: false,
    },
    Case {
        name: "schema1",
        verdict: "fail",
        errors: &["schema1"],
        notes: &[],
        pushable: false,
        damaged: false,
    },
    Case {
        name: "duplicate-platform",
        verdict: "fail",
        errors: &["duplicate-platform"],
        notes: &[],
        pushable: true,
        damaged: false,
    },
    Case {
        name: "with-ltsc2025",
        verdict: "pass",
        errors: &[],
        notes: &["unsupported-build"],
        pushable: true,
        damaged: false,
    },
    Case {
        name: "bad-json",
        verdict: "fail",
        errors: &["bad-manifest"],
        notes: &[],
        pushable: false,
        damaged: false,
    },
    Case {
        name: "wrong-media-type",
        verdict: "fail",
        errors: &["bad-manifest"],
        notes: &[],
        pushable: false,
        damaged: false,
    },
    Case {
        name: "os-features",
        verdict: "pass",
        errors: &[],
        notes: &[],
        pushable: true,
        damaged: false,
    },
    Case {
        name: "windows-hp",
        verdict: "fail",
        errors: &["os-version-missing"],
        notes: &[],
        pushable: true,
        damaged: false,
    },
    Case {
        name: "hp-claimed-version",
        verdict: "pass",
        errors: &[],
        notes: &["os-version-not-in-config"],
        pushable: true,
        damaged: false,
    },
    Case {
        name: "nested-index",
        verdict: "pass",
        errors: &[],
        notes: &[],
        pushable: true,
        damaged: false,
    },
    Case {
        name: "zstd-pair",
        verdict: "pass",
        errors: &[],
        notes: &[],
        pushable: true,
        damaged: false,
    },
];

fn run(args: &[&str]) -> Output {
    let out = imgcheck().args(args).output().expect("imgcheck runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "imgcheck panicked: {stderr}");
    out
}

fn verify_json(reference: &str, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["verify", reference, "--format", "json"];
    args.extend_from_slice(extra);
    let out = run(&args);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{reference}: stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().expect("exit code"), doc)
}

fn rules(image: &Value, severities: &[&str]) -> BTreeSet<String> {
    image["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| severities.contains(&f["severity"].as_str().unwrap()))
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

fn check_case(case: &Case, reference: &str) {
    let (code, doc) = verify_json(reference, &[]);
    let image = &doc["images"][0];
    assert_eq!(image["verdict"], case.verdict, "{}: {doc:#}", case.name);
    let want: BTreeSet<String> = case.errors.iter().map(|s| s.to_string()).collect();
    assert_eq!(rules(image, &["error"]), want, "{}: {doc:#}", case.name);
    let notes = rules(image, &["warning", "info"]);
    for n in case.notes {
        assert!(notes.contains(*n), "{}: missing {n}: {doc:#}", case.name);
    }
    assert_eq!(
        code,
        if case.verdict == "pass" { 0 } else { 1 },
        "{}",
        case.name
    );
    for f in image["findings"].as_array().unwrap() {
        assert!(
            !f["hint"].as_str().unwrap().is_empty(),
            "{}: finding without hint",
            case.name
        );
    }
}

fn layout_ref(name: &str) -> String {
    format!("oci:{}", fixture(name).display())
}

fn digests() -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(common::fixtures_dir().join("digests.json")).unwrap(),
    )
    .unwrap()
}

#[test]
fn every_fixture_as_an_oci_layout() {
    for case in CASES {
        check_case(case, &layout_ref(case.name));
    }
}

#[test]
fn every_pushable_fixture_through_a_real_registry() {
    let shared = Registry::start();
    for case in CASES.iter().filter(|c| c.pushable) {
        let own;
        let registry = if case.damaged {
            own = Registry::start();
            &own
        } else {
            &shared
        };
        registry.push_layout(&fixture(case.name), case.name, "latest");
        check_case(case, &format!("{}/{}:latest", registry.host(), case.name));
    }
}

#[test]
fn good_layout_and_registry_give_the_same_report() {
    let registry = Registry::start();
    let top = registry.push_layout(&fixture("good"), "csi/driver", "v1");
    let (_, from_layout) = verify_json(&layout_ref("good"), &[]);
    let (_, from_registry) =
        verify_json(&format!("docker://{}/csi/driver:v1", registry.host()), &[]);
    assert_eq!(from_layout["images"][0]["digest"], top);
    assert_eq!(from_registry["images"][0]["digest"], top);
    assert_eq!(
        from_layout["images"][0]["hosts"],
        from_registry["images"][0]["hosts"]
    );
    // A pinned reference works and gives the same digest.
    let (code, pinned) = verify_json(&format!("{}/csi/driver@{top}", registry.host()), &[]);
    assert_eq!(code, 0);
    assert_eq!(pinned["images"][0]["digest"], top);
}

/// A registry named by a bracketed IPv6 address, as distribution's grammar allows (oci-spec's
/// parser, used before, refused it).
#[test]
fn an_ipv6_loopback_registry() {
    let registry = Registry::start_ipv6();
    let top = registry.push_layout(&fixture("good"), "csi/driver", "v1");
    let host = registry.host();
    assert!(host.starts_with("[::1]:"), "{host}");
    for reference in [
        format!("{host}/csi/driver:v1"),
        format!("docker://{host}/csi/driver@{top}"),
    ] {
        let (code, doc) = verify_json(&reference, &[]);
        assert_eq!(code, 0, "{reference}: {doc}");
        assert_eq!(doc["images"][0]["verdict"], "pass", "{reference}");
        assert_eq!(doc["images"][0]["digest"], top, "{reference}");
    }
}

#[test]
fn truncated_manifest_in_registry_storage_is_never_a_pass() {
    let registry = Registry::start();
    registry.push_layout(&fixture("truncated-manifest"), "t", "latest");
    let (code, doc) = verify_json(&format!("{}/t:latest", registry.host()), &[]);
    let verdict = doc["images"][0]["verdict"].as_str().unwrap();
    assert_ne!(verdict, "pass", "{doc:#}");
    // docker-registry answers 500 for the short blob: the check could not be completed.
    assert!(code == 1 || code == 3, "exit {code}: {doc:#}");
}

#[test]
fn altered_bytes_in_registry_storage_are_digest_mismatches() {
    let registry = Registry::start();
    let top = registry.push_layout(&fixture("good"), "x", "latest");
    let d = digests();
    let child = d["good"]["children"]["linux/amd64"].as_str().unwrap();
    let (_, body) = registry.get_manifest("x", child);
    // Same length, still a valid manifest of the same media type (docker-registry re-parses
    // manifests it serves): bump one digit of the config's size.
    let original = String::from_utf8(body).unwrap();
    let at = original.find("\"size\":").unwrap() + 7;
    let mut bytes = original.clone().into_bytes();
    bytes[at] = if bytes[at] == b'9' {
        b'1'
    } else {
        bytes[at] + 1
    };
    let altered = String::from_utf8(bytes).unwrap();
    assert_ne!(altered, original, "the alteration must change the bytes");
    registry.corrupt_blob(child, altered.as_bytes());
    let (code, doc) = verify_json(&format!("{}/x:latest", registry.host()), &[]);
    assert_eq!(code, 1, "{doc:#}");
    assert!(
        rules(&doc["images"][0], &["error"]).contains("digest-mismatch"),
        "{doc:#}"
    );

    // The pinned top itself altered: the report names the mismatch, never passes.
    let (_, index) = registry.get_manifest("x", &top);
    let original = String::from_utf8(index).unwrap();
    let altered = original.replacen("linux", "LINUX", 1);
    assert_ne!(altered, original, "the alteration must change the bytes");
    registry.corrupt_blob(&top, altered.as_bytes());
    let (code, doc) = verify_json(&format!("{}/x@{top}", registry.host()), &[]);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(doc["images"][0]["verdict"], "fail");
    assert!(
        rules(&doc["images"][0], &["error"]).contains("digest-mismatch"),
        "{doc:#}"
    );
}

#[test]
fn deep_finds_exactly_the_legacy_buildah_layers() {
    for reference in [layout_ref("legacy-buildah")] {
        let (code, doc) = verify_json(&reference, &["--deep"]);
        assert_eq!(code, 1, "{doc:#}");
        let image = &doc["images"][0];
        let layer_findings: Vec<&Value> = image["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"] == "windows-layer-format")
            .collect();
        assert_eq!(layer_findings.len(), 2, "{doc:#}");
        // Exactly the top layer of each Windows child, never the base layers.
        let index: Value = serde_json::from_slice(
            &std::fs::read(
                fixture("legacy-buildah").join("blobs/sha256").join(
                    image["digest"]
                        .as_str()
                        .unwrap()
                        .trim_start_matches("sha256:"),
                ),
            )
            .unwrap(),
        )
        .unwrap();
        let mut tops = BTreeSet::new();
        let mut bases = BTreeSet::new();
        for entry in index["manifests"].as_array().unwrap() {
            if entry["platform"]["os"] != "windows" {
                continue;
            }
            let hex = entry["digest"]
                .as_str()
                .unwrap()
                .trim_start_matches("sha256:");
            let m: Value = serde_json::from_slice(
                &std::fs::read(fixture("legacy-buildah").join("blobs/sha256").join(hex)).unwrap(),
            )
            .unwrap();
            let layers = m["layers"].as_array().unwrap();
            tops.insert(
                layers.last().unwrap()["digest"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
            bases.insert(layers[0]["digest"].as_str().unwrap().to_string());
        }
        let flagged: BTreeSet<String> = layer_findings
            .iter()
            .map(|f| f["digest"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(flagged, tops);
        assert!(flagged.is_disjoint(&bases));
    }
    // The good fixture's Windows layers are in the Windows layout (its Linux entries name a
    // /bin/sh no layer holds: judged without them).
    let dir = tempfile::tempdir().unwrap();
    let policy = openshift_without_linux_deep(dir.path());
    let (code, doc) = verify_json(&layout_ref("good"), &["--deep", "--policy", &policy]);
    assert_eq!(code, 0, "{doc:#}");
}

#[test]
fn deep_through_the_registry() {
    let registry = Registry::start();
    registry.push_layout(&fixture("legacy-buildah"), "legacy", "latest");
    let (code, doc) = verify_json(&format!("{}/legacy:latest", registry.host()), &["--deep"]);
    assert_eq!(code, 1);
    // Buildah < 1.44's layout puts csi.exe outside Files/: no Windows path reaches it either.
    assert_eq!(
        rules(&doc["images"][0], &["error"]),
        BTreeSet::from([
            "windows-layer-format".to_string(),
            "entrypoint-missing".to_string()
        ])
    );
}

fn resolve(reference: &str, platform: &str, runtime: Option<&str>) -> (i32, String, String) {
    let mut args = vec!["resolve", reference, "--platform", platform];
    if let Some(r) = runtime {
        args.extend(["--runtime", r]);
    }
    let out = run(&args);
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        String::from_utf8_lossy(&out.stderr).trim().to_string(),
    )
}

#[test]
fn resolve_picks_what_containerd_would() {
    let d = digests();
    let registry = Registry::start();
    for name in [
        "good",
        "no-os-version",
        "ltsc2022-only",
        "with-ltsc2025",
        "single-arch",
    ] {
        registry.push_layout(&fixture(name), name, "latest");
    }
    let child = |f: &str, k: &str| d[f]["children"][k].as_str().unwrap().to_string();
    let w17763 = child("good", "windows/amd64:10.0.17763.5830");
    let w20348 = child("good", "windows/amd64:10.0.20348.2461");
    let w26100 = child("with-ltsc2025", "windows/amd64:10.0.26100.1742");
    type Want = Result<String, &'static str>;
    let cases: Vec<(&str, &str, Option<&str>, Want)> = vec![
        ("good", "windows/amd64:10.0.17763", None, Ok(w17763.clone())),
        ("good", "windows/amd64:10.0.20348", None, Ok(w20348.clone())),
        (
            "good",
            "linux/amd64",
            None,
            Ok(child("good", "linux/amd64")),
        ),
        (
            "good",
            "linux/arm64",
            None,
            Ok(child("good", "linux/arm64/v8")),
        ),
        ("good", "windows/amd64:10.0.22621", None, Ok(w20348.clone())),
        (
            "good",
            "windows/arm64:10.0.17763",
            None,
            Err("no matching manifest for windows/arm64 10.0.17763 in the manifest list entries"),
        ),
        // No os.version: the first Windows entry matches every host.
        (
            "no-os-version",
            "windows/amd64:10.0.20348",
            None,
            Ok(w17763.clone()),
        ),
        (
            "ltsc2022-only",
            "windows/amd64:10.0.17763",
            None,
            Err("no matching manifest for windows/amd64 10.0.17763 in the manifest list entries"),
        ),
        // WS2025 host: 2.3 prefers the greatest os.version, 1.7 the first match in the index.
        (
            "with-ltsc2025",
            "windows/amd64:10.0.26100",
            Some("containerd-2.3"),
            Ok(w26100.clone()),
        ),
        (
            "with-ltsc2025",
            "windows/amd64:10.0.26100",
            Some("containerd-1.7"),
            Ok(w20348.clone()),
        ),
        // Windows 11 25H2: containerd 2.3 rejects ltsc2022, -next accepts it again.
        (
            "with-ltsc2025",
            "windows/amd64:10.0.26200",
            Some("containerd-2.3"),
            Ok(w26100.clone()),
        ),
        (
            "ltsc2022-only",
            "windows/amd64:10.0.26200",
            Some("containerd-2.3"),
            Err("no matching manifest for windows/amd64 10.0.26200"),
        ),
        (
            "ltsc2022-only",
            "windows/amd64:10.0.26200",
            Some("containerd-next"),
            Ok(w20348.clone()),
        ),
        (
            "single-arch",
            "linux/amd64",
            None,
            Ok(child("good", "linux/amd64")),
        ),
        (
            "single-arch",
            "windows/amd64:10.0.17763",
            None,
            Err("no matching manifest"),
        ),
    ];
    for (name, platform, runtime, want) in cases {
        for reference in [
            layout_ref(name),
            format!("{}/{name}:latest", registry.host()),
        ] {
            let (code, stdout, stderr) = resolve(&reference, platform, runtime);
            match &want {
                Ok(digest) => {
                    assert_eq!(
                        (code, &stdout),
                        (0, digest),
                        "{reference} {platform}: {stderr}"
                    );
                }
                Err(msg) => {
                    assert_eq!(code, 1, "{reference} {platform}: {stdout}");
                    assert!(stderr.contains(msg), "{reference} {platform}: {stderr}");
                    assert!(stdout.is_empty());
                }
            }
        }
    }
}

#[test]
fn resolve_json_lists_candidates() {
    let out = run(&[
        "resolve",
        &layout_ref("with-ltsc2025"),
        "--platform",
        "windows/amd64:10.0.26100",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["platform"]["os.version"], "10.0.26100.1742");
    let candidates = doc["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 5);
    assert_eq!(candidates[0]["digest"], doc["digest"]);
    assert_eq!(
        candidates.iter().filter(|c| c["matched"] == true).count(),
        2
    );
}

/// Issue 12, "done when": upstream's `-windows-hp` list passes under `openshift-hostprocess`
/// and fails under `openshift` with a hint naming the isolation setting; the matrix names the
/// isolation mode and the Linux host's runtime, in text and JSON.
#[test]
fn hostprocess_list_passes_only_under_hostprocess_isolation() {
    let hp = layout_ref("windows-hp");
    let (code, doc) = verify_json(&hp, &["--policy", "openshift"]);
    assert_eq!(code, 1, "{doc:#}");
    let image = &doc["images"][0];
    let missing = image["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "os-version-missing")
        .expect("os-version-missing");
    assert!(
        missing["hint"]
            .as_str()
            .unwrap()
            .contains("windows.isolation: hostprocess"),
        "{missing:#}"
    );
    let (code, doc) = verify_json(&hp, &["--policy", "openshift-hostprocess"]);
    assert_eq!(code, 0, "{doc:#}");
    let hosts = doc["images"][0]["hosts"].as_array().unwrap();
    for h in hosts {
        let linux = h["platform"].as_str().unwrap().starts_with("linux/");
        let want = if linux {
            Value::Null
        } else {
            "hostprocess".into()
        };
        assert_eq!(h["isolation"], want, "{h}");
        if linux {
            assert_eq!(h["runtime"], "cri-o", "{h}");
        }
    }
    let text = run(&["verify", &hp, "--policy", "openshift-hostprocess"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("isolation") && text.contains("hostprocess"),
        "{text}"
    );
    assert!(text.contains("linux/amd64                cri-o"), "{text}");
}

/// Issue 12: `resolve` descends into a nested index and says so in its JSON.
#[test]
fn resolve_descends_into_a_nested_index() {
    let out = run(&[
        "resolve",
        &layout_ref("nested-index"),
        "--platform",
        "windows/amd64:ltsc2019",
        "--format",
        "json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let d = digests();
    assert_eq!(
        doc["digest"],
        d["nested-index"]["children"]["windows/amd64:10.0.17763.5830"]
    );
    let nested = &d["nested-index"]["entries"][1]["digest"];
    assert_eq!(
        doc["descended_into"],
        serde_json::json!([nested]),
        "{doc:#}"
    );
    let flat = run(&[
        "resolve",
        &layout_ref("good"),
        "--platform",
        "windows/amd64:ltsc2019",
        "--format",
        "json",
    ]);
    let flat: Value = serde_json::from_slice(&flat.stdout).unwrap();
    assert_eq!(flat["descended_into"], serde_json::json!([]));
}

#[test]
fn runtime_profiles_differ_in_the_matrix() {
    // WS2025 nodes: under containerd-1.7 the first compatible entry wins.
    let policy = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        policy.path(),
        "name: t\nwindows:\n  architectures: [amd64]\n  builds: [26100]\nruntimes: [containerd-1.7, containerd-2.3]\n",
    )
    .unwrap();
    let (code, doc) = verify_json(
        &layout_ref("with-ltsc2025"),
        &["--policy", policy.path().to_str().unwrap()],
    );
    assert_eq!(code, 0, "{doc:#}");
    let hosts = doc["images"][0]["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 2);
    assert_ne!(hosts[0]["selected"], hosts[1]["selected"]);
    let text = run(&[
        "verify",
        &layout_ref("with-ltsc2025"),
        "--policy",
        policy.path().to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("containerd-1.7") && text.contains("containerd-2.3"),
        "{text}"
    );
}

#[test]
fn konflux_output_follows_adr_0030() {
    let out = run(&[
        "verify",
        &layout_ref("good"),
        &layout_ref("ltsc2022-only"),
        "--format",
        "konflux",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["result"], "FAILURE");
    assert_eq!(doc["successes"], 1);
    assert_eq!(doc["failures"], 1);
    assert_eq!(doc["warnings"], 0);
    let ts = doc["timestamp"].as_str().unwrap();
    assert!(humantime::parse_rfc3339(ts).is_ok(), "{ts}");
    assert!(doc["note"].as_str().unwrap().contains("no-match"));
    let out = run(&[
        "verify",
        &layout_ref("foreign-layer"),
        "--format",
        "konflux",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["result"], "WARNING");
}

#[test]
fn bad_inputs_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bad_policy = dir.path().join("p.yaml");
    std::fs::write(
        &bad_policy,
        "name: p\nlinux:\n  architectures: [amd64]\nwindwos: {}\n",
    )
    .unwrap();
    let not_layout = dir.path().join("empty");
    std::fs::create_dir(&not_layout).unwrap();
    let good = layout_ref("good");
    let cases: Vec<(Vec<String>, i32, Vec<String>)> = vec![
        (
            vec!["verify".into(), "Quay.io//x".into()],
            2,
            vec!["invalid reference 'Quay.io//x'".into()],
        ),
        (
            vec!["verify".into(), "dir:/tmp".into()],
            2,
            vec!["not supported".into()],
        ),
        (
            vec!["verify".into(), "oci:/nonexistent/layout".into()],
            2,
            vec!["/nonexistent/layout".into(), "not a directory".into()],
        ),
        (
            vec!["verify".into(), format!("oci:{}", not_layout.display())],
            2,
            vec!["no oci-layout file".into()],
        ),
        (
            vec!["verify".into(), format!("{good}:nosuchtag")],
            2,
            vec!["no image tagged 'nosuchtag'".into()],
        ),
        (
            vec![
                "verify".into(),
                good.clone(),
                "--policy".into(),
                bad_policy.display().to_string(),
            ],
            2,
            vec![
                bad_policy.display().to_string(),
                "line 4".into(),
                "windwos".into(),
            ],
        ),
        (
            vec![
                "verify".into(),
                good.clone(),
                "--policy".into(),
                "nope".into(),
            ],
            2,
            vec!["no embedded policy".into()],
        ),
        (
            vec![
                "resolve".into(),
                good.clone(),
                "--platform".into(),
                "windows".into(),
            ],
            2,
            vec!["'windows' is not a platform".into()],
        ),
        (
            vec![
                "resolve".into(),
                good.clone(),
                "--platform".into(),
                "linux/amd64".into(),
                "--runtime".into(),
                "docker".into(),
            ],
            2,
            // cri-o is a profile since issue 12 (Linux nodes of OpenShift).
            vec!["unknown runtime profile 'docker'".into()],
        ),
        (
            vec![
                "verify".into(),
                good.clone(),
                "--authfile".into(),
                "/nonexistent/auth.json".into(),
            ],
            2,
            vec!["/nonexistent/auth.json".into()],
        ),
        // Nothing listens on port 1: the check cannot be completed.
        (
            vec!["verify".into(), "127.0.0.1:1/x:y".into()],
            3,
            vec!["127.0.0.1:1".into()],
        ),
    ];
    for (args, code, wants) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&args);
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(code), "{args:?}: {all}");
        for want in wants {
            assert!(all.contains(&want), "{args:?}: missing '{want}' in: {all}");
        }
        assert!(!all.contains("PASS"), "{args:?}: {all}");
    }
}

#[test]
fn missing_repository_is_a_not_found_failure_not_a_pass() {
    // issue 15: a repository that does not exist cannot heal, so it fails (exit 1) as
    // `not-found` instead of looking transient (`fetch-error`, exit 3).
    let registry = Registry::start();
    let (code, doc) = verify_json(&format!("{}/nothing/here:v1", registry.host()), &[]);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(doc["images"][0]["verdict"], "fail");
    assert_eq!(
        rules(&doc["images"][0], &["error"]),
        BTreeSet::from(["not-found".to_string()])
    );
}

#[test]
fn resolve_and_inspect_of_a_missing_tag_fail_as_not_found() {
    // Like verify's `not-found`: a tag that does not exist is exit 1, not a transient 3.
    let registry = Registry::start();
    let reference = format!("{}/nothing/here:v1", registry.host());
    for args in [
        vec!["resolve", reference.as_str(), "--platform", "linux/amd64"],
        vec!["inspect", reference.as_str()],
    ] {
        let out = run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("not found"), "{args:?}: {stderr}");
    }
}

#[test]
fn resolve_refuses_cri_o_for_a_windows_host() {
    // CRI-O runs Linux nodes only: a Windows host under it is a usage error, not a verdict.
    let out = run(&[
        "resolve",
        &layout_ref("good"),
        "--platform",
        "windows/amd64:10.0.17763",
        "--runtime",
        "cri-o",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--runtime cri-o: Windows nodes do not run it"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn inspect_shows_list_and_config_platforms() {
    let out = run(&[
        "inspect",
        &layout_ref("platform-mismatch"),
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["kind"], "index");
    let wrong = doc["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["platform"]["os.version"] == "10.0.17763.5830")
        .unwrap();
    assert_eq!(wrong["config_platform"]["os.version"], "10.0.20348.2461");
    let text = run(&["inspect", &layout_ref("attestation")]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("attestation"));
}

#[test]
fn policy_show_prints_the_effective_policy() {
    let out = run(&["policy", "show"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("name: openshift")
            && text.contains("17763")
            && text.contains("containerd-2.2")
    );
    let out = run(&["policy", "show", "openshift-ltsc2025"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("26100"));
}

/// A reader that goes away (`imgcheck verify … | head -1`) is not an error: no panic, no
/// message, and the exit code is still the verdict's.
#[test]
fn a_reader_that_reads_one_line_and_leaves_gets_the_verdict_and_no_panic() {
    use std::io::BufRead;
    use std::process::Stdio;
    // 600 reports: far more than a pipe holds (64 KiB), so imgcheck is still writing when
    // the reader leaves.
    let good = layout_ref("good");
    let refs = vec![good.as_str(); 600];
    let mut child = imgcheck()
        .arg("verify")
        .args(&refs)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("imgcheck runs");
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader (and the pipe's only read end) is dropped here.
    assert!(first.starts_with("PASS"), "{first}");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr, "", "nothing on stderr when the reader leaves");
}

/// Every command that writes standard output, with its read end closed before it writes:
/// each ends with the exit code it would have had, silently.
#[test]
fn every_command_ends_quietly_when_standard_output_is_closed() {
    use std::process::Stdio;
    let good = layout_ref("good");
    let partial = layout_ref("ltsc2022-only");
    let cases: [(&[&str], i32); 8] = [
        (&["verify", &good], 0),
        (&["verify", &partial], 1),
        (&["verify", &good, "--format", "konflux"], 0),
        (&["inspect", &good, "--format", "json"], 0),
        (&["resolve", &good, "--platform", "linux/amd64"], 0),
        (&["policy", "show"], 0),
        (&["build", "--push", "127.0.0.1:5000/csi", "--dry-run"], 0),
        (&["build", "--check"], 0),
    ];
    for (args, want) in cases {
        let mut child = imgcheck()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("imgcheck runs");
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(want), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
    }
}

/// A standard output that cannot take the report (a full disk) is not a reader that left:
/// exit 3, naming standard output and the cause.
#[test]
fn a_full_standard_output_is_an_incomplete_run() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let out = imgcheck()
        .args(["verify", &layout_ref("good")])
        .stdout(full)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("imgcheck: cannot write to standard output")
            && stderr.contains("caused by: No space left on device"),
        "{stderr}"
    );
}

/// konflux-ci/architecture ADR 0030: one failing and one unreachable image rank `ERROR`
/// (above `FAILURE`), and `failures` counts only the image that failed. The exit code keeps
/// its own precedence: 1 (the release is known bad).
#[test]
fn konflux_ranks_an_unreachable_image_above_a_failing_one() {
    let out = run(&[
        "verify",
        &layout_ref("ltsc2022-only"),
        "127.0.0.1:1/csi/driver:v1",
        &layout_ref("good"),
        "--format",
        "konflux",
        "--retries",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["result"], "ERROR", "{doc}");
    assert_eq!(
        (&doc["successes"], &doc["failures"], &doc["warnings"]),
        (&Value::from(1), &Value::from(1), &Value::from(0)),
        "{doc}"
    );
    let note = doc["note"].as_str().unwrap();
    let unreachable = note.find("127.0.0.1:1/csi/driver:v1: fetch-error");
    let failing = note.find("ltsc2022-only: no-match");
    assert!(
        unreachable.is_some() && failing.is_some() && unreachable < failing,
        "the note names the image behind ERROR first: {note}"
    );
}

/// The `foreign-layer` hint names tools that copy foreign layers, not skopeo (1.9.3 leaves
/// the blobs out even with --preserve-digests; docs/mirroring.md).
#[test]
fn the_foreign_layer_hint_names_tools_that_copy_them() {
    let (code, doc) = verify_json(&layout_ref("foreign-layer"), &[]);
    assert_eq!(code, 0);
    let hint = doc["images"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "foreign-layer")
        .expect("a foreign-layer finding")["hint"]
        .as_str()
        .unwrap()
        .to_string();
    for tool in [
        "regctl image copy --include-external",
        "crane copy --allow-nondistributable-artifacts",
    ] {
        assert!(hint.contains(tool), "{hint}");
    }
    assert!(!hint.contains("--preserve-digests"), "{hint}");
}

/// The requests a cold `verify` sends to a plain-HTTP loopback registry, in order (the
/// registry's access log). Its round trips are the minimum chain: the top manifest, then
/// every child manifest at once, then every config at once. No `/v2/` probe runs alone first:
/// the answer to the first manifest request tells the scheme (and the auth challenge).
#[test]
fn a_cold_verify_takes_only_the_round_trips_of_its_chain() {
    let registry = Registry::start_logging_requests();
    registry.push_layout(&fixture("single-arch"), "single", "latest");
    registry.push_layout(&fixture("good"), "list", "latest");
    let children = digests()["good"]["children"].as_object().unwrap().len();
    for (repo, want) in [("single", 2), ("list", 1 + 2 * children)] {
        let before = registry.requests().len();
        let out = run(&["verify", &format!("{}/{repo}:latest", registry.host())]);
        assert!(out.status.code().is_some(), "{out:?}");
        let sent: Vec<String> = registry.requests().split_off(before);
        assert_eq!(sent.len(), want, "{repo}: requests {sent:#?}");
        assert!(
            sent.iter().all(|r| !r.starts_with("GET /v2/ ")),
            "{repo}: a lone /v2/ probe: {sent:#?}"
        );
    }
}
