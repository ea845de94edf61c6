use std::collections::BTreeMap;

use super::*;
use crate::cluster::manifests::{PlacementRefusal, parse_manifests};

/// A node named `name` with `labels` (`k=v`), `taints` (`k=v:Effect`) and cordoned or not.
fn node(name: &str, labels: &[&str], taints: &[&str], unschedulable: bool) -> NodeFacts {
    let labels: BTreeMap<String, String> = (labels.iter())
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap_or((l, ""));
            (k.to_string(), v.to_string())
        })
        .collect();
    // The kubelet's own OS (`runtime.GOOS`): the OS label the test nodes carry, else Linux.
    let os = labels
        .get("kubernetes.io/os")
        .map_or("linux", String::as_str)
        .to_string();
    let taints = taints.iter().map(|t| t.parse().unwrap()).collect();
    NodeFacts {
        name: name.to_string(),
        shape: Arc::new(NodeShape::new(name, labels, taints, &os)),
        unschedulable,
        skipped: None,
    }
}

/// Whether the one pod of a `kind` object whose pod spec holds `spec` (YAML at indent 0,
/// besides its container) lands on `n`. A line `labels: {…}` of `spec` is the pod's (the
/// template's) `metadata.labels` instead.
fn lands(kind: &str, spec: &str, n: &NodeFacts) -> Result<(), PlacementRefusal> {
    let (labels, spec): (Vec<&str>, Vec<&str>) =
        spec.lines().partition(|l| l.starts_with("labels:"));
    let labels = labels.concat();
    let pad = if kind == "Pod" { "  " } else { "      " };
    let spec: String = format!(
        "containers:\n- name: c\n  image: quay.io/a/b:v1\n{}",
        spec.iter().map(|l| format!("{l}\n")).collect::<String>()
    )
    .lines()
    .map(|l| format!("{pad}{l}\n"))
    .collect();
    let (meta, template) = match kind {
        "Pod" => (format!("  {labels}\n"), String::new()),
        _ => (
            String::new(),
            format!("  template:\n    metadata:\n      {labels}\n    spec:\n"),
        ),
    };
    let text = format!(
        "kind: {kind}\napiVersion: apps/v1\nmetadata:\n  name: x\n  namespace: ns\n{meta}spec:\n{template}{spec}"
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
const NOT_READY: &[&str] = &["node.kubernetes.io/not-ready:NoExecute"];
const UNREACHABLE: &[&str] = &["node.kubernetes.io/unreachable:NoExecute"];

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
        why: "daemonset_util.go: a Deployment's pods get none of the DaemonSet's pressure tolerations",
        kind: "Deployment",
        spec: "",
        node: (
            "w",
            WIN,
            &["node.kubernetes.io/disk-pressure:NoSchedule"],
            false,
        ),
        want: "taint:node.kubernetes.io/disk-pressure:NoSchedule",
    },
    // Every pod: plugin/pkg/admission/defaulttolerationseconds/admission.go Plugin.Admit adds
    // not-ready and unreachable (Exists, NoExecute, 300 s) unless a toleration whose key is
    // that key or empty and whose effect is NoExecute or empty is already there (its operator
    // and value are not read).
    Row {
        why: "defaulttolerationseconds admission.go Admit: a Deployment's pods tolerate not-ready",
        kind: "Deployment",
        spec: "",
        node: ("w", WIN, NOT_READY, false),
        want: "ok",
    },
    Row {
        why: "defaulttolerationseconds admission.go Admit: a Deployment's pods tolerate unreachable",
        kind: "Deployment",
        spec: "",
        node: ("w", WIN, UNREACHABLE, false),
        want: "ok",
    },
    Row {
        why: "defaulttolerationseconds admission.go Admit: a bare pod bound to a not-ready node is admitted",
        kind: "Pod",
        spec: "nodeName: w\n",
        node: (
            "w",
            WIN,
            &[
                "node.kubernetes.io/not-ready:NoExecute",
                "node.kubernetes.io/unreachable:NoExecute",
            ],
            false,
        ),
        want: "ok",
    },
    Row {
        why: "defaulttolerationseconds admission.go Admit: a toleration of the key and effect, whatever its value, stops the default",
        kind: "Deployment",
        spec: "tolerations: [{key: node.kubernetes.io/not-ready, value: x, effect: NoExecute}]\n",
        node: ("w", WIN, NOT_READY, false),
        want: "taint:node.kubernetes.io/not-ready:NoExecute",
    },
    Row {
        why: "defaulttolerationseconds admission.go Admit: an empty effect counts as NoExecute",
        kind: "StatefulSet",
        spec: "tolerations: [{key: node.kubernetes.io/unreachable, value: x}]\n",
        node: ("w", WIN, UNREACHABLE, false),
        want: "taint:node.kubernetes.io/unreachable:NoExecute",
    },
    Row {
        why: "defaulttolerationseconds admission.go Admit: a toleration of another effect does not stop the default",
        kind: "Job",
        spec: "tolerations: [{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoSchedule}]\n",
        node: ("w", WIN, NOT_READY, false),
        want: "ok",
    },
    // A DaemonSet's nodeName: pkg/controller/daemon/daemon_controller.go NodeShouldRunDaemonPod
    // checks the name, then predicates (node affinity, NoSchedule and NoExecute taints): the
    // scheduler is bypassed, the controller's taint check is not.
    Row {
        why: "daemon_controller.go NodeShouldRunDaemonPod: a DaemonSet's nodeName still meets its taint check",
        kind: "DaemonSet",
        spec: "nodeName: w\n",
        node: ("w", WIN, WMCO, false),
        want: "taint:os=Windows:NoSchedule",
    },
    Row {
        why: "daemon_controller.go NodeShouldRunDaemonPod: a DaemonSet's nodeName names another node",
        kind: "DaemonSet",
        spec: "nodeName: w2\n",
        node: ("w1", WIN, &[], false),
        want: "node-name:w2",
    },
    Row {
        why: "daemon_controller.go NodeShouldRunDaemonPod: a DaemonSet's nodeName on a cordoned node it tolerates",
        kind: "DaemonSet",
        spec: "nodeName: w\n",
        node: (
            "w",
            WIN,
            &["node.kubernetes.io/unschedulable:NoSchedule"],
            true,
        ),
        want: "ok",
    },
    // The pod's own kubernetes.io/os label: pkg/kubelet/lifecycle/predicate.go
    // rejectPodAdmissionBasedOnOSSelector (the kubelet's OS, runtime.GOOS, must equal it).
    Row {
        why: "kubelet predicate.go rejectPodAdmissionBasedOnOSSelector: a pod labelled windows on Linux",
        kind: "Deployment",
        spec: "labels: {kubernetes.io/os: windows}\n",
        node: ("m", MASTER, &[], false),
        want: "os-label:windows",
    },
    Row {
        why: "kubelet predicate.go rejectPodAdmissionBasedOnOSSelector: a DaemonSet's pod labelled linux on Windows",
        kind: "DaemonSet",
        spec: "labels: {kubernetes.io/os: linux}\n",
        node: ("w", WIN, &[], false),
        want: "os-label:linux",
    },
    Row {
        why: "kubelet predicate.go rejectPodAdmissionBasedOnOSSelector: a bound pod is checked too",
        kind: "Pod",
        spec: "labels: {kubernetes.io/os: windows}\nnodeName: m\n",
        node: ("m", MASTER, &[], false),
        want: "os-label:windows",
    },
    Row {
        why: "kubelet predicate.go rejectPodAdmissionBasedOnOSSelector: the label matches the node's OS",
        kind: "Deployment",
        spec: "labels: {kubernetes.io/os: windows, app: x}\n",
        node: ("w", WIN, &[], false),
        want: "ok",
    },
    // What the API server accepts: a Gt/Lt value that is not an integer makes
    // labels.NewRequirement fail, so nodeaffinity.go newNodeSelectorTerm records a parse error
    // and LazyErrorNodeSelector.Match skips that term; the other terms still apply.
    Row {
        why: "nodeaffinity.go LazyErrorNodeSelector.Match: a Gt term that is not an integer matches nothing",
        kind: "Deployment",
        spec: "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchExpressions: [{key: cores, operator: Gt, values: [two]}]\n",
        node: ("w", &["cores=4"], &[], false),
        want: "labels",
    },
    Row {
        why: "nodeaffinity.go LazyErrorNodeSelector.Match: the term with a parse error is skipped, the next one holds",
        kind: "Deployment",
        spec: "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchExpressions: [{key: cores, operator: Lt, values: [ten]}]\n      - matchExpressions: [{key: kubernetes.io/os, operator: In, values: [windows]}]\n",
        node: ("w", WIN, &[], false),
        want: "ok",
    },
    Row {
        why: "apiserver JSON decoding: a nodeSelector value null is \"\" (RequiredNodeAffinity.Match)",
        kind: "Deployment",
        spec: "nodeSelector:\n  node-role.kubernetes.io/master: null\n",
        node: ("m", MASTER, &[], false),
        want: "ok",
    },
];

