//! `imgcheck assemble` against a real registry: lists built from per-platform images are pushed
//! by digest, verify and resolve agree with them, the digest is stable, children are copied
//! into the target repository, and every refusal exits 2 without writing anything.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::proxy::{Fault, FaultProxy, Match, Rule};
use crate::common::secure::{Secured, TokenServer};
use crate::common::{
    self, DOCKER_LIST, OCI_INDEX, Registry, fixture, fixtures_dir, imgcheck, sha256_digest,
};
use serde_json::{Value, json};

/// The fixture children, keyed as in fixtures/digests.json.
const AMD64: &str = "linux/amd64";
const ARM64: &str = "linux/arm64/v8";
const WS2019: &str = "windows/amd64:10.0.17763.5830";
const WS2022: &str = "windows/amd64:10.0.20348.2461";

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    /// The digest of the pushed list, from the first stdout line `REF@DIGEST`.
    fn pushed(&self) -> String {
        let line = self.stdout.lines().next().unwrap_or_default();
        match line.rsplit_once('@') {
            Some((_, d)) if d.starts_with("sha256:") => d.to_string(),
            _ => panic!("no REF@DIGEST line in stdout:\n{}", self.stdout),
        }
    }
}

fn run(args: &[&str]) -> Run {
    let out = imgcheck()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run imgcheck");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn assemble(target: &str, children: &[String], extra: &[&str]) -> Run {
    let mut args = vec!["assemble", "--target", target];
    args.extend(extra);
    args.extend(children.iter().map(String::as_str));
    run(&args)
}

fn expect(r: &Run, code: i32, what: &str) {
    assert_eq!(
        r.code, code,
        "{what}: exit {} (want {code})\nstdout:\n{}\nstderr:\n{}",
        r.code, r.stdout, r.stderr
    );
}

fn digests() -> Value {
    let path = fixtures_dir().join("digests.json");
    serde_json::from_slice(&fs::read(&path).expect("read digests.json")).expect("digests.json")
}

fn child(fixture: &str, key: &str) -> String {
    digests()[fixture]["children"][key]
        .as_str()
        .unwrap_or_else(|| panic!("digests.json: no {fixture} child {key}"))
        .to_string()
}

/// Child references `HOST/REPO@DIGEST` for the given keys of `good`.
fn refs(reg: &Registry, repo: &str, keys: &[&str]) -> Vec<String> {
    keys.iter()
        .map(|k| format!("{}/{repo}@{}", reg.host(), child("good", k)))
        .collect()
}

fn manifest_json(reg: &Registry, repo: &str, reference: &str) -> (Vec<u8>, Value) {
    let (status, body) = reg.get_manifest(repo, reference);
    assert_eq!(status, 200, "{repo}:{reference} not served");
    let v = serde_json::from_slice(&body).expect("manifest is JSON");
    (body, v)
}

/// Platforms of a list's entries as `os/arch[/variant][:os.version]`, in order.
fn platforms(index: &Value) -> Vec<String> {
    index["manifests"]
        .as_array()
        .expect("manifests[]")
        .iter()
        .map(|d| {
            let p = &d["platform"];
            let mut s = format!(
                "{}/{}",
                p["os"].as_str().unwrap(),
                p["architecture"].as_str().unwrap()
            );
            if let Some(v) = p["variant"].as_str() {
                s += &format!("/{v}");
            }
            if let Some(v) = p["os.version"].as_str() {
                s += &format!(":{v}");
            }
            s
        })
        .collect()
}

/// The assembled good list: entries in imgcheck's order (Linux by arch, Windows newest first).
const GOOD_ORDER: [&str; 4] = [AMD64, ARM64, WS2022, WS2019];

/// Checks `digest` and everything it references (except foreign layers) is served by `repo`
/// with the right bytes.
fn assert_in_repo(reg: &Registry, repo: &str, digest: &str) {
    let (body, doc) = manifest_json(reg, repo, digest);
    assert_eq!(
        sha256_digest(&body),
        digest,
        "{repo}: {digest} served with other bytes"
    );
    if let Some(children) = doc["manifests"].as_array() {
        for c in children {
            assert_in_repo(reg, repo, c["digest"].as_str().unwrap());
        }
        return;
    }
    let blobs =
        std::iter::once(&doc["config"]).chain(doc["layers"].as_array().into_iter().flatten());
    for b in blobs {
        if b["urls"].as_array().is_some_and(|u| !u.is_empty()) {
            continue;
        }
        let d = b["digest"].as_str().unwrap();
        let (status, bytes) = reg.get_blob(repo, d);
        assert_eq!(status, 200, "{repo}: blob {d} of {digest} not served");
        assert_eq!(sha256_digest(&bytes), d);
    }
}

fn resolve(reference: &str, platform: &str, runtime: &str) -> String {
    let r = run(&[
        "resolve",
        "--platform",
        platform,
        "--runtime",
        runtime,
        reference,
    ]);
    expect(&r, 0, &format!("resolve {platform} {runtime}"));
    r.stdout.trim().to_string()
}

