//! Issue 21, item 3 end to end, against a real `docker-registry`: dockershim-era nodes
//! (`containerRuntimeVersion: docker://19.3.14`) are judged under `docker-19.03`, moby's own
//! Windows pull (`distribution/pull_v2_windows.go` `filterManifests`, `pull_v2.go`
//! `pullManifestList`), instead of being skipped. The cluster is fixtures/nodes/aks-engine-1.19.json
//! (aks-engine 1.19 on Azure: a master and two Linux agents, two Windows Server 2019 agents,
//! every node on Docker 19.03.14); the pod templates are kubernetes-sigs/vsphere-csi-driver's
//! (fixtures/realworld/, sources in fixtures/README.md).

use crate::cluster::assert_schema;
use crate::common::cluster_run::{
    failing_placements, finding_message, image, nodes_file, registry_with, run_exiting, vsphere_csi,
};
use crate::common::{fixtures_dir, json_of, run_imgcheck as run};
use serde_json::Value;

/// The child digest `key` of fixture `name` (fixtures/digests.json).
fn child(name: &str, key: &str) -> String {
    let text = std::fs::read_to_string(fixtures_dir().join("digests.json")).unwrap();
    let digests: Value = serde_json::from_str(&text).unwrap();
    digests[name]["children"][key].as_str().unwrap().to_string()
}

