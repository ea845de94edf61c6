//! Issue 20, item 4: the pause image every Windows pod pulls first (the policy's
//! `windows.sandbox_image`; WMCO's containerd `sandbox_image`,
//! openshift/windows-machine-config-operator `pkg/internal/containerd_conf.toml`) is judged in
//! each cluster mode, for the Windows hosts, against a real `docker-registry`. The pause list
//! here (`fixtures/layouts/ltsc2022-only`) has no WS2019 (17763) entry, so every mode fails it.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::{self, Registry, fixture, fixtures_dir, imgcheck};

fn run(args: &[&str]) -> Output {
    let out = imgcheck().args(args).output().expect("imgcheck runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "imgcheck panicked: {stderr}");
    out
}

fn images(out: &Output) -> Vec<Value> {
    let doc = common::json_of(out);
    doc["images"].as_array().expect("images").clone()
}

/// A registry holding the CSI driver (`good`) as `csi/driver:v1` and a pause list lacking the
/// 17763 entry as `oss/kubernetes/pause:3.9`.
fn registry() -> (Registry, String, String) {
    let registry = Registry::start();
    registry.push_layout(&fixture("good"), "csi/driver", "v1");
    registry.push_layout(&fixture("ltsc2022-only"), "oss/kubernetes/pause", "3.9");
    let driver = format!("{}/csi/driver:v1", registry.host());
    let pause = format!("{}/oss/kubernetes/pause:3.9", registry.host());
    (registry, driver, pause)
}

/// The pause image's report: it fails for the WS2019 hosts only, judged for Windows hosts
/// only, and says why it is there.
#[track_caller]
fn assert_pause_fails(out: &Output, pause: &str, mode: &str) {
    let all = images(out);
    let report = all
        .iter()
        .find(|i| i["reference"] == pause)
        .unwrap_or_else(|| panic!("{mode}: no report of {pause}: {all:#?}"));
    assert_eq!(report["verdict"], "fail", "{mode}: {report:#}");
    // Where its reference came from: the policy's key, or the flag given in its place.
    let key = match mode {
        "policy key" => "windows.sandbox_image",
        _ => "--sandbox-image",
    };
    assert_eq!(
        report["origins"],
        serde_json::json!([{"kind": "sandbox", "key": key}]),
        "{mode}"
    );
    let hosts = report["hosts"].as_array().unwrap();
    assert!(
        !hosts.is_empty()
            && hosts
                .iter()
                .all(|h| h["platform"].as_str().unwrap().starts_with("windows/")),
        "{mode}: judged for Windows hosts only: {hosts:#?}"
    );
    let no_match =
        report["findings"].as_array().unwrap().iter().any(|f| {
            f["rule"] == "no-match" && f["message"].as_str().unwrap().contains("10.0.17763")
        });
    assert!(no_match, "{mode}: {report:#}");
    assert_eq!(out.status.code(), Some(1), "{mode}");
}

/// A Windows DaemonSet running `image` that tolerates WMCO's `os=Windows:NoSchedule` taint, as
/// the real ones do (without it its pods land on no Windows node, and no sandbox is pulled).
fn daemonset(dir: &Path, image: &str) -> String {
    let path = dir.join("ds.yaml");
    std::fs::write(
        &path,
        format!(
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: csi-node-windows, namespace: ns}}\n\
             spec:\n  template:\n    spec:\n      nodeSelector: {{kubernetes.io/os: windows}}\n      \
             tolerations: [{{key: os, value: Windows, effect: NoSchedule}}]\n      \
             containers:\n      - {{name: csi-driver, image: {image}}}\n"
        ),
    )
    .unwrap();
    path.display().to_string()
}

#[test]
fn a_pause_image_without_a_supported_build_fails_in_each_cluster_mode() {
    let (registry, driver, pause) = registry();
    let dir = tempfile::tempdir().unwrap();
    let nodes = fixtures_dir().join("nodes/ocp-wmco.json");
    let nodes = nodes.to_str().unwrap();
    let ds = daemonset(dir.path(), &driver);
    let release = common::release::push_release_multi(
        &registry,
        "ocp/release",
        "4.18.0-multi",
        &[("azure-file-csi-driver", &driver)],
    );
    let release = release.trim_start_matches("docker://").to_string();
    let sandbox = ["--sandbox-image", &pause, "--format", "json"];
    let modes: [(&str, Vec<&str>); 4] = [
        ("--nodes", vec!["verify", "--nodes", nodes, &driver]),
        ("--from-manifests", vec!["verify", "--from-manifests", &ds]),
        (
            "--from-release",
            vec![
                "verify",
                "--from-release",
                &release,
                "--release-image",
                "azure-file-csi-driver",
            ],
        ),
        (
            "mirror-check --pre --nodes",
            vec!["mirror-check", "--pre", "--nodes", nodes, &driver],
        ),
    ];
    for (mode, mut args) in modes {
        args.extend(sandbox);
        let out = run(&args);
        assert_pause_fails(&out, &pause, mode);
    }
}

#[test]
fn the_policy_names_the_sandbox_image_and_plain_references_do_not_add_it() {
    let (_registry, driver, pause) = registry();
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/openshift.yaml"),
    )
    .unwrap()
    .replace("mcr.microsoft.com/oss/kubernetes/pause:3.9", &pause);
    std::fs::write(&policy, text).unwrap();
    let policy = policy.to_str().unwrap();
    let nodes = fixtures_dir().join("nodes/ocp-wmco.json");
    let nodes = nodes.to_str().unwrap();

    // The policy's key, no override.
    let out = imgcheck()
        .env_remove("IMGCHECK_SANDBOX_IMAGE")
        .args([
            "verify", "--policy", policy, "--nodes", nodes, &driver, "--format", "json",
        ])
        .output()
        .unwrap();
    assert_pause_fails(&out, &pause, "policy key");

    // `none` skips it; plain references (the policy's hosts, not a cluster's) never add it.
    for args in [
        vec![
            "verify",
            "--policy",
            policy,
            "--nodes",
            nodes,
            "--sandbox-image",
            "none",
            &driver,
        ],
        vec!["verify", "--policy", policy, &driver],
    ] {
        let mut args = args;
        args.extend(["--format", "json"]);
        let out = imgcheck()
            .env_remove("IMGCHECK_SANDBOX_IMAGE")
            .args(&args)
            .output()
            .unwrap();
        let all = images(&out);
        assert_eq!(all.len(), 1, "{args:?}: {all:#?}");
        assert_eq!(out.status.code(), Some(0), "{args:?}");
    }

    // Out of reach (a disconnected run and the default mcr.microsoft.com, say): the error
    // says how to name the pause image the nodes use, or to skip it.
    let unreachable = "127.0.0.1:9/oss/kubernetes/pause:3.9";
    let out = run(&[
        "verify",
        "--nodes",
        nodes,
        "--sandbox-image",
        unreachable,
        &driver,
        "--retries",
        "0",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(3));
    let all = images(&out);
    let report = all
        .iter()
        .find(|i| i["reference"] == unreachable)
        .expect("pause report");
    let message = report["findings"][0]["message"].as_str().unwrap();
    for want in [
        "named by --sandbox-image",
        "--sandbox-image REF",
        "--sandbox-image none",
        "windows.sandbox_image",
    ] {
        assert!(message.contains(want), "{want}: {message}");
    }

    // A bad override is bad input naming the flag.
    let out = run(&[
        "verify",
        "--nodes",
        nodes,
        "--sandbox-image",
        "Not A Ref",
        &driver,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--sandbox-image"));
}