#[test]
fn registry_children_give_a_list_that_verifies_resolves_and_is_reproducible() {
    let reg = Registry::start();
    reg.push_layout(&fixture("good"), "src", "latest");
    let target = format!("{}/app:v1", reg.host());
    let children = refs(&reg, "src", &[WS2019, AMD64, WS2022, ARM64]);

    let first = assemble(&target, &children, &[]);
    expect(&first, 0, "assemble");
    let digest = first.pushed();
    assert!(
        first.stdout.contains("PASS"),
        "verify report expected:\n{}",
        first.stdout
    );
    // Same registry, other repository: every blob is mounted, none uploaded.
    assert!(
        first
            .stderr
            .contains("4 child manifests copied; blobs: 0 uploaded, 10 mounted"),
        "{}",
        first.stderr
    );

    // Pushed as computed: the registry's bytes hash to the printed digest, under the tag.
    let (body, index) = manifest_json(&reg, "app", "v1");
    assert_eq!(sha256_digest(&body), digest);
    assert_eq!(
        reg.manifest_digest("app", "v1").as_deref(),
        Some(digest.as_str())
    );
    assert_eq!(index["mediaType"], OCI_INDEX);
    assert_eq!(platforms(&index), GOOD_ORDER.to_vec());
    let entry_digests: Vec<&str> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["digest"].as_str().unwrap())
        .collect();
    let want: Vec<String> = GOOD_ORDER.iter().map(|k| child("good", k)).collect();
    assert_eq!(entry_digests, want);
    assert!(
        !String::from_utf8_lossy(&body).contains("created"),
        "no timestamps"
    );

    // The children now live in the target repository too.
    assert_in_repo(&reg, "app", &digest);
    for k in GOOD_ORDER {
        assert!(
            reg.repos_linking(&child("good", k))
                .contains(&"app".to_string())
        );
    }

    expect(&run(&["verify", &target]), 0, "verify");
    for runtime in ["containerd-1.7", "containerd-2.3"] {
        for (host, key) in [
            ("linux/amd64", AMD64),
            ("linux/arm64", ARM64),
            ("windows/amd64:10.0.17763", WS2019),
            ("windows/amd64:10.0.20348", WS2022),
            // Windows 11 22H2 runs ltsc2022 images, not ltsc2019 ones.
            ("windows/amd64:10.0.22621", WS2022),
        ] {
            assert_eq!(
                resolve(&target, host, runtime),
                child("good", key),
                "{host} {runtime}"
            );
        }
    }

    // Same inputs, any order, any tag, or given as the index itself: same digest.
    let reversed: Vec<String> = children.iter().rev().cloned().collect();
    let again = assemble(&target, &reversed, &[]);
    expect(&again, 0, "re-run");
    assert_eq!(again.pushed(), digest);
    assert!(
        again.stderr.contains("10 already present"),
        "{}",
        again.stderr
    );
    let from_index = assemble(
        &format!("{}/app:v2", reg.host()),
        &[format!("{}/src:latest", reg.host())],
        &[],
    );
    expect(&from_index, 0, "index child");
    assert_eq!(from_index.pushed(), digest);

    // Children already in the target repository are not copied again.
    let in_place = assemble(&format!("{}/src:assembled", reg.host()), &children, &[]);
    expect(&in_place, 0, "children in the target repository");
    assert_eq!(in_place.pushed(), digest);
    assert!(
        in_place
            .stderr
            .contains("0 child manifests copied; blobs: 0 uploaded, 0 mounted, 0 already present"),
        "{}",
        in_place.stderr
    );

    // --dry-run prints exactly those bytes and that digest, and pushes nothing.
    let dry = assemble(&format!("{}/dry:v1", reg.host()), &children, &["--dry-run"]);
    expect(&dry, 0, "dry run");
    assert_eq!(dry.stdout.as_bytes(), body.as_slice());
    assert!(dry.stderr.contains(&digest), "{}", dry.stderr);
    assert!(dry.stderr.contains("nothing was pushed"), "{}", dry.stderr);
    assert_eq!(reg.manifest_digest("dry", "v1"), None);
    assert!(
        !reg.repos_linking(&child("good", AMD64))
            .contains(&"dry".to_string())
    );
}

