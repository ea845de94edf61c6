//! `imgcheck mirror-check` end to end: a source and a mirror, each a real `docker-registry`,
//! mirrored with skopeo (correctly, partially, without foreign layers) or by hand, under
//! IDMS, ITMS, ICSP and registries.conf configurations.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::{self, Registry, fixture, imgcheck, layout_top_digest, skopeo_copy_all};
use serde_json::Value;

const REPO: &str = "csi/driver";

/// A source registry holding `fixture` as `csi/driver:v1`, and an empty mirror.
struct Pair {
    source: Registry,
    mirror: Registry,
    /// The source's top digest.
    digest: String,
    dir: tempfile::TempDir,
}

impl Pair {
    fn new(fixture_name: &str) -> Pair {
        let source = Registry::start();
        let mirror = Registry::start();
        let digest = source.push_layout(&fixture(fixture_name), REPO, "v1");
        assert_eq!(digest, layout_top_digest(&fixture(fixture_name)));
        Pair {
            source,
            mirror,
            digest,
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn by_tag(&self) -> String {
        format!("{}/{REPO}:v1", self.source.host())
    }

    fn by_digest(&self) -> String {
        format!("{}/{REPO}@{}", self.source.host(), self.digest)
    }

    /// `skopeo copy --all --preserve-digests` of the source to `mirror/<repo>:v1`.
    fn mirror_all(&self, repo: &str) {
        skopeo_copy_all(
            &self.source.docker_ref(REPO, "v1"),
            &self.mirror.docker_ref(repo, "v1"),
        );
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create config dir");
        }
        std::fs::write(&path, text).expect("write config");
        path
    }

    /// An IDMS mapping the source's `csi` namespace to `mirror/mirror/csi`.
    fn idms(&self, policy: &str) -> PathBuf {
        self.write(
            "idms.yaml",
            &format!(
                "---\napiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata:\n  name: idms-release\n\
                 spec:\n  imageDigestMirrors:\n  - source: {}/csi\n    mirrors:\n    - {}/mirror/csi\n{policy}",
                self.source.host(),
                self.mirror.host()
            ),
        )
    }
}

/// Runs imgcheck; a `mirror-check` without `--os` checks Linux nodes only (these tests are
/// about registries.conf semantics; Windows nodes: tests/wmco.rs).
fn run(args: &[&str]) -> Output {
    let mut args = args.to_vec();
    if args.first() == Some(&"mirror-check") && !args.contains(&"--os") {
        args.extend(["--os", "linux"]);
    }
    let out = imgcheck().args(&args).output().expect("imgcheck runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "imgcheck panicked: {stderr}");
    out
}

/// Runs `mirror-check … --format json`; returns the exit code and the one image report.
fn check(config: &[&str], reference: &str, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["mirror-check"];
    args.extend_from_slice(config);
    args.push(reference);
    args.extend_from_slice(&["--format", "json"]);
    args.extend_from_slice(extra);
    let out = run(&args);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let image = doc["images"][0].clone();
    assert_eq!(image["reference"].as_str(), Some(reference), "{doc:#}");
    (out.status.code().expect("exit code"), image)
}

fn rules(image: &Value, severity: &str) -> BTreeSet<String> {
    image["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["severity"] == severity)
        .map(|f| f["rule"].as_str().expect("rule").to_string())
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn message(image: &Value, rule: &str) -> String {
    image["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["rule"] == rule)
        .unwrap_or_else(|| panic!("no {rule} finding in {image:#}"))["message"]
        .as_str()
        .expect("message")
        .to_string()
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

const W17763: &str = "sha256:a41a56813feb41490c49d16e773932b1b976e7ea274765a1ba60d9676e655d9f";
const W20348: &str = "sha256:8888abdb127247b9029b295a056efda3ab86a1b275850c397f6d51b1be2b1b58";

#[test]
fn a_full_mirror_passes_under_idms() {
    let pair = Pair::new("good");
    pair.mirror_all("mirror/csi/driver");
    let idms = pair.idms("");
    let (code, image) = check(&["--idms", path(&idms)], &pair.by_digest(), &[]);
    assert_eq!(code, 0, "{image:#}");
    assert_eq!(image["verdict"], "pass");
    assert_eq!(image["digest"].as_str(), Some(pair.digest.as_str()));
    assert!(rules(&image, "error").is_empty(), "{image:#}");
    let resolved = message(&image, "mirror-resolved");
    let expected = format!("{}/mirror/csi/driver@{}", pair.mirror.host(), pair.digest);
    assert!(resolved.contains(&expected), "{resolved}");

    // By tag: IDMS mirrors serve digest pulls only. Reported; the mirror is still checked
    // at the source's digest, and holds it.
    let (code, image) = check(&["--idms", path(&idms)], &pair.by_tag(), &[]);
    assert_eq!(code, 0, "{image:#}");
    assert_eq!(rules(&image, "warning"), set(&["mirror-tag-ignored"]));
    // With NeverContactSource a tag pull fails outright: an error.
    let blocked = pair.idms("    mirrorSourcePolicy: NeverContactSource\n");
    let (code, image) = check(&["--idms", path(&blocked)], &pair.by_tag(), &[]);
    assert_eq!(code, 1, "{image:#}");
    assert_eq!(rules(&image, "error"), set(&["mirror-tag-ignored"]));
}

/// `skopeo copy` without `--all`: only the host platform's image reaches the mirror tag.
fn skopeo_copy_single(src: &str, dst: &str) {
    let out = Command::new("skopeo")
        .args([
            "--insecure-policy",
            "copy",
            "--src-tls-verify=false",
            "--dest-tls-verify=false",
            "--override-os",
            "linux",
            "--override-arch",
            "amd64",
            src,
            dst,
        ])
        .stdin(Stdio::null())
        .output()
        .expect("skopeo runs");
    assert!(
        out.status.success(),
        "skopeo copy {src} {dst}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_single_platform_copy_differs_and_drops_windows() {
    let pair = Pair::new("good");
    skopeo_copy_single(
        &pair.source.docker_ref(REPO, "v1"),
        &pair.mirror.docker_ref("mirror/csi/driver", "v1"),
    );
    let idms = pair.idms("");
    // By tag: the mirror's tag names a single linux/amd64 image, not the source's list.
    let (code, image) = check(&["--idms", path(&idms)], &pair.by_tag(), &[]);
    assert_eq!(code, 1, "{image:#}");
    assert_eq!(image["verdict"], "fail");
    assert_eq!(
        rules(&image, "error"),
        set(&["mirror-digest-differs", "mirror-platform-dropped"])
    );
    assert!(message(&image, "mirror-digest-differs").contains("single linux/amd64 image"));
    let dropped = message(&image, "mirror-platform-dropped");
    assert!(
        dropped.contains(W17763) && dropped.contains(W20348),
        "{dropped}"
    );
    // By digest alone there is no tag to compare with: the image is simply missing.
    let (code, image) = check(&["--idms", path(&idms)], &pair.by_digest(), &[]);
    assert_eq!(code, 1, "{image:#}");
    assert_eq!(rules(&image, "error"), set(&["mirror-missing"]));
}

#[test]
fn a_rebuilt_list_under_itms_differs_and_names_the_dropped_entries() {
    let pair = Pair::new("good");
    pair.mirror_all("mirror/csi/driver");
    // Rebuild the list without its ltsc2019 entry, as `oc image mirror --filter-by-os` or
    // `crane index filter` do, and push it over the tag.
    let (status, body) = pair.mirror.get_manifest("mirror/csi/driver", "v1");
    assert_eq!(status, 200);
    let mut index: Value = serde_json::from_slice(&body).expect("index JSON");
    index["manifests"]
        .as_array_mut()
        .expect("manifests")
        .retain(|d| d["digest"] != W17763);
    let rebuilt = serde_json::to_vec(&index).expect("serialise");
    let resp = pair
        .mirror
        .client()
        .put(pair.mirror.url("/v2/mirror/csi/driver/manifests/v1"))
        .header("Content-Type", "application/vnd.oci.image.index.v1+json")
        .body(rebuilt)
        .send()
        .expect("PUT rebuilt index");
    assert_eq!(resp.status().as_u16(), 201);
    let itms = pair.write(
        "itms.yaml",
        &format!(
            "apiVersion: config.openshift.io/v1\nkind: ImageTagMirrorSet\nmetadata:\n  name: tags\n\
             spec:\n  imageTagMirrors:\n  - source: {}/csi/driver\n    mirrors: [{}/mirror/csi/driver]\n",
            pair.source.host(),
            pair.mirror.host()
        ),
    );
    let (code, image) = check(&["--idms", path(&itms)], &pair.by_tag(), &[]);
    assert_eq!(code, 1, "{image:#}");
    assert_eq!(
        rules(&image, "error"),
        set(&["mirror-digest-differs", "mirror-platform-dropped"])
    );
    let dropped = message(&image, "mirror-platform-dropped");
    assert!(dropped.contains(W17763), "{dropped}");
    assert!(!dropped.contains(W20348), "{dropped}");
    assert!(dropped.contains("10.0.17763.5830"), "{dropped}");
}

#[test]
fn foreign_layers_left_out_by_skopeo_are_reported() {
    let pair = Pair::new("foreign-layer");
    pair.mirror_all("mirror/csi/driver");
    let idms = pair.idms("");
    let (code, image) = check(&["--idms", path(&idms)], &pair.by_digest(), &[]);
    assert_eq!(code, 1, "{image:#}");
    assert_eq!(rules(&image, "error"), set(&["foreign-layer-not-mirrored"]));
    let n = image["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["rule"] == "foreign-layer-not-mirrored")
        .count();
    assert_eq!(n, 2, "one per foreign base layer: {image:#}");
}

#[test]
fn an_absent_image_and_a_missing_child_are_reported() {
    let pair = Pair::new("good");
    let idms = pair.idms("    mirrorSourcePolicy: NeverContactSource\n");
    let (code, image) = check(&["--idms", path(&idms)], &pair.by_digest(), &[]);
    assert_eq!(code, 1, "{image:#}");
    assert_eq!(rules(&image, "error"), set(&["mirror-missing"]));
    assert!(message(&image, "mirror-missing").contains("the pull fails"));

    // Mirror everything, then lose the ltsc2022 child.
    pair.mirror_all("mirror/csi/driver");
    let resp = pair
        .mirror
        .client()
        .delete(
            pair.mirror
                .url(&format!("/v2/mirror/csi/driver/manifests/{W20348}")),
        )
        .send()
        .expect("DELETE child");
    assert_eq!(resp.status().as_u16(), 202);
    let (code, image) = check(&["--idms", path(&idms)], &pair.by_digest(), &[]);
    assert_eq!(code, 1, "{image:#}");
    assert_eq!(rules(&image, "error"), set(&["mirror-child-missing"]));
    assert!(message(&image, "mirror-child-missing").contains(W20348));
}

#[test]
fn icsp_mirrors_are_checked_by_digest() {
    let pair = Pair::new("docker-list");
    pair.mirror_all("icsp/driver");
    let icsp = pair.write(
        "icsp.yaml",
        &format!(
            "apiVersion: operator.openshift.io/v1alpha1\nkind: ImageContentSourcePolicy\nmetadata:\n  name: release\n\
             spec:\n  repositoryDigestMirrors:\n  - source: {}/{REPO}\n    mirrors:\n    - {}/icsp/driver\n",
            pair.source.host(),
            pair.mirror.host()
        ),
    );
    let (code, image) = check(&["--icsp", path(&icsp)], &pair.by_digest(), &[]);
    assert_eq!(code, 0, "{image:#}");
    assert!(message(&image, "mirror-resolved").contains("icsp/driver"));
}

#[test]
fn idms_most_specific_source_wins_and_mirrors_are_tried_in_order() {
    let pair = Pair::new("good");
    pair.mirror_all("specific/driver");
    let (src, mir) = (pair.source.host(), pair.mirror.host());
    // The namespace entry points at an empty mirror; the repository entry lists an empty
    // mirror first, then the one holding the image.
    let idms = pair.write(
        "sets.yaml",
        &format!(
            "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {{name: broad}}\n\
             spec:\n  imageDigestMirrors:\n  - source: {src}/csi\n    mirrors: [{mir}/broad]\n\
             ---\napiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {{name: specific}}\n\
             spec:\n  imageDigestMirrors:\n  - source: {src}/{REPO}\n    mirrors: [{mir}/empty/driver, {mir}/specific/driver]\n"
        ),
    );
    let (code, image) = check(&["--idms", path(&idms)], &pair.by_digest(), &[]);
    assert_eq!(code, 0, "{image:#}");
    let resolved = message(&image, "mirror-resolved");
    assert!(resolved.contains("mirror 2 of 2"), "{resolved}");
    assert!(
        resolved.contains(&format!("after {mir}/empty/driver@")),
        "{resolved}"
    );
    assert!(
        resolved.contains("ImageDigestMirrorSet specific"),
        "{resolved}"
    );
}

#[test]
fn registries_conf_longest_prefix_from_a_drop_in_wins() {
    let pair = Pair::new("good");
    pair.mirror_all("dropin/driver");
    let (src, mir) = (pair.source.host(), pair.mirror.host());
    let conf = pair.write(
        "registries.conf",
        &format!(
            "unqualified-search-registries = []\n\n[[registry]]\nlocation = \"{src}/csi\"\nblocked = true\n\
             mirror-by-digest-only = true\n[[registry.mirror]]\nlocation = \"{mir}/wrong\"\n"
        ),
    );
    // Without the drop-in the broad entry applies, and its mirror is empty.
    let (code, image) = check(&["--registries-conf", path(&conf)], &pair.by_digest(), &[]);
    assert_eq!(code, 1, "{image:#}");
    assert_eq!(rules(&image, "error"), set(&["mirror-missing"]));
    assert!(message(&image, "mirror-missing").contains(&format!("{mir}/wrong/driver@")));
    // A drop-in adds the repository entry: longest prefix wins; mirrors in order, and a
    // tag-only mirror is skipped for a digest pull.
    pair.write(
        "registries.conf.d/50-driver.conf",
        &format!(
            "[[registry]]\nprefix = \"{src}/{REPO}\"\nlocation = \"{src}/{REPO}\"\n\
             [[registry.mirror]]\nlocation = \"{mir}/tags-only/driver\"\npull-from-mirror = \"tag-only\"\n\
             [[registry.mirror]]\nlocation = \"{mir}/dropin/driver\"\npull-from-mirror = \"digest-only\"\n"
        ),
    );
    let (code, image) = check(&["--registries-conf", path(&conf)], &pair.by_digest(), &[]);
    assert_eq!(code, 0, "{image:#}");
    let resolved = message(&image, "mirror-resolved");
    assert!(resolved.contains("mirror 1 of 1"), "{resolved}");
    assert!(resolved.contains("50-driver.conf"), "{resolved}");
}

#[test]
fn pre_checks_sources_before_mirroring() {
    // Without a configuration: a plain verify (here of a layout).
    let good = format!("oci:{}", fixture("good").display());
    let (code, image) = check(&[], &good, &["--pre"]);
    assert_eq!(code, 0, "{image:#}");
    assert!(!image["hosts"].as_array().expect("hosts").is_empty());
    let bad = format!("oci:{}", fixture("no-os-version").display());
    let (code, image) = check(&[], &bad, &["--pre"]);
    assert_eq!(code, 1, "{image:#}");
    assert!(rules(&image, "error").contains("os-version-missing"));

    // With a configuration: the source is judged, and the plan checked; nothing is mirrored.
    let pair = Pair::new("good");
    let idms = pair.idms("");
    let (code, image) = check(&["--idms", path(&idms)], &pair.by_digest(), &["--pre"]);
    assert_eq!(code, 0, "{image:#}");
    assert!(message(&image, "mirror-resolved").contains("once mirrored"));
    pair.source
        .push_layout(&fixture("good"), "elsewhere/driver", "v1");
    let other = format!("{}/elsewhere/driver@{}", pair.source.host(), pair.digest);
    let (code, image) = check(&["--idms", path(&idms)], &other, &["--pre"]);
    assert_eq!(code, 1, "{image:#}");
    assert_eq!(rules(&image, "error"), set(&["mirror-not-configured"]));
}

#[test]
fn bad_input_exits_2_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("idms.yaml");
    std::fs::write(&bad, "apiVersion: apps/v1\nkind: Deployment\n").expect("write");
    let reference = "127.0.0.1:1/csi/driver:v1";
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec!["--idms".into(), path(&bad).into()],
            format!("{}: document 1: kind 'Deployment'", bad.display()),
        ),
        (
            vec![
                "--registries-conf".into(),
                "/nonexistent/registries.conf".into(),
            ],
            "/nonexistent/registries.conf".into(),
        ),
        (
            vec![],
            "needs --idms, --icsp, --registries-conf or --hosts-dir".into(),
        ),
    ];
    for (config, want) in cases {
        let mut args = vec!["mirror-check".to_string()];
        args.extend(config);
        args.push(reference.into());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(&want), "{args:?}: {stderr}");
    }
    // A layout cannot be checked against a mirror configuration.
    std::fs::write(
        &bad,
        "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {name: a}\n\
         spec:\n  imageDigestMirrors:\n  - source: q.io/a\n    mirrors: [m.local/a]\n",
    )
    .expect("write");
    let layout = format!("oci:{}", fixture("good").display());
    let out = run(&["mirror-check", "--idms", path(&bad), &layout]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("registry references"));
}

/// `--plan --format konflux` is a usage error naming the combination (exit 2, nothing on
/// standard output): a plan checks nothing, so there is no Konflux TEST_OUTPUT result to give,
/// and a pipeline step that asks for one is told at once instead of reading a text plan as its
/// result (before: the text plan, exit 0). `--format junit` likewise (issue 36): a plan has
/// no test to report. The plan in text and JSON is as before.
#[test]
fn a_plan_has_no_konflux_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let idms = dir.path().join("idms.yaml");
    std::fs::write(
        &idms,
        "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {name: a}\n\
         spec:\n  imageDigestMirrors:\n  - source: q.io/a\n    mirrors: [m.local/a]\n",
    )
    .expect("write");
    // IDMS mirrors serve pulls by digest only.
    let reference = format!("q.io/a/b@sha256:{}", "e3".repeat(32));
    let plan = ["mirror-check", "--plan", "--idms", path(&idms), &reference];
    for (format, code) in [("konflux", 2), ("junit", 2), ("text", 0), ("json", 0)] {
        let out = run(&[&plan[..], &["--format", format]].concat());
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(code), "{format}: {stdout}{stderr}");
        if code == 2 {
            assert_eq!(stdout, "", "{format}");
            assert!(
                stderr.contains(&format!("--plan --format {format}: a plan checks nothing")),
                "{stderr}"
            );
        } else {
            assert!(
                stdout.contains("https://m.local/v2/a/b/manifests/sha256:e3e3"),
                "{format}: {stdout}"
            );
        }
    }
}

/// The `mirror-check --plan` text for `reference` under the mirror sets `yaml` (offline):
/// per OS row, its requests as `kind url` lines, in order.
fn plan_lines(yaml: &str, reference: &str) -> Vec<(String, Vec<String>)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let sets = dir.path().join("sets.yaml");
    std::fs::write(&sets, yaml).expect("write");
    let args = [
        "mirror-check",
        "--plan",
        "--idms",
        path(&sets),
        "--os",
        "linux",
    ];
    let out = run(&[&args[..], &["--os", "windows", reference]].concat());
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    for line in stdout.lines() {
        match line.strip_prefix(reference) {
            Some(head) => rows.push((head.trim().to_string(), Vec::new())),
            None => {
                let words: Vec<&str> = line.split_whitespace().collect();
                let row = rows.last_mut().unwrap_or_else(|| panic!("{stdout}"));
                row.1.push(words[1..].join(" "));
            }
        }
    }
    rows
}

/// Issue 32, item 5: the two examples of the issue, printed by `--plan` in the order the
/// nodes ask. Windows: WMCO's `mergeMirrorSets` keeps the IDMS entry's unset policy, so the
/// ITMS entry's NeverContactSource leaves quay.io last (the Linux row is blocked by it:
/// runtime-utils blocks on any entry). Linux: ICSP and IDMS mirrors of one source merged by
/// runtime-utils' topological sort, interleaved.
#[test]
fn plans_merge_mirror_sets_as_wmco_and_runtime_utils_do() {
    const S: &str = "quay.io/openshift-release-dev/ocp-v4.0-art-dev";
    let d = format!("sha256:{}", "e3".repeat(32));
    let reference = format!("{S}@{d}");
    let url = |base: &str| format!("https://{base}/manifests/{d}");
    let set = |kind: &str, field: &str, mirrors: &str, extra: &str| {
        let api = match kind {
            "ImageContentSourcePolicy" => "operator.openshift.io/v1alpha1",
            _ => "config.openshift.io/v1",
        };
        format!(
            "---\napiVersion: {api}\nkind: {kind}\nmetadata: {{name: x}}\nspec:\n  {field}:\n  \
             - source: {S}\n    mirrors: [{mirrors}]\n{extra}"
        )
    };
    let wmco = set(
        "ImageDigestMirrorSet",
        "imageDigestMirrors",
        "10.0.0.5:5000/flat",
        "",
    ) + &set(
        "ImageTagMirrorSet",
        "imageTagMirrors",
        &format!("mirror.example.net/ocp4/openshift4, 10.0.0.5:5000/team-a/{S}")
            .replacen("quay.io/", "", 1),
        "    mirrorSourcePolicy: NeverContactSource\n",
    );
    let art = "openshift-release-dev/ocp-v4.0-art-dev";
    assert_eq!(
        plan_lines(&wmco, &reference),
        [
            (
                "linux nodes (cri-o, registries.conf)".to_string(),
                vec![format!("mirror {}", url("10.0.0.5:5000/v2/flat"))]
            ),
            (
                "windows nodes (containerd-1.7, hosts.toml)".to_string(),
                vec![
                    format!("mirror {}", url(&format!("10.0.0.5:5000/v2/flat/{art}"))),
                    format!("mirror {}", url(&format!("10.0.0.5:5000/v2/team-a/{art}"))),
                    format!(
                        "mirror {}",
                        url(&format!("mirror.example.net/v2/ocp4/openshift4/{art}"))
                    ),
                    format!("source {}", url(&format!("quay.io/v2/{art}"))),
                ]
            ),
        ]
    );
    let linux = set(
        "ImageContentSourcePolicy",
        "repositoryDigestMirrors",
        "mirror.example.com:5000/mirrors/ocp-v4.0-art-dev, mirror.example.net/ocp4/openshift4",
        "",
    ) + &set(
        "ImageDigestMirrorSet",
        "imageDigestMirrors",
        &format!("mirror.example.net/x/y/z/ocp-v4.0-art-dev, mirror.example.net/{art}"),
        "",
    );
    let rows = plan_lines(&linux, &reference);
    assert_eq!(
        rows[0],
        (
            "linux nodes (cri-o, registries.conf)".to_string(),
            vec![
                format!(
                    "mirror {}",
                    url("mirror.example.com:5000/v2/mirrors/ocp-v4.0-art-dev")
                ),
                format!(
                    "mirror {}",
                    url("mirror.example.net/v2/x/y/z/ocp-v4.0-art-dev")
                ),
                format!("mirror {}", url("mirror.example.net/v2/ocp4/openshift4")),
                format!("mirror {}", url(&format!("mirror.example.net/v2/{art}"))),
                format!("source {}", url(&format!("quay.io/v2/{art}"))),
            ]
        )
    );
    // Windows nodes read no ICSP: only the IDMS mirrors, sorted, then quay.io.
    assert_eq!(
        rows[1].1,
        [
            format!("mirror {}", url(&format!("mirror.example.net/v2/{art}"))),
            format!(
                "mirror {}",
                url(&format!("mirror.example.net/v2/x/y/z/{art}"))
            ),
            format!("source {}", url(&format!("quay.io/v2/{art}"))),
        ]
    );
}

/// Issue 32, item 5: an ImageDigestMirrorSet without entries is a configuration without
/// mirrors (before: exit 2, "no ImageDigestMirrorSet … found"): both OSes pull from the source.
#[test]
fn an_empty_image_digest_mirror_set_is_no_mirror() {
    let reference = format!("q.io/a/b@sha256:{}", "e3".repeat(32));
    let empty = "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {name: e}\nspec:\n  imageDigestMirrors: []\n";
    let rows = plan_lines(empty, &reference);
    let source = vec![format!(
        "source https://q.io/v2/a/b/manifests/sha256:{}",
        "e3".repeat(32)
    )];
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|(_, lines)| *lines == source), "{rows:?}");
}