/// Before: every node of the list reports Docker, so every node was skipped and the run was
/// refused (exit 2, "no node can be judged"). Now the Windows nodes are judged under
/// `docker-19.03`: the driver, built for ltsc2022 only, has no entry their build can pull
/// (moby leaves out builds above the host's); the registrar's Windows images sit in a child
/// index without platform, which containerd walks but moby never takes (its descriptor
/// platform is the zero value); the liveness probe's WS2019 entry is pulled and runs. The
/// Linux nodes on Docker stay skipped, each named with its field, in `notes` too.
#[test]
fn dockershim_windows_nodes_are_judged_as_moby_pulls() {
    let (_registry, _dir, m) = vsphere_csi("ltsc2022-only", "good", "nested-index");
    let nodes = nodes_file("aks-engine-1.19.json");
    let args = ["verify", "--from-manifests", &m, "--nodes", &nodes];

    let out = run_exiting(&[&args[..], &["--format", "json"]].concat(), 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let doc = json_of(&out);
    assert_schema(&doc);
    let windows_row = |repo: &str| -> Value {
        let rows = image(&doc, repo)["hosts"].as_array().unwrap().clone();
        let row = rows
            .into_iter()
            .find(|h| h["platform"] == "windows/amd64:10.0.17763")
            .unwrap_or_else(|| panic!("{repo}: no Windows row"));
        assert_eq!(row["runtime"], "docker-19.03", "{row:#}");
        assert_eq!(
            row["nodes"],
            serde_json::json!(["2963k8s010", "2963k8s011"])
        );
        row
    };
    let driver = windows_row("csi/ci/driver");
    assert_eq!(driver["status"], "no-match", "{driver:#}");
    let registrar = windows_row("csi-node-driver-registrar");
    assert_eq!(registrar["status"], "no-match", "{registrar:#}");
    let probe = windows_row("livenessprobe");
    assert_eq!(probe["status"], "ok", "{probe:#}");
    assert_eq!(
        probe["selected"],
        child("good", "windows/amd64:10.0.17763.5830")
    );
    for repo in ["csi/ci/driver", "csi-node-driver-registrar"] {
        assert_eq!(image(&doc, repo)["verdict"], "fail", "{repo}");
        let message = finding_message(image(&doc, repo), "no-match");
        assert!(
            message.starts_with(
                "2 nodes (2963k8s010, 2963k8s011) on windows/amd64:10.0.17763 would select \
                 nothing under docker-19.03"
            ),
            "{message}"
        );
    }
    // The Linux nodes run Docker too: moby's Linux pull is not modelled, so they are skipped,
    // named with the field, on standard error and in the JSON notes.
    let notes: Vec<&str> = doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for node in [
        "k8s-master-29631475-0",
        "k8s-linuxpool-29631475-0",
        "k8s-linuxpool-29631475-1",
    ] {
        let want = format!(
            "node {node}: status.nodeInfo.containerRuntimeVersion 'docker://19.3.14' on a Linux \
             node: docker-19.03 follows moby's Windows pull only"
        );
        assert!(stderr.contains(&want), "{want}\n{stderr}");
        assert!(
            notes.iter().any(|n| n.contains(&want)),
            "{want}\n{notes:#?}"
        );
    }
    assert!(!stderr.contains("node 2963k8s01"), "{stderr}");

    let tail = failing_placements(&run(&args));
    assert!(
        tail.contains(
            "2963k8s010: DaemonSet vmware-system-csi/vsphere-csi-node-windows, container \
             vsphere-csi-node: no matching manifest for windows/amd64 10.0.17763 under docker-19.03"
        ),
        "{tail}"
    );
}

/// moby keeps every Windows entry whose build is not above the host's and, without the host's
/// exact build, takes the first in index order; the daemon's default isolation on Windows
/// Server is process (`daemon/daemon_windows.go` `setDefaultIsolation`), so a Windows Server
/// 23H2 node (25398) pulls the ltsc2019 image of `good` and cannot start it
/// (`wrong-build-selected`), where containerd takes the ltsc2022 one. A WS2022 node takes its
/// exact build. Before: `--runtime docker-19.03` was refused (exit 2).
#[test]
fn docker_pulls_an_older_build_that_process_isolation_cannot_start() {
    let (_registry, reference) = registry_with("good", "csi", "v1");
    let ws2019 = child("good", "windows/amd64:10.0.17763.5830");
    let ws2022 = child("good", "windows/amd64:10.0.20348.2461");
    for (runtime, build, want) in [
        ("docker-19.03", "10.0.25398", &ws2019),
        ("containerd-2.3", "10.0.25398", &ws2022),
        ("docker-19.03", "10.0.20348", &ws2022),
        ("docker-19.03", "10.0.17763", &ws2019),
    ] {
        let platform = format!("windows/amd64:{build}");
        let args = ["resolve", "--runtime", runtime, "--platform", &platform];
        let out = run_exiting(&[&args[..], &[reference.as_str()]].concat(), 0);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(stdout.trim(), want.as_str(), "{runtime} {build}");
    }
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("ws23h2.yaml");
    std::fs::write(
        &policy,
        "name: ws23h2\nwindows:\n  architectures: [amd64]\n  builds: [20348, 25398]\n",
    )
    .unwrap();
    let policy = policy.to_str().unwrap();
    let verify = |runtime: &str, code: i32| {
        let args = ["verify", "--policy", policy, "--runtime", runtime];
        run_exiting(
            &[&args[..], &["--format", "json", reference.as_str()]].concat(),
            code,
        )
    };
    let out = verify("docker-19.03", 1);
    let doc = json_of(&out);
    assert_schema(&doc);
    let hosts = doc["images"][0]["hosts"].as_array().unwrap();
    let status = |platform: &str| {
        let row = hosts.iter().find(|h| h["platform"] == platform).unwrap();
        (row["status"].as_str().unwrap(), row["selected"].clone())
    };
    assert_eq!(
        status("windows/amd64:10.0.25398"),
        ("wrong-build-selected", Value::from(ws2019))
    );
    assert_eq!(
        status("windows/amd64:10.0.20348"),
        ("ok", Value::from(ws2022))
    );
    verify("containerd-2.3", 0);
    // The profile follows moby's Windows pull only: a Linux host under it is a usage error.
    let args = [
        "resolve",
        "--runtime",
        "docker-19.03",
        "--platform",
        "linux/amd64",
    ];
    let out = run_exiting(&[&args[..], &[reference.as_str()]].concat(), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--runtime docker-19.03: it follows Docker Engine's Windows pull only"),
        "{stderr}"
    );
}