#[test]
fn children_from_an_oci_layout_or_another_registry_are_copied_into_the_target() {
    let source = Registry::start();
    source.push_layout(&fixture("good"), "src", "latest");
    let reg = Registry::start();
    let layout = fixture("good");
    let layout = layout.display();
    let from_layout: Vec<String> = [AMD64, WS2022, ARM64, WS2019]
        .iter()
        .map(|k| format!("oci:{layout}@{}", child("good", k)))
        .collect();

    let r = assemble(&format!("{}/from-layout:v1", reg.host()), &from_layout, &[]);
    expect(&r, 0, "layout children");
    assert!(r.stderr.contains("blobs: 10 uploaded"), "{}", r.stderr);
    let digest = r.pushed();
    assert_in_repo(&reg, "from-layout", &digest);

    // A buildx-style index: its attestation entries are not runnable and are left out.
    let r = assemble(
        &format!("{}/from-attested:v1", reg.host()),
        &[format!("oci:{}", fixture("attestation").display())],
        &["--dry-run"],
    );
    expect(&r, 0, "index with attestations");
    assert!(r.stderr.contains(&digest), "{}", r.stderr);

    let other = refs(&source, "src", &[AMD64, ARM64, WS2019, WS2022]);
    let r = assemble(&format!("{}/from-registry:v1", reg.host()), &other, &[]);
    expect(&r, 0, "children in another registry");
    assert_eq!(r.pushed(), digest, "same children, same list");
    assert_in_repo(&reg, "from-registry", &digest);

    // A whole layout (its index's runnable entries) and a single-image layout mix too.
    let r = assemble(
        &format!("{}/mixed:v1", reg.host()),
        &[
            format!("oci:{}", fixture("single-arch").display()),
            format!("oci:{layout}@{}", child("good", WS2019)),
            format!("oci:{layout}@{}", child("good", WS2022)),
        ],
        &[],
    );
    expect(&r, 0, "single-arch layout + windows children");
    let (_, index) = manifest_json(&reg, "mixed", "v1");
    assert_eq!(platforms(&index), vec![AMD64, WS2022, WS2019]);
    assert_in_repo(&reg, "mixed", &r.pushed());
}

#[test]
fn docker_children_make_a_docker_list_and_foreign_layers_stay_out() {
    let reg = Registry::start();
    reg.push_layout(&fixture("docker-list"), "dl", "latest");
    reg.push_layout(&fixture("foreign-layer"), "fl", "latest");
    let r = assemble(
        &format!("{}/docker:v1", reg.host()),
        &[format!("{}/dl:latest", reg.host())],
        &[],
    );
    expect(&r, 0, "docker list children");
    let (_, index) = manifest_json(&reg, "docker", "v1");
    assert_eq!(index["mediaType"], DOCKER_LIST);

    let r = assemble(
        &format!("{}/foreign:v1", reg.host()),
        &[format!("{}/fl:latest", reg.host())],
        &["--format", "docker"],
    );
    expect(&r, 0, "foreign-layer children");
    assert!(r.stderr.contains("2 foreign not copied"), "{}", r.stderr);
    assert_in_repo(&reg, "foreign", &r.pushed());

    // The same Docker children in an OCI index, with annotations.
    let r = assemble(
        &format!("{}/oci:v1", reg.host()),
        &[format!("{}/dl:latest", reg.host())],
        &[
            "--format",
            "oci",
            "--annotation",
            "org.opencontainers.image.source=https://example.com/x",
        ],
    );
    expect(&r, 0, "docker children in an OCI index");
    let (_, index) = manifest_json(&reg, "oci", "v1");
    assert_eq!(index["mediaType"], OCI_INDEX);
    assert_eq!(
        index["annotations"],
        json!({"org.opencontainers.image.source": "https://example.com/x"})
    );
}

/// Writes a one-image OCI layout whose config is `config`, returning its directory.
fn write_layout(dir: &Path, config: &Value) {
    write_layout_with(dir, config, b"Files/ and Hives/ would be here");
}

/// An OCI layout at `dir` holding one image (`config` plus the single layer `layer`), tagged
/// `latest`; returns the manifest's digest.
/// An OCI layout in `dir` of one linux/amd64 image with one `mib` MiB layer that neither
/// compresses nor repeats at any chunk size (a counter's bytes, scrambled); its manifest digest.
fn write_big_linux_layout(dir: &Path, mib: usize) -> String {
    let layer: Vec<u8> = (0..mib * 1024 * 1024 / 8)
        .flat_map(|i: usize| (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes())
        .collect();
    write_layout_with(
        dir,
        &json!({"architecture": "amd64", "os": "linux"}),
        &layer,
    )
}

fn write_layout_with(dir: &Path, config: &Value, layer: &[u8]) -> String {
    let blobs = dir.join("blobs/sha256");
    fs::create_dir_all(&blobs).unwrap();
    let put = |bytes: &[u8]| {
        let d = sha256_digest(bytes);
        fs::write(blobs.join(d.strip_prefix("sha256:").unwrap()), bytes).unwrap();
        (d, bytes.len())
    };
    let (layer, layer_size) = put(layer);
    let mut config = config.clone();
    config["rootfs"] = json!({"type": "layers", "diff_ids": [layer]});
    let (cfg, cfg_size) = put(&serde_json::to_vec(&config).unwrap());
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": common::OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfg, "size": cfg_size},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer, "size": layer_size}],
    });
    let (m, m_size) = put(&serde_json::to_vec(&manifest).unwrap());
    fs::write(dir.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    let index = json!({
        "schemaVersion": 2,
        "manifests": [{"mediaType": common::OCI_MANIFEST, "digest": m, "size": m_size,
                       "annotations": {"org.opencontainers.image.ref.name": "latest"}}],
    });
    fs::write(dir.join("index.json"), serde_json::to_vec(&index).unwrap()).unwrap();
    m
}

