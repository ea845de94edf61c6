use super::*;
use crate::error::one_line;
use crate::error::{Blame, Fault};
use crate::input::DEFAULT_MAX_INPUT_BYTES as MAX;
use proptest::prelude::*;

const IMG: &str = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:3c1e5a0b7f9d2e4c6a8b0d1f3e5c7a9b1d3f5e7c9a0b2d4f6e8c0a1b3d5f7e9c";

/// A pod spec (YAML, at indentation 0) with one container `c` of image `IMG`, plus `extra`.
fn pod_spec(extra: &str) -> String {
    format!("containers:\n- name: c\n  image: {IMG}\n{extra}")
}

/// `text` indented by `n` spaces.
fn indent(text: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    text.lines().map(|l| format!("{pad}{l}\n")).collect()
}

/// An object of `kind` named `x` in namespace `ns` whose pod spec is `spec`.
fn object(kind: &str, spec: &str) -> String {
    let head = format!("kind: {kind}\napiVersion: v1\nmetadata:\n  name: x\n  namespace: ns\n");
    let body = match kind {
        "Pod" => format!("spec:\n{}", indent(spec, 2)),
        "CronJob" => format!(
            "spec:\n  schedule: '@daily'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n{}",
            indent(spec, 10)
        ),
        _ => format!("spec:\n  template:\n    spec:\n{}", indent(spec, 6)),
    };
    head + &body
}

fn parse(text: &str) -> Result<Vec<ImageUse>, ManifestsError> {
    parse_manifests(text, "m.yaml")
}

/// `KIND NAME CONTAINER[ init]` for each use.
fn summary(uses: &[ImageUse]) -> Vec<String> {
    uses.iter()
        .map(|u| {
            let o = &u.origin;
            let init = if o.init { " init" } else { "" };
            format!("{} {} {}{init}", o.kind, o.name, o.container)
        })
        .collect()
}

fn labels(os: &str, arch: &str, build: Option<&str>) -> BTreeMap<&'static str, String> {
    let mut l = BTreeMap::from([(LABEL_OS, os.to_string())]);
    l.insert(crate::cluster::nodes::LABEL_ARCH, arch.to_string());
    if let Some(b) = build {
        l.insert(crate::cluster::nodes::LABEL_WINDOWS_BUILD, b.to_string());
    }
    l
}

#[test]
fn every_pod_bearing_kind_is_read() {
    let spec = format!(
        "{}initContainers:\n- name: i\n  image: registry.example/init:1\n",
        pod_spec("")
    );
    for kind in [
        "Pod",
        "DaemonSet",
        "Deployment",
        "StatefulSet",
        "ReplicaSet",
        "Job",
        "CronJob",
        "ReplicationController",
        "DeploymentConfig",
    ] {
        let uses = parse(&object(kind, &spec)).unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(
            summary(&uses),
            [format!("{kind} x c"), format!("{kind} x i init")],
            "{kind}"
        );
        assert_eq!(uses[0].image.to_string(), IMG, "{kind}");
        assert_eq!(uses[1].image.to_string(), "registry.example/init:1");
        assert_eq!(uses[0].origin.namespace.as_deref(), Some("ns"));
        assert_eq!(uses[0].origin.path, "m.yaml");
        let p = &uses[0].placement;
        assert_eq!((&p.terms, &p.node_name), (&vec![], &None), "{kind}");
        // A DaemonSet's pods get the DaemonSet controller's six tolerations (not-ready and
        // unreachable among them); every other pod the admission plugin
        // DefaultTolerationSeconds' two.
        assert_eq!(
            p.tolerations.len(),
            if kind == "DaemonSet" { 6 } else { 2 },
            "{kind}"
        );
        assert_eq!(p.daemonset, kind == "DaemonSet", "{kind}");
        assert!(!uses[0].hostprocess);
    }
}