#[test]
fn references_come_from_a_list_or_an_imageset_in_order() {
    let pair = Pair::new("good");
    pair.source
        .push_layout(&fixture("docker-list"), "csi/list", "v1");
    pair.mirror_all("mirror/csi/driver");
    let (src, mir) = (pair.source.host(), pair.mirror.host());
    // An ITMS so tag references are mirrored by tag.
    let itms = pair.write(
        "itms.yaml",
        &format!(
            "apiVersion: config.openshift.io/v1\nkind: ImageTagMirrorSet\nmetadata: {{name: t}}\n\
             spec:\n  imageTagMirrors:\n  - source: {src}/csi\n    mirrors: [{mir}/mirror/csi]\n"
        ),
    );
    let list = pair.write(
        "refs.txt",
        &format!("# release\n{src}/{REPO}:v1\n{src}/csi/list:v1  # not mirrored yet\n"),
    );
    let imageset = pair.write(
        "isc.yaml",
        &format!(
            "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\nmirror:\n  additionalImages:\n\
             \x20 - name: {src}/{REPO}:v1\n  - name: {src}/csi/list:v1\n"
        ),
    );
    for source in [
        ["--from-file", path(&list)],
        ["--from-imageset", path(&imageset)],
    ] {
        let out = run(&[
            "mirror-check",
            "--idms",
            path(&itms),
            source[0],
            source[1],
            "--format",
            "json",
        ]);
        assert_eq!(out.status.code(), Some(1), "{source:?}");
        let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let images = doc["images"].as_array().expect("images");
        assert_eq!(images.len(), 2, "{doc:#}");
        assert_eq!(images[0]["reference"], format!("{src}/{REPO}:v1"));
        assert_eq!(images[0]["verdict"], "pass", "{doc:#}");
        assert!(message(&images[0], "mirror-resolved").contains(":v1"));
        assert_eq!(images[1]["reference"], format!("{src}/csi/list:v1"));
        assert_eq!(rules(&images[1], "error"), set(&["mirror-missing"]));
    }
}