/// Copies the `good` layout and tags a new index whose only entry is good's index.
fn write_nested_layout(dir: &Path) {
    let src = fixture("good").join("blobs/sha256");
    let blobs = dir.join("blobs/sha256");
    fs::create_dir_all(&blobs).unwrap();
    for entry in fs::read_dir(&src).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), blobs.join(entry.file_name())).unwrap();
    }
    let inner = common::layout_top_digest(&fixture("good"));
    let inner_size = fs::metadata(blobs.join(inner.strip_prefix("sha256:").unwrap()))
        .unwrap()
        .len();
    let outer = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [{"mediaType": OCI_INDEX, "digest": inner, "size": inner_size}],
    }))
    .unwrap();
    let outer_digest = sha256_digest(&outer);
    fs::write(
        blobs.join(outer_digest.strip_prefix("sha256:").unwrap()),
        &outer,
    )
    .unwrap();
    fs::write(dir.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    let index = json!({
        "schemaVersion": 2,
        "manifests": [{"mediaType": OCI_INDEX, "digest": outer_digest, "size": outer.len()}],
    });
    fs::write(dir.join("index.json"), serde_json::to_vec(&index).unwrap()).unwrap();
}

#[test]
fn refusals_exit_2_and_write_nothing() {
    let reg = Registry::start();
    reg.push_layout(&fixture("good"), "src", "latest");
    reg.push_layout(&fixture("platform-mismatch"), "pm", "latest");
    reg.push_layout(&fixture("duplicate-platform"), "dup", "latest");
    reg.push_layout(&fixture("docker-list"), "dl", "latest");
    let host = reg.host();
    let target = format!("{host}/refused:v1");
    let tmp = tempfile::tempdir().unwrap();
    let unversioned = tmp.path().join("unversioned");
    write_layout(
        &unversioned,
        &json!({"os": "windows", "architecture": "amd64"}),
    );
    let unversioned = format!("oci:{}", unversioned.display());
    let good = |k: &str| format!("{host}/src@{}", child("good", k));
    let layout = |name: &str| format!("oci:{}", fixture(name).display());
    let nested = tmp.path().join("nested");
    write_nested_layout(&nested);
    let nested = format!("oci:{}", nested.display());
    let absent = format!("{host}/src@sha256:{}", "0".repeat(64));

    let cases: Vec<(&str, Vec<String>, Vec<&str>, &str)> = vec![
        (
            "the same child twice",
            vec![good(WS2019), good(AMD64), good(WS2019)],
            vec![],
            "are both windows/amd64:10.0.17763.5830",
        ),
        (
            "two children with the same platform and build",
            vec![
                good(WS2019),
                format!(
                    "{host}/dup@{}",
                    child("duplicate-platform", "windows/amd64:10.0.17763.5830#2")
                ),
            ],
            vec![],
            "are both windows/amd64:10.0.17763.5830",
        ),
        (
            "an index child whose entry disagrees with its config",
            vec![format!("{host}/pm:latest")],
            vec![],
            "the index it comes from says os.version 10.0.17763.5830 but the image config says 10.0.20348.2461",
        ),
        (
            "an index child with two entries for one platform",
            vec![format!("{host}/dup:latest")],
            vec![],
            "are both windows/amd64:10.0.17763.5830",
        ),
        (
            "an absent child",
            vec![good(AMD64), absent.clone()],
            vec![],
            "not found",
        ),
        (
            "an unknown tag",
            vec![format!("{host}/src:nope")],
            vec![],
            "not found",
        ),
        (
            "an unreachable registry",
            vec![good(AMD64), "127.0.0.1:1/x/y:z".to_string()],
            vec![],
            "child 127.0.0.1:1/x/y:z",
        ),
        (
            "a missing layout",
            vec![format!("oci:{}/nope", tmp.path().display())],
            vec![],
            "is not a directory",
        ),
        (
            "an index nested in an index child",
            vec![nested.clone()],
            vec![],
            "is itself an index",
        ),
        (
            "a schema1 child",
            vec![layout("schema1")],
            vec![],
            "obsolete Docker schema1 manifest",
        ),
        (
            "a child that is not JSON",
            vec![layout("bad-json")],
            vec![],
            "not valid JSON",
        ),
        (
            "a child whose config is corrupt",
            vec![layout("corrupt-config")],
            vec![],
            "its config content does not match its digest",
        ),
        (
            "a child whose manifest is truncated",
            vec![layout("truncated-manifest")],
            vec![],
            "content does not match its digest",
        ),
        (
            "a Windows child without os.version",
            vec![good(AMD64), unversioned.clone()],
            vec![],
            "is a Windows image whose config has no os.version: its entry would match every \
             Windows host; rebuild it from a versioned base image, or give the build as",
        ),
        (
            "a Windows child without os.version names the HostProcess policy (issue 21)",
            vec![good(AMD64), unversioned.clone()],
            vec![],
            "a HostProcess image (no os.version by design) is assembled with --policy \
             openshift-hostprocess",
        ),
        (
            "os.version for a Linux child",
            vec![format!("{}=os.version=10.0.17763.1", good(AMD64))],
            vec![],
            "os.version only applies to Windows images",
        ),
        (
            "OCI children in a Docker list",
            vec![good(AMD64), good(WS2019)],
            vec!["--format", "docker"],
            "a Docker manifest list may only reference Docker schema2 manifests",
        ),
        (
            "OCI and Docker children mixed in a Docker list",
            vec![
                good(AMD64),
                format!("{host}/dl@{}", child("docker-list", WS2019)),
            ],
            vec!["--format", "docker"],
            "is an OCI image manifest",
        ),
        (
            "annotations on a Docker list",
            vec![format!("{host}/dl:latest")],
            vec!["--annotation", "a=b"],
            "a Docker manifest list has no annotations",
        ),
        (
            "a bad annotation",
            vec![good(AMD64)],
            vec!["--annotation", "novalue"],
            "expected KEY=VALUE",
        ),
        (
            "an unknown policy",
            vec![good(AMD64)],
            vec!["--policy", "/nonexistent/policy.yaml"],
            "policy",
        ),
    ];
    for (what, children, extra, want) in &cases {
        let r = assemble(&target, children, extra);
        expect(&r, 2, what);
        assert!(r.stderr.starts_with("imgcheck: "), "{what}: {}", r.stderr);
        assert!(
            r.stderr.contains(want),
            "{what}: want '{want}' in:\n{}",
            r.stderr
        );
        assert!(r.stdout.is_empty(), "{what}: printed {}", r.stdout);
    }
    let digest_target = format!("{host}/refused@{}", child("good", AMD64));
    let r = assemble(&digest_target, &[good(AMD64)], &[]);
    expect(&r, 2, "a digest target");
    assert!(r.stderr.contains("is a digest reference"), "{}", r.stderr);
    let r = assemble(
        &format!("oci:{}", tmp.path().display()),
        &[good(AMD64)],
        &[],
    );
    expect(&r, 2, "a layout target");

    // Nothing was written for any of them: no tag, and no child copied into the repository.
    assert_eq!(reg.manifest_digest("refused", "v1"), None);
    for k in [AMD64, WS2019] {
        assert!(
            !reg.repos_linking(&child("good", k))
                .contains(&"refused".to_string())
        );
    }

    // With the build given, the unversioned Windows child is accepted and listed with it; the
    // dry run judges it against a policy that asks for that build only (the default one would
    // fail it for its missing WS2019 entry, as the real run would).
    let policy = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        policy.path(),
        "name: t\nlinux:\n  architectures: [amd64]\nwindows:\n  architectures: [amd64]\n  builds: [20348]\n",
    )
    .unwrap();
    let r = assemble(
        &target,
        &[
            good(AMD64),
            format!("{unversioned}=os.version=10.0.20348.2227"),
        ],
        &["--dry-run", "--policy", policy.path().to_str().unwrap()],
    );
    expect(&r, 0, "os.version given");
    let index: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        platforms(&index),
        vec![
            AMD64.to_string(),
            "windows/amd64:10.0.20348.2227".to_string()
        ]
    );
    // Pushed for real, the list verifies: a config without os.version cannot contradict the
    // build that was given on purpose.
    let r = assemble(
        &target,
        &[
            good(AMD64),
            format!("{unversioned}=os.version=10.0.20348.2227"),
        ],
        &["--policy", policy.path().to_str().unwrap()],
    );
    expect(&r, 0, "os.version given, pushed and verified");
}