#[test]
fn lists_documents_and_skipped_kinds() {
    let ds = object("DaemonSet", &pod_spec(""));
    let pod = object("Pod", &pod_spec(""));
    let list = |items: &[&str]| {
        let items: Vec<String> = items
            .iter()
            .map(|i| indent(i, 2).replacen("  ", "- ", 1))
            .collect();
        format!("apiVersion: v1\nkind: List\nitems:\n{}", items.concat())
    };
    let skipped = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: b\n";
    let sa = "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: s\n";
    let role = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nrules: []\n";
    let json = r#"{"apiVersion":"v1","kind":"List","items":[{"kind":"Pod","metadata":{"name":"j"},
        "spec":{"containers":[{"name":"c","image":"registry.example/a:1"}]}},
        {"kind":"ConfigMap","metadata":{"name":"k"}}]}"#;
    // (text, uses expected)
    let cases: Vec<(String, Vec<&str>)> = vec![
        (format!("{ds}---\n{pod}"), vec!["DaemonSet x c", "Pod x c"]),
        (
            format!("---\n{skipped}---\n{ds}---\n{sa}---\n{role}---\n"),
            vec!["DaemonSet x c"],
        ),
        (
            list(&[&ds, skipped, &pod]),
            vec!["DaemonSet x c", "Pod x c"],
        ),
        (
            list(&[&list(&[&pod]), &ds]),
            vec!["Pod x c", "DaemonSet x c"],
        ),
        (
            list(&[&ds]).replace("kind: List", "kind: DaemonSetList"),
            vec!["DaemonSet x c"],
        ),
        (json.to_string(), vec!["Pod j c"]),
        // JSON indented with tabs, as some tools write it.
        (
            "{\n\t\"kind\": \"Pod\",\n\t\"metadata\": {\"name\": \"t\"},\n\t\"spec\": {\"containers\": [\n\t\t{\"name\": \"c\", \"image\": \"r.example/a:1\"}]}}\n".to_string(),
            vec!["Pod t c"],
        ),
        (format!("{skipped}---\n{sa}"), vec![]),
        // A custom resource whose kind ends in "List" but is no list (no items): skipped.
        (
            format!("apiVersion: example.com/v1\nkind: IPAllowList\nmetadata:\n  name: a\nspec: {{}}\n---\n{ds}"),
            vec!["DaemonSet x c"],
        ),
        (String::new(), vec![]),
        ("# only a comment\n".to_string(), vec![]),
        // A pod spec with no containers holds no images.
        (object("Deployment", "containers: []\n"), vec![]),
        (
            object("Deployment", "containers: null\nnodeSelector: null\n"),
            vec![],
        ),
    ];
    for (text, want) in cases {
        let uses = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(summary(&uses), want, "{text}");
    }
    let e = parse(&list(&[&ds, "kind: Secret\n", "image: x\n"])).unwrap_err();
    assert_eq!(
        e.location.document.as_deref(),
        Some("document 1 items[2]"),
        "{e}"
    );
}

