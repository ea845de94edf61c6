//! Issue 21 items 1 and 2 end to end, against a real `docker-registry`: pods are placed on
//! the nodes of `--nodes` as Kubernetes places them (any label, taints and tolerations), and
//! the report answers which node would fail to pull which image for which workload. The pod
//! templates are real public manifests (fixtures/realworld/, sources in fixtures/README.md);
//! the cluster is fixtures/nodes/ocp-wmco.json (OpenShift with WMCO: masters labelled
//! `node-role.kubernetes.io/master` and tainted, Linux workers, Windows workers tainted
//! `os=Windows:NoSchedule`, containerd 1.7).

use crate::cluster::assert_schema;
use crate::common::cluster_run::{
    failing_placements, image, nodes_file, realworld, run_exiting, vsphere_csi,
};
use crate::common::{Registry, fixture, json_of, run_imgcheck as run};
use serde_json::Value;

fn wmco_nodes() -> String {
    nodes_file("ocp-wmco.json")
}

/// The verdict of each image of a JSON report, by repository (`sig-storage/csi-attacher`).
fn verdicts(doc: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = doc["images"]
        .as_array()
        .unwrap()
        .iter()
        // The driver reports (`driver NAME`, driver-skew) judge no image of their own.
        .filter(|i| !i["reference"].as_str().unwrap().starts_with("driver "))
        .map(|i| {
            let r = i["reference"].as_str().unwrap();
            let repo = r.split_once('/').unwrap().1.split(':').next().unwrap();
            (repo.to_string(), i["verdict"].as_str().unwrap().to_string())
        })
        .collect();
    out.sort();
    out
}