#[test]
fn an_unreachable_target_registry_exits_3() {
    let r = assemble(
        "127.0.0.1:1/nowhere/app:v1",
        &[format!("oci:{}", fixture("good").display())],
        &[],
    );
    expect(&r, 3, "unreachable target");
    assert!(
        r.stderr
            .starts_with("imgcheck: 127.0.0.1:1/nowhere/app:v1: cannot "),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty(), "{}", r.stdout);
}

#[test]
fn a_child_missing_from_its_registry_is_refused() {
    // Damaged fixture: a registry of its own.
    let reg = Registry::start();
    reg.push_layout(&fixture("missing-child"), "mc", "latest");
    let r = assemble(
        &format!("{}/out:v1", reg.host()),
        &[format!("{}/mc:latest", reg.host())],
        &[],
    );
    expect(&r, 2, "missing child");
    assert!(r.stderr.contains("not found"), "{}", r.stderr);
    assert_eq!(reg.manifest_digest("out", "v1"), None);
}

/// Issue 32, item 6: `--dry-run` judges the list it would push against the policy, as the real
/// run judges the pushed list before moving the tag — the same verdict, the same findings,
/// exit 1 for a list the real run would refuse — and pushes nothing.
#[test]
fn a_dry_run_gives_the_verdict_the_real_run_would() {
    let reg = Registry::start();
    reg.push_layout(&fixture("good"), "src", "latest");
    let target = format!("{}/dry:v1", reg.host());
    // No ltsc2022 child: the default policy (openshift) needs one.
    let partial = refs(&reg, "src", &[AMD64, WS2019]);
    let dry = assemble(&target, &partial, &["--dry-run"]);
    expect(&dry, 1, "dry run of a list without WS2022");
    let list: Value = serde_json::from_str(&dry.stdout).expect("the list on stdout");
    assert_eq!(platforms(&list), [AMD64, WS2019]);
    assert!(
        dry.stderr.contains("no-match")
            && dry
                .stderr
                .contains("fails policy 'openshift'; nothing was pushed"),
        "{}",
        dry.stderr
    );
    // Nothing was written: no tag, no manifest by digest, no child linked into the repository.
    assert_eq!(reg.manifest_digest("dry", "v1"), None);
    let digest = sha256_digest(dry.stdout.as_bytes());
    assert_eq!(reg.get_manifest("dry", &digest).0, 404);
    for k in [AMD64, WS2019] {
        assert!(
            !reg.repos_linking(&child("good", k))
                .contains(&"dry".to_string())
        );
    }
    // The real run pushes that very list and gives that very report.
    let real = assemble(&target, &partial, &[]);
    expect(&real, 1, "the real run of the same list");
    assert_eq!(real.pushed(), digest);
    let report = real
        .stdout
        .split_once('\n')
        .expect("report after the digest")
        .1;
    assert!(
        report.contains("no-match") && dry.stderr.contains(report.trim_end()),
        "real run:\n{report}\ndry run:\n{}",
        dry.stderr
    );
    assert_eq!(
        reg.manifest_digest("dry", "v1"),
        None,
        "the real run held the tag"
    );
    // A good set passes the dry run, and still nothing is tagged.
    let good = assemble(
        &format!("{}/dry:v2", reg.host()),
        &refs(&reg, "src", &GOOD_ORDER),
        &["--dry-run"],
    );
    expect(&good, 0, "dry run of the good list");
    assert!(
        good.stderr
            .contains("passes policy 'openshift'; nothing was pushed"),
        "{}",
        good.stderr
    );
    assert_eq!(reg.manifest_digest("dry", "v2"), None);
}