/// (input, the one-line message begins with, then contains, has a source)
type ErrorCase = (String, String, &'static str, bool);

/// Each input fails to parse with the message and cause expected, bad input (`Fault::Input`).
fn assert_errors(cases: Vec<ErrorCase>) {
    for (text, starts, contains, has_source) in cases {
        let e = parse(&text).expect_err(&text);
        let line = one_line(&e);
        let at = format!("{line}\n  expected to start with\n{starts}\n  and contain {contains}");
        assert!(line.starts_with(&starts) && line.contains(contains), "{at}");
        let source = std::error::Error::source(&e).is_some();
        assert_eq!(source, has_source, "{line}");
        assert_eq!(e.fault(), Fault::Input);
        assert_eq!(e.origin, "m.yaml");
    }
}

const SPEC: &str = "manifests m.yaml: document 1: DaemonSet ns/x: spec.template.spec";

fn ds(spec: &str) -> String {
    object("DaemonSet", spec)
}

fn container(image: &str) -> String {
    format!("containers:\n- name: drv\n  image: {image}\n")
}

#[test]
fn documents_that_are_not_objects_are_errors() {
    let doc1 = "manifests m.yaml: document 1";
    let deep = format!("a: {}1{}\n", "[".repeat(100), "]".repeat(100));
    let two = format!("{}---\nspec: {{}}\n", ds(&pod_spec("")));
    let no_spec = "kind: DaemonSet\nmetadata:\n  name: x\nspec:\n  selector: {}\n";
    assert_errors(vec![
        (
            "metadata:\n  name: a\n".into(),
            format!("{doc1}: kind: missing"),
            "",
            false,
        ),
        (
            "kind: [1]\n".into(),
            format!("{doc1}: kind: not a string"),
            "",
            false,
        ),
        (
            two,
            "manifests m.yaml: document 2: kind: missing".into(),
            "",
            false,
        ),
        (
            "- a\n- b\n".into(),
            format!("{doc1}: not a Kubernetes object"),
            "",
            false,
        ),
        (
            "just text\n".into(),
            format!("{doc1}: not a Kubernetes object"),
            "",
            false,
        ),
        (
            "kind: Pod\n  bad: [\n".into(),
            format!("{doc1}: not YAML or JSON"),
            "",
            true,
        ),
        (
            deep,
            "manifests m.yaml: refused".into(),
            "nested more than 64 levels",
            true,
        ),
        (
            "kind: List\nitems: 3\n".into(),
            format!("{doc1}: items: a List needs"),
            "",
            false,
        ),
        (
            no_spec.into(),
            format!("{doc1}: DaemonSet x: spec.template.spec: missing"),
            "",
            false,
        ),
        (
            "kind: Pod\nmetadata: 7\nspec: {}\n".into(),
            format!("{doc1}: metadata: not"),
            "",
            true,
        ),
    ]);
}

#[test]
fn images_that_are_not_registry_references_are_errors() {
    let image = format!("{SPEC}.containers[0] (drv).image");
    let placeholder = "is a template placeholder, not an image: give the manifest as rendered";
    assert_errors(vec![
        (
            ds(&container("${DRIVER_IMAGE}")),
            format!("{image}: '${{DRIVER_IMAGE}}' {placeholder}"),
            "(e.g. `oc get daemonset x -n ns -o yaml`)",
            false,
        ),
        (
            ds(&container("'{{ .Image }}'")),
            format!("{image}: '{{{{ .Image }}}}' {placeholder}"),
            "",
            false,
        ),
        (
            ds(&container("Quay.io/UPPER:tag")),
            format!("{image}: not an image reference"),
            "invalid reference 'Quay.io/UPPER:tag'",
            true,
        ),
        (
            ds(&container("oci:/tmp/layout")),
            format!("{image}: 'oci:/tmp/layout' is not a registry reference"),
            "",
            false,
        ),
        (
            ds("containers:\n- name: drv\n"),
            format!("{image}: missing"),
            "",
            false,
        ),
        (
            ds("initContainers:\n- image: ''\n"),
            format!("{SPEC}.initContainers[0].image: missing"),
            "",
            false,
        ),
        // The API server requires a container name; reports name the container.
        (
            ds("containers:\n- image: quay.io/a/b:1\n"),
            format!("{SPEC}.containers[0].name: missing"),
            "",
            false,
        ),
    ]);
}

#[test]
fn fields_of_the_wrong_type_are_named() {
    let wrong = |field: &str| format!("{SPEC}{field}: wrong type: ");
    let second = container("r.example/a:1") + "- name: [x]\n  image: r.example/b:1\n";
    let init = container("r.example/a:1") + "initContainers:\n- image: 7\n";
    let hp = "securityContext:\n  windowsOptions:\n    hostProcess: yes please\n";
    assert_errors(vec![
        (
            ds("containers: 5\n"),
            wrong(".containers"),
            "invalid type: integer",
            true,
        ),
        (
            ds(&second),
            wrong(".containers[1]"),
            "sequence, expected a string",
            true,
        ),
        (ds(&init), wrong(".initContainers[0]"), "", true),
        (
            ds(&pod_spec(hp)),
            wrong(".securityContext"),
            "expected a boolean",
            true,
        ),
        (ds(&pod_spec("os: windows\n")), wrong(".os"), "", true),
        (
            ds(&pod_spec("nodeSelector: [a]\n")),
            wrong(".nodeSelector"),
            "",
            true,
        ),
        (ds("- 1\n"), wrong(""), "", true),
    ]);
}

/// A DaemonSet whose required node affinity has the `nodeSelectorTerms` `terms` (YAML after
/// the key).
fn affinity(terms: &str) -> String {
    let head = "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n";
    ds(&pod_spec(&format!(
        "{head}      nodeSelectorTerms:{terms}\n"
    )))
}

/// [`affinity`] with one term of one expression on key `key`.
fn one_expression(key: &str, op: &str, values: &str) -> String {
    let expr = format!("  - key: {key}\n    operator: {op}\n    values: {values}\n");
    affinity(&format!(
        "\n{}",
        indent(&format!("- matchExpressions:\n{expr}"), 6)
    ))
}

/// The field of the terms of [`affinity`].
fn terms_field() -> String {
    format!(
        "{SPEC}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    )
}

/// An input refused with a message starting `starts`, no cause below it.
fn plain(text: String, starts: String) -> ErrorCase {
    (text, starts, "", false)
}

#[test]
fn node_affinity_is_checked_as_the_api_server_does() {
    let one = |op: &str, values: &str| one_expression("a", op, values);
    let terms = terms_field();
    let expr0 = format!("{terms}[0].matchExpressions[0]");
    let fields = indent("- matchFields:\n  - operator: In\n    values: [n]\n", 6);
    assert_errors(vec![
        (
            one("Equals", "[b]"),
            format!("{expr0}.operator: 'Equals' is not In, NotIn"),
            "",
            false,
        ),
        (
            one("In", "[]"),
            format!("{expr0}.values: must not be empty for operator In"),
            "",
            false,
        ),
        (
            one("NotIn", "null"),
            format!("{expr0}.values: must not be empty"),
            "",
            false,
        ),
        (
            one("Exists", "[b]"),
            format!("{expr0}.values: must be empty for operator Exists"),
            "",
            false,
        ),
        (
            one("Gt", "['1', '2']"),
            format!("{expr0}.values: must be one value for operator Gt"),
            "",
            false,
        ),
        (
            one("Gt", "[5]"),
            format!("{SPEC}.affinity: wrong type"),
            "integer `5`, expected a string",
            true,
        ),
        (
            affinity(&format!("\n{fields}")),
            format!("{terms}[0].matchFields[0].key: missing"),
            "",
            false,
        ),
        (
            affinity(" [{}, {matchExpressions: []}]"),
            format!("{terms}: every term is empty"),
            "",
            false,
        ),
        (affinity(" []"), format!("{terms}: empty"), "", false),
    ]);
}

/// The pod spec of one container whose required node affinity has these terms.
fn with_terms(selector: &str, terms: &[&str]) -> String {
    let terms: String = terms
        .iter()
        .map(|t| format!("- matchExpressions:\n{}", indent(t, 2)))
        .collect();
    let affinity = if terms.is_empty() {
        String::new()
    } else {
        format!(
            "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n{}",
            indent(&terms, 6)
        )
    };
    pod_spec(&format!("{selector}{affinity}"))
}

fn expr(key: &str, op: &str, values: &[&str]) -> String {
    format!(
        "- key: {key}\n  operator: {op}\n  values: [{}]\n",
        values.join(", ")
    )
}

const OS: &str = "kubernetes.io/os";
const ARCH: &str = "kubernetes.io/arch";
const BUILD: &str = "node.kubernetes.io/windows-build";
const WIN: &str = "nodeSelector:\n  kubernetes.io/os: windows\n";

/// Each pod spec admits exactly these of [WS2019, WS2022, linux/amd64, linux/arm64].
fn assert_placements(cases: Vec<(String, [bool; 4])>) {
    let hosts = [
        labels("windows", "amd64", Some("10.0.17763")),
        labels("windows", "amd64", Some("10.0.20348")),
        labels("linux", "amd64", None),
        labels("linux", "arm64", None),
    ];
    for (spec, want) in cases {
        let uses = parse(&object("DaemonSet", &spec)).unwrap_or_else(|e| panic!("{e}\n{spec}"));
        let p = &uses[0].placement;
        let got: Vec<bool> = hosts.iter().map(|h| p.admits(h)).collect();
        assert_eq!(got, want, "{p}\n{spec}");
    }
}

#[test]
fn node_selector_and_os_name_narrow_hosts() {
    let beta = "nodeSelector:\n  beta.kubernetes.io/os: linux\n";
    let linux_arm = "os:\n  name: linux\nnodeSelector:\n  kubernetes.io/arch: arm64\n";
    let disagree = "os:\n  name: linux\nnodeSelector:\n  kubernetes.io/os: windows\n";
    assert_placements(vec![
        (pod_spec(""), [true; 4]),
        (pod_spec(WIN), [true, true, false, false]),
        (pod_spec(beta), [false, false, true, true]),
        (
            pod_spec("os:\n  name: windows\n"),
            [true, true, false, false],
        ),
        (pod_spec(linux_arm), [false, false, false, true]),
        // os.name and nodeSelector disagree: nowhere.
        (pod_spec(disagree), [false; 4]),
        // The deprecated arch label reads as the stable one.
        (
            pod_spec("nodeSelector:\n  beta.kubernetes.io/arch: arm64\n"),
            [false, false, false, true],
        ),
        // The kubelet's build label is MAJOR.MINOR.BUILD: a value with a revision matches no
        // node (the image then gets `no-host-in-scope`), the build alone matches its nodes.
        (
            pod_spec(&format!("{WIN}  {BUILD}: '10.0.17763.6414'\n")),
            [false; 4],
        ),
        (
            pod_spec(&format!("{WIN}  {BUILD}: '10.0.17763'\n")),
            [true, false, false, false],
        ),
        // os.name on a Deployment's pod template, with node affinity on the architecture.
        (
            with_terms("os:\n  name: windows\n", &[&expr(ARCH, "In", &["amd64"])]),
            [true, true, false, false],
        ),
    ]);
}

#[test]
fn node_affinity_narrows_hosts_as_kubernetes_does() {
    let one = |key: &str, op: &str, values: &[&str]| with_terms("", &[&expr(key, op, values)]);
    let win2019 = expr(OS, "In", &["windows"]) + &expr(BUILD, "In", &["10.0.17763"]);
    let not_amd = expr(OS, "In", &["linux"]) + &expr(ARCH, "NotIn", &["amd64"]);
    let arm = expr(ARCH, "In", &["arm64"]);
    let build = expr(BUILD, "In", &["10.0.17763"]);
    let not_virtual = expr("type", "NotIn", &["virtual-kubelet"]);
    let gt = expr(OS, "Exists", &[]) + &expr("build-number", "Gt", &["'5'"]);
    assert_placements(vec![
        (
            one(BUILD, "In", &["10.0.20348"]),
            [false, true, false, false],
        ),
        (
            one(BUILD, "NotIn", &["10.0.17763"]),
            [false, true, true, true],
        ),
        (
            with_terms(WIN, &[&expr(BUILD, "NotIn", &["10.0.17763"])]),
            [false, true, false, false],
        ),
        (one(BUILD, "Exists", &[]), [true, true, false, false]),
        (one(BUILD, "DoesNotExist", &[]), [false, false, true, true]),
        (
            one(ARCH, "In", &["arm64", "s390x"]),
            [false, false, false, true],
        ),
        // Terms ORed, expressions ANDed.
        (
            with_terms("", &[&arm, &win2019]),
            [true, false, false, true],
        ),
        (with_terms("", &[&not_amd]), [false, false, false, true]),
        // nodeSelector is ANDed into every term.
        (
            with_terms(WIN, &[&arm, &build]),
            [true, false, false, false],
        ),
        // A label the host row cannot decide excludes nothing.
        (with_terms(WIN, &[&not_virtual]), [true, true, false, false]),
        (with_terms("", &[&gt]), [true; 4]),
        // Gt/Lt on a known label: the build label is not an integer, so they never hold.
        (one(BUILD, "Gt", &["'1'"]), [false; 4]),
        (one(BUILD, "Lt", &["'99999'"]), [false; 4]),
        // A Gt/Lt value that is not an integer: the API server accepts it, the term matches
        // nothing even on a label no host row can decide (nodeaffinity.go
        // LazyErrorNodeSelector.Match skips a term labels.NewRequirement refused), and the
        // other terms still apply.
        (one("cores", "Gt", &["ten"]), [false; 4]),
        (
            with_terms("", &[&expr("cores", "Lt", &["x"]), &arm]),
            [false, false, false, true],
        ),
    ]);
}

/// Keys and values of node-affinity requirements as the API server validates them
/// (`ValidateNodeSelectorRequirement`: `ValidateLabelName`, and from Kubernetes 1.33,
/// kubernetes#128212, `IsValidLabelValue` on every value; 1.31 accepts such a value and the
/// term then matches no node).
#[test]
fn requirement_keys_and_values_are_label_syntax() {
    let one = |op: &str, values: &str| one_expression("a", op, values);
    let e = format!("{}[0].matchExpressions[0]", terms_field());
    assert_errors(vec![
        plain(
            one("Gt", "['-5']"),
            format!("{e}.values[0]: '-5' is not a label value"),
        ),
        plain(
            one("NotIn", "[ok, 'a b']"),
            format!("{e}.values[1]: 'a b' is not a label value"),
        ),
        plain(
            one("In", "['x.']"),
            format!("{e}.values[0]: 'x.' is not a label value"),
        ),
        plain(
            one_expression("a/b/c", "In", "[x]"),
            format!("{e}.key: 'a/b/c' is not a label key"),
        ),
    ]);
    // A Gt/Lt value that is a label value but no integer is accepted (the term matches nothing).
    let uses = parse(&one("Lt", "[ten]")).unwrap();
    assert!(uses[0].placement.terms[0].expressions[0].never_holds());
}

/// `nodeSelector` and the pod's labels as the API server reads and validates them
/// (`ValidatePodSpec` `ValidateLabels(spec.NodeSelector)`, `ValidateObjectMeta` on the
/// template's labels): a `null` value is `""`; a key that is not a qualified name or a value
/// that is not a label value is refused, naming the field.
#[test]
fn labels_and_node_selectors_are_checked_as_the_api_server_does() {
    let uses = parse(&ds(&pod_spec(
        "nodeSelector:\n  node-role.kubernetes.io/master: null\n",
    )))
    .unwrap();
    let term = &uses[0].placement.terms[0].expressions[0];
    assert_eq!(term.to_string(), "node-role.kubernetes.io/master In []");
    let labelled = |labels: &str| {
        object("DaemonSet", &pod_spec("")).replacen(
            "  template:\n",
            &format!("  template:\n    metadata:\n      labels: {labels}\n"),
            1,
        )
    };
    let uses = parse(&labelled("{kubernetes.io/os: windows, app: null}")).unwrap();
    assert_eq!(uses[0].placement.os_label.as_deref(), Some("windows"));
    let pod = "kind: Pod\nmetadata:\n  name: p\n  labels:\n    kubernetes.io/os: linux\nspec:\n";
    let uses = parse(&format!("{pod}{}", indent(&pod_spec(""), 2))).unwrap();
    assert_eq!(uses[0].placement.os_label.as_deref(), Some("linux"));
    let selector = |s: &str| ds(&pod_spec(&format!("nodeSelector:\n  {s}\n")));
    let at = format!("{SPEC}.nodeSelector");
    assert_errors(vec![
        plain(
            selector("kubernetes.io/os: 'windows server'"),
            format!("{at}: 'windows server' is not a label value"),
        ),
        plain(selector("'-os': windows"), format!("{at}: '-os' is not a label key")),
        (
            labelled(&format!("{{app: {}}}", "a".repeat(64))),
            "manifests m.yaml: document 1: DaemonSet ns/x: spec.template.metadata.labels: 'aaaa"
                .to_string(),
            "is not a label value",
            false,
        ),
        (
            labelled("[a]"),
            "manifests m.yaml: document 1: DaemonSet ns/x: spec.template.metadata.labels: wrong type"
                .to_string(),
            "",
            true,
        ),
    ]);
}

#[test]
fn requirements_follow_kubernetes_semantics() {
    use Operator::*;
    let r = |op, values: &[&str]| Requirement {
        key: "k".into(),
        op,
        values: values.iter().map(|v| v.to_string()).collect(),
    };
    // (requirement, label value, holds)
    let cases: Vec<(Requirement, Option<&str>, bool)> = vec![
        (r(In, &["a", "b"]), Some("b"), true),
        (r(In, &["a"]), Some("c"), false),
        (r(In, &["a"]), None, false),
        (r(NotIn, &["a"]), Some("a"), false),
        (r(NotIn, &["a"]), Some("c"), true),
        (r(NotIn, &["a"]), None, true),
        (r(Exists, &[]), Some(""), true),
        (r(Exists, &[]), None, false),
        (r(DoesNotExist, &[]), Some("x"), false),
        (r(DoesNotExist, &[]), None, true),
        (r(Gt, &["5"]), Some("6"), true),
        (r(Gt, &["5"]), Some("5"), false),
        (r(Gt, &["5"]), Some("-7"), false),
        (r(Gt, &["-8"]), Some("-7"), true),
        (r(Gt, &["5"]), Some("10.0.17763"), false),
        (r(Gt, &["5"]), None, false),
        (r(Lt, &["5"]), Some("4"), true),
        (r(Lt, &["5"]), Some("5"), false),
        (r(Lt, &["5"]), Some("x"), false),
        (r(Lt, &["5"]), None, false),
    ];
    for (req, value, want) in cases {
        assert_eq!(req.holds(value), want, "{req} on {value:?}");
    }
    for op in [In, NotIn, Exists, DoesNotExist, Gt, Lt] {
        assert_eq!(Operator::parse(&op.to_string()), Some(op));
    }
    assert_eq!(Operator::parse("in"), None);
}

proptest! {
    /// NotIn is the negation of In on a present label; DoesNotExist of Exists; on an integer
    /// label exactly one of Gt, Lt and equality holds.
    #[test]
    fn operators_are_complements(
        values in prop::collection::vec("[ab]{1,2}", 1..4),
        label in prop::option::of("[ab]{1,2}"),
        n in any::<i64>(),
        bound in any::<i64>(),
    ) {
        let r = |op, values: Vec<String>| Requirement { key: "k".into(), op, values };
        let v = label.as_deref();
        let is_in = r(Operator::In, values.clone()).holds(v);
        prop_assert_eq!(r(Operator::NotIn, values).holds(v), v.is_none() || !is_in);
        prop_assert_eq!(r(Operator::Exists, vec![]).holds(v), !r(Operator::DoesNotExist, vec![]).holds(v));
        let (n, b) = (n.to_string(), vec![bound.to_string()]);
        let gt = r(Operator::Gt, b.clone()).holds(Some(&n));
        let lt = r(Operator::Lt, b).holds(Some(&n));
        prop_assert_eq!(u8::from(gt) + u8::from(lt) + u8::from(n == bound.to_string()), 1);
    }

    /// Requirements on labels a host row cannot decide never exclude a host.
    #[test]
    fn undecided_requirements_admit_every_host(
        ops in prop::collection::vec(0usize..6, 1..5),
        os in "(linux|windows)",
        arch in "(amd64|arm64)",
    ) {
        use Operator::*;
        let all = [In, NotIn, Exists, DoesNotExist, Gt, Lt];
        let expressions = ops.iter().map(|&i| Requirement {
            key: format!("example.com/k{i}"),
            op: all[i],
            values: match all[i] { In | NotIn => vec!["x".into()], Gt | Lt => vec!["1".into()], _ => vec![] },
        }).collect();
        let p = Placement { terms: vec![Term { expressions, fields: vec![] }], ..Placement::default() };
        prop_assert!(p.admits(&labels(&os, &arch, None)));
        prop_assert_eq!(p.undecided_keys().len(), {
            let mut o = ops.clone(); o.sort(); o.dedup(); o.len()
        });
    }
}

#[test]
fn undecided_keys_are_named_once() {
    let terms = [
        expr("type", "NotIn", &["virtual-kubelet"]) + &expr("kubernetes.io/os", "In", &["windows"]),
        expr("type", "Exists", &[]) + &expr("beta.kubernetes.io/arch", "In", &["amd64"]),
    ];
    let mut spec = with_terms(
        "nodeSelector:\n  node-role.kubernetes.io/worker: ''\n",
        &[&terms[0], &terms[1]],
    );
    spec.push_str("      - matchFields:\n        - key: metadata.name\n          operator: In\n          values: [n1]\n");
    let uses = parse(&object("DaemonSet", &spec)).unwrap();
    let p = &uses[0].placement;
    assert_eq!(p.terms.len(), 3, "{p}");
    assert_eq!(
        p.undecided_keys(),
        [
            "matchFields metadata.name",
            "node-role.kubernetes.io/worker",
            "type"
        ]
    );
    // The matchFields-only term admits every host: it cannot be decided.
    assert!(p.admits(&labels("linux", "s390x", None)));
    assert_eq!(Placement::anywhere().undecided_keys(), Vec::<String>::new());
    assert_eq!(Placement::anywhere().to_string(), "any node");
}

#[test]
fn hostprocess_comes_from_the_container_else_the_pod() {
    let hp = |v: &str| format!("securityContext:\n  windowsOptions:\n    hostProcess: {v}\n");
    let containers = |c: &str| {
        format!(
            "containers:\n- name: a\n  image: r.example/a:1\n{}- name: b\n  image: r.example/b:1\n",
            indent(c, 2)
        )
    };
    // (pod spec, [container a, container b])
    let cases: Vec<(String, [bool; 2])> = vec![
        (containers(""), [false, false]),
        (containers("") + &hp("true"), [true, true]),
        (containers(&hp("false")) + &hp("true"), [false, true]),
        (containers(&hp("true")), [true, false]),
        (containers(&hp("true")) + &hp("false"), [true, false]),
        (
            containers("securityContext:\n  privileged: true\n") + "securityContext: {}\n",
            [false, false],
        ),
        (
            containers("securityContext:\n  windowsOptions:\n    runAsUserName: x\n") + &hp("true"),
            [true, true],
        ),
    ];
    for (spec, want) in cases {
        let uses = parse(&object("Pod", &spec)).unwrap_or_else(|e| panic!("{e}\n{spec}"));
        let got: Vec<bool> = uses.iter().map(|u| u.hostprocess).collect();
        assert_eq!(got, want, "{spec}");
    }
}

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/manifests/azure-file-csi-node-windows.yaml")
}

#[test]
fn the_azure_file_fixture_reads_as_windows_hostprocess_and_linux_uses() {
    let uses = read_manifests(&fixture(), MAX).unwrap();
    assert_eq!(
        summary(&uses),
        [
            "DaemonSet azure-file-csi-driver-node-windows csi-driver",
            "DaemonSet azure-file-csi-driver-node-windows csi-node-driver-registrar",
            "DaemonSet azure-file-csi-driver-node-windows csi-liveness-probe",
            "DaemonSet azure-file-csi-driver-node csi-driver",
            "DaemonSet azure-file-csi-driver-node csi-node-driver-registrar",
            "DaemonSet azure-file-csi-driver-node csi-liveness-probe",
            "DaemonSet azure-file-csi-driver-node azure-inject-credentials init",
        ]
    );
    let win = labels("windows", "amd64", Some("10.0.17763"));
    let linux = labels("linux", "amd64", None);
    for (i, u) in uses.iter().enumerate() {
        let windows = i < 3;
        assert_eq!(u.hostprocess, windows, "{}", u.origin);
        assert_eq!(u.placement.admits(&win), windows, "{}", u.origin);
        assert_eq!(u.placement.admits(&linux), !windows, "{}", u.origin);
        assert!(u.placement.undecided_keys().is_empty());
        assert_eq!(
            u.origin.namespace.as_deref(),
            Some("openshift-cluster-csi-drivers")
        );
        assert!(u.image.digest().is_some(), "{}", u.image);
    }
    assert_eq!(
        uses[1].origin.to_string(),
        format!(
            "{}: DaemonSet openshift-cluster-csi-drivers/azure-file-csi-driver-node-windows container csi-node-driver-registrar",
            fixture().display()
        )
    );
    assert!(
        uses[6]
            .origin
            .to_string()
            .ends_with("azure-file-csi-driver-node init container azure-inject-credentials")
    );
    assert_eq!(
        uses[0].placement.to_string(),
        "kubernetes.io/os In [windows]"
    );
}

#[test]
fn a_directory_reads_its_manifest_files_in_name_order() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    let pod = |name: &str| {
        format!(
            "kind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n  - name: c\n    image: r.example/{name}:1\n"
        )
    };
    write("b.yml", &pod("b"));
    write("a.yaml", &pod("a"));
    write(
        "c.json",
        r#"{"kind":"Pod","metadata":{"name":"c"},"spec":{"containers":[{"name":"c","image":"r.example/c:1"}]}}"#,
    );
    write("d.txt", &pod("d"));
    write("e.yaml", "kind: ConfigMap\n");
    std::fs::create_dir(dir.path().join("sub.yaml")).unwrap();
    std::fs::write(dir.path().join("sub.yaml/f.yaml"), pod("f")).unwrap();
    let uses = read_manifests(dir.path(), MAX).unwrap();
    assert_eq!(summary(&uses), ["Pod a c", "Pod b c", "Pod c c"]);
    assert!(
        uses[1].origin.path.ends_with("b.yml"),
        "{}",
        uses[1].origin.path
    );

    write(
        "b.yml",
        "kind: Pod\nspec:\n  containers:\n  - name: c\n    image: ${IMG}\n",
    );
    let e = read_manifests(dir.path(), MAX).unwrap_err();
    assert!(e.origin.ends_with("b.yml"), "{e}");
    assert_eq!(e.location.object.as_deref(), Some("Pod (no metadata.name)"));

    let empty = tempfile::tempdir().unwrap();
    std::fs::write(empty.path().join("cm.yaml"), "kind: ConfigMap\n").unwrap();
    let e = read_manifests(empty.path(), MAX).unwrap_err();
    assert!(
        one_line(&e)
            .contains("no *.yaml, *.yml or *.json file in the directory holds a pod template ("),
        "{e}"
    );
    let e = read_manifests(&empty.path().join("cm.yaml"), MAX).unwrap_err();
    assert!(one_line(&e).ends_with("cm.yaml: holds no pod template (Pod, DaemonSet, Deployment, StatefulSet, ReplicaSet, Job, CronJob, ReplicationController or DeploymentConfig with containers)"), "{e}");
    let e = read_manifests(&empty.path().join("missing.yaml"), MAX).unwrap_err();
    assert!(
        one_line(&e).contains("missing.yaml: cannot read: No such file"),
        "{}",
        one_line(&e)
    );
    assert_eq!(e.fault(), Fault::Input);
}

