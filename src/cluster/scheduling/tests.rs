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

/// One row per scheduling rule, each naming the Kubernetes code it follows.
#[test]
fn placement_follows_kubernetes() {
    let taint = |t: &str| Err(Refusal::Taint(t.parse().unwrap()));
    type Row<'a> = (&'a str, &'a str, &'a str, NodeFacts, Result<(), Refusal>);
    let rows: Vec<Row> = vec![
        // nodeSelector: k8s.io/component-helpers scheduling/corev1/nodeaffinity/nodeaffinity.go,
        // GetRequiredNodeAffinity + RequiredNodeAffinity.Match (labels.SelectorFromSet: every
        // key present with exactly that value).
        (
            "nodeaffinity.go RequiredNodeAffinity.Match: nodeSelector on any label",
            "Deployment",
            "nodeSelector:\n  node-role.kubernetes.io/master: ''\n",
            node("w", WIN, &[], false),
            Err(Refusal::Labels),
        ),
        (
            "nodeaffinity.go RequiredNodeAffinity.Match: nodeSelector holds",
            "Deployment",
            "nodeSelector:\n  node-role.kubernetes.io/master: ''\n",
            node("m", MASTER, &[], false),
            Ok(()),
        ),
        (
            "nodeaffinity.go RequiredNodeAffinity.Match: values are case-sensitive",
            "Deployment",
            "nodeSelector:\n  kubernetes.io/os: Windows\n",
            node("w", WIN, &[], false),
            Err(Refusal::Labels),
        ),
        // Required affinity: nodeaffinity.go NewLazyErrorNodeSelector / LazyErrorNodeSelector.Match
        // (terms ORed, an empty term matches nothing), nodeSelectorTerm.match (expressions ANDed),
        // k8s.io/apimachinery labels.Requirement.Matches for the operators.
        (
            "nodeaffinity.go LazyErrorNodeSelector.Match: terms ORed",
            "Deployment",
            "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchExpressions: [{key: gpu, operator: Exists}]\n      - matchExpressions: [{key: kubernetes.io/os, operator: In, values: [windows]}]\n",
            node("w", WIN, &[], false),
            Ok(()),
        ),
        (
            "nodeaffinity.go nodeSelectorTerm.match: expressions ANDed",
            "Deployment",
            "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchExpressions: [{key: kubernetes.io/os, operator: In, values: [windows]}, {key: node-role.kubernetes.io/worker, operator: DoesNotExist}]\n",
            node("w", WIN, &[], false),
            Err(Refusal::Labels),
        ),
        (
            "labels.Requirement.Matches NotIn: an absent label satisfies it",
            "Deployment",
            "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchExpressions: [{key: type, operator: NotIn, values: [virtual-kubelet]}]\n",
            node("w", WIN, &[], false),
            Ok(()),
        ),
        (
            "labels.Requirement.Matches Gt: integer comparison",
            "Deployment",
            "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchExpressions: [{key: cores, operator: Gt, values: ['8']}]\n",
            node("w", &["cores=4"], &[], false),
            Err(Refusal::Labels),
        ),
        (
            "labels.Requirement.Matches Lt: integer comparison",
            "Deployment",
            "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchExpressions: [{key: cores, operator: Lt, values: ['8']}]\n",
            node("w", &["cores=4"], &[], false),
            Ok(()),
        ),
        (
            "nodeaffinity.go nodeSelectorTerm.match: matchFields metadata.name",
            "Deployment",
            "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchFields: [{key: metadata.name, operator: In, values: [w2]}]\n",
            node("w1", WIN, &[], false),
            Err(Refusal::Labels),
        ),
        // spec.nodeName: pkg/scheduler/framework/plugins/nodename/node_name.go Fits; a bound
        // pod skips the scheduler, the kubelet admits it (pkg/kubelet/lifecycle/predicate.go,
        // generalFilter: node affinity and untolerated NoExecute taints only).
        (
            "node_name.go Fits: spec.nodeName names another node",
            "Pod",
            "nodeName: w2\n",
            node("w1", WIN, &[], false),
            Err(Refusal::NodeName("w2".into())),
        ),
        (
            "kubelet predicate.go generalFilter: a bound pod ignores NoSchedule taints",
            "Pod",
            "nodeName: w1\n",
            node("w1", WIN, WMCO, false),
            Ok(()),
        ),
        (
            "kubelet predicate.go generalFilter: a bound pod is refused by NoExecute",
            "Pod",
            "nodeName: w1\n",
            node("w1", WIN, &["k=v:NoExecute"], false),
            taint("k=v:NoExecute"),
        ),
        // Taints: component-helpers scheduling/corev1/helpers.go FindMatchingUntoleratedTaint
        // (the TaintToleration filter passes NoSchedule and NoExecute), k8s.io/api core/v1
        // toleration.go Toleration.ToleratesTaint.
        (
            "helpers.go FindMatchingUntoleratedTaint: NoSchedule blocks",
            "Deployment",
            "",
            node("w", WIN, WMCO, false),
            taint("os=Windows:NoSchedule"),
        ),
        (
            "helpers.go FindMatchingUntoleratedTaint: NoExecute blocks",
            "Deployment",
            "",
            node("w", WIN, &["k:NoExecute"], false),
            taint("k:NoExecute"),
        ),
        (
            "helpers.go FindMatchingUntoleratedTaint: PreferNoSchedule does not block",
            "Deployment",
            "",
            node("w", WIN, &["k=v:PreferNoSchedule"], false),
            Ok(()),
        ),
        (
            "toleration.go ToleratesTaint: Equal compares the value",
            "Deployment",
            "tolerations: [{key: os, operator: Equal, value: Windows, effect: NoSchedule}]\n",
            node("w", WIN, WMCO, false),
            Ok(()),
        ),
        (
            "toleration.go ToleratesTaint: Equal with another value does not tolerate",
            "Deployment",
            "tolerations: [{key: os, value: windows, effect: NoSchedule}]\n",
            node("w", WIN, WMCO, false),
            taint("os=Windows:NoSchedule"),
        ),
        (
            "toleration.go ToleratesTaint: Exists with no key tolerates everything",
            "Deployment",
            "tolerations: [{operator: Exists}]\n",
            node("w", WIN, &["os=Windows:NoSchedule", "x=y:NoExecute"], false),
            Ok(()),
        ),
        (
            "toleration.go ToleratesTaint: an empty effect matches every effect",
            "Deployment",
            "tolerations: [{key: os, operator: Exists}]\n",
            node("w", WIN, &["os=Windows:NoExecute"], false),
            Ok(()),
        ),
        (
            "toleration.go ToleratesTaint: another effect does not tolerate",
            "Deployment",
            "tolerations: [{key: os, operator: Exists, effect: NoExecute}]\n",
            node("w", WIN, WMCO, false),
            taint("os=Windows:NoSchedule"),
        ),
        // spec.unschedulable: pkg/scheduler/framework/plugins/nodeunschedulable/
        // node_unschedulable.go Filter (a pod lands on a cordoned node only when it tolerates
        // node.kubernetes.io/unschedulable:NoSchedule).
        (
            "node_unschedulable.go Filter: a cordoned node takes no new pod",
            "Deployment",
            "",
            node("w", WIN, &[], true),
            Err(Refusal::Unschedulable),
        ),
        // DaemonSet pods: pkg/controller/daemon/util/daemonset_util.go
        // AddOrUpdateDaemonPodTolerations.
        (
            "daemonset_util.go AddOrUpdateDaemonPodTolerations: unschedulable tolerated",
            "DaemonSet",
            "",
            node("w", WIN, &[], true),
            Ok(()),
        ),
        (
            "daemonset_util.go AddOrUpdateDaemonPodTolerations: not-ready NoExecute tolerated",
            "DaemonSet",
            "",
            node("w", WIN, &["node.kubernetes.io/not-ready:NoExecute"], false),
            Ok(()),
        ),
        (
            "daemonset_util.go AddOrUpdateDaemonPodTolerations: unreachable NoExecute tolerated",
            "DaemonSet",
            "",
            node(
                "w",
                WIN,
                &["node.kubernetes.io/unreachable:NoExecute"],
                false,
            ),
            Ok(()),
        ),
        (
            "daemonset_util.go AddOrUpdateDaemonPodTolerations: pressure taints tolerated",
            "DaemonSet",
            "",
            node(
                "w",
                WIN,
                &[
                    "node.kubernetes.io/disk-pressure:NoSchedule",
                    "node.kubernetes.io/memory-pressure:NoSchedule",
                    "node.kubernetes.io/pid-pressure:NoSchedule",
                ],
                false,
            ),
            Ok(()),
        ),
        (
            "daemonset_util.go AddOrUpdateDaemonPodTolerations: network-unavailable only with hostNetwork",
            "DaemonSet",
            "",
            node(
                "w",
                WIN,
                &["node.kubernetes.io/network-unavailable:NoSchedule"],
                false,
            ),
            taint("node.kubernetes.io/network-unavailable:NoSchedule"),
        ),
        (
            "daemonset_util.go AddOrUpdateDaemonPodTolerations: network-unavailable with hostNetwork",
            "DaemonSet",
            "hostNetwork: true\n",
            node(
                "w",
                WIN,
                &["node.kubernetes.io/network-unavailable:NoSchedule"],
                false,
            ),
            Ok(()),
        ),
        (
            "daemonset_util.go AddOrUpdateDaemonPodTolerations: WMCO's taint is not among them",
            "DaemonSet",
            "hostNetwork: true\n",
            node("w", WIN, WMCO, false),
            taint("os=Windows:NoSchedule"),
        ),
        (
            "daemonset_util.go: a Deployment's pods get none of them",
            "Deployment",
            "",
            node("w", WIN, &["node.kubernetes.io/not-ready:NoExecute"], false),
            taint("node.kubernetes.io/not-ready:NoExecute"),
        ),
    ];
    for (why, kind, spec, n, want) in rows {
        assert_eq!(lands(kind, spec, &n), want, "{why}");
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
