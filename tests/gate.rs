//! Issue 32 ("gate-closed"): the disconnected gate never passes a release a disconnected
//! cluster cannot pull. The source is a real `docker-registry` on port 80 of its own loopback
//! address (`127.0.0.N/…`, no port, as quay.io or registry.redhat.io), so WMCO's hosts.toml
//! for it sits in a folder Windows accepts and Windows rows are checked end to end; the
//! mirror is another registry, filled with `skopeo copy --all --preserve-digests`.
//!
//! - after mirroring, a faithful copy of a list without a WS2022 entry fails (`no-match` for
//!   the Windows nodes), and the good release with its pause image mirrored passes;
//! - an unmirrored pause image fails from the configuration alone, without a request to its
//!   registry (its access log says so);
//! - `--pre --from-imageset`: an ImageSet without the pause image fails naming it, and a
//!   `platforms` filter that drops `linux/amd64` fails naming the field.

use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;

use crate::common::{Registry, fixture, imgcheck, skopeo_copy_all};

const DRIVER: &str = "csi/driver";
const PAUSE: &str = "oss/kubernetes/pause";
const W20348: &str = "sha256:8888abdb127247b9029b295a056efda3ab86a1b275850c397f6d51b1be2b1b58";

/// A port-less source holding the driver (`good`) as `csi/driver:v1`, the same list without
/// its WS2022 entry as `csi/driver:no-ws2022`, and a pause image (`good`: Linux, WS2019,
/// WS2022) as `oss/kubernetes/pause:3.9`; an empty mirror; a directory for configuration.
struct Release {
    source: Registry,
    mirror: Registry,
    dir: tempfile::TempDir,
}

impl Release {
    fn new() -> Release {
        let source = Registry::start_portless();
        source.push_layout(&fixture("good"), DRIVER, "v1");
        source.push_layout(&fixture("good"), PAUSE, "3.9");
        let (status, body) = source.get_manifest(DRIVER, "v1");
        assert_eq!(status, 200);
        let mut index: Value = serde_json::from_slice(&body).expect("index JSON");
        index["manifests"]
            .as_array_mut()
            .expect("manifests")
            .retain(|d| d["digest"] != W20348);
        let resp = source
            .client()
            .put(source.url(&format!("/v2/{DRIVER}/manifests/no-ws2022")))
            .header("Content-Type", "application/vnd.oci.image.index.v1+json")
            .body(serde_json::to_vec(&index).expect("serialise"))
            .send()
            .expect("PUT the list without WS2022");
        assert_eq!(resp.status().as_u16(), 201);
        Release {
            source,
            mirror: Registry::start(),
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// `skopeo copy --all` of `repo:tag` from the source to the mirror, under `mirror/`.
    fn mirror(&self, repo: &str, tag: &str) {
        skopeo_copy_all(
            &self.source.docker_ref(repo, tag),
            &self.mirror.docker_ref(&format!("mirror/{repo}"), tag),
        );
    }

    /// The source's digest of `repo:tag`.
    fn digest(&self, repo: &str, tag: &str) -> String {
        self.source.manifest_digest(repo, tag).expect("digest")
    }

    /// `repo` at `reference` (`:tag` or `@digest`) on the source.
    fn source_ref(&self, repo: &str, reference: &str) -> String {
        format!("{}/{repo}{reference}", self.source.host())
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        path
    }

    /// An ImageDigestMirrorSet and an ImageTagMirrorSet sending every repository of the source
    /// registry to `mirror/` on the mirror, as `oc-mirror` writes them for a registry.
    fn mirror_sets(&self) -> PathBuf {
        let (s, m) = (self.source.host(), self.mirror.host());
        self.write(
            "mirror-sets.yaml",
            &format!(
                "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\n\
                 metadata: {{name: idms}}\nspec:\n  imageDigestMirrors:\n  - source: {s}\n    \
                 mirrors: [{m}/mirror]\n---\napiVersion: config.openshift.io/v1\n\
                 kind: ImageTagMirrorSet\nmetadata: {{name: itms}}\nspec:\n  imageTagMirrors:\n  \
                 - source: {s}\n    mirrors: [{m}/mirror]\n"
            ),
        )
    }
}

/// Runs imgcheck (the sandbox image as `sandbox`, else none) and returns the exit code and
/// the JSON report.
fn gate(args: &[&str], sandbox: Option<&str>) -> (i32, Value) {
    let mut cmd = imgcheck();
    if let Some(image) = sandbox {
        cmd.env("IMGCHECK_SANDBOX_IMAGE", image);
    }
    let out: Output = cmd
        .args(args)
        .args(["--format", "json", "--retries", "0"])
        .output()
        .expect("imgcheck runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: not JSON ({e}): {}\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (out.status.code().expect("exit code"), doc)
}

/// The report of `reference` in `doc`.
fn report<'a>(doc: &'a Value, reference: &str) -> &'a Value {
    let images = doc["images"].as_array().expect("images");
    images
        .iter()
        .find(|i| i["reference"] == reference)
        .unwrap_or_else(|| panic!("no report of {reference}: {doc:#}"))
}

/// The findings of `report` with `rule`, as (nodes, message).
fn findings(report: &Value, rule: &str) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["rule"] == rule)
        .map(|f| {
            let nodes = f["nodes"].as_str().unwrap_or("").to_string();
            (nodes, f["message"].as_str().expect("message").to_string())
        })
        .collect()
}

