//! Issue 20, item 5: `mirror-check --pre --from-imageset` predicts what oc-mirror v2 will copy
//! of each `mirror.additionalImages[]` entry, against a real `docker-registry` holding a real
//! multi-arch list (`fixtures/layouts/good`: linux/amd64, windows/amd64 10.0.17763 and
//! 10.0.20348), before anything is mirrored. The rules and their oc-mirror sources:
//! `src/mirror/ocmirror.rs`, docs/mirroring.md ("oc-mirror").

use std::process::Output;

use serde_json::Value;

use crate::common::{Registry, fixture, imgcheck};

fn run(args: &[&str]) -> Output {
    let out = imgcheck().args(args).output().expect("imgcheck runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "imgcheck panicked: {stderr}");
    out
}

/// `mirror-check --pre --from-imageset` of an ImageSetConfiguration whose one entry is the
/// CSI driver with `extra` (platforms, targetRepo, targetTag) appended: the exit code and the
/// one image report.
fn pre_check(registry: &Registry, dir: &std::path::Path, extra: &str) -> (i32, Value) {
    let isc = dir.join("isc.yaml");
    std::fs::write(
        &isc,
        format!(
            "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\nmirror:\n  \
             additionalImages:\n  - name: {}/csi/driver:v1\n{extra}",
            registry.host()
        ),
    )
    .unwrap();
    let out = run(&[
        "mirror-check",
        "--pre",
        "--from-imageset",
        isc.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    validate(&doc);
    (out.status.code().unwrap(), doc["images"][0].clone())
}

/// The report keeps to docs/report.schema.json (the new origin kind included).
fn validate(doc: &Value) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/report.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = v.iter_errors(doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}\n{doc:#}");
}

fn finding<'a>(image: &'a Value, rule: &str) -> Option<&'a Value> {
    image["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == rule)
}

#[test]
fn an_imageset_without_windows_fails_the_csi_image_before_mirroring() {
    let registry = Registry::start();
    registry.push_layout(&fixture("good"), "csi/driver", "v1");
    let dir = tempfile::tempdir().unwrap();

    // No filter: oc-mirror copies every platform (type_config.go AdditionalImage.Platforms).
    let (code, image) = pre_check(&registry, dir.path(), "");
    assert_eq!(code, 0, "{image:#}");
    assert_eq!(image["origins"][0]["kind"], "imageset");
    assert_eq!(image["origins"][0]["entry"], "mirror.additionalImages[0]");

    // linux/amd64 only: the Windows entries will be left out, the field is named.
    let (code, image) = pre_check(
        &registry,
        dir.path(),
        "    platforms:\n    - {os: linux, architecture: amd64}\n",
    );
    assert_eq!(code, 1, "{image:#}");
    assert_eq!(image["verdict"], "fail");
    let f = finding(&image, "mirror-platform-dropped").expect("mirror-platform-dropped");
    let message = f["message"].as_str().unwrap();
    assert!(
        message.contains("mirror.additionalImages[0].platforms in")
            && message.contains("windows/amd64 10.0.17763")
            && message.contains("{os: windows, architecture: amd64}"),
        "{message}"
    );
    assert_eq!(image["origins"][0]["platforms"][0], "linux/amd64");

    // windows/amd64 added: every Windows build is kept (the filter has no os.version).
    let (code, image) = pre_check(
        &registry,
        dir.path(),
        "    platforms:\n    - {os: linux, architecture: amd64}\n    - {os: windows, architecture: amd64}\n",
    );
    assert_eq!(code, 0, "{image:#}");
    assert!(finding(&image, "mirror-platform-dropped").is_none());
}

#[test]
fn a_target_repo_windows_nodes_will_not_look_in_is_named() {
    let registry = Registry::start();
    registry.push_layout(&fixture("good"), "csi/driver", "v1");
    let dir = tempfile::tempdir().unwrap();

    let (code, image) = pre_check(&registry, dir.path(), "    targetRepo: mirrored/driver\n");
    assert_eq!(code, 1, "{image:#}");
    let f = finding(&image, "mirror-target-moved").expect("mirror-target-moved");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("mirror.additionalImages[0].targetRepo in"),
        "{f:#}"
    );
    assert_eq!(image["origins"][0]["target_repo"], "mirrored/driver");

    // Keeping the source path under a namespace is what WMCO's per-host mirrors find.
    let (code, image) = pre_check(&registry, dir.path(), "    targetRepo: ocp4/csi/driver\n");
    assert_eq!(code, 0, "{image:#}");

    // A tag pull asks for the source tag.
    let (code, image) = pre_check(&registry, dir.path(), "    targetTag: v1-mirrored\n");
    assert_eq!(code, 1, "{image:#}");
    assert!(
        finding(&image, "mirror-target-moved").is_some(),
        "{image:#}"
    );

    // An invalid targetRepo makes oc-mirror skip the image: bad input naming the field.
    let isc = dir.path().join("bad.yaml");
    std::fs::write(
        &isc,
        format!(
            "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\nmirror:\n  \
             additionalImages:\n  - name: {}/csi/driver:v1\n    targetRepo: Not/Valid:tag\n",
            registry.host()
        ),
    )
    .unwrap();
    let out = run(&[
        "mirror-check",
        "--pre",
        "--from-imageset",
        isc.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("mirror.additionalImages[0].targetRepo") && stderr.contains("skips"),
        "{stderr}"
    );
}