/// An image is read as the kubelet reads it: a pull spec, never a transport (`docker://`)
/// or a local directory. `fixtures/layouts/good` is a local OCI layout (tests run in the
/// crate's directory), yet as a pod's image it names `docker.io/fixtures/layouts/good`.
#[test]
fn images_are_pull_specs_whatever_the_working_directory_holds() {
    assert!(std::path::Path::new("fixtures/layouts/good/oci-layout").is_file());
    let uses = parse(&ds(&container("fixtures/layouts/good"))).unwrap();
    assert_eq!(
        uses[0].image.to_string(),
        "docker.io/fixtures/layouts/good:latest"
    );
    let image = format!("{SPEC}.containers[0] (drv).image");
    assert_errors(vec![(
        ds(&container("docker://busybox")),
        format!("{image}: not an image reference"),
        "invalid reference 'docker://busybox'",
        true,
    )]);
}

/// Images as pods write them, and the reference each is judged as (Docker Hub normalisation,
/// a tag and a digest kept as written); uppercase in a repository is refused.
#[test]
fn short_names_and_pinned_tags_read_as_the_kubelet_reads_them() {
    let d = format!("sha256:{}", "a".repeat(64));
    let cases = [
        ("busybox", "docker.io/library/busybox:latest".to_string()),
        (
            "library/busybox:1.36",
            "docker.io/library/busybox:1.36".to_string(),
        ),
        (
            "registry.k8s.io/pause",
            "registry.k8s.io/pause:latest".to_string(),
        ),
        (
            "localhost:5000/a/b",
            "localhost:5000/a/b:latest".to_string(),
        ),
        (
            &*format!("img:v1@{d}"),
            format!("docker.io/library/img:v1@{d}"),
        ),
        (&*format!("quay.io/a/b@{d}"), format!("quay.io/a/b@{d}")),
    ];
    for (image, want) in cases {
        let uses = parse(&ds(&container(&format!("'{image}'")))).unwrap();
        assert_eq!(uses[0].image.to_string(), want, "{image}");
    }
    for bad in ["Busybox", "quay.io/A/b", "img:", "img@sha256:abc", " "] {
        assert!(
            parse(&ds(&container(&format!("'{bad}'")))).is_err(),
            "{bad}"
        );
    }
}