#[test]
fn placement_follows_kubernetes() {
    assert_eq!(ROWS.len(), 48, "every rule has its row");
    for r in ROWS {
        let (name, labels, taints, cordoned) = r.node;
        let want = match r.want.split_once(':') {
            _ if r.want == "ok" => Ok(()),
            _ if r.want == "labels" => Err(PlacementRefusal::Labels),
            _ if r.want == "unschedulable" => Err(PlacementRefusal::Unschedulable),
            Some(("taint", t)) => Err(PlacementRefusal::Taint(t.parse().unwrap())),
            Some(("node-name", n)) => Err(PlacementRefusal::NodeName(n.to_string())),
            Some(("os-label", os)) => Err(PlacementRefusal::OsLabel(os.to_string())),
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
        // validation.go ValidateTolerations: tolerationSeconds only with NoExecute.
        (
            "tolerations: [{key: a, operator: Exists, effect: NoSchedule, tolerationSeconds: 5}]\n",
            "tolerations[0].effect: 'NoSchedule' must be NoExecute when tolerationSeconds is set",
        ),
        (
            "tolerations: [{key: a, operator: Exists, tolerationSeconds: 5}]\n",
            "tolerations[0].effect: '' must be NoExecute when tolerationSeconds is set",
        ),
        // ValidateTolerations: the key is a label name, an Equal value a label value.
        (
            "tolerations: [{key: 'a b', operator: Exists}]\n",
            "tolerations[0].key: 'a b' is not a label key",
        ),
        (
            "tolerations: [{key: a, value: '-x'}]\n",
            "tolerations[0].value: '-x' is not a label value",
        ),
        (
            "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n      - matchFields: [{key: metadata.uid, operator: In, values: [a]}]\n",
            "matchFields[0].key",
        ),
    ];
    let spec = "tolerations: [{key: a, operator: Exists, effect: NoExecute, tolerationSeconds: 5}, \
                {key: a, operator: Exists, effect: NoExecute, tolerationSeconds: null}]\n";
    let n = node("w", WIN, &["a:NoExecute"], false);
    assert_eq!(
        lands("Deployment", spec, &n),
        Ok(()),
        "tolerationSeconds with NoExecute"
    );
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