/// A list that fails its policy is pushed by digest only: the tag keeps naming the good list
/// until `--force` moves it (and says so); the exit code is the verdict's either way.
#[test]
fn a_policy_failing_list_never_replaces_a_good_tag() {
    let reg = Registry::start();
    reg.push_layout(&fixture("good"), "src", "latest");
    let target = format!("{}/partial:v1", reg.host());
    let good = assemble(&target, &refs(&reg, "src", &GOOD_ORDER), &[]);
    expect(&good, 0, "the good list");
    assert_eq!(reg.manifest_digest("partial", "v1"), Some(good.pushed()));
    // No ltsc2022 child: the default policy needs one.
    let r = assemble(&target, &refs(&reg, "src", &[AMD64, WS2019]), &[]);
    expect(&r, 1, "policy failure");
    assert!(r.stdout.contains("no-match"), "{}", r.stdout);
    assert!(
        r.stderr.contains("fails policy 'openshift'")
            && r.stderr.contains("the tag was left as it was"),
        "{}",
        r.stderr
    );
    assert_ne!(r.pushed(), good.pushed());
    assert_eq!(
        reg.manifest_digest("partial", "v1"),
        Some(good.pushed()),
        "the good tag was replaced"
    );
    assert_in_repo(&reg, "partial", &r.pushed());
    // --force moves the tag anyway, says so, and still exits with the verdict.
    let forced = assemble(&target, &refs(&reg, "src", &[AMD64, WS2019]), &["--force"]);
    expect(&forced, 1, "forced policy failure");
    assert!(
        forced.stderr.contains("--force: ") && forced.stderr.contains("--force moved the tag"),
        "{}",
        forced.stderr
    );
    assert_eq!(reg.manifest_digest("partial", "v1"), Some(r.pushed()));
    // The same list passes a policy that does not need Windows Server 2022.
    let policy = tempfile::NamedTempFile::new().unwrap();
    fs::write(
        policy.path(),
        "name: ws2019\nlinux:\n  architectures: [amd64]\nwindows:\n  architectures: [amd64]\n  builds: [17763]\n",
    )
    .unwrap();
    let again = assemble(
        &format!("{}/partial:v2", reg.host()),
        &refs(&reg, "src", &[WS2019, AMD64]),
        &["--policy", &policy.path().display().to_string()],
    );
    expect(&again, 0, "policy with ltsc2019 only");
    assert_eq!(again.pushed(), r.pushed());
    assert_eq!(reg.manifest_digest("partial", "v2"), Some(r.pushed()));
}

/// A registry behind a token server that knows carol (password and identity token), her
/// auth file with `entry` for the registry, and the good fixture as one layout child.
fn token_registry(
    entry: impl Fn(String) -> Value,
) -> (TokenServer, Registry, tempfile::TempDir, String) {
    let tokens = TokenServer::start(
        &[("carol", "carol-pw-81c0", &["out"])],
        &[(IDENTITY, "carol")],
    );
    let mut reg = Registry::start();
    reg.restart_with(&Secured {
        token: Some(&tokens),
        ..Secured::default()
    });
    let home = tempfile::tempdir().unwrap();
    let config = entry(reg.host());
    fs::write(home.path().join("auth.json"), config.to_string()).unwrap();
    let child = format!("oci:{}", fixture("good").display());
    (tokens, reg, home, child)
}

const IDENTITY: &str = "carol-identity-4b2e";