/// Issue 22, item 9: YAML merge keys (`<<: *defaults`) are applied as kubectl applies them
/// (sigs.k8s.io/yaml's go-yaml v2 fork, `decoder.merge`): the merged image is the
/// container's, and a key written after `<<` overrides the merged one.
#[test]
fn merge_keys_are_applied_as_kubectl_applies_them() {
    let text = format!(
        "kind: Pod\nmetadata: {{name: p}}\nspec:\n  containers:\n  - &c\n    name: a\n    image: {IMG}\n\
         \x20 - <<: *c\n    name: b\n  initContainers:\n  - <<: *c\n    name: i\n    image: quay.io/x/init:1\n"
    );
    let uses = parse_manifests(&text, "m.yaml").unwrap();
    let got: Vec<(String, String)> = uses
        .iter()
        .map(|u| (u.origin.container.clone(), u.image.to_string()))
        .collect();
    assert_eq!(
        got,
        [
            ("a".to_string(), IMG.to_string()),
            ("b".to_string(), IMG.to_string()),
            ("i".to_string(), "quay.io/x/init:1".to_string()),
        ]
    );
    let bad = "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - <<: 1\n    name: a\n";
    let e = one_line(&parse_manifests(bad, "m.yaml").unwrap_err());
    assert!(
        e.contains("m.yaml") && e.contains("map merge requires map or sequence of maps"),
        "{e}"
    );
}

