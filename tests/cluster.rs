//! `--from-manifests` and `--from-release` end to end (issue 13): the images of pod templates
//! judged for the hosts their pods can land on, a release payload's components, and both with
//! a cluster's nodes, against a real `docker-registry`.

use std::path::{Path, PathBuf};

use crate::common::{self, Registry, fixture, fixtures_dir, json_of, run_imgcheck as run};
use serde_json::Value;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// A DaemonSet running `image` as container `name`, on nodes of `os`, HostProcess or not,
/// tolerating WMCO's `os=Windows:NoSchedule` as the Windows CSI node DaemonSets do.
pub(crate) fn daemonset(
    ds: &str,
    os: &str,
    hostprocess: bool,
    containers: &[(&str, &str)],
) -> String {
    let security = match hostprocess {
        true => {
            "      securityContext:\n        windowsOptions:\n          hostProcess: true\n          runAsUserName: \"NT AUTHORITY\\\\SYSTEM\"\n      hostNetwork: true\n"
        }
        false => "",
    };
    let mut doc = format!(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: {ds}\n  namespace: openshift-cluster-csi-drivers\n\
         spec:\n  selector:\n    matchLabels: {{app: {ds}}}\n  template:\n    metadata:\n      labels: {{app: {ds}}}\n\
         \x20   spec:\n      nodeSelector:\n        kubernetes.io/os: {os}\n      tolerations:\n      - {{key: os, operator: Equal, value: Windows, effect: NoSchedule}}\n{security}      containers:\n"
    );
    for (name, image) in containers {
        doc.push_str(&format!("      - name: {name}\n        image: {image}\n"));
    }
    doc
}

/// The cluster fixture (WS2019 ×2, WS2022, WS2025 on containerd 1.7; amd64 and arm64 RHCOS
/// on cri-o), without the nodes `drop` says go.
fn cluster_without(dir: &Path, name: &str, drop: impl Fn(&Value) -> bool) -> String {
    let path: PathBuf = fixtures_dir().join("nodes").join("ocp-wmco.json");
    let mut c: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    c["items"].as_array_mut().unwrap().retain(|n| !drop(n));
    write(dir, name, &c.to_string())
}

/// Fails unless `doc` keeps to docs/report.schema.json (origins of both kinds included).
#[track_caller]
pub(crate) fn assert_schema(doc: &Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/report.schema.json");
    let schema: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let v = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:?}\n{doc:#}");
}

/// A registry holding the fixture layout `layout` as `repo_tag` (`REPO:TAG`), and the pull
/// spec of that image.
fn pushed(layout: &str, repo_tag: &str) -> (Registry, String) {
    let registry = Registry::start();
    let (repo, tag) = repo_tag.split_once(':').unwrap();
    registry.push_layout(&fixture(layout), repo, tag);
    let spec = format!("{}/{repo_tag}", registry.host());
    (registry, spec)
}

/// The cluster fixture without its Windows nodes.
fn linux_nodes(dir: &Path) -> String {
    cluster_without(dir, "linux.json", |n| {
        n["status"]["nodeInfo"]["operatingSystem"] == "windows"
    })
}

/// Fails unless every host row of `image` is a Windows host, HostProcess-isolated, `ok`.
#[track_caller]
fn assert_windows_hostprocess_only(image: &Value) {
    let hosts = image["hosts"].as_array().unwrap();
    assert!(!hosts.is_empty(), "{image:#}");
    for h in hosts {
        assert!(
            h["platform"].as_str().unwrap().starts_with("windows/"),
            "{h}"
        );
        assert_eq!(h["isolation"], "hostprocess", "{h}");
        assert_eq!(h["status"], "ok", "{h}");
    }
}

fn build_label(n: &Value) -> &str {
    n["metadata"]["labels"]["node.kubernetes.io/windows-build"]
        .as_str()
        .unwrap_or("")
}

