use super::*;
use crate::exit::{Classify, ExitKind};
use crate::report::one_line;
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
        assert_eq!(uses[0].placement, Placement::anywhere(), "{kind}");
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
        (format!("{skipped}---\n{sa}"), vec![]),
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

#[test]
fn bad_input_is_an_error_naming_document_object_and_field() {
    let ds = |spec: &str| object("DaemonSet", spec);
    let container = |image: &str| format!("containers:\n- name: drv\n  image: {image}\n");
    let deep = format!("a: {}1{}\n", "[".repeat(100), "]".repeat(100));
    let affinity = |term: &str| {
        pod_spec(&format!(
            "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms:\n{}",
            indent(term, 6)
        ))
    };
    let spec = "document 1: DaemonSet ns/x: spec.template.spec";
    // (text, the message begins with, then contains, has a source)
    let cases: Vec<(String, String, &str, bool)> = vec![
        (
            "metadata:\n  name: a\n".into(),
            "manifests m.yaml: document 1: kind: missing".into(),
            "",
            false,
        ),
        (
            "kind: [1]\n".into(),
            "manifests m.yaml: document 1: kind: not a string".into(),
            "",
            false,
        ),
        (
            format!("{}---\nspec: {{}}\n", ds(&pod_spec(""))),
            "manifests m.yaml: document 2: kind: missing".into(),
            "",
            false,
        ),
        (
            "- a\n- b\n".into(),
            "manifests m.yaml: document 1: not a Kubernetes object".into(),
            "",
            false,
        ),
        (
            "just text\n".into(),
            "manifests m.yaml: document 1: not a Kubernetes object".into(),
            "",
            false,
        ),
        (
            "kind: Pod\n  bad: [\n".into(),
            "manifests m.yaml: document 1: not YAML or JSON".into(),
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
            "manifests m.yaml: document 1: items: a List needs a list".into(),
            "",
            false,
        ),
        (
            ds(&container("${DRIVER_IMAGE}")),
            format!(
                "manifests m.yaml: {spec}.containers[0] (drv).image: '${{DRIVER_IMAGE}}' is a template placeholder"
            ),
            "`oc get daemonset x -n ns -o yaml`",
            false,
        ),
        (
            ds(&container("'{{ .Image }}'")),
            format!(
                "manifests m.yaml: {spec}.containers[0] (drv).image: '{{{{ .Image }}}}' is a template placeholder"
            ),
            "rendered",
            false,
        ),
        (
            ds(&container("Quay.io/UPPER:tag")),
            format!("manifests m.yaml: {spec}.containers[0] (drv).image: not an image reference"),
            "invalid reference",
            true,
        ),
        (
            ds(&container("oci:/tmp/layout")),
            format!(
                "manifests m.yaml: {spec}.containers[0] (drv).image: 'oci:/tmp/layout' is not a registry reference"
            ),
            "",
            false,
        ),
        (
            ds("containers:\n- name: drv\n"),
            format!("manifests m.yaml: {spec}.containers[0] (drv).image: missing"),
            "",
            false,
        ),
        (
            ds("initContainers:\n- image: ''\n"),
            format!("manifests m.yaml: {spec}.initContainers[0].image: missing"),
            "",
            false,
        ),
        (
            ds("containers: 5\n"),
            format!("manifests m.yaml: {spec}.containers: wrong type"),
            "invalid type",
            true,
        ),
        (
            ds(&(container("r.example/a:1") + "- name: [x]\n  image: r.example/b:1\n")),
            format!(
                "manifests m.yaml: {spec}.containers[1]: wrong type: invalid type: sequence, expected a string"
            ),
            "",
            true,
        ),
        (
            ds(&(container("r.example/a:1") + "initContainers:\n- image: 7\n")),
            format!("manifests m.yaml: {spec}.initContainers[0]: wrong type"),
            "",
            true,
        ),
        (
            ds(&pod_spec(
                "securityContext:\n  windowsOptions:\n    hostProcess: yes please\n",
            )),
            format!("manifests m.yaml: {spec}.securityContext: wrong type"),
            "",
            true,
        ),
        (
            ds(&pod_spec("hostNetwork: true\nos: windows\n")),
            format!("manifests m.yaml: {spec}.os: wrong type"),
            "",
            true,
        ),
        (
            "kind: DaemonSet\nmetadata:\n  name: x\nspec:\n  selector: {}\n".into(),
            "manifests m.yaml: document 1: DaemonSet x: spec.template.spec: missing".into(),
            "",
            false,
        ),
        (
            "kind: Pod\nmetadata: 7\nspec: {}\n".into(),
            "manifests m.yaml: document 1: metadata: not object metadata".into(),
            "",
            true,
        ),
        (
            ds(&pod_spec("nodeSelector: [a]\n")),
            format!("manifests m.yaml: {spec}.nodeSelector: wrong type"),
            "",
            true,
        ),
        (
            ds(&affinity(
                "- matchExpressions:\n  - key: kubernetes.io/os\n    operator: Equals\n    values: [windows]\n",
            )),
            format!(
                "manifests m.yaml: {spec}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: 'Equals' is not In"
            ),
            "",
            false,
        ),
        (
            ds(&affinity(
                "- {}\n- matchExpressions:\n  - key: a\n    operator: In\n",
            )),
            format!(
                "manifests m.yaml: {spec}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[1].matchExpressions[0].values: must not be empty for operator In"
            ),
            "",
            false,
        ),
        (
            ds(&affinity(
                "- matchExpressions:\n  - key: a\n    operator: Exists\n    values: [b]\n",
            )),
            "".into(),
            "values: must be empty for operator Exists",
            false,
        ),
        (
            ds(&affinity(
                "- matchExpressions:\n  - key: a\n    operator: Gt\n    values: ['1', '2']\n",
            )),
            "".into(),
            "values: must be one integer for operator Gt",
            false,
        ),
        (
            ds(&affinity(
                "- matchExpressions:\n  - key: a\n    operator: Lt\n    values: [ten]\n",
            )),
            "".into(),
            "values: must be one integer for operator Lt",
            false,
        ),
        (
            ds(&affinity(
                "- matchFields:\n  - operator: In\n    values: [n]\n",
            )),
            "".into(),
            "matchFields[0].key: missing",
            false,
        ),
        (
            ds(&affinity("- {}\n- matchExpressions: []\n")),
            "".into(),
            "nodeSelectorTerms: every term is empty",
            false,
        ),
        (
            ds(&pod_spec(
                "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      nodeSelectorTerms: []\n",
            )),
            "".into(),
            "nodeSelectorTerms: empty",
            false,
        ),
        (
            ds(&affinity(
                "- matchExpressions:\n  - key: a\n    operator: Gt\n    values: [5]\n",
            )),
            format!(
                "manifests m.yaml: {spec}.affinity: wrong type: invalid type: integer `5`, expected a string"
            ),
            "",
            true,
        ),
    ];
    for (text, starts, contains, has_source) in cases {
        let e = parse(&text).expect_err(&text);
        let line = one_line(&e);
        assert!(
            line.starts_with(&starts),
            "{line}\n  does not start with\n{starts}"
        );
        assert!(line.contains(contains), "{line}\n  lacks {contains}");
        assert_eq!(
            std::error::Error::source(&e).is_some(),
            has_source,
            "{line}"
        );
        assert_eq!(e.exit_kind(), ExitKind::Usage);
        assert_eq!(e.origin, "m.yaml");
    }
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

#[test]
fn placement_narrows_hosts_as_kubernetes_does() {
    const OS: &str = "kubernetes.io/os";
    const ARCH: &str = "kubernetes.io/arch";
    const BUILD: &str = "node.kubernetes.io/windows-build";
    let ws2019 = labels("windows", "amd64", Some("10.0.17763"));
    let ws2022 = labels("windows", "amd64", Some("10.0.20348"));
    let amd = labels("linux", "amd64", None);
    let arm = labels("linux", "arm64", None);
    let hosts = [&ws2019, &ws2022, &amd, &arm];
    let win = "nodeSelector:\n  kubernetes.io/os: windows\n";
    let gt = |v: &str| {
        expr("kubernetes.io/os", "Exists", &[]) + &expr("build-number", "Gt", &[&format!("'{v}'")])
    };
    // (pod spec, admitted: [ws2019, ws2022, linux/amd64, linux/arm64])
    let cases: Vec<(String, [bool; 4])> = vec![
        (pod_spec(""), [true; 4]),
        (pod_spec(win), [true, true, false, false]),
        (
            pod_spec("nodeSelector:\n  beta.kubernetes.io/os: linux\n"),
            [false, false, true, true],
        ),
        (
            pod_spec("os:\n  name: windows\n"),
            [true, true, false, false],
        ),
        (
            pod_spec("os:\n  name: linux\nnodeSelector:\n  kubernetes.io/arch: arm64\n"),
            [false, false, false, true],
        ),
        // os.name and nodeSelector disagree: nowhere.
        (
            pod_spec("os:\n  name: linux\nnodeSelector:\n  kubernetes.io/os: windows\n"),
            [false; 4],
        ),
        (
            with_terms("", &[&expr(BUILD, "In", &["10.0.20348"])]),
            [false, true, false, false],
        ),
        (
            with_terms("", &[&expr(BUILD, "NotIn", &["10.0.17763"])]),
            [false, true, true, true],
        ),
        (
            with_terms(win, &[&expr(BUILD, "NotIn", &["10.0.17763"])]),
            [false, true, false, false],
        ),
        (
            with_terms("", &[&expr(BUILD, "Exists", &[])]),
            [true, true, false, false],
        ),
        (
            with_terms("", &[&expr(BUILD, "DoesNotExist", &[])]),
            [false, false, true, true],
        ),
        (
            with_terms("", &[&expr(ARCH, "In", &["arm64", "s390x"])]),
            [false, false, false, true],
        ),
        // Terms ORed, expressions ANDed.
        (
            with_terms(
                "",
                &[
                    &expr(ARCH, "In", &["arm64"]),
                    &(expr(OS, "In", &["windows"]) + &expr(BUILD, "In", &["10.0.17763"])),
                ],
            ),
            [true, false, false, true],
        ),
        (
            with_terms(
                "",
                &[&(expr(OS, "In", &["linux"]) + &expr(ARCH, "NotIn", &["amd64"]))],
            ),
            [false, false, false, true],
        ),
        // nodeSelector is ANDed into every term.
        (
            with_terms(
                win,
                &[
                    &expr(ARCH, "In", &["arm64"]),
                    &expr(BUILD, "In", &["10.0.17763"]),
                ],
            ),
            [true, false, false, false],
        ),
        // A label the host row cannot decide excludes nothing.
        (
            with_terms(win, &[&expr("type", "NotIn", &["virtual-kubelet"])]),
            [true, true, false, false],
        ),
        (with_terms("", &[&gt("5")]), [true, true, true, true]),
        // Gt/Lt on a known label: the build label is not an integer, so they never hold.
        (with_terms("", &[&expr(BUILD, "Gt", &["'1'"])]), [false; 4]),
        (
            with_terms("", &[&expr(BUILD, "Lt", &["'99999'"])]),
            [false; 4],
        ),
    ];
    for (spec, want) in cases {
        let uses = parse(&object("DaemonSet", &spec)).unwrap_or_else(|e| panic!("{e}\n{spec}"));
        let p = &uses[0].placement;
        let got: Vec<bool> = hosts.iter().map(|h| p.admits(h)).collect();
        assert_eq!(got, want, "{p}\n{spec}");
    }
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
        let p = Placement { terms: vec![Term { expressions, fields: vec![] }] };
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
    let uses = read_manifests(&fixture()).unwrap();
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
    let uses = read_manifests(dir.path()).unwrap();
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
    let e = read_manifests(dir.path()).unwrap_err();
    assert!(e.origin.ends_with("b.yml"), "{e}");
    assert_eq!(e.location.object.as_deref(), Some("Pod (no metadata.name)"));

    let empty = tempfile::tempdir().unwrap();
    std::fs::write(empty.path().join("cm.yaml"), "kind: ConfigMap\n").unwrap();
    let e = read_manifests(empty.path()).unwrap_err();
    assert!(
        one_line(&e)
            .contains("no *.yaml, *.yml or *.json file in the directory holds no pod template"),
        "{e}"
    );
    let e = read_manifests(&empty.path().join("cm.yaml")).unwrap_err();
    assert!(one_line(&e).ends_with("cm.yaml: holds no pod template (Pod, DaemonSet, Deployment, StatefulSet, ReplicaSet, Job or CronJob with containers)"), "{e}");
    let e = read_manifests(&empty.path().join("missing.yaml")).unwrap_err();
    assert!(
        one_line(&e).contains("missing.yaml: cannot read: No such file"),
        "{}",
        one_line(&e)
    );
    assert_eq!(e.exit_kind(), ExitKind::Usage);
}
