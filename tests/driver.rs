//! `driver-skew` (issue 37, item 1): the Linux and Windows halves of one CSI driver, two
//! DaemonSets in `--from-manifests`, must come from one source revision. Real Go programs are
//! built here (Debian `golang-go`, `-buildvcs=true`) in a git repository at two commits, so each
//! binary carries the `vcs.revision` Go stamps (`runtime/debug` `BuildInfo.Settings`); their
//! images are pushed to the test registry and named by the DaemonSets.

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::common::{Registry, imgcheck};
use crate::content::{Entry, layer, list_layout, run_ok, windows_base};
use crate::schema::assert_conforms;

/// The driver built at two commits: Linux at the first, Windows at both.
struct Builds {
    linux_a: Vec<u8>,
    windows_a: Vec<u8>,
    windows_b: Vec<u8>,
    a: String,
    b: String,
}

fn builds() -> &'static Builds {
    static BUILDS: OnceLock<Builds> = OnceLock::new();
    BUILDS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        let src = dir.join("src");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("go.mod"), "module example.com/drv\n\ngo 1.19\n").unwrap();
        let main = |word: &str| {
            let text = format!("package main\n\nfunc main() {{ println(\"{word}\") }}\n");
            std::fs::write(src.join("main.go"), text).unwrap();
        };
        let git = |args: &[&str]| {
            let mut c = Command::new("git");
            c.args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
                .args(args)
                .current_dir(&src);
            String::from_utf8(run_ok(&mut c, "git"))
                .unwrap()
                .trim()
                .to_string()
        };
        let go = |goos: &str, out: &str| -> Vec<u8> {
            let target = dir.join(out);
            let mut c = Command::new("go");
            c.args(["build", "-trimpath", "-o"])
                .arg(&target)
                .arg(".")
                .current_dir(&src)
                .env("GOOS", goos)
                .env("GOARCH", "amd64")
                .env("CGO_ENABLED", "0")
                .env(
                    "GOCACHE",
                    std::env::temp_dir().join("imgcheck-driver-gocache"),
                )
                .env("GOPATH", dir.join("gopath"))
                .env("GOFLAGS", "-buildvcs=true");
            run_ok(&mut c, "golang-go");
            std::fs::read(target).unwrap()
        };
        main("a");
        git(&["init", "-q"]);
        git(&["add", "."]);
        git(&["commit", "-qm", "a"]);
        let a = git(&["rev-parse", "HEAD"]);
        let (linux_a, windows_a) = (go("linux", "drv-a"), go("windows", "drv-a.exe"));
        main("b");
        git(&["commit", "-qam", "b"]);
        let b = git(&["rev-parse", "HEAD"]);
        let windows_b = go("windows", "drv-b.exe");
        Builds {
            linux_a,
            windows_a,
            windows_b,
            a,
            b,
        }
    })
}

const POLICY: &str = "name: t\nlinux:\n  architectures: [amd64]\n  runtimes: [cri-o]\nwindows:\n  architectures: [amd64]\n  builds: [17763]\nruntimes: [containerd-1.7]\n";

/// Pushes a one-entry list of `os` running `program` (or none) labelled `labels`, as
/// `REPO:v1`; returns its reference.
fn push(
    registry: &Registry,
    dir: &Path,
    repo: &str,
    os: &'static str,
    program: Option<&[u8]>,
    labels: Value,
) -> String {
    let entry = match os {
        "windows" => Entry {
            os,
            arch: "amd64",
            entrypoint: vec!["C:\\drv.exe"],
            labels,
            layers: vec![
                windows_base(),
                layer(&[("Files/drv.exe", program.unwrap_or(b"MZ"))]),
            ],
        },
        _ => Entry {
            os,
            arch: "amd64",
            entrypoint: vec!["/drv"],
            labels,
            layers: vec![layer(&[("drv", program.unwrap_or(b"#!/bin/sh\n"))])],
        },
    };
    let layout = list_layout(dir, repo, &[entry]);
    registry.push_layout(&layout, repo, "v1");
    registry
        .docker_ref(repo, "v1")
        .trim_start_matches("docker://")
        .to_string()
}

/// [`push`] of an unlabelled half running `program`.
fn push_half(
    registry: &Registry,
    dir: &Path,
    repo: &str,
    os: &'static str,
    program: &[u8],
) -> String {
    push(registry, dir, repo, os, Some(program), json!({}))
}

/// A DaemonSet `name` for `os` nodes with a registrar naming the kubelet plugin path of
/// `drv.csi.example.com`, and the driver's container `csi-driver` running `image`.
fn daemonset(name: &str, os: &str, image: &str) -> String {
    let sock = match os {
        "windows" => "C:\\\\var\\\\lib\\\\kubelet\\\\plugins\\\\drv.csi.example.com\\\\csi.sock",
        _ => "/var/lib/kubelet/plugins/drv.csi.example.com/csi.sock",
    };
    format!(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: {name}, namespace: csi}}\nspec:\n  \
         template:\n    spec:\n      nodeSelector: {{kubernetes.io/os: {os}}}\n      tolerations: \
         [{{key: os, value: Windows, effect: NoSchedule}}]\n      containers:\n      - name: \
         registrar\n        image: {image}\n        args: [\"--kubelet-registration-path={sock}\"]\n      \
         - name: csi-driver\n        image: {image}\n"
    )
}

