//! Issue 20: where Windows nodes really pull from. The `oc adm release mirror
//! --to=<reg>/ocp4/openshift4` layout, NeverContactSource, an ICSP-only configuration, a tag pull
//! under IDMS only and two IDMS entries on one registry host, each against a real
//! `docker-registry` mirror: `--plan` (no network) shows the requests of Linux (CRI-O,
//! registries.conf) and Windows (containerd 1.7, the hosts.toml WMCO renders) nodes, and
//! `mirror-check` checks each OS where it really looks.
//!
//! The source is `localhost/…` pinned by digest and unreachable (a check from inside the
//! disconnected network): a source with a port would itself be a Windows finding (WMCO writes
//! its hosts.toml to a `host:port` folder), which `a_tag_pull_under_idms_only_goes_to_the_source`
//! shows.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::common::{Registry, fixture, imgcheck};

const ART: &str = "openshift-release-dev/ocp-v4.0-art-dev";
const RELEASE: &str = "openshift-release-dev/ocp-release";

fn run(args: &[&str]) -> (i32, Value, String) {
    let out = imgcheck().args(args).output().expect("imgcheck runs");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: not JSON ({e}): {}\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (out.status.code().expect("exit code"), doc, stderr)
}

/// A mirror registry, a configuration directory, and the digest of the pushed fixture.
struct Setup {
    mirror: Registry,
    dir: tempfile::TempDir,
    digest: String,
}

impl Setup {
    /// The `good` fixture pushed to the mirror under `repo`.
    fn pushed_at(repo: &str) -> Setup {
        let mirror = Registry::start();
        let digest = mirror.push_layout(&fixture("good"), repo, "4.18");
        Setup {
            mirror,
            dir: tempfile::tempdir().expect("tempdir"),
            digest,
        }
    }

    fn reference(&self) -> String {
        format!("localhost/{ART}@{}", self.digest)
    }

    /// A mirror-set file of `kind` (IDMS, ITMS or ICSP) with `entries` (`{m}` is the mirror).
    fn config(&self, kind: &str, entries: &str) -> String {
        let (api, field) = match kind {
            "ImageContentSourcePolicy" => {
                ("operator.openshift.io/v1alpha1", "repositoryDigestMirrors")
            }
            "ImageTagMirrorSet" => ("config.openshift.io/v1", "imageTagMirrors"),
            _ => ("config.openshift.io/v1", "imageDigestMirrors"),
        };
        let text = format!(
            "apiVersion: {api}\nkind: {kind}\nmetadata: {{name: release}}\nspec:\n  {field}:\n{}",
            entries.replace("{m}", &self.mirror.host())
        );
        let path = self.dir.path().join("mirrors.yaml");
        std::fs::write(&path, text).expect("write");
        path.to_str().expect("utf-8").to_string()
    }

    fn flag(kind: &str) -> &'static str {
        match kind {
            "ImageContentSourcePolicy" => "--icsp",
            _ => "--idms",
        }
    }

    /// `--plan --format json` for `reference`: per OS, the request URLs and kinds.
    fn plan(
        &self,
        kind: &str,
        entries: &str,
        reference: &str,
    ) -> Vec<(String, Vec<(String, String)>)> {
        let config = self.config(kind, entries);
        let (code, doc, err) = run(&[
            "mirror-check",
            "--plan",
            Self::flag(kind),
            &config,
            reference,
            "--format",
            "json",
        ]);
        assert_eq!(code, 0, "{err}");
        doc["plans"]
            .as_array()
            .expect("plans")
            .iter()
            .map(|p| {
                assert_eq!(p["reference"], reference, "{p:#}");
                let runtime = match p["os"].as_str() {
                    Some("linux") => ("cri-o", "registries.conf"),
                    _ => ("containerd-1.7", "hosts.toml"),
                };
                assert_eq!(
                    (p["runtime"].as_str(), p["configured_by"].as_str()),
                    (Some(runtime.0), Some(runtime.1))
                );
                let attempts = p["attempts"]
                    .as_array()
                    .expect("attempts")
                    .iter()
                    .map(|a| {
                        (
                            a["kind"].as_str().unwrap().to_string(),
                            a["url"].as_str().unwrap().to_string(),
                        )
                    })
                    .collect();
                (p["os"].as_str().unwrap().to_string(), attempts)
            })
            .collect()
    }

    /// `mirror-check` of `reference`: the exit code, and per OS the verdict and error rules.
    fn check(
        &self,
        kind: &str,
        entries: &str,
        reference: &str,
    ) -> (i32, Vec<(String, String, BTreeSet<String>)>) {
        let config = self.config(kind, entries);
        let (code, doc, _) = run(&[
            "mirror-check",
            Self::flag(kind),
            &config,
            reference,
            "--retries",
            "0",
            "--format",
            "json",
        ]);
        let images = doc["images"].as_array().expect("images");
        assert_eq!(images.len(), 1, "one report per image: {doc:#}");
        let image = &images[0];
        let findings = image["findings"].as_array().expect("findings");
        let rows = image["origins"]
            .as_array()
            .expect("origins")
            .iter()
            .filter(|o| o["kind"] == "nodes")
            .map(|o| {
                let os = o["os"].as_str().unwrap();
                // The findings of this OS's pull, and those every OS's pull shares.
                let of_os = findings
                    .iter()
                    .filter(|f| f["nodes"].is_null() || f["nodes"] == os);
                let errors: BTreeSet<String> = of_os
                    .filter(|f| f["severity"] == "error")
                    .map(|f| f["rule"].as_str().unwrap().to_string())
                    .collect();
                let verdict = match errors.iter().any(|r| r != "fetch-error") {
                    true => "fail",
                    false if errors.is_empty() => "pass",
                    false => "error",
                };
                (os.to_string(), verdict.to_string(), errors)
            })
            .collect();
        (code, rows)
    }
}