#[test]
fn corrupted_content_in_the_mirror_is_a_digest_mismatch() {
    let pair = Pair::new("good");
    pair.mirror_all("mirror/csi/driver");
    // The ltsc2019 config, one byte changed (the corrupt-config fixture's bytes).
    let config = "sha256:52f494f71f21814d735cd17c637a3d1161b081c9d00aca7f1943bc2151a945cd";
    let hex = config.trim_start_matches("sha256:");
    let corrupt = std::fs::read(fixture("corrupt-config").join("blobs/sha256").join(hex))
        .expect("corrupt bytes");
    pair.mirror.corrupt_blob(config, &corrupt);
    let idms = pair.idms("");
    let (code, image) = check(&["--idms", path(&idms)], &pair.by_digest(), &[]);
    assert_eq!(code, 1, "{image:#}");
    assert_eq!(rules(&image, "error"), set(&["digest-mismatch"]));
    assert!(message(&image, "digest-mismatch").contains(&pair.mirror.host()));
}

#[test]
fn a_pinned_reference_is_checked_without_reaching_the_source() {
    // Inside the disconnected network: the source registry is out of reach (nothing
    // listens on port 1), the mirror holds the release.
    let mirror = Registry::start();
    let digest = mirror.push_layout(&fixture("good"), "mirror/csi/driver", "v1");
    let dir = tempfile::tempdir().expect("tempdir");
    let idms = dir.path().join("idms.yaml");
    std::fs::write(
        &idms,
        format!(
            "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {{name: d}}\n\
             spec:\n  imageDigestMirrors:\n  - source: 127.0.0.1:1/csi\n    mirrors: [{}/mirror/csi]\n",
            mirror.host()
        ),
    )
    .expect("write");
    let pinned = format!("127.0.0.1:1/{REPO}@{digest}");
    let (code, image) = check(&["--idms", path(&idms)], &pinned, &[]);
    assert_eq!(code, 0, "{image:#}");
    assert!(message(&image, "mirror-resolved").contains("could not be reached"));
    // A tag says nothing without the source: the check cannot complete.
    let (code, image) = check(
        &["--idms", path(&idms)],
        &format!("127.0.0.1:1/{REPO}:v1"),
        &[],
    );
    assert_eq!(code, 3, "{image:#}");
    assert_eq!(image["verdict"], "error");
}