/// Runs `verify --from-manifests` on the two DaemonSets under `policy` (JSON): the exit code
/// and the driver report, if any.
fn verify(
    dir: &Path,
    linux: &str,
    windows: &str,
    policy: &str,
    deep: bool,
) -> (i32, Option<Value>) {
    let manifests = dir.join("manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    let text = format!(
        "{}---\n{}",
        daemonset("drv-node", "linux", linux),
        daemonset("drv-node-win", "windows", windows)
    );
    std::fs::write(manifests.join("ds.yaml"), text).unwrap();
    let policy_file = dir.join("policy.yaml");
    std::fs::write(&policy_file, policy).unwrap();
    let mut cmd = imgcheck();
    cmd.args([
        "verify",
        "--retries",
        "0",
        "--format",
        "json",
        "--from-manifests",
    ])
    .arg(&manifests)
    .arg("--policy")
    .arg(&policy_file)
    .args(["--sandbox-image", "none"]);
    if deep {
        cmd.arg("--deep");
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let doc: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stderr}"));
    assert_conforms("imagesReport", "driver", &doc);
    let driver = doc["images"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| {
            i["reference"]
                .as_str()
                .is_some_and(|r| r.starts_with("driver "))
        })
        .cloned();
    (out.status.code().unwrap(), driver)
}

/// The (rule, severity, message) of a report's findings.
fn findings(report: &Value) -> Vec<(String, String, String)> {
    let s = |f: &Value, k: &str| f[k].as_str().unwrap_or_default().to_string();
    (report["findings"].as_array().unwrap().iter())
        .map(|f| (s(f, "rule"), s(f, "severity"), s(f, "message")))
        .collect()
}

/// The Linux half built at commit A, the Windows half at commit B: `driver-skew`, a warning
/// naming both images and both revisions; the halves are paired by the driver name their
/// registrars give the kubelet.
#[test]
fn two_daemonsets_built_from_two_commits_are_driver_skew() {
    let b = builds();
    let (dir, registry) = (tempfile::tempdir().unwrap(), Registry::start());
    let linux = push_half(&registry, dir.path(), "drv-linux", "linux", &b.linux_a);
    let windows = push_half(&registry, dir.path(), "drv-win-b", "windows", &b.windows_b);
    let (code, driver) = verify(dir.path(), &linux, &windows, POLICY, true);
    let driver = driver.expect("a driver report");
    assert_eq!(
        driver["reference"], "driver drv.csi.example.com (registrar)",
        "{driver:#}"
    );
    assert_eq!(driver["origins"][0]["kind"], "driver", "{driver:#}");
    let found = findings(&driver);
    let skews: Vec<_> = found.iter().filter(|f| f.0 == "driver-skew").collect();
    assert_eq!(skews.len(), 1, "{found:#?}");
    let (_, severity, message) = skews[0];
    assert_eq!(severity, "warning");
    for part in [&linux, &windows, &b.a, &b.b] {
        assert!(message.contains(part.as_str()), "{part} not in {message}");
    }
    assert_eq!(code, 0, "a warning: {found:#?}");
}

/// Both halves built at commit A: no `driver-skew`, and no claim made about a half whose
/// revision is unknown.
#[test]
fn two_daemonsets_built_from_one_commit_pass() {
    let b = builds();
    let (dir, registry) = (tempfile::tempdir().unwrap(), Registry::start());
    let linux = push_half(&registry, dir.path(), "drv-linux", "linux", &b.linux_a);
    let windows = push_half(&registry, dir.path(), "drv-win-a", "windows", &b.windows_a);
    let (code, driver) = verify(dir.path(), &linux, &windows, POLICY, true);
    let driver = driver.expect("a driver report");
    assert_eq!((code, findings(&driver)), (0, vec![]), "{driver:#}");
    assert_eq!(driver["verdict"], "pass");
}

