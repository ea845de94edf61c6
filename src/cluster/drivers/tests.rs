//! The pairing rules, one row each, with the project whose manifests the row stands for.

use super::*;
use crate::cluster::manifests::{driver_hint, parse_manifests};
use crate::policy::DriverSide;

/// A DaemonSet for `os` nodes (`-` for no selector) whose one container `c` runs `args`.
fn ds(name: &str, os: &str, args: &str) -> String {
    let selector = match os {
        "-" => String::new(),
        os => format!("      nodeSelector: {{kubernetes.io/os: {os}}}\n"),
    };
    format!(
        "kind: DaemonSet\nmetadata: {{name: {name}, namespace: ns}}\nspec:\n  template:\n    \
         spec:\n{selector}      containers:\n      - {{name: c, image: q.io/{name}:1, args: \
         [{args}]}}\n---\n"
    )
}

fn pairs(text: &str, policy: &[DriverPolicy]) -> Vec<(String, String, String)> {
    let uses = parse_manifests(text, "m.yaml").unwrap();
    pair_workloads(&workloads(&uses), policy)
        .into_iter()
        .map(|p| (p.name, p.linux.name, p.windows.name))
        .collect()
}

fn row(name: &str, linux: &str, windows: &str) -> (String, String, String) {
    (name.into(), format!("ns/{linux}"), format!("ns/{windows}"))
}

#[test]
fn driver_names_in_flags_and_plugin_paths() {
    // (words, driver) — source: azurefile-csi-driver pkg/azurefileplugin/main.go (--drivername),
    // node-driver-registrar --kubelet-registration-path (Linux and Windows paths).
    let rows: [(&[&str], Option<&str>); 6] = [
        (
            &["--drivername=file.csi.azure.com"],
            Some("file.csi.azure.com"),
        ),
        (
            &["-driver-name=\"ebs.csi.aws.com\""],
            Some("ebs.csi.aws.com"),
        ),
        (
            &["--kubelet-registration-path=/var/lib/kubelet/plugins/file.csi.azure.com/csi.sock"],
            Some("file.csi.azure.com"),
        ),
        (
            &["C:\\\\var\\\\lib\\\\kubelet\\\\plugins\\\\csi.vsphere.vmware.com\\\\csi.sock"],
            Some("csi.vsphere.vmware.com"),
        ),
        (
            &["--kubelet-registration-path=$(DRIVER_REG_SOCK_PATH)"],
            None,
        ),
        (&["--v=5", "--endpoint=unix:///csi/csi.sock"], None),
    ];
    for (words, want) in rows {
        assert_eq!(
            driver_hint(words.iter().copied()).as_deref(),
            want,
            "{words:?}"
        );
    }
}

#[test]
fn daemonsets_pair_by_driver_name_then_by_names() {
    let reg =
        |d: &str| format!("\"--kubelet-registration-path=/var/lib/kubelet/plugins/{d}/csi.sock\"");
    // Same driver name, unrelated workload names (kubernetes-sigs/azurefile-csi-driver
    // deploy/csi-azurefile-node.yaml and csi-azurefile-node-windows-hostprocess.yaml).
    let text = ds("csi-azurefile-node", "linux", &reg("file.csi.azure.com"))
        + &ds(
            "azurefile-windows-hp",
            "windows",
            &reg("file.csi.azure.com"),
        );
    assert_eq!(
        pairs(&text, &[]),
        [row(
            "file.csi.azure.com",
            "csi-azurefile-node",
            "azurefile-windows-hp"
        )]
    );
    // X / X-windows (vsphere-csi-driver manifests/vanilla/vsphere-csi-driver.yaml), X / X-win
    // (azurefile-csi-driver csi-azurefile-node-win); no selector: the name says Windows.
    let text = ds("vsphere-csi-node", "linux", "")
        + &ds("vsphere-csi-node-windows", "windows", "")
        + &ds("csi-azurefile-node", "linux", "")
        + &ds("csi-azurefile-node-win", "-", "");
    assert_eq!(
        pairs(&text, &[]),
        [
            row(
                "vsphere-csi-node",
                "vsphere-csi-node",
                "vsphere-csi-node-windows"
            ),
            row(
                "csi-azurefile-node",
                "csi-azurefile-node",
                "csi-azurefile-node-win"
            ),
        ]
    );
    // Two Linux DaemonSets, one Windows: no pair by name alone; two drivers never pair.
    let text = ds("a-node", "linux", &reg("a.csi.io"))
        + &ds("b-node-windows", "windows", &reg("b.csi.io"));
    assert_eq!(pairs(&text, &[]), []);
}

#[test]
fn the_policy_names_what_names_cannot_tell() {
    let text = ds("left", "linux", "") + &ds("right", "windows", "");
    assert_eq!(pairs(&text, &[]), []);
    let side = |w: &str| DriverSide {
        workload: Some(w.to_string()),
        component: Some("comp".to_string()),
    };
    let policy = DriverPolicy {
        name: "d".to_string(),
        linux: side("ns/left"),
        windows: side("right"),
        container: None,
        skew: Some(SkewSeverity::Error),
    };
    assert_eq!(
        pairs(&text, std::slice::from_ref(&policy)),
        [row("d", "left", "right")]
    );
    let uses = parse_manifests(&text, "m.yaml").unwrap();
    let pair = &pair_workloads(&workloads(&uses), &[policy])[0];
    assert_eq!(pair.skew, SkewSeverity::Error);
    assert_eq!(pair.containers().len(), 1);
    assert_eq!(
        target_components(pair, &[]),
        Some(("comp".into(), "comp".into()))
    );
}

#[test]
fn release_components_pair_and_name_the_daemonsets_target() {
    // OpenShift: the operator's node DaemonSet is `<component>-node`, its driver container
    // `csi-driver` filled with the component (library-go csidrivernodeservicecontroller,
    // ${DRIVER_IMAGE}; openshift/csi-operator assets/overlays/azure-file).
    let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let release = names(&["azure-file-csi-driver", "x", "x-windows", "y-windows"]);
    let got = pair_components(&release, &[]);
    let got: Vec<_> = got
        .iter()
        .map(|(n, l, w, ..)| (n.as_str(), l.as_str(), w.as_str()))
        .collect();
    assert_eq!(got, [("x", "x", "x-windows")]);
    let text = ds("azure-file-csi-driver-node", "linux", "")
        + &ds("azure-file-csi-driver-node-windows", "windows", "");
    let uses = parse_manifests(&text, "m.yaml").unwrap();
    let pair = &pair_workloads(&workloads(&uses), &[])[0];
    let both = "azure-file-csi-driver".to_string();
    assert_eq!(
        target_components(pair, &release),
        Some((both.clone(), both))
    );
    assert_eq!(target_components(pair, &names(&["other"])), None);
}
