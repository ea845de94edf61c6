use std::collections::BTreeMap;

use super::*;
use crate::cluster::manifests::{Refusal, parse_manifests};

/// A node named `name` with `labels` (`k=v`), `taints` (`k=v:Effect`) and cordoned or not.
fn node(name: &str, labels: &[&str], taints: &[&str], unschedulable: bool) -> NodeFacts {
    NodeFacts {
        name: name.to_string(),
        labels: labels
            .iter()
            .map(|l| {
                let (k, v) = l.split_once('=').unwrap_or((l, ""));
                (k.to_string(), v.to_string())
            })
            .collect::<BTreeMap<_, _>>(),
        taints: taints.iter().map(|t| t.parse().unwrap()).collect(),
        unschedulable,
        skipped: None,
    }
}

/// Whether the one pod of a `kind` object whose pod spec holds `spec` (YAML at indent 0,
/// besides its container) lands on `n`.
fn lands(kind: &str, spec: &str, n: &NodeFacts) -> Result<(), Refusal> {
    let pad = if kind == "Pod" { "  " } else { "      " };
    let spec: String = format!("containers:\n- name: c\n  image: quay.io/a/b:v1\n{spec}")
        .lines()
        .map(|l| format!("{pad}{l}\n"))
        .collect();
    let template = if kind == "Pod" {
        ""
    } else {
        "  template:\n    spec:\n"
    };
    let text = format!(
        "kind: {kind}\napiVersion: apps/v1\nmetadata:\n  name: x\n  namespace: ns\nspec:\n{template}{spec}"
    );
    let uses = parse_manifests(&text, "t.yaml").unwrap();
    uses[0].placement.lands_on(n)
}

const WIN: &[&str] = &[
    "kubernetes.io/os=windows",
    "node-role.kubernetes.io/worker=",
];
const MASTER: &[&str] = &["kubernetes.io/os=linux", "node-role.kubernetes.io/master="];
const WMCO: &[&str] = &["os=Windows:NoSchedule"];

/// One scheduling rule: a pod of `kind` whose spec holds `spec`, a node (name, labels, taints,
/// cordoned), and whether it lands (`ok`) or why not (`labels`, `taint:T`, `node-name:N`,
/// `unschedulable`); `why` names the Kubernetes function it follows.
struct Row {
    why: &'static str,
    kind: &'static str,
    spec: &'static str,
    node: (
        &'static str,
        &'static [&'static str],
        &'static [&'static str],
        bool,
    ),
    want: &'static str,
}