/// Label keys and values as k8s.io/apimachinery `pkg/util/validation/validation.go` checks
/// them (`IsQualifiedName`, `IsValidLabelValue`).
#[test]
fn label_syntax_follows_apimachinery() {
    let long = "a".repeat(63);
    let too_long = "a".repeat(64);
    let prefix = format!("{}.example.com/k", "a".repeat(242));
    // (text, a valid key, a valid value)
    let cases: Vec<(&str, bool, bool)> = vec![
        ("kubernetes.io/os", true, false),
        ("node-role.kubernetes.io/worker", true, false),
        ("a", true, true),
        ("", false, true),
        ("A_b-c.d", true, true),
        (&long, true, true),
        (&too_long, false, false),
        ("-a", false, false),
        ("a.", false, false),
        ("a b", false, false),
        ("10.0.17763", true, true),
        ("Example.com/k", false, false),
        ("/k", false, false),
        ("a/b/c", false, false),
        ("example.com/", false, false),
        ("ex_ample.com/k", false, false),
        (&prefix, false, false),
        ("é", false, false),
    ];
    for (text, key, value) in cases {
        assert_eq!(labels::key_problem(text).is_none(), key, "key {text:?}");
        assert_eq!(
            labels::value_problem(text).is_none(),
            value,
            "value {text:?}"
        );
    }
}