fn rule_ids(image: &Value) -> Vec<String> {
    image["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

/// The "done when": the Azure File Windows node DaemonSet's HostProcess driver image,
/// published as a Windows-only list without os.version, passes: it is judged for the Windows
/// hosts only, with `hostprocess` isolation. Typed on its own, the same image fails (no
/// Linux entry, no os.version). JSON records the manifest, object and container.
#[test]
fn a_hostprocess_daemonsets_windows_only_image_passes() {
    let registry = Registry::start();
    registry.push_layout(&fixture("windows-hp-only"), "azure-file-csi-driver", "hp");
    registry.push_layout(&fixture("good"), "csi-node-driver-registrar", "v1");
    let driver = format!("{}/azure-file-csi-driver:hp", registry.host());
    let registrar = format!("{}/csi-node-driver-registrar:v1", registry.host());
    let dir = tempfile::tempdir().unwrap();
    let ds = write(
        dir.path(),
        "ds.yaml",
        &daemonset(
            "azure-file-csi-driver-node-windows",
            "windows",
            true,
            &[
                ("csi-driver", &driver),
                ("csi-node-driver-registrar", &registrar),
            ],
        ),
    );

    let out = run(&["verify", "--from-manifests", &ds, "--format", "json"]);
    let doc = json_of(&out);
    assert_eq!(out.status.code(), Some(0), "{doc:#}");
    let images = doc["images"].as_array().unwrap();
    assert_eq!(images.len(), 2, "one report per image");
    let image = &images[0];
    assert_eq!(image["reference"], driver.as_str());
    assert_eq!(image["verdict"], "pass");
    assert_eq!(
        image["origins"],
        serde_json::json!([{
            "kind": "manifest",
            "path": ds,
            "object": "DaemonSet openshift-cluster-csi-drivers/azure-file-csi-driver-node-windows",
            "container": "csi-driver"
        }])
    );
    assert_windows_hostprocess_only(image);

    // The same image typed: judged for the policy's Linux host too, and process-isolated.
    let out = run(&["verify", "--format", "json", &driver]);
    assert_eq!(out.status.code(), Some(1));
    let ids = rule_ids(&json_of(&out)["images"][0]);
    assert!(
        ids.contains(&"no-match".into()) && ids.contains(&"os-version-missing".into()),
        "{ids:?}"
    );

    // Typed as well as found in the DaemonSet: nothing says where else the typed one runs, so
    // the scope is dropped and it is judged for every host (docs/cluster.md, "Scope"); the
    // report still says where the manifest uses it.
    let out = run(&[
        "verify",
        &driver,
        "--from-manifests",
        &ds,
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json_of(&out);
    assert_eq!(doc["images"].as_array().unwrap().len(), 2, "{doc:#}");
    let image = &doc["images"][0];
    assert!(rule_ids(image).contains(&"no-match".into()), "{image:#}");
    assert_eq!(image["origins"][0]["container"], "csi-driver");
    assert!(
        image["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["platform"] == "linux/amd64"),
        "{image:#}"
    );

    // Not a HostProcess pod: process isolation, and the missing os.version fails it.
    let process = write(
        dir.path(),
        "process.yaml",
        &daemonset("drv", "windows", false, &[("csi-driver", &driver)]),
    );
    let out = run(&["verify", "--from-manifests", &process, "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let image = &json_of(&out)["images"][0];
    assert_eq!(rule_ids(image), ["os-version-missing"], "{image:#}");
    assert_eq!(image["hosts"][0]["isolation"], "process");
}

/// `--from-manifests` with `--nodes`: a Windows DaemonSet's image lacking a 17763 entry fails
/// on the cluster's WS2019 nodes (named), is not judged for its Linux nodes, and passes once
/// those nodes are gone. An image used by a Windows and a Linux DaemonSet is one report with
/// both origins, judged for both kinds of hosts.
#[test]
fn manifests_and_nodes_combine() {
    let (_registry, driver) = pushed("ltsc2022-only", "driver:v1");
    let dir = tempfile::tempdir().unwrap();
    let ds = write(
        dir.path(),
        "ds.yaml",
        &daemonset("drv-windows", "windows", false, &[("csi-driver", &driver)]),
    );
    let full = fixtures_dir().join("nodes").join("ocp-wmco.json");
    let full = full.to_str().unwrap();

    let out = run(&[
        "verify",
        "--from-manifests",
        &ds,
        "--nodes",
        full,
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let image = json_of(&out)["images"][0].clone();
    let messages: Vec<&str> = image["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert!(
        messages[0].starts_with("2 nodes (winworker-4kq8x, winworker-9tbzm) on windows/amd64:10.0.17763 would select nothing"),
        "{messages:?}"
    );
    assert!(
        image["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["platform"].as_str().unwrap().starts_with("windows/")),
        "the arm64 Linux worker lacks an entry too, but no pod of this image lands there: {image:#}"
    );

    let no2019 = cluster_without(dir.path(), "no2019.json", |n| {
        build_label(n) == "10.0.17763"
    });
    let out = run(&["verify", "--from-manifests", &ds, "--nodes", &no2019]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(
            "from DaemonSet openshift-cluster-csi-drivers/drv-windows container csi-driver"
        ),
        "{stdout}"
    );

    // The same image also in a Linux DaemonSet: judged for the Linux hosts as well, where the
    // arm64 worker gets no match.
    let both = format!(
        "{}---\n{}",
        daemonset("drv-windows", "windows", false, &[("csi-driver", &driver)]),
        daemonset("drv-linux", "linux", false, &[("csi-driver", &driver)])
    );
    let both = write(dir.path(), "both.yaml", &both);
    let out = run(&[
        "verify",
        "--from-manifests",
        &both,
        "--nodes",
        &no2019,
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json_of(&out);
    assert_eq!(doc["images"].as_array().unwrap().len(), 1);
    let image = &doc["images"][0];
    assert_eq!(image["origins"].as_array().unwrap().len(), 2, "{image:#}");
    let text = image["findings"].to_string();
    assert!(
        text.contains("on linux/arm64 would select nothing"),
        "{text}"
    );
}

/// A DaemonSet whose pods can land on no node judged: the image's content is checked, the
/// host matrix is empty, and a warning says why (never a silent pass with nothing judged).
#[test]
fn pods_that_land_nowhere_get_a_warning() {
    let (_registry, driver) = pushed("good", "driver:v1");
    let dir = tempfile::tempdir().unwrap();
    let ds = write(
        dir.path(),
        "ds.yaml",
        &daemonset("drv-windows", "windows", false, &[("csi-driver", &driver)]),
    );
    let linux_only = linux_nodes(dir.path());
    let out = run(&[
        "verify",
        "--from-manifests",
        &ds,
        "--nodes",
        &linux_only,
        "--format",
        "json",
    ]);
    let image = json_of(&out)["images"][0].clone();
    assert_eq!(out.status.code(), Some(0), "{image:#}");
    assert_eq!(image["hosts"], serde_json::json!([]));
    let warning = image["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "no-host-in-scope")
        .unwrap_or_else(|| panic!("{image:#}"));
    assert_eq!(warning["severity"], "warning");
    assert!(
        warning["message"]
            .as_str()
            .unwrap()
            .contains("kubernetes.io/os In [windows]"),
        "{warning}"
    );
}

/// Issue 37, item 3: a Windows DaemonSet without the WMCO toleration runs on no node of the
/// cluster: an error (exit 1) naming the taint that keeps it out, not a warning.
#[test]
fn a_windows_daemonset_that_tolerates_no_windows_node_fails() {
    let (_registry, driver) = pushed("good", "driver:v1");
    let dir = tempfile::tempdir().unwrap();
    let untolerating = daemonset("drv-windows", "windows", false, &[("csi-driver", &driver)])
        .replace(
            "      tolerations:\n      - {key: os, operator: Equal, value: Windows, effect: NoSchedule}\n",
            "",
        );
    assert!(!untolerating.contains("tolerations"), "{untolerating}");
    let ds = write(dir.path(), "ds.yaml", &untolerating);
    let nodes = fixtures_dir().join("nodes/ocp-wmco.json");
    let args = ["verify", "--from-manifests", &ds, "--format", "json"];
    let out = run(&[&args[..], &["--nodes", nodes.to_str().unwrap()]].concat());
    let image = json_of(&out)["images"][0].clone();
    assert_eq!(out.status.code(), Some(1), "{image:#}");
    let error = image["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "no-host-in-scope")
        .unwrap_or_else(|| panic!("{image:#}"));
    assert_eq!(error["severity"], "error", "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("os=Windows:NoSchedule"), "{message}");
    assert!(message.contains("no pod of it runs"), "{message}");
}

/// A Pod named `p` with one container and `extra` (one line of YAML) in its spec.
fn pod_with(extra: &str) -> String {
    format!(
        "kind: Pod\napiVersion: v1\nmetadata: {{name: p}}\nspec:\n  containers: [{{name: c, image: r.example/a:1}}]\n  {extra}\n"
    )
}

/// Bad pod templates exit 2 naming the file, the object and the field.
#[test]
fn bad_manifests_exit_2_naming_file_object_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            daemonset("drv", "windows", true, &[("csi-driver", "${DRIVER_IMAGE}")]),
            "DaemonSet openshift-cluster-csi-drivers/drv",
            "containers[0] (csi-driver).image",
        ),
        (
            "apiVersion: v1\nmetadata: {name: x}\n".to_string(),
            "document 1",
            "kind",
        ),
        (
            "kind: ConfigMap\napiVersion: v1\nmetadata: {name: x}\n".to_string(),
            "bad.yaml",
            "no",
        ),
        // Issue 33 item 4: what the API server refuses (ValidateTolerations,
        // ValidateNodeSelectorRequirement, ValidateLabels).
        (
            pod_with(
                "tolerations: [{key: a, operator: Exists, effect: NoSchedule, tolerationSeconds: 9}]",
            ),
            "Pod p",
            "spec.tolerations[0].effect: 'NoSchedule' must be NoExecute when tolerationSeconds is set",
        ),
        (
            pod_with(
                "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: a, operator: NotIn, values: ['x y']}]}]}}}",
            ),
            "Pod p",
            "matchExpressions[0].values[0]: 'x y' is not a label value",
        ),
        (
            pod_with(&format!(
                "nodeSelector: {{kubernetes.io/os: {}}}",
                "w".repeat(70)
            )),
            "Pod p",
            "spec.nodeSelector: 'wwww",
        ),
    ];
    for (text, object, field) in cases {
        let path = write(dir.path(), "bad.yaml", &text);
        // Local input is read first: a release that cannot be reached does not hide it.
        let out = run(&[
            "--retries",
            "0",
            "verify",
            "--from-manifests",
            &path,
            "--from-release",
            "127.0.0.1:1/ocp/release:4.18.0",
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert!(err.contains(&format!("manifests {path}")), "{text}: {err}");
        let out = run(&["verify", "--from-manifests", &path]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert!(
            err.contains(&format!("manifests {path}"))
                && err.contains(object)
                && err.contains(field),
            "{text}: {err}"
        );
    }
}

/// A test registry holding a `-multi` release whose components are the fixture layouts named,
/// pushed under `ocp/<component>:v1`; returns the registry and the release reference.
fn release_with(components: &[(&str, &str)], omit: &[&str]) -> (Registry, String) {
    let registry = Registry::start();
    let mut refs = Vec::new();
    for (name, layout) in components {
        let digest = registry.push_layout(&fixture(layout), &format!("ocp/{name}"), "v1");
        refs.push((*name, format!("{}/ocp/{name}@{digest}", registry.host())));
    }
    let named: Vec<(&str, &str)> = refs
        .iter()
        .filter(|(n, _)| !omit.contains(n))
        .map(|(n, r)| (*n, r.as_str()))
        .collect();
    let release =
        common::release::push_release_multi(&registry, "ocp/release", "4.18.0-multi", &named);
    (registry, release)
}

const COMPONENTS: [(&str, &str); 4] = [
    ("azure-file-csi-driver", "good"),
    ("vsphere-csi-driver", "linux-only-list"),
    ("csi-node-driver-registrar", "good"),
    ("csi-livenessprobe", "good"),
];

/// The "done when": a release whose vSphere driver lacks Windows fails naming that
/// component; a component the payload lacks is `release-image-missing`; JSON records the
/// release, its digest and version, and the tag of each image.
#[test]
fn a_release_with_a_component_lacking_windows_fails_naming_it() {
    let (_registry, release) = release_with(&COMPONENTS, &["csi-livenessprobe"]);
    let out = run(&["verify", "--from-release", &release, "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json_of(&out);
    assert_schema(&doc);
    let images = doc["images"].as_array().unwrap();
    let verdicts: Vec<(&str, &str)> = images
        .iter()
        .map(|i| {
            (
                i["origins"][0]["tag"].as_str().unwrap(),
                i["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("azure-file-csi-driver", "pass"),
            ("vsphere-csi-driver", "fail"),
            ("csi-node-driver-registrar", "pass"),
            ("csi-livenessprobe", "fail"),
        ],
        "{doc:#}"
    );
    let vsphere = &images[1];
    assert!(
        vsphere["reference"]
            .as_str()
            .unwrap()
            .contains("/ocp/vsphere-csi-driver@sha256:")
    );
    assert_eq!(rule_ids(vsphere), ["no-match", "no-match"], "{vsphere:#}");
    let origin = &vsphere["origins"][0];
    assert_eq!(origin["kind"], "release");
    assert_eq!(origin["release"], release.trim_start_matches("docker://"));
    assert_eq!(origin["version"], "4.18.0");
    assert!(
        origin["release_digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    let missing = &images[3];
    assert_eq!(rule_ids(missing), ["release-image-missing"]);
    assert!(
        missing["reference"]
            .as_str()
            .unwrap()
            .ends_with("#csi-livenessprobe")
    );
    assert!(
        missing["findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("release 4.18.0 has no component 'csi-livenessprobe'"),
        "{missing:#}"
    );

    // Konflux: the TEST_OUTPUT shape (docs/report.schema.json), the missing component counted
    // as a failure and named in the note.
    let out = run(&["verify", "--from-release", &release, "--format", "konflux"]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json_of(&out);
    assert_schema(&doc);
    assert_eq!(doc["result"], "FAILURE", "{doc:#}");
    assert_eq!(doc["failures"], 2, "{doc:#}");
    let note = doc["note"].as_str().unwrap();
    assert!(
        note.contains("#csi-livenessprobe: release-image-missing"),
        "{note}"
    );

    // The text report names the component under each image; --stats counts the release's
    // reading apart (the index and its amd64 child, then the layer holding the file).
    let out = run(&["verify", "--stats", "--from-release", &release]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("FAIL") && stdout.contains("component vsphere-csi-driver"),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("imgcheck: reading the release: requests: 2 manifest, 1 blob"),
        "{stderr}"
    );

    // --release-image picks the components instead of the policy.
    let out = run(&[
        "verify",
        "--from-release",
        &release,
        "--release-image",
        "azure-file-csi-driver",
        "--release-image",
        "csi-node-driver-registrar",
        "--format",
        "json",
    ]);
    let doc = json_of(&out);
    assert_eq!(out.status.code(), Some(0), "{doc:#}");
    assert_eq!(doc["images"].as_array().unwrap().len(), 2);
}

/// One raw USTAR tar entry named `name` exactly (`tar::Builder` would refuse or rewrite some
/// names), its data padded to whole blocks.
fn raw_tar_entry(name: &str, data: &[u8]) -> Vec<u8> {
    let mut h = tar::Header::new_ustar();
    h.as_mut_bytes()[..name.len()].copy_from_slice(name.as_bytes());
    h.set_size(data.len() as u64);
    h.set_mode(0o644);
    h.set_entry_type(tar::EntryType::Regular);
    h.set_cksum();
    let mut out = h.as_bytes().to_vec();
    out.extend_from_slice(data);
    out.resize(512 + data.len().div_ceil(512) * 512, 0);
    out
}

/// Issue 22, item 1: a release whose lower layer names the failing vSphere driver and whose
/// top layer holds a decoy `image-references` naming a good one. Go's archive/tar (golang/go
/// src/archive/tar/reader.go, Reader.readHeader) and containers/storage's UnpackLayer see the
/// lower list, so the verdict is the failing one; one zero block then a header is a layer no
/// runtime unpacks, never a pass.
#[test]
fn a_decoy_image_references_is_read_as_runtimes_read_it() {
    let registry = Registry::start();
    let mut pinned = Vec::new();
    for layout in ["linux-only-list", "good"] {
        let digest = registry.push_layout(&fixture(layout), "ocp/vsphere-csi-driver", layout);
        pinned.push(format!(
            "{}/ocp/vsphere-csi-driver@{digest}",
            registry.host()
        ));
    }
    let refs = |image: &str| common::release::image_references(&[("vsphere-csi-driver", image)]);
    let (failing, decoy) = (refs(&pinned[0]), refs(&pinned[1]));
    let lower = common::release::tar_of(&[("release-manifests/image-references", &failing)]);
    let metadata = raw_tar_entry("release-manifests/release-metadata", b"{}");
    let decoy_entry = raw_tar_entry("release-manifests/image-references", &decoy);
    let zero = vec![0u8; 512];
    let cases: [(&str, Vec<u8>, Option<&str>); 3] = [
        (
            "after-the-end-marker",
            [&metadata[..], &zero, &zero, &decoy_entry, &zero, &zero].concat(),
            None,
        ),
        (
            "backslash",
            [
                raw_tar_entry("release-manifests\\image-references", &decoy),
                zero.clone(),
                zero.clone(),
            ]
            .concat(),
            None,
        ),
        (
            "one-zero-block",
            [&metadata[..], &zero, &decoy_entry, &zero, &zero].concat(),
            Some("a zero block followed by a header"),
        ),
    ];
    for (tag, top, error) in cases {
        let release = common::release::push_release_tars(
            &registry,
            "ocp/release",
            tag,
            &[lower.clone(), top],
        );
        let out = run(&[
            "verify",
            "--from-release",
            &release,
            "--release-image",
            "vsphere-csi-driver",
            "--format",
            "json",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if let Some(want) = error {
            assert_eq!(out.status.code(), Some(2), "{tag}: {stderr}");
            assert!(stderr.contains(want), "{tag}: {stderr}");
            continue;
        }
        let doc = json_of(&out);
        assert_eq!(out.status.code(), Some(1), "{tag}: {doc:#}");
        let image = &doc["images"][0];
        assert_eq!(image["reference"], pinned[0].as_str(), "{tag}: {doc:#}");
        assert_eq!(image["verdict"], "fail", "{tag}: {doc:#}");
    }
}

/// One raw USTAR symbolic link entry `name` -> `target`.
fn raw_tar_link(name: &str, target: &str) -> Vec<u8> {
    let mut h = tar::Header::new_ustar();
    h.as_mut_bytes()[..name.len()].copy_from_slice(name.as_bytes());
    h.as_mut_bytes()[157..157 + target.len()].copy_from_slice(target.as_bytes());
    h.set_size(0);
    h.set_mode(0o777);
    h.set_entry_type(tar::EntryType::Symlink);
    h.set_cksum();
    h.as_bytes().to_vec()
}

/// Issue 22: a symbolic link at `release-manifests` or at `release-manifests/image-references`.
/// The cluster-version operator reads the file from the release image's unpacked filesystem,
/// where the OS follows the link; `oc adm release extract` takes only the regular files whose
/// names start with `release-manifests/` (openshift/oc pkg/cli/admin/release/extract.go,
/// `ExtractOptions.Run`: a mapping from `release-manifests/` with `OnlyFiles`). The two can
/// read different lists, so imgcheck refuses the release, naming the link, and never reads the
/// decoy written under the linked name ("link-then-decoy" passed before: the decoy was read).
#[test]
fn a_symbolic_link_in_the_release_manifests_path_is_refused() {
    let registry = Registry::start();
    let mut pinned = Vec::new();
    for layout in ["linux-only-list", "good"] {
        let digest = registry.push_layout(&fixture(layout), "ocp/vsphere-csi-driver", layout);
        pinned.push(format!(
            "{}/ocp/vsphere-csi-driver@{digest}",
            registry.host()
        ));
    }
    let refs = |image: &str| common::release::image_references(&[("vsphere-csi-driver", image)]);
    let (failing, decoy) = (refs(&pinned[0]), refs(&pinned[1]));
    let zero = vec![0u8; 512];
    let end = [zero.clone(), zero].concat();
    let base = common::release::tar_of(&[("etc/os-release", b"ID=rhel\n")]);
    let cases: [(&str, Vec<u8>, Vec<u8>, &str); 3] = [
        (
            "link-then-decoy",
            base.clone(),
            [
                raw_tar_link("release-manifests", "payload"),
                raw_tar_entry("release-manifests/image-references", &decoy),
                raw_tar_entry("payload/image-references", &failing),
                end.clone(),
            ]
            .concat(),
            "release-manifests",
        ),
        (
            "link-in-a-lower-layer",
            [
                raw_tar_link("release-manifests", "/payload"),
                raw_tar_entry("payload/image-references", &failing),
                end.clone(),
            ]
            .concat(),
            common::release::tar_of(&[("etc/motd", b"hello\n")]),
            "release-manifests",
        ),
        (
            "link-at-the-file",
            common::release::tar_of(&[("payload/image-references", &failing)]),
            [
                raw_tar_link(
                    "release-manifests/image-references",
                    "../payload/image-references",
                ),
                end.clone(),
            ]
            .concat(),
            "release-manifests/image-references",
        ),
    ];
    for (tag, lower, top, link) in cases {
        let release =
            common::release::push_release_tars(&registry, "ocp/release", tag, &[lower, top]);
        let out = run(&[
            "verify",
            "--from-release",
            &release,
            "--release-image",
            "vsphere-csi-driver",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(2), "{tag}: {stdout}{stderr}");
        assert!(
            stderr.contains(&format!("\"{link}\" is a symbolic link"))
                && stderr.contains("pkg/cli/admin/release/extract.go"),
            "{tag}: {stderr}"
        );
    }
}

/// Release, pod templates and nodes together: the DaemonSet uses the release's driver image,
/// so it is one report with both origins, judged for every host (a release component is
/// judged for all of them); the host rows name the cluster's nodes.
#[test]
fn release_manifests_and_nodes_combine() {
    let (registry, release) = release_with(&COMPONENTS[..1], &[]);
    let digest = registry
        .manifest_digest("ocp/azure-file-csi-driver", "v1")
        .unwrap();
    let driver = format!("{}/ocp/azure-file-csi-driver@{digest}", registry.host());
    let dir = tempfile::tempdir().unwrap();
    let ds = write(
        dir.path(),
        "ds.yaml",
        &daemonset("drv-windows", "windows", true, &[("csi-driver", &driver)]),
    );
    let nodes = fixtures_dir().join("nodes").join("ocp-wmco.json");
    let out = run(&[
        "verify",
        "--from-release",
        &release,
        "--release-image",
        "azure-file-csi-driver",
        "--from-manifests",
        &ds,
        "--nodes",
        nodes.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let doc = json_of(&out);
    assert_eq!(out.status.code(), Some(0), "{doc:#}");
    assert_schema(&doc);
    let images = doc["images"].as_array().unwrap();
    assert_eq!(images.len(), 1, "{doc:#}");
    let kinds: Vec<&str> = images[0]["origins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["release", "manifest"]);
    let hosts = images[0]["hosts"].as_array().unwrap();
    assert!(
        hosts.iter().any(|h| h["platform"] == "linux/amd64"),
        "{hosts:?}"
    );

    // With --from-file: the listed image is the release's component (pinned by digest, listed
    // by tag and digest), so it is one report; its origins are the release's.
    let list = write(
        dir.path(),
        "list.txt",
        &format!(
            "{}/ocp/azure-file-csi-driver:v1@{digest}
",
            registry.host()
        ),
    );
    let out = run(&[
        "verify",
        "--from-release",
        &release,
        "--release-image",
        "azure-file-csi-driver",
        "--from-file",
        &list,
        "--format",
        "json",
    ]);
    let doc = json_of(&out);
    assert_eq!(out.status.code(), Some(0), "{doc:#}");
    let images = doc["images"].as_array().unwrap();
    assert_eq!(images.len(), 1, "{doc:#}");
    assert_eq!(images[0]["origins"][0]["kind"], "release", "{doc:#}");
    assert!(
        hosts
            .iter()
            .all(|h| !h["nodes"].as_array().unwrap().is_empty())
    );
}

/// Bad release inputs: not a release, a policy naming no components, a release that does
/// not exist — exit 2 naming the reference.
#[test]
fn bad_release_inputs_exit_2() {
    let registry = Registry::start();
    registry.push_layout(&fixture("good"), "ocp/not-a-release", "v1");
    let not_release = registry.docker_ref("ocp/not-a-release", "v1");
    let out = run(&["verify", "--from-release", &not_release]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("ocp/not-a-release") && err.contains("image-references"),
        "{err}"
    );

    let out = run(&[
        "verify",
        "--policy",
        "linux-only",
        "--from-release",
        &not_release,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("policy 'linux-only' names no release components"),
        "{err}"
    );

    // An empty component name is no component (and no report could name it).
    let out = run(&[
        "verify",
        "--from-release",
        &not_release,
        "--release-image",
        "",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--release-image"), "{err}");

    let absent = registry.docker_ref("ocp/release", "4.99.0");
    let out = run(&["verify", "--from-release", &absent]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("ocp/release:4.99.0"), "{err}");
}

/// `mirror-check --from-release`: the pre-mirror gate of a release. The mirror holds three of
/// the four components; the one left behind is `mirror-missing`, the one the payload lacks is
/// `release-image-missing`.
#[test]
fn mirror_check_checks_a_releases_components_against_the_mirror() {
    let (source, release) = release_with(&COMPONENTS, &["csi-livenessprobe"]);
    let mirror = Registry::start();
    for (name, _) in &COMPONENTS[..2] {
        common::skopeo_copy_all(
            &source.docker_ref(&format!("ocp/{name}"), "v1"),
            &mirror.docker_ref(&format!("mirror/ocp/{name}"), "v1"),
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let idms = write(
        dir.path(),
        "idms.yaml",
        &format!(
            "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {{name: release}}\n\
             spec:\n  imageDigestMirrors:\n  - source: {}/ocp\n    mirrors: [{}/mirror/ocp]\n",
            source.host(),
            mirror.host()
        ),
    );
    let out = run(&[
        "mirror-check",
        "--idms",
        &idms,
        "--from-release",
        &release,
        "--os",
        "linux",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json_of(&out);
    let got: Vec<(String, Vec<String>)> = doc["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let errors = i["findings"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["severity"] == "error")
                .map(|f| f["rule"].as_str().unwrap().to_string())
                .collect();
            (i["origins"][0]["tag"].as_str().unwrap().to_string(), errors)
        })
        .collect();
    let want = [
        ("azure-file-csi-driver", vec![]),
        ("vsphere-csi-driver", vec![]),
        (
            "csi-node-driver-registrar",
            vec!["mirror-missing".to_string()],
        ),
        (
            "csi-livenessprobe",
            vec!["release-image-missing".to_string()],
        ),
    ];
    let want: Vec<(String, Vec<String>)> =
        want.into_iter().map(|(n, r)| (n.to_string(), r)).collect();
    assert_eq!(got, want, "{doc:#}");
}

/// The fixture DaemonSets as the operator renders them (fixtures/manifests/), with their
/// images pushed to the test registry: the Windows HostProcess DaemonSet's driver and probe are
/// Windows-only lists, its registrar a full list; the Linux DaemonSet's images full lists. On
/// the fixture cluster every image passes, each judged only where its pods land.
#[test]
fn the_azure_file_daemonsets_pass_on_the_wmco_cluster() {
    let registry = Registry::start();
    let host = registry.host();
    let mut refs = Vec::new();
    for (repo, layout) in [
        ("windows/csi-driver", "windows-hp-only"),
        ("windows/csi-node-driver-registrar", "good"),
        ("windows/csi-liveness-probe", "windows-hp-only"),
        ("linux/azure-inject-credentials", "good"),
        ("linux/csi-driver", "good"),
        ("linux/csi-node-driver-registrar", "good"),
        ("linux/csi-liveness-probe", "good"),
    ] {
        registry.push_layout(&fixture(layout), &format!("ocp/{repo}"), "v1");
        refs.push(format!("{host}/ocp/{repo}:v1"));
    }
    let text =
        std::fs::read_to_string(fixtures_dir().join("manifests/azure-file-csi-node-windows.yaml"))
            .unwrap();
    let mut local = refs.iter();
    let text: String = text
        .lines()
        .map(|l| match l.split_once("image: quay.io/") {
            Some((indent, _)) => format!("{indent}image: {}\n", local.next().unwrap()),
            None => format!("{l}\n"),
        })
        .collect();
    assert!(local.next().is_none(), "every fixture image was replaced");
    let dir = tempfile::tempdir().unwrap();
    let ds = write(dir.path(), "rendered.yaml", &text);
    let nodes = fixtures_dir().join("nodes").join("ocp-wmco.json");
    let out = run(&[
        "verify",
        "--from-manifests",
        &ds,
        "--nodes",
        nodes.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let doc = json_of(&out);
    assert_eq!(out.status.code(), Some(0), "{doc:#}");
    let all = doc["images"].as_array().unwrap();
    // The Linux and Windows DaemonSets pair as one driver: a report per container both run,
    // after the images, each naming no claim it cannot make.
    let (drivers, images): (Vec<&Value>, Vec<&Value>) =
        (all.iter()).partition(|i| i["reference"].as_str().unwrap().starts_with("driver "));
    assert_eq!((images.len(), drivers.len()), (7, 3), "{doc:#}");
    assert!(
        drivers.iter().all(|d| d["verdict"] == "pass"),
        "{drivers:#?}"
    );
    for (i, image) in images.iter().enumerate() {
        let windows = i < 3;
        for h in image["hosts"].as_array().unwrap() {
            let on_windows = h["platform"].as_str().unwrap().starts_with("windows/");
            assert_eq!(on_windows, windows, "{image:#}");
            if windows {
                assert_eq!(h["isolation"], "hostprocess");
            }
        }
        let object = image["origins"][0]["object"].as_str().unwrap();
        assert_eq!(object.ends_with("-windows"), windows, "{object}");
    }
}

/// `mirror-check --pre --from-manifests`: the pre-mirror gate judges each image for the hosts
/// its pods can land on, as `verify` does: the HostProcess driver's Windows-only list passes,
/// and an image whose pods land on no host judged gets the `no-host-in-scope` warning.
#[test]
fn mirror_check_pre_judges_pod_images_in_their_scope() {
    let (_registry, driver) = pushed("windows-hp-only", "azure-file-csi-driver:hp");
    let dir = tempfile::tempdir().unwrap();
    let ds = write(
        dir.path(),
        "ds.yaml",
        &daemonset("drv", "windows", true, &[("csi-driver", &driver)]),
    );
    let args = [
        "mirror-check",
        "--pre",
        "--from-manifests",
        &ds,
        "--format",
        "json",
    ];
    let out = run(&args);
    let doc = json_of(&out);
    assert_eq!(out.status.code(), Some(0), "{doc:#}");
    assert_schema(&doc);
    let image = &doc["images"][0];
    assert_eq!(image["origins"][0]["container"], "csi-driver", "{image:#}");
    assert_windows_hostprocess_only(image);

    let linux_only = linux_nodes(dir.path());
    let out = run(&[&args[..], &["--nodes", &linux_only]].concat());
    let image = json_of(&out)["images"][0].clone();
    assert_eq!(out.status.code(), Some(0), "{image:#}");
    assert_eq!(image["hosts"], serde_json::json!([]));
    assert!(
        rule_ids(&image).contains(&"no-host-in-scope".to_string()),
        "{image:#}"
    );
}

/// An image pulled by an init container says so in its origin (JSON `init: true`, text
/// "init container"), and the JSON still keeps to the schema.
#[test]
fn an_init_containers_image_is_named_as_such() {
    let (_registry, image) = pushed("good", "init:v1");
    let dir = tempfile::tempdir().unwrap();
    let ds = write(
        dir.path(),
        "ds.yaml",
        &format!(
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: drv, namespace: ns}}\n\
             spec:\n  template:\n    spec:\n      initContainers:\n      - name: setup\n        image: {image}\n\
             \x20     containers:\n      - name: main\n        image: {image}\n"
        ),
    );
    let out = run(&["verify", "--from-manifests", &ds, "--format", "json"]);
    let doc = json_of(&out);
    assert_eq!(out.status.code(), Some(0), "{doc:#}");
    assert_schema(&doc);
    let origins = doc["images"][0]["origins"].as_array().unwrap();
    let inits: Vec<(&str, &Value)> = origins
        .iter()
        .map(|o| (o["container"].as_str().unwrap(), &o["init"]))
        .collect();
    assert_eq!(
        inits,
        [("main", &Value::Null), ("setup", &Value::Bool(true))]
    );
    let out = run(&["verify", "--from-manifests", &ds]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("from DaemonSet ns/drv init container setup"),
        "{stdout}"
    );
}