/// Writes authenticate like reads: an identity token goes through the OAuth2 refresh-token
/// grant for a `pull,push` token. No secret is printed.
#[test]
fn identity_tokens_push_through_the_refresh_token_grant() {
    let (tokens, reg, home, child) =
        token_registry(|host| json!({"auths": {host: {"auth": "", "identitytoken": IDENTITY}}}));
    let authfile = home.path().join("auth.json");
    let target = format!("{}/out:v1", reg.host());
    let authfile = authfile.to_string_lossy();
    let r = run(&[
        "assemble",
        "--target",
        &target,
        "--authfile",
        &authfile,
        &child,
    ]);
    expect(&r, 0, "assemble with an identity token");
    let asked = tokens.requests();
    assert!(
        asked.iter().any(|t| t.user == "carol"
            && t.status == 200
            && t.scopes.iter().any(|s| s == "repository:out:pull,push")),
        "{asked:?}"
    );
    for out in [&r.stdout, &r.stderr] {
        assert!(!out.contains(IDENTITY), "{out}");
    }
}

/// A credential helper that fails ends a write with the helper's error (exit 3), as it
/// ends a read, instead of anonymous access and a bare 401.
#[test]
fn a_failing_credential_helper_fails_writes_like_reads() {
    let (_tokens, reg, home, child) =
        token_registry(|host| json!({"credHelpers": {host: "imgcheck-absent-helper"}}));
    let authfile = home.path().join("auth.json");
    let target = format!("{}/out:v1", reg.host());
    let authfile = authfile.to_string_lossy();
    let failed = run(&[
        "assemble",
        "--target",
        &target,
        "--authfile",
        &authfile,
        &child,
    ]);
    expect(&failed, 3, "assemble with a failing credential helper");
    assert!(
        failed.stderr.contains("imgcheck-absent-helper") && !failed.stderr.contains("HTTP 401"),
        "{}",
        failed.stderr
    );
}

/// Removes a buildah manifest list when the test ends, passed or not.
struct BuildahList(String);

impl Drop for BuildahList {
    fn drop(&mut self) {
        let _ = buildah().args(["manifest", "rm", &self.0]).output();
    }
}

fn buildah() -> Command {
    let mut cmd = Command::new("buildah");
    cmd.args(["--storage-driver", "vfs"]).stdin(Stdio::null());
    cmd
}