/// The error rules of `report`.
fn errors(report: &Value) -> Vec<String> {
    let all = report["findings"].as_array().expect("findings");
    let errors = all.iter().filter(|f| f["severity"] == "error");
    errors
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_faithful_copy_of_a_list_without_ws2022_fails_after_mirroring() {
    let r = Release::new();
    r.mirror(DRIVER, "no-ws2022");
    let reference = r.source_ref(DRIVER, &format!("@{}", r.digest(DRIVER, "no-ws2022")));
    let sets = r.mirror_sets();
    let args = ["mirror-check", "--idms", sets.to_str().unwrap(), &reference];
    let (code, doc) = gate(&args, None);
    assert_eq!(code, 1, "{doc:#}");
    let image = report(&doc, &reference);
    assert_eq!(image["verdict"], "fail");
    // The copy is exact: both OSes find it in the mirror…
    let resolved = findings(image, "mirror-resolved");
    let oses: Vec<&str> = resolved.iter().map(|(os, _)| os.as_str()).collect();
    assert_eq!(oses, ["linux", "windows"], "{resolved:?}");
    // …and a WS2022 node pulling it gets no match; the Linux nodes are fine.
    let no_match = findings(image, "no-match");
    assert!(
        !no_match.is_empty() && no_match.iter().all(|(os, _)| os == "windows"),
        "{no_match:?}"
    );
    assert!(
        no_match.iter().any(|(_, m)| m.contains("10.0.20348")),
        "{no_match:?}"
    );
    assert_eq!(errors(image), ["no-match"], "{image:#}");
    let hosts = image["hosts"].as_array().expect("hosts");
    let failing: Vec<&str> = (hosts.iter())
        .filter(|h| h["status"] != "ok")
        .map(|h| h["platform"].as_str().unwrap())
        .collect();
    assert!(
        !failing.is_empty() && failing.iter().all(|p| p.contains("10.0.20348")),
        "{hosts:#?}"
    );
    // One report for the image, counted once.
    assert_eq!(doc["images"].as_array().unwrap().len(), 1);
}

#[test]
fn the_good_release_with_its_pause_image_mirrored_passes() {
    let r = Release::new();
    r.mirror(DRIVER, "v1");
    r.mirror(PAUSE, "3.9");
    let reference = r.source_ref(DRIVER, &format!("@{}", r.digest(DRIVER, "v1")));
    let pause = r.source_ref(PAUSE, ":3.9");
    let sets = r.mirror_sets();
    let args = ["mirror-check", "--idms", sets.to_str().unwrap(), &reference];
    let (code, doc) = gate(&args, Some(&pause));
    assert_eq!(code, 0, "{doc:#}");
    let image = report(&doc, &reference);
    assert_eq!(image["verdict"], "pass", "{image:#}");
    // The pause image is checked for the Windows nodes only, where they pull it (by tag,
    // through the ImageTagMirrorSet).
    let sandbox = report(&doc, &pause);
    assert_eq!(sandbox["verdict"], "pass", "{sandbox:#}");
    let resolved = findings(sandbox, "mirror-resolved");
    assert_eq!(resolved.len(), 1, "{resolved:?}");
    assert!(resolved[0].1.contains(&r.mirror.host()), "{resolved:?}");
    let hosts = sandbox["hosts"].as_array().expect("hosts");
    assert!(
        !hosts.is_empty()
            && hosts
                .iter()
                .all(|h| h["platform"].as_str().unwrap().starts_with("windows/")),
        "{hosts:#?}"
    );
}

#[test]
fn an_unmirrored_pause_image_fails_from_the_configuration_alone() {
    let r = Release::new();
    r.mirror(DRIVER, "v1");
    // The pause image lives on a registry no mirror set covers.
    let elsewhere = Registry::start_portless();
    elsewhere.push_layout(&fixture("good"), PAUSE, "3.9");
    let pushed = elsewhere.requests().len();
    let pause = format!("{}/{PAUSE}:3.9", elsewhere.host());
    let reference = r.source_ref(DRIVER, &format!("@{}", r.digest(DRIVER, "v1")));
    let sets = r.mirror_sets();
    let sets = sets.to_str().unwrap();
    let args = ["mirror-check", "--idms", sets, &reference];
    let (code, doc) = gate(&args, Some(&pause));
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(report(&doc, &reference)["verdict"], "pass");
    let sandbox = report(&doc, &pause);
    assert_eq!(sandbox["verdict"], "fail", "{sandbox:#}");
    let why = findings(sandbox, "mirror-not-configured");
    assert!(
        why.iter()
            .any(|(os, m)| os == "windows" && m.contains(&elsewhere.host())),
        "{why:?}"
    );
    assert_eq!(
        elsewhere.requests().len(),
        pushed,
        "the pause image's registry was asked: {:?}",
        elsewhere.requests()
    );
}

/// `--disconnected` (imgcheck inside the disconnected network): the mirror of a pinned
/// reference is checked against its digest, and the source is not asked at all.
#[test]
fn disconnected_checks_pinned_references_without_their_source() {
    let r = Release::new();
    r.mirror(DRIVER, "v1");
    let reference = r.source_ref(DRIVER, &format!("@{}", r.digest(DRIVER, "v1")));
    let asked = |r: &Release| {
        let requests = r.source.requests();
        requests
            .iter()
            .filter(|l| l.contains(&format!("/v2/{DRIVER}/")))
            .count()
    };
    let before = asked(&r);
    let sets = r.mirror_sets();
    let args = [
        "mirror-check",
        "--idms",
        sets.to_str().unwrap(),
        "--disconnected",
        &reference,
    ];
    let (code, doc) = gate(&args, None);
    assert_eq!(code, 0, "{doc:#}");
    let resolved = findings(report(&doc, &reference), "mirror-resolved");
    assert_eq!(resolved.len(), 2, "{resolved:?}");
    assert!(
        resolved
            .iter()
            .all(|(_, m)| m.contains("the source was not asked (--disconnected)")),
        "{resolved:?}"
    );
    assert_eq!(
        asked(&r),
        before,
        "the source was asked: {:?}",
        r.source.requests()
    );
}

#[test]
fn pre_with_an_imageset_without_the_pause_image_fails_naming_it() {
    let r = Release::new();
    let driver = r.source_ref(DRIVER, ":v1");
    let pause = r.source_ref(PAUSE, ":3.9");
    let isc = |images: &[&str]| {
        let list: String = images.iter().map(|i| format!("  - name: {i}\n")).collect();
        r.write(
            "isc.yaml",
            &format!(
                "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\nmirror:\n  \
                 additionalImages:\n{list}"
            ),
        )
    };
    let without = isc(&[&driver]);
    let args = [
        "mirror-check",
        "--pre",
        "--from-imageset",
        without.to_str().unwrap(),
    ];
    let (code, doc) = gate(&args, Some(&pause));
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(report(&doc, &driver)["verdict"], "pass");
    let sandbox = report(&doc, &pause);
    let why = findings(sandbox, "mirror-not-configured");
    assert!(
        why.iter().any(|(_, m)| m.contains("pause image")
            && m.contains(&format!("add '- name: {pause}' to mirror.additionalImages"))),
        "{sandbox:#}"
    );
    // Listed, it passes.
    let with = isc(&[&driver, &pause]);
    let args = [
        "mirror-check",
        "--pre",
        "--from-imageset",
        with.to_str().unwrap(),
    ];
    let (code, doc) = gate(&args, Some(&pause));
    assert_eq!(code, 0, "{doc:#}");
}

#[test]
fn pre_with_a_filter_dropping_linux_fails_naming_the_field() {
    let r = Release::new();
    let driver = r.source_ref(DRIVER, ":v1");
    let isc = r.write(
        "isc.yaml",
        &format!(
            "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\nmirror:\n  \
             additionalImages:\n  - name: {driver}\n    platforms:\n    - {{os: windows, \
             architecture: amd64}}\n"
        ),
    );
    let args = [
        "mirror-check",
        "--pre",
        "--from-imageset",
        isc.to_str().unwrap(),
    ];
    let (code, doc) = gate(&args, None);
    assert_eq!(code, 1, "{doc:#}");
    let image = report(&doc, &driver);
    let dropped = findings(image, "mirror-platform-dropped");
    assert_eq!(dropped.len(), 1, "{image:#}");
    let message = &dropped[0].1;
    for want in [
        "mirror.additionalImages[0].platforms",
        "linux/amd64",
        "{os: linux, architecture: amd64}",
    ] {
        assert!(message.contains(want), "{want}: {message}");
    }
}

/// `mirror-check --plan` (text) and the check of the same pull, under `mirror-sets`.
fn plan_text(args: &[&str]) -> String {
    let out = imgcheck()
        .args(["mirror-check", "--plan"])
        .args(args)
        .output()
        .expect("imgcheck runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// Issue 32, item 4: messages a user can act on. Under `NeverContactSource` WMCO makes the
/// first mirror the server too, so containerd really asks it twice: the plan says so on the
/// second line, and `mirror-windows-path` names the URL once, without runs of spaces.
#[test]
fn a_host_asked_twice_is_said_once_and_why() {
    let r = Release::new();
    skopeo_copy_all(
        &r.source.docker_ref(DRIVER, "v1"),
        &r.mirror.docker_ref("flat/driver", "v1"),
    );
    let (s, m) = (r.source.host(), r.mirror.host());
    let idms = r.write(
        "idms.yaml",
        &format!(
            "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {{name: a}}\n\
             spec:\n  imageDigestMirrors:\n  - source: {s}/csi\n    mirrors: [{m}/flat]\n    \
             mirrorSourcePolicy: NeverContactSource\n"
        ),
    );
    let reference = r.source_ref(DRIVER, &format!("@{}", r.digest(DRIVER, "v1")));
    let idms = idms.to_str().unwrap();
    let plan = plan_text(&["--idms", idms, "--os", "windows", &reference]);
    let windows_url = format!("https://{m}/v2/flat/{DRIVER}/manifests/");
    let lines: Vec<&str> = plan.lines().filter(|l| l.contains(&windows_url)).collect();
    assert_eq!(lines.len(), 2, "{plan}");
    assert!(!lines[0].contains("asked again"), "{plan}");
    assert!(
        lines[1].contains("(asked again: hosts.toml names this host twice"),
        "{plan}"
    );
    let (code, doc) = gate(&["mirror-check", "--idms", idms, &reference], None);
    assert_eq!(code, 1, "{doc:#}");
    let path = findings(report(&doc, &reference), "mirror-windows-path");
    assert_eq!(path.len(), 1, "{doc:#}");
    let (os, message) = &path[0];
    assert_eq!(os, "windows");
    assert_eq!(message.matches(&windows_url).count(), 1, "{message}");
    assert!(!message.contains("  "), "runs of spaces: {message}");
    assert!(message.contains(&format!("{m}/flat/driver@")), "{message}");
}

/// Issue 32, item 4: a source with a port gets the port's hint, not the path's; a hosts.toml
/// host with `override_path = true` and no `/v2` is named with its cause, in the plan's URL.
#[test]
fn the_port_and_override_path_are_named_as_the_causes() {
    let r = Release::new();
    let ported = Registry::start();
    ported.push_layout(&fixture("good"), DRIVER, "v1");
    let m = r.mirror.host();
    let idms = r.write(
        "idms.yaml",
        &format!(
            "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {{name: a}}\n\
             spec:\n  imageDigestMirrors:\n  - source: {}/csi\n    mirrors: [{m}/mirror/csi]\n",
            ported.host()
        ),
    );
    let reference = format!(
        "{}/{DRIVER}@{}",
        ported.host(),
        ported.manifest_digest(DRIVER, "v1").unwrap()
    );
    let args = [
        "mirror-check",
        "--idms",
        idms.to_str().unwrap(),
        "--os",
        "windows",
        &reference,
    ];
    let (code, doc) = gate(&args, None);
    assert_eq!(code, 1, "{doc:#}");
    let image = report(&doc, &reference);
    let all = image["findings"].as_array().unwrap();
    let port = all
        .iter()
        .find(|f| f["rule"] == "mirror-windows-path")
        .unwrap_or_else(|| panic!("{image:#}"));
    let hint = port["hint"].as_str().unwrap();
    assert!(
        hint.contains("serve the source registry without a port"),
        "{hint}"
    );
    assert!(
        port["message"]
            .as_str()
            .unwrap()
            .contains("':' is reserved"),
        "{port:#}"
    );

    // containerd's own config_path tree: a host with override_path and no /v2.
    let hosts = r.dir.path().join("certs.d");
    // A Windows node looks up `host_port_` for a host with a port (containerd 1.7
    // config_windows.go hostPaths), never `host:port`.
    let host = r.source.host();
    let folder = hosts.join(match host.rsplit_once(':') {
        Some((h, port)) => format!("{h}_{port}_"),
        None => host.to_string(),
    });
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("hosts.toml"),
        format!("server = \"https://{}\"\n\n[host.\"http://{m}/mirror\"]\n  capabilities = [\"pull\"]\n  override_path = true\n", r.source.host()),
    )
    .unwrap();
    let reference = r.source_ref(DRIVER, &format!("@{}", r.digest(DRIVER, "v1")));
    let hosts = hosts.to_str().unwrap();
    let plan = plan_text(&["--hosts-dir", hosts, "--os", "windows", &reference]);
    let url = format!("http://{m}/mirror/{DRIVER}/manifests/");
    assert!(plan.contains(&url), "{plan}");
    let args = [
        "mirror-check",
        "--hosts-dir",
        hosts,
        "--os",
        "windows",
        "--disconnected",
        &reference,
    ];
    let (code, doc) = gate(&args, None);
    assert_eq!(code, 1, "{doc:#}");
    let path = findings(report(&doc, &reference), "mirror-windows-path");
    assert!(
        path.iter().any(|(_, m)| m.contains(&url)
            && m.contains("override_path = true")
            && m.contains("no /v2")),
        "{path:?}"
    );
}

/// Issue 33, C: a hosts.toml with `server` and no `host` table. containerd 1.5 – 1.7.31
/// (go-toml v1, `remotes/docker/config/hosts.go` `getSortedHosts`: "invalid `host` tree";
/// `loadHostDir` falls back to `loadCertFiles`) never ask that server: nodes under the
/// default policy (containerd-1.7 among its runtimes) pull from the source, a failure that
/// names why; nodes running only containerd 2.x (`core/remotes/docker/config/hosts.go`,
/// go-toml v2) ask the server, which holds the image: a pass.
#[test]
fn a_server_without_a_host_table_is_asked_only_by_releases_that_read_it() {
    let r = Release::new();
    skopeo_copy_all(
        &r.source.docker_ref(DRIVER, "v1"),
        &r.mirror.docker_ref(DRIVER, "v1"),
    );
    let hosts = r.dir.path().join("certs.d");
    let folder = hosts.join(r.source.host());
    std::fs::create_dir_all(&folder).unwrap();
    let server = format!("http://{}", r.mirror.host());
    std::fs::write(
        folder.join("hosts.toml"),
        format!("server = \"{server}\"\n"),
    )
    .unwrap();
    let policy = r.write(
        "v2.yaml",
        "name: v2\nwindows:\n  architectures: [amd64]\n  builds: [17763, 20348]\n  \
         isolation: process\nruntimes: [containerd-2.0, containerd-2.3]\n",
    );
    let reference = r.source_ref(DRIVER, &format!("@{}", r.digest(DRIVER, "v1")));
    let hosts = hosts.to_str().unwrap();
    let run = |policy: Option<&str>| {
        let mut args = vec!["mirror-check", "--hosts-dir", hosts, "--os", "windows"];
        args.extend(["--sandbox-image", "none", "--disconnected"]);
        if let Some(p) = policy {
            args.extend(["--policy", p]);
        }
        args.push(&reference);
        gate(&args, None)
    };
    let (code, doc) = run(None);
    assert_eq!(code, 1, "{doc:#}");
    let why = findings(report(&doc, &reference), "mirror-not-configured");
    assert!(
        why.iter().any(|(_, m)| m.contains(&server)
            && m.contains("invalid `host` tree")
            && m.contains("containerd-1.7")),
        "{why:?}"
    );
    let (code, doc) = run(Some(policy.to_str().unwrap()));
    assert_eq!(code, 0, "{doc:#}");
    assert!(errors(report(&doc, &reference)).is_empty(), "{doc:#}");
}