/// vsphere-csi-driver's controller Deployment selects `node-role.kubernetes.io/master: ""`:
/// its Linux-only sidecars land on the masters only and pass; the driver and the liveness
/// probe, shared with the node DaemonSets, lack a WS2019 entry (and the driver an arm64 one)
/// and fail, each naming its nodes and workloads in `placements` and in the text's last
/// lines. Before issue 21 the sidecars failed `no-match` on the Windows nodes (6 of 7 images
/// failed; 2 should).
#[test]
fn a_controller_on_master_nodes_is_judged_there_only() {
    let (_registry, _dir, m) = vsphere_csi("ltsc2022-only", "ltsc2022-only", "with-ltsc2025");
    let nodes = wmco_nodes();
    let args = ["verify", "--from-manifests", &m, "--nodes", &nodes];

    let out = run_exiting(&[&args[..], &["--format", "json"]].concat(), 1);
    let doc = json_of(&out);
    assert_schema(&doc);
    let fail = |r: &str| (r.to_string(), "fail".to_string());
    let pass = |r: &str| (r.to_string(), "pass".to_string());
    assert_eq!(
        verdicts(&doc),
        [
            fail("cloud-provider-vsphere/csi/ci/driver"),
            pass("cloud-provider-vsphere/csi/ci/syncer"),
            pass("sig-storage/csi-attacher"),
            pass("sig-storage/csi-node-driver-registrar"),
            pass("sig-storage/csi-provisioner"),
            pass("sig-storage/csi-resizer"),
            fail("sig-storage/livenessprobe"),
        ]
    );
    // The controller's sidecars are judged for the three masters, nowhere else.
    let attacher = image(&doc, "csi-attacher");
    let rows = attacher["hosts"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{attacher:#}");
    assert_eq!(rows[0]["platform"], "linux/amd64");
    assert_eq!(
        rows[0]["nodes"].as_array().unwrap().len(),
        3,
        "{attacher:#}"
    );

    // The per-node answer: every failing placement names node, workload and container.
    let failing: Vec<String> = doc["placements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["status"] != "ok")
        .map(|p| {
            let image = p["image"].as_str().unwrap();
            let repo = image.rsplit('/').next().unwrap();
            format!(
                "{} {} {} {}",
                p["node"].as_str().unwrap(),
                p["name"].as_str().unwrap(),
                p["container"].as_str().unwrap(),
                repo
            )
        })
        .collect();
    for want in [
        "winworker-4kq8x vsphere-csi-node-windows vsphere-csi-node driver:latest",
        "winworker-9tbzm vsphere-csi-node-windows liveness-probe livenessprobe:v2.4.0",
        "ip-10-0-16-50.ec2.internal vsphere-csi-node vsphere-csi-node driver:latest",
    ] {
        assert!(
            failing.contains(&want.to_string()),
            "{want} not in {failing:#?}"
        );
    }
    assert!(
        failing
            .iter()
            .all(|f| !f.contains("csi-attacher") && !f.contains("ip-10-0-16-20")),
        "nothing fails on the masters: {failing:#?}"
    );

    let tail = failing_placements(&run(&args));
    assert!(
        tail.contains(
            "winworker-4kq8x: DaemonSet vmware-system-csi/vsphere-csi-node-windows, container \
             vsphere-csi-node: no matching manifest for windows/amd64 10.0.17763 under containerd-1.7"
        ),
        "{tail}"
    );
}

/// A DaemonSet with no selector and no toleration on a WMCO cluster: the DaemonSet
/// controller places no pod on the tainted Windows nodes (nor on the tainted masters), so its
/// Linux-only image passes (before issue 21 it failed on the Windows nodes). Without
/// `--nodes`, the openshift policy's `windows.taints` do the same, and the JSON report's
/// `notes` say which hosts its pods are kept off.
#[test]
fn an_untolerated_taint_keeps_pods_off() {
    let registry = Registry::start();
    registry.push_layout(
        &fixture("linux-only-list"),
        "sig-storage/csi-provisioner",
        "v3.0.0",
    );
    let dir = tempfile::tempdir().unwrap();
    let m = realworld(dir.path(), "no-selector-no-toleration.yaml", &registry);
    let nodes = wmco_nodes();

    let out = run(&[
        "verify",
        "--from-manifests",
        &m,
        "--nodes",
        &nodes,
        "--format",
        "json",
    ]);
    let doc = json_of(&out);
    assert_eq!(out.status.code(), Some(0), "{doc:#}");
    assert_schema(&doc);
    let nodes_judged: Vec<&str> = doc["images"][0]["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|h| {
            h["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_str().unwrap())
        })
        .collect();
    assert_eq!(
        nodes_judged,
        [
            "ip-10-0-16-40.ec2.internal",
            "ip-10-0-16-41.ec2.internal",
            "ip-10-0-16-50.ec2.internal"
        ]
    );
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains("DaemonSet kube-system/csi-driver-node-disk: its pods are not judged for 4 nodes (winworker-4kq8x, winworker-7xk2p, winworker-9tbzm, winworker-m5q8d): it does not tolerate the taint os=Windows:NoSchedule"),
        "{notes}"
    );
    assert!(
        notes.contains("node-role.kubernetes.io/master:NoSchedule"),
        "{notes}"
    );

    let out = run(&["verify", "--from-manifests", &m, "--format", "json"]);
    let doc = json_of(&out);
    assert_eq!(out.status.code(), Some(0), "{doc:#}");
    assert_eq!(
        doc["images"][0]["hosts"].as_array().unwrap().len(),
        1,
        "{doc:#}"
    );
    assert!(
        doc["notes"].to_string().contains("its pods are not judged for 2 hosts (windows/amd64:10.0.17763, windows/amd64:10.0.20348): it does not tolerate the taint os=Windows:NoSchedule"),
        "{doc:#}"
    );
    let out = run(&["verify", "--from-manifests", &m, "--format", "konflux"]);
    let konflux: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        konflux["note"]
            .as_str()
            .unwrap()
            .contains("; note: DaemonSet kube-system/csi-driver-node-disk"),
        "{konflux}"
    );
}