fn buildah_ok(args: &[&str]) {
    let out = buildah().args(args).output().unwrap_or_else(|e| {
        panic!("cannot run buildah (install it with 'apt-get install buildah', or run scripts/test): {e}")
    });
    assert!(
        out.status.success(),
        "buildah {args:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
}

/// docs/buildah.md: `buildah manifest add --all` copies a list's entries as they are, so Windows
/// entries without os.version stay without it. imgcheck reads each child's config instead.
#[test]
fn buildah_keeps_a_missing_os_version_and_assemble_does_not() {
    let reg = Registry::start();
    reg.push_layout(&fixture("no-os-version"), "nov", "latest");
    let source = format!("docker://{}/nov:latest", reg.host());
    let list = BuildahList(format!("imgcheck-assemble-test-{}", std::process::id()));
    let _ = buildah().args(["manifest", "rm", &list.0]).output();
    buildah_ok(&["manifest", "create", &list.0]);
    buildah_ok(&[
        "manifest",
        "add",
        "--all",
        "--tls-verify=false",
        &list.0,
        &source,
    ]);
    let by_buildah = format!("{}/by-buildah:v1", reg.host());
    buildah_ok(&[
        "manifest",
        "push",
        "--all",
        "--tls-verify=false",
        &list.0,
        &format!("docker://{by_buildah}"),
    ]);

    let r = run(&["verify", &by_buildah]);
    expect(&r, 1, "verify the buildah list");
    assert!(r.stdout.contains("os-version-missing"), "{}", r.stdout);
    let (_, index) = manifest_json(&reg, "by-buildah", "v1");
    assert!(
        platforms(&index).contains(&"windows/amd64".to_string()),
        "{index}"
    );

    let by_imgcheck = format!("{}/by-imgcheck:v1", reg.host());
    let r = assemble(&by_imgcheck, &[format!("{}/nov:latest", reg.host())], &[]);
    expect(&r, 0, "assemble from the same children");
    expect(
        &run(&["verify", &by_imgcheck]),
        0,
        "verify the assembled list",
    );
    let (_, index) = manifest_json(&reg, "by-imgcheck", "v1");
    assert_eq!(platforms(&index), GOOD_ORDER.to_vec());
}

/// Runs imgcheck with `args`, sampling its peak resident memory (VmHWM, KiB) every 10 ms
/// until it exits (at most 180 s).
fn run_measuring_memory(args: &[&str]) -> (Run, u64) {
    let mut child = imgcheck()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run imgcheck");
    let status = format!("/proc/{}/status", child.id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    let mut peak = 0u64;
    while child.try_wait().expect("poll imgcheck").is_none() {
        let hwm = fs::read_to_string(&status).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        });
        peak = peak.max(hwm.unwrap_or(0));
        assert!(
            std::time::Instant::now() < deadline,
            "imgcheck {args:?} did not finish within 180 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let out = child.wait_with_output().expect("imgcheck output");
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    (run, peak)
}

/// A layer larger than imgcheck may hold in memory is copied through a file and streamed:
/// from an OCI layout (the layout's own file) and from another registry (spooled), with peak
/// memory far below the layer's size and the layer intact in the target.
#[test]
fn a_large_layer_is_copied_in_bounded_memory() {
    const LAYER_MIB: usize = 160;
    let dir = tempfile::tempdir().unwrap();
    let m = write_big_linux_layout(dir.path(), LAYER_MIB);

    let first = Registry::start();
    let second = Registry::start();
    let from_layout = format!("oci:{}@{m}", dir.path().display());
    let from_registry = format!("{}/big@{m}", first.host());
    for (target, child) in [
        (format!("{}/big:v1", first.host()), from_layout),
        (format!("{}/big:v1", second.host()), from_registry),
    ] {
        let (r, peak_kib) = run_measuring_memory(&[
            "assemble",
            "--target",
            &target,
            "--policy",
            "linux-only",
            &child,
        ]);
        expect(&r, 0, &format!("{child} → {target}"));
        assert!(r.stderr.contains("blobs: 2 uploaded"), "{}", r.stderr);
        eprintln!("{child} → {target}: peak RSS {peak_kib} KiB");
        assert!(
            peak_kib < (LAYER_MIB as u64 * 1024) / 2,
            "{child} → {target}: peak RSS {peak_kib} KiB for a {LAYER_MIB} MiB layer"
        );
    }
    // The target holds the layer, byte for byte (the registry checked its digest on commit;
    // the deep check reads it back and hashes it again).
    let r = run(&[
        "verify",
        &format!("{}/big:v1", second.host()),
        "--policy",
        "linux-only",
        "--deep",
    ]);
    expect(&r, 0, "verify --deep of the copy");
}

/// Faults during a large layer's upload do not fail the copy: a chunk the registry refuses
/// (503, on every chunk) is sent again to the same location; a connection reset mid-upload
/// starts the upload again from its POST. The layer arrives intact.
#[test]
fn faults_during_a_large_layer_upload_heal() {
    const LAYER_MIB: usize = 20;
    let dir = tempfile::tempdir().unwrap();
    let m = write_big_linux_layout(dir.path(), LAYER_MIB);
    let reg = Registry::start();
    let proxy = FaultProxy::start(
        &reg.base_url(),
        vec![
            Rule::times(Match::Request("PATCH ".into()), Fault::Reset, 1),
            Rule::per_request(Match::Request("PATCH ".into()), Fault::Status(503), 1),
        ],
    );
    let r = run(&[
        "assemble",
        "--target",
        &format!("{}/big:v1", proxy.host()),
        "--policy",
        "linux-only",
        "-v",
        &format!("oci:{}@{m}", dir.path().display()),
    ]);
    expect(&r, 0, "large layer through faults");
    let seen = proxy.seen();
    let refused = seen
        .iter()
        .filter(|s| s.fault == Some(Fault::Status(503)))
        .count();
    assert!(
        refused >= 3,
        "every chunk of the layer was refused once: {refused}"
    );
    assert!(seen.iter().any(|s| s.fault == Some(Fault::Reset)));
    let deep = run(&[
        "verify",
        &format!("{}/big:v1", reg.host()),
        "--policy",
        "linux-only",
        "--deep",
    ]);
    expect(&deep, 0, "verify --deep of the copy");
}

/// Issue 22 item 7: a registry that serves other bytes for the pushed list (or one of its
/// entries) when it is read back by digest is at fault, not the list: exit 3, the digest and
/// what the bytes hash to named, `--force` never suggested, and the tag left as it was (as
/// `build` does for a per-platform image).
#[test]
fn a_read_back_mismatch_is_the_registry_fault_not_the_list() {
    let reg = Registry::start();
    reg.push_layout(&fixture("good"), "src", "latest");
    let proxy = FaultProxy::start(&reg.base_url(), vec![]);
    let children: Vec<String> = GOOD_ORDER
        .iter()
        .map(|k| format!("{}/src@{}", proxy.host(), child("good", k)))
        .collect();
    let target = format!("{}/rb:v1", proxy.host());
    for (what, flipped) in [
        ("the list", "GET /v2/rb/manifests/sha256:".to_string()),
        (
            "an entry",
            format!("GET /v2/rb/manifests/{}", child("good", WS2019)),
        ),
    ] {
        proxy.set_rules(vec![Rule::always(Match::Request(flipped), Fault::FlipByte)]);
        let r = assemble(&target, &children, &[]);
        expect(&r, 3, what);
        assert!(
            !r.stderr.contains("--force") && !r.stderr.contains("fails policy"),
            "{what}: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains("digest mismatch") && r.stderr.contains("hashes to sha256:"),
            "{what}: {}",
            r.stderr
        );
        assert_eq!(reg.manifest_digest("rb", "v1"), None, "{what}: tag moved");
    }
    proxy.set_rules(vec![]);
    let healed = assemble(&target, &children, &[]);
    expect(&healed, 0, "a registry that serves the pushed bytes");
    assert_eq!(reg.manifest_digest("rb", "v1"), Some(healed.pushed()));
}