/// One row per scheduling rule, each naming the Kubernetes code it follows.
const ROWS: &[Row] = &[
    // nodeSelector: k8s.io/component-helpers scheduling/corev1/nodeaffinity/nodeaffinity.go,
    // GetRequiredNodeAffinity + RequiredNodeAffinity.Match (every key present, exactly that value).
    Row {
        why: "nodeaffinity.go RequiredNodeAffinity.Match: nodeSelector on any label",
        kind: "Deployment",
        spec: "nodeSelector:\n  node-role.kubernetes.io/master: ''\n",
        node: ("w", WIN, &[], false),
        want: "labels",
    },
    Row {
        why: "nodeaffinity.go RequiredNodeAffinity.Match: nodeSelector holds",
        kind: "Deployment",
        spec: "nodeSelector:\n  node-role.kubernetes.io/master: ''\n",
        node: ("m", MASTER, &[], false),
        want: "ok",
    },
    Row {
        why: "nodeaffinity.go RequiredNodeAffinity.Match: values are case-sensitive",
        kind: "Deployment",
        spec: "nodeSelector:\n  kubernetes.io/os: Windows\n",
        node: ("w", WIN, &[], false),
        want: "labels",
    },
    // Required affinity: nodeaffinity.go NewLazyErrorNodeSelector / LazyErrorNodeSelector.Match
    // (terms ORed, an empty term matches nothing), nodeSelectorTerm.match (expressions ANDed),
    // k8s.io/apimachinery labels.Requirement.Matches for the operators.
    Row {
        why: "nodeaffinity.go LazyErrorNodeSelector.Match: terms ORed",
        kind: "Deployment",
        spec: "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchExpressions: [{key: gpu, operator: Exists}]\n      - matchExpressions: [{key: kubernetes.io/os, operator: In, values: [windows]}]\n",
        node: ("w", WIN, &[], false),
        want: "ok",
    },
    Row {
        why: "nodeaffinity.go nodeSelectorTerm.match: expressions ANDed",
        kind: "Deployment",
        spec: "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchExpressions: [{key: kubernetes.io/os, operator: In, values: [windows]}, {key: node-role.kubernetes.io/worker, operator: DoesNotExist}]\n",
        node: ("w", WIN, &[], false),
        want: "labels",
    },
    Row {
        why: "labels.Requirement.Matches NotIn: an absent label satisfies it",
        kind: "Deployment",
        spec: "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchExpressions: [{key: type, operator: NotIn, values: [virtual-kubelet]}]\n",
        node: ("w", WIN, &[], false),
        want: "ok",
    },
    Row {
        why: "labels.Requirement.Matches Exists: the label is absent",
        kind: "Deployment",
        spec: "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchExpressions: [{key: gpu, operator: Exists}]\n",
        node: ("w", WIN, &[], false),
        want: "labels",
    },
    Row {
        why: "labels.Requirement.Matches Gt: integer comparison",
        kind: "Deployment",
        spec: "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchExpressions: [{key: cores, operator: Gt, values: ['8']}]\n",
        node: ("w", &["cores=4"], &[], false),
        want: "labels",
    },
    Row {
        why: "labels.Requirement.Matches Lt: integer comparison",
        kind: "Deployment",
        spec: "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchExpressions: [{key: cores, operator: Lt, values: ['8']}]\n",
        node: ("w", &["cores=4"], &[], false),
        want: "ok",
    },
    Row {
        why: "nodeaffinity.go nodeSelectorTerm.match: matchFields metadata.name",
        kind: "Deployment",
        spec: "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchFields: [{key: metadata.name, operator: In, values: [w2]}]\n",
        node: ("w1", WIN, &[], false),
        want: "labels",
    },
    Row {
        why: "nodeaffinity.go nodeSelectorTerm.match: matchFields metadata.name holds",
        kind: "Deployment",
        spec: "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchFields: [{key: metadata.name, operator: In, values: [w1]}]\n",
        node: ("w1", WIN, &[], false),
        want: "ok",
    },
    // spec.nodeName: pkg/scheduler/framework/plugins/nodename/node_name.go Fits; a bound pod
    // skips the scheduler and the kubelet admits it (pkg/kubelet/lifecycle/predicate.go
    // generalFilter: node name, node affinity, and untolerated NoExecute taints only).
    Row {
        why: "node_name.go Fits: spec.nodeName names another node",
        kind: "Pod",
        spec: "nodeName: w2\n",
        node: ("w1", WIN, &[], false),
        want: "node-name:w2",
    },
    Row {
        why: "kubelet predicate.go generalFilter: a bound pod ignores NoSchedule taints and cordons",
        kind: "Pod",
        spec: "nodeName: w1\n",
        node: ("w1", WIN, WMCO, true),
        want: "ok",
    },
    Row {
        why: "kubelet predicate.go generalFilter: a bound pod is refused by NoExecute",
        kind: "Pod",
        spec: "nodeName: w1\n",
        node: ("w1", WIN, &["k=v:NoExecute"], false),
        want: "taint:k=v:NoExecute",
    },
    // Taints: component-helpers scheduling/corev1/helpers.go FindMatchingUntoleratedTaint (the
    // TaintToleration filter passes NoSchedule and NoExecute), k8s.io/api core/v1/toleration.go
    // Toleration.ToleratesTaint.
    Row {
        why: "helpers.go FindMatchingUntoleratedTaint: NoSchedule blocks",
        kind: "Deployment",
        spec: "",
        node: ("w", WIN, WMCO, false),
        want: "taint:os=Windows:NoSchedule",
    },
    Row {
        why: "helpers.go FindMatchingUntoleratedTaint: NoExecute blocks",
        kind: "Deployment",
        spec: "",
        node: ("w", WIN, &["k:NoExecute"], false),
        want: "taint:k:NoExecute",
    },
    Row {
        why: "helpers.go FindMatchingUntoleratedTaint: PreferNoSchedule does not block",
        kind: "Deployment",
        spec: "",
        node: ("w", WIN, &["k=v:PreferNoSchedule"], false),
        want: "ok",
    },
    Row {
        why: "toleration.go ToleratesTaint: Equal compares the value",
        kind: "Deployment",
        spec: "tolerations: [{key: os, operator: Equal, value: Windows, effect: NoSchedule}]\n",
        node: ("w", WIN, WMCO, false),
        want: "ok",
    },
    Row {
        why: "toleration.go ToleratesTaint: Equal (the default) with another value does not tolerate",
        kind: "Deployment",
        spec: "tolerations: [{key: os, value: windows, effect: NoSchedule}]\n",
        node: ("w", WIN, WMCO, false),
        want: "taint:os=Windows:NoSchedule",
    },
    Row {
        why: "toleration.go ToleratesTaint: Exists with no key tolerates everything",
        kind: "Deployment",
        spec: "tolerations: [{operator: Exists}]\n",
        node: ("w", WIN, &["os=Windows:NoSchedule", "x=y:NoExecute"], false),
        want: "ok",
    },
    Row {
        why: "toleration.go ToleratesTaint: an empty effect matches every effect",
        kind: "Deployment",
        spec: "tolerations: [{key: os, operator: Exists}]\n",
        node: ("w", WIN, &["os=Windows:NoExecute"], false),
        want: "ok",
    },
    Row {
        why: "toleration.go ToleratesTaint: another effect does not tolerate",
        kind: "Deployment",
        spec: "tolerations: [{key: os, operator: Exists, effect: NoExecute}]\n",
        node: ("w", WIN, WMCO, false),
        want: "taint:os=Windows:NoSchedule",
    },
    // spec.unschedulable: pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go
    // Filter (a cordoned node takes a pod only if it tolerates node.kubernetes.io/unschedulable).
    Row {
        why: "node_unschedulable.go Filter: a cordoned node takes no new pod",
        kind: "Deployment",
        spec: "",
        node: ("w", WIN, &[], true),
        want: "unschedulable",
    },
    Row {
        why: "node_unschedulable.go Filter: unless the pod tolerates the unschedulable taint",
        kind: "Deployment",
        spec: "tolerations: [{key: node.kubernetes.io/unschedulable, operator: Exists, effect: NoSchedule}]\n",
        node: ("w", WIN, &[], true),
        want: "ok",
    },
    // DaemonSet pods: pkg/controller/daemon/util/daemonset_util.go AddOrUpdateDaemonPodTolerations.
    Row {
        why: "daemonset_util.go AddOrUpdateDaemonPodTolerations: unschedulable tolerated",
        kind: "DaemonSet",
        spec: "",
        node: ("w", WIN, &[], true),
        want: "ok",
    },
    Row {
        why: "daemonset_util.go AddOrUpdateDaemonPodTolerations: not-ready NoExecute tolerated",
        kind: "DaemonSet",
        spec: "",
        node: ("w", WIN, &["node.kubernetes.io/not-ready:NoExecute"], false),
        want: "ok",
    },
    Row {
        why: "daemonset_util.go AddOrUpdateDaemonPodTolerations: unreachable NoExecute tolerated",
        kind: "DaemonSet",
        spec: "",
        node: (
            "w",
            WIN,
            &["node.kubernetes.io/unreachable:NoExecute"],
            false,
        ),
        want: "ok",
    },
    Row {
        why: "daemonset_util.go AddOrUpdateDaemonPodTolerations: pressure taints tolerated",
        kind: "DaemonSet",
        spec: "",
        node: (
            "w",
            WIN,
            &[
                "node.kubernetes.io/disk-pressure:NoSchedule",
                "node.kubernetes.io/memory-pressure:NoSchedule",
                "node.kubernetes.io/pid-pressure:NoSchedule",
            ],
            false,
        ),
        want: "ok",
    },
    Row {
        why: "daemonset_util.go AddOrUpdateDaemonPodTolerations: network-unavailable only with hostNetwork",
        kind: "DaemonSet",
        spec: "",
        node: (
            "w",
            WIN,
            &["node.kubernetes.io/network-unavailable:NoSchedule"],
            false,
        ),
        want: "taint:node.kubernetes.io/network-unavailable:NoSchedule",
    },
    Row {
        why: "daemonset_util.go AddOrUpdateDaemonPodTolerations: network-unavailable with hostNetwork",
        kind: "DaemonSet",
        spec: "hostNetwork: true\n",
        node: (
            "w",
            WIN,
            &["node.kubernetes.io/network-unavailable:NoSchedule"],
            false,
        ),
        want: "ok",
    },
    Row {
        why: "daemonset_util.go AddOrUpdateDaemonPodTolerations: WMCO's taint is not among them",
        kind: "DaemonSet",
        spec: "hostNetwork: true\n",
        node: ("w", WIN, WMCO, false),
        want: "taint:os=Windows:NoSchedule",
    },
    Row {
        why: "daemonset_util.go: a Deployment's pods get none of them",
        kind: "Deployment",
        spec: "",
        node: ("w", WIN, &["node.kubernetes.io/not-ready:NoExecute"], false),
        want: "taint:node.kubernetes.io/not-ready:NoExecute",
    },
];