#[test]
fn an_unreachable_mirror_is_skipped_like_a_node_would() {
    let pair = Pair::new("good");
    pair.mirror_all("mirror/csi/driver");
    let (src, mir) = (pair.source.host(), pair.mirror.host());
    // Nothing listens on port 1: the node falls through to the next mirror.
    let idms = pair.write(
        "down.yaml",
        &format!(
            "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {{name: down}}\n\
             spec:\n  imageDigestMirrors:\n  - source: {src}/csi\n    mirrors: [127.0.0.1:1/csi, {mir}/mirror/csi]\n"
        ),
    );
    let fast = ["--retries", "0"];
    let (code, image) = check(&["--idms", path(&idms)], &pair.by_digest(), &fast);
    assert_eq!(code, 0, "{image:#}");
    let resolved = message(&image, "mirror-resolved");
    assert!(resolved.contains("mirror 2 of 2"), "{resolved}");
    assert!(
        resolved.contains("127.0.0.1:1/csi/driver@") && resolved.contains("could not be reached"),
        "{resolved}"
    );

    // Only the unreachable mirror: the check cannot conclude (error, exit 3), never a pass.
    let idms = pair.write(
        "only-down.yaml",
        &format!(
            "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {{name: down}}\n\
             spec:\n  imageDigestMirrors:\n  - source: {src}/csi\n    mirrors: [127.0.0.1:1/csi]\n"
        ),
    );
    let (code, image) = check(&["--idms", path(&idms)], &pair.by_digest(), &fast);
    assert_eq!(code, 3, "{image:#}");
    assert_eq!(image["verdict"], "error");
    assert!(rules(&image, "error").contains("fetch-error"), "{image:#}");
}