/// Labels only (no `--deep`): `vcs-ref` and `org.opencontainers.image.revision` that
/// disagree are `driver-skew`; the policy's `drivers:` entry with `skew: error` fails the run
/// (exit 1); a half without any label is said to be unknown, as information.
#[test]
fn labelled_halves_skew_and_the_policy_makes_it_an_error() {
    let (dir, registry) = (tempfile::tempdir().unwrap(), Registry::start());
    let linux = push(
        &registry,
        dir.path(),
        "l",
        "linux",
        None,
        json!({"vcs-ref": "1111111aaaa"}),
    );
    let rev = json!({"org.opencontainers.image.revision": "2222222bbbb"});
    let windows = push(&registry, dir.path(), "w", "windows", None, rev);
    let (code, driver) = verify(dir.path(), &linux, &windows, POLICY, false);
    let found = findings(&driver.expect("a driver report"));
    assert_eq!(code, 0, "{found:#?}");
    assert!(
        found.iter().any(|f| f.0 == "driver-skew"
            && f.2.contains("1111111aaaa (vcs-ref)")
            && f.2
                .contains("2222222bbbb (org.opencontainers.image.revision)")),
        "{found:#?}"
    );
    let strict = format!(
        "{POLICY}drivers:\n- name: drv\n  linux: {{workload: csi/drv-node}}\n  windows: {{workload: \
         drv-node-win}}\n  container: csi-driver\n  skew: error\n"
    );
    let (code, driver) = verify(dir.path(), &linux, &windows, &strict, false);
    let driver = driver.expect("a driver report");
    let found = findings(&driver);
    assert_eq!(driver["reference"], "driver drv", "{driver:#}");
    assert_eq!(
        (code, found.len(), found[0].0.as_str(), found[0].1.as_str()),
        (1, 1, "driver-skew", "error"),
        "{found:#?}"
    );
    let bare = push(&registry, dir.path(), "bare", "windows", None, json!({}));
    let (code, driver) = verify(dir.path(), &linux, &bare, POLICY, false);
    let found = findings(&driver.expect("a driver report"));
    assert_eq!(code, 0);
    assert!(
        found
            .iter()
            .all(|f| f.0 == "no-source-revision" && f.1 == "info")
            && found[0].2.contains("cannot tell"),
        "{found:#?}"
    );
}

/// The cluster runs the driver at commit A (`--from-manifests`, DaemonSets `drv-node` and
/// `drv-node-windows`); the target release's component `drv` (the DaemonSets' name without
/// `-node`, OpenShift's naming) ships one list with a Linux and a Windows entry at commit B.
/// The report names both rollout orders and their skews as information, and the target
/// component is verified although the policy does not list it.
#[test]
fn a_rollout_names_both_orders_and_their_skews() {
    let (dir, registry) = (tempfile::tempdir().unwrap(), Registry::start());
    let rev = |r: &str| json!({"vcs-ref": r});
    let linux = push(
        &registry,
        dir.path(),
        "cur-l",
        "linux",
        None,
        rev("aaaaaaa1"),
    );
    let windows = push(
        &registry,
        dir.path(),
        "cur-w",
        "windows",
        None,
        rev("aaaaaaa1"),
    );
    let entries = [
        Entry {
            os: "linux",
            arch: "amd64",
            entrypoint: vec!["/drv"],
            labels: rev("bbbbbbb2"),
            layers: vec![layer(&[("drv", b"#!/bin/sh\n")])],
        },
        Entry {
            os: "windows",
            arch: "amd64",
            entrypoint: vec!["C:\\drv.exe"],
            labels: rev("bbbbbbb2"),
            layers: vec![windows_base(), layer(&[("Files/drv.exe", b"MZ")])],
        },
    ];
    let layout = list_layout(dir.path(), "next", &entries);
    let digest = registry.push_layout(&layout, "next", "v1");
    let target = format!("{}/next@{digest}", registry.host());
    let release = crate::common::release::push_release(
        &registry,
        "ocp/release",
        "4.99.0",
        &[("drv", target.as_str())],
    );
    let manifests = dir.path().join("manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    let text = format!(
        "{}---\n{}",
        daemonset("drv-node", "linux", &linux),
        daemonset("drv-node-windows", "windows", &windows)
    );
    std::fs::write(manifests.join("ds.yaml"), text).unwrap();
    let policy = dir.path().join("p.yaml");
    std::fs::write(
        &policy,
        format!("{POLICY}release:\n  components: [other]\n"),
    )
    .unwrap();
    let out = imgcheck()
        .args([
            "verify",
            "--retries",
            "0",
            "--format",
            "json",
            "--sandbox-image",
            "none",
        ])
        .arg("--from-manifests")
        .arg(&manifests)
        .args(["--from-release", release.trim_start_matches("docker://")])
        .arg("--policy")
        .arg(&policy)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_conforms("imagesReport", "rollout", &doc);
    let images = doc["images"].as_array().unwrap();
    assert!(
        images.iter().any(|i| i["reference"] == target.as_str()),
        "the target component is verified: {doc:#}"
    );
    let driver = (images.iter())
        .find(|i| i["reference"] == "driver drv.csi.example.com (csi-driver)")
        .unwrap_or_else(|| panic!("{doc:#}"));
    let stages = driver["origins"][0]["stages"].as_array().unwrap();
    assert_eq!(
        (stages.len(), &stages[1]["stage"]),
        (2, &json!("target")),
        "{driver:#}"
    );
    let found = findings(driver);
    let rollout: Vec<_> = found.iter().filter(|f| f.0 == "driver-skew").collect();
    assert_eq!(rollout.len(), 1, "{found:#?}");
    let (_, severity, message) = rollout[0];
    assert_eq!(severity, "info");
    assert!(
        message.contains("both orders are possible")
            && message.contains(&format!("target Linux half (bbbbbbb2, {target})"))
            && message.contains(&format!("current Windows half (aaaaaaa1, {windows})")),
        "{message}"
    );
}