fn rules(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn pass() -> (String, BTreeSet<String>) {
    ("pass".into(), BTreeSet::new())
}

fn fail(rule: &str) -> (String, BTreeSet<String>) {
    ("fail".into(), rules(&[rule]))
}

/// The verdict and error rules of the Linux row, then of the Windows row.
fn by_os(rows: &[(String, String, BTreeSet<String>)]) -> Vec<(String, BTreeSet<String>)> {
    let oses: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(oses, ["linux", "windows"], "{rows:?}");
    rows.iter().map(|r| (r.1.clone(), r.2.clone())).collect()
}

const RELEASE_MIRROR: &str = "  - source: localhost/openshift-release-dev/ocp-v4.0-art-dev\n    mirrors: [\"{m}/ocp4/openshift4\"]\n";
const SOURCE_PATH: &str = "  - source: localhost/openshift-release-dev/ocp-v4.0-art-dev\n    mirrors: [\"{m}/openshift-release-dev/ocp-v4.0-art-dev\"]\n";

#[test]
fn the_release_mirror_layout_fails_windows_nodes_only() {
    let s = Setup::pushed_at("ocp4/openshift4");
    let (r, m, d) = (s.reference(), s.mirror.host(), s.digest.clone());
    let idms = "ImageDigestMirrorSet";
    assert_eq!(
        s.plan(idms, RELEASE_MIRROR, &r),
        [
            (
                "linux".to_string(),
                vec![
                    (
                        "mirror".to_string(),
                        format!("https://{m}/v2/ocp4/openshift4/manifests/{d}")
                    ),
                    (
                        "source".to_string(),
                        format!("https://localhost/v2/{ART}/manifests/{d}")
                    ),
                ]
            ),
            (
                "windows".to_string(),
                vec![
                    (
                        "mirror".to_string(),
                        format!("https://{m}/v2/ocp4/openshift4/{ART}/manifests/{d}")
                    ),
                    (
                        "source".to_string(),
                        format!("https://localhost/v2/{ART}/manifests/{d}")
                    ),
                ]
            ),
        ]
    );
    let (code, rows) = s.check(idms, RELEASE_MIRROR, &r);
    assert_eq!(
        by_os(&rows),
        [pass(), fail("mirror-windows-path")],
        "{rows:?}"
    );
    assert_eq!(code, 1);

    let s = Setup::pushed_at(ART);
    let (code, rows) = s.check(idms, SOURCE_PATH, &s.reference());
    assert_eq!(by_os(&rows), [pass(), pass()], "{rows:?}");
    assert_eq!(code, 0);
}

#[test]
fn never_contact_source_makes_the_first_mirror_the_server() {
    let ncs = |entries: &str| entries.to_string() + "    mirrorSourcePolicy: NeverContactSource\n";
    let s = Setup::pushed_at("ocp4/openshift4");
    let (r, m, d) = (s.reference(), s.mirror.host(), s.digest.clone());
    let idms = "ImageDigestMirrorSet";
    let windows = format!("https://{m}/v2/ocp4/openshift4/{ART}/manifests/{d}");
    assert_eq!(
        s.plan(idms, &ncs(RELEASE_MIRROR), &r),
        [
            (
                "linux".to_string(),
                vec![(
                    "mirror".to_string(),
                    format!("https://{m}/v2/ocp4/openshift4/manifests/{d}")
                )]
            ),
            // The mirror host, then the server, which is the same mirror.
            (
                "windows".to_string(),
                vec![
                    ("mirror".to_string(), windows.clone()),
                    ("mirror".to_string(), windows)
                ]
            ),
        ]
    );
    let (_, rows) = s.check(idms, &ncs(RELEASE_MIRROR), &r);
    assert_eq!(
        by_os(&rows),
        [pass(), fail("mirror-windows-path")],
        "{rows:?}"
    );

    let s = Setup::pushed_at(ART);
    let (code, rows) = s.check(idms, &ncs(SOURCE_PATH), &s.reference());
    assert_eq!(by_os(&rows), [pass(), pass()], "{rows:?}");
    assert_eq!(code, 0);
}

#[test]
fn an_icsp_only_configuration_leaves_windows_nodes_on_the_source() {
    let icsp = "ImageContentSourcePolicy";
    for repo in ["ocp4/openshift4", ART] {
        let s = Setup::pushed_at(repo);
        let entries = if repo == ART {
            SOURCE_PATH
        } else {
            RELEASE_MIRROR
        };
        let (r, d) = (s.reference(), s.digest.clone());
        let plan = s.plan(icsp, entries, &r);
        assert_eq!(
            plan[1],
            (
                "windows".to_string(),
                vec![(
                    "source".to_string(),
                    format!("https://localhost/v2/{ART}/manifests/{d}")
                )]
            )
        );
        let (code, rows) = s.check(icsp, entries, &r);
        assert_eq!(
            by_os(&rows),
            [pass(), fail("mirror-not-configured")],
            "{rows:?}"
        );
        assert_eq!(code, 1);
        let config = s.config(icsp, entries);
        let (_, doc, _) = run(&[
            "mirror-check",
            "--icsp",
            &config,
            &r,
            "--os",
            "windows",
            "--retries",
            "0",
            "--format",
            "json",
        ]);
        let message = doc["images"][0]["findings"].to_string();
        assert!(
            message.contains("deprecated") && message.contains("ImageDigestMirrorSet"),
            "{message}"
        );
    }
}

#[test]
fn a_tag_pull_under_idms_only_goes_to_the_source() {
    // A reachable source (with a port: on Windows, WMCO's host:port folder is itself an error).
    let source = Registry::start();
    source.push_layout(&fixture("good"), ART, "4.18");
    let s = Setup::pushed_at("ocp4/openshift4");
    let src = source.host();
    let entries = format!("  - source: {src}/{ART}\n    mirrors: [\"{{m}}/ocp4/openshift4\"]\n");
    let r = format!("{src}/{ART}:4.18");
    let idms = "ImageDigestMirrorSet";
    let url = format!("https://{src}/v2/{ART}/manifests/4.18");
    assert_eq!(
        s.plan(idms, &entries, &r),
        [
            (
                "linux".to_string(),
                vec![("source".to_string(), url.clone())]
            ),
            ("windows".to_string(), vec![("source".to_string(), url)]),
        ]
    );
    let (_, rows) = s.check(idms, &entries, &r);
    let got = by_os(&rows);
    assert_eq!(got[0], pass(), "{rows:?}");
    assert_eq!(got[1], fail("mirror-windows-path"), "{rows:?}");
    let config = s.config(idms, &entries);
    let (_, doc, _) = run(&["mirror-check", "--idms", &config, &r, "--format", "json"]);
    let text = doc.to_string();
    assert!(
        text.contains("mirror-tag-ignored")
            && text.contains(&format!("'127.0.0.1_{}_'", source.port())),
        "{text}"
    );
}

#[test]
fn two_idms_entries_on_one_registry_host_are_merged_for_windows_nodes() {
    let two = |art: &str, release: &str| {
        format!(
            "  - source: localhost/{ART}\n    mirrors: [\"{{m}}/{art}\"]\n  - source: localhost/{RELEASE}\n    mirrors: [\"{{m}}/{release}\"]\n"
        )
    };
    let s = Setup::pushed_at("ocp4/openshift4");
    let (r, m, d) = (s.reference(), s.mirror.host(), s.digest.clone());
    let idms = "ImageDigestMirrorSet";
    let release_layout = two("ocp4/openshift4", "ocp4/release");
    assert_eq!(
        s.plan(idms, &release_layout, &r)[1],
        (
            "windows".to_string(),
            vec![
                (
                    "mirror".to_string(),
                    format!("https://{m}/v2/ocp4/openshift4/{ART}/manifests/{d}")
                ),
                (
                    "mirror".to_string(),
                    format!("https://{m}/v2/ocp4/release/{ART}/manifests/{d}")
                ),
                (
                    "source".to_string(),
                    format!("https://localhost/v2/{ART}/manifests/{d}")
                ),
            ]
        )
    );
    let (_, rows) = s.check(idms, &release_layout, &r);
    assert_eq!(
        by_os(&rows),
        [pass(), fail("mirror-windows-path")],
        "{rows:?}"
    );

    let s = Setup::pushed_at(ART);
    let source_layout = two(ART, RELEASE);
    // Both mirrors truncate to the mirror host: one host entry.
    assert_eq!(s.plan(idms, &source_layout, &s.reference())[1].1.len(), 2);
    let (code, rows) = s.check(idms, &source_layout, &s.reference());
    assert_eq!(by_os(&rows), [pass(), pass()], "{rows:?}");
    assert_eq!(code, 0);
}