/// `--nodes` with a mirror configuration: the dropped-entry check speaks of the cluster's
/// Windows builds, not the policy's (issue 13). The cluster fixture without its WS2019 nodes
/// runs builds 20348 and 26100; the mirror dropped every Windows entry.
#[test]
fn mirror_check_with_nodes_names_the_clusters_dropped_builds() {
    let pair = Pair::new("good");
    skopeo_copy_single(
        &pair.source.docker_ref(REPO, "v1"),
        &pair.mirror.docker_ref("mirror/csi/driver", "v1"),
    );
    let idms = pair.idms("");
    let mut cluster: Value = serde_json::from_slice(
        &std::fs::read(common::fixtures_dir().join("nodes/ocp-wmco.json")).unwrap(),
    )
    .unwrap();
    cluster["items"]
        .as_array_mut()
        .unwrap()
        .retain(|n| n["metadata"]["labels"]["node.kubernetes.io/windows-build"] != "10.0.17763");
    let nodes = pair.write("nodes.json", &cluster.to_string());
    let (code, image) = check(
        &["--idms", path(&idms), "--nodes", path(&nodes)],
        &pair.by_tag(),
        &[],
    );
    assert_eq!(code, 1, "{image:#}");
    let dropped = message(&image, "mirror-platform-dropped");
    assert!(dropped.contains(W20348), "{dropped}");
    assert!(
        !dropped.contains(W17763),
        "no WS2019 node is left: {dropped}"
    );
}