#[test]
fn placement_follows_kubernetes() {
    assert_eq!(ROWS.len(), 32, "every rule has its row");
    for r in ROWS {
        let (name, labels, taints, cordoned) = r.node;
        let want = match r.want.split_once(':') {
            _ if r.want == "ok" => Ok(()),
            _ if r.want == "labels" => Err(Refusal::Labels),
            _ if r.want == "unschedulable" => Err(Refusal::Unschedulable),
            Some(("taint", t)) => Err(Refusal::Taint(t.parse().unwrap())),
            Some(("node-name", n)) => Err(Refusal::NodeName(n.to_string())),
            _ => panic!("bad row {}", r.why),
        };
        let got = lands(r.kind, r.spec, &node(name, labels, taints, cordoned));
        assert_eq!(got, want, "{}", r.why);
    }
}

/// Taints as policies write them (`kubectl taint` syntax), and what is refused.
#[test]
fn taints_parse_as_kubectl_writes_them() {
    let t: Taint = "os=Windows:NoSchedule".parse().unwrap();
    assert_eq!(
        (t.key.as_str(), t.value.as_str(), t.effect),
        ("os", "Windows", Effect::NoSchedule)
    );
    assert_eq!(t.to_string(), "os=Windows:NoSchedule");
    let t: Taint = "dedicated:NoExecute".parse().unwrap();
    assert_eq!(t.to_string(), "dedicated:NoExecute");
    for bad in ["os=Windows", "os=Windows:Never", ":NoSchedule", ""] {
        assert!(bad.parse::<Taint>().is_err(), "{bad}");
    }
}

/// Tolerations the API server refuses are refused, naming the field.
#[test]
fn bad_tolerations_name_the_field() {
    let cases = [
        (
            "tolerations: [{key: os, operator: Gte}]\n",
            "tolerations[0].operator",
        ),
        (
            "tolerations: [{key: os, operator: Exists, value: v}]\n",
            "tolerations[0].value",
        ),
        ("tolerations: [{value: v}]\n", "tolerations[0].operator"),
        (
            "tolerations: [{operator: Exists, effect: Sometimes}]\n",
            "tolerations[0].effect",
        ),
        (
            "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchFields: [{key: metadata.uid, operator: In, values: [a]}]\n",
            "matchFields[0].key",
        ),
    ];
    for (spec, field) in cases {
        let spec: String = format!("containers:\n- name: c\n  image: quay.io/a/b:v1\n{spec}")
            .lines()
            .map(|l| format!("      {l}\n"))
            .collect();
        let text =
            format!("kind: DaemonSet\nmetadata:\n  name: x\nspec:\n  template:\n    spec:\n{spec}");
        let e = parse_manifests(&text, "t.yaml").unwrap_err().to_string();
        assert!(e.contains(field), "{spec}: {e}");
    }
}
